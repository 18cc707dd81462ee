//! The stdio transport: the same server, launched by its client as a
//! subprocess and spoken to in newline-delimited JSON-RPC on stdin and
//! stdout, as the stdio transport of 2026-07-28 and 2025-11-25 defines it.
//!
//! [`serve()`] and [`serve_with()`] serve the process's own stdin and
//! stdout; [`serve_io()`] serves any pair of byte streams (a pipe, a Unix
//! socket, an in-process duplex), framed the same way.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use wymcp::{Server, Tool, ToolResult, NoArgs};
//!
//! let server = Server::builder()
//!     .info("hello", "1.0.0")
//!     .tool(Tool::new("hi").handler(|_: NoArgs, _| async { Ok(ToolResult::text("hi")) }))
//!     .build()?;
//! wymcp::stdio::serve(server).await?;
//! # Ok(())
//! # }
//! ```
//!
//! **What a line is answered with.** Each line is one message, held to the
//! rules the HTTP chain holds a POST's body to, by the same code:
//! classification, a 2026-07-28 request's protocol fields in `_meta`
//! (`-32602` when missing or malformed, `-32022` for a version not served),
//! the schema of its method in its revision (`-32600`/`-32602` naming the
//! pointer), then the surface (the same tools, resources, prompts,
//! completion, MRTR `input_required` results and `subscriptions/listen`).
//! There is no header layer and no HTTP status: over stdio the message is
//! all there is. What stdio adds:
//!
//! * A line that is not JSON is answered `-32700` with a null id, and the
//!   server goes on with the next line. The server's own
//!   [`Limits`](crate::Limits) bound a line as they bound a body: more JSON
//!   values than `json_values` is `-32600` (null id), a string id longer
//!   than `id_bytes` is never echoed.
//! * A refused request is answered with its id when it has one a request
//!   may have; a notification is never answered, and a JSON-RPC response
//!   (this server asks the client nothing) is dropped.
//! * **Requests interleave.** Each request whose handler runs (or whose
//!   listen stream opens) is a task of its own, and its notifications and
//!   answer are written as they come: a slow call never holds up a fast one.
//!   One writer owns stdout and writes every message whole on its own line.
//! * **Progress and log notifications** a handler sends are written before
//!   its answer, as on an HTTP request's stream. **`subscriptions/listen`**
//!   writes its acknowledgement and changes on stdout, each tagged with the
//!   listen request's id; it ends with the server's `complete` result
//!   ([`Server::close_subscriptions`](crate::Server::close_subscriptions)),
//!   when the client cancels it, or, at the end of input, with a
//!   `notifications/cancelled` naming it.
//! * **`notifications/cancelled`** naming a request in flight cancels its
//!   handler; nothing more is written for it. An unknown id is ignored.
//! * **The 2025 lifecycle.** A 2025 client's `initialize` negotiates its
//!   revision as over HTTP, and this connection remembers it: its later
//!   messages are held to that revision's schema. `notifications/initialized`
//!   is accepted, `ping` answered. Server-to-client requests (2025's
//!   sampling and elicitation) are not made; 2026-07-28 clients get both
//!   through MRTR.
//! * **A 2025 client's connection is its session stream.** What a 2025
//!   client over HTTP hears on its standalone GET stream, one over stdio
//!   hears on its connection once its `initialize` succeeded:
//!   `notifications/tools/list_changed` (and prompts', resources') as the
//!   server announces them, and `notifications/resources/updated` for what
//!   it subscribed to on this connection, untagged (no id). The stream holds
//!   a place of the ledger's `LegacyStreams`, as a GET stream does; it
//!   ends with the connection (nothing more is written: no request is
//!   owed a cancellation), is reopened at its lifetime still watching what
//!   it watched, and is replaced by a second `initialize`. When its place
//!   gives way to a caller under its fair share it writes that error (id
//!   null) and is not reopened, nor once
//!   [`Server::close_subscriptions`](crate::Server::close_subscriptions)
//!   ended it. A 2026-07-28 client hears nothing unasked:
//!   it opens `subscriptions/listen`.
//! * **Nothing but protocol messages on stdout.** wymcp writes its own
//!   events with `tracing`; a subscriber that writes to stdout would
//!   corrupt the stream, so a stdio server sets its subscriber to write to
//!   stderr (`tracing_subscriber::fmt().with_writer(std::io::stderr)`).
//! * **No credentials.** stdio carries no bearer token; every call runs as
//!   [`StdioConfig::principal`] (by default, nobody).
//!
//! **End of input** ends the server: listen streams are told, the requests
//! in flight get up to the drain timeout to answer, and the future resolves
//! `Ok(())` once everything written is flushed. A failed read is returned as
//! its error; so is a failed write, except a closed stdout (the client went
//! away), which ends the server with `Ok(())` and cancels every call.
//!
//! Every limit is a [`StdioConfig`] setting with a default meant for a
//! client that is not trusted:
//!
//! | setting | default | what a client over it meets |
//! |---|---|---|
//! | [`max_line_bytes`](StdioConfig::max_line_bytes) | 8,000,000 | `-32600` with a null id, `data.limit: "max_line_bytes"` and `data.ceiling`, as soon as the line passes the ceiling; the rest of the line is read and dropped, never held; the next line is served |
//! | [`max_in_flight`](StdioConfig::max_in_flight) | 32 | the request over it answered `-32603` with `data.limit: "max_in_flight"` at once (notifications, `notifications/cancelled` included, are still read) |
//! | [`drain_timeout`](StdioConfig::drain_timeout) | 10 s | at the end of input, requests still in flight after it are dropped unanswered |
//!
//! A request reusing the id of one still in flight is answered `-32600`:
//! its cancellation could not say which it meant.
//!
//! **What a client can make the server hold** is bounded by these and the
//! server's [`Limits`](crate::Limits): each request in flight holds its line
//! and the tree parsed from it; docs/limits.md ("Over stdio") gives the
//! formula and the figure at the defaults (≈ 3.3 GB).

mod config;
mod connection;
pub(crate) mod lines;
mod serving;
mod stdin;

pub use config::StdioConfig;
pub use serving::{serve, serve_io, serve_with};
