//! Helpers of the end-to-end tests of MRTR, streaming and listen: 2026
//! requests with the headers the wire checks want, sent through the default
//! chain's router, and answers read as JSON or as SSE events.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::missing_panics_doc,
    clippy::needless_pass_by_value
)]

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wymcp::Server;
use wymcp::axum::Router;
use wymcp::axum::body::Body;

/// The `_meta` a 2026 client sends, with these capabilities and extra keys.
pub fn meta(capabilities: Value, extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
    });
    if let (Value::Object(meta), Value::Object(extra)) = (&mut meta, extra) {
        meta.extend(extra);
    }
    meta
}

/// Every input kind declared.
pub fn all_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// A 2026 POST of `method` with `params` (which must carry `_meta`), with
/// the standard headers bound to the body, and `bearer` when given.
pub fn request(id: &Value, method: &str, params: &Value, bearer: Option<&str>) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        _ => None,
    };
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    if let Some(token) = bearer {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    builder
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap()
}

/// The default chain's router around `server`.
pub fn router(server: Arc<Server>) -> Router {
    wymcp::chain::post::router(server)
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub raw: Vec<u8>,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as one JSON message, asserting a plain JSON answer.
    pub fn json(&self) -> Value {
        assert_eq!(self.content_type(), "application/json", "{self:?}");
        assert!(self.headers.get("mcp-session-id").is_none());
        serde_json::from_slice(&self.raw).unwrap()
    }

    /// A `200` JSON result with this id; returns the result.
    pub fn result(&self, id: &Value) -> Value {
        assert_eq!(
            self.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&self.raw)
        );
        let body = self.json();
        assert_eq!(&body["id"], id, "{body}");
        assert!(body.get("error").is_none(), "{body}");
        body["result"].clone()
    }

    /// A JSON-RPC error with this status, code and id; returns the error.
    pub fn error(&self, status: StatusCode, code: i64, id: &Value) -> Value {
        let body = self.json();
        assert_eq!(self.status, status, "{body}");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(&body["id"], id, "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].is_string());
        body["error"].clone()
    }

    /// The body as SSE events (one JSON message each), asserting an SSE
    /// answer with the headers a stream needs.
    pub fn events(&self) -> Vec<Value> {
        assert_eq!(self.status, StatusCode::OK);
        assert_eq!(self.content_type(), "text/event-stream", "{self:?}");
        assert_eq!(self.headers.get("x-accel-buffering").unwrap(), "no");
        parse_events(&self.raw)
    }
}

/// The JSON messages of an SSE body (comments skipped).
pub fn parse_events(raw: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(raw).unwrap();
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty() && !e.starts_with(':'))
        .map(|e| {
            let data = e
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"));
            serde_json::from_str(data).unwrap()
        })
        .collect()
}

/// Sends `request` through `router` and reads the whole answer.
pub async fn send(router: &Router, request: Request<Body>) -> Reply {
    let response = router.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let raw = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the answer ended in time")
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status: parts.status,
        headers: parts.headers,
        raw,
    }
}

/// An open SSE answer, read event by event.
pub struct Stream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: Body,
    buffer: Vec<u8>,
}

impl Stream {
    /// Sends `request` and keeps the answer open.
    pub async fn open(router: &Router, request: Request<Body>) -> Stream {
        let response = router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        Stream {
            status: parts.status,
            headers: parts.headers,
            body,
            buffer: Vec::new(),
        }
    }

    /// The next JSON event, or `None` when nothing comes within `wait` or
    /// the stream ended.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                if event.starts_with(b":") {
                    continue;
                }
                return parse_events(&event).into_iter().next();
            }
            let frame = tokio::time::timeout(wait, self.body.frame()).await.ok()??;
            if let Ok(data) = frame.unwrap().into_data() {
                self.buffer.extend_from_slice(&data);
            }
        }
    }

    /// The next JSON event, asserting one arrives within 5 s.
    pub async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(5))
            .await
            .expect("an event within 5 s")
    }

    /// Whether the stream has ended (nothing more, not even a comment).
    pub async fn ended(&mut self) -> bool {
        self.buffer.is_empty()
            && tokio::time::timeout(Duration::from_secs(5), self.body.frame())
                .await
                .is_ok_and(|frame| frame.is_none())
    }
}
