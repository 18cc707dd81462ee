//! The capacity scenarios' subcommands: `fanout` (and the server it runs,
//! `fanout-serve`), `tasks` and `startup` (bench/src/fanout.rs, tasks.rs,
//! startup.rs; issue 15, targets 3 to 5); and the I/O workload's, `io` (and
//! what it runs: `io-serve`, `io-api`; bench/src/io/, issue 26 §1).

use std::net::SocketAddr;
use std::path::PathBuf;

use std::time::Duration;

use wymcp_bench::io::servers::IoServer;

use super::{check_flags, list, value};

fn write_json(args: &[String], value_of: &impl serde::Serialize) -> Result<(), String> {
    let json = value::<PathBuf>(args, "--json")?;
    wymcp_bench::report::write_outputs(None, json.as_deref().map(|p| (p, value_of)))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One change reaching N listen streams (2026 `subscriptions/listen`, 2025
/// standalone GET, or both: `--kind`) over TCP, in-process and through
/// Redis; prints the verdict on the targets (a number never fails it).
pub fn fanout(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &[
            "--streams",
            "--changes",
            "--rounds",
            "--kind",
            "--idle",
            "--json",
        ],
        &["--no-pin"],
    )?;
    let streams = value(args, "--streams")?.unwrap_or(10_000);
    let changes = value(args, "--changes")?.unwrap_or(50);
    let rounds: usize = value(args, "--rounds")?.unwrap_or(2);
    let kind: String = value(args, "--kind")?.unwrap_or_else(|| "both".to_owned());
    let kinds = wymcp_bench::fanout::StreamKind::parse(&kind)?;
    let idle: f64 = value(args, "--idle")?.unwrap_or(2.0);
    let idle = Duration::try_from_secs_f64(idle).map_err(|e| format!("--idle {idle}: {e}"))?;
    let pin = !args.iter().any(|a| a == "--no-pin");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let named: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    println!(
        "== listen fan-out: a change reaching {streams} streams over TCP, {changes} changes one at a time, {rounds} round(s) of floor, hyper floor, in-process, redis, for {} (load average: {})",
        named.join(" then "),
        load()
    );
    let passes = runtime.block_on(wymcp_bench::fanout::run(
        streams,
        changes,
        pin,
        rounds.max(1),
        &kinds,
        idle,
    ))?;
    println!("{}", wymcp_bench::fanout::table(&passes));
    println!(
        "{}",
        wymcp_bench::fanout::ratio_table(&wymcp_bench::fanout::ratios(&passes))
    );
    for line in wymcp_bench::fanout::verdict(&passes) {
        println!("{line}");
    }
    write_json(args, &passes)
}

/// The server `fanout` starts.
pub fn fanout_serve(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &["--streams", "--addr", "--redis"],
        &["--floor", "--hyper-floor"],
    )?;
    let streams = value(args, "--streams")?.unwrap_or(10_000);
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    let redis: Option<String> = value(args, "--redis")?;
    let floor = if args.iter().any(|a| a == "--floor") {
        Some(wymcp_bench::fanout::Floor::Socket)
    } else if args.iter().any(|a| a == "--hyper-floor") {
        Some(wymcp_bench::fanout::Floor::Hyper)
    } else {
        None
    };
    wymcp_bench::fanout::serve(addr, streams, redis.as_deref(), floor)
}

/// Task create, poll and finish per core, in-memory and Redis stores.
pub fn tasks(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--tasks", "--rounds", "--in-flight", "--json"], &[])?;
    let tasks = value(args, "--tasks")?.unwrap_or(2000);
    let rounds = value(args, "--rounds")?.unwrap_or(3);
    let in_flight = value(args, "--in-flight")?.unwrap_or(64);
    println!(
        "== tasks: {tasks} tasks × {rounds} rounds, {in_flight} requests in flight, one core (load average: {})",
        load()
    );
    let passes = wymcp_bench::tasks::run(tasks, rounds.max(1), in_flight.max(1))?;
    println!("{}", wymcp_bench::tasks::table(&passes));
    write_json(args, &passes)
}

/// Building a server with N tools, and listing them.
pub fn startup(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--tools", "--rounds", "--requests", "--json"], &[])?;
    let tools = value(args, "--tools")?.unwrap_or(1000);
    let rounds = value(args, "--rounds")?.unwrap_or(5);
    let requests = value(args, "--requests")?.unwrap_or(2000);
    println!(
        "== start-up: a server with {tools} tools, built {rounds} times; {requests} requests per variant (load average: {})",
        load()
    );
    let startup = wymcp_bench::startup::run(tools.max(1), rounds.max(1), requests.max(1))?;
    println!("{}", wymcp_bench::startup::table(&startup));
    write_json(args, &startup)
}

/// The public benchmark's I/O workload: floor, wymcp and rmcp doing the same
/// I/O under the benchmark's flow; fails on a failed answer check, never on
/// a number (the verdict is printed).
pub fn io(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &[
            "--vus",
            "--warmup",
            "--seconds",
            "--rounds",
            "--servers",
            "--malloc-tunables",
            "--json",
        ],
        &["--quick", "--no-pin"],
    )?;
    let quick = args.iter().any(|a| a == "--quick");
    let options = wymcp_bench::io::Options {
        vus: value(args, "--vus")?.unwrap_or(50),
        warmup: Duration::from_secs_f64(value(args, "--warmup")?.unwrap_or(if quick {
            1.0
        } else {
            30.0
        })),
        duration: Duration::from_secs_f64(value(args, "--seconds")?.unwrap_or(if quick {
            2.0
        } else {
            60.0
        })),
        rounds: value::<usize>(args, "--rounds")?
            .unwrap_or(if quick { 1 } else { 2 })
            .max(1),
        servers: list(args, "--servers")?.unwrap_or_else(|| IoServer::ALL.to_vec()),
        pin: !args.iter().any(|a| a == "--no-pin"),
        malloc_tunables: value::<String>(args, "--malloc-tunables")?
            .or_else(|| std::env::var("GLIBC_TUNABLES").ok())
            .filter(|t| !t.is_empty()),
    };
    let pinning = if options.pin {
        "each server on core 0 (taskset -c 0); this process (the load generator), the API service and redis-server on what this process was given (core 1 under scripts/bench)"
    } else {
        "unpinned (--no-pin): servers, load generator, API service and redis-server share every core"
    };
    println!(
        "== the I/O workload (the public benchmark's): {} virtual users, {:?} warm-up, {:?} measured, {} round(s) of {}; {pinning}; malloc: {} (load average: {})",
        options.vus,
        options.warmup,
        options.duration,
        options.rounds,
        options
            .servers
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", "),
        options
            .malloc_tunables
            .as_deref()
            .map_or("glibc defaults".to_owned(), |t| format!(
                "GLIBC_TUNABLES={t}"
            )),
        load()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let passes = runtime.block_on(wymcp_bench::io::run(&options))?;
    println!("{}", wymcp_bench::io::table(&passes));
    let verdict = wymcp_bench::io::verdict(&passes);
    for line in &verdict {
        println!("{line}");
    }
    write_json(
        args,
        &wymcp_bench::io::Report {
            vus: options.vus,
            warmup_s: options.warmup.as_secs_f64(),
            seconds: options.duration.as_secs_f64(),
            rounds: options.rounds,
            pinning,
            passes: &passes,
            verdict,
        },
    )?;
    let errors: u64 = passes.iter().map(|p| p.errors).sum();
    if errors > 0 {
        let first: Vec<&String> = passes
            .iter()
            .flat_map(|p| &p.first_errors)
            .take(5)
            .collect();
        return Err(format!(
            "{errors} answers failed their check; the first: {first:#?}"
        ));
    }
    Ok(())
}

/// A server of the I/O workload.
pub fn io_serve(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--server", "--addr", "--api", "--redis"], &[])?;
    let server: IoServer = value(args, "--server")?.ok_or("--server floor|wymcp|rmcp")?;
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    let api: String = value(args, "--api")?.ok_or("--api http://HOST:PORT")?;
    let redis: String = value(args, "--redis")?.ok_or("--redis redis://HOST:PORT/")?;
    wymcp_bench::io::servers::serve(server, addr, &api, &redis)
}

/// The I/O workload's API service.
pub fn io_api(args: &[String]) -> Result<(), String> {
    check_flags(args, &["--addr"], &[])?;
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    wymcp_bench::io::catalog::serve(addr).map_err(|e| e.to_string())
}
