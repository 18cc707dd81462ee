//! JSON-RPC 2.0 as MCP uses it: the kinds of message a body may be, which ids
//! identify a request, and the envelopes of the answers.

use std::task::{Context, Poll};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::error::ErrorCode;

/// The JSON-RPC kind of a message, tagged by classification (see
/// [`Classify`](crate::stages::Classify)).
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

/// The longest string id a request may carry by default, in bytes (see
/// [`Limits::id_bytes`](crate::Limits::id_bytes)): an id longer is not one
/// wymcp echoes.
pub(crate) const DEFAULT_MAX_ID_BYTES: usize = 1024;

/// The JSON-RPC kind of a parsed message (see
/// [`Classify`](crate::stages::Classify)'s table), string ids bounded by
/// the default [`Limits::id_bytes`](crate::Limits::id_bytes).
#[must_use]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub, dead_code))]
pub fn classify(message: &Value) -> MessageKind {
    classify_within(message, DEFAULT_MAX_ID_BYTES)
}

/// The JSON-RPC kind of a parsed message, a string id longer than
/// `max_id_bytes` identifying nothing (it is never echoed).
#[must_use]
pub(crate) fn classify_within(message: &Value, max_id_bytes: usize) -> MessageKind {
    let Some(object) = message.as_object() else {
        return MessageKind::Unknown;
    };
    if !object.get("method").is_some_and(Value::is_string) {
        return MessageKind::Unknown;
    }
    match object.get("id") {
        None => MessageKind::Notification,
        Some(id) if is_request_id_within(id, max_id_bytes) => MessageKind::Request,
        Some(_) => MessageKind::UnidentifiedRequest,
    }
}

/// The id an answer to `message` of `kind` carries, the **rejection-id
/// rule**: the message's own id when it is a [`Request`](MessageKind::Request),
/// `null` otherwise (an id that is not a string or an integer, or a message
/// that is no request, is never echoed).
#[must_use]
pub(crate) fn answer_id(kind: MessageKind, message: &Value) -> Value {
    match kind {
        MessageKind::Request => message.get("id").cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Whether `id` is a request id: a string of at most the default
/// [`Limits::id_bytes`](crate::Limits::id_bytes), or an integer serde_json
/// holds exactly (`i64` or `u64`).
#[must_use]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub, dead_code))]
pub fn is_request_id(id: &Value) -> bool {
    is_request_id_within(id, DEFAULT_MAX_ID_BYTES)
}

/// Whether `id` is a request id with a string no longer than `max_id_bytes`.
#[must_use]
pub(crate) fn is_request_id_within(id: &Value, max_id_bytes: usize) -> bool {
    match id {
        Value::String(s) => s.len() <= max_id_bytes,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// A source of JSON-RPC messages, one at a time: what a stream of messages
/// to one client is (a request's notifications and its answer, a listen
/// stream), whatever transport carries it.
pub(crate) trait MessageSource: Send + Unpin + 'static {
    /// The next message's bytes; `Ready(None)` once there are no more.
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;

    /// Whether the message just given was the last (so a transport can end
    /// the stream with it rather than on the next poll).
    fn finished(&self) -> bool {
        false
    }
}

impl<S: MessageSource + ?Sized> MessageSource for Box<S> {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        (**self).poll_message(cx)
    }

    fn finished(&self) -> bool {
        (**self).finished()
    }
}

/// The error envelope as serde writes it: what [`error_envelope`]'s bytes
/// are held to.
#[cfg(test)]
#[derive(Serialize)]
struct ErrorObject<'a> {
    code: ErrorCode,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[cfg(test)]
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

#[derive(Serialize)]
struct NotificationEnvelope<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

/// The bytes of a JSON-RPC error response.
#[must_use]
pub(crate) fn error_envelope(
    id: &Value,
    code: ErrorCode,
    message: &str,
    data: Option<&Value>,
) -> Vec<u8> {
    // Every rejection's answer: the envelope's fixed parts written as the
    // bytes serde would give them, into one buffer sized for the whole
    // answer (serde_json's own start, 128 bytes, is outgrown by most).
    let mut bytes = Vec::with_capacity(ERROR_CAPACITY + message.len());
    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let written = serde_json::to_writer(&mut bytes, id).and_then(|()| {
        bytes.extend_from_slice(br#","error":{"code":"#);
        serde_json::to_writer(&mut bytes, &code)?;
        bytes.extend_from_slice(br#","message":"#);
        serde_json::to_writer(&mut bytes, message)?;
        if let Some(data) = data {
            bytes.extend_from_slice(br#","data":"#);
            serde_json::to_writer(&mut bytes, data)?;
        }
        bytes.extend_from_slice(b"}}");
        Ok(())
    });
    // Serialising plain data to a Vec cannot fail.
    match written {
        Ok(()) => bytes,
        Err(_) => Vec::new(),
    }
}

/// An error answer's bytes besides its message: the envelope (about 60),
/// an id, and a small `data`.
const ERROR_CAPACITY: usize = 160;

/// The first allocation of a result's bytes: a 2026 result with its
/// `_meta` outgrows serde_json's own start (128 bytes) at once.
const RESULT_CAPACITY: usize = 512;

/// The bytes of a JSON-RPC result response.
#[must_use]
pub(crate) fn result_envelope<R: Serialize>(id: &Value, result: &R) -> Vec<u8> {
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

/// The bytes of a JSON-RPC notification.
#[must_use]
pub(crate) fn notification<P: Serialize>(method: &str, params: &P) -> Vec<u8> {
    let envelope = NotificationEnvelope {
        jsonrpc: "2.0",
        method,
        params,
    };
    serde_json::to_vec(&envelope).unwrap_or_default()
}

/// The bytes of a JSON-RPC request the server sends (a 2025 call's
/// mid-call `elicitation/create`, `sampling/createMessage`, `roots/list`).
#[must_use]
pub(crate) fn request(id: &str, method: &str, params: &Value) -> Vec<u8> {
    let envelope =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    serde_json::to_vec(&envelope).unwrap_or_default()
}

/// Whether `message` is shaped as a JSON-RPC response (an answer, not a
/// request): an object with an `id`, a `result` or an `error`, and no
/// `method`. Classification tags it `unknown`; what is done with it is the
/// transport's.
#[must_use]
pub(crate) fn is_response(message: &Value) -> bool {
    message.as_object().is_some_and(|object| {
        !object.contains_key("method")
            && object.contains_key("id")
            && (object.contains_key("result") || object.contains_key("error"))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_envelope_is_the_bytes_serde_writes() {
        let ids = [
            json!(1),
            json!(-7),
            json!("a\"b\u{1}"),
            json!(u64::MAX),
            Value::Null,
        ];
        let messages = [
            "",
            "header mismatch: the `Mcp-Name` header does not match the body",
            "quote \" back\\slash \n line é \u{7f}",
        ];
        let data = [
            None,
            Some(json!({"pointer": "/params/arguments", "keyword": "type"})),
            Some(json!({"header": "Mcp-Name", "list": [1, "x", null, {"k": 2.5}]})),
            Some(json!("text")),
        ];
        for id in &ids {
            for message in messages {
                for data in &data {
                    let code = ErrorCode::HEADER_MISMATCH;
                    let expected = serde_json::to_vec(&ErrorEnvelope {
                        jsonrpc: "2.0",
                        id,
                        error: ErrorObject {
                            code,
                            message,
                            data: data.as_ref(),
                        },
                    })
                    .unwrap();
                    let bytes = error_envelope(id, code, message, data.as_ref());
                    assert_eq!(
                        String::from_utf8(bytes).unwrap(),
                        String::from_utf8(expected).unwrap()
                    );
                }
            }
        }
    }

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
        // Issue 16, item 3: a string id over the bound identifies nothing.
        let long = json!({"id": "x".repeat(DEFAULT_MAX_ID_BYTES + 1), "method": "m"});
        assert_eq!(classify(&long), UnidentifiedRequest);
        let at = json!({"id": "x".repeat(DEFAULT_MAX_ID_BYTES), "method": "m"});
        assert_eq!(classify(&at), Request);
        assert_eq!(classify_within(&at, 16), UnidentifiedRequest);
    }
}
