//! `wymcp-bench bus`: what a change pays to reach 1,000 listen streams of
//! another replica through Redis, against the in-process bus (issue 18).
//!
//! Two passes, each in this process: **in-process**, one server with the
//! streams open on it, a change published on it; **redis**, two servers
//! ("replicas") sharing a `redis-server` this command starts on a free
//! loopback port, the streams open on B, each change published on A. For
//! each change it times how long until every stream has read it (the
//! notification's bytes out of the SSE body, as a transport would write
//! them), one change at a time, and reads the process's CPU time over the
//! pass (`/proc/self/stat`: the servers, the streams' readers and the bus's
//! tasks; redis-server's own CPU is read from its `/proc/PID/stat`).

use std::fmt::Write as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;
use serde_json::json;
use tokio::sync::Notify;
use tower::ServiceExt as _;
use wymcp::redis::{RedisBus, RedisConfig};
use wymcp::{ListenLimits, Server};

use crate::procfs::{Stat, clock_tick};

/// What one pass measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BusPass {
    /// `in-process` or `redis`.
    pub bus: &'static str,
    /// Streams each change reached.
    pub streams: usize,
    /// Changes published, one at a time.
    pub changes: usize,
    /// Time from publishing a change until the last stream read it.
    pub p50_us: f64,
    /// The 99th percentile of the same.
    pub p99_us: f64,
    /// This process's CPU per change (servers, readers, the bus's tasks).
    pub cpu_us_per_change: f64,
    /// redis-server's CPU per change (the redis pass).
    pub redis_cpu_us_per_change: Option<f64>,
}

fn server(limits: ListenLimits, bus: Option<RedisBus>) -> Arc<Server> {
    let mut builder = Server::builder().tools_capability().listen_limits(limits);
    if let Some(bus) = bus {
        builder = builder.change_relay(bus);
    }
    Arc::new(builder.build().expect("a server"))
}

/// Opens `n` listen streams on `server`; each counts the list_changed it
/// reads into `heard` and wakes `progress`.
async fn open_streams(
    server: &Arc<Server>,
    n: usize,
    heard: &Arc<AtomicUsize>,
    progress: &Arc<Notify>,
) {
    let router = wymcp::chain::post::router(server.clone());
    for i in 0..n {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}},
            "notifications": {"toolsListChanged": true}}});
        let request = http::Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(wymcp::axum::body::Body::from(body.to_string()))
            .expect("a request");
        let Ok(response) = router.clone().oneshot(request).await;
        assert_eq!(response.status(), 200, "stream {i} opened");
        let mut body = response.into_body();
        let heard = heard.clone();
        let progress = progress.clone();
        tokio::spawn(async move {
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data()
                    && data.windows(12).any(|w| w == b"list_changed")
                {
                    heard.fetch_add(1, Ordering::Relaxed);
                    progress.notify_one();
                }
            }
        });
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1e6
}

fn cpu_us(stat: Stat) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ticks = stat.cpu_ticks as f64;
    ticks * clock_tick().as_secs_f64() * 1e6
}

/// Publishes `changes` changes on `publisher`, one at a time, timing each
/// until `streams` streams of `listening` have read it.
async fn pass(
    bus: &'static str,
    publisher: &Arc<Server>,
    listening: &Arc<Server>,
    streams: usize,
    changes: usize,
    redis_pid: Option<u32>,
) -> BusPass {
    let heard = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(Notify::new());
    open_streams(listening, streams, &heard, &progress).await;
    // The acknowledgements are read; warm the path with one change.
    let mut expected = 0;
    let mut times = Vec::with_capacity(changes);
    let me = std::process::id();
    let mut before = None;
    for round in 0..=changes {
        if round == 1 {
            before = Some((
                Stat::read(me).ok(),
                redis_pid.and_then(|p| Stat::read(p).ok()),
            ));
        }
        expected += streams;
        let started = Instant::now();
        publisher.notify_tools_changed();
        while heard.load(Ordering::Relaxed) < expected {
            let _ = tokio::time::timeout(Duration::from_secs(10), progress.notified()).await;
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{bus}: a change never reached every stream"
            );
        }
        if round > 0 {
            times.push(started.elapsed());
        }
    }
    let (me_before, redis_before) = before.unwrap_or_default();
    #[allow(clippy::cast_precision_loss)]
    let per = |after: Option<Stat>, before: Option<Stat>| {
        after
            .zip(before)
            .map(|(a, b)| cpu_us(a.since(b)) / changes as f64)
    };
    let cpu = per(Stat::read(me).ok(), me_before).unwrap_or(f64::NAN);
    let redis_cpu = per(redis_pid.and_then(|p| Stat::read(p).ok()), redis_before);
    times.sort();
    BusPass {
        bus,
        streams,
        changes,
        p50_us: percentile(&times, 0.5),
        p99_us: percentile(&times, 0.99),
        cpu_us_per_change: cpu,
        redis_cpu_us_per_change: redis_cpu,
    }
}

/// A `redis-server` on a free loopback port, killed when dropped.
#[derive(Debug)]
pub struct RedisServer(Child, u16);

impl RedisServer {
    /// The port it listens on (127.0.0.1).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.1
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a `redis-server` on a free loopback port, without persistence.
///
/// # Errors
/// When it cannot be started or does not listen in time.
pub fn start_redis() -> Result<RedisServer, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("redis-server: {e} (apt-get install redis-server)"))?;
    let server = RedisServer(child, port);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err("redis-server did not listen in time".into())
}

/// Waits until `channel` of the redis-server on `port` has `n` subscribers.
///
/// # Errors
/// When `redis-cli` cannot be run or the subscribers never come.
pub async fn await_subscribers(port: u16, channel: &str, n: usize) -> Result<(), String> {
    for _ in 0..500 {
        let out = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "PUBSUB", "NUMSUB", channel])
            .output()
            .map_err(|e| format!("redis-cli: {e}"))?;
        let subscribed = String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if subscribed >= n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("{channel} never had {n} subscribers"))
}

/// The Redis settings of the bench's replicas: the defaults, and the
/// shared key every replica signs with (a fixed one: the bench's replicas
/// are its own).
#[must_use]
pub fn redis_config() -> RedisConfig {
    let key = wymcp::mrtr::SealingKey::new("bench", [7u8; 32])
        .unwrap_or_else(|_| unreachable!("a 32-byte secret and a short id make a key"));
    RedisConfig::default().shared_key(&key)
}

/// Both passes, in-process first.
pub async fn run(streams: usize, changes: usize) -> Result<Vec<BusPass>, String> {
    let limits = ListenLimits::default()
        .max_streams(streams + 8)
        .max_streams_per_caller(streams + 8);
    let local = server(limits, None);
    let in_process = pass("in-process", &local, &local, streams, changes, None).await;
    drop(local);

    let redis = start_redis()?;
    let url = format!("redis://127.0.0.1:{}/", redis.1);
    let bus = || RedisBus::new(&url, redis_config()).map_err(|e| e.to_string());
    let a = server(limits, Some(bus()?));
    let b = server(limits, Some(bus()?));
    // Both subscribed before the first change: one published earlier would
    // reach no one (pub/sub keeps nothing).
    await_subscribers(redis.1, &RedisConfig::default().channel, 2).await?;
    let through_redis = pass("redis", &a, &b, streams, changes, Some(redis.0.id())).await;
    Ok(vec![in_process, through_redis])
}

/// The passes as a Markdown table.
#[must_use]
pub fn table(passes: &[BusPass]) -> String {
    let mut out = String::from(
        "| bus | streams | changes | p50 to the last stream | p99 | CPU / change (this process) | redis-server CPU / change |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in passes {
        let redis = p
            .redis_cpu_us_per_change
            .map_or("—".to_owned(), |c| format!("{c:.0} µs"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} µs | {:.0} µs | {:.0} µs | {redis} |",
            p.bus, p.streams, p.changes, p.p50_us, p.p99_us, p.cpu_us_per_change
        );
    }
    // The ratios of this run's own passes: the number to read, since both
    // passes share the machine's load of the moment.
    if let [local, redis] = passes
        && local.bus == "in-process"
        && redis.bus == "redis"
    {
        let _ = writeln!(
            out,
            "| redis ÷ in-process | | | {:.1}× | {:.1}× | {:.1}× | |",
            redis.p50_us / local.p50_us,
            redis.p99_us / local.p99_us,
            redis.cpu_us_per_change / local.cpu_us_per_change,
        );
    }
    out
}
