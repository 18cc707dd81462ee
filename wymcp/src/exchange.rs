//! The request as it flows through the chain.

use axum::body::Body;
use bytes::Bytes;
use http::request::Parts;
use serde_json::Value;

use crate::auth::Principal;
use crate::protocol::jsonrpc::{MessageKind, answer_id};
use crate::protocol::revision::{Era, Revision};
use crate::reply::{Flow, Rejection, Rejector, Response};
use crate::server::{Reservation, Server};
use crate::trace::SpanSlot;

/// One POST as it passes through the chain: the request, and what each stage
/// established about it. Each field is set by the stage that owns it and read
/// by the ones after.
#[derive(Debug)]
pub struct Exchange<'a> {
    server: &'a Server,
    /// Request line and headers.
    pub parts: Parts,
    /// The body, until the parse step takes it.
    pub body: Option<Body>,
    /// The body's bytes, once the parse step has read them.
    pub bytes: Bytes,
    /// The parsed JSON message, set by the parse step.
    pub message: Option<Value>,
    /// The message kind, set by classification.
    pub kind: Option<MessageKind>,
    /// The era, set by classification.
    pub era: Era,
    /// The protocol revision the request speaks, once a stage established it.
    pub revision: Option<Revision>,
    /// The authenticated caller, set by auth.
    pub principal: Option<Principal>,
    /// The body bytes this request holds of the server's budget, given back
    /// when the exchange ends.
    pub(crate) reserved: Option<Reservation>,
    stage: &'static str,
    /// The request span (see [`trace`](crate::trace)), once classification
    /// opened it; disabled until then.
    pub(crate) span: tracing::Span,
    /// Where the router reads the request span back, when the request came
    /// through the router.
    slot: Option<SpanSlot>,
}

impl<'a> Exchange<'a> {
    /// Starts an exchange for one request.
    pub fn new(server: &'a Server, request: http::Request<Body>) -> Self {
        let (mut parts, body) = request.into_parts();
        let slot = parts.extensions.remove::<SpanSlot>();
        Exchange {
            span: tracing::Span::none(),
            slot,
            server,
            parts,
            body: Some(body),
            bytes: Bytes::new(),
            message: None,
            kind: None,
            era: Era::Modern,
            revision: None,
            principal: None,
            reserved: None,
            stage: "",
        }
    }

    /// The server this exchange is served by.
    #[must_use]
    pub fn server(&self) -> &'a Server {
        self.server
    }

    /// The name of the stage running now, as declared in the chain.
    #[must_use]
    pub fn stage(&self) -> &'static str {
        self.stage
    }

    /// Whether the request arrived over HTTP/2 or later (no `Connection` header).
    #[must_use]
    pub fn is_http2(&self) -> bool {
        self.parts.version >= http::Version::HTTP_2
    }

    /// The message's `method`, when it is a string.
    #[must_use]
    pub fn method(&self) -> Option<&str> {
        self.message.as_ref()?.get("method")?.as_str()
    }

    /// The message's `params`, when present.
    #[must_use]
    pub fn params(&self) -> Option<&Value> {
        self.message.as_ref()?.get("params")
    }

    /// Makes `span` the request span: the stages after this one run in it,
    /// and the router reads it back.
    pub(crate) fn set_span(&mut self, span: tracing::Span) {
        if let Some(slot) = &self.slot {
            let _ = slot.0.set(span.clone());
        }
        self.span = span;
    }

    pub(crate) fn set_stage(&mut self, name: &'static str) {
        self.stage = name;
    }

    /// The id a rejection of this exchange carries: the body's id when the
    /// message is a [`Request`](MessageKind::Request), `null` otherwise.
    #[must_use]
    pub fn rejection_id(&self) -> Value {
        match (self.kind, self.message.as_ref()) {
            (Some(kind), Some(message)) => answer_id(kind, message),
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
            span: self.span.clone(),
        }
    }
}
