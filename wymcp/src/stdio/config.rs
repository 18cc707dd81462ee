//! The limits of the stdio transport, each a setting with a safe default.

use std::time::Duration;

use crate::auth::Principal;

/// The limits of [`serve_with()`](super::serve_with) and
/// [`serve_io()`](super::serve_io); see the [module docs](super) for what a
/// client over each one meets.
///
/// ```
/// use std::time::Duration;
/// use wymcp::stdio::StdioConfig;
///
/// let config = StdioConfig::default()
///     .max_line_bytes(1 << 20)
///     .max_in_flight(16)
///     .drain_timeout(Duration::from_secs(2));
/// assert_eq!(config.max_line_bytes, 1 << 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The longest line read, in bytes, its line ending (`\n` or `\r\n`)
    /// not counted, inclusive. Default 8,000,000 (the HTTP body ceiling's
    /// default).
    pub max_line_bytes: usize,
    /// How many requests may be in flight at once (running handlers and
    /// open `subscriptions/listen` streams). Default 100.
    pub max_in_flight: usize,
    /// How long the server waits, once stdin is closed, for the requests in
    /// flight to finish. Default 10 s.
    pub drain_timeout: Duration,
    /// Who every call over this transport comes from: stdio carries no
    /// credentials (the specification has a stdio server take them from its
    /// environment, never from the authorization flow), so a deployment that
    /// knows who launched it says so here. Default: nobody, as a server
    /// without auth serves HTTP.
    pub principal: Option<Principal>,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            max_line_bytes: 8_000_000,
            max_in_flight: 100,
            drain_timeout: Duration::from_secs(10),
            principal: None,
        }
    }
}

impl StdioConfig {
    /// Sets [`max_line_bytes`](Self::max_line_bytes) (at least 1).
    #[must_use]
    pub fn max_line_bytes(mut self, max: usize) -> Self {
        self.max_line_bytes = max.max(1);
        self
    }

    /// Sets [`max_in_flight`](Self::max_in_flight) (at least 1).
    #[must_use]
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// Sets [`drain_timeout`](Self::drain_timeout).
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Sets [`principal`](Self::principal).
    #[must_use]
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }
}
