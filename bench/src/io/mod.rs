//! `wymcp-bench io`: the public benchmark's I/O workload ("MCP Server
//! Performance Benchmark v2", TM Dev Lab), reproduced (issue 26 §1).
//!
//! This process (on core 1 when `scripts/bench --io` pins it) starts a
//! `redis-server` on a free loopback port and the API service
//! (`wymcp-bench io-api`, [`catalog`]); both inherit its core. Then, each
//! round, for each server (floor, wymcp, rmcp, interleaved): Redis is
//! emptied and seeded ([`seed`]), the server is started, each one a
//! program of its own as in the public benchmark (`io-serve-floor`,
//! `io-serve-wymcp`, `io-serve-rmcp` beside this binary, [`servers`];
//! `taskset -c 0` unless `--no-pin`; `wymcp-bench io-serve --server NAME`
//! serves any of them from this binary, for comparison),
//! and the virtual users ([`load`]) run the benchmark's iteration against
//! it for the warm-up and the measured window. Read over the window: the
//! server's CPU (utime + stime from `/proc/PID/stat`) and its RSS (VmRSS,
//! sampled every 100 ms). A failed answer check fails the run, after the
//! report; the targets' verdict is printed, never judged.

pub mod backends;
pub mod catalog;
pub mod load;
pub mod seed;
pub mod servers;

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::procfs::{Memory, Stat, clock_tick};
use load::{TOOLS, Tally, Window};
use servers::IoServer;

/// How a run is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// Virtual users (50).
    pub vus: usize,
    /// The warm-up, excluded (30 s; quick: 1 s).
    pub warmup: Duration,
    /// The measured window (60 s; quick: 2 s).
    pub duration: Duration,
    /// Rounds, each running every server once (2; quick: 1).
    pub rounds: usize,
    /// The servers, in a round's order.
    pub servers: Vec<IoServer>,
    /// Pin each server to core 0 (`taskset`).
    pub pin: bool,
    /// `GLIBC_TUNABLES` for the servers.
    pub malloc_tunables: Option<String>,
}

/// One server's run in one round.
#[derive(Debug, Clone, Serialize)]
pub struct Pass {
    /// The server.
    pub server: IoServer,
    /// The round, from 1.
    pub round: usize,
    /// The measured window, in seconds.
    pub seconds: f64,
    /// `initialize`, `tools/call` and `tools/list` answered in the window.
    pub mcp_requests: u64,
    /// Of them, per second: the benchmark's requests/s.
    pub rps: f64,
    /// Tool-call latency, ms, count-weighted over the three tools (as the
    /// benchmark weighs them): the average.
    pub avg_ms: f64,
    /// The same of each tool's median.
    pub p50_ms: f64,
    /// The same of each tool's 99th percentile.
    pub p99_ms: f64,
    /// Per tool: name, calls, average, p50, p99 (ms).
    pub tools: Vec<ToolLatency>,
    /// Sessions (a call or a list) answered in the window.
    pub sessions: u64,
    /// The server's CPU (user + system) per session, µs.
    pub cpu_us_per_session: f64,
    /// The server's RSS over the window, average, KiB.
    pub rss_avg_kib: u64,
    /// The same, the most sampled, KiB.
    pub rss_max_kib: u64,
    /// Failed checks and requests.
    pub errors: u64,
    /// The first of them.
    pub first_errors: Vec<String>,
    /// `notifications/initialized`'s answers by status.
    pub notification_statuses: std::collections::BTreeMap<u16, u64>,
    /// `DELETE`'s answers by status (none when no session id was given).
    pub delete_statuses: std::collections::BTreeMap<u16, u64>,
    /// The share of every HTTP request (notifications and `DELETE` too)
    /// answered outside 200–399 or not at all, over the whole run: k6's
    /// `http_req_failed`, which the benchmark holds under 5%.
    pub http_req_failed: f64,
}

/// One tool's latencies in a pass.
#[derive(Debug, Clone, Serialize)]
pub struct ToolLatency {
    /// The tool.
    pub tool: &'static str,
    /// Calls measured.
    pub count: usize,
    /// Average, ms.
    pub avg_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// Percentile `p` (0–1) of sorted µs, in ms (nearest rank).
#[must_use]
pub fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    f64::from(sorted[at]) / 1000.0
}

/// Each tool's latencies, and the count-weighted average of their
/// averages, medians and 99th percentiles (benchmark.js's
/// `computeToolLatency`).
#[must_use]
pub fn tool_latency(latencies: &[Vec<u32>; 3]) -> (Vec<ToolLatency>, f64, f64, f64) {
    let tools: Vec<ToolLatency> = TOOLS
        .iter()
        .zip(latencies)
        .map(|(tool, us)| {
            let mut sorted = us.clone();
            sorted.sort_unstable();
            #[allow(clippy::cast_precision_loss)]
            let avg = if sorted.is_empty() {
                0.0
            } else {
                sorted.iter().map(|&u| f64::from(u)).sum::<f64>() / sorted.len() as f64 / 1000.0
            };
            ToolLatency {
                tool: tool.name,
                count: sorted.len(),
                avg_ms: avg,
                p50_ms: percentile_ms(&sorted, 0.5),
                p99_ms: percentile_ms(&sorted, 0.99),
            }
        })
        .collect();
    let total: usize = tools.iter().map(|t| t.count).sum();
    #[allow(clippy::cast_precision_loss)]
    let weighted = |f: fn(&ToolLatency) -> f64| {
        if total == 0 {
            0.0
        } else {
            tools.iter().map(|t| f(t) * t.count as f64).sum::<f64>() / total as f64
        }
    };
    let (avg, p50, p99) = (
        weighted(|t| t.avg_ms),
        weighted(|t| t.p50_ms),
        weighted(|t| t.p99_ms),
    );
    (tools, avg, p50, p99)
}

/// A child process printing `listening on ADDR` first, killed when dropped.
#[derive(Debug)]
struct Listening {
    child: Child,
    addr: SocketAddr,
}

impl Listening {
    fn start(mut command: Command, what: &str) -> Result<Listening, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {what}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let read = reader.read_line(&mut line);
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok());
        if let (Ok(_), Some(addr)) = (read, addr) {
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
            return Ok(Listening { child, addr });
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("{what} did not start (it said {:?})", line.trim()))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn own(args: &[&str], pin: Option<usize>) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    Ok(program(exe, args, pin))
}

/// `io-serve-NAME`, beside this binary: each server is a program of its own,
/// as in the public benchmark, so none has another's code laid out among
/// its own (one binary holding all three put 2.5–3.5 MB more code resident
/// in each; BENCHMARKS.md, "One binary a server").
fn one_server(server: IoServer, args: &[&str], pin: Option<usize>) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name(format!("io-serve-{}", server.name()));
    if !path.exists() {
        return Err(format!(
            "{} is not built (cargo build -p wymcp-bench --bins; scripts/bench --io builds it)",
            path.display()
        ));
    }
    Ok(program(path, args, pin))
}

/// `path` with `args`, on core `pin` (through `taskset`) when given, without
/// the harness's `RUST_LOG`.
fn program(path: std::path::PathBuf, args: &[&str], pin: Option<usize>) -> Command {
    let mut command = match pin {
        Some(core) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &core.to_string()]).arg(path);
            c
        }
        None => Command::new(path),
    };
    command.args(args).env_remove("RUST_LOG");
    command
}

fn cpu_us(stat: Stat) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ticks = stat.cpu_ticks as f64;
    ticks * clock_tick().as_secs_f64() * 1e6
}

/// The server's CPU over the window and its RSS samples.
async fn watch(pid: u32, window: Window) -> (Option<Stat>, Vec<u64>) {
    tokio::time::sleep_until(window.start.into()).await;
    let before = Stat::read(pid).ok();
    let mut samples = Vec::new();
    while Instant::now() < window.end {
        if let Ok(memory) = Memory::read(pid) {
            samples.push(memory.rss_kib);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = Stat::read(pid).ok();
    (after.zip(before).map(|(a, b)| a.since(b)), samples)
}

async fn one_pass(
    options: &Options,
    server: IoServer,
    round: usize,
    api: SocketAddr,
    redis_url: &str,
) -> Result<Pass, String> {
    let mut conn = redis::Client::open(redis_url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    seed::seed(&mut conn)
        .await
        .map_err(|e| format!("seeding Redis: {e}"))?;
    let api_url = format!("http://{api}");
    let mut command = one_server(
        server,
        &["--api", &api_url, "--redis", redis_url],
        options.pin.then_some(0),
    )?;
    match &options.malloc_tunables {
        Some(t) => command.env("GLIBC_TUNABLES", t),
        None => command.env_remove("GLIBC_TUNABLES"),
    };
    let child = Listening::start(command, &format!("the {} server", server.name()))?;
    let now = Instant::now();
    let window = Window {
        start: now + options.warmup,
        end: now + options.warmup + options.duration,
    };
    let watcher = tokio::spawn(watch(child.pid(), window));
    // Ramped as k6 ramps the benchmark's (15 s), within the warm-up.
    let ramp = (options.warmup / 2).min(Duration::from_secs(15));
    let tally: Tally = load::run(child.addr, options.vus, window, ramp).await;
    let (cpu, rss) = watcher.await.map_err(|e| e.to_string())?;
    drop(child);
    let seconds = options.duration.as_secs_f64();
    let (tools, avg_ms, p50_ms, p99_ms) = tool_latency(&tally.latencies_us);
    #[allow(clippy::cast_precision_loss)]
    let (rps, per_session, failed_share) = (
        tally.mcp_requests as f64 / seconds,
        cpu.map_or(f64::NAN, |c| cpu_us(c) / tally.sessions.max(1) as f64),
        tally.http_failed as f64 / tally.http_requests.max(1) as f64,
    );
    let rss_avg = rss
        .iter()
        .sum::<u64>()
        .checked_div(rss.len() as u64)
        .unwrap_or(0);
    Ok(Pass {
        server,
        round,
        seconds,
        mcp_requests: tally.mcp_requests,
        rps,
        avg_ms,
        p50_ms,
        p99_ms,
        tools,
        sessions: tally.sessions,
        cpu_us_per_session: per_session,
        rss_avg_kib: rss_avg,
        rss_max_kib: rss.iter().copied().max().unwrap_or(0),
        errors: tally.errors,
        first_errors: tally.first_errors,
        notification_statuses: tally.notification_statuses,
        delete_statuses: tally.delete_statuses,
        http_req_failed: failed_share,
    })
}

/// Runs the workload: every server of `options`, every round.
///
/// # Errors
/// When Redis, the API service or a server cannot be started.
pub async fn run(options: &Options) -> Result<Vec<Pass>, String> {
    let redis = crate::bus::start_redis()?;
    let redis_url = format!("redis://127.0.0.1:{}/", redis.port());
    let api = Listening::start(own(&["io-api"], None)?, "the API service")?;
    let mut passes = Vec::new();
    for round in 1..=options.rounds {
        for &server in &options.servers {
            let pass = one_pass(options, server, round, api.addr, &redis_url).await?;
            println!(
                "   round {round}, {}: {:.0} req/s, p99 {:.2} ms, {} errors",
                server.name(),
                pass.rps,
                pass.p99_ms,
                pass.errors
            );
            passes.push(pass);
        }
    }
    Ok(passes)
}

fn statuses(map: &std::collections::BTreeMap<u16, u64>) -> String {
    if map.is_empty() {
        return "not sent".to_owned();
    }
    map.iter()
        .map(|(status, n)| match status {
            0 => format!("no answer ×{n}"),
            s => format!("{s} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The passes as a Markdown table, and each tool's latencies.
#[must_use]
pub fn table(passes: &[Pass]) -> String {
    let mut out = String::from(
        "| round | server | requests/s | avg | p50 | p99 | CPU / session | RSS avg | RSS max | sessions | errors | notifications/initialized | DELETE | k6's http_req_failed |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|\n",
    );
    for p in passes {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {:.0} µs | {:.1} MB | {:.1} MB | {} | {} | {} | {} | {:.1}% |",
            p.round,
            p.server.name(),
            p.rps,
            p.avg_ms,
            p.p50_ms,
            p.p99_ms,
            p.cpu_us_per_session,
            kib_mb(p.rss_avg_kib),
            kib_mb(p.rss_max_kib),
            p.sessions,
            p.errors,
            statuses(&p.notification_statuses),
            statuses(&p.delete_statuses),
            p.http_req_failed * 100.0,
        );
    }
    out.push_str("\n| round | server | tool | calls | avg | p50 | p99 |\n|---:|---|---|---:|---:|---:|---:|\n");
    for p in passes {
        for t in &p.tools {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
                p.round,
                p.server.name(),
                t.tool,
                t.count,
                t.avg_ms,
                t.p50_ms,
                t.p99_ms
            );
        }
    }
    out
}

#[allow(clippy::cast_precision_loss)]
fn kib_mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// A server's figures averaged over its rounds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Mean {
    /// Requests/s.
    pub rps: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// Average RSS, KiB.
    pub rss_avg_kib: f64,
}

/// `server`'s figures over its rounds, `None` when it did not run.
#[must_use]
pub fn mean(passes: &[Pass], server: IoServer) -> Option<Mean> {
    let mine: Vec<&Pass> = passes.iter().filter(|p| p.server == server).collect();
    if mine.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = mine.len() as f64;
    #[allow(clippy::cast_precision_loss)]
    Some(Mean {
        rps: mine.iter().map(|p| p.rps).sum::<f64>() / n,
        p99_ms: mine.iter().map(|p| p.p99_ms).sum::<f64>() / n,
        rss_avg_kib: mine.iter().map(|p| p.rss_avg_kib as f64).sum::<f64>() / n,
    })
}

/// The verdict on issue 26 §1's targets, a line each: printed, never judged.
#[must_use]
pub fn verdict(passes: &[Pass]) -> Vec<String> {
    let (Some(wymcp), Some(rmcp), Some(floor)) = (
        mean(passes, IoServer::Wymcp),
        mean(passes, IoServer::Rmcp),
        mean(passes, IoServer::Floor),
    ) else {
        return vec!["verdict: needs floor, wymcp and rmcp in the run".to_owned()];
    };
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    let mut lines = vec![
        format!(
            "target requests/s ≥ rmcp's: {} (wymcp {:.0}, rmcp {:.0}, ×{:.2})",
            met(wymcp.rps >= rmcp.rps),
            wymcp.rps,
            rmcp.rps,
            wymcp.rps / rmcp.rps
        ),
        format!(
            "target requests/s within 10% of the floor's: {} (wymcp {:.0}, floor {:.0}, ×{:.2})",
            met(wymcp.rps >= 0.9 * floor.rps),
            wymcp.rps,
            floor.rps,
            wymcp.rps / floor.rps
        ),
        format!(
            "target p99 below rmcp's: {} (wymcp {:.2} ms, rmcp {:.2} ms)",
            met(wymcp.p99_ms < rmcp.p99_ms),
            wymcp.p99_ms,
            rmcp.p99_ms
        ),
        format!(
            "target RSS at most rmcp's (average over the window): {} (wymcp {:.1} MB, rmcp {:.1} MB)",
            met(wymcp.rss_avg_kib <= rmcp.rss_avg_kib),
            wymcp.rss_avg_kib * 1024.0 / 1e6,
            rmcp.rss_avg_kib * 1024.0 / 1e6
        ),
    ];
    // Not a target, but what the public benchmark's k6 run would trip on.
    for server in IoServer::ALL {
        let worst = passes
            .iter()
            .filter(|p| p.server == server)
            .map(|p| p.http_req_failed)
            .fold(0.0, f64::max);
        if worst >= 0.05 {
            lines.push(format!(
                "note: {}'s http_req_failed is {:.1}% (≥ 5%): the public benchmark's k6 threshold `http_req_failed < 5%` would fail its run (see the DELETE column)",
                server.name(),
                worst * 100.0
            ));
        }
    }
    lines
}

/// What `--json` writes.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    /// Virtual users.
    pub vus: usize,
    /// The warm-up, s.
    pub warmup_s: f64,
    /// The measured window, s.
    pub seconds: f64,
    /// Rounds.
    pub rounds: usize,
    /// How the cores were split.
    pub pinning: &'a str,
    /// Every pass.
    pub passes: &'a [Pass],
    /// The verdict lines.
    pub verdict: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_weighted_by_count_as_the_benchmark_weighs_it() {
        let latencies = [vec![1000; 3], vec![4000; 1], vec![]];
        let (tools, avg, p50, p99) = tool_latency(&latencies);
        assert_eq!(tools[0].count, 3);
        assert!((tools[1].p99_ms - 4.0).abs() < 1e-9);
        // (1 ms × 3 + 4 ms × 1) / 4
        assert!((avg - 1.75).abs() < 1e-9);
        assert!((p50 - 1.75).abs() < 1e-9);
        assert!((p99 - 1.75).abs() < 1e-9);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let sorted: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        assert!((percentile_ms(&sorted, 0.99) - 99.0).abs() < 1e-9);
        assert!((percentile_ms(&sorted, 0.5) - 50.0).abs() < 1e-9);
        assert!((percentile_ms(&[], 0.5) - 0.0).abs() < f64::EPSILON);
    }
}
