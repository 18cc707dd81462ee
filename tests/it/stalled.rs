//! 1,000 stalled bodies against one server, with its memory bounded. In a
//! process of its own ([`alone`]): the test reads the process's RSS, which
//! the other tests of the binary, running beside it, would disturb.

use std::time::Duration;

use serde_json::json;
use wymcp::{ServeConfig, Server};
use wymcp_tests::wire::{RawRequest, RawResponse, TestServer, rss_bytes};

use crate::support::alone;

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn chain(builder: wymcp::ServerBuilder) -> wymcp::axum::Router {
    wymcp::chain::post::router(builder.build().unwrap())
}

fn assert_pong(response: &RawResponse) {
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
}

/// 1,000 connections each declare a 100,000-byte body, send 1,000 bytes and
/// stall. The server holds them all with bounded memory, still answers a
/// good request meanwhile, and each stalled one gets the parse step's 408
/// at the read timeout.
#[test]
fn a_thousand_stalled_bodies_stay_within_bounded_memory() {
    alone(
        "stalled::a_thousand_stalled_bodies_stay_within_bounded_memory",
        || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(stalled_bodies());
        },
    );
}

async fn stalled_bodies() {
    const STALLED: usize = 1000;
    // From one address, so past the default per-peer cap and the default
    // share of body bytes: this test is about what a stalled body holds,
    // not about who may hold many (tests/it/ledger.rs is).
    let builder = Server::builder()
        .limits(wymcp::Limits {
            bodies_per_caller: wymcp::Limits::default().bodies_in_flight,
            ..wymcp::Limits::default()
        })
        .read_timeout(Duration::from_secs(4));
    let config = ServeConfig::default().max_connections_per_peer(2 * STALLED);
    let server = TestServer::start_with(chain(builder), config).await;
    // Warm the server up once, so its first allocations are in the baseline.
    let mut warm = server.connect().await;
    assert_pong(&warm.request(&RawRequest::post("/mcp").json(PING)).await);
    let before = rss_bytes().unwrap();

    let head = RawRequest::post("/mcp").json(vec![b' '; 100_000]).head();
    let mut stalled = Vec::with_capacity(STALLED);
    for _ in 0..STALLED {
        let mut conn = server.connect().await;
        conn.send(&head).await.unwrap();
        conn.send(&[b' '; 1000]).await.unwrap();
        stalled.push(conn);
    }
    // Let the server read what was sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = rss_bytes().unwrap();
    let grown = during.saturating_sub(before);
    eprintln!(
        "RSS before {} KiB, with {STALLED} stalled bodies {} KiB: {} bytes per connection",
        before / 1024,
        during / 1024,
        grown / STALLED as u64
    );
    // Both ends of 1,000 connections live in this process; 48 KiB each is
    // generous for buffers and tasks, and far below the declared bodies.
    assert!(
        grown < 48 * 1024 * STALLED as u64,
        "RSS grew by {grown} bytes for {STALLED} stalled bodies"
    );

    // Still serving.
    let mut fresh = server.connect().await;
    assert_pong(&fresh.request(&RawRequest::post("/mcp").json(PING)).await);

    // Each stalled request ends with the parse step's 408 (no body) and
    // a closed connection.
    for conn in &mut stalled {
        let response = conn.response().await;
        assert_eq!(response.status, 408, "{response:?}");
        assert!(response.body.is_empty());
        assert!(response.closes());
    }
}
