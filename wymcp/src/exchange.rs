//! The request as it flows through the chain.

use std::net::IpAddr;

use axum::body::Body;
use bytes::Bytes;
use http::request::Parts;
use serde_json::Value;

use crate::auth::{AuthError, Principal};
use crate::body::{self, ReadFailure};
use crate::ledger::{Caller, Kind, Place, Refusal};
use crate::origin::ClientAddr;
use crate::protocol::error::RpcError;
use crate::protocol::fields::{judge, read_fields};
use crate::protocol::headers::{MCP_PROTOCOL_VERSION, plain_text};
use crate::protocol::json::{JsonError, parse_measured};
use crate::protocol::jsonrpc::{MessageKind, answer_id, classify_within};
use crate::protocol::revision::{Era, Revision, era_of};
use crate::reply::{Flow, Rejection, Rejector, Response};
use crate::server::Server;
use crate::trace::{self, SpanSlot};

/// One request as it passes through the chain (a POST, or the GET that
/// opens a 2025 client's stream): the request, and what each stage
/// established about it.
///
/// **What a stage reads, and who writes it.** Every fact an [`Exchange`]
/// holds is read through a method. None is a field a stage assigns: each is
/// established by the rule that owns it, run through a public method of the
/// exchange that computes the fact from the request and the server, once
/// (a second call answers what the first established):
///
/// | fact | established by | run by |
/// |---|---|---|
/// | [`bytes`](Exchange::bytes), [`message`](Exchange::message) | [`read_body`](Exchange::read_body): the body read within [`Limits`](crate::Limits), parsed as bounded JSON | the parse step |
/// | [`kind`](Exchange::kind), [`era`](Exchange::era), the request span | [`classify`](Exchange::classify): the JSON-RPC kind and the era, by the protocol's rules; for a GET, which has no body, [`classify_bodiless`](Exchange::classify_bodiless): the era from the header alone, no kind | `Classify`; a chain's `handle_get` |
/// | [`principal`](Exchange::principal) | [`authenticate`](Exchange::authenticate): the server's [`Authenticator`](crate::auth::Authenticator) | `Auth` |
/// | [`revision`](Exchange::revision) | [`judge_protocol_fields`](Exchange::judge_protocol_fields) (2026-07-28), [`establish_revision`](Exchange::establish_revision): the revision the request's own version names, when served | `ProtocolFields`, `HeaderBinding` |
///
/// A stage of a user's chain calls the same methods a built-in stage calls,
/// and reads the same [`Server`] getters: nothing a built-in stage uses is
/// out of its reach, and no stage, built-in or not, can make a fact other
/// than what its rule computes. What a user's stages tell each other lives
/// in [`extensions_mut`](Exchange::extensions_mut), which no built-in stage
/// reads.
#[derive(Debug)]
pub struct Exchange<'a> {
    server: &'a Server,
    parts: Parts,
    /// The body, until [`read_body`](Self::read_body) takes it.
    body: Option<Body>,
    bytes: Bytes,
    message: Option<Value>,
    kind: Option<MessageKind>,
    era: Era,
    revision: Option<Revision>,
    principal: Option<Principal>,
    /// Whether [`authenticate`](Self::authenticate) ran (with or without an
    /// authenticator), so it runs once.
    authenticated: bool,
    /// What a user's stages leave each other.
    extensions: http::Extensions,
    /// The body bytes this request holds in the ledger, given back when the
    /// exchange ends, or moved into a streamed answer that still holds them
    /// ([`take_body_place`](Self::take_body_place)).
    body_place: Option<Place>,
    stage: &'static str,
    /// The request span (see [`trace`](crate::trace)), once classification
    /// opened it; disabled until then.
    span: tracing::Span,
    /// Where the router reads the request span back, when the request came
    /// through the router.
    slot: Option<SpanSlot>,
}

/// Why [`Exchange::read_body`] gave no message. Each is answered by the
/// parse step with its own status (see [`stages::parse_body`](crate::stages::parse_body)).
#[derive(Debug)]
#[non_exhaustive]
pub enum BodyError {
    /// The body was taken already, by an earlier call that failed.
    Taken,
    /// Reading it would go over the server's budget of body bytes in flight
    /// ([`Limits::bodies_in_flight`](crate::Limits::bodies_in_flight)).
    OverBudget,
    /// Reading it would go over its client's share of that budget
    /// ([`Limits::bodies_per_caller`](crate::Limits::bodies_per_caller)), or
    /// its place gave way to a client under its fair share.
    OverShare,
    /// It is longer than [`Limits::body_bytes`](crate::Limits::body_bytes),
    /// declared or read.
    OverCeiling,
    /// No piece of it arrived within the read timeout, or not all of it
    /// within the body deadline.
    Stalled,
    /// The transport failed the read.
    Transport(axum::Error),
    /// It is not JSON (syntax, UTF-8, trailing bytes, nesting past 128).
    Syntax(serde_json::Error),
    /// It holds more JSON values than
    /// [`Limits::json_values`](crate::Limits::json_values), the number given.
    TooManyValues(usize),
    /// Its bytes and the tree parsed from them cost more than a caller's
    /// whole share of body bytes
    /// ([`Limits::bodies_per_caller`](crate::Limits::bodies_per_caller), the
    /// number given): no caller could ever hold it.
    TooCostly(usize),
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
            authenticated: false,
            extensions: http::Extensions::new(),
            body_place: None,
            stage: "",
        }
    }

    /// The server this exchange is served by: what it was built with, read
    /// only.
    #[must_use]
    pub fn server(&self) -> &'a Server {
        self.server
    }

    /// The name of the stage running now, as declared in the chain.
    #[must_use]
    pub fn stage(&self) -> &'static str {
        self.stage
    }

    /// The request line and headers (and the request's extensions).
    #[must_use]
    pub fn parts(&self) -> &Parts {
        &self.parts
    }

    /// The request's headers.
    #[must_use]
    pub fn headers(&self) -> &http::HeaderMap {
        &self.parts.headers
    }

    /// The address of the client, as the accept loop recorded it (the
    /// proxy's `X-Forwarded-For` only from a trusted proxy); `None` for a
    /// request that did not come through [`serve`](crate::serve()).
    #[must_use]
    pub fn client_addr(&self) -> Option<IpAddr> {
        self.parts.extensions.get::<ClientAddr>().map(|c| c.0)
    }

    /// Whether the request arrived over HTTP/2 or later (no `Connection` header).
    #[must_use]
    pub fn is_http2(&self) -> bool {
        self.parts.version >= http::Version::HTTP_2
    }

    /// The body's bytes exactly as received, once the body was read (empty
    /// before).
    #[must_use]
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The parsed JSON message, once the body was read.
    #[must_use]
    pub fn message(&self) -> Option<&Value> {
        self.message.as_ref()
    }

    /// The message kind, once the exchange was classified.
    #[must_use]
    pub fn kind(&self) -> Option<MessageKind> {
        self.kind
    }

    /// The era, once the exchange was classified ([`Era::Modern`] before).
    #[must_use]
    pub fn era(&self) -> Era {
        self.era
    }

    /// The protocol revision the request speaks, once established.
    #[must_use]
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// The authenticated caller, once [`authenticate`](Self::authenticate)
    /// ran on a server with an authenticator.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
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

    /// What a user's stages leave each other (a tenant, an audit record):
    /// typed values, read by the stages that know their types. No built-in
    /// stage reads or writes them.
    #[must_use]
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }

    /// The user's values, to add to (see [`extensions`](Self::extensions)).
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }

    /// Reads the body within the server's [`Limits`](crate::Limits) (its
    /// ceiling, read timeout, body deadline and the budget of bytes in
    /// flight, held for as long as the exchange lives) and parses it as
    /// JSON within [`Limits::json_values`](crate::Limits::json_values);
    /// establishes [`bytes`](Self::bytes) and [`message`](Self::message).
    ///
    /// Once: after a success it answers `Ok` again without reading; after a
    /// failure the body is gone ([`BodyError::Taken`]).
    pub async fn read_body(&mut self) -> Result<(), BodyError> {
        if self.message.is_some() {
            return Ok(());
        }
        let Some(body) = self.body.take() else {
            return Err(BodyError::Taken);
        };
        let limits = *self.server.limits();
        // The body bytes in flight are places of the ledger, counted by the
        // client's address (the body is read before its credentials): the
        // declared length before a byte is read, the rest as it arrives.
        let declared = body::reserved_len(&body, limits.body_bytes);
        let caller = self.server.caller_of(None, self.client_addr());
        let place = match self
            .server
            .ledger()
            .take_evictable(Kind::Bodies, &caller, declared)
        {
            Ok(place) => place,
            Err(Refusal::Share(_)) => return Err(BodyError::OverShare),
            Err(Refusal::Cap(_)) => return Err(BodyError::OverBudget),
        };
        let place = self.body_place.insert(place);
        let bytes = body::read(body, &limits, place)
            .await
            .map_err(|failure| match failure {
                ReadFailure::OverBudget => BodyError::OverBudget,
                ReadFailure::OverShare => BodyError::OverShare,
                ReadFailure::OverCeiling => BodyError::OverCeiling,
                ReadFailure::Stalled => BodyError::Stalled,
                ReadFailure::Transport(error) => BodyError::Transport(error),
            })?;
        match parse_measured(&bytes, limits.json_values) {
            Ok((message, cost)) => {
                // The parsed tree is held beside the bytes, and may cost a
                // hundred times them (`protocol::json`): its place grows by
                // it, within the caller's share and the cap, as the bytes'
                // did.
                if let Some(place) = self.body_place.as_mut() {
                    if place.amount().saturating_add(cost) > limits.bodies_per_caller {
                        return Err(BodyError::TooCostly(limits.bodies_per_caller));
                    }
                    place.grow(cost).map_err(|refusal| match refusal {
                        Refusal::Share(_) => BodyError::OverShare,
                        Refusal::Cap(_) => BodyError::OverBudget,
                    })?;
                }
                self.bytes = bytes;
                self.message = Some(message);
                Ok(())
            }
            Err(JsonError::Syntax(error)) => Err(BodyError::Syntax(error)),
            Err(JsonError::TooManyValues(max)) => Err(BodyError::TooManyValues(max)),
        }
    }

    /// Who the ledger counts this exchange against (see
    /// [`Server::caller_of`]): the principal once
    /// [`authenticate`](Self::authenticate) established one, else the
    /// client's address. The body's place already holds the address's key
    /// (the body is read before credentials): reused, not written again.
    pub(crate) fn caller(&self) -> Caller {
        match (&self.principal, &self.body_place) {
            (None, Some(place)) => place.caller().clone(),
            (principal, _) => self
                .server
                .caller_of(principal.as_ref(), self.client_addr()),
        }
    }

    /// The body's place in the ledger, for an answer that holds the body's
    /// bytes (or what was parsed from them) after the exchange ends: a
    /// streamed answer keeps it until its handler is done.
    pub(crate) fn take_body_place(&mut self) -> Option<Place> {
        self.body_place.take()
    }

    /// Classifies the message: its JSON-RPC [`kind`](Self::kind) (string ids
    /// within [`Limits::id_bytes`](crate::Limits::id_bytes)) and its
    /// [`era`](Self::era) (the `MCP-Protocol-Version` header, else the
    /// body's `_meta`), and opens the request span. A body not read yet, or
    /// not JSON, is [`MessageKind::Unknown`]. Once.
    pub fn classify(&mut self) -> MessageKind {
        if let Some(kind) = self.kind {
            return kind;
        }
        let message = self.message.as_ref().unwrap_or(&Value::Null);
        let kind = match &self.message {
            Some(message) => classify_within(message, self.server.limits().id_bytes),
            None => MessageKind::Unknown,
        };
        self.era = era_of(&self.parts.headers, message);
        self.kind = Some(kind);
        let span = trace::open(
            trace::Opening {
                version: self.parts.version,
                client: self.client_addr(),
                method: self.method(),
                message: self.message.as_ref(),
                request: kind == MessageKind::Request,
            },
            self.slot.as_ref().map(|slot| &*slot.0),
        );
        self.set_span(span);
        kind
    }

    /// Classifies a request that has no message (the GET that opens a 2025
    /// stream): its [`era`](Self::era) from the `MCP-Protocol-Version`
    /// header alone (none, or a 2025 revision: legacy), no
    /// [`kind`](Self::kind), and opens the request span. The body is never
    /// read. Does nothing after [`classify`](Self::classify).
    pub fn classify_bodiless(&mut self) -> Era {
        if self.kind.is_some() {
            return self.era;
        }
        self.body = None;
        self.era = era_of(&self.parts.headers, &Value::Null);
        let span = trace::open(
            trace::Opening {
                version: self.parts.version,
                client: self.client_addr(),
                method: None,
                message: None,
                request: false,
            },
            self.slot.as_ref().map(|slot| &*slot.0),
        );
        self.set_span(span);
        self.era
    }

    /// Authenticates the caller with the server's
    /// [`Authenticator`](crate::auth::Authenticator) and holds it to the
    /// configuration's required scopes; establishes
    /// [`principal`](Self::principal). `Ok(None)` on a server built without
    /// one. A request with more than one `Authorization` header is
    /// [`AuthError::Unauthorized`] without consulting it.
    ///
    /// Once: a later call answers what the first established (a refusal
    /// runs the authenticator again, establishing nothing).
    pub async fn authenticate(&mut self) -> Result<Option<&Principal>, AuthError> {
        if !self.authenticated {
            if let Some(setup) = self.server.auth.as_ref() {
                let caller = self.caller();
                let principal = setup
                    .authenticate(
                        &self.parts,
                        self.message.as_ref(),
                        self.kind,
                        self.server.ledger(),
                        &caller,
                    )
                    .await?;
                if let Some(slot) = &self.slot {
                    slot.0.authenticated(&principal.subject);
                }
                self.principal = Some(principal);
            }
            self.authenticated = true;
        }
        Ok(self.principal.as_ref())
    }

    /// Establishes [`revision`](Self::revision) when the request's own
    /// version names a revision this server serves, and answers it:
    ///
    /// * 2026-07-28 era: the body's
    ///   `_meta["io.modelcontextprotocol/protocolVersion"]`, where the
    ///   `MCP-Protocol-Version` header agrees with it (or a notification
    ///   carries none);
    /// * 2025 era: the `MCP-Protocol-Version` header, when it names a served
    ///   2025 revision (an `initialize`'s may name a 2026 one: see
    ///   `protocol::revision::is_handshake`).
    ///
    /// `None` (nothing established) otherwise; a later stage (Validate)
    /// then decides which revision holds the message. Once.
    pub fn establish_revision(&mut self) -> Option<Revision> {
        if self.revision.is_none() {
            self.revision = self.derived_revision();
        }
        self.revision
    }

    fn derived_revision(&self) -> Option<Revision> {
        match self.era {
            Era::Legacy => plain_text(self.parts.headers.get(MCP_PROTOCOL_VERSION)?)
                .ok()
                .and_then(Revision::parse)
                .filter(|r| r.era() == Era::Legacy && self.server.revisions().contains(r)),
            Era::Modern => self.modern_fields().ok().flatten(),
        }
    }

    /// Holds a 2026-07-28 request's protocol fields to their rules
    /// (`_meta`'s shape, the protocol version a string naming a served
    /// revision, judged where the `MCP-Protocol-Version` header agrees with
    /// it or a notification carries none) and establishes
    /// [`revision`](Self::revision) from them: the rule `ProtocolFields`
    /// runs, in one read of the message. `Ok(None)` when there is nothing
    /// to judge: another era, not a request or notification, no version, or
    /// a header that disagrees (header binding's to refuse).
    pub fn judge_protocol_fields(&mut self) -> Result<Option<Revision>, RpcError> {
        let judged = self.modern_fields()?;
        if self.revision.is_none() {
            self.revision = judged;
        }
        Ok(judged)
    }

    fn modern_fields(&self) -> Result<Option<Revision>, RpcError> {
        if self.era != Era::Modern {
            return Ok(None);
        }
        let Some(kind @ (MessageKind::Request | MessageKind::Notification)) = self.kind else {
            return Ok(None);
        };
        let Some(message) = self.message.as_ref() else {
            return Ok(None);
        };
        let Some(version) = read_fields(message, kind == MessageKind::Request)? else {
            return Ok(None);
        };
        let agrees = match self.parts.headers.get(MCP_PROTOCOL_VERSION) {
            Some(value) => plain_text(value) == Ok(version),
            None => kind == MessageKind::Notification,
        };
        if !agrees {
            return Ok(None);
        }
        judge(version, self.server.revisions()).map(Some)
    }

    /// The message, moved out: for the stage that consumes it, last in the
    /// chain (Dispatch). Every later read sees no message.
    pub fn take_message(&mut self) -> Option<Value> {
        self.message.take()
    }

    /// The message's `params`, moved out of it: for the stage that consumes
    /// them, last in the chain (Dispatch). The rest of the message stays.
    pub fn take_params(&mut self) -> Option<Value> {
        self.message.as_mut()?.as_object_mut()?.remove("params")
    }

    /// Sets the facts as the stages before one under test would leave them,
    /// whatever the request says: for tests of one stage in isolation
    /// (`wymcp::fuzzing::set_facts`), never for a chain.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn set_facts(
        &mut self,
        bytes: Bytes,
        message: Option<Value>,
        kind: Option<MessageKind>,
        era: Era,
        revision: Option<Revision>,
    ) {
        self.body = None;
        self.bytes = bytes;
        self.message = message;
        self.kind = kind;
        self.era = era;
        self.revision = revision;
    }

    /// The request span (wymcp's `trace` fields), once classification
    /// opened it; disabled before.
    #[must_use]
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// What the request's line and metrics gather (see [`trace`]), when
    /// the request came through the router.
    pub(crate) fn slot(&self) -> Option<&trace::Slot> {
        self.slot.as_ref().map(|slot| &*slot.0)
    }

    /// [`slot`](Self::slot), shared, for what outlives the exchange.
    pub(crate) fn span_slot(&self) -> Option<SpanSlot> {
        self.slot.clone()
    }

    /// Makes `span` the request span: the stages after this one run in it,
    /// and the router reads it back.
    fn set_span(&mut self, span: tracing::Span) {
        if let Some(slot) = &self.slot {
            let _ = slot.0.span.set(span.clone());
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
            slot: self.slot.clone(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn request(client: Option<IpAddr>) -> http::Request<Body> {
        let mut request = http::Request::post("/mcp")
            .body(Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
            .unwrap();
        if let Some(client) = client {
            request.extensions_mut().insert(ClientAddr(client));
        }
        request
    }

    /// The caller of an exchange without a principal is its body place's:
    /// the key the place holds, not a second one written for it, and the
    /// key `Server::caller_of` gives.
    #[tokio::test]
    async fn the_caller_is_the_body_places_key() {
        let server = Server::builder().build().unwrap();
        for client in [Some(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))), None] {
            let mut ex = Exchange::new(&server, request(client));
            assert_eq!(ex.caller(), server.caller_of(None, client));
            ex.read_body().await.unwrap();
            let caller = ex.caller();
            assert_eq!(caller, server.caller_of(None, client));
            let place = ex.take_body_place().unwrap();
            assert!(
                std::ptr::eq(caller.as_str(), place.caller().as_str()),
                "the key is the place's own"
            );
        }
    }
}
