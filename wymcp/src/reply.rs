//! What a stage answers: [`Flow`], the HTTP [`Response`], and the one
//! rejection sender.
//!
//! Every rejection of every stage goes through
//! [`Exchange::reject`](crate::Exchange::reject). It takes
//! a status, a JSON-RPC code, a message and optional data and headers, never
//! an id: the id comes from the **rejection-id rule**: the body's id is echoed
//! only when classification tagged the message a
//! [`Request`](crate::MessageKind::Request); every other envelope, the parse step's
//! and auth's 401 included, carries `"id": null`.
//!
//! Each rejection emits one `tracing` event at INFO on the target
//! `wymcp::rejection`, with the stage, status and code, so an operator can see
//! why a request was refused.

use std::borrow::Cow;

use axum::body::Body;
use http::{HeaderName, HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::jsonrpc::error_envelope;
use crate::protocol::text::Bounded;
use crate::trace;

/// The HTTP response type every stage and handler answers with.
pub type Response = http::Response<Body>;

/// What a stage tells the chain after it ran.
#[derive(Debug)]
pub enum Flow {
    /// Go on to the next stage.
    Continue,
    /// Stop here and send this response; no later stage runs.
    Answer(Response),
}

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A refusal, as a stage describes it: everything but the id.
#[derive(Debug, Clone)]
pub struct Rejection {
    status: StatusCode,
    code: ErrorCode,
    message: Cow<'static, str>,
    data: Option<Value>,
    headers: Vec<(HeaderName, HeaderValue)>,
    close: bool,
}

impl Rejection {
    /// A rejection with an HTTP status, a JSON-RPC code and a message.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
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
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// A JSON-RPC error answered with `status`.
    #[must_use]
    pub fn of(status: StatusCode, error: RpcError) -> Self {
        Rejection {
            status,
            code: error.code,
            message: error.message,
            data: error.data,
            headers: Vec::new(),
            close: false,
        }
    }
}

/// The one rejection sender, detached from its exchange (see
/// [`Exchange::rejector`](crate::Exchange::rejector)): the id decided by
/// the rejection-id rule, the stage, and whether the request came over
/// HTTP/2.
#[derive(Debug, Clone)]
pub struct Rejector {
    pub(crate) id: Value,
    pub(crate) stage: &'static str,
    pub(crate) http2: bool,
    /// The request span, which records the error.
    pub(crate) span: tracing::Span,
    /// What the request's line and metrics say (see [`trace`]), when the
    /// request came through the router.
    pub(crate) slot: Option<trace::SpanSlot>,
}

impl Rejector {
    /// The error envelope of `error` and its one rejection event, for an
    /// answer that is not an HTTP response of its own (the last event of an
    /// SSE stream, whose status is already sent).
    #[must_use]
    pub(crate) fn envelope(&self, status: StatusCode, error: &RpcError) -> Vec<u8> {
        self.record(status, error.code, &error.message);
        error_envelope(&self.id, error.code, &error.message, error.data.as_ref())
    }

    fn record(&self, status: StatusCode, code: ErrorCode, message: &str) {
        trace::errored(&self.span, None, code.get());
        if let Some(slot) = &self.slot {
            slot.0.reject(self.stage, code.get());
        }
        tracing::info!(
            target: "wymcp::rejection",
            stage = self.stage,
            status = status.as_u16(),
            code = code.get(),
            // Bounded and escaped: the message may quote client text, whose
            // CR/LF must not start a log line of its own.
            message = %Bounded(message),
            "request rejected"
        );
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
        self.record(status, code, &message);
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

/// A JSON response with the given status and body bytes.
#[must_use]
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = http::Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, APPLICATION_JSON);
    response
}

/// `202 Accepted` with an empty body: a notification was accepted.
#[must_use]
pub(crate) fn accepted() -> Response {
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// `405 Method Not Allowed`: the answer to every verb the endpoint does not
/// serve, with `Allow: GET, POST` when it serves a 2025 client's GET stream
/// (`get`), `Allow: POST` otherwise (and to a 2026-07-28 client's GET,
/// which has no stream). Runs no stage.
#[must_use]
pub(crate) fn method_not_allowed(get: bool) -> Response {
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    let allow = if get { "GET, POST" } else { "POST" };
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}
