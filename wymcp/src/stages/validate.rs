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
//! **A 2025 client's response.** A body classification tagged `unknown`
//! that is shaped as a JSON-RPC response, from a 2025 client, is the answer
//! to a request a call sent mid-call: it is held to the response envelope
//! (`jsonrpc: "2.0"`, the string id the server sent, a `result` object or
//! an `error` object; 400/-32600 naming the pointer otherwise) and let
//! through to Dispatch, which hands it to the waiting call. A 2026-07-28
//! response is refused as every other `unknown` body.
//!
//! **What it lets through.** A method the revision's schema does not define
//! for clients — unknown (`foo/bar`), removed on 2026-07-28 (`initialize`,
//! `ping`, `logging/setLevel`, `resources/subscribe`, …), or server-to-client
//! (`sampling/createMessage`) — is not refused here: Dispatch owns the method
//! table and answers it 404/-32601, so "no such method" is said in one place,
//! with one code, whatever the schema knows.
//!
//! **Which revision.** The one ProtocolFields established (`ex.revision()`);
//! else the `MCP-Protocol-Version` header's, when it names a revision of the
//! request's era; else, for a modern request, the body's
//! `_meta["io.modelcontextprotocol/protocolVersion"]`; else the newest served
//! revision of the era (for legacy requests that is 2025-11-25 on a default
//! server, whose schema then judges a header-less `initialize`). See
//! [`Validate::revision`].
//!
//! The rules and their errors are `protocol::validation`'s, which the
//! stdio transport holds its lines to as well; this stage is their HTTP
//! adapter: every refusal is `400`, and the revision is read from the
//! exchange. One answer is not a refusal of the message: a method's
//! validator is compiled on its first use, and should its schema not
//! compile (a bug in wymcp; the shipped files are tested to compile) the
//! message is answered `500`/-32603 with its id, never let through
//! unvalidated.
//!
//! **Why here.** Last before Dispatch: every wire check and body-bound stage
//! has answered first, so a request wrong on the wire is refused for that,
//! and what reaches Dispatch is a well-formed message of a known shape. One
//! pass over the parsed message, no clone: jsonschema's `validate`, which
//! stops at the first failure (a valid small `tools/call` costs ≈ 260
//! instructions more than its `is_valid`, and a refused one is spared a
//! second traversal: BENCHMARKS.md); when that failure lies inside `params`
//! an envelope-only validator says whether a failure outside it comes
//! first (`Definition::validate`).

use http::StatusCode;

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::headers::MCP_PROTOCOL_VERSION;
use crate::protocol::jsonrpc::{MessageKind, is_response};
use crate::protocol::revision::Era;
use crate::protocol::revision::Revision;
use crate::protocol::validation::{check_response, revision_for};
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::{Stage, StageKind};

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
    /// In order: `ex.revision()` when a stage (ProtocolFields) established it;
    /// the `MCP-Protocol-Version` header's revision when it names one of the
    /// request's era; for a modern request, the revision its
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` names; the
    /// newest served revision of the era; and, when the server serves none of
    /// that era, the newest revision of the era wymcp knows.
    #[must_use]
    pub fn revision(ex: &Exchange<'_>) -> Revision {
        if let Some(revision) = ex.revision() {
            return revision;
        }
        let header = ex
            .headers()
            .get(MCP_PROTOCOL_VERSION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| Revision::parse(value.trim()));
        let message = ex.message().unwrap_or(&serde_json::Value::Null);
        revision_for(
            ex.era(),
            ex.revision(),
            header,
            message,
            ex.server().revisions(),
        )
    }
}

fn validate(ex: &Exchange<'_>) -> Flow {
    let (Some(message), Some(kind)) = (ex.message(), ex.kind()) else {
        // A chain that validates before the parse step or classification ran
        // is misassembled; no client input can cause it.
        return ex.reject(Rejection::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "the chain runs Validate before the parse step and classification",
        ));
    };
    // A 2025 client's answer to a request the server sent mid-call: held to
    // the JSON-RPC response envelope, then Dispatch hands it to the call.
    if kind == MessageKind::Unknown && ex.era() == Era::Legacy && is_response(message) {
        return match check_response(message) {
            Ok(()) => Flow::Continue,
            Err(error) => ex.reject(Rejection::of(StatusCode::BAD_REQUEST, error)),
        };
    }
    match ex
        .server()
        .check_message(Validate::revision(ex), kind, message)
    {
        Ok(()) => Flow::Continue,
        // The schema the message is held to did not compile: the server's
        // fault, not the message's.
        Err(error) if error.code == ErrorCode::INTERNAL_ERROR => {
            ex.reject(Rejection::of(StatusCode::INTERNAL_SERVER_ERROR, error))
        }
        Err(error) => ex.reject(Rejection::of(StatusCode::BAD_REQUEST, error)),
    }
}
