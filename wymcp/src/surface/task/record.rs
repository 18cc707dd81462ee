//! What a store keeps of a task ([`Record`], the bytes of its
//! [`TaskEntry`]), how it is read and written back (every change a
//! compare-and-set, tried again on a lost race), and how it reads on the
//! wire: the flat `CreateTaskResult` and the detailed task of `tasks/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::admission::{TaskLimits, Tasks};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::ids::{iso, now_ms};
use crate::surface::tool::ToolResult;
use crate::tasks::{TaskEntry, TaskStoreError};

/// How often a write that lost a race on a task is tried again.
const RETRIES: usize = 8;

/// A task's status, as the wire spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    /// Its wire spelling.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(super) fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// What a store keeps of a task (the bytes of its [`TaskEntry`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
    /// The principal's subject (`""` without auth).
    pub(super) owner: String,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    #[serde(default)]
    pub(super) authenticated: bool,
    /// The principal's OAuth client, when known.
    #[serde(default)]
    pub(super) client_id: Option<String>,
    pub(super) tool: String,
    pub(super) arguments: Value,
    /// The call's `_meta` (client capabilities, protocol version, …).
    pub(super) meta: Value,
    pub(super) status: Status,
    pub(super) created: u64,
    pub(super) updated: u64,
    pub(super) ttl: u64,
    /// While `working`: when the runner's lease ends.
    #[serde(default)]
    pub(super) lease: u64,
    /// While `working`: the replica running the handler.
    #[serde(default)]
    pub(super) runner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<Value>,
    /// While `input_required`: the requests not yet answered.
    #[serde(default)]
    pub(super) pending: Map<String, Value>,
    /// The answers gathered for the round under way.
    #[serde(default)]
    pub(super) answered: Map<String, Value>,
    #[serde(default)]
    pub(super) round: u32,
    /// The handler's MRTR state for the next round, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) state: Option<String>,
}

impl Record {
    pub(super) fn settle(&mut self, status: Status, now: u64) {
        self.status = status;
        self.updated = now;
        self.lease = 0;
        self.runner.clear();
        if status != Status::InputRequired {
            self.pending.clear();
        }
    }

    pub(super) fn fail(&mut self, error: &RpcError, now: u64) {
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

/// The -32603 of a store operation that failed (a full store is answered
/// before it comes to this: `429` or `503`, never a 500).
pub(super) fn store_error(error: &TaskStoreError) -> RpcError {
    let data = match error {
        TaskStoreError::Full(max) => json!({"limit": "max_stored", "max": max}),
        TaskStoreError::CallerFull(max) => json!({"limit": "max_stored_per_caller", "max": max}),
        _ => json!({"store": "unavailable"}),
    };
    RpcError::new(
        ErrorCode::INTERNAL_ERROR,
        "the task store did not complete the operation",
    )
    .data(data)
}

impl Tasks {
    /// `op` within the store timeout, as the store answered it; a failure
    /// to reach the store begins an outage, logged once (a warning), and
    /// the next success ends it.
    pub(super) async fn attempt<T>(
        &self,
        op: crate::tasks::StoreFuture<'_, T>,
    ) -> Result<T, TaskStoreError> {
        let outcome = match tokio::time::timeout(self.limits.store_timeout, op).await {
            Ok(outcome) => outcome,
            Err(_) => Err(TaskStoreError::Timeout(self.limits.store_timeout)),
        };
        match &outcome {
            // A full store answered: it is reachable.
            Ok(_) | Err(TaskStoreError::Full(_) | TaskStoreError::CallerFull(_)) => {
                if self.outage.succeeded() {
                    tracing::info!(target: "wymcp::tasks", "the task store answers again");
                }
            }
            Err(error) => {
                if self.outage.failed() {
                    tracing::warn!(target: "wymcp::tasks", %error,
                        "the task store is unavailable; task requests fail until it answers again");
                } else {
                    tracing::debug!(target: "wymcp::tasks", %error, "the task store is still unavailable");
                }
            }
        }
        outcome
    }

    /// [`attempt`](Self::attempt), its failure the request's -32603.
    pub(super) async fn timed<T>(
        &self,
        op: crate::tasks::StoreFuture<'_, T>,
    ) -> Result<T, RpcError> {
        self.attempt(op).await.map_err(|error| store_error(&error))
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

    /// Counts a task reaching `status` (a write the store accepted).
    #[cfg_attr(not(feature = "metrics"), allow(clippy::unused_self))]
    pub(super) fn reached(&self, status: Status) {
        #[cfg(feature = "metrics")]
        self.statuses.add(
            1,
            &[opentelemetry::KeyValue::new(
                "wymcp.task.status",
                status.name(),
            )],
        );
        #[cfg(not(feature = "metrics"))]
        let _ = status;
    }

    /// The task `id` of `caller`, changed by `change` (which says whether
    /// it changed anything), written back with a compare-and-set that is
    /// tried again on a lost race; `None` when there is no such task.
    pub(super) async fn modify(
        &self,
        id: &str,
        caller: Option<&str>,
        mut change: impl FnMut(&mut Record) -> bool,
    ) -> Result<Option<Record>, RpcError> {
        for _ in 0..RETRIES {
            let Some((entry, mut record)) = self.load(id).await? else {
                return Ok(None);
            };
            let before = record.status;
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
                if record.status != before {
                    self.reached(record.status);
                }
                return Ok(Some(record));
            }
        }
        Err(RpcError::new(
            ErrorCode::INTERNAL_ERROR,
            "the task changed under every attempt to write it",
        ))
    }
}

/// A tool result as `tasks/get` inlines it.
pub(super) fn result_value(result: &ToolResult) -> Value {
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
pub(super) fn created(id: &str, record: &Record, limits: &TaskLimits) -> Value {
    let mut out = base(id, record, limits);
    out.insert("resultType".into(), json!("task"));
    Value::Object(out)
}

/// The detailed task of `tasks/get`.
pub(super) fn detailed(id: &str, record: &Record, limits: &TaskLimits) -> Value {
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
