//! A task's run: a task-capable tool's call stored and answered with its
//! handle, its handler run on this replica under a lease renewed every
//! heartbeat (a heartbeat that finds the task cancelled drops the handler),
//! its outcome settled, and the next round run once its input requests are
//! answered.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::admission::{Slot, Tasks, declared, new_id, undeclared};
use super::record::{Record, Status, created, result_value, store_error};
use crate::auth::Principal;
use crate::ledger::{Kind, Refusal};
use crate::mrtr::Inputs;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::ids::now_ms;
use crate::protocol::meta::CLIENT_CAPABILITIES;
use crate::protocol::revision::Era;
use crate::surface::call::{Answer, Call, CatchUnwind, Env, Outcome, Running};
use crate::surface::catalog::Catalog;
use crate::surface::context::{Context, HandlerError};
use crate::surface::notify::Emitter;
use crate::surface::tool::{self, Registered, TaskSupport, ToolResult};
use crate::tasks::{TaskEntry, TaskStoreError};

/// The first wait before a finish write is tried again.
const FINISH_BACKOFF_MIN: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest wait between two tries of a finish write.
const FINISH_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(2);

impl Tasks {
    /// `tools/call` of a task-capable `tool` (see the [module docs](super)).
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
            let slot = call.slot.clone();
            drop(call);
            return tool::run(tool, handling, arguments, span, slot);
        }
        let owner = call.subject().to_owned();
        let counted = call.caller().clone();
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
        // The record's place, held until it expires, and the handler's.
        let place = match self.admit_record(&counted) {
            Ok(place) => place,
            Err(refusal) => return self.busy(refusal),
        };
        let mut slot = match self.admit(&counted) {
            Ok(slot) => slot,
            Err(refusal) => return self.busy(refusal),
        };
        let quota = self.quota(&counted);
        let tasks = Arc::clone(self);
        Answer::Running(Running::future(async move {
            let expires = now.saturating_add(ttl);
            let entry = TaskEntry::new(id.clone(), expires, data);
            match tasks.attempt(tasks.store.insert_for(entry, quota)).await {
                Ok(()) => {
                    tasks.keep_record(place, expires);
                    tasks.reached(Status::Working);
                }
                // A store shared by replicas holds the share across them.
                Err(TaskStoreError::CallerFull(_)) => {
                    return tasks.refused(Refusal::Share(Kind::StoredTasks));
                }
                Err(TaskStoreError::Full(_)) => {
                    return tasks.refused(Refusal::Cap(Kind::StoredTasks));
                }
                Err(error) => return Outcome::Error(store_error(&error)),
            }
            slot.id = Some(id.clone());
            let created = created(&id, &record, &tasks.limits);
            tasks.spawn(id, slot, tool, arguments, cx);
            Outcome::Result(reply.finished(created, false))
        }))
    }

    pub(super) fn lease_ms(&self) -> u64 {
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
        // When the lease this replica last wrote ends (about: it was
        // written just before the handler started).
        let mut lease_until = now_ms().saturating_add(self.lease_ms());
        let outcome = loop {
            tokio::select! {
                done = &mut work => break done,
                _ = beat.tick() => {
                    let renewed_at = now_ms();
                    match self.renew(id).await {
                        Some(true) => lease_until = renewed_at.saturating_add(self.lease_ms()),
                        // The lease decides.
                        None => {}
                        Some(false) => {
                            tracing::debug!(target: "wymcp::tasks", "the task is no longer this replica's to run; its handler is dropped");
                            return;
                        }
                    }
                }
            }
        };
        self.finish(id, outcome, lease_until).await;
    }

    /// Renews this replica's lease on `id`: whether the task is still
    /// `working` here, `None` when the store could not be reached (the
    /// handler keeps running: the lease decides).
    async fn renew(&self, id: &str) -> Option<bool> {
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
            Ok(Some(record)) => {
                Some(record.status == Status::Working && record.runner == self.replica)
            }
            Ok(None) => Some(false),
            Err(_) => None,
        }
    }

    /// Settles the task `id` with what its handler answered, unless it was
    /// cancelled (or taken over) meanwhile. A store that cannot be reached
    /// is tried again, with a backoff, until this replica's lease ends at
    /// `lease_until` (after which the task is another's to settle
    /// `failed`): an outage shorter than the lease loses no outcome.
    async fn finish(
        &self,
        id: &str,
        outcome: Result<Result<ToolResult, HandlerError>, Box<dyn std::any::Any + Send>>,
        lease_until: u64,
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
        let mut backoff = FINISH_BACKOFF_MIN;
        loop {
            let written = self.modify(id, None, |record| settle(record, &next, &self.replica));
            let Err(error) = written.await else {
                return;
            };
            let wait_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX);
            if now_ms().saturating_add(wait_ms) >= lease_until {
                // Once per task, not per attempt; the outage had its warning.
                tracing::debug!(target: "wymcp::tasks", %error,
                    "a task's outcome could not be stored before its lease ended");
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(FINISH_BACKOFF_MAX);
        }
    }

    /// Runs the next round of a task whose input requests are all answered.
    pub(super) fn resume(
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
                let lease_until = now_ms().saturating_add(tasks.lease_ms());
                tasks.finish(&id, Ok(Err(gone)), lease_until).await;
            });
            return;
        };
        let principal = record.authenticated.then(|| Principal {
            subject: record.owner.clone(),
            scopes: record.scopes.clone(),
            client_id: record.client_id.clone(),
            ..Principal::default()
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
}

/// What a handler's outcome makes of its task.
enum Next {
    Completed(Value),
    Failed(RpcError),
    Input(Map<String, Value>, Option<Vec<u8>>, u32),
}

/// Writes `next` into `record`, unless it is no longer `working` on
/// `replica` (cancelled, or taken over): whether it changed.
fn settle(record: &mut Record, next: &Next, replica: &str) -> bool {
    if record.status != Status::Working || record.runner != replica {
        return false;
    }
    let now = now_ms();
    match next {
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
}
