//! Graceful shutdown of a real process: `examples/everything` gets SIGTERM
//! while a request is in flight and a listen stream is open. The request
//! finishes 200, the listen stream gets its clean close (the `complete`
//! result, then the end of the stream), new connections are refused, and
//! the process exits 0. In process, over HTTP/2: the shutdown's `GOAWAY`,
//! and an idle connection's.

use std::future::IntoFuture as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wymcp::ServeConfig;
use wymcp_tests::child::Everything;
use wymcp_tests::wire::{H2Frame, RawConn, RawH2, RawRequest, data_frame, headers_frame};

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

fn listen_request(host: &str) -> RawRequest {
    let body = json!({
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "shutdown", "version": "1"},
            },
            "notifications": {"toolsListChanged": true},
        },
    });
    RawRequest::post("/mcp")
        .host(host)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .json(serde_json::to_vec(&body).unwrap())
}

/// The `data:` payloads of an SSE body, as JSON.
fn events(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn sigterm_finishes_in_flight_work_closes_listen_streams_and_exits_0() {
    let mut server = Everything::start(&[], &[]);
    let addr = server.addr();
    let host = addr.to_string();

    // A listen stream, open.
    let mut listen = RawConn::connect(addr).await;
    listen
        .send(&listen_request(&host).to_bytes())
        .await
        .unwrap();
    // A request in flight: its head and half its body sent.
    let mut slow = RawConn::connect(addr).await;
    let (first, rest) = PING.split_at(PING.len() / 2);
    let head = RawRequest::post("/mcp").host(&host).json(PING).head();
    slow.send(&head).await.unwrap();
    slow.send(first).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    server.terminate();

    // New connections are refused once the signal is handled. Until then a
    // connect may still land in the closing listener's backlog: accepted, or
    // reset as the listener goes; neither is the refusal we wait for.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
                break;
            }
            Ok(_) => {}
        }
        assert!(Instant::now() < deadline, "still accepting after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The request in flight finishes, 200, on a connection that then closes.
    slow.send(rest).await.unwrap();
    let response = slow.response().await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
    assert!(response.closes(), "{response:?}");
    assert!(slow.closed(Duration::from_secs(5)).await);

    // The listen stream: acknowledged, then the complete result, then its end
    // (the response reads whole only because the stream ended).
    let stream = listen.response().await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let events = events(&stream.body);
    assert_eq!(
        events.first().map(|e| &e["method"]),
        Some(&json!("notifications/subscriptions/acknowledged")),
        "{events:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["id"], "listen-1", "{events:?}");
    assert_eq!(last["result"]["resultType"], "complete", "{events:?}");

    let status = server
        .exited_within(Duration::from_secs(10))
        .expect("the process exits after draining");
    assert!(status.success(), "exit status {status:?}");
}

// ---------------------------------------------------------------------------
// In process, over HTTP/2
// ---------------------------------------------------------------------------

fn h2_ping_head(authority: &str, stream: u32) -> Vec<u8> {
    let length = PING.len().to_string();
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

/// Over HTTP/2 a graceful shutdown sends `GOAWAY` (NO_ERROR), lets the
/// stream in flight finish 200, then closes; the serving future resolves
/// `Ok` and the port refuses connections.
#[tokio::test]
async fn over_http2_a_graceful_shutdown_sends_goaway_and_finishes_the_stream() {
    let server = Arc::new(wymcp::Server::builder().build().unwrap());
    let router = wymcp::chain::post::router(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(
        wymcp::serve_with(listener, router, ServeConfig::default())
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .closing_streams_of(&server)
            .into_future(),
    );
    let authority = addr.to_string();
    let mut h2 = RawH2::connect(addr).await;
    h2.send(&h2_ping_head(&authority, 1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    stop.send(()).unwrap();
    let goaway = h2
        .until(|f| f.kind == H2Frame::GOAWAY)
        .await
        .expect("a GOAWAY");
    assert_eq!(goaway.error_code(), Some(0), "NO_ERROR");

    h2.send(&data_frame(1, true, PING)).await.unwrap();
    let answer = h2
        .until(|f| f.kind == H2Frame::HEADERS && f.stream == 1)
        .await
        .expect("the stream's answer");
    assert_eq!(answer.status(), Some(200));
    assert_eq!(h2.until(|_| false).await, None, "the connection closed");

    let result = tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serving ends after the drain")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    let refused = tokio::net::TcpStream::connect(addr).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}

/// An HTTP/2 connection with no stream and no traffic is told `GOAWAY` at
/// the idle timeout and closed.
#[tokio::test]
async fn an_idle_http2_connection_is_closed_at_the_idle_timeout() {
    let server = wymcp::Server::builder().build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServeConfig::default().idle_timeout(Duration::from_millis(300));
    tokio::spawn(
        wymcp::serve_with(listener, wymcp::chain::post::router(server), config).into_future(),
    );
    let mut h2 = RawH2::connect(addr).await;
    let started = Instant::now();
    let goaway = h2
        .until(|f| f.kind == H2Frame::GOAWAY)
        .await
        .expect("a GOAWAY");
    assert_eq!(goaway.error_code(), Some(0));
    assert_eq!(h2.until(|_| false).await, None, "the connection closed");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
}
