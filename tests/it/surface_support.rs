//! Helpers of the surface tests: run `Dispatch` on a message as the chain
//! would leave it (parsed, classified, era tagged), and check results
//! against the official JSON Schema of the revision.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::missing_panics_doc,
    clippy::needless_pass_by_value
)]

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use wymcp::{Era, MessageKind, Server};

/// The `_meta` a 2026 client sends, with these client capabilities.
pub fn meta_with(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    })
}

/// A 2026 request: `params` with the protocol `_meta` added.
pub fn modern(id: Value, method: &str, params: &Value) -> Value {
    let mut params = params.clone();
    params["_meta"] = meta_with(&json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025 request: no `_meta`.
pub fn legacy(id: Value, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The kind classification tags (the part of its table these tests need).
fn kind_of(message: &Value) -> MessageKind {
    match (message.get("method"), message.get("id")) {
        (Some(Value::String(_)), None) => MessageKind::Notification,
        (Some(Value::String(_)), Some(Value::String(_))) => MessageKind::Request,
        (Some(Value::String(_)), Some(Value::Number(n))) if n.is_i64() || n.is_u64() => {
            MessageKind::Request
        }
        (Some(Value::String(_)), Some(_)) => MessageKind::UnidentifiedRequest,
        _ => MessageKind::Unknown,
    }
}

/// What Dispatch answered.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Option<Value>,
    pub raw: Vec<u8>,
}

impl Answer {
    /// The JSON-RPC result, asserting the answer is one.
    pub fn result(&self) -> &Value {
        let body = self.body.as_ref().expect("a JSON body");
        assert_eq!(body["jsonrpc"], "2.0");
        body.get("result")
            .unwrap_or_else(|| panic!("expected a result, got {body}"))
    }

    /// Asserts a JSON-RPC error with this status, code and id, answered as
    /// JSON with no session id; returns the error object.
    pub fn error(&self, status: StatusCode, code: i64, id: &Value) -> &Value {
        assert_eq!(self.status, status, "status of {:?}", self.body);
        assert_eq!(
            self.headers.get(http::header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        assert!(self.headers.get("mcp-session-id").is_none());
        let body = self.body.as_ref().expect("a JSON body");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(&body["id"], id, "id of {body}");
        assert!(body.get("result").is_none());
        assert_eq!(body["error"]["code"], code, "code of {body}");
        assert!(body["error"]["message"].is_string());
        &body["error"]
    }

    /// Asserts a `200 OK` JSON-RPC result with this id and no session id.
    pub fn ok(&self, id: &Value) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "status of {:?}", self.body);
        assert_eq!(
            self.headers.get(http::header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        assert!(self.headers.get("mcp-session-id").is_none());
        assert_eq!(&self.body.as_ref().unwrap()["id"], id);
        self.result()
    }
}

/// Dispatch as the chain hands it a message, but before Validate: the
/// parse step and classification run (so the era is the headers' and the
/// body's bytes are kept, as the chain keeps them), then Dispatch answers
/// whatever the message is. What the surface answers, for messages
/// Validate would let through and for the ones it would not.
#[wymcp::pipeline]
mod unvalidated {
    use wymcp::stages;
    use wymcp::{Exchange, Flow, Stage};

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the kind and the era")]
    pub type Classify = stages::Classify;

    #[body_bound(reason = "a test harness: Dispatch on what classification left")]
    pub async fn dispatch(ex: &mut Exchange<'_>) -> Flow {
        <stages::Dispatch as Stage>::run(ex).await
    }

    /// Never reached: Dispatch answers first.
    pub type Validate = stages::Validate;
}

/// Sends `message`, with the headers a client of `era` sends, to Dispatch
/// as the chain hands it over (see [`unvalidated`]).
pub async fn dispatch(server: &Server, era: Era, message: Value) -> Answer {
    let response = unvalidated::handle(server, request(era, &message)).await;
    answer(response).await
}

fn schema_document(revision: &str) -> Value {
    let candidates = [
        format!(
            "{}/../wymcp/schema/{revision}/schema.json",
            env!("CARGO_MANIFEST_DIR")
        ),
        format!("/work/shared/mcp-schema/{revision}/schema.json"),
    ];
    for path in &candidates {
        if let Ok(text) = std::fs::read_to_string(path) {
            return serde_json::from_str(&text).unwrap();
        }
    }
    panic!("no schema.json of {revision} at {candidates:?}");
}

/// Asserts `value` is valid against `#/$defs/{definition}` of `revision`'s
/// official schema.
pub fn assert_schema(revision: &str, definition: &str, value: &Value) {
    let mut document = schema_document(revision);
    assert!(
        document["$defs"].get(definition).is_some(),
        "{revision} has no {definition}"
    );
    document["$ref"] = json!(format!("#/$defs/{definition}"));
    let validator = jsonschema::validator_for(&document).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{value} is not a valid {definition} of {revision}: {errors:?}"
    );
}

/// Sends `message` through the default chain, with the headers a client of
/// `era` sends (a 2026 request's standard headers bound to its body; a 2025
/// one only `MCP-Protocol-Version` after `initialize`).
pub async fn through_chain(
    server: impl Into<std::sync::Arc<Server>>,
    era: Era,
    message: Value,
) -> Answer {
    use tower::ServiceExt;
    let response = wymcp::chain::post::router(server.into())
        .oneshot(request(era, &message))
        .await
        .unwrap();
    answer(response).await
}

/// A POST of `message` with the headers a client of `era` sends.
fn request(era: Era, message: &Value) -> http::Request<wymcp::axum::body::Body> {
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let mut builder = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    match era {
        Era::Modern => {
            builder = builder
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method.as_str());
            let params = &message["params"];
            let name = match method.as_str() {
                "tools/call" | "prompts/get" => params["name"].as_str(),
                "resources/read" => params["uri"].as_str(),
                _ => None,
            };
            if let Some(name) = name {
                builder = builder.header("mcp-name", wymcp::fuzzing::encode_value(name).as_ref());
            }
        }
        Era::Legacy if method != "initialize" => {
            builder = builder.header("mcp-protocol-version", "2025-11-25");
        }
        Era::Legacy => {}
    }
    builder
        .body(wymcp::axum::body::Body::from(
            serde_json::to_vec(message).unwrap(),
        ))
        .unwrap()
}

async fn answer(response: wymcp::Response) -> Answer {
    let (parts, body) = response.into_parts();
    let raw = body.collect().await.unwrap().to_bytes().to_vec();
    let body = serde_json::from_slice(&raw).ok();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
        raw,
    }
}
