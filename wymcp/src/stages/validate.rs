//! `Validate`: the point past which the body is trusted.
//!
//! **What it checks.** First the message kind classification tagged: an
//! `unidentified_request` (a method with an id that is not a string or an
//! integer) and an `unknown` body (a JSON-RPC response, a batch, a scalar, an
//! object with no string method) are refused here, 400/-32600, with a message
//! that says what is wrong; by the rejection-id rule their id is never echoed.
//! Then, for requests and notifications, the envelope's `jsonrpc` must be
//! exactly `"2.0"`, and the message is held to the JSON Schema definition of
//! its method in its revision (see [`crate::schema`]): `tools/call` on
//! 2026-07-28 against `#/$defs/CallToolRequest`, never the whole
//! `ClientRequest` union. The schema is the file as the revision's
//! normative `schema.ts` states it: where the generated `schema.json` is
//! stricter (an elicitation accepted with `95.5`, a `null` in a
//! capability), the deviations listed in `protocol::schema::DEVIATIONS` and
//! docs/schema.md are patched in when the schemas are compiled. A failure outside `params` is 400/-32600 (invalid
//! request); inside `params`, or `params` itself missing, 400/-32602 (invalid
//! params). Either way `data` is `{"pointer": <JSON pointer of the failing
//! value>, "keyword": <the failing schema keyword>}` and the message never
//! echoes the client's value. A request whose method the schema defines as a
//! notification (it carries an id it must not), or a notification whose method
//! is a request (it has no id to answer), is 400/-32600 naming `/id`.
//!
//! **What it lets through.** A method the revision's schema does not define
//! for clients — unknown (`foo/bar`), removed on 2026-07-28 (`initialize`,
//! `ping`, `logging/setLevel`, `resources/subscribe`, …), or server-to-client
//! (`sampling/createMessage`) — is not refused here: Dispatch owns the method
//! table and answers it 404/-32601, so "no such method" is said in one place,
//! with one code, whatever the schema knows.
//!
//! **Which revision.** The one ProtocolFields established (`ex.revision`);
//! else the `MCP-Protocol-Version` header's, when it names a revision of the
//! request's era; else, for a modern request, the body's
//! `_meta["io.modelcontextprotocol/protocolVersion"]`; else the newest served
//! revision of the era (for legacy requests that is 2025-11-25 on a default
//! server, whose schema then judges a header-less `initialize`). See
//! [`Validate::revision`].
//!
//! **Why here.** Last before Dispatch: every wire check and body-bound stage
//! has answered first, so a request wrong on the wire is refused for that,
//! and what reaches Dispatch is a well-formed message of a known shape. The
//! fast path — [`Definition::is_valid`](crate::schema::Definition::is_valid)
//! over the parsed message, no clone — measured 0.2–0.6 µs, lookup
//! included, for a small `tools/call` on a release build (a shared, loaded
//! two-core machine) (`cargo test -p wymcp --release --lib
//! schema::tests::timing -- --ignored --nocapture`); the detailed error is
//! computed only once that said no.

use http::StatusCode;
use serde_json::{Value, json};

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::MessageKind;
use crate::protocol::revision::{Era, Revision};
use crate::protocol::schema::DefinitionKind;
use crate::protocol::text::{Bounded, truncated};
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::{Stage, StageKind};

use crate::protocol::meta::PROTOCOL_VERSION as PROTOCOL_VERSION_KEY;

/// Validates the message against its revision's JSON Schema.
#[derive(Debug, Clone, Copy, Default)]
pub struct Validate;

impl Stage for Validate {
    const KIND: StageKind = StageKind::VALIDATE;

    async fn run(ex: &mut Exchange<'_>) -> Flow {
        validate(ex)
    }
}

impl Validate {
    /// The revision whose schema a message is validated against; Dispatch
    /// may read it for the same answer.
    ///
    /// In order: `ex.revision` when a stage (ProtocolFields) established it;
    /// the `MCP-Protocol-Version` header's revision when it names one of the
    /// request's era; for a modern request, the revision its
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` names; the
    /// newest served revision of the era; and, when the server serves none of
    /// that era, the newest revision of the era wymcp knows.
    #[must_use]
    pub fn revision(ex: &Exchange<'_>) -> Revision {
        if let Some(revision) = ex.revision {
            return revision;
        }
        let era = ex.era;
        let of_era = |revision: &Revision| revision.era() == era;
        let header = ex
            .parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| Revision::parse(value.trim()))
            .filter(of_era);
        let body = || {
            ex.params()?
                .get("_meta")?
                .get(PROTOCOL_VERSION_KEY)?
                .as_str()
                .and_then(Revision::parse)
                .filter(of_era)
        };
        let served = || ex.server().revisions().iter().rev().copied().find(of_era);
        let known = || Revision::ALL.into_iter().rev().find(of_era);
        header
            .or_else(|| if era == Era::Modern { body() } else { None })
            .or_else(served)
            .or_else(known)
            .unwrap_or(Revision::LATEST)
    }
}

fn invalid_request(message: impl Into<std::borrow::Cow<'static, str>>, pointer: &str) -> Rejection {
    Rejection::new(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, message)
        .data(json!({ "pointer": pointer }))
}

fn validate(ex: &Exchange<'_>) -> Flow {
    let (Some(message), Some(kind)) = (ex.message.as_ref(), ex.kind) else {
        // A chain that validates before the parse step or classification ran
        // is misassembled; no client input can cause it.
        return ex.reject(Rejection::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "the chain runs Validate before the parse step and classification",
        ));
    };
    match kind {
        MessageKind::Unknown => {
            let (text, pointer) = unknown_reason(message);
            return ex.reject(invalid_request(text, pointer));
        }
        MessageKind::UnidentifiedRequest => {
            let text = unidentified_reason(message.get("id"));
            return ex.reject(invalid_request(text, "/id"));
        }
        MessageKind::Request | MessageKind::Notification => {}
    }
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return ex.reject(invalid_request(
            "invalid request: `jsonrpc` must be \"2.0\"",
            "/jsonrpc",
        ));
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // Classification tags no request or notification without a string
        // method; answer as for an unknown body should a custom chain do so.
        return ex.reject(invalid_request(
            "invalid request: the message has no string `method`",
            "/method",
        ));
    };
    let revision = Validate::revision(ex);
    let Some(definition) = ex.server().schemas().definition(revision, method) else {
        // Not a client method of this revision: Dispatch answers 404/-32601.
        return Flow::Continue;
    };
    match (kind, definition.kind()) {
        (MessageKind::Request, DefinitionKind::Notification) => {
            return ex.reject(invalid_request(
                format!(
                    "invalid request: `{}` is a notification and must not carry an id",
                    truncated(method)
                ),
                "/id",
            ));
        }
        (MessageKind::Notification, DefinitionKind::Request) => {
            return ex.reject(invalid_request(
                format!(
                    "invalid request: `{}` is a request and needs an id",
                    truncated(method)
                ),
                "/id",
            ));
        }
        _ => {}
    }
    if definition.is_valid(message) {
        return Flow::Continue;
    }
    let Err(failure) = definition.validate(message) else {
        // The detailed pass disagrees with the fast one; trust the schema's
        // verdict of validity rather than refuse a message nothing faults.
        tracing::warn!(method = %Bounded(method), %revision, "schema fast path and detailed pass disagree");
        return Flow::Continue;
    };
    let (code, what) = if failure.in_params() {
        (ErrorCode::INVALID_PARAMS, "invalid params")
    } else {
        (ErrorCode::INVALID_REQUEST, "invalid request")
    };
    ex.reject(
        Rejection::new(
            StatusCode::BAD_REQUEST,
            code,
            format!("{what}: {}: {}", failure.pointer, failure.message),
        )
        .data(json!({ "pointer": failure.pointer, "keyword": failure.keyword })),
    )
}

/// What is wrong with a body classification tagged `unknown`, and where.
fn unknown_reason(message: &Value) -> (&'static str, &'static str) {
    match message {
        Value::Array(_) => (
            "invalid request: a JSON-RPC batch cannot be sent to a server; send one message per POST",
            "",
        ),
        Value::Object(object) => match object.get("method") {
            Some(Value::String(_)) => (
                "invalid request: the message is not a JSON-RPC request or notification",
                "",
            ),
            Some(_) => ("invalid request: the method must be a string", "/method"),
            None if object.contains_key("result") || object.contains_key("error") => (
                "invalid request: a JSON-RPC response cannot be sent to a server",
                "",
            ),
            None => (
                "invalid request: the message has no method; a request or notification needs one",
                "/method",
            ),
        },
        _ => (
            "invalid request: the body must be a JSON-RPC request or notification object",
            "",
        ),
    }
}

/// What is wrong with the id of an `unidentified_request`.
fn unidentified_reason(id: Option<&Value>) -> &'static str {
    match id {
        Some(Value::Null) => {
            "invalid request: the id must be a string or an integer, not null (a notification carries no id at all)"
        }
        Some(Value::Number(_)) => {
            "invalid request: the id must be a string or an integer that fits in 64 bits, not a fraction or a larger number"
        }
        Some(Value::Bool(_)) => {
            "invalid request: the id must be a string or an integer, not a boolean"
        }
        Some(Value::Object(_)) => {
            "invalid request: the id must be a string or an integer, not an object"
        }
        Some(Value::Array(_)) => {
            "invalid request: the id must be a string or an integer, not an array"
        }
        Some(Value::String(_)) => {
            "invalid request: the id is a string longer than this server echoes (Limits::id_bytes)"
        }
        None => "invalid request: the id must be a string or an integer",
    }
}
