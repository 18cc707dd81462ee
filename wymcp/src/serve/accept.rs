//! The accept loop: connections admitted under the limits, served, and
//! drained on shutdown.

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

use crate::ledger::{Grouping, Ledger};
use crate::server::Server;
use crate::surface::ChangeBus;

use super::config::ServeConfig;
use super::connection;

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
        ledger: None,
        #[cfg(feature = "tls")]
        tls: None,
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
    ledger: Option<(Ledger, Grouping)>,
    #[cfg(feature = "tls")]
    tls: Option<super::tls::Tls>,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("config", &self.config)
            .field("graceful", &self.signal.is_some())
            .field("tls", &self.tls_on())
            .finish_non_exhaustive()
    }
}

impl Serve {
    /// Shuts down gracefully when `signal` resolves (see the
    /// [module docs](super)); the serving future then resolves `Ok(())`.
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

    /// Counts what the accept loop holds for a peer before any request
    /// exists (TLS handshakes in progress, [`Kind::Handshakes`](crate::ledger::Kind::Handshakes)) in
    /// `server`'s [ledger](crate::ledger), with its shares
    /// ([`Limits::handshakes`](crate::Limits::handshakes)) and its grouping
    /// of addresses. Without it they are counted in a ledger of the default
    /// shares of the loop's own.
    pub fn counting_in(mut self, server: &Server) -> Self {
        self.ledger = Some((server.ledger().clone(), server.limits().grouping));
        self
    }

    /// Terminates TLS with `tls` (see [`Tls`](super::Tls)): every connection
    /// is a TLS handshake first, within
    /// [`tls_handshake_timeout`](ServeConfig::tls_handshake_timeout) and
    /// holding a [`Kind::Handshakes`](crate::ledger::Kind::Handshakes) place of the ledger meanwhile, then
    /// HTTP/2 when ALPN chose `h2`, else HTTP/1.1 (or HTTP/2 with prior
    /// knowledge). While served, the certificate files are looked at for
    /// changes (and reloaded on `SIGHUP`).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: super::tls::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    fn tls_on(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
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
        ledger,
        #[cfg(feature = "tls")]
        tls,
    } = serve;
    let (ledger, grouping) = ledger.unwrap_or_default();
    let bound = listener.local_addr().ok();
    let config = Arc::new(config);
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let peers = Arc::new(connection::Peers::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut signal = signal.unwrap_or_else(|| Box::pin(std::future::pending()));
    #[cfg(feature = "tls")]
    let watcher = tls
        .clone()
        .map(|tls| tokio::spawn(tls.watch(stop_rx.clone())));

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
        #[cfg(feature = "tls")]
        if let Some(tls) = &tls {
            // The handshake's place, taken before anything is read: a peer
            // holding its share of handshakes in progress (or the server
            // at its cap) gets no more, and is closed at once.
            let place = match ledger.take(
                crate::ledger::Kind::Handshakes,
                &crate::ledger::Caller::address(peer.ip(), grouping),
                1,
            ) {
                Ok(place) => place,
                Err(refusal) => {
                    tracing::debug!(
                        target: "wymcp::serve",
                        %peer,
                        share = refusal.is_share(),
                        "no place for another TLS handshake; closed"
                    );
                    drop(stream);
                    continue;
                }
            };
            let acceptor = tls.acceptor().clone();
            connections.spawn(async move {
                let mut stop = stop;
                let handshake = tokio::select! {
                    done = tokio::time::timeout(config.tls_handshake_timeout, acceptor.accept(stream)) => done,
                    _ = stop.changed() => return,
                };
                drop(place);
                let stream = match handshake {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(error)) => {
                        tracing::debug!(target: "wymcp::serve", %peer, %error, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(target: "wymcp::serve", %peer, "no TLS handshake within the timeout");
                        return;
                    }
                };
                let (_, session) = stream.get_ref();
                let handshake = connection::Handshake {
                    h2: session.alpn_protocol() == Some(b"h2"),
                    certificate: session
                        .peer_certificates()
                        .and_then(<[_]>::first)
                        .map(|cert| crate::auth::ClientCertificate::from_der(cert.to_vec())),
                };
                connection::serve(stream, peer, bound, router, &config, stop, Some(handshake)).await;
                drop(peer_slot);
                drop(permit);
            });
            continue;
        }
        let _ = &ledger;
        let _ = grouping;
        connections.spawn(async move {
            connection::serve(stream, peer, bound, router, &config, stop, None).await;
            drop(peer_slot);
            drop(permit);
        });
    }

    // Graceful shutdown: refuse new connections, close listen streams, tell
    // every connection to finish, wait for them up to the drain timeout.
    drop(listener);
    #[cfg(feature = "tls")]
    if let Some(watcher) = watcher {
        watcher.abort();
    }
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
