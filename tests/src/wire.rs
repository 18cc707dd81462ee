//! Socket-level test helpers: what only a real connection shows.
//!
//! * [`TestServer`] serves a router on `127.0.0.1:0` with [`wymcp::serve()`]
//!   (HTTP/1.1 and h2c) and stops it when dropped.
//! * [`RawRequest`] + [`RawConn`]: an HTTP/1.1 client that writes exactly the
//!   bytes you describe (duplicate headers, no `Host`, a declared length with
//!   no body, chunked framing, …) and reads exactly one response, or the
//!   connection's end ([`RawConn::closed`]).
//! * [`H2Conn`]: an HTTP/2 client with prior knowledge (no upgrade), to send
//!   several streams on one connection.
//! * [`Rejections`]: records the `wymcp::rejection` events emitted while it is
//!   the thread's default subscriber; use it in a
//!   `#[tokio::test(flavor = "current_thread")]` test, where the server's
//!   tasks run on the test's thread.
//! * [`front_router`]: the first two stages of the default chain (the origin
//!   check and the parse step) and a final stage answering 200 with what the
//!   parse step set, to show a request the parse step accepted.
//!
//! ```no_run
//! # async fn demo() {
//! use wymcp_tests::wire::{RawRequest, TestServer, front_router};
//! let server = TestServer::start(front_router(wymcp::Server::builder().build().unwrap())).await;
//! let mut conn = server.connect().await;
//! let response = conn.request(&RawRequest::post("/mcp").json(br#"{"jsonrpc":"2.0"}"#)).await;
//! assert_eq!(response.status, 200);
//! # }
//! ```
//!
//! Helpers panic on what a test should not meet (a refused connection, a
//! response that is not HTTP); they are for tests only.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use wymcp::axum::Router;

/// How long a helper waits for the server before failing the test.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A router served on a real loopback port; stops when dropped.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Serves `router` with [`wymcp::serve()`] on `127.0.0.1`, on a free port.
    pub async fn start(router: Router) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let task = tokio::spawn(async move {
            wymcp::serve(listener, router).await.expect("serve");
        });
        TestServer { addr, task }
    }

    /// Serves `router` with [`wymcp::serve_with`] and `config`.
    pub async fn start_with(router: Router, config: wymcp::ServeConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let task = tokio::spawn(async move {
            wymcp::serve_with(listener, router, config)
                .await
                .expect("serve");
        });
        TestServer { addr, task }
    }

    /// A new raw HTTP/2 connection (prior knowledge), frames written by hand.
    pub async fn raw_h2(&self) -> RawH2 {
        RawH2::connect(self.addr).await
    }

    /// Serves `router` with plain [`axum::serve`](wymcp::axum::serve()), which
    /// does not tell the chain the bound address: the origin check then
    /// falls back to `ServerBuilder::bound_to`, or fails closed.
    pub async fn start_unannounced(router: Router) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let task = tokio::spawn(async move {
            wymcp::axum::serve(listener, router).await.expect("serve");
        });
        TestServer { addr, task }
    }

    /// The address served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT`, a `Host` the default loopback policy allows.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// A new HTTP/1.1 connection.
    pub async fn connect(&self) -> RawConn {
        RawConn::connect(self.addr).await
    }

    /// A new HTTP/2 connection (prior knowledge).
    pub async fn h2(&self) -> H2Conn {
        H2Conn::connect(self.addr).await
    }

    /// `http://127.0.0.1:PORT{path}`, for HTTP/2 request URIs.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How a [`RawRequest`]'s body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: <len>` and the body.
    ContentLength,
    /// `Transfer-Encoding: chunked`, chunks of at most this many bytes.
    Chunked(usize),
    /// No framing header at all (whatever headers you add yourself).
    Bare,
}

/// An HTTP/1.1 request described byte for byte.
///
/// Starts with `Host: localhost` (which the default loopback policy allows);
/// change it with [`host`](Self::host), drop it with [`no_host`](Self::no_host).
/// Headers are written in the order added, repeated ones included.
#[derive(Debug, Clone)]
pub struct RawRequest {
    method: String,
    target: String,
    host: Option<Vec<u8>>,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    framing: Framing,
}

impl RawRequest {
    /// A `POST` to `target` (a path, with its query string if any).
    pub fn post(target: impl Into<String>) -> Self {
        Self::new("POST", target)
    }

    /// A request with any method.
    pub fn new(method: impl Into<String>, target: impl Into<String>) -> Self {
        RawRequest {
            method: method.into(),
            target: target.into(),
            host: Some(b"localhost".to_vec()),
            headers: Vec::new(),
            body: Vec::new(),
            framing: Framing::ContentLength,
        }
    }

    /// The `Host` header's value.
    #[must_use]
    pub fn host(mut self, value: impl AsRef<[u8]>) -> Self {
        self.host = Some(value.as_ref().to_vec());
        self
    }

    /// No `Host` header.
    #[must_use]
    pub fn no_host(mut self) -> Self {
        self.host = None;
        self
    }

    /// Adds a header (repeat the call to repeat the header).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name.into(), value.as_ref().to_vec()));
        self
    }

    /// The body, with no `Content-Type`.
    #[must_use]
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// `Content-Type: application/json` and the body.
    #[must_use]
    pub fn json(self, body: impl Into<Vec<u8>>) -> Self {
        self.header("Content-Type", "application/json").body(body)
    }

    /// How the body is framed (default `Content-Length`).
    #[must_use]
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// The request line and headers, up to and including the blank line.
    pub fn head(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.target.len());
        out.extend_from_slice(format!("{} {} HTTP/1.1\r\n", self.method, self.target).as_bytes());
        if let Some(host) = &self.host {
            push_header(&mut out, "Host", host);
        }
        for (name, value) in &self.headers {
            push_header(&mut out, name, value);
        }
        match self.framing {
            Framing::ContentLength => {
                push_header(&mut out, "Content-Length", self.body.len().to_string());
            }
            Framing::Chunked(_) => push_header(&mut out, "Transfer-Encoding", "chunked"),
            Framing::Bare => {}
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// The body as framed on the wire.
    pub fn framed_body(&self) -> Vec<u8> {
        match self.framing {
            Framing::ContentLength | Framing::Bare => self.body.clone(),
            Framing::Chunked(size) => {
                let mut out =
                    Vec::with_capacity(self.body.len() + self.body.len() / size * 12 + 16);
                for chunk in self.body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
                out
            }
        }
    }

    /// The whole request as written on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.head();
        out.extend_from_slice(&self.framed_body());
        out
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: impl AsRef<[u8]>) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_ref());
    out.extend_from_slice(b"\r\n");
}

/// A raw HTTP/1.1 connection.
#[derive(Debug)]
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl RawConn {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        RawConn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Connects to `addr` from the local address `from` (on Linux every
    /// `127.0.0.0/8` address is loopback: a second client with an address of
    /// its own).
    pub async fn connect_from(addr: SocketAddr, from: std::net::IpAddr) -> Self {
        let socket = if from.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .expect("a socket");
        socket
            .bind(SocketAddr::new(from, 0))
            .expect("bind the local address");
        let stream = socket.connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        RawConn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes `bytes` as they are.
    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    /// Writes `request` whole and reads its response.
    pub async fn request(&mut self, request: &RawRequest) -> RawResponse {
        self.send(&request.to_bytes())
            .await
            .expect("write the request");
        self.response().await
    }

    /// Reads one response (head and body, framed by `Content-Length`,
    /// chunked, or the connection's end).
    pub async fn response(&mut self) -> RawResponse {
        tokio::time::timeout(PATIENCE, self.read_response())
            .await
            .expect("a response within the patience")
    }

    /// Whether the server closed the connection (end of stream or reset)
    /// within `wait`. Bytes arriving instead fail the test.
    pub async fn closed(&mut self, wait: Duration) -> bool {
        assert!(
            self.buf.is_empty(),
            "unread bytes: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        let mut byte = [0u8; 1];
        match tokio::time::timeout(wait, self.stream.read(&mut byte)).await {
            Err(_) => false,
            Ok(Ok(0) | Err(_)) => true,
            Ok(Ok(_)) => panic!("the server sent bytes where its end was expected"),
        }
    }

    /// Reads until the bytes received contain `needle` (true), the
    /// connection ends or `wait` passes (false). The bytes stay unread for
    /// [`response`](Self::response).
    pub async fn read_until(&mut self, needle: &[u8], wait: Duration) -> bool {
        tokio::time::timeout(wait, async {
            while find(&self.buf, needle).is_none() {
                if self.fill().await == 0 {
                    return false;
                }
            }
            true
        })
        .await
        .unwrap_or(false)
    }

    /// Reads a response's head only (status and headers) within `wait`,
    /// leaving its body unread: for a stream whose body does not end.
    /// `None` when the connection ends or `wait` passes first.
    pub async fn head(&mut self, wait: Duration) -> Option<RawResponse> {
        tokio::time::timeout(wait, async {
            let head_end = loop {
                if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                    break at;
                }
                if self.fill().await == 0 {
                    return None;
                }
            };
            let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
            self.buf.drain(..head_end + 4);
            let mut lines = head.split("\r\n");
            let mut parts = lines.next().unwrap_or_default().splitn(3, ' ');
            let version = parts.next().unwrap_or_default().to_owned();
            let status = parts.next().and_then(|s| s.parse().ok())?;
            let headers = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            Some(RawResponse {
                version,
                status,
                headers,
                body: Vec::new(),
            })
        })
        .await
        .ok()
        .flatten()
    }

    async fn fill(&mut self) -> usize {
        self.buf.reserve(64 * 1024);
        match self.stream.read_buf(&mut self.buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) => panic!("read: {e}"),
        }
    }

    async fn read_response(&mut self) -> RawResponse {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at;
            }
            assert!(
                self.fill().await > 0,
                "the connection ended before a response head"
            );
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).expect("an ASCII head");
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default().to_owned();
        let status: u16 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a status line, got {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut response = RawResponse {
            version,
            status,
            headers,
            body: Vec::new(),
        };
        let chunked = response
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        if chunked {
            response.body = self.read_chunked().await;
        } else if let Some(len) = response.header("content-length") {
            let len: usize = len.parse().expect("a numeric Content-Length");
            while self.buf.len() < len {
                assert!(self.fill().await > 0, "the connection ended inside a body");
            }
            response.body = self.buf.drain(..len).collect();
        } else if !(status < 200 || status == 204 || status == 304) {
            while self.fill().await > 0 {}
            response.body = std::mem::take(&mut self.buf);
        }
        response
    }

    async fn read_chunked(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(at) = find(&self.buf, b"\r\n") {
                    break at;
                }
                assert!(
                    self.fill().await > 0,
                    "the connection ended inside a chunk size"
                );
            };
            let line = String::from_utf8_lossy(&self.buf[..line_end]).into_owned();
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .expect("a chunk size");
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers (none expected), then the blank line.
                while find(&self.buf, b"\r\n").is_none() {
                    assert!(
                        self.fill().await > 0,
                        "the connection ended inside trailers"
                    );
                }
                let end = find(&self.buf, b"\r\n").unwrap_or(0);
                self.buf.drain(..end + 2);
                return body;
            }
            while self.buf.len() < size + 2 {
                assert!(self.fill().await > 0, "the connection ended inside a chunk");
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One HTTP/1.1 response as read off the wire.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// `HTTP/1.1`.
    pub version: String,
    /// The status code.
    pub status: u16,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers(name).into_iter().next()
    }

    /// Every value of a header, in order.
    pub fn headers(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as JSON; fails the test when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "a JSON body ({e}), got {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The JSON-RPC error this response carries, checked to be a well-formed
    /// `application/json` error envelope.
    pub fn rpc_error(&self) -> RpcError {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "a JSON-RPC error is application/json"
        );
        RpcError::from_envelope(&self.json())
    }

    /// Whether the response carries `Connection: close`.
    pub fn closes(&self) -> bool {
        self.headers("connection")
            .iter()
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
    }
}

/// A JSON-RPC error envelope, taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The envelope's `id`.
    pub id: Value,
    /// `error.code`.
    pub code: i64,
    /// `error.message`.
    pub message: String,
    /// `error.data`, `Value::Null` when absent.
    pub data: Value,
}

impl RpcError {
    /// Takes an error envelope apart, checking `jsonrpc` and that `id` is present.
    pub fn from_envelope(envelope: &Value) -> Self {
        assert_eq!(envelope["jsonrpc"], "2.0", "jsonrpc 2.0 in {envelope}");
        let id = envelope
            .get("id")
            .unwrap_or_else(|| panic!("an id member in {envelope}"))
            .clone();
        let error = &envelope["error"];
        RpcError {
            id,
            code: error["code"]
                .as_i64()
                .unwrap_or_else(|| panic!("an integer error.code in {envelope}")),
            message: error["message"]
                .as_str()
                .unwrap_or_else(|| panic!("a string error.message in {envelope}"))
                .to_owned(),
            data: error.get("data").cloned().unwrap_or(Value::Null),
        }
    }
}

/// A JSON-RPC body of exactly `len` bytes (at least 66): a notification whose
/// `params.pad` string fills the rest.
pub fn json_of_len(len: usize) -> Vec<u8> {
    let prefix = br#"{"jsonrpc":"2.0","method":"notifications/pad","params":{"pad":""#;
    let suffix = br#""}}"#;
    assert!(len >= prefix.len() + suffix.len(), "at least 66 bytes");
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(prefix);
    out.resize(len - suffix.len(), b'a');
    out.extend_from_slice(suffix);
    out
}

/// The request body type of [`H2Conn`].
pub type H2Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> H2Body {
    http_body_util::Full::new(bytes.into()).boxed()
}

/// A body that sends `bytes` and then never ends (a stalled upload).
pub fn stalling(bytes: impl Into<Bytes>) -> H2Body {
    Stalling(Some(bytes.into())).boxed()
}

struct Stalling(Option<Bytes>);

impl Body for Stalling {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.0.take() {
            Some(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
            None => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// An HTTP/2 connection with prior knowledge.
#[derive(Debug)]
pub struct H2Conn {
    sender: hyper::client::conn::http2::SendRequest<H2Body>,
}

impl H2Conn {
    /// Connects to `addr` and opens HTTP/2 with the preface (no upgrade).
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let (sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .expect("an HTTP/2 handshake");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        H2Conn { sender }
    }

    /// Sends one request on a new stream and waits for its response head.
    pub async fn send(
        &mut self,
        request: http::Request<H2Body>,
    ) -> Result<http::Response<Incoming>, hyper::Error> {
        self.sender.ready().await?;
        tokio::time::timeout(PATIENCE, self.sender.send_request(request))
            .await
            .expect("a response within the patience")
    }

    /// Sends one request and reads its whole response.
    pub async fn roundtrip(
        &mut self,
        request: http::Request<H2Body>,
    ) -> (http::response::Parts, Bytes) {
        let response = self.send(request).await.expect("an HTTP/2 response");
        collect(response).await
    }
}

/// Reads a response's whole body.
pub async fn collect(response: http::Response<Incoming>) -> (http::response::Parts, Bytes) {
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect())
        .await
        .expect("a body within the patience")
        .expect("a whole body")
        .to_bytes();
    (parts, body)
}

/// One recorded rejection event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionEvent {
    /// The stage that rejected.
    pub stage: String,
    /// The HTTP status.
    pub status: u64,
    /// The JSON-RPC code.
    pub code: i64,
}

/// Records `wymcp::rejection` events while it is the default subscriber.
#[derive(Debug, Clone, Default)]
pub struct Rejections(Arc<Mutex<Vec<RejectionEvent>>>);

impl Rejections {
    /// Installs a recorder as this thread's default subscriber until the guard drops.
    pub fn record() -> (Self, tracing::subscriber::DefaultGuard) {
        use tracing_subscriber::layer::SubscriberExt as _;
        let recorder = Rejections::default();
        let subscriber = tracing_subscriber::registry().with(recorder.clone());
        let guard = tracing::subscriber::set_default(subscriber);
        (recorder, guard)
    }

    /// The events recorded so far.
    pub fn events(&self) -> Vec<RejectionEvent> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Rejections {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if event.metadata().target() != "wymcp::rejection" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Ok(mut events) = self.0.lock() {
            events.push(RejectionEvent {
                stage: fields.stage,
                status: fields.status,
                code: fields.code,
            });
        }
    }
}

#[derive(Default)]
struct Fields {
    stage: String,
    status: u64,
    code: i64,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "stage" {
            value.clone_into(&mut self.stage);
        }
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "status" {
            self.status = value;
        }
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        if field.name() == "code" {
            self.code = value;
        }
    }

    fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
}

/// The origin check and the parse step of the default chain, then a probe
/// answering `200` with
/// `{"jsonrpc":"2.0","id":null,"result":{"message":…,"bytes":N}}`: the message
/// and the body length the parse step set. Shows that a request got through
/// the first two stages, whatever the later stages of the default chain do.
#[wymcp::pipeline]
pub mod front {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    /// The default chain's first stage.
    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    /// The default chain's second stage.
    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    /// Answers with what the parse step set.
    #[body_bound(reason = "a test probe: answers 200 with what the parse step set")]
    pub async fn probe(ex: &mut Exchange<'_>) -> Flow {
        Flow::Answer(super::probe_answer(ex))
    }

    /// Never reached: the probe answers first.
    pub type Validate = stages::Validate;
}

fn probe_answer(ex: &wymcp::Exchange<'_>) -> wymcp::Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "result": { "message": ex.message(), "bytes": ex.bytes().len() }});
    crate::json_response(
        http::StatusCode::OK,
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

/// [`front`]'s router for `server`.
pub fn front_router(server: wymcp::Server) -> Router {
    front::router(server)
}

/// An HTTP/2 frame as read off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Frame {
    /// The frame type (`0x1` HEADERS, `0x3` RST_STREAM, `0x7` GOAWAY, …).
    pub kind: u8,
    /// The flags.
    pub flags: u8,
    /// The stream id.
    pub stream: u32,
    /// The payload.
    pub payload: Vec<u8>,
}

impl H2Frame {
    /// The frame type HEADERS.
    pub const HEADERS: u8 = 0x1;
    /// The frame type RST_STREAM.
    pub const RST_STREAM: u8 = 0x3;
    /// The frame type SETTINGS.
    pub const SETTINGS: u8 = 0x4;
    /// The frame type GOAWAY.
    pub const GOAWAY: u8 = 0x7;

    /// The error code of a RST_STREAM or GOAWAY frame.
    pub fn error_code(&self) -> Option<u32> {
        let at = match self.kind {
            Self::RST_STREAM => 0,
            Self::GOAWAY => 4,
            _ => return None,
        };
        let bytes: [u8; 4] = self.payload.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(bytes))
    }

    /// The `:status` of a HEADERS frame whose first field is an indexed
    /// `:status` (how hyper and h2 encode it) or a literal one.
    pub fn status(&self) -> Option<u16> {
        if self.kind != Self::HEADERS {
            return None;
        }
        // Static table indexes 8..=14: 200 204 206 304 400 404 500.
        let first = *self.payload.first()?;
        if first & 0x80 != 0 {
            return match first & 0x7f {
                8 => Some(200),
                9 => Some(204),
                10 => Some(206),
                11 => Some(304),
                12 => Some(400),
                13 => Some(404),
                14 => Some(500),
                _ => None,
            };
        }
        // A literal with the name indexed (8), the value plain or Huffman-coded.
        let len_byte = *self.payload.get(1)?;
        let len = usize::from(len_byte & 0x7f);
        let value = self.payload.get(2..2 + len)?;
        let digits = if len_byte & 0x80 == 0 {
            std::str::from_utf8(value).ok()?.to_owned()
        } else {
            huffman_digits(value)
        };
        digits.parse().ok()
    }
}

/// Decodes an HPACK Huffman string made of digits (RFC 7541 Appendix B:
/// `0`–`2` are 5-bit codes `00000`–`00010`, `3`–`9` 6-bit codes
/// `011001`–`011111`); stops at the padding.
fn huffman_digits(bytes: &[u8]) -> String {
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let mut out = String::new();
    let mut at = 0;
    while at + 5 <= bits.len() {
        let five = bits[at..at + 5].iter().fold(0u8, |v, b| v << 1 | b);
        if five <= 2 {
            out.push(char::from(b'0' + five));
            at += 5;
            continue;
        }
        let Some(&sixth) = bits.get(at + 5) else {
            break;
        };
        let six = five << 1 | sixth;
        if (0x19..=0x1f).contains(&six) {
            out.push(char::from(b'3' + (six - 0x19)));
            at += 6;
        } else {
            break;
        }
    }
    out
}

/// A hand-written HTTP/2 client: frames exactly as described, ignoring the
/// server's settings (to exceed them on purpose). Header blocks are HPACK
/// literals without indexing or Huffman coding.
#[derive(Debug)]
pub struct RawH2 {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl RawH2 {
    /// Connects and sends the preface and an empty SETTINGS frame.
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let mut conn = RawH2 {
            stream,
            buf: Vec::new(),
        };
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend(frame(H2Frame::SETTINGS, 0, 0, &[]));
        conn.send(&hello).await.expect("the preface");
        conn
    }

    /// Writes bytes as they are (several frames at once, say).
    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    /// Reads the next frame; `None` when the connection ended.
    pub async fn frame(&mut self) -> Option<H2Frame> {
        tokio::time::timeout(PATIENCE, self.read_frame())
            .await
            .expect("a frame within the patience")
    }

    /// Reads frames until one matches `want`, or the connection ends
    /// (`None`). Answers the server's SETTINGS and PINGs meanwhile.
    pub async fn until(&mut self, want: impl Fn(&H2Frame) -> bool) -> Option<H2Frame> {
        loop {
            let f = self.frame().await?;
            if want(&f) {
                return Some(f);
            }
            if f.kind == H2Frame::SETTINGS && f.flags & 0x1 == 0 {
                let _ = self.send(&frame(H2Frame::SETTINGS, 0x1, 0, &[])).await;
            }
            if f.kind == 0x6 && f.flags & 0x1 == 0 {
                let _ = self.send(&frame(0x6, 0x1, 0, &f.payload)).await;
            }
        }
    }

    async fn read_frame(&mut self) -> Option<H2Frame> {
        loop {
            if self.buf.len() >= 9 {
                let len = usize::from(self.buf[0]) << 16
                    | usize::from(self.buf[1]) << 8
                    | usize::from(self.buf[2]);
                if self.buf.len() >= 9 + len {
                    let head: Vec<u8> = self.buf.drain(..9).collect();
                    let payload = self.buf.drain(..len).collect();
                    return Some(H2Frame {
                        kind: head[3],
                        flags: head[4],
                        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]])
                            & 0x7fff_ffff,
                        payload,
                    });
                }
            }
            self.buf.reserve(64 * 1024);
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }
}

/// One HTTP/2 frame's bytes.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("a frame under 16 MiB");
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A HEADERS frame (with END_HEADERS) opening `stream` with `fields`,
/// ending the stream when `end_stream`.
pub fn headers_frame(stream: u32, end_stream: bool, fields: &[(&str, &[u8])]) -> Vec<u8> {
    let block = hpack(fields);
    frame(H2Frame::HEADERS, 0x4 | u8::from(end_stream), stream, &block)
}

/// A header block split over a HEADERS frame and CONTINUATION frames of at
/// most 16,384 bytes each (for blocks over the default frame size).
pub fn headers_continued(stream: u32, end_stream: bool, fields: &[(&str, &[u8])]) -> Vec<u8> {
    let block = hpack(fields);
    let mut chunks = block.chunks(16_384).peekable();
    let mut out = Vec::new();
    let mut first = true;
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let end_headers = if last { 0x4 } else { 0 };
        if first {
            let end = u8::from(end_stream);
            out.extend(frame(H2Frame::HEADERS, end_headers | end, stream, chunk));
            first = false;
        } else {
            out.extend(frame(0x9, end_headers, stream, chunk));
        }
    }
    out
}

/// A RST_STREAM frame with `code` (`0x8` CANCEL).
pub fn rst_frame(stream: u32, code: u32) -> Vec<u8> {
    frame(H2Frame::RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// A DATA frame.
pub fn data_frame(stream: u32, end_stream: bool, data: &[u8]) -> Vec<u8> {
    frame(0x0, u8::from(end_stream), stream, data)
}

/// HPACK literal header fields without indexing, no Huffman coding.
fn hpack(fields: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        hpack_int(&mut out, name.len());
        out.extend_from_slice(name.as_bytes());
        hpack_int(&mut out, value.len());
        out.extend_from_slice(value);
    }
    out
}

/// An HPACK string length with a 7-bit prefix (the H bit clear).
fn hpack_int(out: &mut Vec<u8>, mut n: usize) {
    if n < 127 {
        out.push(u8::try_from(n).unwrap_or(0));
        return;
    }
    out.push(127);
    n -= 127;
    while n >= 128 {
        out.push(u8::try_from(n % 128).unwrap_or(0) | 0x80);
        n /= 128;
    }
    out.push(u8::try_from(n).unwrap_or(0));
}

/// The resident set size of this process in bytes (`VmRSS` in
/// `/proc/self/status`); `None` where there is no such file.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
