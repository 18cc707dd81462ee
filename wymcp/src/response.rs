//! JSON-RPC envelopes, the rejection-id rule, and the one rejection sender.
//!
//! Every rejection of every stage goes through [`Exchange::reject`]. It takes
//! a status, a JSON-RPC code, a message and optional data and headers, never
//! an id: the id comes from the **rejection-id rule**: the body's id is echoed
//! only when classification tagged the message a
//! [`Request`](MessageKind::Request); every other envelope, the parse step's
//! and auth's 401 included, carries `"id": null`.
//!
//! Each rejection emits one `tracing` event at INFO on the target
//! `wymcp::rejection`, with the stage, status and code, so an operator can see
//! why a request was refused.

use std::borrow::Cow;

use axum::body::Body;
use http::{HeaderName, HeaderValue, StatusCode, header};
use serde::Serialize;
use serde_json::Value;

use crate::exchange::{Exchange, MessageKind};
use crate::stage::Flow;

/// The HTTP response type every stage and handler answers with.
pub type Response = http::Response<Body>;

/// JSON-RPC and MCP error codes.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available (HTTP 404 on MCP).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A standard header is missing, malformed or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The protocol version is not served.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A refusal, as a stage describes it: everything but the id.
#[derive(Debug, Clone)]
pub struct Rejection {
    status: StatusCode,
    code: i64,
    message: Cow<'static, str>,
    data: Option<Value>,
    headers: Vec<(HeaderName, HeaderValue)>,
    close: bool,
}

impl Rejection {
    /// A rejection with an HTTP status, a JSON-RPC code and a message.
    pub fn new(status: StatusCode, code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        Rejection {
            status,
            code,
            message: message.into(),
            data: None,
            headers: Vec::new(),
            close: false,
        }
    }

    /// Attaches the error's `data` member.
    #[must_use]
    pub fn data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Adds a response header (for example `WWW-Authenticate`).
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Closes an HTTP/1.x connection with the answer (`Connection: close`).
    /// Used by the arms that answer after the body read began, so the rest of
    /// an unread body is never taken for the next request. HTTP/2 gets no
    /// such header: each request is its own stream.
    #[must_use]
    pub fn close(mut self) -> Self {
        self.close = true;
        self
    }

    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON-RPC code.
    #[must_use]
    pub fn code(&self) -> i64 {
        self.code
    }
}

impl Exchange<'_> {
    /// The id a rejection of this exchange carries: the body's id when the
    /// message is a [`Request`](MessageKind::Request), `null` otherwise.
    #[must_use]
    pub fn rejection_id(&self) -> Value {
        match (self.kind, self.message.as_ref()) {
            (Some(MessageKind::Request), Some(message)) => {
                message.get("id").cloned().unwrap_or(Value::Null)
            }
            _ => Value::Null,
        }
    }

    /// The one rejection sender: answers with `rejection`, its id decided by
    /// the rejection-id rule, and records one rejection event.
    pub fn reject(&self, rejection: Rejection) -> Flow {
        Flow::Answer(self.rejection_response(rejection))
    }

    /// Like [`reject`](Self::reject), for code that needs the response itself.
    #[must_use]
    pub fn rejection_response(&self, rejection: Rejection) -> Response {
        self.rejector().response(rejection)
    }

    /// What the one rejection sender needs of this exchange, detached from
    /// its borrow: for an answer given later, by a handler future that
    /// outlives it (a streamed tool call).
    #[must_use]
    pub fn rejector(&self) -> Rejector {
        Rejector {
            id: self.rejection_id(),
            stage: self.stage(),
            http2: self.is_http2(),
        }
    }
}

/// The one rejection sender, detached from its exchange (see
/// [`Exchange::rejector`]): the id decided by the rejection-id rule, the
/// stage, and whether the request came over HTTP/2.
#[derive(Debug, Clone)]
pub struct Rejector {
    id: Value,
    stage: &'static str,
    http2: bool,
}

impl Rejector {
    /// The id an answer to this request carries (the rejection-id rule).
    #[must_use]
    pub(crate) fn id(&self) -> &Value {
        &self.id
    }

    /// Answers with `rejection` and records one rejection event.
    #[must_use]
    pub fn response(&self, rejection: Rejection) -> Response {
        let Rejection {
            status,
            code,
            message,
            data,
            headers,
            close,
        } = rejection;
        tracing::info!(
            target: "wymcp::rejection",
            stage = self.stage,
            status = status.as_u16(),
            code,
            // Debug-formatted: the message may quote client text, whose
            // CR/LF must not start a log line of its own.
            message = ?message,
            "request rejected"
        );
        let body = error_envelope(&self.id, code, &message, data.as_ref());
        let mut response = json_response(status, body);
        let response_headers = response.headers_mut();
        for (name, value) in headers {
            response_headers.append(name, value);
        }
        if close && !self.http2 {
            response_headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ResultEnvelope<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a R,
}

/// The bytes of a JSON-RPC error response.
#[must_use]
pub fn error_envelope(id: &Value, code: i64, message: &str, data: Option<&Value>) -> Vec<u8> {
    let envelope = ErrorEnvelope {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code,
            message,
            data,
        },
    };
    // Serialising plain data to a Vec cannot fail.
    serde_json::to_vec(&envelope).unwrap_or_default()
}

/// The bytes of a JSON-RPC result response.
#[must_use]
pub fn result_envelope<R: Serialize>(id: &Value, result: &R) -> Vec<u8> {
    // Sized for a small result (serde_json's own start is 128 bytes, which a
    // 2026 result with its `_meta` outgrows at once).
    let mut bytes = Vec::with_capacity(RESULT_CAPACITY);
    let envelope = ResultEnvelope {
        jsonrpc: "2.0",
        id,
        result,
    };
    match serde_json::to_writer(&mut bytes, &envelope) {
        Ok(()) => bytes,
        // Only a `Serialize` impl that fails (none of wymcp's) gets here.
        Err(_) => Vec::new(),
    }
}

/// The first allocation of a result's bytes.
const RESULT_CAPACITY: usize = 512;

/// A `200 OK` JSON-RPC result response.
#[must_use]
pub fn result<R: Serialize>(id: &Value, result: &R) -> Response {
    json_response(StatusCode::OK, result_envelope(id, result))
}

/// A JSON response with the given status and body bytes.
#[must_use]
pub fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = http::Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, APPLICATION_JSON);
    response
}

/// `202 Accepted` with an empty body: a notification was accepted.
#[must_use]
pub fn accepted() -> Response {
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// `405 Method Not Allowed` with `Allow: POST`: the answer to every verb but
/// POST on the endpoint. Runs no stage.
#[must_use]
pub fn method_not_allowed() -> Response {
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}
