//! `Dispatch`: hands a validated message to the surface and turns its
//! answer into the HTTP response.
//!
//! It sits last, after `Validate`: every wire check and the schema check
//! have passed, so the body is trusted to be a well-formed message of its
//! method. What answers which method, in which era, is the surface's (see
//! [`surface`](crate::surface)); Dispatch only translates:
//!
//! * the exchange into the surface's transport-free call: the kind, era and
//!   revision tagged, the id of the rejection-id rule, the method, the
//!   params (taken out of the message rather than copied: Dispatch is the
//!   last stage; the `id` and `method` stay), the principal, and the body as
//!   the parse step read it (an MRTR `requestState` sealed in the answer is
//!   bound to its params);
//! * the answer back: a notification accepted is `202 Accepted` with an
//!   empty body; a result is `200` JSON; an error is a JSON-RPC error
//!   through the one rejection sender, whose HTTP status the era decides —
//!   2026-07-28 gives every JSON-RPC error a status of its own (-32601 is
//!   404, -32603 is 500, every other 400), a 2025 client reads errors from
//!   a `200 OK`.
//! * A 2025 client's `initialize` that declared something a server may ask
//!   mid-call is answered with an `Mcp-Session-Id`: a sealed token of those
//!   capabilities, not a session (nothing is stored; see
//!   [`mid_call`](crate::surface::mid_call)). Dispatch hands the token of a
//!   later 2025 request to the surface, which opens it (`404` when it does
//!   not open); a 2026-07-28 request's is ignored.
//! * A 2025 client's JSON-RPC response (its answer to a request a call sent
//!   mid-call; Validate held it to the response envelope) is no call: it
//!   goes to the surface's other entry, `Surface::deliver`, before any
//!   `Call` is built, and is handed to the
//!   waiting call: `202 Accepted`, empty body, once the call has it; else
//!   `400` (not this server's id, too late, nobody waits), `403` (another
//!   caller's), `413` (longer than the relay carries to the replica holding
//!   the call: -32600, `data.limit` `max_answer_bytes`, no `Retry-After`)
//!   or `503` (the replica holding the call unreachable), each with a
//!   JSON-RPC error whose id is null.
//! * A handler that sends progress or log notifications gets them delivered
//!   on its request's answer: the answer stays plain JSON (status included)
//!   unless the handler sends something before it finishes; then it is a
//!   `200` SSE stream of its notifications ending with the answer (see
//!   [`sse`](crate::sse)), an error included, whose status is then
//!   committed. A client that closes the stream cancels the handler: its
//!   future lives in the response body. A `subscriptions/listen` answer is
//!   its SSE stream.

use std::future::poll_fn;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};

use crate::auth::AuthConfig;
use crate::exchange::Exchange;
use crate::ledger::{Place, Refusal};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::headers::MCP_SESSION_ID;
use crate::protocol::jsonrpc::{MessageKind, MessageSource};
use crate::protocol::revision::Era;
use crate::reply::{self, Flow, Rejection, Rejector, Response};
use crate::sse;
use crate::stage::Stage;
use crate::surface::call::{Answer, Busy, Call, Emitted, Outcome, Running, Session};
use crate::surface::mid_call::Refused;
use crate::trace;

/// Hands the message to the surface; see the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dispatch;

impl Stage for Dispatch {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        // Only a span some subscriber wants reads the message for it.
        if !ex.span().is_disabled()
            && let Some(method) = ex.method()
        {
            trace::dispatched(
                ex.span(),
                ex.slot(),
                method,
                ex.revision()
                    .map(crate::protocol::revision::Revision::as_str),
                ex.params(),
            );
        }
        let rejector = ex.rejector();
        let era = ex.era();
        if let (Some(MessageKind::Unknown), Era::Legacy) = (ex.kind(), era) {
            // A 2025 client's answer mid-call, which Validate held to the
            // response envelope: no call, but a delivery (the message moved,
            // not parsed again).
            let message = ex.take_message();
            let subject = ex.principal().map_or("", |p| p.subject.as_str());
            let caller = ex.caller();
            let delivery =
                ex.server()
                    .surface
                    .deliver(message, subject, &caller, session_token(ex));
            return Flow::Answer(match delivery.0.await {
                Ok(()) => reply::accepted(),
                Err(refused) => refusal(&rejector, refused),
            });
        }
        let params = ex.take_params();
        let call = Call {
            kind: ex.kind().unwrap_or(MessageKind::Unknown),
            era,
            revision: ex.revision(),
            id: rejector.id.clone(),
            method: ex.method(),
            params,
            principal: ex.principal(),
            caller: ex.caller(),
            raw: ex.bytes().clone(),
            span: ex.span().clone(),
            slot: ex.span_slot(),
            session: session_token(ex),
        };
        let answer = ex.server().surface.answer(call);
        let auth = ex.server().auth_config();
        let dpop_scheme = auth.is_some_and(|config| config.uses_dpop_scheme(ex.headers()));
        // A streamed answer's handler holds the params parsed from the body:
        // the body's place in the ledger goes with it.
        let body = ex.take_body_place();
        Flow::Answer(respond(answer, rejector, era, auth, dpop_scheme, body).await)
    }
}

/// A 2025 client's session token (2026-07-28 requests ignore it).
fn session_token<'e>(ex: &'e Exchange<'_>) -> Option<&'e str> {
    match ex.era() {
        Era::Legacy => ex
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok()),
        Era::Modern => None,
    }
}

/// The HTTP status of a JSON-RPC error in `era`: the 2026 transport gives
/// each its own; a 2025 client reads errors from a `200 OK`.
fn status_of(era: Era, code: ErrorCode) -> StatusCode {
    match era {
        Era::Legacy => StatusCode::OK,
        Era::Modern => match code {
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            ErrorCode::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        },
    }
}

pub(crate) async fn respond(
    answer: Answer,
    rejector: Rejector,
    era: Era,
    auth: Option<&AuthConfig>,
    dpop_scheme: bool,
    body: Option<Place>,
) -> Response {
    match answer {
        Answer::Forbidden { what, scopes } => {
            forbidden(&rejector, auth, dpop_scheme, &what, &scopes)
        }
        Answer::Accepted => reply::accepted(),
        Answer::Done(outcome, Session::Unchanged) => finished(outcome, &rejector, era),
        Answer::Done(outcome, Session::Issued(token)) => {
            let mut response = finished(outcome, &rejector, era);
            if let Ok(value) = HeaderValue::try_from(token) {
                response.headers_mut().insert(MCP_SESSION_ID, value);
            }
            response
        }
        // The outcome is the same error; the refusal gives it its status.
        Answer::Done(_, Session::Refused) => refusal(&rejector, Refused::Session),
        Answer::Listen(stream) => sse::respond_events([], stream),
        Answer::Busy {
            error,
            refusal,
            retry_after,
        } => busy(&rejector, error, refusal, retry_after),
        Answer::Running(running) => run(running, rejector, era, body).await,
    }
}

/// The HTTP answer to a 2025 message the surface refused: `404` for a
/// session token that does not open (2025-11-25: a session the server does
/// not know), `403` for another caller's response, `503` (with
/// `Retry-After`) when the replica holding the call cannot be reached,
/// `413` for an answer longer than the relay carries (not retryable: no
/// `Retry-After`), `400` for every other response it cannot accept; the body a JSON-RPC
/// error whose id is null (a response is no request).
fn refusal(rejector: &Rejector, refused: Refused) -> Response {
    let status = match refused {
        Refused::Session => StatusCode::NOT_FOUND,
        Refused::Caller => StatusCode::FORBIDDEN,
        Refused::Unreachable => StatusCode::SERVICE_UNAVAILABLE,
        Refused::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        Refused::Unknown | Refused::Late | Refused::NoWaiter => StatusCode::BAD_REQUEST,
    };
    let mut rejection = Rejection::of(status, refused.rpc_error());
    if refused == Refused::Unreachable {
        rejection = rejection.header(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    rejector.response(rejection)
}

/// `403` `insufficient_scope` for a call of `what`, whose item requires
/// `scopes`: the challenge and the message name every scope the call
/// needs, the server's own first (SEP-2350: one challenge, all scopes), in
/// both eras (an HTTP answer, as the Auth stage's). The challenge is the
/// `DPoP` one when the request was authenticated with that scheme
/// (`dpop_scheme`, RFC 9449 §7.1), the Bearer one otherwise.
fn forbidden(
    rejector: &Rejector,
    auth: Option<&AuthConfig>,
    dpop_scheme: bool,
    what: &str,
    scopes: &[String],
) -> Response {
    let mut required: Vec<String> = auth.map(|a| a.required().to_vec()).unwrap_or_default();
    for scope in scopes {
        if !required.contains(scope) {
            required.push(scope.clone());
        }
    }
    let challenge = match auth {
        Some(config) if dpop_scheme => config.dpop_insufficient_scope_challenge(&required),
        Some(config) => config.insufficient_scope_challenge(&required),
        None => AuthConfig::new().insufficient_scope_challenge(&required),
    };
    // Scope tokens and validated configuration only: a valid header value.
    let challenge =
        HeaderValue::try_from(challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
    let error = RpcError::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "forbidden: {what} needs the scopes {}, which the token does not all hold",
            required.join(" ")
        ),
    )
    .data(serde_json::json!({"requiredScopes": required}));
    rejector.response(
        Rejection::of(StatusCode::FORBIDDEN, error).header(header::WWW_AUTHENTICATE, challenge),
    )
}

/// A refusal for want of capacity: `429` for the caller's share, `503` for
/// the global cap, with `Retry-After`.
fn busy(
    rejector: &Rejector,
    error: RpcError,
    refusal: Refusal,
    retry_after: std::time::Duration,
) -> Response {
    let status = if refusal.is_share() {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let seconds = HeaderValue::from(retry_after.as_secs().max(1));
    rejector.response(Rejection::of(status, error).header(header::RETRY_AFTER, seconds))
}

/// A finished answer as its own JSON response.
fn finished(outcome: Outcome, rejector: &Rejector, era: Era) -> Response {
    match outcome {
        Outcome::Result(bytes) => reply::json_response(StatusCode::OK, bytes),
        Outcome::Error(error) => {
            rejector.response(Rejection::of(status_of(era, error.code), error))
        }
        Outcome::Busy(refused) => {
            let Busy {
                error,
                refusal,
                retry_after,
            } = *refused;
            busy(rejector, error, refusal, retry_after)
        }
    }
}

/// Runs the handler: its answer as plain JSON when it finishes before
/// sending anything, else an SSE stream from its first notification on.
async fn run(mut running: Running, rejector: Rejector, era: Era, body: Option<Place>) -> Response {
    if !running.notifies() {
        // Nothing can be sent before the answer (most requests).
        let outcome = poll_fn(|cx| running.poll_next(cx)).await;
        return match outcome {
            Some(Emitted::Final(outcome)) => finished(outcome, &rejector, era),
            _ => unanswered(&rejector),
        };
    }
    match poll_fn(|cx| running.poll_next(cx)).await {
        Some(Emitted::Final(outcome)) => finished(outcome, &rejector, era),
        Some(Emitted::Notification(first)) => sse::respond(
            [first],
            Streamed {
                running,
                rejector,
                era,
                done: false,
                body,
            },
        ),
        None => unanswered(&rejector),
    }
}

/// A running call that ended without its answer, which the surface never
/// does: a 500 rather than a hung request.
fn unanswered(rejector: &Rejector) -> Response {
    rejector.response(Rejection::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::INTERNAL_ERROR,
        "the handler ended without an answer",
    ))
}

/// A running call as the source of its SSE stream: its notifications, then
/// its answer (an error's status is committed by then; the rejection event
/// still names it).
struct Streamed {
    running: Running,
    rejector: Rejector,
    era: Era,
    done: bool,
    /// The request body's place in the ledger, held until the answer is
    /// given (the handler holds what was parsed from the body).
    body: Option<Place>,
}

impl MessageSource for Streamed {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let message = match std::task::ready!(self.running.poll_next(cx)) {
            None => return Poll::Ready(None),
            Some(Emitted::Notification(message)) => message,
            Some(Emitted::Final(outcome)) => {
                self.done = true;
                self.body = None;
                match outcome {
                    Outcome::Result(bytes) => Bytes::from(bytes),
                    Outcome::Error(error) => Bytes::from(
                        self.rejector
                            .envelope(status_of(self.era, error.code), &error),
                    ),
                    // The stream's status is committed: the event names it.
                    Outcome::Busy(refused) => {
                        let Busy { error, refusal, .. } = *refused;
                        let status = if refusal.is_share() {
                            StatusCode::TOO_MANY_REQUESTS
                        } else {
                            StatusCode::SERVICE_UNAVAILABLE
                        };
                        Bytes::from(self.rejector.envelope(status, &error))
                    }
                }
            }
        };
        Poll::Ready(Some(message))
    }

    fn finished(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use http::header;
    use http_body_util::BodyExt;
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::protocol::error::RpcError;
    use crate::protocol::jsonrpc::result_envelope;
    use crate::protocol::meta::LOG_LEVEL;
    use crate::sse::KEEP_ALIVE;
    use crate::surface::{Emitter, LogLevel};

    fn params(meta: Value) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), json!("t"));
        params.insert("_meta".into(), meta);
        Value::Object(params)
    }

    fn result(id: u64) -> Outcome {
        Outcome::Result(result_envelope(
            &json!(id),
            &json!({"resultType": "complete", "content": []}),
        ))
    }

    /// Runs `handler` as a call of the modern era with `notifications`.
    async fn respond(
        notifications: crate::surface::Notifications,
        handler: impl std::future::Future<Output = Outcome> + Send + 'static,
    ) -> Response {
        let rejector = Rejector {
            id: json!(1),
            stage: "Dispatch",
            http2: false,
            span: tracing::Span::none(),
            slot: None,
        };
        run(
            Running::new(notifications, handler),
            rejector,
            Era::Modern,
            None,
        )
        .await
    }

    async fn events(response: Response) -> Vec<Value> {
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.ends_with("\n\n"), "{text:?}");
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn no_emit_is_the_handlers_own_json_response() {
        let (e, n) = Emitter::for_params(Some(&params(json!({}))));
        let response = respond(n, async move {
            e.progress(1.0, None, None);
            e.log(LogLevel::Emergency, None, json!("x"));
            Outcome::Error(RpcError::invalid_params("no"))
        })
        .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert!(response.headers().get("x-accel-buffering").is_none());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["id"], 1);
    }

    #[tokio::test]
    async fn an_emit_turns_the_answer_into_sse_ending_with_the_response() {
        let (e, n) = Emitter::for_params(Some(&params(json!({"progressToken": "p"}))));
        let response = respond(n, async move {
            for step in [0.0, 50.0, 100.0] {
                e.progress(step, Some(100.0), None);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            result(9)
        })
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert_eq!(response.headers()["x-accel-buffering"], "no");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        let events = events(response).await;
        assert_eq!(events.len(), 4);
        let progress: Vec<&Value> = events[..3]
            .iter()
            .map(|e| &e["params"]["progress"])
            .collect();
        assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
        assert!(
            events[..3]
                .iter()
                .all(|e| e["params"]["progressToken"] == "p")
        );
        assert_eq!(events[3]["id"], 9);
        assert_eq!(events[3]["result"]["resultType"], "complete");
    }

    #[tokio::test]
    async fn emits_without_awaiting_still_stream_and_late_emits_are_dropped() {
        let (e, n) = Emitter::for_params(Some(&params(json!({LOG_LEVEL: "debug"}))));
        let late = e.clone();
        let response = respond(n, async move {
            e.log(LogLevel::Info, None, json!("one"));
            e.log(LogLevel::Info, None, json!("two"));
            result(3)
        })
        .await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert!(
            !late.log(LogLevel::Info, None, json!("after")),
            "the stream is closed"
        );
        let events = events(response).await;
        let data: Vec<&Value> = events.iter().map(|e| &e["params"]["data"]).collect();
        assert_eq!(data, [&json!("one"), &json!("two"), &Value::Null]);
        assert_eq!(events[2]["id"], 3);
    }

    #[tokio::test]
    async fn nothing_is_sent_after_the_final_response() {
        let (e, n) = Emitter::for_params(Some(&params(json!({"progressToken": 1}))));
        let late = e.clone();
        let response = respond(n, async move {
            e.progress(1.0, None, None);
            tokio::task::yield_now().await;
            result(4)
        })
        .await;
        let mut body = response.into_body();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            let last = data.windows(6).any(|w| w == b"\"id\":4");
            frames.push(data);
            if last {
                break;
            }
        }
        assert_eq!(frames.len(), 2);
        // The body is still alive, but its stream is finished: no more sends.
        assert!(!late.progress(2.0, None, None));
        assert!(body.frame().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_gets_keep_alive_comments() {
        let (e, n) = Emitter::for_params(Some(&params(json!({"progressToken": 1}))));
        let response = respond(n, async move {
            e.progress(1.0, None, None);
            tokio::time::sleep(KEEP_ALIVE * 2 + Duration::from_secs(1)).await;
            result(1)
        })
        .await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert_eq!(text.matches(": keep-alive\n\n").count(), 2, "{text}");
        assert!(
            text.ends_with("\"id\":1,\"result\":{\"content\":[],\"resultType\":\"complete\"}}\n\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn dropping_the_stream_drops_the_handler() {
        struct Guard(Arc<AtomicBool>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let (e, n) = Emitter::for_params(Some(&params(json!({"progressToken": 1}))));
        let response = respond(n, async move {
            let _guard = Guard(flag);
            e.progress(1.0, None, None);
            std::future::pending::<()>().await;
            result(1)
        })
        .await;
        let mut body = response.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(first.starts_with(b"data: "));
        assert!(!dropped.load(Ordering::SeqCst));
        drop(body);
        assert!(dropped.load(Ordering::SeqCst));
    }
}
