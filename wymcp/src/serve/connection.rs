//! One connection: the protocol recognised from its first bytes, hyper's
//! connection driven with the idle timeout and the shutdown signal, and
//! every byte moved noted.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::ServiceExt as _;

use super::config::ServeConfig;
use crate::origin::{BoundTo, ClientAddr, client_of};
use crate::sse::Gate;

/// The connections open per peer address, for
/// [`ServeConfig::max_connections_per_peer`].
#[derive(Debug, Default)]
pub(super) struct Peers(std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

/// One connection's place in its peer's count; given back when dropped.
#[derive(Debug)]
pub(super) struct PeerSlot {
    peers: Arc<Peers>,
    /// `None` for a trusted proxy, which is not counted.
    addr: Option<std::net::IpAddr>,
}

impl Peers {
    /// A place for one more connection of `addr`, or `None` when it holds
    /// its most.
    pub(super) fn admit(
        self: &Arc<Self>,
        addr: std::net::IpAddr,
        config: &ServeConfig,
    ) -> Option<PeerSlot> {
        if config.trusted_proxies.iter().any(|net| net.contains(addr)) {
            return Some(PeerSlot {
                peers: Arc::clone(self),
                addr: None,
            });
        }
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(addr).or_insert(0);
        if *count >= config.max_connections_per_peer {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            addr: Some(addr),
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let Some(addr) = self.addr else {
            return;
        };
        let mut counts = self
            .peers
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&addr) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&addr);
            }
        }
    }
}

/// The longest first line of an HTTP/1.1 request: the most a request-target
/// can be (what `http::Uri` holds), its method and its version.
const MAX_REQUEST_LINE: usize = 65_534 + 64;

/// The answer to an over-long request line, written by the connection
/// itself (hyper would answer `431` once its head buffer fills).
const URI_TOO_LONG: &[u8] =
    b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/// The most bytes of a gathered write copied into one buffer and sent in
/// one `send` (see [`Tracked`]'s `poll_write_vectored`).
const COALESCE: usize = 2048;

/// The smaller buffer a gathered write of at most this many bytes is
/// copied into (see [`Tracked`]'s `poll_write_vectored`).
const COALESCE_SMALL: usize = 256;

/// The header count hyper's HTTP/1.1 server refuses past when given no
/// `max_headers` (its documented default).
const HYPER_MAX_HEADERS: usize = 100;

/// hyper's default HTTP/1.1 read buffer (8,192 + 100 × 4,096 bytes), which
/// a larger [`ServeConfig::max_header_bytes`] grows.
const HEAD_BUFFER: usize = 417_792;
/// The HTTP/2 connection preface a prior-knowledge client opens with.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection's TLS handshake settled: the protocol ALPN chose (`h2`
/// or not) and the client's verified certificate.
#[derive(Debug, Default)]
pub(super) struct Handshake {
    pub(super) h2: bool,
    pub(super) certificate: Option<crate::auth::ClientCertificate>,
}

/// A byte stream a connection is served over: TCP, or TLS over TCP.
pub(super) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Writes `bytes` (a small answer) without waiting, as far as the
    /// socket takes them now.
    fn write_now(&mut self, bytes: &[u8]);
}

impl Stream for TcpStream {
    fn write_now(&mut self, bytes: &[u8]) {
        let _ = self.try_write(bytes);
    }
}

#[cfg(feature = "tls")]
impl Stream for tokio_rustls::server::TlsStream<TcpStream> {
    fn write_now(&mut self, bytes: &[u8]) {
        use std::io::Write as _;
        let (tcp, tls) = self.get_mut();
        let _ = tls.writer().write_all(bytes);
        tls.send_close_notify();
        while tls.wants_write() {
            match tls.write_tls(&mut NowWriter(tcp)) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }
}

/// `std::io::Write` over a socket's non-blocking writes.
#[cfg(feature = "tls")]
struct NowWriter<'a>(&'a mut TcpStream);

#[cfg(feature = "tls")]
impl std::io::Write for NowWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serves one connection: recognises the protocol (from the first bytes,
/// or, over TLS, from ALPN), then drives hyper's connection with the idle
/// timeout and the shutdown signal.
pub(super) async fn serve<S: Stream>(
    mut stream: S,
    peer: SocketAddr,
    bound: Option<SocketAddr>,
    router: Router,
    config: &ServeConfig,
    mut stop: watch::Receiver<bool>,
    handshake: Option<Handshake>,
) {
    let (alpn_h2, certificate) = match handshake {
        Some(handshake) => (handshake.h2, handshake.certificate),
        None => (false, None),
    };
    // The first bytes decide the protocol; a client sending none within the
    // header read timeout is dropped. Over TLS, ALPN's `h2` needs no
    // sniffing (the preface is hyper's to read).
    let mut prefix = Vec::with_capacity(H2_PREFACE.len());
    let h2 = tokio::time::timeout(config.header_read_timeout, async {
        if alpn_h2 {
            return Ok(true);
        }
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
        line: (!h2).then_some(0),
    });
    let trusted = config.trusted_proxies.clone();
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
            let guard = InFlight::enter(&activity);
            if let Some(addr) = bound {
                request.extensions_mut().insert(BoundTo(addr));
            }
            let client = client_of(peer.ip(), request.headers(), &trusted);
            request.extensions_mut().insert(ClientAddr(client));
            if let Some(certificate) = &certificate {
                request.extensions_mut().insert(certificate.clone());
            }
            let call = router.clone().oneshot(request.map(Body::new));
            // Boxed: hyper keeps the box it polls a request's future in for
            // the connection's life, sized to the future, and a request's
            // future is hundreds of bytes a connection holding a stream
            // would otherwise keep after it answered.
            let answer: ServiceFuture = Box::pin(async move {
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
            });
            answer
        })
    };

    // Each builder is dropped before the connection is driven, so that
    // the task does not keep it (nor its HTTP/2 settings) for its life.
    if h2 {
        let conn = {
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(config.h2_max_concurrent_streams)
                .max_pending_accept_reset_streams(config.h2_max_pending_accept_reset_streams)
                .max_local_error_reset_streams(config.h2_max_local_error_reset_streams)
                .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX));
            builder.serve_connection(io, service)
        };
        // Boxed: the HTTP/2 connection is kilobytes, which every HTTP/1.1
        // connection's task would otherwise be sized to hold.
        Box::pin(drive(
            conn,
            hyper::server::conn::http2::Connection::graceful_shutdown,
            &activity,
            config,
            stop,
            peer,
        ))
        .await;
    } else {
        let conn = {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(config.header_read_timeout)
                .max_header_size(config.max_header_bytes)
                .max_buf_size(config.max_header_bytes.max(HEAD_BUFFER));
            // hyper enforces its own limit of 100 headers (431, connection
            // closed) with the parse buffers on the stack; naming any limit,
            // even that one, moves them to the heap and initialises 100
            // slots per request (≈ 2,400 instructions of a ≈ 77,000 small
            // call). So the limit is named only when it is not hyper's.
            if config.max_headers != HYPER_MAX_HEADERS {
                builder.max_headers(config.max_headers);
            }
            builder.serve_connection(io, service)
        };
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

/// What the service answers a request with: boxed (see [`serve`]).
type ServiceFuture = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

/// Runs a hyper connection to its end, asking it to finish when the server
/// stops or when it has been idle for the idle timeout.
///
/// The stop and the idle timer are the connection's rare sources: a task
/// woken by its socket or by a listen stream's change (every request, every
/// delivery) polls the connection alone, and the two only when one of them
/// woke, through a [`Gate`] of the connection's own (each poll of them
/// takes a lock and registers a waker; BENCHMARKS.md, "The connection's
/// gate").
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
    // The sources in a scope of their own: the goodbye's timer below takes
    // their room in the task's future rather than adding to it.
    {
        let mut stopped = std::pin::pin!(stop.changed());
        let mut idle = std::pin::pin!(activity.idle_for(config.idle_timeout));
        let gate = Gate::new();
        let mut finishing = false;
        loop {
            let mut rare = (!finishing).then_some((stopped.as_mut(), idle.as_mut()));
            let woke = std::future::poll_fn(|cx| {
                let rare = rare
                    .as_mut()
                    .map(|(stop, idle)| (stop.as_mut(), idle.as_mut()));
                watched(&gate, cx, conn.as_mut(), rare)
            });
            match woke.await {
                Woke::Stop => {
                    finishing = true;
                    graceful(conn.as_mut());
                }
                Woke::Ended(result) => {
                    if let Err(error) = result {
                        tracing::debug!(target: "wymcp::serve", %peer, %error, "connection ended");
                    }
                    return;
                }
                Woke::Idle => break,
            }
        }
    }
    tracing::debug!(target: "wymcp::serve", %peer, "idle timeout");
    graceful(conn.as_mut());
    // An idle connection has nothing to finish: bound the goodbye.
    let _ = tokio::time::timeout(config.header_read_timeout, conn.as_mut()).await;
}

/// What woke a driven connection to an end of its wait.
#[derive(Debug, PartialEq)]
enum Woke<T> {
    /// The server began to stop.
    Stop,
    /// The connection was idle for the idle timeout.
    Idle,
    /// The connection ended, with hyper's verdict.
    Ended(T),
}

/// One poll of a driven connection: its rare sources (`rare`: the stop,
/// then the idle timer; `None` once finishing) first, the stop before the
/// connection, and only when `gate` says one of them woke; then the
/// connection, with the task's own waker.
///
/// The stop is asked before the connection is served: a connection woken
/// by a request's bytes after the server began to stop learns of the stop
/// first, so the answer carries `Connection: close` (the stop's wake sets
/// the gate's bit before the sender returns).
fn watched<C: Future, S: Future + ?Sized, I: Future + ?Sized>(
    gate: &Arc<Gate>,
    cx: &mut Context<'_>,
    conn: Pin<&mut C>,
    rare: Option<(Pin<&mut S>, Pin<&mut I>)>,
) -> Poll<Woke<C::Output>> {
    if let Some((stop, idle)) = rare {
        gate.follow(cx.waker());
        if gate.take(Gate::SOURCE) {
            // Made only here, about never: the sources keep it registered.
            let waker = Waker::from(Arc::clone(gate));
            let mut own = Context::from_waker(&waker);
            if stop.poll(&mut own).is_ready() {
                return Poll::Ready(Woke::Stop);
            }
            if idle.poll(&mut own).is_ready() {
                return Poll::Ready(Woke::Idle);
            }
        }
    }
    conn.poll(cx).map(Woke::Ended)
}

/// When a connection's last request ended, and how many are in flight.
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

    /// Resolves once the connection has had nothing in flight for `idle`.
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

/// The TCP stream, replaying the bytes read to recognise the protocol
/// first, and (HTTP/1.1) measuring each request's first line.
struct Tracked<S> {
    prefix: Vec<u8>,
    at: usize,
    stream: S,
    /// HTTP/1.1: the bytes of the connection's first request line read so
    /// far, while it has no end yet; `None` once it has (or over HTTP/2).
    /// Only the first line is measured: later ones cannot be told from a
    /// body without parsing HTTP again, and hyper refuses them with `431`.
    line: Option<usize>,
}

impl<S: Stream> Tracked<S> {
    /// Measures `bytes`, just read, against the request line's limit;
    /// whether the line is over it.
    fn over_long_line(&mut self, bytes: &[u8]) -> bool {
        let Some(seen) = self.line else {
            return false;
        };
        if bytes.contains(&b'\n') {
            self.line = None;
            return false;
        }
        let seen = seen + bytes.len();
        self.line = Some(seen);
        seen > MAX_REQUEST_LINE
    }

    /// Answers `414` on the socket itself and ends the connection's reads.
    fn refuse_line(&mut self) {
        tracing::debug!(target: "wymcp::serve", "an over-long request line; answering 414");
        // A best effort: the answer is small, the socket's buffer takes it.
        self.stream.write_now(URI_TOO_LONG);
        self.line = None;
        self.prefix = Vec::new();
        self.at = usize::MAX;
    }
}

impl<S: Stream> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at == usize::MAX {
            // Refused: the connection reads nothing more.
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = if self.at < self.prefix.len() {
            let rest = &self.prefix[self.at..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
                // The rest of the request in the same read, when the socket
                // has it: a read of the sniffed prefix alone leaves hyper's
                // 8 KiB read buffer short of its next read's 8 KiB, and it
                // doubles the buffer (16 KiB kept for the connection's life).
                // Pending: the prefix alone, now (the waker is registered).
                if buf.remaining() > 0
                    && let Poll::Ready(Err(error)) = Pin::new(&mut self.stream).poll_read(cx, buf)
                {
                    return Poll::Ready(Err(error));
                }
            }
            Poll::Ready(Ok(()))
        } else {
            Pin::new(&mut self.stream).poll_read(cx, buf)
        };
        if self.line.is_some()
            && buf.filled().len() > before
            && self.over_long_line(&buf.filled()[before..])
        {
            self.refuse_line();
            buf.set_filled(before);
        }
        polled
    }
}

/// `bufs` (at most `N` bytes in all) copied into one buffer of `N` bytes
/// on the stack and written in one `write`.
fn send_joined<const N: usize, S: Stream>(
    stream: &mut S,
    cx: &mut Context<'_>,
    bufs: &[io::IoSlice<'_>],
) -> Poll<io::Result<usize>> {
    let mut joined = [0u8; N];
    let mut at = 0;
    for buf in bufs {
        joined[at..at + buf.len()].copy_from_slice(buf);
        at += buf.len();
    }
    Pin::new(stream).poll_write(cx, &joined[..at])
}

impl<S: Stream> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // A small write of several pieces (a chunk's size line, its event
        // and its end: every listen delivery) is copied into one buffer on
        // the stack and sent in one `send`, the socket's plain path, rather
        // than gathered by `writev`. Larger writes are gathered as they
        // are. (hyper's own `writev(false)` would flatten every write into
        // its write buffer instead, which then keeps the largest answer's
        // size, up to `max_buf_size`, for the connection's life.)
        // The buffer is zeroed before the copy: a listen delivery (≈ 150
        // bytes) takes the small one, not 2 KiB of zeroes each time (≈ 110
        // instructions a delivery, by callgrind).
        let total = bufs.iter().map(|b| b.len()).sum::<usize>();
        if bufs.len() > 1 && total <= COALESCE_SMALL {
            return send_joined::<COALESCE_SMALL, S>(&mut self.stream, cx, bufs);
        }
        if bufs.len() > 1 && total <= COALESCE {
            return send_joined::<COALESCE, S>(&mut self.stream, cx, bufs);
        }
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};

    use super::*;

    impl Stream for DuplexStream {
        fn write_now(&mut self, _: &[u8]) {}
    }

    /// The bytes sniffed for the protocol and the rest of the request the
    /// socket has are given in one read: hyper reads into an 8 KiB buffer
    /// and wants 8 KiB free before each read, so a first read of the
    /// 24-byte prefix alone made it double the buffer to 16 KiB, kept for
    /// the connection's life (≈ 8 KiB of every idle listen stream's RSS).
    #[tokio::test]
    async fn the_sniffed_prefix_and_the_rest_are_one_read() {
        let request = b"POST /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}";
        let (mut client, server) = tokio::io::duplex(4096);
        client
            .write_all(&request[H2_PREFACE.len()..])
            .await
            .unwrap();
        let mut tracked = Tracked {
            prefix: request[..H2_PREFACE.len()].to_vec(),
            at: 0,
            stream: server,
            line: Some(0),
        };
        let mut buf = vec![0u8; 8192];
        let n = tracked.read(&mut buf).await.unwrap();
        assert_eq!(
            &buf[..n],
            &request[..],
            "the whole request in the first read, not the sniffed prefix alone"
        );
        // With nothing more on the socket, the prefix alone, at once.
        let (_client, server) = tokio::io::duplex(64);
        let mut tracked = Tracked {
            prefix: b"GET / HTTP/1.1\r\n".to_vec(),
            at: 0,
            stream: server,
            line: Some(0),
        };
        let n = tracked.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n");
    }

    /// What a connection holds for its life, pinned (issue 26 §3, RSS per
    /// idle listen stream): the task's future, sized to the HTTP/1.1 path
    /// (the HTTP/2 one is boxed); and the box hyper keeps a request's
    /// future in, a pointer's size (the future itself is boxed, and freed
    /// when it answers).
    #[tokio::test]
    async fn a_connection_holds_no_more_than_its_http1_state() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, peer) = listener.accept().await.unwrap();
        let config = ServeConfig::default();
        let (_stop, stop) = watch::channel(false);
        let connection = serve(tcp, peer, None, Router::new(), &config, stop, None);
        let size = std::mem::size_of_val(&connection);
        eprintln!("the connection's future: {size} bytes");
        assert!(
            size <= CONNECTION_FUTURE_MAX,
            "the connection's future is {size} bytes, over {CONNECTION_FUTURE_MAX}"
        );
        assert_eq!(
            std::mem::size_of::<Option<ServiceFuture>>(),
            2 * std::mem::size_of::<usize>()
        );
        drop(client);
    }

    /// A future that counts its polls and is ready once told.
    #[derive(Default)]
    struct Counted {
        polls: std::cell::Cell<u32>,
        ready: std::cell::Cell<bool>,
        waker: std::cell::RefCell<Option<Waker>>,
    }

    impl Counted {
        fn poll(&self, cx: &Context<'_>) -> Poll<()> {
            self.polls.set(self.polls.get() + 1);
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            if self.ready.get() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }

        /// Wakes whoever polled it last.
        fn wake(&self) {
            self.waker.borrow().as_ref().unwrap().wake_by_ref();
        }
    }

    /// A connection's stop and idle timer are polled at its first poll and
    /// then only when one of them woke; a wake-up of the task by the
    /// connection itself (a request's bytes, a listen stream's change)
    /// polls the connection alone. The stop comes before the connection,
    /// and once finishing neither is polled.
    #[test]
    fn a_connection_polls_its_stop_and_idle_timer_only_when_one_woke() {
        let (stop, idle, conn) = (Counted::default(), Counted::default(), Counted::default());
        let mut stop_f = std::pin::pin!(std::future::poll_fn(|cx| stop.poll(cx)));
        let mut idle_f = std::pin::pin!(std::future::poll_fn(|cx| idle.poll(cx)));
        let mut conn_f = std::pin::pin!(std::future::poll_fn(|cx| conn.poll(cx)));
        let gate = Gate::new();
        let task = Arc::new(Woken::default());
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        let mut rare: Rare<'_> = Some((stop_f.as_mut(), idle_f.as_mut()));
        let mut poll = |rare: &mut Rare<'_>| {
            let rare = rare
                .as_mut()
                .map(|(stop, idle)| (stop.as_mut(), idle.as_mut()));
            watched(&gate, &mut cx, conn_f.as_mut(), rare)
        };
        let counts = || (stop.polls.get(), idle.polls.get(), conn.polls.get());

        assert_eq!(poll(&mut rare), Poll::Pending);
        assert_eq!(counts(), (1, 1, 1), "the first poll registers every source");
        // The connection wakes its task: the connection alone is polled.
        conn.wake();
        assert_eq!(task.count(), 1);
        assert_eq!(poll(&mut rare), Poll::Pending);
        assert_eq!(poll(&mut rare), Poll::Pending);
        assert_eq!(counts(), (1, 1, 3), "no source that did not wake");
        // The idle timer wakes (through the gate, which wakes the task).
        idle.wake();
        assert_eq!(task.count(), 2, "a rare source wakes the task");
        assert_eq!(poll(&mut rare), Poll::Pending);
        assert_eq!(counts(), (2, 2, 4));
        assert_eq!(poll(&mut rare), Poll::Pending);
        assert_eq!(counts(), (2, 2, 5));
        // The stop, with the connection ready too: the stop first.
        stop.ready.set(true);
        conn.ready.set(true);
        stop.wake();
        assert_eq!(poll(&mut rare), Poll::Ready(Woke::Stop));
        assert_eq!(counts(), (3, 2, 5), "the stop before the connection");
        // Finishing: the connection alone, whatever wakes.
        let mut finishing = None;
        idle.ready.set(true);
        idle.wake();
        assert_eq!(poll(&mut finishing), Poll::Ready(Woke::Ended(())));
        assert_eq!(counts(), (3, 2, 6));
        // An idle timer that fired is told.
        conn.ready.set(false);
        assert_eq!(poll(&mut rare), Poll::Ready(Woke::Stop));
        stop.ready.set(false);
        stop.wake();
        assert_eq!(poll(&mut rare), Poll::Ready(Woke::Idle));
    }

    /// A connection's rare sources in the test below.
    type Rare<'a> = Option<(
        Pin<&'a mut dyn Future<Output = ()>>,
        Pin<&'a mut dyn Future<Output = ()>>,
    )>;

    /// A task waker that counts its wakes.
    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicU32);

    impl Woken {
        fn count(&self) -> u32 {
            self.0.load(Ordering::Relaxed)
        }
    }

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The most a connection's future may be, in bytes (see above).
    const CONNECTION_FUTURE_MAX: usize = 2_500;

    /// A socket that records how it was written to.
    #[derive(Default)]
    struct Recorder {
        sends: Vec<Vec<u8>>,
        gathered: usize,
    }

    impl AsyncRead for Recorder {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.sends.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            self.gathered += 1;
            Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl Stream for Recorder {
        fn write_now(&mut self, _: &[u8]) {}
    }

    /// A small gathered write (a listen delivery: the chunk's size line,
    /// its event, its end) is one plain send of the pieces joined, as the
    /// socket floor writes; a large one is gathered as it is.
    #[tokio::test]
    async fn a_small_gathered_write_is_one_send() {
        let mut tracked = Tracked {
            prefix: Vec::new(),
            at: 0,
            stream: Recorder::default(),
            line: None,
        };
        let pieces = [
            io::IoSlice::new(b"9\r\n"),
            io::IoSlice::new(b"data: {}\n"),
            io::IoSlice::new(b"\r\n"),
        ];
        let n = tracked.write_vectored(&pieces).await.unwrap();
        assert_eq!(n, 14);
        assert_eq!(
            tracked.stream.sends,
            vec![b"9\r\ndata: {}\n\r\n".to_vec()],
            "one send of the joined pieces"
        );
        assert_eq!(tracked.stream.gathered, 0);
        // Past the small buffer, up to the large one: still one send, whole.
        for total in [COALESCE_SMALL + 1, COALESCE] {
            tracked.stream.sends.clear();
            let body = vec![b'y'; total - 5];
            let n = tracked
                .write_vectored(&[io::IoSlice::new(b"7FB\r\n"), io::IoSlice::new(&body)])
                .await
                .unwrap();
            assert_eq!(n, total);
            let mut joined = b"7FB\r\n".to_vec();
            joined.extend_from_slice(&body);
            assert_eq!(
                tracked.stream.sends,
                vec![joined],
                "{total} bytes: one send"
            );
            assert_eq!(tracked.stream.gathered, 0);
        }
        tracked.stream.sends.clear();
        let big = vec![b'x'; COALESCE];
        let n = tracked
            .write_vectored(&[io::IoSlice::new(b"800\r\n"), io::IoSlice::new(&big)])
            .await
            .unwrap();
        assert_eq!(n, COALESCE + 5);
        assert_eq!(tracked.stream.gathered, 1, "a large write is gathered");
        assert!(tracked.stream.sends.is_empty(), "a large write is no send");
    }
}
