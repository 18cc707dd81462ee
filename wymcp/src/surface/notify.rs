//! A request's progress and log notifications, as a handler sends them.
//!
//! * [`Emitter::for_params`] reads `_meta.progressToken` and
//!   `_meta["io.modelcontextprotocol/logLevel"]` (2026-07-28: no `logLevel`,
//!   no `notifications/message`, ever). [`Emitter::for_legacy_params`] is the
//!   2025-11-25 flavour: that revision sets the level with
//!   `logging/setLevel`, which a stateless server cannot remember, so the
//!   server's own default applies: `info` and above.
//! * What the client did not ask for (no progressToken, no logLevel, a level
//!   below it) is dropped at the emitter, which returns `false`.
//! * What is sent goes to the request's [`Notifications`], which its
//!   transport drains: over HTTP the answer turns into an SSE stream the
//!   moment the first notification is there (see
//!   [`Dispatch`](crate::stages::Dispatch)). Nothing sent after the
//!   request's answer is delivered.
//!
//! **What a request may queue.** A handler sends without waiting (its
//! `progress()` and `log()` are not async), and its client may not read:
//! what waits in the queue is bounded by the request's own bound
//! ([`Limits::notification_bytes_per_request`](crate::Limits::notification_bytes_per_request))
//! and is a place of the server's [`ledger`](crate::ledger)
//! ([`Kind::Notifications`]: bytes queued, per caller and in all). When a
//! progress notification does not fit, it replaces the one still queued
//! (progress is a state: the newest is what counts) and makes the rest of
//! its room from the newest messages queued, which are dropped; anything
//! else that does not fit is dropped, and so is every log message after it
//! until the client reads. The emitter answers `false` for what it
//! dropped, counts it ([`Emitter::dropped`]), and the first drop of a
//! request is logged. Nothing
//! blocks, nothing grows past the bounds, and the request is answered as
//! usual.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::ledger::{Caller, Kind, Ledger, Place};
use crate::protocol::{jsonrpc, meta};

/// The default bound of one request's queued notifications, in bytes.
pub(crate) const DEFAULT_NOTIFICATION_BYTES_PER_REQUEST: usize = 1024 * 1024;

/// The log level a 2025-11-25 request gets (its `logging/setLevel` is not
/// remembered): `info` and above, as a server with no instruction chooses.
pub const LEGACY_LOG_LEVEL: LogLevel = LogLevel::Info;

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
    tx: Option<Arc<Queue>>,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

/// The receiving side of an [`Emitter`]: what its request's transport
/// drains (see [`Running`](super::call::Running)).
#[derive(Debug)]
pub(crate) struct Notifications {
    /// `None` when the request asked for nothing an emitter could send: no
    /// queue is made, and the handler's answer is awaited as it is.
    pub(crate) rx: Option<Receiver>,
}

/// A request's queue of notifications not yet given to its transport.
#[derive(Debug)]
pub(crate) struct Queue {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    items: VecDeque<Bytes>,
    /// How many items were ever taken from the front: an item's position
    /// is its index plus this.
    taken: u64,
    /// The position of the last progress notification queued, while it is.
    progress: Option<u64>,
    /// The bytes queued.
    bytes: usize,
    /// The most bytes the request may queue.
    per_request: usize,
    /// The bytes' place in the ledger, when the request is counted in one.
    place: Option<Place>,
    /// The transport is gone or took the answer: nothing more is queued.
    closed: bool,
    /// Notifications that did not fit.
    dropped: u64,
    /// A notification did not fit and nothing was taken since: a log
    /// message is dropped without being rendered.
    refusing: bool,
    waker: Option<Waker>,
}

/// What a notification is, for what happens when it does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// A state: the newest replaces a queued one.
    Progress,
    /// A log message or a message of the server's: dropped.
    Other,
}

impl Queue {
    fn new(per_request: usize) -> Self {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                taken: 0,
                progress: None,
                bytes: 0,
                per_request,
                place: None,
                closed: false,
                dropped: 0,
                refusing: false,
                waker: None,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `bytes`, or says why not: `false` when the queue is closed or
    /// the notification does not fit (and is not a progress that replaces
    /// the queued one).
    fn push(&self, bytes: Bytes, what: What) -> bool {
        let mut state = self.state();
        if state.closed {
            return false;
        }
        let len = bytes.len();
        if state.fits(len) {
            state.enqueue(bytes, what);
            return true;
        }
        if what == What::Progress {
            // The newest progress supersedes the one queued, and makes its
            // room from the newest messages queued, which are dropped.
            if let Some(at) = state.progress.take()
                && let Ok(index) = usize::try_from(at - state.taken)
                && let Some(old) = state.items.remove(index)
            {
                state.release(old.len());
            }
            while !state.fits(len) {
                let Some(newest) = state.items.pop_back() else {
                    state.refuse();
                    return false;
                };
                state.release(newest.len());
                state.refuse();
            }
            state.enqueue(bytes, what);
            return true;
        }
        state.refuse();
        false
    }

    /// Whether a notification other than progress would be dropped now:
    /// the queue is closed, or refused one and nothing was taken since.
    fn refuses(&self) -> bool {
        let mut state = self.state();
        if state.closed {
            return true;
        }
        if state.refusing {
            state.refuse();
            return true;
        }
        false
    }
}

impl State {
    /// Queues `bytes`, already accounted for, remembers where a progress
    /// notification stands, and wakes the transport.
    fn enqueue(&mut self, bytes: Bytes, what: What) {
        let at = self.taken + self.items.len() as u64;
        self.items.push_back(bytes);
        if what == What::Progress {
            self.progress = Some(at);
        }
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// Counts one notification dropped.
    fn refuse(&mut self) {
        self.refusing = true;
        self.dropped += 1;
        if self.dropped == 1 {
            tracing::debug!(
                target: "wymcp::notify",
                "a request's client is not reading its notifications: the queue is full; \
                 progress is replaced, other notifications are dropped"
            );
        }
    }

    /// Accounts `more` bytes if the request's bound and its ledger place
    /// allow them.
    fn fits(&mut self, more: usize) -> bool {
        if self.bytes.saturating_add(more) > self.per_request {
            return false;
        }
        if let Some(place) = &mut self.place
            && place.grow(more).is_err()
        {
            return false;
        }
        self.bytes += more;
        true
    }

    /// Gives back `less` bytes.
    fn release(&mut self, less: usize) {
        self.bytes -= less;
        if let Some(place) = &mut self.place {
            place.shrink(less);
        }
    }

    fn pop(&mut self) -> Option<Bytes> {
        let item = self.items.pop_front()?;
        self.refusing = false;
        if self.progress == Some(self.taken) {
            self.progress = None;
        }
        self.taken += 1;
        self.release(item.len());
        Some(item)
    }

    fn close(&mut self) {
        self.closed = true;
        self.items.clear();
        self.progress = None;
        self.bytes = 0;
        self.place = None;
        self.waker = None;
    }
}

/// The transport's side of a request's [`Queue`]: closes it when dropped.
#[derive(Debug)]
pub(crate) struct Receiver {
    queue: Arc<Queue>,
}

impl Receiver {
    /// The next notification queued; `Pending` (the waker kept) while
    /// there is none, `None` once closed.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut state = self.queue.state();
        if let Some(item) = state.pop() {
            return Poll::Ready(Some(item));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The next notification queued, if any.
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        self.queue.state().pop()
    }

    /// Queues nothing more; what is queued stays to be taken.
    pub(crate) fn close(&mut self) {
        self.queue.state().closed = true;
    }

    /// The bytes queued now.
    #[cfg(test)]
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queue.state().bytes
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.queue.state().close();
    }
}

impl Emitter {
    /// An emitter for a request that asked for progress under `progress_token`
    /// (when `Some`) and for log messages at or above `log_level` (when `Some`).
    #[must_use]
    pub(crate) fn new(
        progress_token: Option<Value>,
        log_level: Option<LogLevel>,
    ) -> (Emitter, Notifications) {
        if progress_token.is_none() && log_level.is_none() {
            // Nothing can be sent: no channel (most requests take this path).
            return (Emitter::silent(), Notifications { rx: None });
        }
        let queue = Arc::new(Queue::new(DEFAULT_NOTIFICATION_BYTES_PER_REQUEST));
        (
            Emitter {
                tx: Some(Arc::clone(&queue)),
                progress_token,
                log_level,
            },
            Notifications {
                rx: Some(Receiver { queue }),
            },
        )
    }

    /// Bounds what the request queues: at most `per_request` bytes, each a
    /// byte of `caller`'s place of [`Kind::Notifications`] in `ledger`.
    #[must_use]
    pub(crate) fn bounded(self, ledger: &Ledger, caller: &Caller, per_request: usize) -> Self {
        if let Some(queue) = &self.tx {
            let mut state = queue.state();
            state.per_request = per_request;
            // A place of nothing is always given; it grows byte by byte.
            state.place = ledger.take(Kind::Notifications, caller, 0).ok();
            if state.place.is_none() {
                state.per_request = 0;
            }
        }
        self
    }

    /// How many notifications did not fit in the request's queue (its
    /// client was not reading) and were dropped.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.tx.as_ref().map_or(0, |queue| queue.state().dropped)
    }

    /// The emitter of a 2026-07-28 request with these `params`: progress when
    /// `_meta.progressToken` is a string or an integer, log messages when
    /// `_meta["io.modelcontextprotocol/logLevel"]` names a level.
    #[must_use]
    pub(crate) fn for_params(params: Option<&Value>) -> (Emitter, Notifications) {
        let meta = params.and_then(|p| p.get("_meta"));
        let level = meta
            .and_then(|m| m.get(meta::LOG_LEVEL))
            .and_then(Value::as_str)
            .and_then(LogLevel::parse);
        Self::new(progress_token(meta), level)
    }

    /// The emitter of a 2025-11-25 request: progress as above, and log
    /// messages at [`LEGACY_LOG_LEVEL`] and above, since the level that
    /// revision sets with `logging/setLevel` cannot be remembered by a
    /// stateless server.
    #[must_use]
    pub(crate) fn for_legacy_params(params: Option<&Value>) -> (Emitter, Notifications) {
        let meta = params.and_then(|p| p.get("_meta"));
        Self::new(progress_token(meta), Some(LEGACY_LOG_LEVEL))
    }

    /// An emitter that sends nothing (for handlers run outside a request).
    #[must_use]
    pub(crate) fn silent() -> Emitter {
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
        params.insert(meta::PROGRESS_TOKEN.into(), token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        self.send("notifications/progress", &params, What::Progress)
    }

    /// Sends `notifications/message` when the request asked for log messages
    /// at `level` or below it. Returns whether it was sent.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) -> bool {
        if !self.logs(level) {
            return false;
        }
        if self.tx.as_ref().is_some_and(|queue| queue.refuses()) {
            return false;
        }
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), json!(logger));
        }
        params.insert("data".into(), data);
        self.send("notifications/message", &params, What::Other)
    }

    /// Sends a message the server made whole (a 2025 call's mid-call
    /// request to the client) on the request's stream, whatever the request
    /// asked for. Returns whether the stream is still open.
    pub(crate) fn send_message(&self, bytes: Vec<u8>) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.push(Bytes::from(bytes), What::Other))
    }

    fn send(&self, method: &str, params: &Map<String, Value>, what: What) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        let bytes = jsonrpc::notification(method, params);
        tx.push(Bytes::from(bytes), what)
    }
}

fn progress_token(meta: Option<&Value>) -> Option<Value> {
    meta.and_then(|m| m.get(meta::PROGRESS_TOKEN))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(meta: Value) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), json!("t"));
        params.insert("_meta".into(), meta);
        Value::Object(params)
    }

    fn bounded(per_request: usize, ledger: &Ledger, caller: &str) -> (Emitter, Notifications) {
        let meta = json!({"progressToken": "p", meta::LOG_LEVEL: "debug"});
        let (e, n) = Emitter::for_params(Some(&params(meta)));
        (
            e.bounded(ledger, &Caller::principal(caller), per_request),
            n,
        )
    }

    fn ledger(per_caller: usize, global: usize) -> Ledger {
        Ledger::new(|_| crate::ledger::Share {
            per_caller,
            global,
            retry_after: std::time::Duration::from_secs(1),
        })
    }

    /// Rule (issue 23, item 11): what a request queues is bounded by its
    /// own bound and counted in the ledger; beyond it log messages are
    /// dropped and counted, the newest progress replaces the queued one;
    /// reading makes room; the place is given back when the transport
    /// goes.
    #[test]
    fn the_queue_is_bounded_progress_replaced_and_logs_dropped() {
        let ledger = ledger(1 << 20, 1 << 20);
        let (e, mut n) = bounded(2_000, &ledger, "a");
        let mut sent = 0;
        for i in 0..1_000_000 {
            if e.log(LogLevel::Info, None, json!(i)) {
                sent += 1;
            }
        }
        assert!(sent > 10 && sent < 40, "{sent}");
        assert_eq!(e.dropped(), 1_000_000 - sent);
        let held = ledger.held(Kind::Notifications);
        assert!(held <= 2_000 && held > 1_500, "{held}");
        assert_eq!(n.rx.as_ref().unwrap().queued_bytes(), held);
        // Progress always gets in: the newest, taking the room it needs
        // from the newest log messages.
        for i in 1..=1_000 {
            assert!(e.progress(f64::from(i), Some(1000.0), None));
        }
        assert!(ledger.held(Kind::Notifications) <= 2_000);
        let rx = n.rx.as_mut().unwrap();
        let mut progress = Vec::new();
        while let Some(message) = rx.try_recv() {
            let message: Value = serde_json::from_slice(&message).unwrap();
            if message["method"] == "notifications/progress" {
                progress.push(message["params"]["progress"].clone());
            }
        }
        assert_eq!(progress, [json!(1000)]);
        assert_eq!(ledger.held(Kind::Notifications), 0);
        // Read: room again.
        assert!(e.log(LogLevel::Info, None, json!("again")));
        assert!(ledger.held(Kind::Notifications) > 0);
        drop(n);
        assert_eq!(ledger.held(Kind::Notifications), 0, "given back");
        assert!(!e.log(LogLevel::Info, None, json!("gone")));
        assert!(!e.progress(1.0, None, None));
    }

    /// Rule (issue 23, item 11): one caller's requests together hold at
    /// most its share of the ledger; another caller is not held back.
    #[test]
    fn a_callers_requests_share_its_place() {
        let ledger = ledger(3_000, 1 << 20);
        let (first, _n1) = bounded(2_000, &ledger, "a");
        let (second, _n2) = bounded(2_000, &ledger, "a");
        let (other, _n3) = bounded(2_000, &ledger, "b");
        for e in [&first, &second, &other] {
            for i in 0..10_000 {
                e.log(LogLevel::Info, None, json!(i));
            }
        }
        let a = ledger.held_by(Kind::Notifications, &Caller::principal("a"));
        let b = ledger.held_by(Kind::Notifications, &Caller::principal("b"));
        assert!(a <= 3_000 && a > 2_500, "{a}");
        assert!(b <= 2_000 && b > 1_500, "{b}");
        assert!(second.dropped() > first.dropped());
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
        let (e, _n) = Emitter::for_params(Some(&params(json!({meta::LOG_LEVEL: "loud"}))));
        assert!(!e.log(LogLevel::Emergency, None, json!("x")));
        let (e, mut n) = Emitter::for_params(Some(&params(json!({meta::LOG_LEVEL: "warning"}))));
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
        assert!(n.rx.as_mut().unwrap().try_recv().is_none());
        let (legacy, _n) = Emitter::for_legacy_params(None);
        assert!(legacy.logs(LogLevel::Info) && !legacy.logs(LogLevel::Debug));
        assert!(!Emitter::silent().log(LogLevel::Emergency, None, json!(1)));
    }
}
