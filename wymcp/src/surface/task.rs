//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! `tools/call` answered with a task handle instead of its result, and the
//! three methods that follow a task — `tasks/get`, `tasks/update`,
//! `tasks/cancel`.
//!
//! **Negotiation.** The server advertises the extension under
//! `capabilities.extensions` when it has a task-capable tool or a task
//! store. A request takes part only when its `_meta` client capabilities
//! declare the extension (`extensions["io.modelcontextprotocol/tasks"]`):
//! the three task methods refuse any other request with -32021 naming it;
//! a [`TaskSupport::Optional`] tool runs a plain call for it, a
//! [`TaskSupport::Required`] one refuses it -32021 before its handler
//! runs.
//!
//! **Creation is the server's decision.** A declaring client's call of a
//! task-capable tool (and, with [`Tool::task_when`](super::Tool::task_when),
//! only when the tool says so of that call) is stored, then answered at
//! once with the flat `CreateTaskResult` (`resultType: "task"`, `taskId`,
//! `status`, `createdAt`, `lastUpdatedAt`, `ttlMs`, `pollIntervalMs`); the
//! handler runs on, detached from the request. `tasks/get` answers the
//! detailed task: `result` inlined once `completed` (a tool's execution
//! error is `completed` with `isError`), `error` once `failed` (a protocol
//! error: the handler's JSON-RPC error, or a panic), `inputRequests` while
//! `input_required`. `tasks/update` delivers `inputResponses`; once every
//! pending request is answered the handler runs its next round, on the
//! replica that took the update. `tasks/cancel` settles a task `cancelled`
//! (idempotent on a finished one). Both acknowledge with an empty
//! `{"resultType": "complete"}`. `tasks/result` and `tasks/list` do not
//! exist (-32601).
//!
//! **Ids and callers.** A task id is 128 bits from the operating system's
//! random source; a task is bound to the principal that created it, and any
//! other caller (or an id of another shape) is told the task is unknown
//! (-32602), exactly as for an id that never existed.
//!
//! **Leases.** The replica running a task's handler holds a lease on it,
//! renewed every [`TaskLimits::heartbeat`]; a heartbeat that finds the task
//! cancelled (through any replica) drops the handler. A `working` task
//! whose lease has run out — its replica died — is settled `failed` by the
//! first `tasks/get` that sees it, so no task stays `working` longer than
//! [`TaskLimits::lease`] after its replica stopped.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::call::{Answer, Call, CatchUnwind, Env, Outcome, Running};
use super::catalog::Catalog;
use super::context::{Context, HandlerError};
use super::finish::Finishing;
use super::listen::Over;
use super::notify::Emitter;
use super::tool::{self, Registered, TaskSupport, ToolResult};
use crate::auth::Principal;
use crate::mrtr::Inputs;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::meta::{CLIENT_CAPABILITIES, TASKS_EXTENSION};
use crate::protocol::revision::Era;
use crate::protocol::ids::{now_ms, random_hex};
use crate::tasks::{MemoryTaskStore, TaskEntry, TaskStore, TaskStoreError};

/// How often a write that lost a race on a task is tried again.
const RETRIES: usize = 8;

/// The settings of the tasks extension, each with a default meant for a
/// public endpoint (see
/// [`ServerBuilder::task_limits`](crate::ServerBuilder::task_limits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskLimits {
    /// How long a task stays readable after it was created (`ttlMs`), its
    /// result included. Default 1 hour.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    /// Default 500 ms.
    pub poll_interval: Duration,
    /// How long a replica's hold on a task it runs lasts without a
    /// heartbeat: a `working` task whose lease ran out is `failed`.
    /// Default 15 s.
    pub lease: Duration,
    /// How often the replica running a task renews its lease (and sees a
    /// cancellation made elsewhere). Default 5 s; keep it well under the
    /// lease.
    pub heartbeat: Duration,
    /// Task handlers running at once on this replica; one more task is
    /// refused `503` (-32603) with `Retry-After`. Default 256.
    pub max_running: usize,
    /// Task handlers running at once on this replica for one caller (the
    /// principal's subject when the server authenticates, else the
    /// client's address, as for listen streams); one more is refused `429`
    /// (-32600) with `Retry-After`. Default 16.
    pub max_running_per_caller: usize,
    /// The largest task record stored, in bytes: the call's arguments and
    /// `_meta`, the answers gathered, the result. A call whose record would
    /// be larger is refused -32602 (`data.limit: "max_task_bytes"`); a
    /// result that would make it larger fails the task. Default 1 MiB.
    pub max_task_bytes: usize,
    /// How long one store operation may take before the request is answered
    /// -32603. Default 2 s.
    pub store_timeout: Duration,
    /// Tasks the default in-memory store holds (expired ones swept first);
    /// one more is refused -32603. Default 10,000.
    pub memory_capacity: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(15),
            heartbeat: Duration::from_secs(5),
            max_running: 256,
            max_running_per_caller: 16,
            max_task_bytes: 1024 * 1024,
            store_timeout: Duration::from_secs(2),
            memory_capacity: 10_000,
        }
    }
}

impl TaskLimits {
    /// Sets [`ttl`](Self::ttl).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets [`poll_interval`](Self::poll_interval).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets [`lease`](Self::lease) and [`heartbeat`](Self::heartbeat).
    #[must_use]
    pub fn lease(mut self, lease: Duration, heartbeat: Duration) -> Self {
        self.lease = lease;
        self.heartbeat = heartbeat;
        self
    }

    /// Sets [`max_running`](Self::max_running).
    #[must_use]
    pub fn max_running(mut self, max: usize) -> Self {
        self.max_running = max;
        self
    }

    /// Sets [`max_running_per_caller`](Self::max_running_per_caller).
    #[must_use]
    pub fn max_running_per_caller(mut self, max: usize) -> Self {
        self.max_running_per_caller = max;
        self
    }

    /// Sets [`max_task_bytes`](Self::max_task_bytes).
    #[must_use]
    pub fn max_task_bytes(mut self, max: usize) -> Self {
        self.max_task_bytes = max;
        self
    }

    /// Sets [`store_timeout`](Self::store_timeout).
    #[must_use]
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.store_timeout = timeout;
        self
    }

    /// Sets [`memory_capacity`](Self::memory_capacity).
    #[must_use]
    pub fn memory_capacity(mut self, capacity: usize) -> Self {
        self.memory_capacity = capacity;
        self
    }
}

/// How long a client refused for want of a running slot is asked to wait.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// A task's status, as the wire spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What a store keeps of a task (the bytes of its [`TaskEntry`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The principal's subject (`""` without auth).
    owner: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    authenticated: bool,
    /// The principal's OAuth client, when known.
    #[serde(default)]
    client_id: Option<String>,
    tool: String,
    arguments: Value,
    /// The call's `_meta` (client capabilities, protocol version, …).
    meta: Value,
    status: Status,
    created: u64,
    updated: u64,
    ttl: u64,
    /// While `working`: when the runner's lease ends.
    #[serde(default)]
    lease: u64,
    /// While `working`: the replica running the handler.
    #[serde(default)]
    runner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    /// While `input_required`: the requests not yet answered.
    #[serde(default)]
    pending: Map<String, Value>,
    /// The answers gathered for the round under way.
    #[serde(default)]
    answered: Map<String, Value>,
    #[serde(default)]
    round: u32,
    /// The handler's MRTR state for the next round, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
}

impl Record {
    fn settle(&mut self, status: Status, now: u64) {
        self.status = status;
        self.updated = now;
        self.lease = 0;
        self.runner.clear();
        if status != Status::InputRequired {
            self.pending.clear();
        }
    }

    fn fail(&mut self, error: &RpcError, now: u64) {
        self.settle(Status::Failed, now);
        self.result = None;
        self.error = Some(error_value(error));
    }
}

fn error_value(error: &RpcError) -> Value {
    let mut out = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        out["data"] = data.clone();
    }
    out
}

/// What every task method checks first: the extension declared, then a
/// `taskId` this server could have minted; the id.
fn addressed(call: &Call<'_>, method: &str) -> Result<String, RpcError> {
    if !declared(call.params.as_ref()) {
        return Err(undeclared(method));
    }
    task_id(call.params.as_ref()).map(str::to_owned)
}

/// The task's id of a task method's params, when it is one this server
/// could have minted (32 lowercase hex digits); any other is unknown.
fn task_id(params: Option<&Value>) -> Result<&str, RpcError> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(id)) if minted(id) => Ok(id),
        Some(Value::String(_)) => Err(unknown()),
        _ => Err(RpcError::invalid_params("`taskId` must be a string")),
    }
}

fn minted(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The one answer for a task that is not there for this caller: never
/// created, expired, or another principal's.
fn unknown() -> RpcError {
    RpcError::invalid_params("unknown task")
}

fn store_error(error: &TaskStoreError) -> RpcError {
    tracing::warn!(target: "wymcp::tasks", %error, "task store operation failed");
    let data = match error {
        TaskStoreError::Full(max) => json!({"limit": "task_store_capacity", "max": max}),
        _ => json!({"store": "unavailable"}),
    };
    RpcError::new(
        ErrorCode::INTERNAL_ERROR,
        "the task store did not complete the operation",
    )
    .data(data)
}

/// A fresh task id: 128 bits from the operating system, hex.
fn new_id() -> Result<String, RpcError> {
    random_hex()
        .ok_or_else(|| RpcError::new(ErrorCode::INTERNAL_ERROR, "no randomness to mint a task id"))
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC timestamp.
fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Whether the request's `_meta` declares the tasks extension.
pub(crate) fn declared(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// The -32021 of a request that needs the extension and did not declare it.
pub(crate) fn undeclared(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("`{method}` needs the client to declare the `{TASKS_EXTENSION}` extension"),
    )
    .data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// The running handlers of this replica, counted.
#[derive(Debug, Default)]
struct Local {
    total: usize,
    per_caller: HashMap<String, usize>,
    aborts: HashMap<String, tokio::task::AbortHandle>,
}

/// A place among the running handlers, given back when dropped (when the
/// handler finishes, fails or is dropped by a cancellation).
#[derive(Debug)]
struct Slot {
    tasks: Arc<Tasks>,
    caller: String,
    id: Option<String>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut local = self.tasks.local();
        local.total -= 1;
        if let Some(count) = local.per_caller.get_mut(&self.caller) {
            *count -= 1;
            if *count == 0 {
                local.per_caller.remove(&self.caller);
            }
        }
        if let Some(id) = &self.id {
            local.aborts.remove(id);
        }
    }
}

/// The tasks of a server: the store, the settings, this replica's name and
/// the handlers it runs.
pub(crate) struct Tasks {
    store: Arc<dyn TaskStore>,
    limits: TaskLimits,
    /// This process's name in a task's `runner` (random, per process).
    replica: String,
    local: Mutex<Local>,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("store", &self.store)
            .field("limits", &self.limits)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// Tasks kept in `store` (the in-memory default when `None`).
    pub(crate) fn new(store: Option<Arc<dyn TaskStore>>, limits: TaskLimits) -> Self {
        let store = store.unwrap_or_else(|| Arc::new(MemoryTaskStore::new(limits.memory_capacity)));
        Tasks {
            store,
            limits,
            replica: new_id().unwrap_or_else(|_| format!("pid-{}", std::process::id())),
            local: Mutex::default(),
        }
    }

    fn local(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many task handlers run on this replica.
    pub(crate) fn running(&self) -> usize {
        self.local().total
    }

    fn admit(self: &Arc<Self>, caller: &str) -> Result<Slot, Over> {
        let mut local = self.local();
        let mine = local.per_caller.get(caller).copied().unwrap_or(0);
        if mine >= self.limits.max_running_per_caller {
            return Err(Over::Caller);
        }
        if local.total >= self.limits.max_running {
            return Err(Over::Server);
        }
        local.total += 1;
        *local.per_caller.entry(caller.to_owned()).or_insert(0) += 1;
        Ok(Slot {
            tasks: Arc::clone(self),
            caller: caller.to_owned(),
            id: None,
        })
    }

    fn busy(&self, over: Over) -> Answer {
        let (code, limit, max) = match over {
            Over::Caller => (
                ErrorCode::INVALID_REQUEST,
                "max_running_per_caller",
                self.limits.max_running_per_caller,
            ),
            Over::Server => (
                ErrorCode::INTERNAL_ERROR,
                "max_running",
                self.limits.max_running,
            ),
        };
        Answer::Busy {
            error: RpcError::new(code, format!("too many tasks running: the limit is {max}"))
                .data(json!({"limit": limit, "max": max})),
            over,
            retry_after: RETRY_AFTER,
        }
    }

    async fn timed<T>(&self, op: crate::tasks::StoreFuture<'_, T>) -> Result<T, RpcError> {
        match tokio::time::timeout(self.limits.store_timeout, op).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(store_error(&error)),
            Err(_) => Err(store_error(&TaskStoreError::Timeout(
                self.limits.store_timeout,
            ))),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<(TaskEntry, Record)>, RpcError> {
        let Some(entry) = self.timed(self.store.load(id)).await? else {
            return Ok(None);
        };
        match serde_json::from_slice::<Record>(&entry.data) {
            Ok(record) => Ok(Some((entry, record))),
            Err(error) => {
                tracing::error!(target: "wymcp::tasks", %error, "a stored task does not parse");
                Err(RpcError::new(
                    ErrorCode::INTERNAL_ERROR,
                    "a stored task does not parse",
                ))
            }
        }
    }

    /// The task `id` of `caller`, changed by `change` (which says whether
    /// it changed anything), written back with a compare-and-set that is
    /// tried again on a lost race; `None` when there is no such task.
    async fn modify(
        &self,
        id: &str,
        caller: Option<&str>,
        mut change: impl FnMut(&mut Record) -> bool,
    ) -> Result<Option<Record>, RpcError> {
        for _ in 0..RETRIES {
            let Some((entry, mut record)) = self.load(id).await? else {
                return Ok(None);
            };
            if caller.is_some_and(|c| c != record.owner) {
                return Ok(None);
            }
            if !change(&mut record) {
                return Ok(Some(record));
            }
            let mut data = serde_json::to_vec(&record).unwrap_or_default();
            if data.len() > self.limits.max_task_bytes {
                record.fail(
                    &RpcError::new(
                        ErrorCode::INTERNAL_ERROR,
                        "the task's record grew past the server's limit",
                    )
                    .data(json!({"limit": "max_task_bytes", "max": self.limits.max_task_bytes})),
                    now_ms(),
                );
                record.answered.clear();
                record.arguments = Value::Null;
                data = serde_json::to_vec(&record).unwrap_or_default();
            }
            if self.timed(self.store.replace(entry.next(data))).await? {
                return Ok(Some(record));
            }
        }
        Err(RpcError::new(
            ErrorCode::INTERNAL_ERROR,
            "the task changed under every attempt to write it",
        ))
    }

    /// `tools/call` of a task-capable `tool` (see the [module docs](self)).
    pub(crate) fn call(
        self: &Arc<Self>,
        tool: Arc<Registered>,
        mut call: Call<'_>,
        env: Env<'_>,
    ) -> Answer {
        let declares = call.era == Era::Modern && declared(call.params.as_ref());
        if !declares {
            return match tool.task_support {
                TaskSupport::Required => undeclared("tools/call").into(),
                _ => tool::call(tool, call, env),
            };
        }
        let (handling, arguments) = match tool::prepare(&tool, &mut call, env) {
            Ok(ready) => ready,
            Err(answer) => return answer,
        };
        if let Some(when) = &tool.task_when
            && !when(handling.cx())
        {
            let span = call.span.clone();
            drop(call);
            return tool::run(tool, handling, arguments, span);
        }
        let owner = call.subject().to_owned();
        let counted = call.caller();
        let principal = call.principal.cloned();
        drop(call);
        let (cx, reply) = handling.into_task();
        let now = now_ms();
        let ttl = u64::try_from(self.limits.ttl.as_millis()).unwrap_or(u64::MAX);
        let record = Record {
            authenticated: principal.is_some(),
            client_id: principal.as_ref().and_then(|p| p.client_id.clone()),
            scopes: principal.map(|p| p.scopes).unwrap_or_default(),
            owner,
            tool: tool.name().to_owned(),
            arguments: arguments.clone(),
            meta: cx.meta().clone(),
            status: Status::Working,
            created: now,
            updated: now,
            ttl,
            lease: now + self.lease_ms(),
            runner: self.replica.clone(),
            message: None,
            result: None,
            error: None,
            pending: Map::new(),
            answered: Map::new(),
            round: cx.inputs().round(),
            state: None,
        };
        let data = serde_json::to_vec(&record).unwrap_or_default();
        if data.len() > self.limits.max_task_bytes {
            return RpcError::invalid_params(format!(
                "the call is too large to run as a task: the limit is {} bytes",
                self.limits.max_task_bytes
            ))
            .data(json!({"limit": "max_task_bytes", "max": self.limits.max_task_bytes}))
            .into();
        }
        let id = match new_id() {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let mut slot = match self.admit(&counted) {
            Ok(slot) => slot,
            Err(over) => return self.busy(over),
        };
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let entry = TaskEntry::new(id.clone(), now.saturating_add(ttl), data);
            if let Err(error) = tasks.timed(tasks.store.insert(entry)).await {
                return Outcome::Error(error);
            }
            slot.id = Some(id.clone());
            let created = created(&id, &record, &tasks.limits);
            tasks.spawn(id, slot, tool, arguments, cx);
            Outcome::Result(reply.finished(created, false))
        }))
    }

    fn lease_ms(&self) -> u64 {
        u64::try_from(self.limits.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `tool`'s handler for the task `id` on this replica, holding
    /// `slot` until it ends.
    fn spawn(
        self: &Arc<Self>,
        id: String,
        slot: Slot,
        tool: Arc<Registered>,
        arguments: Value,
        cx: Context,
    ) {
        let tasks = Arc::clone(self);
        let key = id.clone();
        // Under the lock, so the slot's release (which takes it) cannot run
        // before the abort handle is recorded.
        let mut local = self.local();
        let handle = tokio::spawn(async move {
            let _slot = slot;
            tasks.drive(&id, tool, arguments, cx).await;
        });
        local.aborts.insert(key, handle.abort_handle());
    }

    async fn drive(&self, id: &str, tool: Arc<Registered>, arguments: Value, cx: Context) {
        let mut work = CatchUnwind(Box::pin(async move {
            tool::execute(&tool, arguments, cx).await
        }));
        let mut beat = tokio::time::interval(self.limits.heartbeat);
        beat.tick().await;
        let outcome = loop {
            tokio::select! {
                done = &mut work => break done,
                _ = beat.tick() => {
                    if !self.renew(id).await {
                        tracing::debug!(target: "wymcp::tasks", "the task is no longer this replica's to run; its handler is dropped");
                        return;
                    }
                }
            }
        };
        self.finish(id, outcome).await;
    }

    /// Renews this replica's lease on `id`; whether the task is still
    /// `working` here (a store that cannot be reached keeps the handler
    /// running: the lease decides).
    async fn renew(&self, id: &str) -> bool {
        let lease = self.lease_ms();
        let renewed = self
            .modify(id, None, |record| {
                if record.status != Status::Working || record.runner != self.replica {
                    return false;
                }
                record.lease = now_ms() + lease;
                true
            })
            .await;
        match renewed {
            Ok(Some(record)) => record.status == Status::Working && record.runner == self.replica,
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Settles the task `id` with what its handler answered, unless it was
    /// cancelled (or taken over) meanwhile.
    async fn finish(
        &self,
        id: &str,
        outcome: Result<Result<ToolResult, HandlerError>, Box<dyn std::any::Any + Send>>,
    ) {
        let next = match outcome {
            Ok(Ok(result)) => Next::Completed(result_value(&result)),
            Ok(Err(HandlerError::InputRequired(ask))) => {
                let (requests, state, round) = ask.into_task_parts();
                Next::Input(requests, state, round)
            }
            Ok(Err(error)) => Next::Failed(error.into_rpc(Era::Modern, "tools/call")),
            Err(_) => {
                tracing::error!(target: "wymcp::handler", "a task's handler panicked; the task failed");
                Next::Failed(RpcError::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the handler of `tools/call` failed",
                ))
            }
        };
        let written = self
            .modify(id, None, |record| {
                if record.status != Status::Working || record.runner != self.replica {
                    return false;
                }
                let now = now_ms();
                match &next {
                    Next::Completed(result) => {
                        record.settle(Status::Completed, now);
                        record.result = Some(result.clone());
                        record.arguments = Value::Null;
                    }
                    Next::Failed(error) => {
                        record.fail(error, now);
                        record.arguments = Value::Null;
                    }
                    Next::Input(requests, state, round) => {
                        record.settle(Status::InputRequired, now);
                        record.pending.clone_from(requests);
                        record.state = state
                            .as_ref()
                            .map(|s| base64::engine::general_purpose::STANDARD.encode(s));
                        record.round = *round;
                    }
                }
                record.answered.clear();
                true
            })
            .await;
        if let Err(error) = written {
            tracing::warn!(target: "wymcp::tasks", %error, "a task's outcome could not be stored");
        }
    }

    /// `tasks/get`: the detailed task.
    pub(crate) fn get(self: &Arc<Self>, call: &Call<'_>, finishing: &Arc<Finishing>) -> Answer {
        let id = match addressed(call, "tasks/get") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let caller = call.subject().to_owned();
        let reply = call.reply(finishing);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let read = tasks
                .modify(&id, Some(&caller), |record| {
                    // A working task whose runner stopped renewing: failed.
                    if record.status == Status::Working && record.lease < now_ms() {
                        record.fail(
                            &RpcError::new(
                                ErrorCode::INTERNAL_ERROR,
                                "the replica running this task stopped (its lease ran out)",
                            ),
                            now_ms(),
                        );
                        return true;
                    }
                    false
                })
                .await;
            match read {
                Ok(Some(record)) => {
                    Outcome::Result(reply.finished(detailed(&id, &record, &tasks.limits), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }

    /// `tasks/update`: answers to the task's pending input requests; once
    /// none is pending, its handler's next round runs here.
    pub(crate) fn update(self: &Arc<Self>, call: &Call<'_>, env: Env<'_>) -> Answer {
        let id = match addressed(call, "tasks/update") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let responses = match call.params.as_ref().and_then(|p| p.get("inputResponses")) {
            Some(Value::Object(responses)) => responses.clone(),
            _ => return RpcError::invalid_params("`inputResponses` must be an object").into(),
        };
        let caller = call.subject().to_owned();
        // Counted per caller as the listen limits are: the principal, else
        // the client's address (the subject is `""` for every anonymous one).
        let mut slot = match self.admit(&call.caller()) {
            Ok(slot) => slot,
            Err(over) => return self.busy(over),
        };
        let reply = call.reply(env.finishing);
        let shared = Arc::clone(env.shared);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let mut resumed = false;
            let lease = tasks.lease_ms();
            let written = tasks
                .modify(&id, Some(&caller), |record| {
                    resumed = false;
                    if record.status != Status::InputRequired {
                        return false;
                    }
                    let mut changed = false;
                    for (key, response) in &responses {
                        // Answers to requests not pending are ignored.
                        if record.pending.remove(key).is_some() {
                            record.answered.insert(key.clone(), response.clone());
                            changed = true;
                        }
                    }
                    if record.pending.is_empty() {
                        let now = now_ms();
                        record.settle(Status::Working, now);
                        record.lease = now + lease;
                        record.runner.clone_from(&tasks.replica);
                        resumed = true;
                        changed = true;
                    }
                    changed
                })
                .await;
            match written {
                Ok(Some(record)) => {
                    if resumed {
                        slot.id = Some(id.clone());
                        tasks.resume(id, slot, &record, shared);
                    }
                    Outcome::Result(reply.finished(json!({}), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }

    /// Runs the next round of a task whose input requests are all answered.
    fn resume(
        self: &Arc<Self>,
        id: String,
        slot: Slot,
        record: &Record,
        shared: Arc<http::Extensions>,
    ) {
        let tool = shared
            .get::<Catalog>()
            .and_then(|catalog| catalog.tool(&record.tool));
        let Some(tool) = tool else {
            let tasks = Arc::clone(self);
            tokio::spawn(async move {
                let _slot = slot;
                let gone = HandlerError::Rpc {
                    code: ErrorCode::INTERNAL_ERROR,
                    message: "the task's tool is no longer served".into(),
                    data: None,
                };
                tasks.finish(&id, Ok(Err(gone))).await;
            });
            return;
        };
        let principal = record.authenticated.then(|| Principal {
            subject: record.owner.clone(),
            scopes: record.scopes.clone(),
            client_id: record.client_id.clone(),
        });
        let capabilities = record
            .meta
            .get(CLIENT_CAPABILITIES)
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let state = record
            .state
            .as_ref()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
        let inputs = Inputs::resumed(capabilities, record.answered.clone(), record.round, state);
        let cx = Context::new(
            shared,
            "tools/call",
            Era::Modern,
            record.meta.clone(),
            principal,
            inputs,
            Emitter::for_params(None).0,
        );
        self.spawn(id, slot, tool, record.arguments.clone(), cx);
    }

    /// `tasks/cancel`: the task settles `cancelled`; its handler, here or
    /// on the replica running it (at its next heartbeat), is dropped.
    pub(crate) fn cancel(self: &Arc<Self>, call: &Call<'_>, finishing: &Arc<Finishing>) -> Answer {
        let id = match addressed(call, "tasks/cancel") {
            Ok(id) => id,
            Err(error) => return error.into(),
        };
        let caller = call.subject().to_owned();
        let reply = call.reply(finishing);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let written = tasks
                .modify(&id, Some(&caller), |record| {
                    if record.status.terminal() {
                        return false;
                    }
                    record.settle(Status::Cancelled, now_ms());
                    record.answered.clear();
                    record.arguments = Value::Null;
                    true
                })
                .await;
            match written {
                Ok(Some(_)) => {
                    let abort = tasks.local().aborts.remove(&id);
                    if let Some(abort) = abort {
                        abort.abort();
                    }
                    Outcome::Result(reply.finished(json!({}), false))
                }
                Ok(None) => Outcome::Error(unknown()),
                Err(error) => Outcome::Error(error),
            }
        }))
    }
}

/// What a handler's outcome makes of its task.
enum Next {
    Completed(Value),
    Failed(RpcError),
    Input(Map<String, Value>, Option<Vec<u8>>, u32),
}

/// A tool result as `tasks/get` inlines it.
fn result_value(result: &ToolResult) -> Value {
    let mut value = serde_json::to_value(result).unwrap_or_else(|_| json!({"content": []}));
    if let Value::Object(object) = &mut value {
        object.insert("resultType".into(), json!("complete"));
    }
    value
}

/// The members every task answer carries.
fn base(id: &str, record: &Record, limits: &TaskLimits) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("taskId".into(), json!(id));
    out.insert("status".into(), json!(record.status));
    out.insert("createdAt".into(), json!(iso(record.created)));
    out.insert("lastUpdatedAt".into(), json!(iso(record.updated)));
    out.insert("ttlMs".into(), json!(record.ttl));
    out.insert(
        "pollIntervalMs".into(),
        json!(
            u64::try_from(limits.poll_interval.as_millis())
                .unwrap_or(u64::MAX)
                .max(1)
        ),
    );
    if let Some(message) = &record.message {
        out.insert("statusMessage".into(), json!(message));
    }
    out
}

/// The flat `CreateTaskResult`.
fn created(id: &str, record: &Record, limits: &TaskLimits) -> Value {
    let mut out = base(id, record, limits);
    out.insert("resultType".into(), json!("task"));
    Value::Object(out)
}

/// The detailed task of `tasks/get`.
fn detailed(id: &str, record: &Record, limits: &TaskLimits) -> Value {
    let mut out = base(id, record, limits);
    match record.status {
        Status::Completed => {
            if let Some(result) = &record.result {
                out.insert("result".into(), result.clone());
            }
        }
        Status::Failed => {
            if let Some(error) = &record.error {
                out.insert("error".into(), error.clone());
            }
        }
        Status::InputRequired => {
            out.insert(
                "inputRequests".into(),
                Value::Object(record.pending.clone()),
            );
        }
        Status::Working | Status::Cancelled => {}
    }
    Value::Object(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_utc() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
    }

    /// Rule: ids are 128 random bits; only an id of that shape reaches the
    /// store, any other is the same "unknown task".
    #[test]
    fn ids_are_random_and_only_minted_shapes_are_looked_up() {
        let a = new_id().unwrap();
        let b = new_id().unwrap();
        assert!(minted(&a) && minted(&b) && a != b);
        for bad in [json!({"taskId": "x"}), json!({"taskId": a.to_uppercase()})] {
            assert_eq!(task_id(Some(&bad)).unwrap_err(), unknown());
        }
        assert_eq!(
            task_id(Some(&json!({"taskId": 5}))).unwrap_err().code,
            ErrorCode::INVALID_PARAMS
        );
        assert_eq!(task_id(Some(&json!({"taskId": a}))).unwrap(), a);
    }
}
