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
//!    read, else as soon as the bytes read would go over;
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
//!    bounded before anything has authenticated it.
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
//! On success the step sets [`Exchange::bytes`] (the body exactly as
//! received) and [`Exchange::message`] (the parsed value).

use std::future::Future as _;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use serde_json::json;

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::json::{JsonError, parse_bounded};
use crate::reply::Flow;
use crate::reply::{Rejection, Response};
use crate::server::{Limits, Reservation};

/// The one message of the 415, for an absent and for a wrong `Content-Type`.
const NOT_JSON: &str = "nothing declares the body JSON: the Content-Type must be application/json";

/// The parse step: checks the framing headers and the query string, reads the
/// body within its ceiling and timeout, and parses it as JSON. See the module
/// documentation for its arms, in order.
pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
    let limits = *ex.server().limits();

    let mut types = ex.parts.headers.get_all(header::CONTENT_TYPE).iter();
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

    if let Some(query) = ex.parts.uri.query() {
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

    let body = ex.body.take().unwrap_or_default();
    // The body bytes in flight are budgeted: the declared length before a
    // byte is read, the rest as it arrives.
    let declared = reserved_len(&body, limits.body_bytes);
    let Some(reservation) = ex.server().bodies.reserve(declared) else {
        return ex.reject(bodies_busy(limits.bodies_in_flight));
    };
    let reserved = ex.reserved.insert(reservation);
    let bytes = match read(body, &limits, reserved).await {
        Ok(bytes) => bytes,
        Err(ReadFailure::OverBudget) => return ex.reject(bodies_busy(limits.bodies_in_flight)),
        Err(ReadFailure::OverCeiling) => {
            return ex.reject(
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
            );
        }
        Err(ReadFailure::Stalled) => {
            tracing::debug!(
                target: "wymcp::parse_body",
                timeout_ms = u64::try_from(limits.read_timeout.as_millis()).unwrap_or(u64::MAX),
                "the body read stalled; answering 408"
            );
            return Flow::Answer(transport_failure(ex, StatusCode::REQUEST_TIMEOUT));
        }
        Err(ReadFailure::Transport(error)) => {
            tracing::debug!(
                target: "wymcp::parse_body",
                %error,
                "the body read failed; answering 400"
            );
            return Flow::Answer(transport_failure(ex, StatusCode::BAD_REQUEST));
        }
    };

    match parse_bounded(&bytes, limits.json_values) {
        Ok(message) => {
            ex.bytes = bytes;
            ex.message = Some(message);
            Flow::Continue
        }
        Err(JsonError::Syntax(error)) => ex.reject(
            Rejection::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::PARSE_ERROR,
                format!("the body is not valid JSON: {error}"),
            )
            .close(),
        ),
        Err(JsonError::TooManyValues(max)) => ex.reject(
            Rejection::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::INVALID_REQUEST,
                format!("the body holds more than {max} JSON values"),
            )
            .data(json!({ "ceiling": max, "limit": "json_values" })),
        ),
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

/// Why a body read did not produce the body.
enum ReadFailure {
    /// More than the ceiling, declared or read.
    OverCeiling,
    /// The body would go over the server's budget of body bytes in flight.
    OverBudget,
    /// No piece of the body arrived within the read timeout, or the whole
    /// body not within the body deadline.
    Stalled,
    /// The transport failed the read.
    Transport(axum::Error),
}

/// Reads the whole body within the body ceiling, waiting at most the read
/// timeout for each piece of it and the body deadline for all of it, its
/// bytes beyond `reserved` taken from the budget as they arrive.
///
/// A body that arrives in one piece (the common case for a small request) is
/// kept as that piece, without a copy. Otherwise it is put together from
/// [`Pieces`] once its last piece is there: one allocation of exactly its
/// length, each byte copied once.
async fn read(
    mut body: Body,
    limits: &Limits,
    reserved: &mut Reservation,
) -> Result<Bytes, ReadFailure> {
    let ceiling = limits.body_bytes;
    let deadline = tokio::time::Instant::now() + limits.body_deadline;
    let mut held = reserved_len(&body, ceiling);
    let hint = body.size_hint();
    let ceiling_u64 = u64::try_from(ceiling).unwrap_or(u64::MAX);
    if hint.lower() > ceiling_u64 {
        return Err(ReadFailure::OverCeiling);
    }
    let declared = hint
        .exact()
        .map_or(0, |len| usize::try_from(len).unwrap_or(ceiling));

    let mut first: Option<Bytes> = None;
    let mut pieces = Pieces::new(declared);
    let mut total = 0usize;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let frame = match next_frame(&mut body, limits.read_timeout.min(left)).await {
            Err(_elapsed) => return Err(ReadFailure::Stalled),
            Ok(None) => break,
            Ok(Some(Err(error))) => return Err(ReadFailure::Transport(error)),
            Ok(Some(Ok(frame))) => frame,
        };
        // Trailers carry nothing the message is made of.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        total = total.saturating_add(data.len());
        if total > ceiling {
            return Err(ReadFailure::OverCeiling);
        }
        if total > held {
            if !reserved.grow(total - held) {
                return Err(ReadFailure::OverBudget);
            }
            held = total;
        }
        match first.take() {
            None if pieces.is_empty() => first = Some(data),
            None => pieces.push(data),
            Some(held) => {
                pieces.push(held);
                pieces.push(data);
            }
        }
    }
    Ok(match first {
        Some(only) => only,
        None => pieces.into_body(total),
    })
}

/// The bytes reserved for `body` before its read: its declared length,
/// within the ceiling.
fn reserved_len(body: &Body, ceiling: usize) -> usize {
    usize::try_from(body.size_hint().lower())
        .unwrap_or(usize::MAX)
        .min(ceiling)
}

/// A body frame of at least this many bytes is kept as the transport gave
/// it until the body is whole; smaller ones are copied together at once.
const KEEP: usize = 64 * 1024;

/// The most the buffer of small frames is sized from the body's declared
/// length before the bytes are there.
const PREALLOCATION: usize = 64 * 1024;

/// The pieces of a body that arrives in more than one.
///
/// Large frames are kept as they came (no copy until the body is put
/// together); small ones are copied into one buffer as they arrive, so a
/// client that sends many small pieces does not hold a transport buffer
/// alive per piece. That buffer is sized from the declared length only up to
/// [`PREALLOCATION`]: a declared length is a client's claim, and trusting it
/// whole would let a client that sends two small pieces and stalls hold the
/// server to the whole declared size. Past it the buffer grows as bytes
/// arrive.
struct Pieces {
    declared: usize,
    kept: Vec<Bytes>,
    small: Vec<u8>,
}

impl Pieces {
    fn new(declared: usize) -> Self {
        Pieces {
            declared,
            kept: Vec::new(),
            small: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.small.is_empty()
    }

    fn push(&mut self, data: Bytes) {
        if data.len() >= KEEP {
            if !self.small.is_empty() {
                self.kept.push(Bytes::from(std::mem::take(&mut self.small)));
            }
            self.kept.push(data);
        } else {
            if self.small.capacity() == 0 {
                self.small
                    .reserve_exact(self.declared.min(PREALLOCATION).max(data.len()));
            }
            self.small.extend_from_slice(&data);
        }
    }

    /// The body, `total` bytes, in one allocation.
    fn into_body(mut self, total: usize) -> Bytes {
        if self.kept.is_empty() {
            return Bytes::from(self.small);
        }
        if !self.small.is_empty() {
            self.kept.push(Bytes::from(self.small));
        }
        if self.kept.len() == 1 {
            return self.kept.pop().unwrap_or_default();
        }
        let mut body = Vec::with_capacity(total);
        for piece in &self.kept {
            body.extend_from_slice(piece);
        }
        Bytes::from(body)
    }
}

/// The body's next frame, waiting at most `timeout` for it. A frame already
/// there (a small body arrives with its head) is taken without arming a
/// timer.
async fn next_frame(
    body: &mut Body,
    timeout: Duration,
) -> Result<Option<Result<http_body::Frame<Bytes>, axum::Error>>, tokio::time::error::Elapsed> {
    let mut frame = std::pin::pin!(body.frame());
    match std::future::poll_fn(|cx| Poll::Ready(frame.as_mut().poll(cx))).await {
        Poll::Ready(frame) => Ok(frame),
        Poll::Pending => tokio::time::timeout(timeout, frame).await,
    }
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

    /// Whatever mix of small and large frames a body arrives in, it is put
    /// together in order, whole, in one allocation of exactly its length.
    #[test]
    fn pieces_put_a_body_together_in_order() {
        let sizes: [&[usize]; 6] = [
            &[10, 20],
            &[KEEP, 5],
            &[5, KEEP, 7, KEEP + 3],
            &[KEEP * 2, KEEP],
            &[1, 1, 1, KEEP, 1],
            &[KEEP, 1, 1, 1],
        ];
        for frames in sizes {
            let mut pieces = Pieces::new(0);
            let mut expected = Vec::new();
            let mut next = 0u8;
            for &len in frames {
                let frame: Vec<u8> = (0..len)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect();
                expected.extend_from_slice(&frame);
                pieces.push(Bytes::from(frame));
            }
            let body = pieces.into_body(expected.len());
            assert_eq!(body.len(), expected.len(), "{frames:?}");
            assert!(body == expected, "{frames:?}");
        }
    }

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
