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
//! with [`Limits`](crate::Limits) on the [`Server`].
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

use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::server::Server;
use crate::surface::ChangeBus;

mod config;
mod connection;

pub use config::ServeConfig;

/// Serves `router` on `listener` with the default [`ServeConfig`]:
/// HTTP/1.1, and HTTP/2 with prior knowledge.
///
/// The returned [`Serve`] runs when awaited, until its shutdown signal (see
/// [`Serve::with_graceful_shutdown`]); without one, forever.
///
/// ```no_run
/// # async fn run(router: wymcp::axum::Router) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// wymcp::serve(listener, router).await
/// # }
/// ```
pub fn serve(listener: TcpListener, router: Router) -> Serve {
    serve_with(listener, router, ServeConfig::default())
}

/// Serves `router` on `listener` with the limits of `config`.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use wymcp::serve::{ServeConfig, shutdown_signal};
///
/// let server = Arc::new(wymcp::Server::builder().build()?);
/// let router = wymcp::chain::post::router(server.clone());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// let config = ServeConfig::default().header_read_timeout(Duration::from_secs(5));
/// wymcp::serve_with(listener, router, config)
///     .with_graceful_shutdown(shutdown_signal())
///     .closing_streams_of(&server)
///     .await?;
/// # Ok(())
/// # }
/// ```
pub fn serve_with(listener: TcpListener, router: Router, config: ServeConfig) -> Serve {
    Serve {
        listener,
        router,
        config,
        signal: None,
        buses: Vec::new(),
    }
}

/// A future that resolves when SIGTERM or SIGINT (Ctrl-C) arrives: the usual
/// signal for [`Serve::with_graceful_shutdown`]. Never resolves if the
/// handlers cannot be installed.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!(target: "wymcp::serve", "shutdown signal received");
}

type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The serving future of [`serve()`] / [`serve_with()`]; await it to serve.
#[must_use = "a Serve does nothing until awaited"]
pub struct Serve {
    listener: TcpListener,
    router: Router,
    config: ServeConfig,
    signal: Option<Signal>,
    buses: Vec<ChangeBus>,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("config", &self.config)
            .field("graceful", &self.signal.is_some())
            .finish_non_exhaustive()
    }
}

impl Serve {
    /// Shuts down gracefully when `signal` resolves (see the
    /// [module docs](self)); the serving future then resolves `Ok(())`.
    pub fn with_graceful_shutdown<F>(mut self, signal: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.signal = Some(Box::pin(signal));
        self
    }

    /// On graceful shutdown, gives `server`'s open listen streams their clean
    /// close before the connections are drained. Without it a listen stream
    /// would hold its connection until the drain timeout.
    pub fn closing_streams_of(mut self, server: &Server) -> Self {
        self.buses.push(server.changes().clone());
        self
    }

    /// The address served on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl IntoFuture for Serve {
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(run(self))
    }
}

async fn run(serve: Serve) -> io::Result<()> {
    let Serve {
        listener,
        router,
        config,
        signal,
        buses,
    } = serve;
    let bound = listener.local_addr().ok();
    let config = Arc::new(config);
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let peers = Arc::new(connection::Peers::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut signal = signal.unwrap_or_else(|| Box::pin(std::future::pending()));

    loop {
        // Reap finished connections so the set does not grow.
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = &mut signal => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and the like: wait, then go on.
                    tracing::warn!(target: "wymcp::serve", %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(peer_slot) = peers.admit(peer.ip(), &config) else {
            tracing::debug!(target: "wymcp::serve", %peer, "the peer holds its most connections; closed");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let config = config.clone();
        let stop = stop_rx.clone();
        connections.spawn(async move {
            connection::serve(stream, peer, bound, router, &config, stop).await;
            drop(peer_slot);
            drop(permit);
        });
    }

    // Graceful shutdown: refuse new connections, close listen streams, tell
    // every connection to finish, wait for them up to the drain timeout.
    drop(listener);
    let closed: usize = buses.iter().map(ChangeBus::close_all).sum();
    let _ = stop_tx.send(true);
    tracing::info!(
        target: "wymcp::serve",
        connections = connections.len(),
        listen_streams = closed,
        "draining"
    );
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            target: "wymcp::serve",
            connections = connections.len(),
            "drain timeout: dropping the connections left"
        );
        connections.shutdown().await;
    }
    Ok(())
}
