//! Metrics (`metrics` feature): what a server records through the
//! OpenTelemetry metrics API, and the Prometheus text of what the SDK
//! collects.
//!
//! A server built with the feature records, through the global meter
//! provider's `wymcp` meter (install it before building the server:
//! instruments built against the no-op provider stay no-ops):
//!
//! | instrument | kind, unit | attributes |
//! |---|---|---|
//! | `mcp.server.operation.duration` | histogram, `s` | `mcp.method.name` (a method wymcp knows, else `_OTHER`), `gen_ai.tool.name` (a `tools/call`'s registered tool, else `_OTHER`), `error.type` (the JSON-RPC code, or `tool_error`) |
//! | `wymcp.rejections` | counter, `{rejection}` | `wymcp.stage`, `http.response.status_code` |
//! | `wymcp.ledger.held` | gauge | `wymcp.ledger.kind` ([`Kind::name`](crate::ledger::Kind::name)) |
//! | `wymcp.ledger.cap` | gauge | `wymcp.ledger.kind` |
//! | `wymcp.listen.streams` | gauge, `{stream}` | `wymcp.era` (`2026`: `subscriptions/listen`; `2025`: GET streams) |
//! | `wymcp.tasks` | gauge, `{task}` | `wymcp.task.state` (`running`: handlers running on this replica; `stored`: records it stores) |
//! | `wymcp.tasks.statuses` | counter, `{task}` | `wymcp.task.status` (`working` at creation, then each status a task reaches: `input_required`, `working` again, `completed`, `failed`, `cancelled`), counted on the replica that wrote the change |
//!
//! Every attribute value is one of a fixed set or a name the server
//! registered: no text a client sends makes a time series of its own.
//! The duration is recorded for requests through the HTTP router that
//! reach classification (a message with a method), from the router's
//! receipt to the response's head; a rejection by any stage counts once
//! (every JSON-RPC error goes through the one rejection sender, so
//! `Dispatch` counts method errors such as an unknown tool). The stdio
//! transport records no metrics yet. Tasks are counted both as the ledger
//! holds them now (running, stored) and by the protocol statuses they
//! reach: each status change is a compare-and-set on the task store, and
//! only a write the store accepted is counted, once, by the replica that
//! made it (replicas sharing a Redis store each count their own writes;
//! sum them). A record that expires is not counted again.
//!
//! The gauges' callbacks hold the server's ledger for as long as the meter
//! provider lives: a process that builds many servers against one SDK
//! provider keeps each one's ledger (a few hundred bytes).
//!
//! [`Prometheus`] is a meter provider whose collection renders as
//! Prometheus text ([`encode`]); `examples/everything --metrics ADDR`
//! serves it on a listener of its own.

mod instruments;
mod prometheus;

pub use instruments::DURATION_BOUNDARIES;
pub(crate) use instruments::Instruments;
pub use prometheus::{Prometheus, encode};
