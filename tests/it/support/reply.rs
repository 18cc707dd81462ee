//! [`Reply`]: the one answer of the in-process tests, with the assertions
//! they make; [`Answered`]: the same assertions on a `wymcp::testing`
//! exchange (whose client also keeps a listen stream open: `Listen`).

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;
use wymcp::axum::Router;
use wymcp_tests::wire::{RejectionEvent, Rejections};

use super::Req;

/// How long an answer may take to end.
const PATIENCE: Duration = Duration::from_secs(10);

/// An answer, read whole, and the rejection events recorded while it was
/// answered.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub raw: Bytes,
    /// The body as JSON; `Null` when it is empty or not JSON (an SSE answer:
    /// see [`events`](Self::events)).
    pub body: Value,
    pub rejections: Vec<RejectionEvent>,
}

/// Sends `req` through `router` in-process.
pub async fn send(router: &Router, req: Req) -> Reply {
    let request = req.build();
    answered(async move {
        let Ok(response) = router.clone().oneshot(request).await;
        response
    })
    .await
}

/// Awaits `answer` (a router's or a generated `handle`'s), recording the
/// rejection events, and reads the body whole.
pub async fn answered(answer: impl Future<Output = wymcp::Response>) -> Reply {
    let (rejections, _guard) = Rejections::record();
    let (parts, body) = answer.await.into_parts();
    let raw = tokio::time::timeout(PATIENCE, body.collect())
        .await
        .expect("the answer ended in time")
        .unwrap()
        .to_bytes();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Reply {
        status: parts.status,
        headers: parts.headers,
        raw,
        body,
        rejections: rejections.events(),
    }
}

impl Reply {
    /// A response header as a string, asserting it is there.
    #[track_caller]
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no `{name}` header"))
            .to_str()
            .unwrap()
    }

    /// The `Content-Type`, or `""`.
    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Asserts one JSON-RPC message answered as JSON, with no session id.
    #[track_caller]
    fn json(&self) -> &Value {
        assert_eq!(self.content_type(), "application/json", "{self:?}");
        assert!(self.headers.get("mcp-session-id").is_none(), "{self:?}");
        assert_eq!(self.body["jsonrpc"], "2.0", "{}", self.body);
        &self.body
    }

    /// The JSON-RPC result, asserting the body is one.
    #[track_caller]
    pub fn result(&self) -> &Value {
        assert_eq!(self.body["jsonrpc"], "2.0", "{}", self.body);
        self.body
            .get("result")
            .unwrap_or_else(|| panic!("expected a result, got {}", self.body))
    }

    /// Asserts a `200` JSON-RPC result with this id, answered as JSON with
    /// no session id; returns the result.
    #[track_caller]
    pub fn ok(&self, id: &Value) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "status of {}", self.body);
        let body = self.json();
        assert_eq!(&body["id"], id, "id of {body}");
        assert!(body.get("error").is_none(), "{body}");
        self.result()
    }

    /// Asserts a JSON-RPC error with this status, code and id, answered as
    /// JSON with no session id; returns the error object.
    #[track_caller]
    pub fn error(&self, status: StatusCode, code: i64, id: &Value) -> &Value {
        assert_eq!(self.status, status, "status of {}", self.body);
        let body = self.json();
        assert_eq!(&body["id"], id, "id of {body}");
        assert!(body.get("result").is_none(), "{body}");
        assert_eq!(body["error"]["code"], code, "code of {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
        &body["error"]
    }

    /// Asserts a rejection by `stage`: [`error`](Self::error) with this
    /// status, code and id, and exactly one rejection event, with this stage,
    /// status and code.
    #[track_caller]
    pub fn rejected(&self, stage: &str, status: u16, code: i64, id: &Value) -> &Self {
        self.error(StatusCode::from_u16(status).unwrap(), code, id);
        assert_eq!(
            self.rejections,
            [RejectionEvent {
                stage: stage.to_owned(),
                status: u64::from(status),
                code,
            }],
            "exactly one rejection event"
        );
        self
    }

    /// Asserts the probe answered (the wire checks let the request
    /// through, none rejected it); returns what it saw.
    #[track_caller]
    pub fn passed(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "passed? body: {}", self.body);
        assert_eq!(self.body["probe"], true, "{}", self.body);
        assert!(
            self.rejections.is_empty(),
            "no rejection event: {:?}",
            self.rejections
        );
        &self.body
    }

    /// The body as SSE events (one JSON message each), asserting a `200`
    /// SSE answer with the headers a stream needs.
    #[track_caller]
    pub fn events(&self) -> Vec<Value> {
        assert_eq!(self.status, StatusCode::OK);
        assert_eq!(self.content_type(), "text/event-stream", "{self:?}");
        assert_eq!(self.header("x-accel-buffering"), "no");
        parse_events(&self.raw)
    }
}

/// The JSON messages of an SSE body (comments skipped).
fn parse_events(raw: &[u8]) -> Vec<Value> {
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

/// The assertions of [`Reply::ok`] and [`Reply::error`] on an exchange of
/// `wymcp::testing` (whose client picks the id, and which the assertions
/// hold it to echo).
pub trait Answered {
    /// Asserts a `200` JSON-RPC result answered as JSON with no session id,
    /// the request's id echoed; returns the result.
    fn answered(&self) -> &Value;
    /// Asserts a JSON-RPC error of this status and code answered as JSON
    /// with no session id, the request's id echoed; returns the error object.
    fn refused(&self, status: StatusCode, code: i64) -> &Value;
}

impl Answered for wymcp::testing::Transcript {
    #[track_caller]
    fn answered(&self) -> &Value {
        let body = one_json(self, StatusCode::OK);
        assert!(body.get("error").is_none(), "{body}");
        body.get("result")
            .unwrap_or_else(|| panic!("expected a result, got {body}"))
    }

    #[track_caller]
    fn refused(&self, status: StatusCode, code: i64) -> &Value {
        let body = one_json(self, status);
        assert!(body.get("result").is_none(), "{body}");
        assert_eq!(body["error"]["code"], code, "code of {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
        &body["error"]
    }
}

/// The one JSON-RPC message of a JSON answer of `status`, with the
/// request's id and no session id.
#[track_caller]
fn one_json(exchange: &wymcp::testing::Transcript, status: StatusCode) -> &Value {
    let body = exchange.response().unwrap_or(&Value::Null);
    assert_eq!(exchange.status, status, "status of {body}");
    assert_eq!(
        exchange.header("content-type"),
        "application/json",
        "{body}"
    );
    assert!(
        exchange.headers.get("mcp-session-id").is_none(),
        "{exchange:?}"
    );
    assert_eq!(exchange.messages.len(), 1, "{:?}", exchange.messages);
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], exchange.request["id"], "id of {body}");
    body
}

/// Each event that arrives on `stream` within `wait` of the one before
/// (at most 1,000), as its method and, for `resources/updated`, its URI.
pub async fn heard(stream: &mut wymcp::testing::Listen, wait: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < 1000
        && let Some(event) = stream.next_within(wait).await
    {
        let method = event["method"].as_str().unwrap_or_default().to_owned();
        let uri = event["params"]["uri"]
            .as_str()
            .map(|u| format!(" {u}"))
            .unwrap_or_default();
        out.push(format!("{method}{uri}"));
    }
    out
}
