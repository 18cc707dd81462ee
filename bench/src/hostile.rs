//! The hostile soak: `examples/everything` with its default settings, under
//! the attacks that took a default server down, while a well-behaved client
//! on another address keeps calling a tool.
//!
//! From `127.0.0.2` up (every `127.0.0.0/8` address is loopback on Linux, so
//! each is a peer of its own), the attackers:
//!
//! * **listen flood** — open `subscriptions/listen` streams, one per
//!   connection, as many as the server takes, and hold them;
//! * **lagging listeners** — streams watching hundreds of URIs that never
//!   read a byte, while a **publisher** changes the tool list as fast as it
//!   can (so every stream falls behind);
//! * **trickled bodies** — a declared body sent one byte at a time, each well
//!   within the read timeout;
//! * **idle HTTP/2 pingers** — connections that open no stream and send a
//!   `PING` every second;
//! * **oversize bodies** — a declared 8,000,001 bytes, and 7.9 MB of
//!   `[0,0,…]`.
//!
//! The well-behaved client (`127.0.0.1`) calls `test_simple_text` on one
//! kept-alive connection, first alone (its unloaded latency), then beside
//! the attackers. The soak fails when that client meets any answer but `200`
//! (a 5xx above all), when the server dies or logs a panic.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::procfs::Memory;

/// What the soak runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `examples/everything` binary.
    pub server: PathBuf,
    /// How long the attack lasts.
    pub duration: Duration,
    /// How long the client is measured alone first.
    pub unloaded: Duration,
}

/// What the soak saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The client's calls, alone.
    pub unloaded: Latencies,
    /// The client's calls, beside the attackers.
    pub loaded: Latencies,
    /// Answers the client met other than `200`, by status (`0`: no answer).
    pub client_failures: BTreeMap<u16, u64>,
    /// What the attackers met, by attack and status (`0`: the connection
    /// was closed or refused; `1`: a connection opened and held).
    pub attacks: BTreeMap<String, BTreeMap<u16, u64>>,
    /// The server's resident memory at start, at its peak, and at the end.
    pub rss_start_kib: u64,
    /// The server's peak resident memory.
    pub rss_peak_kib: u64,
    /// The server's resident memory at the end.
    pub rss_end_kib: u64,
    /// Whether the server was still running at the end.
    pub server_alive: bool,
    /// Panic lines in the server's log.
    pub panics: u64,
}

/// Latencies of the client's calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latencies {
    /// Calls answered.
    pub calls: u64,
    /// Median, in microseconds.
    pub p50_us: u64,
    /// 99th percentile, in microseconds.
    pub p99_us: u64,
}

impl Latencies {
    fn of(mut samples: Vec<Duration>) -> Latencies {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return 0;
            }
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((samples.len() - 1) as f64 * q).round() as usize;
            u64::try_from(samples[i].as_micros()).unwrap_or(u64::MAX)
        };
        Latencies {
            calls: samples.len() as u64,
            p50_us: at(0.50),
            p99_us: at(0.99),
        }
    }
}

impl Report {
    /// Why the soak failed, if it did.
    pub fn verdict(&self) -> Result<(), String> {
        if !self.server_alive {
            return Err("the server died".into());
        }
        if self.panics > 0 {
            return Err(format!("the server logged {} panics", self.panics));
        }
        if !self.client_failures.is_empty() {
            return Err(format!(
                "the well-behaved client met {:?}",
                self.client_failures
            ));
        }
        if self.loaded.calls == 0 {
            return Err("the well-behaved client was never served under attack".into());
        }
        Ok(())
    }

    /// The report as Markdown.
    #[must_use]
    pub fn markdown(&self) -> String {
        let ratio = |a: u64, b: u64| {
            if b == 0 {
                "—".to_owned()
            } else {
                #[allow(clippy::cast_precision_loss)]
                let r = a as f64 / b as f64;
                format!("{r:.2}×")
            }
        };
        let mut out = String::new();
        out.push_str("| the well-behaved client | calls | p50 | p99 |\n|---|---:|---:|---:|\n");
        for (name, l) in [("alone", &self.unloaded), ("under attack", &self.loaded)] {
            let _ = writeln!(
                out,
                "| {name} | {} | {} µs | {} µs |",
                l.calls, l.p50_us, l.p99_us
            );
        }
        let _ = write!(
            out,
            "\np99 under attack: {} its unloaded p99. Failures: {:?}. Server RSS: {} KiB at start, {} KiB peak, {} KiB at the end. Alive: {}. Panics: {}.\n\n",
            ratio(self.loaded.p99_us, self.unloaded.p99_us),
            self.client_failures,
            self.rss_start_kib,
            self.rss_peak_kib,
            self.rss_end_kib,
            self.server_alive,
            self.panics
        );
        out.push_str("| attack | answers (status: count; 0 = closed or refused, 1 = opened and held) |\n|---|---|\n");
        for (attack, counts) in &self.attacks {
            let _ = writeln!(out, "| {attack} | {counts:?} |");
        }
        out
    }
}

/// Counts of outcomes, shared by an attack's tasks.
#[derive(Debug, Default)]
struct Counts(std::sync::Mutex<BTreeMap<u16, u64>>);

impl Counts {
    fn add(&self, status: u16) {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry(status).or_insert(0) += 1;
    }

    fn take(&self) -> BTreeMap<u16, u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

const MODERN: &str = "2026-07-28";

/// A 2026 request's bytes.
fn request(id: u64, method: &str, mut params: serde_json::Value, extra: &str) -> Vec<u8> {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params
        .get("name")
        .and_then(serde_json::Value::as_str)
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: {method}\r\n{name}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn connect(server: SocketAddr, from: IpAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    let stream = socket.connect(server).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Reads one response with a `Content-Length` body; its status (`0` when the
/// connection ended first).
async fn response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> u16 {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                if read_more(stream, buf).await == 0 {
                    return 0;
                }
            }
            buf.drain(..end + 4 + len);
            return status;
        }
        if read_more(stream, buf).await == 0 {
            return 0;
        }
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    let mut chunk = vec![0u8; 16 * 1024];
    match tokio::time::timeout(Duration::from_secs(30), stream.read(&mut chunk)).await {
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            n
        }
        _ => 0,
    }
}

/// The first status line's code of whatever comes back, or `0`.
async fn status_of(stream: &mut TcpStream) -> u16 {
    let mut buf = Vec::new();
    while !buf.windows(2).any(|w| w == b"\r\n") {
        if read_more(stream, &mut buf).await == 0 {
            return 0;
        }
    }
    String::from_utf8_lossy(&buf)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The client: calls until `stop`, each call's latency kept; failures
/// counted.
async fn client(server: SocketAddr, stop: Arc<AtomicBool>, failures: Arc<Counts>) -> Vec<Duration> {
    let mut samples = Vec::new();
    let call = request(
        1,
        "tools/call",
        serde_json::json!({"name": "test_simple_text", "arguments": {}}),
        "",
    );
    let mut conn: Option<(TcpStream, Vec<u8>)> = None;
    while !stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            if let Ok(stream) = connect(server, IpAddr::from([127, 0, 0, 1])).await {
                conn = Some((stream, Vec::new()));
            } else {
                failures.add(0);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        }
        let Some((stream, buf)) = conn.as_mut() else {
            continue;
        };
        let started = Instant::now();
        let status = match stream.write_all(&call).await {
            Ok(()) => response(stream, buf).await,
            Err(_) => 0,
        };
        if status == 200 {
            samples.push(started.elapsed());
        } else {
            failures.add(status);
            conn = None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    samples
}

/// Runs the soak.
pub fn run(options: &Options) -> Result<Report, String> {
    let log = std::env::temp_dir().join(format!("wymcp-hostile-{}.log", std::process::id()));
    let mut child = Command::new(&options.server)
        .args(["--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", options.server.display()))?;
    let addr = listening_addr(&mut child)?;
    let pid = child.id();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut report = runtime.block_on(soak(addr, pid, options));
    report.server_alive = matches!(child.try_wait(), Ok(None));
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    report.panics = text.lines().filter(|l| l.contains("panicked")).count() as u64;
    let _ = std::fs::remove_file(&log);
    Ok(report)
}

fn listening_addr(child: &mut Child) -> Result<SocketAddr, String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    line.trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("the server said `{}`", line.trim()))
}

async fn soak(addr: SocketAddr, pid: u32, options: &Options) -> Report {
    let mut report = Report {
        rss_start_kib: Memory::read(pid).map_or(0, |m| m.rss_kib),
        ..Report::default()
    };
    let _ = Memory::reset_peak(pid);
    let failures = Arc::new(Counts::default());
    // Alone.
    let stop = Arc::new(AtomicBool::new(false));
    let alone = tokio::spawn(client(addr, stop.clone(), failures.clone()));
    tokio::time::sleep(options.unloaded).await;
    stop.store(true, Ordering::Relaxed);
    report.unloaded = Latencies::of(alone.await.unwrap_or_default());
    // Beside the attackers.
    let stop = Arc::new(AtomicBool::new(false));
    let attacks: Vec<(&str, Arc<Counts>)> = [
        "listen flood",
        "lagging listeners",
        "publisher",
        "trickled bodies",
        "idle HTTP/2 pingers",
        "oversize bodies",
    ]
    .into_iter()
    .map(|name| (name, Arc::new(Counts::default())))
    .collect();
    let mut tasks = Vec::new();
    for (i, (name, counts)) in attacks.iter().enumerate() {
        let from = IpAddr::from([127, 0, 0, u8::try_from(i + 2).unwrap_or(250)]);
        tasks.push(tokio::spawn(attack(
            name,
            addr,
            from,
            stop.clone(),
            counts.clone(),
        )));
    }
    let sampler_stop = stop.clone();
    let peak = Arc::new(AtomicU64::new(0));
    let sampler_peak = peak.clone();
    let sampler = tokio::spawn(async move {
        while !sampler_stop.load(Ordering::Relaxed) {
            if let Ok(m) = Memory::read(pid) {
                sampler_peak.fetch_max(m.peak_kib.max(m.rss_kib), Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    // Let the attacks take hold, then measure the client beside them.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client_stop = Arc::new(AtomicBool::new(false));
    let beside = tokio::spawn(client(addr, client_stop.clone(), failures.clone()));
    tokio::time::sleep(options.duration).await;
    client_stop.store(true, Ordering::Relaxed);
    report.loaded = Latencies::of(beside.await.unwrap_or_default());
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.abort();
    }
    let _ = sampler.await;
    report.client_failures = failures.take();
    report.attacks = attacks
        .iter()
        .map(|(name, counts)| ((*name).to_owned(), counts.take()))
        .collect();
    let end = Memory::read(pid).unwrap_or_default();
    report.rss_end_kib = end.rss_kib;
    report.rss_peak_kib = peak.load(Ordering::Relaxed).max(end.peak_kib);
    report
}

/// One attack, from `from`, until `stop`.
async fn attack(
    name: &str,
    server: SocketAddr,
    from: IpAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    let mut held: Vec<TcpStream> = Vec::new();
    let mut id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        id += 1;
        let Ok(mut stream) = connect(server, from).await else {
            counts.add(0);
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        match name {
            "listen flood" => {
                let listen = request(
                    id,
                    "subscriptions/listen",
                    serde_json::json!({"notifications": {"toolsListChanged": true}}),
                    "",
                );
                let _ = stream.write_all(&listen).await;
                let status = status_of(&mut stream).await;
                counts.add(status);
                if status == 200 {
                    held.push(stream);
                } else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            "lagging listeners" => {
                let uris: Vec<String> = (0..256).map(|i| format!("test://lag/{i}")).collect();
                let listen = request(
                    id,
                    "subscriptions/listen",
                    serde_json::json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": uris}}),
                    "",
                );
                let _ = stream.write_all(&listen).await;
                // Never read: the stream falls behind.
                counts.add(1);
                held.push(stream);
                if held.len() >= 8 {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            "publisher" => {
                let mut buf = Vec::new();
                let change = request(
                    id,
                    "tools/call",
                    serde_json::json!({"name": "test_trigger_tool_change", "arguments": {}}),
                    "",
                );
                for _ in 0..100 {
                    if stop.load(Ordering::Relaxed) || stream.write_all(&change).await.is_err() {
                        break;
                    }
                    counts.add(response(&mut stream, &mut buf).await);
                }
            }
            "trickled bodies" => {
                let opening = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
                let _ = stream.write_all(opening).await;
                held.push(stream);
                counts.add(1);
                let mut alive = Vec::new();
                for mut conn in held.drain(..) {
                    if conn.write_all(b" ").await.is_ok() {
                        alive.push(conn);
                    } else {
                        counts.add(0);
                    }
                }
                held = alive;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            "idle HTTP/2 pingers" => {
                let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
                hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
                let _ = stream.write_all(&hello).await;
                counts.add(1);
                held.push(stream);
                let ping = [0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
                let mut alive = Vec::new();
                for mut conn in held.drain(..) {
                    if conn.write_all(&ping).await.is_ok() {
                        alive.push(conn);
                    } else {
                        counts.add(0);
                    }
                }
                held = alive;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            _ => {
                // Oversize: a declared length over the ceiling, then a body
                // of many tiny values.
                let over = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 8000001\r\n\r\n";
                let _ = stream.write_all(over).await;
                counts.add(status_of(&mut stream).await);
                if let Ok(mut stream) = connect(server, from).await {
                    let mut body = b"[".to_vec();
                    body.extend(b"0,".repeat(3_950_000));
                    body.extend(b"0]");
                    let framing = format!(
                        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(framing.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    counts.add(status_of(&mut stream).await);
                }
            }
        }
    }
}
