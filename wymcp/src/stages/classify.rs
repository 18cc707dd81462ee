//! `Classify` (body-bound): tags every parsed message with its JSON-RPC kind
//! and its protocol era, and answers nothing.
//!
//! **Why here.** It sits right after the parse step and before every other
//! wire check, so their rejections know the kind, and through the
//! rejection-id rule, whether they may echo the body's id (auth's 401
//! included). It reads the body, hence body-bound.
//!
//! **The kind** ([`classify`]), in clause order:
//!
//! | body | kind |
//! |---|---|
//! | a string `method` and an `id` that is a string or an integer serde_json holds as `i64`/`u64` | [`Request`](MessageKind::Request) |
//! | a string `method` and any other `id` (null, float, boolean, object, array, an integer beyond `u64`) | [`UnidentifiedRequest`](MessageKind::UnidentifiedRequest) |
//! | a string `method` and no `id` | [`Notification`](MessageKind::Notification) |
//! | anything else: a response (`id` beside `result` or `error`), an array, a scalar, no or a non-string `method` | [`Unknown`](MessageKind::Unknown) |
//!
//! The request test is looser than schema validity in everything but the id:
//! `"jsonrpc": "1.0"` with a string id is still a request and keeps its id
//! through Validate's rejection. An integer beyond `u64` could only be held
//! as a float and could not be echoed exactly, so it identifies nothing.
//!
//! **The era** ([`era_of`]): legacy (2025) iff the `MCP-Protocol-Version`
//! header names a 2025 revision, or there is no such header and the body has
//! no `params._meta["io.modelcontextprotocol/protocolVersion"]`; modern
//! otherwise. "Names a 2025 revision" means a date-shaped revision string
//! (`YYYY-MM-DD`, OWS stripped) before 2026: `2025-11-25`, `2025-06-18` and
//! the `2025-03-26` wymcp does not serve alike, so a 2025 client meets the
//! 2025 answer (a plain 400 for an unserved revision) rather than 2026's
//! `_meta` rules. When the header is repeated the first is read; the
//! singleton-header check refuses the request anyway.

use http::HeaderMap;
use serde_json::Value;

use crate::exchange::{Exchange, MessageKind};
use crate::headers::{MCP_PROTOCOL_VERSION, trim_ows};
use crate::revision::Era;
use crate::stage::{Flow, Stage};

use super::protocol_fields::PROTOCOL_VERSION_KEY;

/// Tags the message kind and era; answers nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify;

impl Stage for Classify {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        let (kind, era) = match ex.message.as_ref() {
            Some(message) => (classify(message), era_of(&ex.parts.headers, message)),
            None => (
                MessageKind::Unknown,
                era_of(&ex.parts.headers, &Value::Null),
            ),
        };
        ex.kind = Some(kind);
        ex.era = era;
        Flow::Continue
    }
}

/// The JSON-RPC kind of a parsed message (see the module docs' table).
#[must_use]
pub fn classify(message: &Value) -> MessageKind {
    let Some(object) = message.as_object() else {
        return MessageKind::Unknown;
    };
    if !object.get("method").is_some_and(Value::is_string) {
        return MessageKind::Unknown;
    }
    match object.get("id") {
        None => MessageKind::Notification,
        Some(id) if is_request_id(id) => MessageKind::Request,
        Some(_) => MessageKind::UnidentifiedRequest,
    }
}

/// Whether `id` is a request id: a string, or an integer serde_json holds
/// exactly (`i64` or `u64`).
#[must_use]
pub fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// The era of a request, from its `MCP-Protocol-Version` header and body.
#[must_use]
pub fn era_of(headers: &HeaderMap, message: &Value) -> Era {
    match headers.get(MCP_PROTOCOL_VERSION) {
        Some(value) if names_2025_revision(trim_ows(value.as_bytes())) => Era::Legacy,
        Some(_) => Era::Modern,
        None => {
            let has_version = message
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
                .is_some();
            if has_version {
                Era::Modern
            } else {
                Era::Legacy
            }
        }
    }
}

/// A `YYYY-MM-DD` revision string of a year before 2026.
fn names_2025_revision(value: &[u8]) -> bool {
    let date_shaped = value.len() == 10
        && value.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        });
    date_shaped && &value[..4] < b"2026".as_slice()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    #[test]
    fn the_table_in_clause_order() {
        use MessageKind::*;
        let rows = [
            (json!({"jsonrpc":"2.0","id":"a","method":"m"}), Request),
            (json!({"jsonrpc":"2.0","id":0,"method":"m"}), Request),
            (json!({"jsonrpc":"2.0","id":-7,"method":"m"}), Request),
            (json!({"jsonrpc":"2.0","id":u64::MAX,"method":"m"}), Request),
            (json!({"jsonrpc":"1.0","id":"a","method":"m"}), Request),
            (json!({"id":1.5,"method":"m"}), UnidentifiedRequest),
            (json!({"id":1.0,"method":"m"}), UnidentifiedRequest),
            (json!({"id":null,"method":"m"}), UnidentifiedRequest),
            (json!({"id":true,"method":"m"}), UnidentifiedRequest),
            (json!({"id":{},"method":"m"}), UnidentifiedRequest),
            (json!({"id":[1],"method":"m"}), UnidentifiedRequest),
            (json!({"method":"m"}), Notification),
            (json!({"id":1}), Unknown),
            (json!({"id":1,"method":7}), Unknown),
            (json!({"id":1,"result":{}}), Unknown),
            (json!({"id":1,"error":{"code":1,"message":"x"}}), Unknown),
            (json!([{"id":1,"method":"m"}]), Unknown),
            (json!("m"), Unknown),
            (json!(null), Unknown),
        ];
        for (body, kind) in rows {
            assert_eq!(classify(&body), kind, "{body}");
        }
        let beyond_u64: Value =
            serde_json::from_str(r#"{"id":18446744073709551616,"method":"m"}"#).unwrap();
        assert_eq!(classify(&beyond_u64), UnidentifiedRequest);
    }

    #[test]
    fn the_era_follows_the_header_then_the_body() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_str(v).unwrap());
            h
        };
        let modern_body = json!({"params":{"_meta":{PROTOCOL_VERSION_KEY:"2026-07-28"}}});
        let bare = json!({"method":"initialize","id":1});
        assert_eq!(era_of(&with("2025-11-25"), &modern_body), Era::Legacy);
        assert_eq!(era_of(&with(" 2025-06-18 "), &bare), Era::Legacy);
        assert_eq!(era_of(&with("2025-03-26"), &bare), Era::Legacy);
        assert_eq!(era_of(&with("2026-07-28"), &bare), Era::Modern);
        assert_eq!(era_of(&with("v999.0.0"), &bare), Era::Modern);
        assert_eq!(era_of(&with("2025-11-2x"), &bare), Era::Modern);
        assert_eq!(era_of(&HeaderMap::new(), &bare), Era::Legacy);
        assert_eq!(era_of(&HeaderMap::new(), &modern_body), Era::Modern);
        let null_version = json!({"params":{"_meta":{PROTOCOL_VERSION_KEY:null}}});
        assert_eq!(era_of(&HeaderMap::new(), &null_version), Era::Modern);
    }
}
