//! What the tests of the wire checks between the parse step and Validate
//! share: requests, a router that runs those stages and then answers with
//! what they established, and a subscriber that records rejection events.
//!
//! The probe chain, declared with `#[wymcp::pipeline]`, is the default
//! chain with one body-bound stage added right before Validate, which
//! answers `200` with a probe document (`kind`, `era`, `revision`,
//! `principal`): so "the wire checks let it through" is observable whatever
//! Validate and Dispatch would then say, and every stage runs under its
//! default-chain name.

#![allow(dead_code, clippy::unwrap_used, clippy::needless_pass_by_value)]

use std::sync::{Arc, Mutex};

use axum::body::Body;
use http::{HeaderName, HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use wymcp::{Era, Exchange, Flow, MessageKind, Server};

pub const V: &str = "io.modelcontextprotocol/protocolVersion";
pub const C: &str = "io.modelcontextprotocol/clientCapabilities";
pub const MODERN: &str = "2026-07-28";

/// A server with the defaults (serves 2025-11-25 and 2026-07-28).
pub fn server() -> Arc<Server> {
    Arc::new(Server::builder().build().unwrap())
}

/// Valid 2026 `_meta`.
pub fn meta() -> Value {
    json!({ V: MODERN, C: {} })
}

/// A 2026 request body: `params` gets `_meta` added.
pub fn modern(id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026 notification body.
pub fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {}}})
}

/// A POST to `/mcp` with `body` and the given headers (appended in order, so
/// a name may repeat).
pub fn post(body: &Value, headers: &[(&str, &str)]) -> Request<Body> {
    post_raw(body, headers.iter().map(|(n, v)| (*n, v.as_bytes())))
}

/// Like [`post`], with header values as raw bytes (obs-text).
pub fn post_raw<'a>(
    body: &Value,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Request<Body> {
    post_text(&serde_json::to_string(body).unwrap(), headers)
}

/// A POST of a body given as JSON text (for numbers a `Value` cannot hold).
pub fn post_text<'a>(
    body: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(body.to_owned()))
        .unwrap();
    for (name, value) in headers {
        request.headers_mut().append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        );
    }
    request
}

/// The standard headers a conforming 2026 client sends for `body`.
pub fn standard_headers(body: &Value) -> Vec<(&'static str, String)> {
    let mut out = vec![("MCP-Protocol-Version", MODERN.to_owned())];
    if let Some(method) = body["method"].as_str() {
        out.push(("Mcp-Method", method.to_owned()));
        let name = match method {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            out.push(("Mcp-Name", wymcp::fuzzing::encode_value(name).into_owned()));
        }
    }
    out
}

/// A POST of `body` with its standard headers, then `extra`.
pub fn conforming(body: &Value, extra: &[(&str, &str)]) -> Request<Body> {
    let standard = standard_headers(body);
    let mut headers: Vec<(&str, &str)> = standard.iter().map(|(n, v)| (*n, v.as_str())).collect();
    headers.extend_from_slice(extra);
    post(body, &headers)
}

/// One rejection event, as a subscriber sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub stage: String,
    pub status: u64,
    pub code: i64,
}

#[derive(Default)]
struct EventFields {
    stage: Option<String>,
    status: Option<u64>,
    code: Option<i64>,
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "stage" {
            self.stage = Some(value.to_owned());
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "status" => self.status = Some(value),
            "code" => self.code = i64::try_from(value).ok(),
            _ => {}
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "status" => self.status = u64::try_from(value).ok(),
            "code" => self.code = Some(value),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "stage" {
            self.stage = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Event>>>);

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != "wymcp::rejection" {
            return;
        }
        let mut fields = EventFields::default();
        event.record(&mut fields);
        self.0.lock().unwrap().push(Event {
            stage: fields.stage.unwrap_or_default(),
            status: fields.status.unwrap_or_default(),
            code: fields.code.unwrap_or_default(),
        });
    }
}

/// What came back, and the rejection events recorded while answering.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub events: Vec<Event>,
}

impl Reply {
    /// Asserts a rejection by `stage`: status, JSON-RPC code, id, a JSON
    /// content type, and exactly one rejection event with stage, status and
    /// code.
    #[track_caller]
    pub fn rejected(&self, stage: &str, status: u16, code: i64, id: &Value) -> &Self {
        assert_eq!(self.status.as_u16(), status, "status; body: {}", self.body);
        assert_eq!(self.body["jsonrpc"], "2.0", "{}", self.body);
        assert_eq!(
            self.body["error"]["code"], code,
            "code; body: {}",
            self.body
        );
        assert_eq!(&self.body["id"], id, "id; body: {}", self.body);
        assert!(self.body.get("result").is_none(), "{}", self.body);
        assert_eq!(
            self.headers.get(header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        assert_eq!(
            self.events,
            vec![Event {
                stage: stage.to_owned(),
                status: u64::from(status),
                code,
            }],
            "exactly one rejection event"
        );
        self
    }

    /// Asserts the wire checks let the request through (the probe answered).
    #[track_caller]
    pub fn passed(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "passed? body: {}", self.body);
        assert_eq!(self.body["probe"], true, "{}", self.body);
        assert!(
            self.events.is_empty(),
            "no rejection event: {:?}",
            self.events
        );
        &self.body
    }

    /// A response header as a string.
    #[track_caller]
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no `{name}` header"))
            .to_str()
            .unwrap()
    }
}

/// Sends `request` through the probe router of `server`.
pub async fn send(server: &Arc<Server>, request: Request<Body>) -> Reply {
    send_to(probe_router(server.clone()), request).await
}

/// Sends `request` through the real Validate and Dispatch after the checks.
pub async fn send_validated(server: &Arc<Server>, request: Request<Body>) -> Reply {
    send_to(validated_router(server.clone()), request).await
}

/// Sends `request` through `router`, recording rejection events.
pub async fn send_to(router: axum::Router, request: Request<Body>) -> Reply {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let response = router.oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    let events = recorder.0.lock().unwrap().clone();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
        events,
    }
}

/// The probe router (see the module docs).
pub fn probe_router(server: Arc<Server>) -> axum::Router {
    probe::router(server)
}

/// The same stages, then the real Validate and Dispatch.
pub fn validated_router(server: Arc<Server>) -> axum::Router {
    validated::router(server)
}

/// Answers `200` with what the stages before it established.
pub fn answer_probe(ex: &Exchange<'_>) -> Flow {
    let kind = match ex.kind {
        Some(MessageKind::Request) => "request",
        Some(MessageKind::UnidentifiedRequest) => "unidentified_request",
        Some(MessageKind::Notification) => "notification",
        Some(MessageKind::Unknown) => "unknown",
        None => "none",
    };
    let era = match ex.era {
        Era::Modern => "modern",
        Era::Legacy => "legacy",
    };
    Flow::Answer(wymcp_tests::json_response(
        StatusCode::OK,
        serde_json::to_vec(&json!({
            "probe": true,
            "kind": kind,
            "era": era,
            "revision": ex.revision.map(wymcp::Revision::as_str),
            "principal": ex.principal.as_ref().map(|p| &p.subject),
        }))
        .unwrap(),
    ))
}

#[wymcp::pipeline]
pub mod probe {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;

    #[wire_check]
    pub type Auth = stages::Auth;

    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;

    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;

    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;

    #[body_bound(reason = "the probe: answers with what the wire checks established")]
    pub async fn probe(ex: &mut Exchange<'_>) -> Flow {
        super::answer_probe(ex)
    }

    pub type Validate = stages::Validate;

    pub type Dispatch = stages::Dispatch;
}

#[wymcp::pipeline]
pub mod validated {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;

    #[wire_check]
    pub type Auth = stages::Auth;

    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;

    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;

    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;

    pub type Validate = stages::Validate;

    pub type Dispatch = stages::Dispatch;
}
