//! Streaming a request's progress and log notifications: a JSON answer that
//! turns into `text/event-stream` the moment a handler has something to say.
//!
//! # The API in one screen
//!
//! ```
//! use serde_json::json;
//! use wymcp::stream::{self, Emitter, LogLevel};
//!
//! # async fn demo(params: serde_json::Value, id: serde_json::Value) -> wymcp::Response {
//! // Dispatch: one emitter per request, read from the request's `_meta`.
//! let (emitter, notifications) = Emitter::for_params(Some(&params));
//! // The handler owns a clone and says what it has to say; what the client
//! // did not ask for (no progressToken, no logLevel, a level below it) is
//! // dropped here and `false` returned.
//! let handler = async move {
//!     emitter.progress(0.0, Some(100.0), None);
//!     emitter.log(LogLevel::Info, None, json!("working"));
//!     emitter.progress(100.0, Some(100.0), None);
//!     wymcp::response::result(&id, &json!({"resultType": "complete", "content": []}))
//! };
//! // Plain JSON if nothing was emitted; SSE (progress/log events, then the
//! // final response, then the end of the stream) as soon as something was.
//! stream::respond(notifications, handler).await
//! # }
//! ```
//!
//! * [`Emitter::for_params`] reads `_meta.progressToken` and
//!   `_meta["io.modelcontextprotocol/logLevel"]` (2026-07-28: no `logLevel`,
//!   no `notifications/message`, ever). [`Emitter::for_legacy_params`] is the
//!   2025-11-25 flavour: that revision sets the level with
//!   `logging/setLevel`, which a stateless server cannot remember, so the
//!   server's own default applies: `info` and above.
//! * [`respond`] runs the handler future. The answer stays plain JSON (the
//!   handler's own [`Response`], status and headers included) unless the
//!   handler emits before it finishes; then it is `200`,
//!   `Content-Type: text/event-stream`, `X-Accel-Buffering: no`,
//!   `Cache-Control: no-cache`, one `data:` line per JSON-RPC message, the
//!   handler's response as the last event, and the end of the stream. A
//!   comment line (`: keep-alive`) goes out every 15 s of silence. Once
//!   streaming, the status is committed: an error the handler ends with
//!   travels as the last event of the `200` stream (its own status and
//!   headers are not sent), so check what can refuse the request (client
//!   capabilities, arguments) before emitting.
//! * A client that closes the stream cancels the handler: the handler future
//!   lives inside the response body, and dropping the body (what hyper does
//!   when the connection goes away) drops the future. Before the first emit
//!   the same holds, since the request's own future is dropped. Whatever the
//!   handler emits after its response is never sent.
//! * The handler future must be `Send + 'static` (own what it uses: clone the
//!   `Arc`s, move the arguments in).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::response::Response;

/// The `_meta` key of a request's log level (2026-07-28).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The log level a 2025-11-25 request gets (its `logging/setLevel` is not
/// remembered): `info` and above, as a server with no instruction chooses.
pub const LEGACY_LOG_LEVEL: LogLevel = LogLevel::Info;

/// How long a stream may stay silent before a keep-alive comment is sent.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The severity of a log message (RFC 5424 levels), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name on the wire.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level a wire name names, if any (case-sensitive).
    #[must_use]
    pub fn parse(name: &str) -> Option<LogLevel> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// What a handler uses to send progress and log notifications on its
/// request's stream. Cheap to clone; every clone feeds the same stream.
#[derive(Debug, Clone)]
pub struct Emitter {
    tx: Option<mpsc::UnboundedSender<Bytes>>,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

/// The receiving side of an [`Emitter`], handed to [`respond`].
#[derive(Debug)]
pub struct Notifications {
    /// `None` when the request asked for nothing an emitter could send: no
    /// channel is made, and the handler's answer is awaited as it is.
    rx: Option<mpsc::UnboundedReceiver<Bytes>>,
}

impl Emitter {
    /// An emitter for a request that asked for progress under `progress_token`
    /// (when `Some`) and for log messages at or above `log_level` (when `Some`).
    #[must_use]
    pub fn new(
        progress_token: Option<Value>,
        log_level: Option<LogLevel>,
    ) -> (Emitter, Notifications) {
        if progress_token.is_none() && log_level.is_none() {
            // Nothing can be sent: no channel (most requests take this path).
            return (Emitter::silent(), Notifications { rx: None });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Emitter {
                tx: Some(tx),
                progress_token,
                log_level,
            },
            Notifications { rx: Some(rx) },
        )
    }

    /// The emitter of a 2026-07-28 request with these `params`: progress when
    /// `_meta.progressToken` is a string or an integer, log messages when
    /// `_meta["io.modelcontextprotocol/logLevel"]` names a level.
    #[must_use]
    pub fn for_params(params: Option<&Value>) -> (Emitter, Notifications) {
        let meta = params.and_then(|p| p.get("_meta"));
        let level = meta
            .and_then(|m| m.get(LOG_LEVEL))
            .and_then(Value::as_str)
            .and_then(LogLevel::parse);
        Self::new(progress_token(meta), level)
    }

    /// The emitter of a 2025-11-25 request: progress as above, and log
    /// messages at [`LEGACY_LOG_LEVEL`] and above, since the level that
    /// revision sets with `logging/setLevel` cannot be remembered by a
    /// stateless server.
    #[must_use]
    pub fn for_legacy_params(params: Option<&Value>) -> (Emitter, Notifications) {
        let meta = params.and_then(|p| p.get("_meta"));
        Self::new(progress_token(meta), Some(LEGACY_LOG_LEVEL))
    }

    /// An emitter that sends nothing (for handlers run outside a request).
    #[must_use]
    pub fn silent() -> Emitter {
        Emitter {
            tx: None,
            progress_token: None,
            log_level: None,
        }
    }

    /// Whether the request asked for progress (so [`progress`](Self::progress)
    /// sends).
    #[must_use]
    pub fn reports_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Whether a log message at `level` would be sent.
    #[must_use]
    pub fn logs(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|min| level >= min)
    }

    /// Sends `notifications/progress` when the request carried a
    /// `progressToken`. Returns whether it was sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = &self.progress_token else {
            return false;
        };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        self.send("notifications/progress", params)
    }

    /// Sends `notifications/message` when the request asked for log messages
    /// at `level` or below it. Returns whether it was sent.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) -> bool {
        if !self.logs(level) {
            return false;
        }
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), json!(logger));
        }
        params.insert("data".into(), data);
        self.send("notifications/message", params)
    }

    fn send(&self, method: &str, params: Map<String, Value>) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        let mut message = Map::new();
        message.insert("jsonrpc".into(), json!("2.0"));
        message.insert("method".into(), json!(method));
        message.insert("params".into(), Value::Object(params));
        // Serialising a Value cannot fail.
        let bytes = serde_json::to_vec(&message).unwrap_or_default();
        tx.send(Bytes::from(bytes)).is_ok()
    }
}

fn progress_token(meta: Option<&Value>) -> Option<Value> {
    meta.and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned()
}

/// A whole number as a JSON integer, anything else as a float.
#[allow(clippy::float_cmp)] // exactness is the point: only a whole number is an integer
fn number(n: f64) -> Value {
    #[allow(clippy::cast_possible_truncation)]
    let whole = n as i64;
    #[allow(clippy::cast_precision_loss)]
    if n.is_finite() && whole as f64 == n && n.abs() < 9.0e15 {
        return json!(whole);
    }
    serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// One SSE event carrying one JSON message.
pub(crate) fn sse_event(json: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(json.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(json);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// The comment line that keeps an idle stream (and its proxies) alive.
pub(crate) const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// A `200` SSE response around `body`.
pub(crate) fn sse_response(body: Body) -> Response {
    let mut response = http::Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

pub(crate) fn keep_alive_timer() -> tokio::time::Interval {
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    timer
}

type Handler = Pin<Box<dyn Future<Output = Response> + Send>>;
type Finishing = Pin<Box<dyn Future<Output = Bytes> + Send>>;

enum First {
    Done(Response),
    Emitted(Bytes),
}

/// Runs `handler` and answers with its response: as it is when the handler
/// emitted nothing, as an SSE stream of its notifications ending with the
/// response when it did. See the [module docs](self).
pub async fn respond<F>(notifications: Notifications, handler: F) -> Response
where
    F: Future<Output = Response> + Send + 'static,
{
    let Some(mut rx) = notifications.rx else {
        return handler.await;
    };
    let mut handler: Handler = Box::pin(handler);
    let first = poll_fn(|cx| {
        if let Poll::Ready(response) = handler.as_mut().poll(cx) {
            return Poll::Ready(First::Done(response));
        }
        match rx.poll_recv(cx) {
            Poll::Ready(Some(message)) => Poll::Ready(First::Emitted(message)),
            _ => Poll::Pending,
        }
    })
    .await;
    match first {
        First::Done(response) => {
            let mut queued = VecDeque::new();
            while let Ok(message) = rx.try_recv() {
                queued.push_back(sse_event(&message));
            }
            if queued.is_empty() {
                return response;
            }
            rx.close();
            let body = SseBody {
                pending: queued,
                rx,
                handler: None,
                finishing: Some(Box::pin(final_event(response))),
                keep_alive: keep_alive_timer(),
                done: false,
            };
            sse_response(Body::new(body))
        }
        First::Emitted(message) => {
            let body = SseBody {
                pending: VecDeque::from([sse_event(&message)]),
                rx,
                handler: Some(handler),
                finishing: None,
                keep_alive: keep_alive_timer(),
                done: false,
            };
            sse_response(Body::new(body))
        }
    }
}

async fn final_event(response: Response) -> Bytes {
    match axum::body::to_bytes(response.into_body(), usize::MAX).await {
        Ok(bytes) => sse_event(&bytes),
        Err(error) => {
            tracing::warn!(target: "wymcp::stream", %error, "the final response could not be read");
            Bytes::new()
        }
    }
}

/// The body of a request's SSE stream: it owns the handler future, so the
/// handler lives exactly as long as the client keeps the stream.
struct SseBody {
    pending: VecDeque<Bytes>,
    rx: mpsc::UnboundedReceiver<Bytes>,
    handler: Option<Handler>,
    finishing: Option<Finishing>,
    keep_alive: tokio::time::Interval,
    done: bool,
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.pending.pop_front() {
                this.keep_alive.reset();
                return Poll::Ready(Some(Ok(Frame::data(event))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(finishing) = &mut this.finishing {
                let event = std::task::ready!(finishing.as_mut().poll(cx));
                this.finishing = None;
                this.done = true;
                if !event.is_empty() {
                    this.pending.push_back(event);
                }
                continue;
            }
            while let Poll::Ready(Some(message)) = this.rx.poll_recv(cx) {
                this.pending.push_back(sse_event(&message));
            }
            if !this.pending.is_empty() {
                continue;
            }
            if let Some(handler) = &mut this.handler
                && let Poll::Ready(response) = handler.as_mut().poll(cx)
            {
                this.handler = None;
                while let Ok(message) = this.rx.try_recv() {
                    this.pending.push_back(sse_event(&message));
                }
                // Nothing the handler emits after its response is sent.
                this.rx.close();
                this.finishing = Some(Box::pin(final_event(response)));
                continue;
            }
            if this.keep_alive.poll_tick(cx).is_ready() {
                this.pending
                    .push_back(Bytes::from_static(KEEP_ALIVE_COMMENT));
                continue;
            }
            return Poll::Pending;
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.pending.is_empty()
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if self.handler.is_some() {
            tracing::debug!(target: "wymcp::stream", "the client closed the stream; the handler is cancelled");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use http_body_util::BodyExt;

    use super::*;

    fn params(meta: Value) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), json!("t"));
        params.insert("_meta".into(), meta);
        Value::Object(params)
    }

    fn result(id: u64) -> Response {
        crate::response::result(
            &json!(id),
            &json!({"resultType": "complete", "content": []}),
        )
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

    #[test]
    fn levels_are_ordered_and_parsed() {
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("INFO"), None);
        assert_eq!(number(50.0), json!(50));
        assert_eq!(number(0.5), json!(0.5));
        assert_eq!(number(f64::NAN), Value::Null);
    }

    #[test]
    fn progress_only_with_a_token() {
        let (e, _n) = Emitter::for_params(Some(&params(json!({}))));
        assert!(!e.reports_progress());
        assert!(!e.progress(1.0, None, None));
        for bad in [json!(null), json!(1.5), json!({}), json!(true)] {
            let (e, _n) = Emitter::for_params(Some(&params(json!({"progressToken": bad}))));
            assert!(!e.progress(1.0, None, None));
        }
        let (e, mut n) = Emitter::for_params(Some(&params(json!({"progressToken": 7}))));
        assert!(e.progress(50.0, Some(100.0), Some("half")));
        let sent: Value =
            serde_json::from_slice(&n.rx.as_mut().unwrap().try_recv().unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 7, "progress": 50, "total": 100, "message": "half"}})
        );
    }

    #[test]
    fn logs_only_with_a_level_and_at_or_above_it() {
        let (e, _n) = Emitter::for_params(Some(&params(json!({}))));
        assert!(LogLevel::ALL.iter().all(|l| !e.log(*l, None, json!("x"))));
        let (e, _n) = Emitter::for_params(Some(&params(json!({LOG_LEVEL: "loud"}))));
        assert!(!e.log(LogLevel::Emergency, None, json!("x")));
        let (e, mut n) = Emitter::for_params(Some(&params(json!({LOG_LEVEL: "warning"}))));
        assert!(!e.log(LogLevel::Info, None, json!("quiet")));
        assert!(e.log(LogLevel::Warning, Some("db"), json!({"k": 1})));
        assert!(e.log(LogLevel::Error, None, json!("loud")));
        let first: Value =
            serde_json::from_slice(&n.rx.as_mut().unwrap().try_recv().unwrap()).unwrap();
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "warning", "logger": "db", "data": {"k": 1}}})
        );
        let second: Value =
            serde_json::from_slice(&n.rx.as_mut().unwrap().try_recv().unwrap()).unwrap();
        assert_eq!(second["params"]["level"], "error");
        assert!(n.rx.as_mut().unwrap().try_recv().is_err());
        let (legacy, _n) = Emitter::for_legacy_params(None);
        assert!(legacy.logs(LogLevel::Info) && !legacy.logs(LogLevel::Debug));
        assert!(!Emitter::silent().log(LogLevel::Emergency, None, json!(1)));
    }

    #[tokio::test]
    async fn no_emit_is_the_handlers_own_json_response() {
        let (e, n) = Emitter::for_params(Some(&params(json!({}))));
        let response = respond(n, async move {
            e.progress(1.0, None, None);
            e.log(LogLevel::Emergency, None, json!("x"));
            let mut r = result(1);
            *r.status_mut() = StatusCode::BAD_REQUEST;
            r
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
