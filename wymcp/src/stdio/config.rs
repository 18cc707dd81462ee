//! The limits of the stdio transport, each a setting with a safe default.

use std::time::Duration;

use crate::auth::Principal;

/// The default of [`StdioConfig::max_in_flight`].
const DEFAULT_MAX_IN_FLIGHT: usize = 32;

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
    /// open `subscriptions/listen` streams). Default 32: each running
    /// request holds its line and the tree parsed from it, up to ≈ 99 MB
    /// at the default limits (docs/limits.md, "Over stdio"), so this bounds
    /// what one client can make the server hold to ≈ 3.3 GB (100 allowed
    /// ≈ 10 GB).
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
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule (issue 23, item 11): the defaults bound what one stdio client
    /// can make the server hold (docs/limits.md's formula): 32 requests in
    /// flight, 8 MB lines.
    #[test]
    fn the_defaults_bound_what_a_client_can_hold() {
        let config = StdioConfig::default();
        assert_eq!(config.max_in_flight, 32);
        assert_eq!(config.max_line_bytes, 8_000_000);
        assert_eq!(config.drain_timeout, Duration::from_secs(10));
    }
}
