//! The request span: one `tracing` span per request, carrying the
//! OpenTelemetry semantic conventions for MCP (`mcp.method.name`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`, …)
//! and, at its end, one event with the outcome and the duration.
//!
//! The router opens the span around the chain (so every stage's span and
//! every handler's events nest in it); the stages record what they learn
//! as they learn it: classification the method and id, the one rejection
//! sender the error, Dispatch the revision and the tool, prompt or
//! resource named. The span is at `info` under the target
//! `wymcp::request`; a subscriber that filters it out pays for nothing but
//! the check. Client text recorded on it is bounded
//! ([`truncated`](crate::protocol::text::truncated)).
//!
//! With `tracing-opentelemetry`, the span becomes an OTel server span
//! named `{mcp.method.name} {target}` (`otel.name`), with an error status
//! when the request was refused or a tool failed; see
//! `examples/src/bin/otel.rs`.

use std::time::Instant;

use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::protocol::text::truncated;

/// The request span, as the router hands it to the chain (in the
/// request's extensions).
#[derive(Debug, Clone)]
pub(crate) struct RequestSpan(pub(crate) Span);

/// A new request span, its fields empty until the chain records them;
/// `version` is the HTTP version (`1.1`, `2`).
pub(crate) fn open(version: http::Version, client: Option<std::net::IpAddr>) -> Span {
    let span = tracing::info_span!(
        target: "wymcp::request",
        "mcp.request",
        otel.name = "mcp",
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = Empty,
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
        network.protocol.version = http_version(version),
        client.address = Empty,
    );
    if let Some(client) = client
        && !span.is_disabled()
    {
        span.record("client.address", client.to_string());
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

/// Records what classification learnt: the method and the request's id.
pub(crate) fn classified(span: &Span, method: Option<&str>, id: Option<&Value>) {
    if span.is_disabled() {
        return;
    }
    if let Some(method) = method {
        let method = truncated(method);
        span.record("mcp.method.name", &*method);
        span.record("otel.name", &*method);
    }
    match id {
        Some(Value::String(id)) => {
            span.record("jsonrpc.request.id", &*truncated(id));
        }
        Some(Value::Number(id)) => {
            span.record("jsonrpc.request.id", id.to_string());
        }
        _ => {}
    }
}

/// Records what Dispatch knows: the revision, and what the call names (a
/// tool, a prompt, a resource), which names the span.
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
    let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let target = match method {
        "tools/call" => text("name").inspect(|name| {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", &*truncated(name));
        }),
        "prompts/get" => text("name").inspect(|name| {
            span.record("gen_ai.prompt.name", &*truncated(name));
        }),
        "resources/read" => {
            if let Some(uri) = text("uri") {
                span.record("mcp.resource.uri", &*truncated(uri));
            }
            // A URI is high-cardinality: not in the span's name.
            None
        }
        _ => None,
    };
    if let Some(target) = target {
        span.record(
            "otel.name",
            format!("{} {}", truncated(method), truncated(target)),
        );
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
