//! The hot path on `examples/everything` (issues 15 and 26): a small
//! `tools/call` of its `test_simple_text` tool against two floors writing
//! exactly the bytes everything answers (one parsing and serialising, one
//! copying), and rmcp serving the same tool; one
//! request failing each stage of the chain (origin, auth, headers,
//! validation) against the served request of the same server in the same
//! run; and the small call with the servers on one core and on two (for
//! scaling, like for like: oha on the servers' one core, then beside them
//! on both).
//!
//! Every server runs on a multi-thread tokio runtime (everything's
//! `#[tokio::main]`; the floor and rmcp as `wymcp-bench hotpath serve`),
//! whose workers follow the cores it is pinned to. The servers:
//!
//! * `floor`, "floor (Value)" in the reports: [`servers::floor_serving`],
//!   given the `result` everything answered to the small call, checked byte
//!   for byte before measuring: it parses the body into a `Value` and
//!   serialises the answer, what the smallest real server does;
//! * `floor-copy`: [`servers::floor_copy`], given everything's whole answer
//!   to the small call (the harness's requests carry a fixed id), copied
//!   per request without parsing anything, checked the same way;
//! * `everything`: the example as it ships, no auth;
//! * `everything-auth`: the example with `--static-token`, a
//!   `wymcp::auth::StaticTokens` authenticator (every request of every
//!   scenario carries that token, so its served call pays for auth);
//! * `everything-metrics` (`--instructions` only): the example with
//!   `--metrics 127.0.0.1:0`, its Prometheus metrics recorded per request;
//! * `rmcp`: rmcp 3.11, stateless JSON, its `test_simple_text`.
//!
//! Two measures: CPU time per request under `oha` load (the default), and
//! with `--instructions`, user-space instructions per request, each server
//! under callgrind ([`crate::callgrind`]): a warm-up, the counters zeroed,
//! the scenario's requests over a few keep-alive connections, a dump.
//!
//! `wymcp-bench hotpath --everything PATH` runs it (`scripts/bench
//! --hotpath`); BENCHMARKS.md reads the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::callgrind;
use crate::payload::{ENDPOINT, REVISION, Request};
use crate::procfs::{self, Stat};
use crate::report::{Run, ServerResult};
use crate::runner::{self, Error, Load, LoadGenerator, Options, Shot, io};
use crate::servers;

/// The Bearer token `everything-auth` lets in.
pub const TOKEN: &str = "wymcp-bench-static-token";

const USAGE: &str = "usage:
  wymcp-bench hotpath --everything PATH [--oha PATH | --builtin-load] [--quick] [--runs N] [--seconds S]
                      [--warmup S] [--connections C] [--only SCENARIO,…] [--cores 1,2]
                      [--malloc-tunables GLIBC_TUNABLES] [--json FILE] [--markdown FILE]
  wymcp-bench hotpath --instructions --everything PATH [--oha PATH | --builtin-load] [--quick]
                      [--warmup-requests W] [--requests N] [--connections C] [--with-rmcp]
                      [--only SCENARIO,…] [--malloc-tunables GLIBC_TUNABLES] [--json FILE]
                      [--markdown FILE]
  wymcp-bench hotpath serve floor|floor-copy|rmcp [--answer FILE] [--addr 127.0.0.1:0]

scenarios: simple_call, reject_origin, reject_auth, reject_headers, reject_validation
(--cores 1,2 also runs simple_call with the servers and oha on one core, and with the
servers on both cores: the scaling rows)
--instructions: each server under callgrind, W warm-up requests (2000; --quick 50), the
counters zeroed, N requests (20000; --quick 200) over C keep-alive connections (8),
a dump: instructions per request; also everything-metrics (everything with --metrics);
rmcp only with --with-rmcp
--builtin-load: `wymcp-bench load` instead of oha (smoke runs)";

/// The servers of the hot-path scenarios, in measuring order.
const SERVERS: [&str; 6] = [
    "floor",
    "floor-copy",
    "everything",
    "everything-auth",
    "everything-metrics",
    "rmcp",
];

/// The servers only the instruction counts run: what the metrics cost is
/// one row there, and CPU time would add nothing to it.
const INSTRUCTIONS_ONLY: [&str; 1] = ["everything-metrics"];

/// How a server is named in the reports: the floor that parses is the
/// "floor (Value)" the targets are read against.
fn label(server: &str) -> &str {
    if server == "floor" {
        "floor (Value)"
    } else {
        server
    }
}

/// One scenario: what is sent, to which servers, and what each must answer.
struct Scenario {
    name: &'static str,
    description: &'static str,
    request: Request,
    /// Server name and the HTTP status it must answer with.
    expect: Vec<(&'static str, u16)>,
}

fn request(body: String, name: &str) -> Request {
    Request {
        body: body.into_bytes(),
        headers: vec![
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("MCP-Protocol-Version", REVISION.to_owned()),
            ("Mcp-Method", "tools/call".to_owned()),
            ("Mcp-Name", name.to_owned()),
            ("Authorization", format!("Bearer {TOKEN}")),
        ],
    }
}

fn call_body(arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"test_simple_text","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{REVISION}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// The small call of everything's `test_simple_text`.
#[must_use]
pub fn simple_call() -> Request {
    request(call_body("{}"), "test_simple_text")
}

fn with_header(mut request: Request, name: &'static str, value: &str) -> Request {
    if let Some(slot) = request.headers.iter_mut().find(|(n, _)| *n == name) {
        value.clone_into(&mut slot.1);
    } else {
        request.headers.push((name, value.to_owned()));
    }
    request
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "simple_call",
            description: "tools/call of test_simple_text: the served request",
            request: simple_call(),
            expect: SERVERS.iter().map(|s| (*s, 200)).collect(),
        },
        Scenario {
            name: "reject_origin",
            description: "the call from a disallowed Origin: OriginCheck, 403",
            request: with_header(simple_call(), "Origin", crate::payload::BAD_ORIGIN),
            expect: vec![("everything", 403)],
        },
        Scenario {
            name: "reject_auth",
            description: "the call with a Bearer token not in the table: Auth, 401",
            request: with_header(simple_call(), "Authorization", "Bearer not-the-token"),
            expect: vec![("everything-auth", 401)],
        },
        Scenario {
            name: "reject_headers",
            description: "the call with an Mcp-Name that is not the body's: HeaderBinding, 400",
            request: with_header(simple_call(), "Mcp-Name", "test_image_content"),
            expect: vec![("everything", 400)],
        },
        Scenario {
            name: "reject_validation",
            description: "the call with `arguments` a string: Validate, 400",
            request: request(call_body(r#""x""#), "test_simple_text"),
            expect: vec![("everything", 400)],
        },
    ]
}

/// A server process and where it listens.
struct Proc {
    name: &'static str,
    child: Child,
    addr: SocketAddr,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn url(&self) -> String {
        format!("http://{}{ENDPOINT}", self.addr)
    }

    fn alive(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Harness(format!(
                "the {} server exited ({status})",
                self.name
            ))),
            Err(e) => Err(io("checking a server")(e)),
        }
    }
}

/// How a hot-path run is made.
struct Setup {
    everything: PathBuf,
    tunables: Option<String>,
    /// The runner's options: oha, runs, durations, connections.
    runner: Options,
}

/// Starts the server `name` pinned to `cores`, serving `answer` (the
/// floors), under callgrind writing its dumps to `callgrind` when given.
fn spawn(
    setup: &Setup,
    name: &'static str,
    cores: Option<&str>,
    answer: Option<&Path>,
    callgrind: Option<&Path>,
) -> Result<Proc, Error> {
    let exe = std::env::current_exe().map_err(io("locating the bench binary"))?;
    let (program, args): (&Path, Vec<String>) = match name {
        "everything" => (
            &setup.everything,
            vec!["--bind".into(), "127.0.0.1:0".into()],
        ),
        "everything-auth" => (
            &setup.everything,
            vec![
                "--bind".into(),
                "127.0.0.1:0".into(),
                "--static-token".into(),
                TOKEN.into(),
            ],
        ),
        "everything-metrics" => (
            &setup.everything,
            vec![
                "--bind".into(),
                "127.0.0.1:0".into(),
                "--metrics".into(),
                "127.0.0.1:0".into(),
            ],
        ),
        "floor" | "floor-copy" | "rmcp" => {
            let mut args = vec!["hotpath".into(), "serve".into(), name.into()];
            if let Some(answer) = answer {
                args.push("--answer".into());
                args.push(answer.display().to_string());
            }
            (&exe, args)
        }
        other => return Err(Error::Harness(format!("no server {other}"))),
    };
    // [taskset -c CORES] [valgrind --tool=callgrind …] PROGRAM ARGS
    let mut words: Vec<std::ffi::OsString> = Vec::new();
    if let Some(cores) = cores {
        words.extend(["taskset".into(), "-c".into(), cores.into()]);
    }
    if let Some(dir) = callgrind {
        words.extend(callgrind::prefix(dir).into_iter().map(Into::into));
    }
    words.push(program.into());
    words.extend(args.into_iter().map(Into::into));
    let mut command = Command::new(&words[0]);
    command
        .args(&words[1..])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    match &setup.tunables {
        Some(t) => command.env("GLIBC_TUNABLES", t),
        None => command.env_remove("GLIBC_TUNABLES"),
    };
    let mut child = command
        .spawn()
        .map_err(io(format!("starting the {name} server")))?;
    let Some(stdout) = child.stdout.take() else {
        return Err(Error::Harness("no stdout from the server".to_owned()));
    };
    let mut line = String::new();
    let mut stdout = BufReader::new(stdout);
    stdout
        .read_line(&mut line)
        .map_err(io(format!("reading the {name} server's address")))?;
    // everything says more (its auth mode, `shut down`): read it, or it
    // fails writing to a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    // `listening on ADDR` (the bench's servers) or `listening on
    // http://ADDR/mcp` (everything).
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .map(|a| a.trim_start_matches("http://").trim_end_matches(ENDPOINT))
        .and_then(|a| a.parse().ok());
    let Some(addr) = addr else {
        let _ = child.kill();
        return Err(Error::Harness(format!(
            "the {name} server did not start (it said {line:?})"
        )));
    };
    Ok(Proc { name, child, addr })
}

/// One POST over a fresh HTTP/1.1 connection: the status and the body.
fn post_once(addr: SocketAddr, request: &Request) -> Result<(u16, Vec<u8>), Error> {
    let mut stream = TcpStream::connect(addr).map_err(io("connecting"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(io("a timeout"))?;
    let mut head = format!(
        "POST {ENDPOINT} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        request.body.len()
    );
    for (name, value) in &request.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&request.body))
        .map_err(io("sending"))?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(io("reading"))?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| Error::Harness("an answer without a head".to_owned()))?;
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::Harness(format!("no status in {head:?}")))?;
    let mut body = answer[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = unchunk(&body);
    }
    Ok((status, body))
}

fn unchunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
    out
}

/// The servers one scenario set runs on, started and checked.
struct Fleet {
    procs: Vec<Proc>,
}

/// What the floors serve, written from everything's answer to the small
/// call: its `result` (the `floor`) and the whole answer (`floor-copy`).
struct Answers {
    reference: Vec<u8>,
    result: PathBuf,
    copy: PathBuf,
}

impl Answers {
    fn write(setup: &Setup, reference: Vec<u8>) -> Result<Answers, Error> {
        let value: servers::Ordered = serde_json::from_slice(&reference)
            .map_err(|e| Error::Harness(format!("everything's answer: {e}")))?;
        let servers::Ordered::Object(members) = value else {
            return Err(Error::Harness(
                "everything's answer is not an object".to_owned(),
            ));
        };
        let result = members
            .iter()
            .find(|(key, _)| key == "result")
            .ok_or_else(|| Error::Harness("everything's answer has no result".to_owned()))?;
        let result = serde_json::to_vec(&result.1).map_err(|e| Error::Harness(e.to_string()))?;
        let answers = Answers {
            result: setup.runner.scratch.join("floor-result.json"),
            copy: setup.runner.scratch.join("floor-copy-answer.json"),
            reference,
        };
        std::fs::write(&answers.result, result).map_err(io("writing the floor's result"))?;
        std::fs::write(&answers.copy, &answers.reference)
            .map_err(io("writing floor-copy's answer"))?;
        Ok(answers)
    }

    /// What the server `name` is given to serve.
    fn of(&self, name: &str) -> Option<&Path> {
        match name {
            "floor" => Some(&self.result),
            "floor-copy" => Some(&self.copy),
            _ => None,
        }
    }
}

/// Sends the small call to `proc`: everything must answer 200, and a floor
/// 200 with exactly everything's bytes (`reference`).
fn check_small_call(proc: &Proc, reference: Option<&[u8]>) -> Result<Vec<u8>, Error> {
    let (status, body) = post_once(proc.addr, &simple_call())?;
    if status != 200 {
        return Err(Error::Harness(format!(
            "{} answered the small call {status}: {}",
            proc.name,
            String::from_utf8_lossy(&body)
        )));
    }
    if proc.name.starts_with("floor")
        && let Some(reference) = reference
        && body != reference
    {
        return Err(Error::Harness(format!(
            "{}'s bytes are not everything's:\n  {:<10} {}\n  everything {}",
            proc.name,
            proc.name,
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(reference)
        )));
    }
    Ok(body)
}

impl Fleet {
    /// Starts `names` pinned to `cores`; the floors are given everything's
    /// answer to the small call and must answer the same bytes.
    fn start(setup: &Setup, names: &[&'static str], cores: Option<&str>) -> Result<Fleet, Error> {
        let mut procs = Vec::new();
        let mut reference: Option<Vec<u8>> = None;
        for &name in names.iter().filter(|n| n.starts_with("everything")) {
            let proc = spawn(setup, name, cores, None, None)?;
            let body = check_small_call(&proc, None)?;
            reference.get_or_insert(body);
            procs.push(proc);
        }
        let answers = reference
            .map(|reference| Answers::write(setup, reference))
            .transpose()?;
        for &name in names.iter().filter(|n| !n.starts_with("everything")) {
            let answer = answers.as_ref().and_then(|a| a.of(name));
            let proc = spawn(setup, name, cores, answer, None)?;
            check_small_call(&proc, answers.as_ref().map(|a| a.reference.as_slice()))?;
            procs.push(proc);
        }
        // The measuring order: the floors, everything, everything-auth, rmcp.
        procs.sort_by_key(|p| SERVERS.iter().position(|s| *s == p.name));
        Ok(Fleet { procs })
    }
}

/// One scenario's result, per server.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// The scenario's name (`simple_call@2cores` for the scaling row).
    pub name: String,
    /// What it sends.
    pub description: String,
    /// The cores the servers were pinned to.
    pub cores: String,
    /// Per server.
    pub servers: BTreeMap<String, ServerResult>,
}

impl ScenarioResult {
    fn cpu(&self, server: &str) -> Option<f64> {
        let cpu = self.servers.get(server)?.summary.cpu_us_per_request;
        (cpu > 0.0).then_some(cpu)
    }

    fn rps(&self, server: &str) -> Option<f64> {
        let rps = self.servers.get(server)?.summary.requests_per_second;
        (rps > 0.0).then_some(rps)
    }
}

/// A hot-path run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When, where, the load and the settings.
    #[serde(flatten)]
    pub run: RunInfo,
    /// Every scenario.
    pub scenarios: Vec<ScenarioResult>,
    /// The targets: what, measured, verdict.
    pub targets: Vec<(String, String, String)>,
}

fn measure(
    setup: &Setup,
    proc: &mut Proc,
    scenario: &Scenario,
    body_file: &Path,
    duration: Duration,
    oha_core: Option<usize>,
) -> Result<Run, Error> {
    proc.alive()?;
    let pid = proc.child.id();
    let before = Stat::read(pid).map_err(io("reading /proc"))?;
    let url = proc.url();
    let mut options = setup.runner.clone();
    options.cores = oha_core.map(|core| (core, core));
    let summary = runner::drive(
        &options,
        &Shot {
            url: &url,
            request: &scenario.request,
            body_file,
            connections: options.connections,
            load: Load::Throughput,
            duration,
        },
    )?;
    let after = Stat::read(pid).map_err(io("reading /proc"))?;
    proc.alive()?;
    let run = runner::run_from(
        &summary,
        after.since(before),
        procfs::clock_tick(),
        scenario.request.body.len(),
    )?;
    let expected = scenario
        .expect
        .iter()
        .find(|(n, _)| *n == proc.name)
        .map_or(0, |(_, s)| *s);
    let wrong: u64 = run
        .statuses
        .iter()
        .filter(|(status, _)| **status != expected.to_string())
        .map(|(_, n)| *n)
        .sum();
    if run.requests == 0 || wrong > 0 {
        return Err(Error::Harness(format!(
            "{}: {} answered {:?} ({} errors), expected only {expected}",
            scenario.name, proc.name, run.statuses, run.errors
        )));
    }
    Ok(run)
}

/// Runs `scenario` on the fleet's servers it names, interleaved.
fn run_scenario(
    setup: &Setup,
    fleet: &mut Fleet,
    scenario: &Scenario,
    cores: &str,
    oha_core: Option<usize>,
    label: String,
) -> Result<ScenarioResult, Error> {
    let body_file = setup.runner.scratch.join(format!("{}.json", scenario.name));
    std::fs::write(&body_file, &scenario.request.body).map_err(io("writing a body"))?;
    let chosen: Vec<usize> = (0..fleet.procs.len())
        .filter(|&i| {
            scenario
                .expect
                .iter()
                .any(|(n, _)| *n == fleet.procs[i].name)
        })
        .collect();
    eprintln!(
        "[hotpath] {label}: {} (cores {cores})",
        scenario.description
    );
    for &i in &chosen {
        measure(
            setup,
            &mut fleet.procs[i],
            scenario,
            &body_file,
            setup.runner.warmup,
            oha_core,
        )?;
    }
    let mut runs: BTreeMap<&'static str, Vec<Run>> = BTreeMap::new();
    for round in 1..=setup.runner.runs {
        for &i in &chosen {
            let proc = &mut fleet.procs[i];
            let run = measure(
                setup,
                proc,
                scenario,
                &body_file,
                setup.runner.duration,
                oha_core,
            )?;
            eprintln!(
                "[hotpath] {label}: run {round}/{} {:>15}: {:>8.0} req/s, {:>6.2} µs CPU/req, statuses {:?}",
                setup.runner.runs,
                proc.name,
                run.requests_per_second,
                run.cpu_us_per_request,
                run.statuses
            );
            runs.entry(proc.name).or_default().push(run);
        }
    }
    let _ = std::fs::remove_file(&body_file);
    Ok(ScenarioResult {
        name: label,
        description: scenario.description.to_owned(),
        cores: cores.to_owned(),
        servers: runs
            .into_iter()
            .map(|(name, runs)| (name.to_owned(), ServerResult::from_runs(runs)))
            .collect(),
    })
}

fn fmt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

/// Issue 26 §2: a small call on everything costs at most this many times
/// floor (Value), by instructions and by CPU per request.
const SMALL_CALL_TARGET: f64 = 1.10;

/// The rejections, each with the server it runs on.
const REJECTIONS: [(&str, &str); 4] = [
    ("reject_origin", "everything"),
    ("reject_auth", "everything-auth"),
    ("reject_headers", "everything"),
    ("reject_validation", "everything"),
];

fn judge(scenarios: &[ScenarioResult]) -> Vec<(String, String, String)> {
    let find = |name: &str| scenarios.iter().find(|s| s.name == name);
    let verdict = |ok: Option<bool>| {
        match ok {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        }
        .to_owned()
    };
    let mut targets = Vec::new();
    let served = find("simple_call");
    let ratio = served.and_then(|s| Some(s.cpu("everything")? / s.cpu("floor")?));
    targets.push((
        "small tools/call on examples/everything: ≤ 1.10 × floor (Value) in CPU per request"
            .to_owned(),
        format!("{}×", fmt(ratio, 2)),
        verdict(ratio.map(|r| r <= SMALL_CALL_TARGET)),
    ));
    let ratio = served.and_then(|s| Some(s.cpu("everything")? / s.cpu("floor-copy")?));
    targets.push((
        "small tools/call on examples/everything ÷ floor-copy, CPU per request (no target)"
            .to_owned(),
        format!("{}×", fmt(ratio, 2)),
        "measured".to_owned(),
    ));
    let ratio = served.and_then(|s| Some(s.cpu("rmcp")? / s.cpu("everything")?));
    targets.push((
        "small tools/call on examples/everything: ≥ 3 × rmcp's requests per core".to_owned(),
        format!("{}×", fmt(ratio, 2)),
        verdict(ratio.map(|r| r >= 3.0)),
    ));
    for (name, server) in REJECTIONS {
        let rejected = find(name).and_then(|s| s.cpu(server));
        let full = served.and_then(|s| s.cpu(server));
        targets.push((
            format!("{name}: cheaper than {server}'s served call"),
            format!(
                "{} µs vs {} µs ({}×)",
                fmt(rejected, 2),
                fmt(full, 2),
                fmt(rejected.zip(full).map(|(r, f)| r / f), 2)
            ),
            verdict(rejected.zip(full).map(|(r, f)| r < f)),
        ));
    }
    // Scaling has no number to meet: what one core to two gives each server,
    // with oha sharing the servers' cores in both rows.
    let one = scenarios
        .iter()
        .find(|s| s.name == "simple_call@1core-shared");
    let two = scenarios.iter().find(|s| s.name == "simple_call@2cores");
    if let (Some(one), Some(two)) = (one, two) {
        let gains: Vec<String> = two
            .servers
            .keys()
            .map(|server| {
                let gain = one.rps(server).zip(two.rps(server)).map(|(a, b)| b / a);
                format!("{} {}×", label(server), fmt(gain, 2))
            })
            .collect();
        targets.push((
            "throughput from 1 core to 2 (oha on the servers' cores in both)".to_owned(),
            gains.join(", "),
            "measured".to_owned(),
        ));
    }
    targets
}

/// When and where a run was made, the load around it, and its settings.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// `date -u`.
    pub date: String,
    /// `nproc` and the CPU model.
    pub machine: String,
    /// Load average before and after.
    pub load: [Option<[f64; 3]>; 2],
    /// wymcp's commit and the settings.
    pub settings: BTreeMap<String, String>,
}

impl RunInfo {
    /// A run ending now, the load average `before` it.
    fn now(before: Option<[f64; 3]>, settings: BTreeMap<String, String>) -> RunInfo {
        RunInfo {
            date: runner::command_output("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"])
                .unwrap_or_default(),
            machine: format!(
                "{} cores, {}",
                std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
                procfs::cpu_model()
            ),
            load: [before, procfs::load_average()],
            settings,
        }
    }

    /// The lines a report opens with (`load_note` after the load).
    fn preamble(&self, load_note: &str) -> String {
        let mut out = String::new();
        let average = |l: Option<[f64; 3]>| {
            l.map_or_else(
                || "?".to_owned(),
                |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"),
            )
        };
        let _ = writeln!(out, "* date: {}", self.date);
        let _ = writeln!(out, "* machine: {}", self.machine);
        let _ = writeln!(
            out,
            "* load average (1/5/15 min): before {}, after {}{load_note}",
            average(self.load[0]),
            average(self.load[1])
        );
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(out, "* settings: {}\n", settings.join(", "));
        out
    }
}

impl Report {
    /// The report as Markdown.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut out = self.run.preamble("");
        out.push_str("| scenario | cores | server | req/s | p50 ms | p99 ms | statuses | CPU µs/req | CPU ÷ served |\n");
        out.push_str("|---|---|---|---:|---:|---:|---|---:|---:|\n");
        let served = self.scenarios.iter().find(|s| s.name == "simple_call");
        for scenario in &self.scenarios {
            // The served call on the same cores.
            let base_scenario = self
                .scenarios
                .iter()
                .find(|s| s.name.starts_with("simple_call") && s.cores == scenario.cores);
            for (server, result) in &scenario.servers {
                let s = &result.summary;
                let statuses: Vec<String> = s
                    .statuses
                    .iter()
                    .map(|(code, n)| format!("{code}×{n}"))
                    .collect();
                let base = base_scenario.and_then(|b| b.cpu(server));
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.0} | {:.3} | {:.3} | {} | {:.2} | {} |",
                    scenario.name,
                    scenario.cores,
                    label(server),
                    s.requests_per_second,
                    s.p50_ms,
                    s.p99_ms,
                    statuses.join(" "),
                    s.cpu_us_per_request,
                    fmt(base.map(|b| s.cpu_us_per_request / b), 2),
                );
            }
        }
        out.push('\n');
        let scaled = self
            .scenarios
            .iter()
            .find(|s| s.name.starts_with("simple_call@") && s.name.ends_with("cores"));
        // Like for like with the two-core row, where oha shares the
        // servers' cores: the one-core row where it shares theirs too.
        let shared = self
            .scenarios
            .iter()
            .find(|s| s.name.ends_with("@1core-shared"));
        if let (Some(one), Some(two)) = (shared.or(served), scaled) {
            let _ = writeln!(
                out,
                "Scaling: `{}`, servers on {}, against `{}`, servers on {}:\n",
                one.name, one.cores, two.name, two.cores
            );
            out.push_str("| scaling | req/s, 1 core | req/s, 2 cores | × | CPU µs/req, 1 core | CPU µs/req, 2 cores |\n");
            out.push_str("|---|---:|---:|---:|---:|---:|\n");
            for server in two.servers.keys() {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |",
                    label(server),
                    fmt(one.rps(server), 0),
                    fmt(two.rps(server), 0),
                    fmt(one.rps(server).zip(two.rps(server)).map(|(a, b)| b / a), 2),
                    fmt(one.cpu(server), 2),
                    fmt(two.cpu(server), 2),
                );
            }
            out.push('\n');
        }
        out.push_str("| target | measured | verdict |\n|---|---|---|\n");
        for (target, measured, verdict) in &self.targets {
            let _ = writeln!(out, "| {target} | {measured} | {verdict} |");
        }
        out
    }
}

// ------------------------------------------------------ instruction counts

/// How an instruction-count run is made (the connections are the runner's).
struct Counting {
    /// Requests before the counters are zeroed.
    warmup: usize,
    /// Requests counted.
    requests: usize,
    /// Whether rmcp is counted too (it is slow under callgrind).
    rmcp: bool,
    /// The servers on core 0 and `oha` on core 1.
    pin: bool,
}

/// One server's user-space instructions on one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Count {
    /// The scenario.
    pub scenario: String,
    /// The server.
    pub server: String,
    /// The requests counted (all answered with the expected status).
    pub requests: u64,
    /// The instructions (callgrind's `Ir`) from the zero to the dump.
    pub instructions: u64,
    /// `instructions / requests`.
    pub per_request: f64,
}

/// An instruction-count run.
#[derive(Debug, Clone, Serialize)]
pub struct CountReport {
    /// When, where, the load (instruction counts do not move with it; the
    /// run's length does) and the settings.
    #[serde(flatten)]
    pub run: RunInfo,
    /// Per scenario and server, in measuring order.
    pub counts: Vec<Count>,
    /// The targets: what, measured, verdict.
    pub targets: Vec<(String, String, String)>,
}

/// The requests oha's `summary` reports answered with `expected`, and every
/// other outcome (another status, or an error).
fn outcomes(summary: &serde_json::Value, expected: u16) -> (u64, u64) {
    let count = |key: &str| {
        summary
            .get(key)
            .and_then(serde_json::Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
            .collect::<Vec<_>>()
    };
    let expected = expected.to_string();
    let mut answered = 0;
    let mut other = 0;
    for (status, n) in count("statusCodeDistribution") {
        if status == expected {
            answered += n;
        } else {
            other += n;
        }
    }
    other += count("errorDistribution")
        .into_iter()
        .map(|(_, n)| n)
        .sum::<u64>();
    (answered, other)
}

/// Sends `requests` of `scenario` to `proc` with oha over the runner's
/// connections; all must be answered with the scenario's status. Returns
/// how many were.
fn shoot(
    setup: &Setup,
    proc: &mut Proc,
    scenario: &Scenario,
    body_file: &Path,
    requests: usize,
    oha_core: Option<usize>,
) -> Result<u64, Error> {
    proc.alive()?;
    let url = proc.url();
    let mut options = setup.runner.clone();
    options.cores = oha_core.map(|core| (core, core));
    let summary = runner::drive(
        &options,
        &Shot {
            url: &url,
            request: &scenario.request,
            body_file,
            connections: options.connections,
            load: Load::Burst { requests },
            duration: Duration::ZERO,
        },
    )?;
    proc.alive()?;
    let expected = scenario
        .expect
        .iter()
        .find(|(n, _)| *n == proc.name)
        .map_or(0, |(_, s)| *s);
    let (answered, other) = outcomes(&summary, expected);
    if answered == 0 || other > 0 {
        return Err(Error::Harness(format!(
            "{}: {} answered {} (errors {}), expected only {expected}",
            scenario.name,
            proc.name,
            summary
                .get("statusCodeDistribution")
                .unwrap_or(&serde_json::Value::Null),
            summary
                .get("errorDistribution")
                .unwrap_or(&serde_json::Value::Null),
        )));
    }
    Ok(answered)
}

/// Counts one scenario on one server under callgrind: the warm-up, the
/// counters zeroed, the measured requests, a dump.
fn count_one(
    setup: &Setup,
    counting: &Counting,
    proc: &mut Proc,
    counter: &mut callgrind::Counter,
    scenario: &Scenario,
    oha_core: Option<usize>,
) -> Result<Count, Error> {
    let body_file = setup.runner.scratch.join(format!("{}.json", scenario.name));
    std::fs::write(&body_file, &scenario.request.body).map_err(io("writing a body"))?;
    shoot(setup, proc, scenario, &body_file, counting.warmup, oha_core)?;
    counter.zero()?;
    let requests = shoot(
        setup,
        proc,
        scenario,
        &body_file,
        counting.requests,
        oha_core,
    )?;
    // oha closes its connections as it ends: let the server see them close
    // before the dump, so every count includes the same closing work.
    std::thread::sleep(Duration::from_millis(500));
    let instructions = counter.dump()?;
    proc.alive()?;
    let _ = std::fs::remove_file(&body_file);
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let per_request = instructions as f64 / requests as f64;
    eprintln!(
        "[hotpath] instructions: {} on {}: {per_request:.0} per request ({requests} requests)",
        scenario.name, proc.name
    );
    Ok(Count {
        scenario: scenario.name.to_owned(),
        server: proc.name.to_owned(),
        requests,
        instructions,
        per_request,
    })
}

/// `hotpath --instructions`: each server under callgrind, one at a time,
/// every chosen scenario it serves counted.
fn count(setup: &Setup, counting: &Counting) -> Result<CountReport, Error> {
    callgrind::available()?;
    let load_before = procfs::load_average();
    let all = scenarios();
    let chosen: Vec<&Scenario> = all
        .iter()
        .filter(|s| setup.runner.only.is_empty() || setup.runner.only.iter().any(|o| o == s.name))
        .collect();
    let (server_cores, oha_core) = if counting.pin {
        (Some("0"), Some(1))
    } else {
        (None, None)
    };
    // Everything's answer to the small call, for the floors, from a server
    // not under callgrind.
    let answers = {
        let proc = spawn(setup, "everything", server_cores, None, None)?;
        let reference = check_small_call(&proc, None)?;
        Answers::write(setup, reference)?
    };
    let dir = setup.runner.scratch.join("callgrind");
    std::fs::create_dir_all(&dir).map_err(io("making the dump directory"))?;
    let mut counts = Vec::new();
    for name in SERVERS {
        if name == "rmcp" && !counting.rmcp {
            continue;
        }
        let theirs: Vec<&Scenario> = chosen
            .iter()
            .copied()
            .filter(|s| s.expect.iter().any(|(n, _)| *n == name))
            .collect();
        if theirs.is_empty() {
            continue;
        }
        eprintln!("[hotpath] instructions: starting {name} under callgrind");
        let mut proc = spawn(setup, name, server_cores, answers.of(name), Some(&dir))?;
        check_small_call(&proc, Some(&answers.reference))?;
        let mut counter = callgrind::Counter::new(proc.child.id(), &dir);
        for scenario in theirs {
            counts.push(count_one(
                setup,
                counting,
                &mut proc,
                &mut counter,
                scenario,
                oha_core,
            )?);
        }
    }
    let mut settings = BTreeMap::new();
    if let Some(commit) = runner::command_output("git", &["rev-parse", "--short", "HEAD"]) {
        settings.insert("wymcp commit".to_owned(), commit);
    }
    if let Some(version) = runner::command_output("valgrind", &["--version"]) {
        settings.insert("valgrind".to_owned(), version);
    }
    settings.insert(
        "build".to_owned(),
        if setup.runner.quick {
            "dev (--quick: the numbers mean nothing)"
        } else {
            "release"
        }
        .to_owned(),
    );
    settings.insert("warm-up requests".to_owned(), counting.warmup.to_string());
    settings.insert("counted requests".to_owned(), counting.requests.to_string());
    settings.insert(
        "connections".to_owned(),
        setup.runner.connections.to_string(),
    );
    settings.insert(
        "malloc tunables".to_owned(),
        setup
            .tunables
            .clone()
            .unwrap_or_else(|| "glibc defaults".to_owned()),
    );
    let targets = judge_counts(&counts);
    Ok(CountReport {
        run: RunInfo::now(load_before, settings),
        counts,
        targets,
    })
}

/// Instructions per request of `server` on `scenario`, if counted.
fn per_request(counts: &[Count], scenario: &str, server: &str) -> Option<f64> {
    counts
        .iter()
        .find(|c| c.scenario == scenario && c.server == server)
        .map(|c| c.per_request)
        .filter(|n| *n > 0.0)
}

fn judge_counts(counts: &[Count]) -> Vec<(String, String, String)> {
    let verdict = |ok: Option<bool>| {
        match ok {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        }
        .to_owned()
    };
    let served = |server: &str| per_request(counts, "simple_call", server);
    let mut targets = Vec::new();
    let everything = served("everything");
    let ratio = everything.zip(served("floor")).map(|(e, f)| e / f);
    targets.push((
        "small tools/call on examples/everything: ≤ 1.10 × floor (Value) in instructions per request"
            .to_owned(),
        format!("{}×", fmt(ratio, 2)),
        verdict(ratio.map(|r| r <= SMALL_CALL_TARGET)),
    ));
    let ratio = everything.zip(served("floor-copy")).map(|(e, f)| e / f);
    targets.push((
        "small tools/call on examples/everything ÷ floor-copy, instructions (no target)".to_owned(),
        format!("{}×", fmt(ratio, 2)),
        "measured".to_owned(),
    ));
    let metrics = served("everything-metrics");
    targets.push((
        "what --metrics adds to a small call (everything-metrics − everything)".to_owned(),
        format!(
            "{} instructions per request ({}×)",
            fmt(metrics.zip(everything).map(|(m, e)| m - e), 0),
            fmt(metrics.zip(everything).map(|(m, e)| m / e), 2)
        ),
        "measured".to_owned(),
    ));
    if let Some(rmcp) = served("rmcp") {
        targets.push((
            "rmcp ÷ everything, small tools/call (no target)".to_owned(),
            format!("{}×", fmt(everything.map(|e| rmcp / e), 2)),
            "measured".to_owned(),
        ));
    }
    for (name, server) in REJECTIONS {
        let rejected = per_request(counts, name, server);
        let full = served(server);
        targets.push((
            format!("{name}: fewer instructions than {server}'s served call"),
            format!(
                "{} vs {} ({}×)",
                fmt(rejected, 0),
                fmt(full, 0),
                fmt(rejected.zip(full).map(|(r, f)| r / f), 2)
            ),
            verdict(rejected.zip(full).map(|(r, f)| r < f)),
        ));
    }
    targets
}

impl CountReport {
    /// The report as Markdown.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut out = self
            .run
            .preamble(" (instruction counts do not move with it)");
        out.push_str("| scenario | server | requests | instructions/request | ÷ floor (Value) | ÷ floor-copy | ÷ served |\n");
        out.push_str("|---|---|---:|---:|---:|---:|---:|\n");
        let floor = per_request(&self.counts, "simple_call", "floor");
        let copy = per_request(&self.counts, "simple_call", "floor-copy");
        for count in &self.counts {
            let n = count.per_request;
            let served = (count.scenario != "simple_call")
                .then(|| per_request(&self.counts, "simple_call", &count.server))
                .flatten();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {n:.0} | {} | {} | {} |",
                count.scenario,
                label(&count.server),
                count.requests,
                fmt(floor.map(|f| n / f), 2),
                fmt(copy.map(|c| n / c), 2),
                fmt(served.map(|s| n / s), 2),
            );
        }
        out.push_str("\n| target | measured | verdict |\n|---|---|---|\n");
        for (target, measured, verdict) in &self.targets {
            let _ = writeln!(out, "| {target} | {measured} | {verdict} |");
        }
        out
    }
}

fn value<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>, String> {
    let Some(at) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    let raw = args
        .get(at + 1)
        .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?;
    raw.parse()
        .map(Some)
        .map_err(|_| format!("{name}: cannot use `{raw}`\n{USAGE}"))
}

/// `wymcp-bench hotpath …`.
pub fn main(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("serve") {
        return serve(&args[1..]);
    }
    let known = [
        "--everything",
        "--oha",
        "--runs",
        "--seconds",
        "--warmup",
        "--connections",
        "--only",
        "--cores",
        "--malloc-tunables",
        "--json",
        "--markdown",
        "--requests",
        "--warmup-requests",
    ];
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" | "--no-pin" | "--instructions" | "--with-rmcp" | "--builtin-load" => {
                i += 1;
            }
            flag if known.contains(&flag) => i += 2,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let quick = args.iter().any(|a| a == "--quick");
    let instructions = args.iter().any(|a| a == "--instructions");
    let pin = !args.iter().any(|a| a == "--no-pin");
    let everything: PathBuf = value(args, "--everything")?.ok_or_else(|| USAGE.to_owned())?;
    let tunables = value::<String>(args, "--malloc-tunables")?
        .or_else(|| std::env::var("GLIBC_TUNABLES").ok())
        .filter(|t| !t.is_empty());
    let scratch = std::env::temp_dir().join(format!("wymcp-hotpath-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let runner = Options {
        quick,
        load: LoadGenerator::from_flags(
            value(args, "--oha")?,
            args.iter().any(|a| a == "--builtin-load"),
        )?,
        runs: value(args, "--runs")?.unwrap_or(if quick { 1 } else { 3 }),
        duration: Duration::from_secs_f64(value(args, "--seconds")?.unwrap_or(if quick {
            1.0
        } else {
            5.0
        })),
        warmup: Duration::from_secs_f64(value(args, "--warmup")?.unwrap_or(if quick {
            0.3
        } else {
            2.0
        })),
        connections: value(args, "--connections")?.unwrap_or(if instructions { 8 } else { 50 }),
        only: value::<String>(args, "--only")?
            .map(|s| s.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        servers: Vec::new(),
        cores: None,
        scratch: scratch.clone(),
        allocator: String::new(),
        malloc_tunables: tunables.clone(),
        release_memory_after: None,
    };
    let cores: Vec<usize> = value::<String>(args, "--cores")?
        .unwrap_or_else(|| "1".to_owned())
        .split(',')
        .map(|c| c.parse().map_err(|_| format!("--cores: cannot use `{c}`")))
        .collect::<Result<_, _>>()?;
    let setup = Setup {
        everything,
        tunables,
        runner,
    };
    let (md, json) = (
        value::<PathBuf>(args, "--markdown")?,
        value::<PathBuf>(args, "--json")?,
    );
    if instructions {
        let counting = Counting {
            warmup: value(args, "--warmup-requests")?.unwrap_or(if quick { 50 } else { 2000 }),
            requests: value(args, "--requests")?.unwrap_or(if quick { 200 } else { 20_000 }),
            rmcp: args.iter().any(|a| a == "--with-rmcp"),
            pin,
        };
        let result = count(&setup, &counting);
        let _ = std::fs::remove_dir_all(&scratch);
        let report = result.map_err(|e| e.to_string())?;
        let markdown = report.markdown();
        println!("{markdown}");
        return crate::report::write_outputs(
            md.as_deref().map(|p| (p, markdown.as_str())),
            json.as_deref().map(|p| (p, &report)),
        );
    }
    let result = run(&setup, &cores, pin);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = result.map_err(|e| e.to_string())?;
    let markdown = report.markdown();
    println!("{markdown}");
    crate::report::write_outputs(
        md.as_deref().map(|p| (p, markdown.as_str())),
        json.as_deref().map(|p| (p, &report)),
    )?;
    Ok(())
}

fn run(setup: &Setup, cores: &[usize], pin: bool) -> Result<Report, Error> {
    let load_before = procfs::load_average();
    let all = scenarios();
    let chosen: Vec<&Scenario> = all
        .iter()
        .filter(|s| setup.runner.only.is_empty() || setup.runner.only.iter().any(|o| o == s.name))
        .collect();
    let mut results = Vec::new();
    // Each pass: the cores the servers get, and whether oha shares them.
    // Scaling is read like for like: the servers on one core with oha on
    // that core too, against the servers on two with oha beside them (the
    // machine has two; a load generator with cores of its own would need a
    // third).
    let mut passes = Vec::new();
    for &n in cores {
        if n > 1 && pin && !passes.contains(&(1, true)) {
            passes.push((1, true));
        }
        passes.push((n, false));
    }
    for (n, shared) in passes {
        // One core: the servers on core 0, oha on core 1 (or on core 0 too,
        // `shared`). Two: the servers on both, oha unpinned beside them.
        let (server_cores, oha_core) = match (pin, n, shared) {
            (false, _, _) => (None, None),
            (true, 1, false) => (Some("0".to_owned()), Some(1)),
            (true, 1, true) => (Some("0".to_owned()), Some(0)),
            (true, n, _) => (
                Some((0..n).map(|c| c.to_string()).collect::<Vec<_>>().join(",")),
                None,
            ),
        };
        let label_cores = match (&server_cores, shared) {
            (Some(cores), true) => format!("{cores} (oha on {cores} too)"),
            (Some(cores), false) => cores.clone(),
            (None, _) => "unpinned".to_owned(),
        };
        let scenarios: Vec<&&Scenario> = chosen
            .iter()
            .filter(|s| (n == 1 && !shared) || s.name == "simple_call")
            .collect();
        let names: Vec<&'static str> = SERVERS
            .iter()
            .copied()
            .filter(|name| {
                scenarios
                    .iter()
                    .any(|s| s.expect.iter().any(|(n, _)| n == name))
            })
            .filter(|name| (n == 1 && !shared) || *name != "everything-auth")
            .filter(|name| !INSTRUCTIONS_ONLY.contains(name))
            .collect();
        if names.is_empty() {
            continue;
        }
        let mut fleet = Fleet::start(setup, &names, server_cores.as_deref())?;
        for scenario in scenarios {
            let label = match (n, shared) {
                (1, false) => scenario.name.to_owned(),
                (1, true) => format!("{}@1core-shared", scenario.name),
                (n, _) => format!("{}@{n}cores", scenario.name),
            };
            let mut result =
                run_scenario(setup, &mut fleet, scenario, &label_cores, oha_core, label)?;
            if n > 1 || shared {
                result.servers.remove("everything-auth");
            }
            results.push(result);
        }
    }
    let mut settings = BTreeMap::new();
    if let Some(commit) = runner::command_output("git", &["rev-parse", "--short", "HEAD"]) {
        settings.insert("wymcp commit".to_owned(), commit);
    }
    settings.insert("runs".to_owned(), setup.runner.runs.to_string());
    settings.insert(
        "seconds per run".to_owned(),
        format!("{:.1}", setup.runner.duration.as_secs_f64()),
    );
    settings.insert(
        "connections".to_owned(),
        setup.runner.connections.to_string(),
    );
    settings.insert(
        "malloc tunables".to_owned(),
        setup
            .tunables
            .clone()
            .unwrap_or_else(|| "glibc defaults".to_owned()),
    );
    settings.insert(
        "runtime".to_owned(),
        "tokio multi-thread (all servers)".to_owned(),
    );
    let targets = judge(&results);
    Ok(Report {
        run: RunInfo::now(load_before, settings),
        scenarios: results,
        targets,
    })
}

/// `hotpath serve floor|floor-copy|rmcp`: the floor (serving the `result`
/// in `--answer`), floor-copy (serving the whole answer in `--answer`) or
/// rmcp, on a multi-thread runtime like everything's.
fn serve(args: &[String]) -> Result<(), String> {
    let which = args.first().map(String::as_str);
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    let router = match which {
        Some("floor") => {
            let path: PathBuf = value(args, "--answer")?.ok_or_else(|| USAGE.to_owned())?;
            let raw = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let result: servers::Ordered =
                serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
            servers::floor_serving(result)
        }
        Some("floor-copy") => {
            let path: PathBuf = value(args, "--answer")?.ok_or_else(|| USAGE.to_owned())?;
            let answer = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            servers::floor_copy(answer.into())
        }
        Some("rmcp") => servers::rmcp(),
        _ => return Err(USAGE.to_owned()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!("listening on {}", listener.local_addr()?);
            axum::serve(listener, router).await
        })
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(scenario: &str, server: &str, per_request: u64) -> Count {
        Count {
            scenario: scenario.to_owned(),
            server: server.to_owned(),
            requests: 100,
            instructions: per_request * 100,
            #[allow(clippy::cast_precision_loss)]
            per_request: per_request as f64,
        }
    }

    #[test]
    fn outcomes_count_other_statuses_and_errors_against_the_expected() {
        let summary = serde_json::json!({
            "statusCodeDistribution": {"200": 95, "503": 2},
            "errorDistribution": {"connection closed": 3},
        });
        assert_eq!(outcomes(&summary, 200), (95, 5));
        assert_eq!(outcomes(&summary, 400), (0, 100));
        assert_eq!(outcomes(&serde_json::json!({}), 200), (0, 0));
    }

    #[test]
    fn instruction_targets_are_read_against_floor_value_and_the_served_call() {
        let counts = vec![
            counted("simple_call", "floor", 40_000),
            counted("simple_call", "floor-copy", 30_000),
            counted("simple_call", "everything", 43_000),
            counted("simple_call", "everything-metrics", 46_000),
            counted("reject_origin", "everything", 20_000),
            counted("reject_validation", "everything", 50_000),
        ];
        let targets = judge_counts(&counts);
        let find = |start: &str| {
            targets
                .iter()
                .find(|(t, _, _)| t.starts_with(start))
                .unwrap_or_else(|| panic!("no target {start}: {targets:?}"))
                .clone()
        };
        let small = find("small tools/call on examples/everything: ≤ 1.10 × floor (Value)");
        assert_eq!((small.1.as_str(), small.2.as_str()), ("1.07×", "met"));
        let copy = find("small tools/call on examples/everything ÷ floor-copy");
        assert_eq!((copy.1.as_str(), copy.2.as_str()), ("1.43×", "measured"));
        let metrics = find("what --metrics adds");
        assert_eq!(metrics.1, "3000 instructions per request (1.07×)");
        let origin = find("reject_origin");
        assert_eq!(
            (origin.1.as_str(), origin.2.as_str()),
            ("20000 vs 43000 (0.47×)", "met")
        );
        let validation = find("reject_validation");
        assert_eq!(validation.2, "missed");
        assert_eq!(find("reject_auth").2, "not measured");
        assert!(targets.iter().all(|(t, _, _)| !t.contains("1.15")));

        let markdown = CountReport {
            run: RunInfo {
                date: String::new(),
                machine: String::new(),
                load: [None, None],
                settings: BTreeMap::new(),
            },
            counts,
            targets,
        }
        .markdown();
        assert!(
            markdown.contains("| simple_call | floor (Value) | 100 | 40000 | 1.00 | 1.33 | – |"),
            "{markdown}"
        );
        assert!(
            markdown
                .contains("| reject_validation | everything | 100 | 50000 | 1.25 | 1.67 | 1.16 |"),
            "{markdown}"
        );
    }
}
