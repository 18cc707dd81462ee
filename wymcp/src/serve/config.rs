//! The limits and timeouts of the accept loop, each a setting with a
//! default meant for a public endpoint.

use std::time::Duration;

use crate::origin::IpNet;

/// The connection limits and timeouts of [`serve_with()`](super::serve_with);
/// see the [module docs](super) for what a client over each one meets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeConfig {
    /// How long a connection may take to deliver its first bytes, and each
    /// HTTP/1.1 request its whole head. Default 10 s.
    pub header_read_timeout: Duration,
    /// How long a connection may sit with no request in flight and no byte
    /// moved before it is closed. Default 60 s.
    pub idle_timeout: Duration,
    /// How many connections are served at once; more wait to be accepted.
    /// Default 4,096.
    pub max_connections: usize,
    /// How many connections one peer address may hold at once; one more is
    /// closed as soon as it is accepted. A trusted proxy's connections are
    /// not counted (they carry many clients). Default 64.
    pub max_connections_per_peer: usize,
    /// The proxies whose forwarding headers (`X-Forwarded-For`, RFC 7239
    /// `Forwarded`) name the client, for the limits counted per caller
    /// (see [`ClientAddr`](crate::ClientAddr)). Default: none, so every
    /// peer is its own client and no header is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// The most header fields an HTTP/1.1 request may carry. Default 100.
    pub max_headers: usize,
    /// The largest request head: over HTTP/1.1 the request line and headers
    /// in bytes, over HTTP/2 the header list size (RFC 9113 §6.5.2).
    /// Default 131,072.
    pub max_header_bytes: usize,
    /// The most HTTP/2 streams open at once on one connection. Default 100.
    pub h2_max_concurrent_streams: u32,
    /// The most HTTP/2 streams a client may open and reset before the server
    /// accepted them ("rapid reset", CVE-2023-44487) before the connection is
    /// closed. Default 20.
    pub h2_max_pending_accept_reset_streams: usize,
    /// The most HTTP/2 streams the server may reset for a client's protocol
    /// errors before the connection is closed. Default 256.
    pub h2_max_local_error_reset_streams: usize,
    /// How long a graceful shutdown waits for open connections. Default 30 s.
    pub drain_timeout: Duration,
    /// With [`Tls`](super::Tls): how long a connection may take from its
    /// accept to a completed TLS handshake (a client that sends no
    /// ClientHello, or half of one, is closed then). Each handshake in
    /// progress is a [`Kind::Handshakes`](crate::ledger::Kind::Handshakes)
    /// place of the ledger. Default 10 s.
    pub tls_handshake_timeout: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_connections_per_peer: 64,
            trusted_proxies: Vec::new(),
            max_headers: 100,
            max_header_bytes: 128 * 1024,
            h2_max_concurrent_streams: 100,
            h2_max_pending_accept_reset_streams: 20,
            h2_max_local_error_reset_streams: 256,
            drain_timeout: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(10),
        }
    }
}

impl ServeConfig {
    /// Sets [`header_read_timeout`](Self::header_read_timeout).
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`max_connections`](Self::max_connections) (at least 1).
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets [`max_connections_per_peer`](Self::max_connections_per_peer)
    /// (at least 1).
    #[must_use]
    pub fn max_connections_per_peer(mut self, max: usize) -> Self {
        self.max_connections_per_peer = max.max(1);
        self
    }

    /// Sets [`trusted_proxies`](Self::trusted_proxies): the load balancers
    /// and reverse proxies in front of the server, by address or network.
    ///
    /// ```
    /// let config = wymcp::ServeConfig::default()
    ///     .trusted_proxies(["10.0.0.0/8".parse()?, "127.0.0.1".parse()?]);
    /// assert_eq!(config.trusted_proxies.len(), 2);
    /// # Ok::<(), wymcp::IpNetError>(())
    /// ```
    #[must_use]
    pub fn trusted_proxies(mut self, proxies: impl IntoIterator<Item = IpNet>) -> Self {
        self.trusted_proxies = proxies.into_iter().collect();
        self
    }

    /// Sets [`max_headers`](Self::max_headers).
    #[must_use]
    pub fn max_headers(mut self, max: usize) -> Self {
        self.max_headers = max;
        self
    }

    /// Sets [`max_header_bytes`](Self::max_header_bytes).
    #[must_use]
    pub fn max_header_bytes(mut self, max: usize) -> Self {
        self.max_header_bytes = max;
        self
    }

    /// Sets [`h2_max_concurrent_streams`](Self::h2_max_concurrent_streams).
    #[must_use]
    pub fn h2_max_concurrent_streams(mut self, max: u32) -> Self {
        self.h2_max_concurrent_streams = max;
        self
    }

    /// Sets [`h2_max_pending_accept_reset_streams`](Self::h2_max_pending_accept_reset_streams).
    #[must_use]
    pub fn h2_max_pending_accept_reset_streams(mut self, max: usize) -> Self {
        self.h2_max_pending_accept_reset_streams = max;
        self
    }

    /// Sets [`h2_max_local_error_reset_streams`](Self::h2_max_local_error_reset_streams).
    #[must_use]
    pub fn h2_max_local_error_reset_streams(mut self, max: usize) -> Self {
        self.h2_max_local_error_reset_streams = max;
        self
    }

    /// Sets [`tls_handshake_timeout`](Self::tls_handshake_timeout).
    #[must_use]
    pub fn tls_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.tls_handshake_timeout = timeout;
        self
    }

    /// Sets [`drain_timeout`](Self::drain_timeout).
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}
