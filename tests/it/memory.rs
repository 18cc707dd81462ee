//! The idle memory release (`wymcp::memory`), through the real router over
//! TCP: it happens once after a burst of large bodies, and never while calls
//! keep coming. Observed through `ReleaseMemory::releases`, not RSS (which
//! other tests in the same binary would disturb).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wymcp::Server;
use wymcp::axum::Router;
use wymcp::memory::{QUIET, ReleaseMemory};
use wymcp_tests::wire::{RawRequest, TestServer, json_of_len};

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// The default chain with the release layer after `threshold` body bytes,
/// and the layer's handle.
fn router(threshold: u64) -> (Router, ReleaseMemory) {
    let server = Arc::new(Server::builder().build().unwrap());
    let release = ReleaseMemory::after(threshold);
    let router = wymcp::chain::post::router(server).layer(release.clone());
    (router, release)
}

/// `count` pings, one after another on one connection.
async fn pings(listening: &TestServer, count: usize) {
    let mut conn = listening.connect().await;
    for _ in 0..count {
        let response = conn.request(&RawRequest::post("/mcp").json(PING)).await;
        assert_eq!(response.status, 200, "{response:?}");
    }
}

/// Waits up to `patience` for `release` to have released `want` times.
async fn releases_reach(release: &ReleaseMemory, want: u64, patience: Duration) -> u64 {
    let start = Instant::now();
    while release.releases() < want && start.elapsed() < patience {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    release.releases()
}

/// Rule: once the bodies read since the last release reach the threshold
/// and the server goes quiet, it releases memory exactly once; the count
/// starts again after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_large_bodies_is_followed_by_one_release() {
    const BODIES: usize = 8;
    const LEN: usize = 1_000_000;
    // The threshold is the burst's bytes: only its last body crosses it.
    let (router, server) = router((BODIES * LEN) as u64);
    let listening = TestServer::start(router).await;
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
    assert_eq!(server.releases(), 1, "released once, not again");
}

/// Rule: a stream of small calls, with pauses, never reaches the default
/// threshold (64 MiB), so it never releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_calls_never_release_with_the_default_threshold() {
    let (router, server) = router(wymcp::memory::DEFAULT_RELEASE_AFTER);
    assert_eq!(server.threshold(), 64 * 1024 * 1024);
    let listening = TestServer::start(router).await;
    for _ in 0..3 {
        pings(&listening, 200).await;
        tokio::time::sleep(QUIET * 2).await;
    }
    assert_eq!(server.releases(), 0);
}

/// Rule: past the threshold, calls that keep coming (never a quiet period)
/// hold the release back; it comes once they stop. Served with plain
/// `axum::serve`, as the benchmark serves the chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_stream_holds_the_release_back_until_it_stops() {
    // A few dozen pings cross it; the stream goes on for well over QUIET.
    let (router, server) = router(1_000);
    let listening = TestServer::start_unannounced(router).await;
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
    assert_eq!(server.releases(), 0, "no release while calls came");
    assert_eq!(
        releases_reach(&server, 1, Duration::from_secs(10)).await,
        1,
        "released once the calls stopped"
    );
}

/// Rule: below its threshold the layer never releases, however quiet the
/// server; the same bodies past it do. (Before, this test sent 2 MB to a
/// server with the release turned off, under the 64 MiB default: it could
/// not fail.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_release_below_the_threshold() {
    const LEN: usize = 2_000_000;
    let (router, server) = router(3 * LEN as u64);
    let listening = TestServer::start(router).await;
    let mut conn = listening.connect().await;
    for _ in 0..2 {
        let response = conn
            .request(&RawRequest::post("/mcp").json(json_of_len(LEN)))
            .await;
        assert!(response.status < 500, "{response:?}");
    }
    tokio::time::sleep(QUIET * 3).await;
    assert_eq!(server.releases(), 0, "4 MB read, under the 6 MB threshold");
    let response = conn
        .request(&RawRequest::post("/mcp").json(json_of_len(LEN)))
        .await;
    assert!(response.status < 500, "{response:?}");
    assert_eq!(
        releases_reach(&server, 1, Duration::from_secs(10)).await,
        1,
        "6 MB read: released once quiet"
    );
}
