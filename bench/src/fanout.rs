//! `wymcp-bench fanout`: one change reaching 10,000 open `subscriptions/listen`
//! streams over real TCP connections (issue 15, target 3).
//!
//! Where `wymcp-bench bus` drives the chain in-process, this one serves it:
//! the listening server is a child process (`wymcp-bench fanout-serve`,
//! `wymcp::serve_with` on loopback, pinned to core 0 with `--pin`), and this
//! process (core 1) opens the streams as HTTP/1.1 clients, one TCP
//! connection each, and reads their SSE bytes. Two passes:
//!
//! * **in-process**: the change is published on the server holding the
//!   streams (its own change bus);
//! * **redis**: two replicas sharing a `redis-server` this command starts;
//!   the streams are open on B and each change is published on A, reaching
//!   B through [`RedisBus`].
//!
//! A change is triggered by a line on the publishing server's stdin, which a
//! task of its runtime turns into `notify_tools_changed` (as a handler
//! would publish), one change at a time; each stream's reader
//! stamps when the `list_changed` bytes arrive. Reported: the time from the
//! trigger to each stream (p50/p99 over every delivery), to the last stream
//! of a change (p50/p99 over the changes), the servers' CPU per change
//! (`/proc/PID/stat`: utime + stime of the server processes, and of
//! redis-server in the redis pass), and the listening server's RSS per idle
//! stream (VmRSS after the streams are open and idle, minus before, over
//! the streams; kernel socket buffers are not in RSS).
//!
//! **Limits raised in the benchmark's server only** (it is one client on
//! one address holding 10,000 streams, which the defaults rightly refuse):
//! `ListenLimits::max_streams` and `max_streams_per_caller` (defaults 1,024
//! and 8) and `ServeConfig::max_connections` and
//! `max_connections_per_peer` (defaults 4,096 and 64) are set to the stream
//! count plus headroom. Every other setting is the default.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore};
use wymcp::redis::{RedisBus, RedisConfig};
use wymcp::serve::ServeConfig;
use wymcp::{ListenLimits, Server};

use crate::procfs::{Memory, Stat, clock_tick, load_average};

/// Connections and streams the benchmark's server admits beyond the streams.
const HEADROOM: usize = 64;

/// What one pass measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FanoutPass {
    /// `in-process` or `redis`.
    pub bus: &'static str,
    /// Streams each change reached.
    pub streams: usize,
    /// Changes published, one at a time (after one warm-up change).
    pub changes: usize,
    /// Every delivery (a change reaching a stream): the median time from
    /// the trigger, in µs.
    pub delivery_p50_us: f64,
    /// The 99th percentile of every delivery, in µs.
    pub delivery_p99_us: f64,
    /// The time from a change's trigger to its last stream, median over
    /// the changes, in µs.
    pub last_p50_us: f64,
    /// The same, 99th percentile.
    pub last_p99_us: f64,
    /// The longest of the same.
    pub last_max_us: f64,
    /// The servers' CPU per change (the listening server; in the redis
    /// pass the publishing one too), in µs.
    pub server_cpu_us_per_change: f64,
    /// Of that, the listening server's.
    pub listening_cpu_us_per_change: f64,
    /// redis-server's CPU per change (the redis pass), in µs.
    pub redis_cpu_us_per_change: Option<f64>,
    /// The listening server's RSS growth per open, idle stream, in bytes.
    pub rss_bytes_per_idle_stream: f64,
    /// The listening server's RSS with the streams open, in KiB.
    pub rss_kib_with_streams: u64,
    /// The listening server's CPU over 2 s with every stream open and
    /// idle, in ms.
    pub idle_cpu_ms: f64,
    /// How long opening the streams took, in ms.
    pub open_ms: f64,
    /// The load average when the pass ended.
    pub load_average: Option<[f64; 3]>,
}

/// `wymcp-bench fanout-serve`: a server for `streams` listen streams on
/// `addr`, publishing `notify_tools_changed` for each line on stdin; with
/// `redis`, its changes relayed through the Redis bus at that URL.
///
/// # Errors
/// When the runtime, the listener or the Redis bus cannot be made.
pub fn serve(addr: SocketAddr, streams: usize, redis: Option<&str>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let limits = ListenLimits::default()
            .max_streams(streams + HEADROOM)
            .max_streams_per_caller(streams + HEADROOM);
        let mut builder = Server::builder().tools_capability().listen_limits(limits);
        if let Some(url) = redis {
            let bus = RedisBus::new(url, RedisConfig::default()).map_err(|e| e.to_string())?;
            builder = builder.change_relay(bus);
        }
        let server = Arc::new(builder.build().map_err(|e| e.to_string())?);
        let router = wymcp::chain::post::router(server.clone());
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let config = ServeConfig::default()
            .max_connections(streams + HEADROOM)
            .max_connections_per_peer(streams + HEADROOM);
        // A line on stdin is a change, published from a task of the
        // runtime, as a handler would (a wake from outside the runtime
        // would take the slower path through its injection queue).
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(16);
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                if line.is_err() || tx.blocking_send(()).is_err() {
                    break;
                }
            }
            // stdin closed: the benchmark is done with this server.
            std::process::exit(0);
        });
        let publisher = server.clone();
        tokio::spawn(async move {
            while rx.recv().await.is_some() {
                publisher.notify_tools_changed();
            }
        });
        println!("listening on {local}");
        wymcp::serve_with(listener, router, config)
            .await
            .map_err(|e| e.to_string())
    })
}

/// A child server, killed when dropped.
struct ChildServer {
    child: Child,
    stdin: Option<ChildStdin>,
    addr: SocketAddr,
}

impl ChildServer {
    fn start(streams: usize, redis: Option<&str>, pin: Option<usize>) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = match pin {
            Some(core) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &core.to_string()]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        command.args(["fanout-serve", "--streams", &streams.to_string()]);
        if let Some(url) = redis {
            command.args(["--redis", url]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("the fan-out server said `{}`", line.trim()))?;
        let stdin = child.stdin.take();
        Ok(ChildServer { child, stdin, addr })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn publish(&mut self) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(b"\n").map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The streams' shared state: how many acknowledged, how many deliveries
/// read, and when each stream last read a change (ns since `epoch`).
struct Streams {
    epoch: Instant,
    acked: AtomicUsize,
    heard: AtomicUsize,
    stamps: Vec<AtomicU64>,
    progress: Notify,
}

fn listen_request(addr: SocketAddr, id: usize) -> Vec<u8> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}},
        "notifications": {"toolsListChanged": true}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: subscriptions/listen\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// One stream: connects, asks, reads the acknowledgement, then stamps every
/// `list_changed` it reads.
async fn stream(
    addr: SocketAddr,
    i: usize,
    state: Arc<Streams>,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<(), String> {
    const NEEDLE: &[u8] = b"list_changed";
    let mut tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("stream {i}: connect: {e}"))?;
    tcp.write_all(&listen_request(addr, i))
        .await
        .map_err(|e| format!("stream {i}: write: {e}"))?;
    let mut buf = vec![0u8; 4096];
    let mut head = Vec::new();
    // The head and the acknowledgement.
    loop {
        let n = tcp
            .read(&mut buf)
            .await
            .map_err(|e| format!("stream {i}: read: {e}"))?;
        if n == 0 {
            return Err(format!(
                "stream {i}: closed before its acknowledgement: {}",
                String::from_utf8_lossy(&head)
            ));
        }
        head.extend_from_slice(&buf[..n]);
        if !head.starts_with(b"HTTP/1.1 200") && head.len() >= 12 {
            return Err(format!(
                "stream {i}: {}",
                String::from_utf8_lossy(&head[..head.len().min(300)])
            ));
        }
        if count(&head, b"acknowledged") > 0 {
            break;
        }
    }
    drop(permit);
    state.acked.fetch_add(1, Ordering::Relaxed);
    state.progress.notify_one();
    let mut carry: Vec<u8> = Vec::with_capacity(NEEDLE.len() * 2);
    loop {
        let n = match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return Ok(()),
            Ok(n) => n,
        };
        let stamp = u64::try_from(state.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        carry.extend_from_slice(&buf[..n]);
        let found = count(&carry, NEEDLE);
        let keep = carry.len().min(NEEDLE.len() - 1);
        carry.drain(..carry.len() - keep);
        if found > 0 {
            state.stamps[i].store(stamp, Ordering::Relaxed);
            state.heard.fetch_add(found, Ordering::Relaxed);
            state.progress.notify_one();
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

fn cpu_us(stat: Stat) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ticks = stat.cpu_ticks as f64;
    ticks * clock_tick().as_secs_f64() * 1e6
}

fn stat(pid: u32) -> Result<Stat, String> {
    Stat::read(pid).map_err(|e| format!("/proc/{pid}/stat: {e}"))
}

fn rss_kib(pid: u32) -> Result<u64, String> {
    Memory::read(pid)
        .map(|m| m.rss_kib)
        .map_err(|e| format!("/proc/{pid}/status: {e}"))
}

/// Waits until `done()` or fails after `limit`.
async fn until(
    state: &Streams,
    limit: Duration,
    what: &str,
    done: impl Fn() -> bool,
) -> Result<(), String> {
    let started = Instant::now();
    while !done() {
        let _ = tokio::time::timeout(Duration::from_millis(50), state.progress.notified()).await;
        if started.elapsed() > limit {
            return Err(format!("{what} did not happen within {limit:?}"));
        }
    }
    Ok(())
}

/// The soft limit on open files of this process (`/proc/self/limits`).
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// One pass: the streams on `listening`, each change published on
/// `publisher` (the same server in the in-process pass).
async fn pass(
    bus: &'static str,
    mut publisher: Option<&mut ChildServer>,
    listening: &mut ChildServer,
    streams: usize,
    changes: usize,
    redis_pid: Option<u32>,
) -> Result<FanoutPass, String> {
    let state = Arc::new(Streams {
        epoch: Instant::now(),
        acked: AtomicUsize::new(0),
        heard: AtomicUsize::new(0),
        stamps: (0..streams).map(|_| AtomicU64::new(0)).collect(),
        progress: Notify::new(),
    });
    let pid = listening.pid();
    let rss_before = rss_kib(pid)?;
    // Opening: at most 256 connects in flight (the accept backlog).
    let opening = Arc::new(Semaphore::new(256));
    let mut readers = tokio::task::JoinSet::new();
    let opened_at = Instant::now();
    for i in 0..streams {
        let permit = opening
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let state = state.clone();
        let addr = listening.addr;
        readers.spawn(async move {
            let result = stream(addr, i, state, permit).await;
            if let Err(e) = &result {
                eprintln!("{e}");
            }
            result
        });
        if let Some(Some(Err(e))) = readers.try_join_next().map(Result::ok) {
            return Err(e);
        }
    }
    until(
        &state,
        Duration::from_secs(120),
        "every stream acknowledged",
        || state.acked.load(Ordering::Relaxed) >= streams,
    )
    .await?;
    let open_ms = opened_at.elapsed().as_secs_f64() * 1e3;
    // Idle: what the open streams cost when nothing happens.
    let idle_before = stat(pid)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_cpu_ms = cpu_us(stat(pid)?.since(idle_before)) / 1e3;
    let rss_with = rss_kib(pid)?;
    #[allow(clippy::cast_precision_loss)]
    let rss_per = (rss_with.saturating_sub(rss_before) as f64) * 1024.0 / streams as f64;

    let publisher_pid = publisher.as_ref().map(|p| p.pid());
    let mut expected = 0;
    let mut deliveries = Vec::with_capacity(streams * changes);
    let mut lasts = Vec::with_capacity(changes);
    let mut before = None;
    for round in 0..=changes {
        if round == 1 {
            before = Some((
                stat(pid)?,
                publisher_pid.map(stat).transpose()?,
                redis_pid.map(stat).transpose()?,
            ));
        }
        expected += streams;
        let t0 = u64::try_from(state.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        match publisher.as_deref_mut() {
            Some(p) => p.publish()?,
            None => listening.publish()?,
        }
        until(
            &state,
            Duration::from_secs(30),
            &format!("change {round} reaching every stream"),
            || state.heard.load(Ordering::Relaxed) >= expected,
        )
        .await?;
        if state.heard.load(Ordering::Relaxed) > expected {
            return Err(format!("{bus}: a stream read a change twice"));
        }
        if round > 0 {
            let mut last = 0.0f64;
            for s in &state.stamps {
                #[allow(clippy::cast_precision_loss)]
                let us = s.load(Ordering::Relaxed).saturating_sub(t0) as f64 / 1e3;
                last = last.max(us);
                deliveries.push(us);
            }
            lasts.push(last);
        }
    }
    let (listen_before, publisher_before, redis_before) = before.ok_or("no changes")?;
    #[allow(clippy::cast_precision_loss)]
    let per = |after: Stat, before: Stat| cpu_us(after.since(before)) / changes as f64;
    let listening_cpu = per(stat(pid)?, listen_before);
    let publisher_cpu = match (publisher_pid, publisher_before) {
        (Some(p), Some(b)) => per(stat(p)?, b),
        _ => 0.0,
    };
    let redis_cpu = match (redis_pid, redis_before) {
        (Some(p), Some(b)) => Some(per(stat(p)?, b)),
        _ => None,
    };
    readers.abort_all();
    deliveries.sort_by(f64::total_cmp);
    lasts.sort_by(f64::total_cmp);
    Ok(FanoutPass {
        bus,
        streams,
        changes,
        delivery_p50_us: percentile(&deliveries, 0.5),
        delivery_p99_us: percentile(&deliveries, 0.99),
        last_p50_us: percentile(&lasts, 0.5),
        last_p99_us: percentile(&lasts, 0.99),
        last_max_us: lasts.last().copied().unwrap_or(f64::NAN),
        server_cpu_us_per_change: listening_cpu + publisher_cpu,
        listening_cpu_us_per_change: listening_cpu,
        redis_cpu_us_per_change: redis_cpu,
        rss_bytes_per_idle_stream: rss_per,
        rss_kib_with_streams: rss_with,
        idle_cpu_ms,
        open_ms,
        load_average: load_average(),
    })
}

/// Both passes, in-process first. `pin`: the servers on core 0 (this
/// process should then run on core 1: `scripts/bench` does so).
///
/// # Errors
/// When a server or redis-server cannot be started, too few files may be
/// open, or a change does not reach every stream in time.
pub async fn run(streams: usize, changes: usize, pin: bool) -> Result<Vec<FanoutPass>, String> {
    if let Some(limit) = open_files_limit()
        && limit < streams + 256
    {
        return Err(format!(
            "{streams} streams need {} open files here and in the server; the limit is {limit} (ulimit -n)",
            streams + 256
        ));
    }
    let core = pin.then_some(0);
    let mut passes = Vec::new();
    {
        let mut local = ChildServer::start(streams, None, core)?;
        passes.push(pass("in-process", None, &mut local, streams, changes, None).await?);
        // The server goes first, so the TIME_WAITs are on its side, not on
        // this side's ephemeral ports.
    }
    let redis = crate::bus::start_redis()?;
    let url = format!("redis://127.0.0.1:{}/", redis.port());
    let mut a = ChildServer::start(streams, Some(&url), core)?;
    let mut b = ChildServer::start(streams, Some(&url), core)?;
    crate::bus::await_subscribers(redis.port(), &RedisConfig::default().channel, 2).await?;
    passes.push(
        pass(
            "redis",
            Some(&mut a),
            &mut b,
            streams,
            changes,
            Some(redis.pid()),
        )
        .await?,
    );
    Ok(passes)
}

/// The passes as a Markdown table.
#[must_use]
pub fn table(passes: &[FanoutPass]) -> String {
    let mut out = String::from(
        "| bus | streams | changes | delivery p50 | delivery p99 | last stream p50 | last p99 | last max | server CPU / change | redis-server CPU / change | RSS / idle stream | idle CPU (2 s) | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let ms = |us: f64| format!("{:.1} ms", us / 1e3);
    for p in passes {
        let redis = p
            .redis_cpu_us_per_change
            .map_or("—".to_owned(), |c| format!("{:.1} ms", c / 1e3));
        let load = p.load_average.map_or("?".to_owned(), |l| {
            format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {redis} | {:.0} B | {:.0} ms | {load} |",
            p.bus,
            p.streams,
            p.changes,
            ms(p.delivery_p50_us),
            ms(p.delivery_p99_us),
            ms(p.last_p50_us),
            ms(p.last_p99_us),
            ms(p.last_max_us),
            ms(p.server_cpu_us_per_change),
            p.rss_bytes_per_idle_stream,
            p.idle_cpu_ms,
        );
    }
    out
}

/// Whether the passes meet the targets of issue 15: in-process, p99 to
/// every stream ≤ 100 ms and ≤ 1 core-second of server CPU per change;
/// through Redis, p99 ≤ 150 ms.
#[must_use]
pub fn verdict(passes: &[FanoutPass]) -> Vec<String> {
    let mut out = Vec::new();
    for p in passes {
        let (p99_target, name) = match p.bus {
            "redis" => (150.0, "redis"),
            _ => (100.0, "in-process"),
        };
        let p99 = p.last_p99_us / 1e3;
        let cpu = (p.server_cpu_us_per_change + p.redis_cpu_us_per_change.unwrap_or(0.0)) / 1e6;
        let met = p99 <= p99_target && cpu <= 1.0;
        out.push(format!(
            "{name}: p99 to the last of {} streams {p99:.1} ms (target ≤ {p99_target} ms), CPU {cpu:.3} core-s per change (target ≤ 1): {}",
            p.streams,
            if met { "met" } else { "MISSED" }
        ));
    }
    out
}
