//! Soak: a bounded mixed load against `examples/everything` as a child
//! process — valid requests, invalid ones, oversize ones, stalled bodies
//! abandoned, SSE streams (progress and listen) cancelled midway — then
//! the checks: every answer's status in the chain's table, no 5xx, no panic,
//! and the server's RSS after the run (and a settle period) within 5% of its
//! RSS before it (after a warm-up of the same mix).
//!
//! Ignored by default: `scripts/soak [--seconds N]` runs it (30 s from
//! `scripts/test`, 10 minutes as the long soak). `WYMCP_SOAK_SECONDS` sets
//! the load's length.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wymcp_tests::child::Everything;
use wymcp_tests::wire::{RawConn, RawRequest};

/// Every status the default chain answers with, and hyper before it.
/// (`429` only as a listen stream refused for the caller's share, with
/// `Retry-After`; the listen arm fails any other.)
const TABLE: [u16; 13] = [
    200, 202, 400, 401, 403, 404, 405, 408, 413, 414, 415, 429, 431,
];
const WORKERS: usize = 16;
/// A listen stream acknowledged, then cancelled by its client.
const LISTEN_ACKNOWLEDGED: &str = "listen stream, cancelled";
/// A listen stream refused `429` with `Retry-After`: the caller (every
/// worker, from one address) held its share of streams.
const LISTEN_REFUSED_FOR_SHARE: &str = "listen stream, refused for the caller's share";

fn meta(extra: &Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut meta, extra) {
        m.extend(e.clone());
    }
    meta
}

fn modern(host: &str, id: u64, method: &str, name: Option<&str>, params: &Value) -> RawRequest {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = RawRequest::post("/mcp")
        .host(host)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    request.json(serde_json::to_vec(&body).unwrap())
}

#[derive(Debug, Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    kinds: BTreeMap<&'static str, u64>,
    failures: Vec<String>,
}

impl Tally {
    fn status(&mut self, kind: &'static str, status: u16) {
        *self.statuses.entry(status).or_default() += 1;
        *self.kinds.entry(kind).or_default() += 1;
    }
    fn cancelled(&mut self, kind: &'static str) {
        *self.kinds.entry(kind).or_default() += 1;
    }
}

/// One request of the mix, chosen by `n`.
async fn one(addr: std::net::SocketAddr, n: u64, tally: &Mutex<Tally>) {
    let host = addr.to_string();
    let mut conn = RawConn::connect(addr).await;
    let (kind, request, expect): (&'static str, RawRequest, u16) = match n % 10 {
        0 => (
            "valid legacy ping",
            RawRequest::post("/mcp")
                .host(&host)
                .json(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}}"#)),
            200,
        ),
        1 => (
            "valid tools/call",
            modern(
                &host,
                n,
                "tools/call",
                Some("test_simple_text"),
                &json!({"name": "test_simple_text", "arguments": {}, "_meta": meta(&json!({}))}),
            ),
            200,
        ),
        2 => (
            "invalid JSON",
            RawRequest::post("/mcp")
                .host(&host)
                .json(&b"{\"jsonrpc\":"[..]),
            400,
        ),
        3 => (
            "no JSON content type",
            RawRequest::post("/mcp").host(&host).body(&b"{}"[..]),
            415,
        ),
        4 => (
            "header mismatch",
            modern(
                &host,
                n,
                "tools/list",
                None,
                &json!({"_meta": meta(&json!({}))}),
            )
            .header("Mcp-Method", "tools/call"),
            400,
        ),
        5 => (
            "oversize (declared)",
            RawRequest::post("/mcp")
                .host(&host)
                .header("Content-Type", "application/json")
                .header("Content-Length", "9000000")
                .framing(wymcp_tests::wire::Framing::Bare),
            413,
        ),
        6 => {
            // A stalled body, abandoned by its client.
            let head = RawRequest::post("/mcp")
                .host(&host)
                .json(vec![b' '; 50_000])
                .head();
            let _ = conn.send(&head).await;
            let _ = conn.send(&[b' '; 2000]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            tally.lock().unwrap().cancelled("stalled body, abandoned");
            return;
        }
        7 => {
            // A progress SSE stream, cancelled after its first event.
            let params = json!({"name": "test_tool_with_progress", "arguments": {},
                "_meta": meta(&json!({"progressToken": n}))});
            let request = modern(
                &host,
                n,
                "tools/call",
                Some("test_tool_with_progress"),
                &params,
            );
            let _ = conn.send(&request.to_bytes()).await;
            if conn
                .read_until(b"notifications/progress", Duration::from_secs(10))
                .await
            {
                tally
                    .lock()
                    .unwrap()
                    .cancelled("progress stream, cancelled");
            } else {
                tally
                    .lock()
                    .unwrap()
                    .failures
                    .push(format!("{n}: no progress event"));
            }
            return;
        }
        8 => {
            // A listen stream, cancelled after its acknowledgement. Every
            // worker connects from 127.0.0.1, so all of them share one
            // caller's stream share (`max_streams_per_caller`), and a
            // cancelled stream's place is given back only once the server
            // notices the closed connection: a `429` with `Retry-After` is
            // the share at work, not a lost acknowledgement.
            let params =
                json!({"_meta": meta(&json!({})), "notifications": {"toolsListChanged": true}});
            let request = modern(&host, n, "subscriptions/listen", None, &params);
            let _ = conn.send(&request.to_bytes()).await;
            let wait = Duration::from_secs(10);
            let Some(head) = conn.head(wait).await else {
                tally
                    .lock()
                    .unwrap()
                    .failures
                    .push(format!("{n}: listen: no response head"));
                return;
            };
            let tally_now = |outcome: Result<&'static str, String>| {
                let mut tally = tally.lock().unwrap();
                match outcome {
                    Ok(kind) => tally.status(kind, head.status),
                    Err(failure) => {
                        *tally.statuses.entry(head.status).or_default() += 1;
                        tally.failures.push(failure);
                    }
                }
            };
            match head.status {
                200 => {
                    if conn.read_until(b"acknowledged", wait).await {
                        tally_now(Ok(LISTEN_ACKNOWLEDGED));
                    } else {
                        tally_now(Err(format!("{n}: no acknowledgement")));
                    }
                }
                429 if head.header("retry-after").is_some() => {
                    tally_now(Ok(LISTEN_REFUSED_FOR_SHARE));
                }
                429 => tally_now(Err(format!("{n}: listen: 429 without Retry-After"))),
                status => tally_now(Err(format!("{n}: listen: {status}"))),
            }
            return;
        }
        _ => (
            "unknown method",
            modern(
                &host,
                n,
                "bogus/method",
                None,
                &json!({"_meta": meta(&json!({}))}),
            ),
            404,
        ),
    };
    let sent = conn.send(&request.to_bytes()).await;
    if sent.is_err() {
        tally
            .lock()
            .unwrap()
            .failures
            .push(format!("{kind}: write failed"));
        return;
    }
    let response = conn.response().await;
    let mut tally = tally.lock().unwrap();
    tally.status(kind, response.status);
    if response.status != expect {
        tally.failures.push(format!(
            "{kind}: {} (expected {expect}) {:?}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
}

async fn load(addr: std::net::SocketAddr, length: Duration, tally: Arc<Mutex<Tally>>) {
    let until = Instant::now() + length;
    let mut workers = Vec::new();
    for w in 0..WORKERS as u64 {
        let tally = tally.clone();
        workers.push(tokio::spawn(async move {
            let mut n = w;
            while Instant::now() < until {
                one(addr, n, &tally).await;
                n += WORKERS as u64 + 1;
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a long run: scripts/soak runs it"]
async fn soak() {
    let seconds: u64 = std::env::var("WYMCP_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let server = Everything::start(&[], &[]);
    let addr = server.addr();

    // Warm-up: the same mix, so allocator arenas and caches exist before
    // the baseline is taken.
    let warm = Arc::new(Mutex::new(Tally::default()));
    load(
        addr,
        Duration::from_secs(seconds.min(60) / 6 + 2),
        warm.clone(),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = server.rss_bytes().unwrap();

    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    load(addr, Duration::from_secs(seconds), tally.clone()).await;
    let elapsed = started.elapsed();
    // Settle: abandoned bodies reach the read timeout (15 s), streams end.
    tokio::time::sleep(Duration::from_secs(17)).await;
    let after = server.rss_bytes().unwrap();

    let tally = tally.lock().unwrap();
    let total: u64 = tally.kinds.values().sum();
    #[allow(clippy::cast_precision_loss)]
    let growth = (after as f64 - before as f64) / before as f64 * 100.0;
    eprintln!(
        "soak: {total} exchanges in {elapsed:?} ({} per s)\n  by kind: {:?}\n  by status: {:?}\n  \
         RSS before {} KiB, after {} KiB ({growth:+.2}%)\n  panics: {}\n  failures: {}",
        total / elapsed.as_secs().max(1),
        tally.kinds,
        tally.statuses,
        before / 1024,
        after / 1024,
        server.panics(),
        tally.failures.len(),
    );
    for failure in tally.failures.iter().take(10) {
        eprintln!("  {failure}");
    }
    assert!(total > 0);
    let outside: Vec<_> = tally
        .statuses
        .keys()
        .filter(|s| !TABLE.contains(s))
        .collect();
    assert!(outside.is_empty(), "answers outside the table: {outside:?}");
    assert!(
        tally.statuses.keys().all(|s| *s < 500),
        "5xx answers: {:?}",
        tally.statuses
    );
    assert_eq!(server.panics(), 0, "the server panicked");
    // A server refusing every listen stream would pass the arm's checks:
    // some must have been acknowledged.
    let acknowledged = tally.kinds.get(LISTEN_ACKNOWLEDGED).copied().unwrap_or(0);
    assert!(acknowledged > 0, "no listen stream was acknowledged");
    assert!(
        tally.failures.is_empty(),
        "{} failures",
        tally.failures.len()
    );
    assert!(
        growth.abs() <= 5.0 || after <= before,
        "RSS after {after} is {growth:+.2}% of RSS before {before}"
    );
}
