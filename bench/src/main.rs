//! `wymcp-bench`: `serve` runs one of the benchmark's servers; `run` runs the
//! benchmark (see `BENCHMARKS.md`; `scripts/bench` is the one command).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use wymcp_bench::hostile;
use wymcp_bench::runner::{self, LoadGenerator, Options};
use wymcp_bench::servers::{self, Kind};

/// The capacity scenarios' subcommands (issue 15: fanout, tasks, startup).
mod capacity;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MIMALLOC: bool = cfg!(feature = "mimalloc");

/// The allocator the servers run with, in words, `tunables` the
/// `GLIBC_TUNABLES` they are given.
fn allocator_name(tunables: Option<&str>) -> String {
    match tunables {
        _ if MIMALLOC => "mimalloc (the mimalloc crate, default settings)".to_owned(),
        Some(tunables) => format!("system (glibc malloc, GLIBC_TUNABLES={tunables})"),
        None => "system (glibc malloc, default settings)".to_owned(),
    }
}

const USAGE: &str = "usage:
  wymcp-bench bus [--streams N] [--changes N] [--json FILE]
  wymcp-bench fanout [--streams N] [--changes N] [--rounds N] [--kind listen|get|both]
                     [--idle S] [--no-pin] [--json FILE]
  wymcp-bench tasks [--tasks N] [--rounds N] [--in-flight N] [--json FILE]
  wymcp-bench startup [--tools N] [--rounds N] [--requests N] [--json FILE]
  wymcp-bench io [--quick] [--vus N] [--warmup S] [--seconds S] [--rounds N]
                 [--servers floor,wymcp,rmcp] [--no-pin] [--malloc-tunables T] [--json FILE]
  wymcp-bench hotpath --everything PATH [--cores 1,2] [--quick] … (hotpath --help)
  wymcp-bench hostile --server PATH [--seconds S] [--unloaded S] [--only SCENARIO,…] [--json FILE]
  wymcp-bench serve --server floor|wymcp|rmcp [--addr 127.0.0.1:0]
                    [--release-memory-after BYTES|off]
  wymcp-bench run [--quick] [--json FILE] [--markdown FILE] [--oha PATH | --builtin-load]
                  [--runs N] [--seconds S] [--warmup S] [--connections C]
                  [--only SCENARIO,…] [--servers floor,wymcp,rmcp] [--no-pin]
                  [--malloc-tunables GLIBC_TUNABLES] [--release-memory-after BYTES|off]

--malloc-tunables sets GLIBC_TUNABLES for the three servers (not for oha);
\"\" runs them with glibc's defaults. Without it, a GLIBC_TUNABLES in the
environment is what the servers get (and oha does not).
--release-memory-after is wymcp's idle memory release (default 67108864,
wymcp's default; off: none).
--builtin-load drives the servers with `wymcp-bench load` instead of oha (smoke
runs: its numbers are not oha's, and BENCHMARKS.md's are oha's).
  wymcp-bench load URL --connections C --body FILE (--millis MS [--fresh] | --requests N)
                   [--header 'Name: value']…   (the built-in load, for the harness)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("hostile") => hostile(&args[1..]),
        Some("bus") => bus(&args[1..]),
        Some("fanout") => capacity::fanout(&args[1..]),
        Some("fanout-serve") => capacity::fanout_serve(&args[1..]),
        Some("tasks") => capacity::tasks(&args[1..]),
        Some("startup") => capacity::startup(&args[1..]),
        Some("hotpath") => wymcp_bench::hotpath::main(&args[1..]),
        Some("io") => capacity::io(&args[1..]),
        Some("io-serve") => capacity::io_serve(&args[1..]),
        Some("io-api") => capacity::io_api(&args[1..]),
        Some("run") => run(&args[1..]),
        Some("load") => wymcp_bench::loadgen::main(&args[1..]),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("wymcp-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The value after flag `name`, parsed.
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

fn check_flags(args: &[String], with_value: &[&str], plain: &[&str]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if with_value.contains(&arg) {
            i += 2;
        } else if plain.contains(&arg) {
            i += 1;
        } else {
            return Err(format!("unknown argument `{arg}`\n{USAGE}"));
        }
    }
    Ok(())
}

/// `--release-memory-after`: a byte count, `off`, or wymcp's default.
fn release_memory_after(args: &[String]) -> Result<Option<u64>, String> {
    match value::<String>(args, "--release-memory-after")?.as_deref() {
        None => Ok(Some(wymcp::memory::DEFAULT_RELEASE_AFTER)),
        Some("off") => Ok(None),
        Some(raw) => raw
            .parse()
            .map(Some)
            .map_err(|_| format!("--release-memory-after: cannot use `{raw}`\n{USAGE}")),
    }
}

/// The hostile soak against the `examples/everything` binary `--server`:
/// its scenarios one after the other, `--seconds` of attack shared among
/// them.
fn hostile(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &["--server", "--seconds", "--unloaded", "--only", "--json"],
        &[],
    )?;
    let options = hostile::Options {
        server: value(args, "--server")?.ok_or_else(|| USAGE.to_owned())?,
        duration: Duration::from_secs_f64(value(args, "--seconds")?.unwrap_or(60.0)),
        unloaded: value(args, "--unloaded")?.map(Duration::from_secs_f64),
        only: list(args, "--only")?,
    };
    let scenarios = options.scenarios()?;
    let (attack, unloaded) = options.times(scenarios.len());
    println!(
        "== hostile soak: {} scenarios, each {unloaded:?} alone and {attack:?} under attack, against {} (load average: {})",
        scenarios.len(),
        options.server.display(),
        wymcp_bench::procfs::load_average().map_or_else(
            || "?".to_owned(),
            |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
        )
    );
    let report = hostile::run(&options)?;
    println!("{}", report.markdown());
    let json = value::<PathBuf>(args, "--json")?;
    wymcp_bench::report::write_outputs(None, json.as_deref().map(|p| (p, &report)))?;
    report.verdict()
}

/// What a change pays to reach listen streams on another replica through
/// Redis, against the in-process bus (bench/src/bus.rs).
fn bus(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--streams", "--changes", "--json"], &[])?;
    let streams = value(args, "--streams")?.unwrap_or(1000);
    let changes = value(args, "--changes")?.unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "== the bus: a change reaching {streams} listen streams, {changes} changes one at a time"
    );
    let passes = runtime.block_on(wymcp_bench::bus::run(streams, changes))?;
    println!("{}", wymcp_bench::bus::table(&passes));
    let json = value::<PathBuf>(args, "--json")?;
    wymcp_bench::report::write_outputs(None, json.as_deref().map(|p| (p, &passes)))?;
    Ok(())
}

fn serve(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--server", "--addr", "--release-memory-after"], &[])?;
    let kind: Kind = value(args, "--server")?.ok_or_else(|| USAGE.to_owned())?;
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    servers::serve(kind, addr, release_memory_after(args)?)
        .map_err(|e| format!("serving {}: {e}", kind.name()))
}

fn list<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<Vec<T>>, String> {
    let Some(raw) = value::<String>(args, name)? else {
        return Ok(None);
    };
    raw.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| format!("{name}: cannot use `{s}`\n{USAGE}"))
        })
        .collect::<Result<Vec<T>, String>>()
        .map(Some)
}

fn run(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &[
            "--json",
            "--markdown",
            "--oha",
            "--runs",
            "--seconds",
            "--warmup",
            "--connections",
            "--only",
            "--servers",
            "--malloc-tunables",
            "--release-memory-after",
        ],
        &["--quick", "--no-pin", "--builtin-load"],
    )?;
    let quick = args.iter().any(|a| a == "--quick");
    let seconds: f64 = value(args, "--seconds")?.unwrap_or(if quick { 1.0 } else { 5.0 });
    let warmup: f64 = value(args, "--warmup")?.unwrap_or(if quick { 0.5 } else { 2.0 });
    let malloc_tunables = value::<String>(args, "--malloc-tunables")?
        .or_else(|| std::env::var("GLIBC_TUNABLES").ok())
        .filter(|t| !t.is_empty());
    let options = Options {
        quick,
        load: LoadGenerator::from_flags(
            value(args, "--oha")?,
            args.iter().any(|a| a == "--builtin-load"),
        )?,
        runs: value(args, "--runs")?.unwrap_or(if quick { 1 } else { 3 }),
        duration: Duration::from_secs_f64(seconds),
        warmup: Duration::from_secs_f64(warmup),
        connections: value(args, "--connections")?.unwrap_or(50),
        only: list(args, "--only")?.unwrap_or_default(),
        servers: list(args, "--servers")?.unwrap_or_else(|| Kind::ALL.to_vec()),
        cores: (!args.iter().any(|a| a == "--no-pin")).then_some((0, 1)),
        scratch: std::env::temp_dir().join(format!("wymcp-bench-{}", std::process::id())),
        allocator: allocator_name(malloc_tunables.as_deref()),
        malloc_tunables,
        release_memory_after: release_memory_after(args)?,
    };
    let report = runner::run(&options);
    let _ = std::fs::remove_dir_all(&options.scratch);
    let report = report.map_err(|e| e.to_string())?;
    let markdown = report.markdown();
    println!("{markdown}");
    let (md, json) = (
        value::<PathBuf>(args, "--markdown")?,
        value::<PathBuf>(args, "--json")?,
    );
    wymcp_bench::report::write_outputs(
        md.as_deref().map(|p| (p, markdown.as_str())),
        json.as_deref().map(|p| (p, &report)),
    )?;
    Ok(())
}
