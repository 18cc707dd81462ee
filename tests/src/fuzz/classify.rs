//! Classification and the era, against slower reference implementations.
//!
//! The references are written differently from the stage on purpose: the
//! kind is decided from the id's *printed* form (serde_json prints an
//! integer it holds as `i64`/`u64` with digits only, and every float with a
//! `.` or an exponent), and the era from splitting the header on `-`.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use wymcp::Era;
use wymcp::MessageKind;
use wymcp::fuzzing::MCP_PROTOCOL_VERSION;
use wymcp::fuzzing::{classify, era_of, is_request_id};

use super::ensure;

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The reference of [`wymcp::fuzzing::is_request_id`]: a string, or a number
/// whose printed form is an optional `-` and digits within `i64`/`u64`.
#[must_use]
pub fn reference_is_request_id(id: &Value) -> bool {
    match id {
        // Bounded: a longer string is not an id wymcp echoes (Limits::id_bytes).
        Value::String(s) => s.len() <= wymcp::Limits::default().id_bytes,
        Value::Number(number) => {
            let printed = number.to_string();
            let digits = printed.strip_prefix('-').unwrap_or(&printed);
            !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && printed
                    .parse::<i128>()
                    .is_ok_and(|n| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&n))
        }
        _ => false,
    }
}

/// The reference of [`wymcp::fuzzing::classify`] (DESIGN.md §5, clause by
/// clause).
#[must_use]
pub fn reference_kind(message: &Value) -> MessageKind {
    let Value::Object(members) = message else {
        return MessageKind::Unknown;
    };
    let method_is_string = matches!(members.get("method"), Some(Value::String(_)));
    let id = members.get("id");
    if method_is_string && id.is_some_and(reference_is_request_id) {
        MessageKind::Request
    } else if method_is_string && id.is_some() {
        MessageKind::UnidentifiedRequest
    } else if method_is_string {
        MessageKind::Notification
    } else {
        MessageKind::Unknown
    }
}

/// The reference of [`wymcp::fuzzing::era_of`].
#[must_use]
pub fn reference_era(header: Option<&[u8]>, message: &Value) -> Era {
    if let Some(value) = header {
        let text: Vec<u8> = {
            let mut v = value.to_vec();
            while v.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
                v.remove(0);
            }
            while v.last().is_some_and(|b| *b == b' ' || *b == b'\t') {
                v.pop();
            }
            v
        };
        let parts: Vec<&[u8]> = text.split(|b| *b == b'-').collect();
        let dated = parts.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&parts)
                .all(|(len, part)| part.len() == *len && part.iter().all(u8::is_ascii_digit));
        let before_2026 = dated
            && std::str::from_utf8(parts[0])
                .ok()
                .and_then(|year| year.parse::<u32>().ok())
                .is_some_and(|year| year < 2026);
        // A 2025 handshake (`initialize`, no `_meta` version) stays 2025
        // whatever date its header names.
        let handshake = dated
            && message.get("method") == Some(&Value::from("initialize"))
            && !has_meta_version(message);
        return if before_2026 || handshake {
            Era::Legacy
        } else {
            Era::Modern
        };
    }
    if has_meta_version(message) {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// Whether `params._meta` holds the protocol-version key, whatever its value.
fn has_meta_version(message: &Value) -> bool {
    message
        .pointer("/params/_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY))
}

/// Checks classification on the input as JSON, and on the input's value
/// placed as the `id` and the `method` of a message; the era on the first
/// line as an `MCP-Protocol-Version` header and the rest as the body.
pub fn check_classify(data: &[u8]) -> Result<(), String> {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        agree(&value)?;
        agree(&json!({"jsonrpc": "2.0", "method": "tools/list", "id": value.clone()}))?;
        agree(&json!({"jsonrpc": "2.0", "method": value.clone(), "id": 1}))?;
        ensure!(
            is_request_id(&value) == reference_is_request_id(&value),
            "is_request_id({value}) disagrees with the reference"
        );
        era_agrees(None, &value)?;
    }
    if let Some(newline) = data.iter().position(|b| *b == b'\n') {
        let (header, rest) = (&data[..newline], &data[newline + 1..]);
        let message = serde_json::from_slice::<Value>(rest).unwrap_or(Value::Null);
        era_agrees(Some(header), &message)?;
    }
    Ok(())
}

fn agree(message: &Value) -> Result<(), String> {
    let kind = classify(message);
    let reference = reference_kind(message);
    ensure!(
        kind == reference,
        "classify({message}) = {kind:?}, the reference says {reference:?}"
    );
    Ok(())
}

fn era_agrees(header: Option<&[u8]>, message: &Value) -> Result<(), String> {
    let mut headers = HeaderMap::new();
    if let Some(value) = header {
        let Ok(value) = HeaderValue::from_bytes(value) else {
            return Ok(());
        };
        headers.insert(MCP_PROTOCOL_VERSION, value);
    }
    let era = era_of(&headers, message);
    let reference = reference_era(header, message);
    ensure!(
        era == reference,
        "era_of({header:?}, {message}) = {era:?}, the reference says {reference:?}"
    );
    Ok(())
}
