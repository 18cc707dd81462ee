//! The request as it flows through the chain.

use axum::body::Body;
use bytes::Bytes;
use http::request::Parts;
use serde_json::Value;

use crate::revision::{Era, Revision};
use crate::server::Server;

/// The JSON-RPC kind of a message, tagged by classification (see
/// [`stages::Classify`](crate::stages::Classify)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A string `method` and a string or integer `id`: the one kind whose id a
    /// rejection echoes.
    Request,
    /// A string `method` and any other `id` (null, float, bool, object, array,
    /// or an integer wymcp cannot carry back exactly).
    UnidentifiedRequest,
    /// A string `method` and no `id`.
    Notification,
    /// Anything else: a response, a batch, a scalar, no method.
    Unknown,
}

/// Who made the request, as the authenticator established it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Principal {
    /// A stable identifier of the caller (a token's `sub`, a client id, …).
    pub subject: String,
    /// The scopes the caller holds.
    pub scopes: Vec<String>,
}

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
    stage: &'static str,
}

impl<'a> Exchange<'a> {
    /// Starts an exchange for one request.
    pub fn new(server: &'a Server, request: http::Request<Body>) -> Self {
        let (parts, body) = request.into_parts();
        Exchange {
            server,
            parts,
            body: Some(body),
            bytes: Bytes::new(),
            message: None,
            kind: None,
            era: Era::Modern,
            revision: None,
            principal: None,
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

    pub(crate) fn set_stage(&mut self, name: &'static str) {
        self.stage = name;
    }
}
