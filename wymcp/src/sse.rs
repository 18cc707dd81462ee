//! The one SSE writer: every `text/event-stream` answer wymcp sends — a
//! request's progress and log notifications ending with its response, and a
//! `subscriptions/listen` stream — is a [`MessageSource`] written by
//! [`Stream`].
//!
//! The writer owns the framing and the liveness of the stream, the source
//! owns what is said: one `data:` line per message, each followed by a blank
//! line; a `: keep-alive` comment after every [`KEEP_ALIVE`] of silence, so
//! the client and the proxies between know the stream is alive; the end of
//! the stream once the source says it is finished. The response is `200`
//! with `Content-Type: text/event-stream`, `Cache-Control: no-cache` and
//! `X-Accel-Buffering: no` (nginx then passes each event on at once).
//!
//! Dropping the stream (what hyper does when the client goes away) drops the
//! source: a source that owns a handler's future cancels it that way.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;

use crate::protocol::jsonrpc::MessageSource;

/// How long a stream may stay silent before a keep-alive comment is sent.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The comment line that keeps an idle stream (and its proxies) alive.
pub(crate) const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// What an SSE event carrying a JSON message starts with.
pub(crate) const EVENT_HEAD: &[u8] = b"data: ";

/// What it ends with.
pub(crate) const EVENT_TAIL: &[u8] = b"\n\n";

/// One SSE event carrying one JSON message.
pub(crate) fn event(json: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(json.len() + EVENT_HEAD.len() + EVENT_TAIL.len());
    event.extend_from_slice(EVENT_HEAD);
    event.extend_from_slice(json);
    event.extend_from_slice(EVENT_TAIL);
    Bytes::from(event)
}

/// The JSON message an [`event`] carries, sharing its bytes.
pub(crate) fn message_of(event: &Bytes) -> Bytes {
    event.slice(EVENT_HEAD.len()..event.len() - EVENT_TAIL.len())
}

/// What an SSE answer writes: its events (each an [`event`]), one at a time.
/// A [`MessageSource`] is one through [`respond`]; a source that keeps its
/// messages as events (a listen stream, whose notifications are rendered
/// once) gives them as they are, without a copy per event.
pub(crate) trait EventSource: Send + Unpin + 'static {
    /// The next event; `Ready(None)` once there are no more.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;

    /// Whether the event just given was the last.
    fn finished(&self) -> bool;

    /// The source's [`Gate`], if it keeps one: the writer then polls its
    /// keep-alive timer with the gate's waker, and only when the gate says
    /// a rare source woke. A source that keeps one follows the
    /// polling task with it ([`Gate::follow`]) in every
    /// [`poll_event`](Self::poll_event).
    fn gate(&self) -> Option<&Arc<Gate>> {
        None
    }
}

/// What a long-lived stream's rare sources (for a listen stream: a close, a
/// resync, its place giving way, its lifetime, a refusal of its
/// credentials, and the writer's keep-alive timer) are polled with: a
/// waker that notes that one of them woke before waking the stream's task.
///
/// A listen stream is woken by a change at every delivery and by a rare
/// source about never; a wake-up that did not come through the gate polls
/// the change receiver alone, not six sources that did not fire (each poll
/// of one takes a lock, registers a waker and spends tokio's budget: most
/// of what a delivery cost over bare hyper's, BENCHMARKS.md "Listen
/// streams"). The source and the writer each have a bit: a wake sets both,
/// each takes its own. A connection's task keeps one too, for the server's
/// stop and the idle timer (`serve/connection.rs`, the source's bit alone).
#[derive(Debug)]
pub(crate) struct Gate {
    /// Who the task last followed is (`Waker::data` and `Waker::vtable` as
    /// addresses, what `Waker::will_wake` compares), read without the lock:
    /// a poll by the task followed already (every poll of a connection's)
    /// takes no lock. Written only by [`follow`](Self::follow), which only
    /// the stream's poller calls.
    seen: [AtomicUsize; 2],
    /// The bits of those that have not looked since a rare source woke;
    /// all set at the start, so the first poll registers every source.
    woken: AtomicU8,
    /// The task to wake: the one that last polled the stream.
    task: Mutex<Option<Waker>>,
}

impl Gate {
    /// The source's bit.
    pub(crate) const SOURCE: u8 = 1;
    /// The writer's bit.
    pub(crate) const WRITER: u8 = 2;

    /// A gate (the rare sources are polled with `Waker::from` it: made
    /// when they are polled, about never, so a stream keeps no waker).
    pub(crate) fn new() -> Arc<Gate> {
        Arc::new(Gate {
            seen: [AtomicUsize::new(0), AtomicUsize::new(0)],
            woken: AtomicU8::new(Gate::SOURCE | Gate::WRITER),
            task: Mutex::new(None),
        })
    }

    /// Follows the task polling the stream now (a clone only when it
    /// changed, which a connection's task never does).
    pub(crate) fn follow(&self, task: &Waker) {
        let who = [
            task.data() as usize,
            std::ptr::from_ref(task.vtable()) as usize,
        ];
        if self.seen[0].load(Ordering::Relaxed) == who[0]
            && self.seen[1].load(Ordering::Relaxed) == who[1]
        {
            return;
        }
        *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.clone());
        self.seen[0].store(who[0], Ordering::Relaxed);
        self.seen[1].store(who[1], Ordering::Relaxed);
    }

    /// Whether a rare source woke since `bit` last looked (and forgets it).
    pub(crate) fn take(&self, bit: u8) -> bool {
        self.woken.load(Ordering::Relaxed) & bit != 0
            && self.woken.fetch_and(!bit, Ordering::Acquire) & bit != 0
    }

    /// Asks for `bit`'s sources to be polled again at its next look (one
    /// fired and was handled, or a timer was set anew).
    pub(crate) fn again(&self, bit: u8) {
        self.woken.fetch_or(bit, Ordering::Relaxed);
    }
}

impl Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken
            .fetch_or(Gate::SOURCE | Gate::WRITER, Ordering::Release);
        // Woken outside the lock: a waker that polls at once cannot deadlock.
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl<E: EventSource + ?Sized> EventSource for Box<E> {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        (**self).poll_event(cx)
    }

    fn finished(&self) -> bool {
        (**self).finished()
    }

    fn gate(&self) -> Option<&Arc<Gate>> {
        (**self).gate()
    }
}

/// A message source's messages, each framed as its own event.
struct Messages<S>(S);

impl<S: MessageSource> EventSource for Messages<S> {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.0
            .poll_message(cx)
            .map(|message| message.map(|m| event(&m)))
    }

    fn finished(&self) -> bool {
        self.0.finished()
    }
}

/// The `200` SSE response writing `first` (messages already there), then
/// everything `source` says.
pub(crate) fn respond<S: MessageSource>(
    first: impl IntoIterator<Item = Bytes>,
    source: S,
) -> http::Response<Body> {
    respond_events(first.into_iter().map(|m| event(&m)), Messages(source))
}

/// The `200` SSE response writing the events `first`, then every event
/// of `source`.
pub(crate) fn respond_events<E: EventSource>(
    first: impl IntoIterator<Item = Bytes>,
    source: E,
) -> http::Response<Body> {
    let body = Stream {
        pending: first.into_iter().collect(),
        done: source.finished(),
        source,
        keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
        last_sent: tokio::time::Instant::now(),
    };
    let mut response = http::Response::new(Body::new(body));
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

/// The body of an SSE answer: the events there first, not yet sent, the
/// source of the rest (given as they come, through no buffer), and the
/// keep-alive timer.
///
/// The timer is not reset at each event (a reset per event per stream is
/// what a change fanned out to many streams would pay): an event records
/// when it was sent, and the timer, when it fires, waits on until
/// [`KEEP_ALIVE`] after the last event if there was one since.
pub(crate) struct Stream<S> {
    pending: VecDeque<Bytes>,
    source: S,
    keep_alive: Pin<Box<tokio::time::Sleep>>,
    last_sent: tokio::time::Instant,
    done: bool,
}

impl<S: EventSource> http_body::Body for Stream<S> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.pending.pop_front() {
                this.last_sent = tokio::time::Instant::now();
                return Poll::Ready(Some(Ok(Frame::data(event))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.source.poll_event(cx) {
                // Given as it comes: `pending` holds only what was there
                // first, so a stream keeps no buffer for its later events.
                Poll::Ready(Some(event)) => {
                    this.done = this.source.finished();
                    this.last_sent = tokio::time::Instant::now();
                    return Poll::Ready(Some(Ok(Frame::data(event))));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    continue;
                }
                Poll::Pending => {}
            }
            // With a gate, the timer is polled only when it (or another
            // rare source) woke, and with the gate's waker.
            let fired = match this.source.gate() {
                None => this.keep_alive.as_mut().poll(cx).is_ready(),
                Some(gate) if gate.take(Gate::WRITER) => {
                    let waker = Waker::from(gate.clone());
                    let fired = this
                        .keep_alive
                        .as_mut()
                        .poll(&mut Context::from_waker(&waker))
                        .is_ready();
                    if fired {
                        // Set anew below, then polled again to register (what
                        // the `Future` contract asks; tokio 1.54 happens to
                        // keep the waker across a reset, so no test can tell).
                        gate.again(Gate::WRITER);
                    }
                    fired
                }
                Some(_) => false,
            };
            if fired {
                let due = this.last_sent + KEEP_ALIVE;
                let now = tokio::time::Instant::now();
                if due > now {
                    // An event went out since: silent for less than KEEP_ALIVE.
                    this.keep_alive.as_mut().reset(due);
                } else {
                    this.keep_alive.as_mut().reset(now + KEEP_ALIVE);
                    this.last_sent = now;
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                        KEEP_ALIVE_COMMENT,
                    )))));
                }
                continue;
            }
            return Poll::Pending;
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.pending.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    /// Says its messages one poll apart, then ends.
    struct Script(VecDeque<&'static str>, bool);

    impl MessageSource for Script {
        fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
            if self.1 {
                self.1 = false;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.1 = true;
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|m: &'static str| Bytes::from_static(m.as_bytes())),
            )
        }
    }

    #[tokio::test]
    async fn each_message_is_one_event_and_the_stream_ends_with_the_source() {
        let response = respond(
            [Bytes::from_static(b"{\"a\":1}")],
            Script(VecDeque::from(["{\"b\":2}", "{\"c\":3}"]), false),
        );
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        assert_eq!(response.headers()["x-accel-buffering"], "no");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            &body[..],
            b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\n"
        );
    }

    /// Rule (issue 26 §3): an event from the source is given as it comes;
    /// a stream keeps no buffer for it (a buffer kept would be memory every
    /// idle stream holds after its first event).
    #[tokio::test]
    async fn events_from_the_source_leave_no_buffer_behind() {
        let mut stream = Stream {
            pending: VecDeque::new(),
            done: false,
            source: Messages(Script(VecDeque::from(["{\"b\":2}", "{\"c\":3}"]), false)),
            keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
            last_sent: tokio::time::Instant::now(),
        };
        let mut said = Vec::new();
        while let Some(frame) = stream.frame().await {
            said.extend_from_slice(&frame.unwrap().into_data().unwrap());
        }
        assert_eq!(&said[..], b"data: {\"b\":2}\n\ndata: {\"c\":3}\n\n");
        assert_eq!(stream.pending.capacity(), 0);
    }

    /// Never says anything.
    struct Silent;

    impl MessageSource for Silent {
        fn poll_message(&mut self, _: &mut Context<'_>) -> Poll<Option<Bytes>> {
            Poll::Pending
        }
    }

    #[tokio::test(start_paused = true)]
    async fn silence_gets_a_keep_alive_comment() {
        let mut body = respond([], Silent).into_body();
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&frame[..], KEEP_ALIVE_COMMENT);
    }

    /// Says one message `after` the stream opens, then nothing.
    struct Later(Pin<Box<tokio::time::Sleep>>, bool);

    impl MessageSource for Later {
        fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
            if self.1 || self.0.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.1 = true;
            Poll::Ready(Some(Bytes::from_static(b"{}")))
        }
    }

    /// The keep-alive comes a full KEEP_ALIVE after the last event, not at
    /// the timer's first tick (the timer is not reset per event).
    #[tokio::test(start_paused = true)]
    async fn the_keep_alive_waits_a_full_interval_after_the_last_event() {
        let opened = tokio::time::Instant::now();
        let later = Duration::from_secs(10);
        let mut body = respond([], Later(Box::pin(tokio::time::sleep(later)), false)).into_body();
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&frame[..], b"data: {}\n\n");
        assert_eq!(opened.elapsed(), later);
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&frame[..], KEEP_ALIVE_COMMENT);
        assert_eq!(opened.elapsed(), later + KEEP_ALIVE);
        // And every KEEP_ALIVE of silence after that.
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&frame[..], KEEP_ALIVE_COMMENT);
        assert_eq!(opened.elapsed(), later + KEEP_ALIVE * 2);
    }
}
