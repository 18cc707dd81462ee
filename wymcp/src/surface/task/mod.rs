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
//! a [`TaskSupport::Optional`](super::TaskSupport::Optional) tool runs a plain call for it, a
//! [`TaskSupport::Required`](super::TaskSupport::Required) one refuses it -32021 before its handler
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

mod admission;
mod methods;
mod record;
mod running;

pub use admission::TaskLimits;
pub(crate) use admission::Tasks;
