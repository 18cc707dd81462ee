//! The request span: one `tracing` span per JSON-RPC message, carrying
//! the OpenTelemetry semantic conventions for MCP (`mcp.method.name`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`, …)
//! and, at its end, one event with the outcome and the duration.
//!
//! Classification opens it, once the message's method and id are known:
//! its name (`otel.name`, `{mcp.method.name} {target}`, `tools/call
//! greet`) must be set when it is made, since an OpenTelemetry span keeps
//! the name it started with. The stages after it run in it (their spans
//! are its children, and a handler's events nest in Dispatch's), and record
//! what they learn: the one rejection sender the error, Dispatch the
//! revision and the resource named. What runs before a message exists
//! (the origin check, reading the body) is the transport's, spanned by
//! whatever HTTP span the application puts around the router. The router
//! gives the exchange a slot for the span and, once the response is made,
//! records its status and emits the event.
//!
//! The span is at `info` under the target `wymcp::request`; a subscriber
//! that filters it out pays for nothing but the check. Client text
//! recorded on it is bounded ([`truncated`](crate::protocol::text::truncated)).
//! See `examples/otel.rs` for an export with `tracing-opentelemetry`.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::protocol::text::truncated;

/// Where the request span goes once classification opens it: shared by
/// the router (which reads it when the response is made) and the exchange
/// (handed over in the request's extensions).
#[derive(Debug, Clone, Default)]
pub(crate) struct SpanSlot(pub(crate) Arc<OnceLock<Span>>);

/// What the request span is opened with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opening<'a> {
    pub(crate) version: http::Version,
    pub(crate) client: Option<std::net::IpAddr>,
    pub(crate) method: Option<&'a str>,
    /// The message, read (for its id and params) only for an enabled span.
    pub(crate) message: Option<&'a Value>,
    /// Whether the message is a request, whose id the span records.
    pub(crate) request: bool,
}

/// The request span of a message, named `{method} {target}`: the tool of
/// a `tools/call`, the prompt of a `prompts/get` (a resource URI is
/// high-cardinality: not in the name).
pub(crate) fn open(opening: Opening<'_>) -> Span {
    let method = opening.method.map(truncated);
    let text = |key: &str| {
        opening
            .message
            .and_then(|m| m.get("params"))
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
    };
    let target = || match opening.method {
        Some("tools/call" | "prompts/get") => text("name"),
        _ => None,
    };
    // The name is built inside the macro's field list: `tracing` evaluates
    // field values only for a span some subscriber wants, so a filtered-out
    // span allocates nothing and looks up nothing.
    let name = || match (&method, target()) {
        (Some(method), Some(target)) => format!("{method} {}", truncated(target)),
        (Some(method), None) => method.to_string(),
        (None, _) => "mcp".to_owned(),
    };
    let span = tracing::info_span!(
        target: "wymcp::request",
        "mcp.request",
        otel.name = name().as_str(),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method.as_deref(),
        mcp.protocol.version = Empty,
        mcp.resource.uri = Empty,
        jsonrpc.request.id = Empty,
        jsonrpc.protocol.version = "2.0",
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        http.response.status_code = Empty,
        network.transport = "tcp",
        network.protocol.name = "http",
        network.protocol.version = http_version(opening.version),
        client.address = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(client) = opening.client {
        span.record("client.address", client.to_string());
    }
    let id = opening
        .message
        .filter(|_| opening.request)
        .and_then(|m| m.get("id"));
    match id {
        Some(Value::String(id)) => {
            span.record("jsonrpc.request.id", &*truncated(id));
        }
        Some(Value::Number(id)) => {
            span.record("jsonrpc.request.id", id.to_string());
        }
        _ => {}
    }
    match (opening.method, target()) {
        (Some("tools/call"), Some(tool)) => {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", &*truncated(tool));
        }
        (Some("prompts/get"), Some(prompt)) => {
            span.record("gen_ai.prompt.name", &*truncated(prompt));
        }
        _ => {}
    }
    span
}

fn http_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// Records what Dispatch knows: the revision, and the resource a
/// `resources/read` names.
pub(crate) fn dispatched(
    span: &Span,
    method: &str,
    revision: Option<&str>,
    params: Option<&Value>,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(revision) = revision {
        span.record("mcp.protocol.version", revision);
    }
    if method == "resources/read"
        && let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str)
    {
        span.record("mcp.resource.uri", &*truncated(uri));
    }
}

/// Records a JSON-RPC error answer: its code, as `error.type` and
/// `rpc.response.status_code`.
pub(crate) fn errored(span: &Span, code: i64) {
    if span.is_disabled() {
        return;
    }
    let code = code.to_string();
    span.record("error.type", code.as_str());
    span.record("rpc.response.status_code", code.as_str());
    span.record("otel.status_code", "ERROR");
}

/// Records a tool result with `isError: true` (`error.type = tool_error`).
pub(crate) fn tool_failed(span: &Span) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "ERROR");
}

/// Records the response's HTTP status and emits the request's one event:
/// at `info`, with the status and the time since `started`, in
/// milliseconds. A streamed answer is logged when its head is sent.
pub(crate) fn finished(span: &Span, status: http::StatusCode, started: Instant) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status.as_u16());
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        tracing::info!(
            target: "wymcp::request",
            status = status.as_u16(),
            duration_ms,
            "request answered"
        );
    });
}
