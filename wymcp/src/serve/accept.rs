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
