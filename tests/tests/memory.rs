//! The idle memory release (`wymcp::memory`), through the real router over
//! TCP: it happens once after a burst of large bodies, and never while calls
//! keep coming. Observed through `Server::memory_releases`, not RSS (which
//! other tests in the same binary would disturb).

#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use wymcp::Server;
use wymcp::memory::QUIET;
use wymcp_tests::wire::{RawRequest, TestServer, json_of_len};

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn server(release_memory_after: Option<u64>) -> Arc<Server> {
    Arc::new(
        Server::builder()
            .release_memory_after(release_memory_after)
            .build()
            .unwrap(),
    )
}

/// `count` pings, one after another on one connection.
async fn pings(listening: &TestServer, count: usize) {
    let mut conn = listening.connect().await;
    for _ in 0..count {
        let response = conn.request(&RawRequest::post("/mcp").json(PING)).await;
        assert_eq!(response.status, 200, "{response:?}");
    }
}

/// Waits up to `patience` for `server` to have released `want` times.
async fn releases_reach(server: &Server, want: u64, patience: Duration) -> u64 {
    let start = Instant::now();
    while server.memory_releases() < want && start.elapsed() < patience {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.memory_releases()
}

/// Rule: once the bodies read since the last release reach the threshold
/// and the server goes quiet, it releases memory exactly once; the count
/// starts again after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_large_bodies_is_followed_by_one_release() {
    const BODIES: usize = 8;
    const LEN: usize = 1_000_000;
    // The threshold is the burst's bytes: only its last body crosses it.
    let server = server(Some((BODIES * LEN) as u64));
    let listening = TestServer::start(wymcp::chain::post::router(server.clone())).await;
    pings(&listening, 3).await;

    let body = json_of_len(LEN);
    let mut conns = Vec::new();
    for _ in 0..BODIES {
        conns.push(listening.connect().await);
    }
    let burst: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let request = RawRequest::post("/mcp").json(body.clone());
            tokio::spawn(async move { conn.request(&request).await })
        })
        .collect();
    for answer in burst {
        let response = answer.await.unwrap();
        assert!(response.status < 500, "{response:?}");
    }

    assert_eq!(
        releases_reach(&server, 1, Duration::from_secs(10)).await,
        1,
        "released once after the burst"
    );
    // Quiet again, a few small calls, and quiet for long enough that a
    // timer they armed would have released: the count started again after
    // the release, so they arm nothing.
    tokio::time::sleep(QUIET * 2).await;
    pings(&listening, 10).await;
    tokio::time::sleep(QUIET * 5).await;
    assert_eq!(server.memory_releases(), 1, "released once, not again");
}

/// Rule: a stream of small calls, with pauses, never reaches the default
/// threshold (64 MiB), so it never releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_calls_never_release_with_the_default_threshold() {
    let server = Arc::new(Server::builder().build().unwrap());
    assert_eq!(
        server.release_memory_after(),
        Some(wymcp::memory::DEFAULT_RELEASE_AFTER)
    );
    let listening = TestServer::start(wymcp::chain::post::router(server.clone())).await;
    for _ in 0..3 {
        pings(&listening, 200).await;
        tokio::time::sleep(QUIET * 2).await;
    }
    assert_eq!(server.memory_releases(), 0);
}

/// Rule: past the threshold, calls that keep coming (never a quiet period)
/// hold the release back; it comes once they stop. Served with plain
/// `axum::serve`, as the benchmark serves the chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_stream_holds_the_release_back_until_it_stops() {
    // A few dozen pings cross it; the stream goes on for well over QUIET.
    let server = server(Some(1_000));
    let listening = TestServer::start_unannounced(wymcp::chain::post::router(server.clone())).await;
    let start = Instant::now();
    let mut sent = 0;
    while start.elapsed() < QUIET * 4 {
        pings(&listening, 10).await;
        sent += 10;
    }
    assert!(
        sent * PING.len() > 1_000,
        "the stream crossed the threshold"
    );
    assert_eq!(server.memory_releases(), 0, "no release while calls came");
    assert_eq!(
        releases_reach(&server, 1, Duration::from_secs(10)).await,
        1,
        "released once the calls stopped"
    );
}

/// Rule: `None` turns the release off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_release_when_turned_off() {
    let server = server(None);
    let listening = TestServer::start(wymcp::chain::post::router(server.clone())).await;
    let mut conn = listening.connect().await;
    let response = conn
        .request(&RawRequest::post("/mcp").json(json_of_len(2_000_000)))
        .await;
    assert!(response.status < 500, "{response:?}");
    tokio::time::sleep(QUIET * 3).await;
    assert_eq!(server.memory_releases(), 0);
}
