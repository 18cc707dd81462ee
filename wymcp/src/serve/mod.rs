//! Serving a chain's router over TCP, hardened against hostile networks.
//!
//! [`serve()`] and [`serve_with()`] run wymcp's own accept loop on hyper: each
//! connection speaks HTTP/1.1 or HTTP/2 — a client that opens with the HTTP/2
//! preface (prior knowledge, "h2c") gets HTTP/2, any other HTTP/1.1 — and
//! every request carries a [`BoundTo`](crate::origin::BoundTo) extension, so
//! [`OriginCheck`](crate::stages::OriginCheck) knows whether the server is
//! loopback-bound without being told twice.
//!
//! Every limit the loop enforces is a [`ServeConfig`] setting with a default
//! meant for a public endpoint:
//!
//! | setting | default | what a client over it meets |
//! |---|---|---|
//! | [`header_read_timeout`](ServeConfig::header_read_timeout) | 10 s | the connection closed (no answer) |
//! | [`idle_timeout`](ServeConfig::idle_timeout) | 60 s | the connection closed (HTTP/2: `GOAWAY`) |
//! | [`max_connections`](ServeConfig::max_connections) | 4,096 | not accepted until one closes (the kernel's backlog holds it) |
//! | [`max_connections_per_peer`](ServeConfig::max_connections_per_peer) | 64 | closed as soon as accepted (a trusted proxy is not counted) |
//! | [`trusted_proxies`](ServeConfig::trusted_proxies) | none | — (whose forwarding headers name the client) |
//! | [`max_headers`](ServeConfig::max_headers) | 100 | HTTP/1.1: `431`, connection closed |
//! | [`max_header_bytes`](ServeConfig::max_header_bytes) | 131,072 | HTTP/1.1: `431` and closed; HTTP/2: `431` on the stream |
//! | [`h2_max_concurrent_streams`](ServeConfig::h2_max_concurrent_streams) | 100 | streams past it refused (`RST_STREAM REFUSED_STREAM`) |
//! | [`h2_max_pending_accept_reset_streams`](ServeConfig::h2_max_pending_accept_reset_streams) | 20 | "rapid reset": `GOAWAY ENHANCE_YOUR_CALM`, connection closed |
//! | [`h2_max_local_error_reset_streams`](ServeConfig::h2_max_local_error_reset_streams) | 256 | `GOAWAY ENHANCE_YOUR_CALM`, connection closed |
//! | [`drain_timeout`](ServeConfig::drain_timeout) | 30 s | on shutdown, connections still open after it are dropped |
//!
//! The body's own ceilings (size, stalled reads) are the parse step's, set
//! with [`Limits`](crate::Limits) on the [`Server`](crate::Server).
//!
//! **The header read timeout** bounds everything before a request head is
//! whole: the first bytes of a connection (while the protocol is not yet
//! known), and each HTTP/1.1 request head, including the wait for the next
//! head on a kept-alive connection. A client trickling header bytes is cut
//! off when it runs out, whatever it sends meanwhile.
//!
//! **The idle timeout** closes a connection with no request in flight for
//! that long: since its last request ended (or since it was accepted). A
//! request in flight (a slow handler, an open listen stream) keeps its
//! connection, however quiet; bytes alone do not (an HTTP/2 client sending
//! only `PING`s is idle).
//!
//! **An over-long request line** (HTTP/1.1: more bytes before a
//! connection's first line ends than the longest request-target `http::Uri`
//! holds, 65,534, and its method and version) is answered `414 URI Too Long`
//! and the connection closed, whatever the header limit (a head whose
//! headers are too large is `431`; so is an over-long line of a later
//! request on a kept-alive connection, which hyper measures).
//!
//! **The client address** of each request is the peer's, or, when the peer
//! is one of the [trusted proxies](ServeConfig::trusted_proxies), the one its
//! forwarding headers name; every request carries it as a
//! [`ClientAddr`](crate::ClientAddr) extension, and the limits counted per
//! caller count an unauthenticated caller by it.
//!
//! **Graceful shutdown.** With [`Serve::with_graceful_shutdown`], when the
//! signal fires the listener is closed (new connections are refused), every
//! listen stream of the servers named with [`Serve::closing_streams_of`] gets
//! its clean close (the `complete` result, then the end of the stream), every
//! connection is told to finish (HTTP/1.1: no keep-alive after the request
//! in flight; HTTP/2: `GOAWAY`), and the future resolves once every
//! connection is done, or after the [drain timeout](ServeConfig::drain_timeout).
//!
//! A server served some other way (TLS, a Unix socket, another accept loop)
//! layers [`BoundTo`](crate::origin::BoundTo) onto its router itself, or names its address with
//! [`ServerBuilder::bound_to`](crate::ServerBuilder::bound_to).

mod accept;
mod config;
mod connection;
mod dev;
#[cfg(feature = "tls")]
mod tls;

pub use accept::{Serve, serve, serve_with, shutdown_signal};
pub use config::ServeConfig;
pub use dev::{DevTokens, arg_or_env};
#[cfg(feature = "tls")]
pub use tls::{ClientAuth, Tls, TlsBuilder, TlsError};
