//! The hot path on `examples/everything` (issue 15): a small `tools/call`
//! of its `test_simple_text` tool against a floor that serialises exactly
//! the bytes everything answers, and rmcp serving the same tool; one
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
//! * `floor`: [`servers::floor_serving`], given the `result` everything
//!   answered to the small call, checked byte for byte before measuring;
//! * `everything`: the example as it ships, no auth;
//! * `everything-auth`: the example with `--static-token`, a
//!   `wymcp::auth::StaticTokens` authenticator (every request of every
//!   scenario carries that token, so its served call pays for auth);
//! * `rmcp`: rmcp 3.11, stateless JSON, its `test_simple_text`.
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

use crate::payload::{ENDPOINT, REVISION, Request};
use crate::procfs::{self, Stat};
use crate::report::{Run, ServerResult};
use crate::runner::{self, Error, Load, Options, Shot, io};
use crate::servers;

/// The Bearer token `everything-auth` lets in.
pub const TOKEN: &str = "wymcp-bench-static-token";

const USAGE: &str = "usage:
  wymcp-bench hotpath --everything PATH [--oha PATH] [--quick] [--runs N] [--seconds S]
                      [--warmup S] [--connections C] [--only SCENARIO,…] [--cores 1,2]
                      [--malloc-tunables GLIBC_TUNABLES] [--json FILE] [--markdown FILE]
  wymcp-bench hotpath serve floor|rmcp [--answer FILE] [--addr 127.0.0.1:0]

scenarios: simple_call, reject_origin, reject_auth, reject_headers, reject_validation
(--cores 1,2 also runs simple_call with the servers and oha on one core, and with the
servers on both cores: the scaling rows)";

/// The servers of the hot-path scenarios.
const SERVERS: [&str; 4] = ["floor", "everything", "everything-auth", "rmcp"];

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

fn spawn(
    setup: &Setup,
    name: &'static str,
    cores: Option<&str>,
    answer: Option<&Path>,
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
        "floor" | "rmcp" => {
            let mut args = vec!["hotpath".into(), "serve".into(), name.into()];
            if let Some(answer) = answer {
                args.push("--answer".into());
                args.push(answer.display().to_string());
            }
            (&exe, args)
        }
        other => return Err(Error::Harness(format!("no server {other}"))),
    };
    let mut command = match cores {
        Some(cores) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cores).arg(program);
            command
        }
        None => Command::new(program),
    };
    command
        .args(&args)
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

impl Fleet {
    /// Starts `names` pinned to `cores`; the floor is given everything's
    /// `result` for the small call and must answer the same bytes.
    fn start(setup: &Setup, names: &[&'static str], cores: Option<&str>) -> Result<Fleet, Error> {
        let mut procs = Vec::new();
        let call = simple_call();
        let mut reference: Option<Vec<u8>> = None;
        for &name in names.iter().filter(|n| n.starts_with("everything")) {
            let proc = spawn(setup, name, cores, None)?;
            let (status, body) = post_once(proc.addr, &call)?;
            if status != 200 {
                return Err(Error::Harness(format!(
                    "{name} answered the small call {status}: {}",
                    String::from_utf8_lossy(&body)
                )));
            }
            reference.get_or_insert(body);
            procs.push(proc);
        }
        let answer = setup.runner.scratch.join("floor-result.json");
        if let Some(reference) = &reference {
            let value: servers::Ordered = serde_json::from_slice(reference)
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
            let result =
                serde_json::to_vec(&result.1).map_err(|e| Error::Harness(e.to_string()))?;
            std::fs::write(&answer, result).map_err(io("writing the floor's result"))?;
        }
        for &name in names.iter().filter(|n| !n.starts_with("everything")) {
            let floor_answer = (name == "floor" && reference.is_some()).then_some(answer.as_path());
            let proc = spawn(setup, name, cores, floor_answer)?;
            let (status, body) = post_once(proc.addr, &call)?;
            if status != 200 {
                return Err(Error::Harness(format!(
                    "{name} answered the small call {status}"
                )));
            }
            if name == "floor"
                && let Some(reference) = &reference
                && body != *reference
            {
                return Err(Error::Harness(format!(
                    "the floor's bytes are not everything's:\n  floor      {}\n  everything {}",
                    String::from_utf8_lossy(&body),
                    String::from_utf8_lossy(reference)
                )));
            }
            procs.push(proc);
        }
        // The measuring order: floor, everything, everything-auth, rmcp.
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
    /// `date -u`.
    pub date: String,
    /// `nproc` and the CPU model.
    pub machine: String,
    /// Load average before and after.
    pub load: [Option<[f64; 3]>; 2],
    /// wymcp's commit and the settings.
    pub settings: BTreeMap<String, String>,
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
    let summary = runner::oha(
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
        "small tools/call on examples/everything: CPU/request ≤ 1.15 × the floor serving the same bytes".to_owned(),
        format!("{}×", fmt(ratio, 2)),
        verdict(ratio.map(|r| r <= 1.15)),
    ));
    let ratio = served.and_then(|s| Some(s.cpu("rmcp")? / s.cpu("everything")?));
    targets.push((
        "small tools/call on examples/everything: ≥ 3 × rmcp's requests per core".to_owned(),
        format!("{}×", fmt(ratio, 2)),
        verdict(ratio.map(|r| r >= 3.0)),
    ));
    for (name, server) in [
        ("reject_origin", "everything"),
        ("reject_auth", "everything-auth"),
        ("reject_headers", "everything"),
        ("reject_validation", "everything"),
    ] {
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
                format!("{server} {}×", fmt(gain, 2))
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

impl Report {
    /// The report as Markdown.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let load = |l: Option<[f64; 3]>| {
            l.map_or_else(
                || "?".to_owned(),
                |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"),
            )
        };
        let _ = writeln!(out, "* date: {}", self.date);
        let _ = writeln!(out, "* machine: {}", self.machine);
        let _ = writeln!(
            out,
            "* load average (1/5/15 min): before {}, after {}",
            load(self.load[0]),
            load(self.load[1])
        );
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(out, "* settings: {}\n", settings.join(", "));
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
                    "| {} | {} | {server} | {:.0} | {:.3} | {:.3} | {} | {:.2} | {} |",
                    scenario.name,
                    scenario.cores,
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
                    "| {server} | {} | {} | {} | {} | {} |",
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
    ];
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" | "--no-pin" => i += 1,
            flag if known.contains(&flag) => i += 2,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let quick = args.iter().any(|a| a == "--quick");
    let pin = !args.iter().any(|a| a == "--no-pin");
    let everything: PathBuf = value(args, "--everything")?.ok_or_else(|| USAGE.to_owned())?;
    let tunables = value::<String>(args, "--malloc-tunables")?
        .or_else(|| std::env::var("GLIBC_TUNABLES").ok())
        .filter(|t| !t.is_empty());
    let scratch = std::env::temp_dir().join(format!("wymcp-hotpath-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let runner = Options {
        quick,
        oha: value(args, "--oha")?.unwrap_or_else(|| PathBuf::from("oha")),
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
        connections: value(args, "--connections")?.unwrap_or(50),
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
    let result = run(&setup, &cores, pin);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = result.map_err(|e| e.to_string())?;
    let markdown = report.markdown();
    println!("{markdown}");
    let (md, json) = (
        value::<PathBuf>(args, "--markdown")?,
        value::<PathBuf>(args, "--json")?,
    );
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
        date: runner::command_output("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]).unwrap_or_default(),
        machine: format!(
            "{} cores, {}",
            std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
            procfs::cpu_model()
        ),
        load: [load_before, procfs::load_average()],
        settings,
        scenarios: results,
        targets,
    })
}

/// `hotpath serve floor|rmcp`: the floor (serving the `result` in
/// `--answer`) or rmcp, on a multi-thread runtime like everything's.
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
