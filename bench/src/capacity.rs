//! The capacity scenarios' subcommands: `fanout` (and the server it runs,
//! `fanout-serve`), `tasks` and `startup` (bench/src/fanout.rs, tasks.rs,
//! startup.rs; issue 15, targets 3 to 5).

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{check_flags, value};

fn write_json(args: &[String], value_of: &impl serde::Serialize) -> Result<(), String> {
    let json = value::<PathBuf>(args, "--json")?;
    wymcp_bench::report::write_outputs(None, json.as_deref().map(|p| (p, value_of)))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One change reaching N listen streams over TCP, in-process and through
/// Redis; prints the verdict on the targets (a number never fails it).
pub fn fanout(args: &[String]) -> Result<(), String> {
    check_flags(
        args,
        &["--streams", "--changes", "--rounds", "--json"],
        &["--no-pin"],
    )?;
    let streams = value(args, "--streams")?.unwrap_or(10_000);
    let changes = value(args, "--changes")?.unwrap_or(50);
    let rounds: usize = value(args, "--rounds")?.unwrap_or(2);
    let pin = !args.iter().any(|a| a == "--no-pin");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "== listen fan-out: a change reaching {streams} streams over TCP, {changes} changes one at a time, {rounds} round(s) of floor, in-process, redis (load average: {})",
        load()
    );
    let passes = runtime.block_on(wymcp_bench::fanout::run(
        streams,
        changes,
        pin,
        rounds.max(1),
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
    check_flags(args, &["--streams", "--addr", "--redis"], &["--floor"])?;
    let streams = value(args, "--streams")?.unwrap_or(10_000);
    let addr: SocketAddr = value(args, "--addr")?.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    let redis: Option<String> = value(args, "--redis")?;
    let floor = args.iter().any(|a| a == "--floor");
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
