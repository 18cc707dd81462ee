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

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::protocol::{jsonrpc, meta};

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
    tx: Option<mpsc::UnboundedSender<Bytes>>,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

/// The receiving side of an [`Emitter`]: what its request's transport
/// drains (see [`Running`](super::call::Running)).
#[derive(Debug)]
pub(crate) struct Notifications {
    /// `None` when the request asked for nothing an emitter could send: no
    /// channel is made, and the handler's answer is awaited as it is.
    pub(crate) rx: Option<mpsc::UnboundedReceiver<Bytes>>,
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
        self.send("notifications/progress", &params)
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
        self.send("notifications/message", &params)
    }

    /// Sends a message the server made whole (a 2025 call's mid-call
    /// request to the client) on the request's stream, whatever the request
    /// asked for. Returns whether the stream is still open.
    pub(crate) fn send_message(&self, bytes: Vec<u8>) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.send(Bytes::from(bytes)).is_ok())
    }

    fn send(&self, method: &str, params: &Map<String, Value>) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        let bytes = jsonrpc::notification(method, params);
        tx.send(Bytes::from(bytes)).is_ok()
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
        assert!(n.rx.as_mut().unwrap().try_recv().is_err());
        let (legacy, _n) = Emitter::for_legacy_params(None);
        assert!(legacy.logs(LogLevel::Info) && !legacy.logs(LogLevel::Debug));
        assert!(!Emitter::silent().log(LogLevel::Emergency, None, json!(1)));
    }
}
