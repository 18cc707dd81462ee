//! The parse step: reads the body and parses it as one JSON value.
//!
//! **Why it sits here.** It is body-bound: it is what reads the body. It runs
//! right after the origin check, so a refused origin costs no read, and
//! before classification and the remaining wire checks, so their rejections
//! can carry the body's id and know the message kind.
//!
//! **What it answers.** A request wrong in several ways meets the first arm in
//! this order. Every envelope's id is null: nothing has classified the
//! message yet.
//!
//! 1. more than one `Content-Type` header → 400/-32600;
//! 2. no `Content-Type`, or a media type other than `application/json`
//!    (parameters such as `charset=utf-8` allowed; case-insensitive) →
//!    415/-32600, one message for both: either way nothing declares the body
//!    JSON;
//! 3. a query string over the query ceiling (default 1,000,000 bytes,
//!    inclusive) → 414/-32600; a query string that is not UTF-8 once
//!    percent-decoded → 400/-32600 (a `%` not followed by two hex digits is
//!    taken literally);
//! 4. a body over the body ceiling (default 8,000,000 bytes, inclusive) →
//!    413/-32600 with `Connection: close`: refused on a declared length
//!    (`Content-Length`) before any byte is read; otherwise (chunked, or
//!    HTTP/2 without `content-length`) the read stops as soon as it holds
//!    more than the ceiling. A body of exactly the ceiling is accepted with
//!    either framing;
//! 5. a body over the server's budget of body bytes in flight
//!    ([`Limits::bodies_in_flight`](crate::Limits::bodies_in_flight), default
//!    256 MiB, all requests together) → 503/-32603 with `Retry-After` and
//!    `Connection: close`: refused on a declared length before any byte is
//!    read, else as soon as the bytes read would go over; a body over its
//!    client's share of that budget
//!    ([`Limits::bodies_per_caller`](crate::Limits::bodies_per_caller),
//!    default 32 MiB, counted by client address as the
//!    [`ledger`](crate::ledger) groups addresses), or whose place gave way
//!    to a client under its fair share at the cap → 429/-32600 with
//!    `Retry-After` and `Connection: close`. The bytes stay counted for as
//!    long as anything holds them: a streamed answer keeps its body's place
//!    until its handler is done;
//! 6. a body read that stalls for the read timeout (default 15,000 ms), or
//!    that has not ended by the body deadline (default 60 s, however
//!    steadily it trickles in) → 408 with no body at all. This is **not** a rejection: a stall is the
//!    transport's failure, not the client's message, so it records no
//!    rejection event and logs once at debug level. The timeout bounds each
//!    wait for the next piece of the body; the deadline bounds the whole
//!    read, so a body sent a byte every few seconds cannot hold its
//!    connection forever. A body read that
//!    *fails* (the client reset the stream, or broke the chunked framing) is
//!    the transport's failure too, and is answered the same way with 400;
//! 7. malformed JSON (invalid UTF-8, trailing garbage, nesting past
//!    serde_json's recursion limit of 128, an empty body) → 400/-32700 with
//!    `Connection: close`;
//! 8. JSON holding more values than
//!    [`Limits::json_values`](crate::Limits::json_values) (default 250,000;
//!    every scalar, array and object counts one) → 413/-32600 naming the
//!    ceiling, refused while parsing: what a body costs once parsed is
//!    bounded before anything has authenticated it;
//! 9. JSON whose parsed tree, with the body's bytes, costs more than a
//!    caller's whole share of body bytes (`Limits::bodies_per_caller`; a
//!    tree of small objects costs about a hundred times its text) →
//!    413/-32600 with `data.limit: "bodies_per_caller"` and the ceiling;
//!    within the share, the tree's cost is added to the body's place in
//!    the ledger, and a caller or server over its share or cap then meets
//!    arm 5's 429 or 503.
//!
//! Refusals of the ceilings name the ceiling, in the message and in
//! `data.ceiling`. The 413, the 408 and the 400/-32700 close an HTTP/1.x
//! connection: they answer after the body read began, on a connection whose
//! remaining bytes are no longer a trustworthy place to start the next
//! request. Every other arm answers before any body byte is read and leaves a
//! keep-alive connection open. HTTP/2 gets no `Connection` header: each
//! request is its own stream.
//!
//! **What the HTTP layer answers first.** Over HTTP/1.1, hyper refuses a
//! request-target longer than 65,534 bytes (the most `http::Uri` holds) with
//! its own 414, and a request head larger than
//! [`ServeConfig::max_header_bytes`](crate::ServeConfig::max_header_bytes)
//! (131,072 bytes by default) with a 431, both with an empty body and before any stage runs:
//! with the default query ceiling, a query string anywhere near it never
//! reaches this step over HTTP/1.1. The ceiling still holds for any other
//! transport and for a configured ceiling below hyper's limit, and it names
//! itself when it answers. Arms that answer before the body read leave the
//! connection to hyper, which keeps it open when the unread body is already
//! in its buffer (the usual case for a small request) and closes it
//! otherwise. A client sending `Expect: 100-continue` gets the 413 for a
//! declared length over the ceiling without a `100 Continue` first: hyper
//! only sends that when the body is first read.
//!
//! On success [`Exchange::read_body`] has established [`Exchange::bytes`]
//! (the body exactly as received) and [`Exchange::message`] (the parsed
//! value); the step is that method's HTTP adapter, as a user's stage can be.

use axum::body::Body;
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::exchange::{BodyError, Exchange};
use crate::protocol::error::ErrorCode;
use crate::reply::Flow;
use crate::reply::{Rejection, Response};

/// The one message of the 415, for an absent and for a wrong `Content-Type`.
const NOT_JSON: &str = "nothing declares the body JSON: the Content-Type must be application/json";

/// The parse step: checks the framing headers and the query string, reads the
/// body within its ceiling and timeout, and parses it as JSON. See the module
/// documentation for its arms, in order.
pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
    let limits = *ex.server().limits();

    let mut types = ex.headers().get_all(header::CONTENT_TYPE).iter();
    let content_type = types.next();
    if types.next().is_some() {
        return ex.reject(Rejection::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "more than one Content-Type header",
        ));
    }
    if !content_type.is_some_and(declares_json) {
        return ex.reject(Rejection::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::INVALID_REQUEST,
            NOT_JSON,
        ));
    }

    if let Some(query) = ex.parts().uri.query() {
        if query.len() > limits.query_bytes {
            return ex.reject(
                Rejection::new(
                    StatusCode::URI_TOO_LONG,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "the query string exceeds the ceiling of {} bytes",
                        limits.query_bytes
                    ),
                )
                .data(json!({ "ceiling": limits.query_bytes })),
            );
        }
        if !percent_decodes_to_utf8(query.as_bytes()) {
            return ex.reject(Rejection::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "the query string is not valid UTF-8 once percent-decoded",
            ));
        }
    }

    match ex.read_body().await {
        Ok(()) => Flow::Continue,
        Err(BodyError::OverBudget) => ex.reject(bodies_busy(limits.bodies_in_flight)),
        Err(BodyError::OverShare) => ex.reject(bodies_share(limits.bodies_per_caller)),
        Err(BodyError::OverCeiling) => ex.reject(
            Rejection::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "the body exceeds the ceiling of {} bytes",
                    limits.body_bytes
                ),
            )
            .data(json!({ "ceiling": limits.body_bytes }))
            .close(),
        ),
        Err(BodyError::Stalled) => {
            tracing::debug!(
                target: "wymcp::parse_body",
                timeout_ms = u64::try_from(limits.read_timeout.as_millis()).unwrap_or(u64::MAX),
                "the body read stalled; answering 408"
            );
            Flow::Answer(transport_failure(ex, StatusCode::REQUEST_TIMEOUT))
        }
        Err(BodyError::Transport(error)) => {
            tracing::debug!(
                target: "wymcp::parse_body",
                %error,
                "the body read failed; answering 400"
            );
            Flow::Answer(transport_failure(ex, StatusCode::BAD_REQUEST))
        }
        Err(BodyError::Syntax(error)) => ex.reject(
            Rejection::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::PARSE_ERROR,
                format!("the body is not valid JSON: {error}"),
            )
            .close(),
        ),
        Err(BodyError::TooManyValues(max)) => ex.reject(
            Rejection::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::INVALID_REQUEST,
                format!("the body holds more than {max} JSON values"),
            )
            .data(json!({ "ceiling": max, "limit": "json_values" })),
        ),
        Err(BodyError::TooCostly(share)) => ex.reject(
            Rejection::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "the body and its parsed JSON would take more than a caller's share of \
                     {share} bytes"
                ),
            )
            .data(json!({ "ceiling": share, "limit": "bodies_per_caller" })),
        ),
        // Another stage read the body first and failed: answered there; a
        // chain that runs the parse step after that is misassembled.
        Err(BodyError::Taken) => ex.reject(Rejection::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "the chain runs the parse step after the body was read and refused",
        )),
    }
}

/// The refusal of a body over the server's budget of body bytes in flight:
/// 503 with `Retry-After`, the connection closed (its body is unread).
fn bodies_busy(budget: usize) -> Rejection {
    Rejection::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::INTERNAL_ERROR,
        format!(
            "the server holds as many request bodies as it reads at once ({budget} bytes); try again later"
        ),
    )
    .data(json!({ "limit": "bodies_in_flight", "ceiling": budget }))
    .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    .close()
}

/// The refusal of a body over its client's share of the bytes in flight:
/// 429 with `Retry-After`, the connection closed (its body is unread).
fn bodies_share(share: usize) -> Rejection {
    Rejection::new(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::INVALID_REQUEST,
        format!(
            "this client holds as many request body bytes as one client may ({share} bytes); try again later"
        ),
    )
    .data(json!({ "limit": "bodies_per_caller", "ceiling": share }))
    .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    .close()
}

/// Whether a `Content-Type` value's media type is `application/json`,
/// whatever its parameters and letter case.
fn declares_json(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    let media_type = bytes
        .iter()
        .position(|&b| b == b';')
        .map_or(bytes, |end| &bytes[..end]);
    media_type
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}

/// Whether a query string is UTF-8 once its `%XX` escapes are decoded; a
/// `%` not followed by two hex digits is taken literally, as
/// `percent_encoding` decodes it.
fn percent_decodes_to_utf8(query: &[u8]) -> bool {
    // Without a `%` nothing is copied: `http::Uri` holds a query as text,
    // so undecoded it is UTF-8 already.
    percent_encoding::percent_decode(query)
        .decode_utf8()
        .is_ok()
}

/// The answer to a body read the transport failed: the status alone, no
/// JSON-RPC body, and no rejection event. Closes an HTTP/1.x connection,
/// whose unread rest of the body cannot be told from a next request.
fn transport_failure(ex: &Exchange<'_>, status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    if !ex.is_http2() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_application_json_declares_json() {
        for ok in [
            "application/json",
            "Application/JSON; charset=UTF-8",
            " application/json ;charset=utf-8",
            "application/json;",
        ] {
            assert!(declares_json(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "",
            "application/json-seq",
            "application/jsonx; a=b",
            "application/json, text/plain",
            "application/*",
        ] {
            assert!(!declares_json(&HeaderValue::from_static(bad)), "{bad}");
        }
    }

    #[test]
    fn query_strings_are_checked_after_percent_decoding() {
        assert!(percent_decodes_to_utf8(b"a=b&c=d"));
        assert!(percent_decodes_to_utf8(b"q=%C3%A9"));
        assert!(percent_decodes_to_utf8(b"q=%c3%a9"));
        assert!(percent_decodes_to_utf8(b"q=100%"));
        assert!(percent_decodes_to_utf8(b"q=%zz"));
        assert!(percent_decodes_to_utf8("q=é".as_bytes()));
        assert!(!percent_decodes_to_utf8(b"q=%FF"));
        assert!(!percent_decodes_to_utf8(b"q=%C3"));
        assert!(!percent_decodes_to_utf8(b"q=%C3%28"));
    }

    /// Rule (step 3): a `%` not followed by two hex digits is taken
    /// literally: it stays in the decoded bytes (so it can break the
    /// sequence around it) and takes nothing after it (so an escape right
    /// after it is still decoded).
    #[test]
    fn a_malformed_escape_is_one_literal_percent() {
        // `%` then `%C3%A9`: "%é".
        assert!(percent_decodes_to_utf8(b"q=%%C3%A9"));
        // `%C` then `%C3%A9`: "%Cé".
        assert!(percent_decodes_to_utf8(b"q=%C%C3%A9"));
        // The literal `%` sits between the two bytes of "é".
        assert!(!percent_decodes_to_utf8(b"q=%C3%%A9"));
    }
}
