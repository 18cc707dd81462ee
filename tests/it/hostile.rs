//! Hostile networks, over real sockets: request smuggling shapes, header
//! floods, slow and idle clients, stalled bodies by the thousand, pipelining
//! behind a refusal, and HTTP/2 stream floods and rapid resets, each against
//! an explicit [`ServeConfig`] limit. Every loop is bounded in count and time;
//! everything is on loopback.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wymcp::{ServeConfig, Server};
use wymcp_tests::wire::{
    Framing, H2Frame, RawRequest, RawResponse, TestServer, data_frame, headers_continued,
    headers_frame, rst_frame,
};

/// A legacy `ping`: the smallest request the default chain answers 200.
const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn chain(builder: wymcp::ServerBuilder) -> wymcp::axum::Router {
    wymcp::chain::post::router(builder.build().unwrap())
}

async fn serve(config: ServeConfig) -> TestServer {
    TestServer::start_with(chain(Server::builder()), config).await
}

fn assert_pong(response: &RawResponse) {
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
}

/// A response hyper itself gave (before any stage ran): no body, and the
/// connection closed after it.
fn assert_transport_refusal(response: &RawResponse, status: u16) {
    assert_eq!(response.status, status, "{response:?}");
    assert!(response.body.is_empty(), "{response:?}");
    assert_eq!(response.header("content-type"), None);
    assert!(response.closes(), "Connection: close in {response:?}");
}

const SHORT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------
// Framing: what request smuggling is made of
// ---------------------------------------------------------------------------

/// RFC 9112 §6.3: a request with both is read as chunked (the
/// `Content-Length` ignored), and the connection must close after it. hyper
/// does exactly that: the chunked body is the message, answered with
/// `Connection: close`, and the bytes after it — a request hidden where a
/// reader trusting `Content-Length` would find it — are never served.
#[tokio::test]
async fn content_length_with_transfer_encoding_is_read_chunked_and_closed() {
    let server = serve(ServeConfig::default()).await;
    let mut conn = server.connect().await;
    let mut bytes = RawRequest::post("/mcp")
        .json(PING)
        .header("Content-Length", "5")
        .framing(Framing::Chunked(8))
        .to_bytes();
    bytes.extend(RawRequest::post("/mcp").json(PING).to_bytes());
    conn.send(&bytes).await.unwrap();
    let response = conn.response().await;
    assert_pong(&response);
    assert!(response.closes(), "Connection: close in {response:?}");
    assert!(conn.closed(SHORT).await, "nothing after the answer");
}

#[tokio::test]
async fn two_different_content_lengths_are_refused_and_closed() {
    let server = serve(ServeConfig::default()).await;
    let mut conn = server.connect().await;
    let request = RawRequest::post("/mcp")
        .header("Content-Type", "application/json")
        .header("Content-Length", PING.len().to_string())
        .header("Content-Length", "5")
        .body(PING)
        .framing(Framing::Bare);
    let response = conn.request(&request).await;
    assert_transport_refusal(&response, 400);
    assert!(conn.closed(SHORT).await);
}

/// Bad chunk sizes break the body read: the parse step's transport failure,
/// 400 with no body, and the connection closed (its rest cannot be trusted).
#[tokio::test]
async fn bad_chunk_sizes_are_400_and_close() {
    let server = serve(ServeConfig::default()).await;
    for size_line in ["zz", "-1", "fffffffffffffffffffff", "4 x"] {
        let mut conn = server.connect().await;
        let mut bytes = RawRequest::post("/mcp")
            .json(PING)
            .framing(Framing::Chunked(64))
            .head();
        bytes.extend_from_slice(format!("{size_line}\r\n").as_bytes());
        bytes.extend_from_slice(PING);
        bytes.extend_from_slice(b"\r\n0\r\n\r\n");
        conn.send(&bytes).await.unwrap();
        let response = conn.response().await;
        assert_eq!(response.status, 400, "{size_line}: {response:?}");
        assert!(response.body.is_empty(), "{size_line}: {response:?}");
        assert!(response.closes(), "{size_line}: {response:?}");
        assert!(conn.closed(SHORT).await, "{size_line}");
    }
}

/// RFC 9112 §5.2: obs-fold is refused with 400 (or replaced by spaces);
/// hyper refuses it, before any stage runs.
#[tokio::test]
async fn obs_folded_headers_are_refused() {
    let server = serve(ServeConfig::default()).await;
    let mut conn = server.connect().await;
    let request = RawRequest::post("/mcp")
        .header("X-Folded", "first\r\n  second")
        .json(PING);
    let response = conn.request(&request).await;
    assert_transport_refusal(&response, 400);
    assert!(conn.closed(SHORT).await);
}

// ---------------------------------------------------------------------------
// Header floods
// ---------------------------------------------------------------------------

fn with_headers(count: usize, value_len: usize) -> RawRequest {
    let value = "v".repeat(value_len);
    (0..count).fold(RawRequest::post("/mcp").json(PING), |r, i| {
        r.header(format!("X-Flood-{i}"), &value)
    })
}

/// `max_headers` counts every field, Host and the framing headers included.
#[tokio::test]
async fn more_headers_than_max_headers_is_431() {
    let config = ServeConfig::default().max_headers(20);
    let server = serve(config).await;
    // Host, Content-Type, Content-Length: 3 + 17 = 20 fields, accepted.
    let mut conn = server.connect().await;
    assert_pong(&conn.request(&with_headers(17, 8)).await);
    let mut conn = server.connect().await;
    let response = conn.request(&with_headers(18, 8)).await;
    assert_transport_refusal(&response, 431);
    assert!(conn.closed(SHORT).await);
}

#[tokio::test]
async fn the_default_header_count_is_100() {
    let server = serve(ServeConfig::default()).await;
    let mut conn = server.connect().await;
    assert_pong(&conn.request(&with_headers(97, 8)).await);
    let mut conn = server.connect().await;
    assert_transport_refusal(&conn.request(&with_headers(98, 8)).await, 431);
}

#[tokio::test]
async fn a_head_over_max_header_bytes_is_431() {
    let config = ServeConfig::default().max_header_bytes(16 * 1024);
    let server = serve(config).await;
    let mut conn = server.connect().await;
    assert_pong(&conn.request(&with_headers(1, 15 * 1024)).await);
    let mut conn = server.connect().await;
    let response = conn.request(&with_headers(1, 17 * 1024)).await;
    assert_transport_refusal(&response, 431);
    // The default, 128 KiB: many medium headers add up.
    let server = serve(ServeConfig::default()).await;
    let mut conn = server.connect().await;
    assert_pong(&conn.request(&with_headers(30, 4000)).await);
    let mut conn = server.connect().await;
    assert_transport_refusal(&conn.request(&with_headers(40, 4000)).await, 431);
}

// ---------------------------------------------------------------------------
// Slow and idle clients
// ---------------------------------------------------------------------------

/// A client trickling its head is cut off when the header read timeout
/// runs out, however steadily it trickles; no answer is written.
#[tokio::test]
async fn slow_headers_are_cut_off_at_the_header_read_timeout() {
    let timeout = Duration::from_millis(400);
    let config = ServeConfig::default()
        .header_read_timeout(timeout)
        .idle_timeout(Duration::from_secs(60));
    let server = serve(config).await;
    let mut conn = server.connect().await;
    let head = RawRequest::post("/mcp").json(PING).head();
    let started = Instant::now();
    let mut cut_off = false;
    // One byte every 50 ms: the whole head would take several seconds.
    for byte in &head {
        if conn.send(std::slice::from_ref(byte)).await.is_err() {
            cut_off = true;
            break;
        }
        if conn.closed(Duration::from_millis(50)).await {
            cut_off = true;
            break;
        }
    }
    let elapsed = started.elapsed();
    assert!(cut_off, "the trickle was never cut off");
    assert!(
        elapsed >= timeout && elapsed < timeout * 4,
        "cut off after {elapsed:?}, the timeout is {timeout:?}"
    );
}

/// A connection that sends nothing is closed at the header read timeout too
/// (before the protocol is even known), and one idle between requests.
#[tokio::test]
async fn silent_and_kept_alive_connections_are_closed_in_time() {
    let config = ServeConfig::default()
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300));
    let server = serve(config).await;
    let mut silent = server.connect().await;
    let started = Instant::now();
    assert!(silent.closed(SHORT).await);
    assert!(started.elapsed() < Duration::from_secs(2));

    let mut kept = server.connect().await;
    assert_pong(&kept.request(&RawRequest::post("/mcp").json(PING)).await);
    let started = Instant::now();
    assert!(kept.closed(SHORT).await);
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// `max_connections` bounds what is served at once: idle connections up to
/// it hold their slots, the next waits unanswered (in the kernel's backlog),
/// and it is served as soon as a slot frees.
#[tokio::test]
async fn many_idle_connections_are_bounded_by_max_connections() {
    let config = ServeConfig::default()
        .max_connections(4)
        .header_read_timeout(Duration::from_secs(30))
        .idle_timeout(Duration::from_secs(30));
    let server = serve(config).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        let mut conn = server.connect().await;
        assert_pong(&conn.request(&RawRequest::post("/mcp").json(PING)).await);
        idle.push(conn);
    }
    let mut waiting = server.connect().await;
    waiting
        .send(&RawRequest::post("/mcp").json(PING).to_bytes())
        .await
        .unwrap();
    assert!(
        !waiting.closed(Duration::from_millis(500)).await,
        "the fifth connection must not be answered or closed while four are open"
    );
    drop(idle.pop());
    assert_pong(&waiting.response().await);
}

/// Many idle connections beyond the limit all end, by the idle and header
/// timeouts, and the server serves again afterwards.
#[tokio::test]
async fn a_crowd_of_idle_connections_drains_by_the_timeouts() {
    let config = ServeConfig::default()
        .max_connections(16)
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300));
    let server = serve(config).await;
    let mut crowd = Vec::new();
    for _ in 0..64 {
        crowd.push(server.connect().await);
    }
    let started = Instant::now();
    for conn in &mut crowd {
        assert!(conn.closed(Duration::from_secs(10)).await);
    }
    // 64 connections, 16 at a time, 300 ms each: four rounds and change.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let mut conn = server.connect().await;
    assert_pong(&conn.request(&RawRequest::post("/mcp").json(PING)).await);
}

// ---------------------------------------------------------------------------
// Pipelining behind a refusal
// ---------------------------------------------------------------------------

/// A request over the body ceiling is refused 413 on its declared length and
/// the connection closed: the pipelined request behind it, in the same
/// write, is never served as a request.
#[tokio::test]
async fn a_pipelined_request_behind_a_413_is_not_served() {
    let router = chain(Server::builder().body_ceiling(100));
    let server = TestServer::start(router).await;
    for framing in [Framing::ContentLength, Framing::Chunked(50)] {
        let mut conn = server.connect().await;
        let mut bytes = RawRequest::post("/mcp")
            .json(wymcp_tests::wire::json_of_len(200))
            .framing(framing)
            .to_bytes();
        bytes.extend(RawRequest::post("/mcp").json(PING).to_bytes());
        conn.send(&bytes).await.unwrap();
        let response = conn.response().await;
        assert_eq!(response.status, 413, "{framing:?}: {response:?}");
        assert!(response.closes(), "{framing:?}");
        let error = response.rpc_error();
        assert_eq!(error.id, Value::Null);
        assert_eq!(error.code, -32600);
        assert_eq!(error.data["ceiling"], 100);
        assert!(conn.closed(SHORT).await, "{framing:?}: the ping was served");
    }
}

// ---------------------------------------------------------------------------
// HTTP/2: stream floods and rapid resets
// ---------------------------------------------------------------------------

fn h2_post(server: &TestServer, stream: u32, length: usize) -> Vec<u8> {
    let authority = server.host();
    let length = length.to_string();
    headers_frame(
        stream,
        false,
        &[
            (":method", b"POST"),
            (":scheme", b"http"),
            (":authority", authority.as_bytes()),
            (":path", b"/mcp"),
            ("content-type", b"application/json"),
            ("content-length", length.as_bytes()),
        ],
    )
}

/// Streams past `h2_max_concurrent_streams` are refused with
/// `RST_STREAM REFUSED_STREAM` (a client ignoring the advertised setting);
/// the streams within it are still served.
#[tokio::test]
async fn an_http2_stream_flood_is_refused_past_max_concurrent_streams() {
    let config = ServeConfig::default().h2_max_concurrent_streams(4);
    let server = serve(config).await;
    let mut h2 = server.raw_h2().await;
    let settings = h2
        .until(|f| f.kind == H2Frame::SETTINGS && f.flags == 0)
        .await
        .unwrap();
    // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 4 is advertised.
    assert!(
        settings.payload.chunks(6).any(|s| s == [0, 3, 0, 0, 0, 4]),
        "{settings:?}"
    );
    // Four stalled streams (bodies declared, never sent), then four more.
    let mut flood = Vec::new();
    for i in 0..8u32 {
        flood.extend(h2_post(&server, 1 + 2 * i, PING.len()));
    }
    h2.send(&flood).await.unwrap();
    for stream in [9, 11, 13, 15] {
        let refused = h2
            .until(|f| f.kind == H2Frame::RST_STREAM && f.stream == stream)
            .await
            .unwrap_or_else(|| panic!("stream {stream} was not refused"));
        assert_eq!(refused.error_code(), Some(0x7), "REFUSED_STREAM");
    }
    // The first four finish their bodies and are answered 200.
    for stream in [1, 3, 5, 7] {
        h2.send(&data_frame(stream, true, PING)).await.unwrap();
        let answer = h2
            .until(|f| f.kind == H2Frame::HEADERS && f.stream == stream)
            .await
            .unwrap();
        assert_eq!(answer.status(), Some(200), "stream {stream}");
    }
}

/// "Rapid reset" (CVE-2023-44487): a client opening streams and resetting
/// them at once, more than `h2_max_pending_accept_reset_streams` of them,
/// gets `GOAWAY ENHANCE_YOUR_CALM` and the connection closed.
#[tokio::test]
async fn http2_rapid_resets_past_the_limit_close_the_connection() {
    let config = ServeConfig::default().h2_max_pending_accept_reset_streams(5);
    let server = serve(config).await;
    let mut h2 = server.raw_h2().await;
    let mut burst = Vec::new();
    for i in 0..12u32 {
        burst.extend(h2_post(&server, 1 + 2 * i, PING.len()));
        burst.extend(rst_frame(1 + 2 * i, 0x8));
    }
    h2.send(&burst).await.unwrap();
    let goaway = h2
        .until(|f| f.kind == H2Frame::GOAWAY)
        .await
        .expect("a GOAWAY");
    assert_eq!(goaway.error_code(), Some(0xb), "ENHANCE_YOUR_CALM");
    assert_eq!(h2.until(|_| false).await, None, "the connection closed");

    // Within the limit, the connection lives on and serves.
    let mut h2 = server.raw_h2().await;
    let mut burst = Vec::new();
    for i in 0..4u32 {
        burst.extend(h2_post(&server, 1 + 2 * i, PING.len()));
        burst.extend(rst_frame(1 + 2 * i, 0x8));
    }
    burst.extend(h2_post(&server, 9, PING.len()));
    burst.extend(data_frame(9, true, PING));
    h2.send(&burst).await.unwrap();
    let answer = h2
        .until(|f| f.kind == H2Frame::GOAWAY || (f.kind == H2Frame::HEADERS && f.stream == 9))
        .await
        .unwrap();
    assert_eq!(answer.kind, H2Frame::HEADERS, "{answer:?}");
    assert_eq!(answer.status(), Some(200));
}

/// An HTTP/2 header list over `max_header_bytes` is answered 431 on its
/// stream, before any stage runs; the connection serves on.
#[tokio::test]
async fn an_http2_header_list_over_max_header_bytes_is_431() {
    // Below hyper's own default (16 KiB), so the setting is what refuses.
    let config = ServeConfig::default().max_header_bytes(8 * 1024);
    let server = serve(config).await;
    let mut h2 = server.raw_h2().await;
    let authority = server.host();
    let big = vec![b'v'; 10 * 1024];
    let bytes = headers_continued(
        1,
        true,
        &[
            (":method", b"POST"),
            (":scheme", b"http"),
            (":authority", authority.as_bytes()),
            (":path", b"/mcp"),
            ("x-flood", &big),
        ],
    );
    h2.send(&bytes).await.unwrap();
    let answer = h2
        .until(|f| f.stream == 1 && matches!(f.kind, H2Frame::HEADERS | H2Frame::RST_STREAM))
        .await
        .unwrap();
    assert_eq!(answer.kind, H2Frame::HEADERS, "{answer:?}");
    assert_eq!(answer.status(), Some(431));
    // The connection still serves a normal request.
    let mut next = h2_post(&server, 3, PING.len());
    next.extend(data_frame(3, true, PING));
    h2.send(&next).await.unwrap();
    let answer = h2
        .until(|f| f.stream == 3 && f.kind == H2Frame::HEADERS)
        .await
        .unwrap();
    assert_eq!(answer.status(), Some(200));
}

// ---------------------------------------------------------------------------
// Log injection
// ---------------------------------------------------------------------------

/// A `MakeWriter` collecting what the fmt subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Client-controlled text that reaches a log line (a rejection's message
/// names the unknown tool, the method) cannot start a line of its own: with
/// the plain fmt subscriber every event is exactly one line, the client's
/// CR/LF escaped.
#[tokio::test(flavor = "current_thread")]
async fn client_text_cannot_forge_a_log_line() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = serve(ServeConfig::default()).await;
    let forged = "INFO wymcp::rejection: forged";
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": format!("x\r\n{forged}"), "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": format!("nope\n{forged}")}),
    ] {
        let mut conn = server.connect().await;
        let response = conn
            .request(&RawRequest::post("/mcp").json(serde_json::to_vec(&body).unwrap()))
            .await;
        assert_eq!(response.rpc_error().id, body["id"]);
    }
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("forged"),
        "the rejections were logged: {logs}"
    );
    for line in logs.lines() {
        assert!(
            !line
                .trim_start()
                .starts_with("INFO wymcp::rejection: forged"),
            "a forged line: {logs}"
        );
        assert!(!line.contains('\r'), "a raw CR: {logs:?}");
    }
}

/// Streams the server must reset for the client's protocol errors (here a
/// `connection` header, malformed in HTTP/2, RFC 9113 §8.2.2) each cost a
/// `RST_STREAM PROTOCOL_ERROR`; past `h2_max_local_error_reset_streams`
/// the connection gets `GOAWAY ENHANCE_YOUR_CALM` and is closed.
#[tokio::test]
async fn http2_protocol_error_resets_past_the_limit_close_the_connection() {
    let config = ServeConfig::default().h2_max_local_error_reset_streams(3);
    let server = serve(config).await;
    let authority = server.host();
    let malformed = |stream: u32| {
        headers_frame(
            stream,
            true,
            &[
                (":method", b"POST"),
                (":scheme", b"http"),
                (":authority", authority.as_bytes()),
                (":path", b"/mcp"),
                ("connection", b"keep-alive"),
            ],
        )
    };
    let mut h2 = server.raw_h2().await;
    h2.send(&malformed(1)).await.unwrap();
    let reset = h2
        .until(|f| f.kind == H2Frame::RST_STREAM && f.stream == 1)
        .await
        .unwrap();
    assert_eq!(reset.error_code(), Some(0x1), "PROTOCOL_ERROR");
    let mut burst = Vec::new();
    for i in 1..10u32 {
        burst.extend(malformed(1 + 2 * i));
    }
    h2.send(&burst).await.unwrap();
    let goaway = h2
        .until(|f| f.kind == H2Frame::GOAWAY)
        .await
        .expect("a GOAWAY");
    assert_eq!(goaway.error_code(), Some(0xb), "ENHANCE_YOUR_CALM");
    assert_eq!(h2.until(|_| false).await, None, "the connection closed");
}
