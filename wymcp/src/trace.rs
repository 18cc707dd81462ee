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
//!
//! The event (`request answered`) carries the request line's own fields,
//! so a formatter that leaves the span's fields out
//! ([`wymcp::telemetry`](crate::telemetry) does, for this target) prints a
//! short line: `caller` (the principal's subject, else the client's
//! address), `method`, `target` (the tool or prompt named, or the resource
//! URI read), `status` and `duration_ms`, each bounded.
//!
//! The [`Slot`] the router makes for each request also gathers what the
//! metrics record once the response is made (`metrics` feature): the
//! method as one of the [`METHODS`] wymcp knows (else `_OTHER`), the
//! registered tool called, the error, and the stage that rejected it;
//! these are kept whether or not the span is enabled.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::protocol::text::{Bounded, truncated};

/// Where the request span goes once classification opens it: shared by
/// the router (which reads it when the response is made) and the exchange
/// (handed over in the request's extensions).
#[derive(Debug, Clone, Default)]
pub(crate) struct SpanSlot(pub(crate) Arc<Slot>);

/// What one request's line and metrics say, gathered while it runs.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The request span, once classification opened it.
    pub(crate) span: OnceLock<Span>,
    /// The method as metrics name it: one of [`METHODS`], else `_OTHER`
    /// (set only with the `metrics` feature, like `tool`).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    method: OnceLock<&'static str>,
    /// The registered tool a `tools/call` called (an unknown name is none).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    tool: OnceLock<Arc<str>>,
    /// The first error answered: a JSON-RPC code, or a tool's `isError`.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    error: OnceLock<ErrorType>,
    /// The stage whose rejection answered.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    rejected: OnceLock<&'static str>,
    /// The request line's text, kept only for an enabled span.
    line: OnceLock<Line>,
    /// The principal's subject, once authenticated (enabled span only).
    subject: OnceLock<Box<str>>,
    /// The resource a `resources/read` names (enabled span only).
    resource: OnceLock<Box<str>>,
}

/// The request line's text, bounded.
#[derive(Debug)]
struct Line {
    method: Option<Box<str>>,
    target: Option<Box<str>>,
    client: Option<IpAddr>,
}

/// What an answer's `error.type` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum ErrorType {
    /// A JSON-RPC error answer, by its code.
    Code(i64),
    /// A tool result with `isError: true`.
    Tool,
}

/// The methods wymcp's metrics name as they are; any other method a
/// client sends is recorded as `_OTHER` (a client's text never makes a
/// time series of its own).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/directory/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// The value metrics record for a method, bounded: a known method's own
/// name, else `_OTHER`.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) fn known_method(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or(OTHER)
}

/// The value recorded for a client's text that names nothing wymcp knows.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const OTHER: &str = "_OTHER";

#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
impl Slot {
    /// The method as metrics name it, once classification saw one.
    pub(crate) fn method(&self) -> Option<&'static str> {
        self.method.get().copied()
    }

    /// The registered tool called, if one was.
    pub(crate) fn tool(&self) -> Option<&Arc<str>> {
        self.tool.get()
    }

    /// The first error answered.
    pub(crate) fn error(&self) -> Option<ErrorType> {
        self.error.get().copied()
    }

    /// The stage whose rejection answered.
    pub(crate) fn rejected(&self) -> Option<&'static str> {
        self.rejected.get().copied()
    }

    /// Records the registered tool a `tools/call` found.
    pub(crate) fn called(&self, tool: &Arc<str>) {
        // Without metrics, nothing reads it: no reference count to bump.
        #[cfg(feature = "metrics")]
        let _ = self.tool.set(Arc::clone(tool));
        #[cfg(not(feature = "metrics"))]
        let _ = (self, tool);
    }

    /// Records the principal's subject, for the request line.
    pub(crate) fn authenticated(&self, subject: &str) {
        if self.span.get().is_some_and(|span| !span.is_disabled()) {
            let _ = self.subject.set(truncated(subject).into());
        }
    }

    /// Records a rejection by `stage`.
    pub(crate) fn reject(&self, stage: &'static str, code: i64) {
        let _ = self.rejected.set(stage);
        let _ = self.error.set(ErrorType::Code(code));
    }
}

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
pub(crate) fn open(opening: Opening<'_>, slot: Option<&Slot>) -> Span {
    #[cfg(feature = "metrics")]
    if let (Some(slot), Some(method)) = (slot, opening.method) {
        let _ = slot.method.set(known_method(method));
    }
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
    if let Some(slot) = slot {
        let _ = slot.line.set(Line {
            method: method.as_deref().map(Box::from),
            target: target().map(|target| truncated(target).into()),
            client: opening.client,
        });
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
    slot: Option<&Slot>,
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
        let uri = truncated(uri);
        span.record("mcp.resource.uri", &*uri);
        if let Some(slot) = slot {
            let _ = slot.resource.set(uri.into());
        }
    }
}

/// Records a JSON-RPC error answer: its code, as `error.type` and
/// `rpc.response.status_code`.
pub(crate) fn errored(span: &Span, slot: Option<&Slot>, code: i64) {
    if let Some(slot) = slot {
        let _ = slot.error.set(ErrorType::Code(code));
    }
    if span.is_disabled() {
        return;
    }
    let code = code.to_string();
    span.record("error.type", code.as_str());
    span.record("rpc.response.status_code", code.as_str());
    span.record("otel.status_code", "ERROR");
}

/// Records a tool result with `isError: true` (`error.type = tool_error`).
pub(crate) fn tool_failed(span: &Span, slot: Option<&Slot>) {
    if let Some(slot) = slot {
        let _ = slot.error.set(ErrorType::Tool);
    }
    if span.is_disabled() {
        return;
    }
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "ERROR");
}

/// Records the response's HTTP status and emits the request's one event:
/// at `info`, in the request span, with the request line's fields
/// (`caller`, `method`, `target`, `status`, `duration_ms`, milliseconds
/// since `started`). A streamed answer is logged when its head is sent.
/// Returns the time taken, for the metrics.
pub(crate) fn finished(slot: &Slot, status: http::StatusCode, started: Instant) -> Duration {
    let elapsed = started.elapsed();
    let Some(span) = slot.span.get().filter(|span| !span.is_disabled()) else {
        return elapsed;
    };
    span.record("http.response.status_code", status.as_u16());
    let line = slot.line.get();
    let method = line.and_then(|line| line.method.as_deref()).unwrap_or("-");
    let target = slot
        .resource
        .get()
        .map(|uri| &**uri)
        .or_else(|| line.and_then(|line| line.target.as_deref()))
        .unwrap_or("-");
    let client = line.and_then(|line| line.client);
    // Whole microseconds: `0.612`, not `0.6123460000000001`.
    #[allow(clippy::cast_precision_loss)]
    let duration_ms = elapsed.as_micros() as f64 / 1000.0;
    let caller = Caller {
        subject: slot.subject.get().map(|subject| &**subject),
        client,
    };
    tracing::info!(
        target: "wymcp::request",
        parent: span,
        caller = %caller,
        method = %Bounded(method),
        "target" = %Bounded(target),
        status = status.as_u16(),
        duration_ms,
        "request answered"
    );
    elapsed
}

/// The request line's caller: the subject, else the client's address.
struct Caller<'a> {
    subject: Option<&'a str>,
    client: Option<IpAddr>,
}

impl std::fmt::Display for Caller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.subject, self.client) {
            (Some(subject), _) => write!(f, "{}", Bounded(subject)),
            (None, Some(client)) => write!(f, "{client}"),
            (None, None) => f.write_str("-"),
        }
    }
}
