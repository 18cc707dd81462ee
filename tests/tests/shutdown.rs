//! Graceful shutdown of a real process: `examples/everything` gets SIGTERM
//! while a request is in flight and a listen stream is open. The request
//! finishes 200, the listen stream gets its clean close (the `complete`
//! result, then the end of the stream), new connections are refused, and
//! the process exits 0.

#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wymcp_tests::child::Everything;
use wymcp_tests::wire::{RawConn, RawRequest};

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

    // New connections are refused once the signal is handled.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Err(e) = tokio::net::TcpStream::connect(addr).await {
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
            break;
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
