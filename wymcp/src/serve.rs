//! Serving a chain's router over TCP, hardened against hostile networks.
//!
//! [`serve()`] and [`serve_with()`] run wymcp's own accept loop on hyper: each
//! connection speaks HTTP/1.1 or HTTP/2 — a client that opens with the HTTP/2
//! preface (prior knowledge, "h2c") gets HTTP/2, any other HTTP/1.1 — and
//! every request carries a [`BoundTo`] extension, so
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
//! **The idle timeout** closes a connection with no request in flight and no
//! byte moved either way for that long. A request in flight (a slow handler,
//! an open listen stream) keeps its connection, however quiet.
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
//! layers [`BoundTo`] onto its router itself, or names its address with
//! [`ServerBuilder::bound_to`](crate::ServerBuilder::bound_to).

use std::convert::Infallible;
use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt as _;

use crate::Server;
use crate::listen::ChangeBus;

/// The address the server's listener is bound to, as the serving entry tells
/// the chain through a request extension.
///
/// Add it with `router.layer(axum::Extension(BoundTo(addr)))` when serving
/// without [`serve()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTo(pub SocketAddr);

/// The connection limits and timeouts of [`serve_with()`]; see the
/// [module docs](self) for what a client over each one meets.
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
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_headers: 100,
            max_header_bytes: 128 * 1024,
            h2_max_concurrent_streams: 100,
            h2_max_pending_accept_reset_streams: 20,
            h2_max_local_error_reset_streams: 256,
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// hyper's default HTTP/1.1 read buffer (8,192 + 100 × 4,096 bytes), which
/// a larger [`ServeConfig::max_header_bytes`] grows.
const HEAD_BUFFER: usize = 417_792;
/// The HTTP/2 connection preface a prior-knowledge client opens with.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

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

    /// Sets [`drain_timeout`](Self::drain_timeout).
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

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
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let config = config.clone();
        let stop = stop_rx.clone();
        connections.spawn(async move {
            connection(stream, peer, bound, router, &config, stop).await;
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

/// Serves one connection: recognises the protocol, then drives hyper's
/// connection with the idle timeout and the shutdown signal.
async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    bound: Option<SocketAddr>,
    router: Router,
    config: &ServeConfig,
    mut stop: watch::Receiver<bool>,
) {
    // The first bytes decide the protocol; a client sending none within the
    // header read timeout is dropped.
    let mut prefix = Vec::with_capacity(H2_PREFACE.len());
    let h2 = tokio::time::timeout(config.header_read_timeout, async {
        loop {
            let mut byte = [0u8; 24];
            let want = H2_PREFACE.len() - prefix.len();
            let n = stream.read(&mut byte[..want]).await?;
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            prefix.extend_from_slice(&byte[..n]);
            if !H2_PREFACE.starts_with(&prefix) {
                return Ok(false);
            }
            if prefix.len() == H2_PREFACE.len() {
                return Ok(true);
            }
        }
    });
    let h2 = tokio::select! {
        read = h2 => match read {
            Ok(Ok(h2)) => h2,
            Ok(Err(_)) => return,
            Err(_) => {
                tracing::debug!(target: "wymcp::serve", %peer, "no request within the header read timeout");
                return;
            }
        },
        _ = stop.changed() => return,
    };

    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        prefix,
        at: 0,
        stream,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
            let guard = InFlight::enter(&activity);
            if let Some(addr) = bound {
                request.extensions_mut().insert(BoundTo(addr));
            }
            let call = router.clone().oneshot(request.map(Body::new));
            async move {
                let response = match call.await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| {
                    Body::new(Guarded {
                        body,
                        _guard: guard,
                    })
                }))
            }
        })
    };

    if h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .max_concurrent_streams(config.h2_max_concurrent_streams)
            .max_pending_accept_reset_streams(config.h2_max_pending_accept_reset_streams)
            .max_local_error_reset_streams(config.h2_max_local_error_reset_streams)
            .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX));
        let conn = builder.serve_connection(io, service);
        drive(
            conn,
            hyper::server::conn::http2::Connection::graceful_shutdown,
            &activity,
            config,
            stop,
            peer,
        )
        .await;
    } else {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(config.header_read_timeout)
            .max_headers(config.max_headers)
            .max_header_size(config.max_header_bytes)
            .max_buf_size(config.max_header_bytes.max(HEAD_BUFFER));
        let conn = builder.serve_connection(io, service);
        drive(
            conn,
            hyper::server::conn::http1::Connection::graceful_shutdown,
            &activity,
            config,
            stop,
            peer,
        )
        .await;
    }
}

/// Runs a hyper connection to its end, asking it to finish when the server
/// stops or when it has been idle for the idle timeout.
async fn drive<C>(
    conn: C,
    graceful: fn(Pin<&mut C>),
    activity: &Activity,
    config: &ServeConfig,
    mut stop: watch::Receiver<bool>,
    peer: SocketAddr,
) where
    C: Future<Output = Result<(), hyper::Error>>,
{
    let mut conn = std::pin::pin!(conn);
    let mut finishing = false;
    loop {
        // Biased, the stop first: a connection woken by a request's bytes
        // after the server began to stop must learn of the stop before it
        // serves them, so the answer carries `Connection: close` (a random
        // order could serve it as keep-alive, then close).
        tokio::select! {
            biased;
            _ = stop.changed(), if !finishing => {
                finishing = true;
                graceful(conn.as_mut());
            }
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(target: "wymcp::serve", %peer, %error, "connection ended");
                }
                return;
            }
            () = activity.idle_for(config.idle_timeout), if !finishing => {
                tracing::debug!(target: "wymcp::serve", %peer, "idle timeout");
                graceful(conn.as_mut());
                // An idle connection has nothing to finish: bound the goodbye.
                let _ = tokio::time::timeout(config.header_read_timeout, conn.as_mut()).await;
                return;
            }
        }
    }
}

/// When a connection last moved a byte, and how many of its requests are in
/// flight.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Resolves once the connection has had nothing in flight and moved no
    /// byte for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + idle;
            if self.in_flight.load(Ordering::Relaxed) == 0 && Instant::now() >= deadline {
                return;
            }
            let wake = if self.in_flight.load(Ordering::Relaxed) == 0 {
                deadline
            } else {
                Instant::now() + idle
            };
            tokio::time::sleep_until(wake).await;
        }
    }
}

/// One request in flight; ends when its response body is dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl InFlight {
    fn enter(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A response body that holds its request's [`InFlight`] until dropped.
struct Guarded {
    body: Body,
    _guard: InFlight,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The TCP stream, replaying the bytes read to recognise the protocol first,
/// and noting every byte moved.
struct Tracked {
    prefix: Vec<u8>,
    at: usize,
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let rest = &self.prefix[self.at..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
