//! The harness: starts the three servers pinned to one core, drives each
//! scenario with `oha` pinned to the other (a smoke run: `wymcp-bench load`,
//! see [`crate::loadgen`]), interleaving the servers run by run, and reads
//! each server's CPU time and memory from `/proc`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::payload::{self, Request};
use crate::procfs::{self, Memory, Stat};
use crate::report::{Conditions, Report, Run, ScenarioResult, ServerResult, judge};
use crate::servers::Kind;

/// How a run is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// A few seconds per server: the CI smoke test.
    pub quick: bool,
    /// What drives the servers.
    pub load: LoadGenerator,
    /// Measured runs per server and scenario.
    pub runs: usize,
    /// Length of one measured run.
    pub duration: Duration,
    /// Length of the warm-up before a scenario's runs.
    pub warmup: Duration,
    /// Concurrent connections of the throughput scenarios.
    pub connections: usize,
    /// Only the scenarios named (all when empty).
    pub only: Vec<String>,
    /// The servers measured.
    pub servers: Vec<Kind>,
    /// The core the servers are pinned to, and the load generator's.
    pub cores: Option<(usize, usize)>,
    /// Where the request bodies are written for `oha`.
    pub scratch: PathBuf,
    /// The allocator the servers run with, for the report.
    pub allocator: String,
    /// `GLIBC_TUNABLES` for the three servers (never for `oha`); `None`:
    /// glibc's defaults.
    pub malloc_tunables: Option<String>,
    /// wymcp's idle memory release (`None`: off).
    pub release_memory_after: Option<u64>,
}

/// What drives the servers.
#[derive(Debug, Clone)]
pub enum LoadGenerator {
    /// `oha` at this path: every measurement.
    Oha(PathBuf),
    /// `wymcp-bench load` (this binary, [`crate::loadgen`]): smoke runs,
    /// which then need no `oha` built.
    Builtin,
}

impl LoadGenerator {
    /// From a command line's `--oha PATH` and `--builtin-load`: at most one
    /// of them; neither is the `oha` on `PATH`.
    ///
    /// # Errors
    /// Both given.
    pub fn from_flags(oha: Option<PathBuf>, builtin: bool) -> Result<LoadGenerator, String> {
        match (oha, builtin) {
            (Some(_), true) => Err("--oha and --builtin-load: one or the other".to_owned()),
            (Some(path), false) => Ok(LoadGenerator::Oha(path)),
            (None, true) => Ok(LoadGenerator::Builtin),
            (None, false) => Ok(LoadGenerator::Oha(PathBuf::from("oha"))),
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading `/proc`, writing a body, or starting a process failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A server did not start, or a tool did not behave.
    #[error("{0}")]
    Harness(String),
}

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// What a scenario expects of every server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Every answer 2xx, for every server: anything else breaks the harness.
    Success,
    /// A refusal from wymcp, whatever the others answer: measured, not judged.
    Any,
}

/// How a scenario loads the servers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Load {
    /// For the run's duration, over `connections` keep-alive connections.
    Throughput,
    /// For the run's duration, `connections` at a time, each request on a
    /// new connection (`oha --disable-keepalive`).
    Fresh,
    /// `requests` requests over `connections` connections, all at once.
    Burst { requests: usize },
}

#[derive(Debug, Clone)]
struct Scenario {
    name: &'static str,
    description: &'static str,
    request: Request,
    expect: Expect,
    load: Load,
    connections: usize,
}

fn scenarios(options: &Options) -> Vec<Scenario> {
    let c = options.connections;
    let burst = if options.quick { 64 } else { 192 };
    vec![
        Scenario {
            name: "small_call",
            description: "tools/call of the echo tool, 210 B",
            request: payload::small_call(),
            expect: Expect::Success,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "tools_list",
            description: "tools/list",
            request: payload::tools_list(),
            expect: Expect::Success,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "large_call",
            description: "tools/call of the echo tool, 1 MB (an ignored attachment)",
            request: payload::echo_call_sized(payload::LARGE_CALL_BYTES),
            expect: Expect::Success,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "bad_origin",
            description: "the small call from a disallowed Origin (the floor serves it)",
            request: payload::bad_origin(),
            expect: Expect::Any,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "malformed",
            description: "the small call cut in half: JSON that does not parse",
            request: payload::malformed(),
            expect: Expect::Any,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "fresh_call",
            description: "the small call on a new connection each: what a served request costs \
                          like the malformed body's, which closes its connection",
            request: payload::small_call(),
            expect: Expect::Success,
            load: Load::Fresh,
            connections: c,
        },
        Scenario {
            name: "notification",
            description: "notifications/cancelled, answered 202",
            request: payload::notification(),
            expect: Expect::Success,
            load: Load::Throughput,
            connections: c,
        },
        Scenario {
            name: "burst_8mb",
            description: "64 concurrent tools/call of 8,000,000 B (the default ceiling), fresh server",
            request: payload::echo_call_sized(payload::CEILING_CALL_BYTES),
            expect: Expect::Success,
            load: Load::Burst { requests: burst },
            connections: payload::BURST_CONNECTIONS,
        },
    ]
}

/// One server process, pinned, and where it listens.
#[derive(Debug)]
struct ServerProcess {
    kind: Kind,
    child: Child,
    url: String,
}

impl ServerProcess {
    fn start(kind: Kind, options: &Options) -> Result<ServerProcess, Error> {
        let exe = std::env::current_exe().map_err(io("locating the bench binary"))?;
        let mut command = pinned(options.cores.map(|(server, _)| server), &exe);
        command
            .args(["serve", "--server", kind.name(), "--addr", "127.0.0.1:0"])
            .arg("--release-memory-after")
            .arg(
                options
                    .release_memory_after
                    .map_or_else(|| "off".to_owned(), |bytes| bytes.to_string()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // The same allocator settings for every server, and only for them.
        match &options.malloc_tunables {
            Some(tunables) => command.env("GLIBC_TUNABLES", tunables),
            None => command.env_remove("GLIBC_TUNABLES"),
        };
        let mut child = command
            .spawn()
            .map_err(io(format!("starting the {} server", kind.name())))?;
        let Some(stdout) = child.stdout.take() else {
            return Err(Error::Harness("no stdout from the server".to_owned()));
        };
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(io(format!("reading the {} server's address", kind.name())))?;
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            return Err(Error::Harness(format!(
                "the {} server did not start (it said {line:?})",
                kind.name()
            )));
        };
        let url = format!("http://{addr}{}", payload::ENDPOINT);
        Ok(ServerProcess { kind, child, url })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn alive(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Harness(format!(
                "the {} server exited ({status})",
                self.kind.name()
            ))),
            Err(e) => Err(io("checking a server")(e)),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `taskset -c CORE program`, or the program alone when not pinning.
fn pinned(core: Option<usize>, program: &Path) -> Command {
    match core {
        Some(core) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(core.to_string()).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// What one `oha` invocation is asked to do.
pub(crate) struct Shot<'a> {
    pub(crate) url: &'a str,
    pub(crate) request: &'a Request,
    pub(crate) body_file: &'a Path,
    pub(crate) connections: usize,
    pub(crate) load: Load,
    pub(crate) duration: Duration,
}

/// Runs the load generator once and returns its JSON summary (`oha`'s, or
/// the same shape from `wymcp-bench load`).
pub(crate) fn drive(options: &Options, shot: &Shot<'_>) -> Result<Value, Error> {
    let core = options.cores.map(|(_, load)| load);
    let (mut command, name) = match &options.load {
        LoadGenerator::Oha(path) => {
            let mut command = pinned(core, path);
            oha_args(&mut command, shot);
            (command, path.display().to_string())
        }
        LoadGenerator::Builtin => {
            let exe = std::env::current_exe().map_err(io("locating the bench binary"))?;
            let mut command = pinned(core, &exe);
            builtin_args(&mut command, shot);
            (command, "wymcp-bench load".to_owned())
        }
    };
    let output = command
        .env_remove("GLIBC_TUNABLES")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(io(format!("running {name}")))?;
    if !output.status.success() {
        return Err(Error::Harness(format!(
            "{name} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Harness(format!("{name}'s JSON did not parse: {e}")))
}

fn oha_args(command: &mut Command, shot: &Shot<'_>) {
    command
        .arg(shot.url)
        .args(["-m", "POST", "--no-tui", "--output-format", "json"])
        .args(["--disable-compression", "--worker-threads", "1"])
        .arg("-c")
        .arg(shot.connections.to_string())
        .arg("-D")
        .arg(shot.body_file);
    match shot.load {
        Load::Throughput | Load::Fresh => {
            command
                .arg("-z")
                .arg(format!("{}ms", shot.duration.as_millis()))
                .arg("-w");
            if matches!(shot.load, Load::Fresh) {
                command.arg("--disable-keepalive");
            }
        }
        Load::Burst { requests } => {
            command.arg("-n").arg(requests.to_string());
        }
    }
    for (name, value) in &shot.request.headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
}

fn builtin_args(command: &mut Command, shot: &Shot<'_>) {
    command
        .args(["load", shot.url, "--connections"])
        .arg(shot.connections.to_string())
        .arg("--body")
        .arg(shot.body_file);
    match shot.load {
        Load::Throughput | Load::Fresh => {
            command
                .arg("--millis")
                .arg(shot.duration.as_millis().to_string());
            if matches!(shot.load, Load::Fresh) {
                command.arg("--fresh");
            }
        }
        Load::Burst { requests } => {
            command.arg("--requests").arg(requests.to_string());
        }
    }
    for (name, value) in &shot.request.headers {
        command.arg("--header").arg(format!("{name}: {value}"));
    }
}

/// Reads one run's figures from oha's summary and the server's counters.
pub(crate) fn run_from(
    summary: &Value,
    used: Stat,
    tick: Duration,
    body_bytes: usize,
) -> Result<Run, Error> {
    let number = |pointer: &str| summary.pointer(pointer).and_then(Value::as_f64);
    let mut statuses = BTreeMap::new();
    let mut requests = 0;
    let mut non_2xx = 0;
    if let Some(map) = summary
        .get("statusCodeDistribution")
        .and_then(Value::as_object)
    {
        for (status, count) in map {
            let count = count.as_u64().unwrap_or(0);
            requests += count;
            if !status.starts_with('2') {
                non_2xx += count;
            }
            statuses.insert(status.clone(), count);
        }
    }
    let errors = summary
        .get("errorDistribution")
        .and_then(Value::as_object)
        .map_or(0, |map| map.values().filter_map(Value::as_u64).sum());
    let seconds = number("/summary/total")
        .ok_or_else(|| Error::Harness("oha's JSON has no summary.total".to_owned()))?;
    #[allow(clippy::cast_precision_loss)]
    let (per_request, rps) = {
        let n = requests.max(1) as f64;
        (1.0 / n, requests as f64 / seconds.max(f64::MIN_POSITIVE))
    };
    #[allow(clippy::cast_precision_loss)]
    let cpu_us = used.cpu_ticks as f64 * tick.as_secs_f64() * 1e6;
    #[allow(clippy::cast_precision_loss)]
    let faults = used.minor_faults as f64;
    #[allow(clippy::cast_precision_loss)]
    let body_mb = body_bytes as f64 / 1e6;
    let ms = |p: &str| number(&format!("/latencyPercentiles/{p}")).map_or(0.0, |s| s * 1e3);
    Ok(Run {
        requests,
        non_2xx,
        errors,
        statuses,
        seconds,
        requests_per_second: rps,
        megabytes_per_second: rps * body_mb,
        p50_ms: ms("p50"),
        p99_ms: ms("p99"),
        cpu_us_per_request: cpu_us * per_request,
        minor_faults_per_request: faults * per_request,
    })
}

fn progress(message: &str) {
    eprintln!("[bench] {message}");
}

/// Runs one shot against `server` and measures it.
fn measure(
    options: &Options,
    server: &mut ServerProcess,
    scenario: &Scenario,
    body_file: &Path,
    duration: Duration,
    tick: Duration,
) -> Result<Run, Error> {
    server.alive()?;
    let pid = server.pid();
    let before = Stat::read(pid).map_err(io("reading /proc"))?;
    let summary = drive(
        options,
        &Shot {
            url: &server.url,
            request: &scenario.request,
            body_file,
            connections: scenario.connections,
            load: scenario.load,
            duration,
        },
    )?;
    let after = Stat::read(pid).map_err(io("reading /proc"))?;
    server.alive()?;
    run_from(
        &summary,
        after.since(before),
        tick,
        scenario.request.body.len(),
    )
}

/// Waits until RSS stops falling (sampled every 250 ms, at most `limit`).
fn settled_rss(pid: u32, limit: Duration) -> u64 {
    let start = Instant::now();
    let mut last = Memory::read(pid).map_or(0, |m| m.rss_kib);
    while start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(250));
        let now = Memory::read(pid).map_or(0, |m| m.rss_kib);
        if now >= last && start.elapsed() > Duration::from_secs(1) {
            return now;
        }
        last = now;
    }
    last
}

fn check(scenario: &Scenario, kind: Kind, run: &Run) -> Result<(), Error> {
    if run.requests == 0 {
        return Err(Error::Harness(format!(
            "{}: the {} server answered nothing ({} errors)",
            scenario.name,
            kind.name(),
            run.errors
        )));
    }
    if scenario.expect == Expect::Success && run.non_2xx > 0 {
        return Err(Error::Harness(format!(
            "{}: the {} server answered non-2xx where 2xx is expected: {:?}",
            scenario.name,
            kind.name(),
            run.statuses
        )));
    }
    Ok(())
}

fn throughput(
    options: &Options,
    servers: &mut [ServerProcess],
    scenario: &Scenario,
    body_file: &Path,
    tick: Duration,
) -> Result<BTreeMap<String, ServerResult>, Error> {
    for server in servers.iter_mut() {
        progress(&format!(
            "{}: warm-up {} ({:.1} s)",
            scenario.name,
            server.kind.name(),
            options.warmup.as_secs_f64()
        ));
        let run = measure(options, server, scenario, body_file, options.warmup, tick)?;
        check(scenario, server.kind, &run)?;
    }
    let mut idle = BTreeMap::new();
    for server in servers.iter() {
        let memory = Memory::read(server.pid()).map_err(io("reading /proc"))?;
        idle.insert(server.kind, memory.rss_kib);
        Memory::reset_peak(server.pid()).map_err(io("resetting the peak RSS"))?;
    }
    let mut runs: BTreeMap<Kind, Vec<Run>> = BTreeMap::new();
    for round in 1..=options.runs {
        for server in servers.iter_mut() {
            let run = measure(options, server, scenario, body_file, options.duration, tick)?;
            progress(&format!(
                "{}: run {round}/{} {:>5}: {:>8.0} req/s, {:>7.1} µs CPU/req, p99 {:.2} ms, non-2xx {}",
                scenario.name,
                options.runs,
                server.kind.name(),
                run.requests_per_second,
                run.cpu_us_per_request,
                run.p99_ms,
                run.non_2xx,
            ));
            check(scenario, server.kind, &run)?;
            runs.entry(server.kind).or_default().push(run);
        }
    }
    let mut results = BTreeMap::new();
    for server in servers.iter() {
        let mut result = ServerResult::from_runs(runs.remove(&server.kind).unwrap_or_default());
        let memory = Memory::read(server.pid()).map_err(io("reading /proc"))?;
        result.peak_rss_kib = memory.peak_kib;
        result.idle_rss_kib = idle.get(&server.kind).copied().unwrap_or(0);
        result.after_rss_kib = memory.rss_kib;
        results.insert(server.kind.name().to_owned(), result);
    }
    Ok(results)
}

/// The burst: each server fresh, warmed with small calls, its idle RSS
/// taken, then the burst, its peak, and the RSS once memory settled.
fn burst(
    options: &Options,
    scenario: &Scenario,
    body_file: &Path,
    warm_file: &Path,
    tick: Duration,
) -> Result<BTreeMap<String, ServerResult>, Error> {
    let warm = Scenario {
        name: "burst_8mb warm-up",
        description: "",
        request: payload::small_call(),
        expect: Expect::Success,
        load: Load::Throughput,
        connections: options.connections,
    };
    let mut results = BTreeMap::new();
    for &kind in &options.servers {
        let mut server = ServerProcess::start(kind, options)?;
        let run = measure(options, &mut server, &warm, warm_file, options.warmup, tick)?;
        check(&warm, kind, &run)?;
        std::thread::sleep(Duration::from_millis(500));
        let idle = Memory::read(server.pid())
            .map_err(io("reading /proc"))?
            .rss_kib;
        Memory::reset_peak(server.pid()).map_err(io("resetting the peak RSS"))?;
        let run = measure(
            options,
            &mut server,
            scenario,
            body_file,
            options.duration,
            tick,
        )?;
        let peak = Memory::read(server.pid())
            .map_err(io("reading /proc"))?
            .peak_kib;
        let after = settled_rss(server.pid(), Duration::from_secs(5));
        progress(&format!(
            "{}: {:>5}: idle {} KiB, peak {} KiB, after {} KiB, {:.1} µs CPU/req, non-2xx {}",
            scenario.name,
            kind.name(),
            idle,
            peak,
            after,
            run.cpu_us_per_request,
            run.non_2xx
        ));
        check(scenario, kind, &run)?;
        let mut result = ServerResult::from_runs(vec![run]);
        result.idle_rss_kib = idle;
        result.peak_rss_kib = peak;
        result.after_rss_kib = after;
        results.insert(kind.name().to_owned(), result);
    }
    Ok(results)
}

pub(crate) fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn conditions(options: &Options) -> Conditions {
    let mut versions = BTreeMap::new();
    if let Some(v) = command_output("rustc", &["--version"]) {
        versions.insert("rustc".to_owned(), v);
    }
    match &options.load {
        LoadGenerator::Oha(path) => {
            if let Some(v) = command_output(&path.to_string_lossy(), &["--version"]) {
                versions.insert("oha".to_owned(), v);
            }
        }
        LoadGenerator::Builtin => {
            versions.insert(
                "load generator".to_owned(),
                "wymcp-bench load (built in: a smoke run)".to_owned(),
            );
        }
    }
    versions.insert("rmcp".to_owned(), "3.11.0".to_owned());
    if let Some(v) = command_output("git", &["rev-parse", "--short", "HEAD"]) {
        versions.insert("wymcp".to_owned(), format!("commit {v}"));
    }
    let mut settings = BTreeMap::new();
    settings.insert("quick".to_owned(), options.quick.to_string());
    settings.insert(
        "seconds per run".to_owned(),
        format!("{:.1}", options.duration.as_secs_f64()),
    );
    settings.insert("runs".to_owned(), options.runs.to_string());
    settings.insert(
        "warm-up seconds".to_owned(),
        format!("{:.1}", options.warmup.as_secs_f64()),
    );
    settings.insert("connections".to_owned(), options.connections.to_string());
    settings.insert(
        "malloc tunables".to_owned(),
        options.malloc_tunables.as_ref().map_or_else(
            || "none (glibc defaults)".to_owned(),
            |t| format!("GLIBC_TUNABLES={t} (all servers)"),
        ),
    );
    settings.insert(
        "wymcp release memory after".to_owned(),
        options
            .release_memory_after
            .map_or_else(|| "off".to_owned(), |bytes| format!("{bytes} B")),
    );
    settings.insert(
        "pinning".to_owned(),
        options.cores.map_or_else(
            || "none".to_owned(),
            |(s, l)| format!("servers on core {s}, oha on core {l}"),
        ),
    );
    Conditions {
        date: command_output("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]).unwrap_or_default(),
        cores: std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        cpu: procfs::cpu_model(),
        load_before: procfs::load_average(),
        load_after: None,
        versions,
        allocator: options.allocator.clone(),
        malloc_tunables: options.malloc_tunables.clone(),
        release_memory_after: options.release_memory_after,
        settings,
    }
}

/// Runs every scenario and returns the report.
pub fn run(options: &Options) -> Result<Report, Error> {
    let tick = procfs::clock_tick();
    let mut conditions = conditions(options);
    std::fs::create_dir_all(&options.scratch).map_err(io("creating the scratch folder"))?;
    let warm_file = options.scratch.join("warm-up.json");
    std::fs::write(&warm_file, &payload::small_call().body).map_err(io("writing a body"))?;

    let all = scenarios(options);
    let chosen: Vec<&Scenario> = all
        .iter()
        .filter(|s| options.only.is_empty() || options.only.iter().any(|o| o == s.name))
        .collect();

    let mut servers = Vec::new();
    if chosen.iter().any(|s| matches!(s.load, Load::Throughput)) {
        for &kind in &options.servers {
            let server = ServerProcess::start(kind, options)?;
            progress(&format!("{} server up at {}", kind.name(), server.url));
            servers.push(server);
        }
    }

    let mut results = Vec::new();
    for scenario in chosen {
        let body_file = options.scratch.join(format!("{}.json", scenario.name));
        std::fs::write(&body_file, &scenario.request.body).map_err(io("writing a body"))?;
        progress(&format!(
            "scenario {}: {} ({} B)",
            scenario.name,
            scenario.description,
            scenario.request.body.len()
        ));
        let per_server = match scenario.load {
            Load::Throughput | Load::Fresh => {
                throughput(options, &mut servers, scenario, &body_file, tick)?
            }
            Load::Burst { .. } => burst(options, scenario, &body_file, &warm_file, tick)?,
        };
        let _ = std::fs::remove_file(&body_file);
        results.push(ScenarioResult {
            name: scenario.name.to_owned(),
            description: scenario.description.to_owned(),
            body_bytes: scenario.request.body.len(),
            connections: scenario.connections,
            servers: per_server,
        });
    }
    drop(servers);
    conditions.load_after = procfs::load_average();
    let targets = judge(&results);
    Ok(Report {
        conditions,
        scenarios: results,
        targets,
    })
}
