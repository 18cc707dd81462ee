//! Holding one message to its revision's JSON Schema, without the
//! transport that carried it: what the chain's
//! [`Validate`](crate::stages::Validate) answers over HTTP and the stdio
//! transport answers on a line, each error a JSON-RPC [`RpcError`] (a
//! transport adds what it adds: HTTP its status).
//!
//! [`check`], in order:
//!
//! 1. The kind classification tagged: an unidentified request (a method
//!    with an id that is not a string or an integer) and an unknown message
//!    (a JSON-RPC response, a batch, a scalar, an object with no string
//!    method) are `-32600` naming what is wrong, `data.pointer` where.
//! 2. The envelope's `jsonrpc` must be exactly `"2.0"` (`-32600`,
//!    `/jsonrpc`).
//! 3. A method the revision's schema does not define for clients (unknown,
//!    removed on 2026-07-28, or server-to-client) passes: the surface owns
//!    the method table and answers it `-32601`, so "no such method" is said
//!    in one place.
//! 4. A request whose method the schema defines as a notification (or the
//!    reverse) is `-32600` naming `/id`.
//! 5. The message is held to its method's definition alone (`tools/call` on
//!    2026-07-28 against `#/$defs/CallToolRequest`): a failure outside
//!    `params` is `-32600`, inside it (or `params` missing) `-32602`; either
//!    way `data` is `{"pointer", "keyword"}` and the message never echoes
//!    the client's value.
//!
//! [`revision_for`] says which revision's schema that is.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::error::{ErrorCode, RpcError};
use super::jsonrpc::MessageKind;
use super::meta::PROTOCOL_VERSION;
use super::revision::{Era, Revision};
use super::schema::{DefinitionKind, SchemaFailure, Schemas};
use super::text::truncated;

/// The revision whose schema a message of `era` is held to, in order:
/// `established` (a version a transport already judged: the protocol
/// fields of a 2026 request, the revision a 2025 stdio connection
/// negotiated); `header` when it names a revision of the era; for a modern
/// message, the revision its `params._meta` protocol version names; the
/// newest `served` revision of the era; and, when the server serves none
/// of that era, the newest revision of the era wymcp knows.
#[must_use]
pub(crate) fn revision_for(
    era: Era,
    established: Option<Revision>,
    header: Option<Revision>,
    message: &Value,
    served: &[Revision],
) -> Revision {
    if let Some(revision) = established {
        return revision;
    }
    let of_era = |revision: &Revision| revision.era() == era;
    let body = || {
        message
            .get("params")?
            .get("_meta")?
            .get(PROTOCOL_VERSION)?
            .as_str()
            .and_then(Revision::parse)
            .filter(of_era)
    };
    let served = || served.iter().rev().copied().find(of_era);
    let known = || Revision::ALL.into_iter().rev().find(of_era);
    header
        .filter(of_era)
        .or_else(|| if era == Era::Modern { body() } else { None })
        .or_else(served)
        .or_else(known)
        .unwrap_or(Revision::LATEST)
}

fn invalid_request(message: impl Into<Cow<'static, str>>, pointer: &str) -> RpcError {
    RpcError::new(ErrorCode::INVALID_REQUEST, message).data(json!({ "pointer": pointer }))
}

/// Holds a 2025 client's JSON-RPC response (its answer to a request the
/// server sent in the middle of a call) to the envelope JSON-RPC 2.0 gives
/// it: `jsonrpc` exactly `"2.0"`, a string id (every id the server sends
/// is one), and exactly one of a `result` object or an `error` object
/// with an integer `code` and a string `message`. What the result says is
/// the handler's to read, as an MRTR input response is.
pub(crate) fn check_response(message: &Value) -> Result<(), RpcError> {
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid_request(
            "invalid request: `jsonrpc` must be \"2.0\"",
            "/jsonrpc",
        ));
    }
    if !message.get("id").is_some_and(Value::is_string) {
        return Err(invalid_request(
            "invalid response: the id must be the string id of the server's request",
            "/id",
        ));
    }
    match (message.get("result"), message.get("error")) {
        (Some(Value::Object(_)), None) => Ok(()),
        (None, Some(Value::Object(error)))
            if error.get("code").is_some_and(Value::is_i64)
                && error.get("message").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        (Some(_), Some(_)) => Err(invalid_request(
            "invalid response: a response carries a `result` or an `error`, not both",
            "",
        )),
        (Some(_), None) => Err(invalid_request(
            "invalid response: `result` must be an object",
            "/result",
        )),
        _ => Err(invalid_request(
            "invalid response: `error` must be an object with an integer `code` and a string `message`",
            "/error",
        )),
    }
}

/// Holds `message`, of the `kind` classification tagged, to `revision`'s
/// schema (see the [module docs](self)).
pub(crate) fn check(
    schemas: &Schemas,
    revision: Revision,
    kind: MessageKind,
    message: &Value,
) -> Result<(), RpcError> {
    match kind {
        MessageKind::Unknown => {
            let (text, pointer) = unknown_reason(message);
            return Err(invalid_request(text, pointer));
        }
        MessageKind::UnidentifiedRequest => {
            let text = unidentified_reason(message.get("id"));
            return Err(invalid_request(text, "/id"));
        }
        MessageKind::Request | MessageKind::Notification => {}
    }
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid_request(
            "invalid request: `jsonrpc` must be \"2.0\"",
            "/jsonrpc",
        ));
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // Classification tags no request or notification without a string
        // method; answer as for an unknown message should a caller do so.
        return Err(invalid_request(
            "invalid request: the message has no string `method`",
            "/method",
        ));
    };
    let quick = match schemas.quick(revision, method) {
        Ok(Some(quick)) => quick,
        // Not a client method of this revision: the surface answers -32601.
        Ok(None) => return Ok(()),
        Err(_) => return Err(uncompiled()),
    };
    match (kind, quick.kind) {
        (MessageKind::Request, DefinitionKind::Notification) => {
            return Err(invalid_request(
                format!(
                    "invalid request: `{}` is a notification and must not carry an id",
                    truncated(method)
                ),
                "/id",
            ));
        }
        (MessageKind::Notification, DefinitionKind::Request) => {
            return Err(invalid_request(
                format!(
                    "invalid request: `{}` is a request and needs an id",
                    truncated(method)
                ),
                "/id",
            ));
        }
        _ => {}
    }
    // wymcp's own check vouches for most valid messages, and words a
    // refusal whose only failure is a plain one (a wrong type, a string
    // `const`, a missing member) as jsonschema would; only the rest (other
    // refusals, and the few valid messages outside its subset) is compiled
    // for and judged by jsonschema, which words the error.
    if quick.holds(message) {
        return Ok(());
    }
    if let Some(failure) = quick.explain(message) {
        return Err(schema_error(failure));
    }
    let Ok(definition) = quick.definition() else {
        // The definition is compiled on its first use; should it not
        // compile (a bug in wymcp, logged once when it failed), the message
        // is not let through unvalidated.
        return Err(uncompiled());
    };
    definition.validate(message).map_err(schema_error)
}

fn uncompiled() -> RpcError {
    RpcError::new(
        ErrorCode::INTERNAL_ERROR,
        "internal error: the schema this message is held to could not be compiled",
    )
}

/// The error of a schema failure: `{what}: {pointer}: {message}`, with
/// `data` `{"pointer", "keyword"}`. Built in one buffer, the failure's
/// strings moved into `data` rather than copied: this is the validation
/// rejection's own cost, which must stay below a served request's.
fn schema_error(failure: SchemaFailure) -> RpcError {
    let (code, what) = if failure.in_params() {
        (ErrorCode::INVALID_PARAMS, "invalid params")
    } else {
        (ErrorCode::INVALID_REQUEST, "invalid request")
    };
    let SchemaFailure {
        pointer,
        keyword,
        message: reason,
    } = failure;
    let mut message = String::with_capacity(what.len() + pointer.len() + reason.len() + 4);
    for part in [what, ": ", &pointer, ": ", &reason] {
        message.push_str(part);
    }
    let mut data = Map::new();
    data.insert("pointer".to_owned(), Value::String(pointer));
    data.insert("keyword".to_owned(), Value::String(keyword));
    RpcError::new(code, message).data(Value::Object(data))
}

/// What is wrong with a message classification tagged `unknown`, and where.
fn unknown_reason(message: &Value) -> (&'static str, &'static str) {
    match message {
        Value::Array(_) => (
            "invalid request: a JSON-RPC batch cannot be sent to a server; send one message at a time",
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
            "invalid request: the message must be a JSON-RPC request or notification object",
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Issue 26 §1: a valid message is vouched for by the subset, and
    /// jsonschema's validator of its method is neither compiled nor run;
    /// nor is it for a refusal the subset words (§2); the first other
    /// invalid one compiles it and is refused as before.
    #[test]
    fn a_valid_message_never_compiles_jsonschema() {
        let schemas = Schemas::fresh();
        let revision = Revision::V2026_07_28;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let good = call(json!({"_meta": meta, "name": "t", "arguments": {"a": 1}}));
        assert_eq!(
            check(&schemas, revision, MessageKind::Request, &good),
            Ok(())
        );
        assert_eq!(schemas.compiled_yet(revision, "tools/call"), (true, false));
        // A single plain failure is worded by the subset: still no
        // jsonschema validator.
        let bad = call(json!({"_meta": meta, "name": 5}));
        let error = check(&schemas, revision, MessageKind::Request, &bad).expect_err("a number");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
        assert_eq!(
            error.message,
            "invalid params: /params/name: the value is not of type \"string\""
        );
        assert_eq!(
            error.data,
            Some(json!({"pointer": "/params/name", "keyword": "type"}))
        );
        assert_eq!(schemas.compiled_yet(revision, "tools/call"), (true, false));
        // Two failures: jsonschema chooses and words, compiled now.
        let worse = call(json!({"_meta": meta, "name": 5, "arguments": 5}));
        let error = check(&schemas, revision, MessageKind::Request, &worse).expect_err("numbers");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
        assert_eq!(schemas.compiled_yet(revision, "tools/call"), (true, true));
        // The kind is the index's: a notification's method sent with an id
        // is refused before either validator is asked.
        let cancel = json!({"jsonrpc": "2.0", "id": 1,
            "method": "notifications/cancelled", "params": {"requestId": 1}});
        let error = check(&schemas, revision, MessageKind::Request, &cancel)
            .expect_err("a notification with an id");
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            schemas.compiled_yet(revision, "notifications/cancelled"),
            (true, false)
        );
    }

    const LEGACY: [Revision; 2] = [Revision::V2025_06_18, Revision::V2025_11_25];

    #[test]
    fn the_revision_follows_the_established_then_header_then_body_then_served() {
        use Revision::{V2025_06_18, V2025_11_25, V2026_07_28};
        let bare = json!({"params": {}});
        let modern_body = json!({"params": {"_meta": {PROTOCOL_VERSION: "2026-07-28"}}});
        let served = [V2025_06_18, V2025_11_25, V2026_07_28];
        let pick = |era, established, header, message: &Value, served: &[Revision]| {
            revision_for(era, established, header, message, served)
        };
        assert_eq!(
            pick(Era::Legacy, Some(V2025_06_18), None, &bare, &served),
            V2025_06_18
        );
        assert_eq!(
            pick(Era::Legacy, None, Some(V2025_06_18), &bare, &served),
            V2025_06_18
        );
        // A header of the other era is no guide.
        assert_eq!(
            pick(Era::Legacy, None, Some(V2026_07_28), &bare, &served),
            V2025_11_25
        );
        assert_eq!(
            pick(Era::Modern, None, None, &modern_body, &LEGACY),
            V2026_07_28
        );
        assert_eq!(pick(Era::Legacy, None, None, &bare, &served), V2025_11_25);
        assert_eq!(
            pick(Era::Legacy, None, None, &bare, &[V2025_06_18]),
            V2025_06_18
        );
        // No legacy revision served: the newest wymcp knows of the era.
        assert_eq!(
            pick(Era::Legacy, None, None, &bare, &[V2026_07_28]),
            V2025_11_25
        );
    }

    #[test]
    fn every_refusal_is_a_json_rpc_error_naming_its_pointer() {
        let schemas = Schemas::shared();
        let refused = |kind, message: Value| {
            check(&schemas, Revision::V2025_11_25, kind, &message).unwrap_err()
        };
        let batch = refused(MessageKind::Unknown, json!([]));
        assert_eq!(batch.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(batch.data, Some(json!({"pointer": ""})));
        let null_id = refused(
            MessageKind::UnidentifiedRequest,
            json!({"id": null, "method": "ping"}),
        );
        assert_eq!(null_id.data, Some(json!({"pointer": "/id"})));
        let old = refused(
            MessageKind::Request,
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
        );
        assert_eq!(old.data, Some(json!({"pointer": "/jsonrpc"})));
        let params = refused(
            MessageKind::Request,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}),
        );
        assert_eq!(params.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(
            params.data,
            Some(json!({"pointer": "/params/name", "keyword": "required"}))
        );
        let unknown = json!({"jsonrpc": "2.0", "id": 1, "method": "foo/bar", "params": 5});
        assert_eq!(
            check(
                &schemas,
                Revision::V2025_11_25,
                MessageKind::Request,
                &unknown
            ),
            Ok(())
        );
    }
}
