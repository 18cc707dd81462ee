//! `wymcp-bench startup`: what a server with 1,000 tools costs to build and
//! to list (issue 15, target 5).
//!
//! In this process, on a current-thread runtime on the main thread (so that
//! thread's CPU time, `/proc/self/sched`, is one core's work):
//!
//! * **build**: `Server::builder()` with `tools` tools, each with its own
//!   input schema (an object with a required string and a bounded
//!   integer, named after the tool), then `build()`; the median wall time
//!   of `rounds` builds, and the RSS a server adds (VmRSS after, minus
//!   before: the first build of each variant, both kept alive, so that
//!   neither reuses memory another freed). A second variant derives
//!   each tool's schema from a `#[derive(JsonSchema)]` argument type, as
//!   `Tool::handler` and `#[tool]` do.
//! * **tools/list**: `requests` sequential `tools/list` requests through the
//!   default chain (`oneshot`), CPU per request and the answer's bytes: the
//!   first page at the default page size (100), and every tool in one page
//!   (`page_size(tools)`).
//! * **tools/call**: the same small call on the server with `tools` tools
//!   and on one with a single tool: a call's cost must not grow with the
//!   tools registered (no schema compiled, nothing scanned per call).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;
use wymcp::{Server, Tool, ToolResult};

use crate::procfs::{Memory, load_average};
use crate::servers::EchoArgs;

/// What the run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Startup {
    /// Tools registered.
    pub tools: usize,
    /// The median time to build a server with distinct raw schemas, in ms.
    pub build_ms: f64,
    /// This process's CPU for that build (the median round's), in ms.
    pub build_cpu_ms: f64,
    /// The RSS the built server adds, in KiB.
    pub build_rss_kib: u64,
    /// The median time to build with derived (`JsonSchema`) schemas, in ms.
    pub derived_build_ms: f64,
    /// The RSS that server adds, in KiB.
    pub derived_rss_kib: u64,
    /// The measured requests per list variant.
    pub requests: usize,
    /// Each list/call variant: name, CPU µs per request, bytes of the answer.
    pub requests_cpu: Vec<(String, f64, usize)>,
    /// The load average at the end.
    pub load_average: Option<[f64; 3]>,
}

/// The CPU time this process's main thread has run, in ms, to the
/// nanosecond (`se.sum_exec_runtime` of `/proc/self/sched`; `/proc/PID/stat`
/// counts in 10 ms ticks). The scenarios run on a current-thread runtime on
/// the main thread, so this is their work.
#[must_use]
pub fn main_thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/self/sched")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("se.sum_exec_runtime"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(f64::NAN)
}

fn cpu_ms_since(before: f64) -> f64 {
    main_thread_cpu_ms() - before
}

fn rss_kib() -> u64 {
    Memory::read(std::process::id())
        .map(|m| m.rss_kib)
        .unwrap_or_default()
}

/// A tool with its own schema, as an application's generated tools have.
fn raw_tool(i: usize) -> Tool {
    Tool::new(format!("tool_{i:04}"))
        .description(format!("Tool number {i}: does the {i}th thing to its input"))
        .input_schema(json!({
            "type": "object",
            "properties": {
                format!("text_{i}"): {"type": "string", "maxLength": 1000 + i, "description": "What to work on"},
                "count": {"type": "integer", "minimum": 0, "maximum": i + 1},
                "mode": {"type": "string", "enum": ["fast", "slow", format!("mode_{i}")]},
            },
            "required": [format!("text_{i}")],
            "additionalProperties": false,
        }))
        .raw_handler(|_args: Value, _cx| async { Ok(ToolResult::text("ok")) })
}

fn derived_tool(i: usize) -> Tool {
    Tool::new(format!("tool_{i:04}"))
        .description(format!("Tool number {i}"))
        .handler(|args: EchoArgs, _cx| async move { Ok(ToolResult::text(args.text)) })
}

fn build(tools: usize, page_size: Option<usize>, tool: fn(usize) -> Tool) -> Server {
    let mut builder = Server::builder();
    if let Some(size) = page_size {
        builder = builder.page_size(size);
    }
    for i in 0..tools {
        builder = builder.tool(tool(i));
    }
    match builder.build() {
        Ok(server) => server,
        Err(error) => panic!("the startup benchmark's server builds: {error}"),
    }
}

/// Builds `rounds` times; the median wall and CPU ms.
fn builds(tools: usize, rounds: usize, tool: fn(usize) -> Tool) -> (f64, f64) {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let cpu_before = main_thread_cpu_ms();
        let started = Instant::now();
        let server = std::hint::black_box(build(tools, None, tool));
        let wall = started.elapsed().as_secs_f64() * 1e3;
        let cpu = cpu_ms_since(cpu_before);
        times.push((wall, cpu));
        drop(server);
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    times[times.len() / 2]
}

fn request(
    method: &str,
    name: Option<&str>,
    params: Value,
) -> http::Request<wymcp::axum::body::Body> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request
        .body(wymcp::axum::body::Body::from(body.to_string()))
        .expect("a request")
}

/// CPU µs per request of `requests` sequential requests, and the bytes of
/// the last answer (checked to be a result).
async fn per_request(
    router: &wymcp::axum::Router,
    requests: usize,
    make: impl Fn() -> http::Request<wymcp::axum::body::Body>,
) -> Result<(f64, usize), String> {
    let mut bytes = 0;
    for _ in 0..requests.min(50) {
        bytes = answer(router, make()).await?;
    }
    let before = main_thread_cpu_ms();
    for _ in 0..requests {
        bytes = answer(router, make()).await?;
    }
    #[allow(clippy::cast_precision_loss)]
    let per = cpu_ms_since(before) * 1e3 / requests as f64;
    Ok((per, bytes))
}

async fn answer(
    router: &wymcp::axum::Router,
    request: http::Request<wymcp::axum::body::Body>,
) -> Result<usize, String> {
    let Ok(response) = router.clone().oneshot(request).await;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if status != 200 || !body.windows(9).any(|w| w == b"\"result\":") {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
    }
    Ok(body.len())
}

/// The run.
///
/// # Errors
/// When a request is not answered with a result.
pub fn run(tools: usize, rounds: usize, requests: usize) -> Result<Startup, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // Warm the process (the MCP schemas, the allocator) with one small build.
    drop(build(10, None, raw_tool));
    // The memory first, before any large build has left freed memory for the
    // next to reuse, and with both servers alive.
    let rss_before = rss_kib();
    let raw = build(tools, None, raw_tool);
    let rss_raw = rss_kib();
    let derived = build(tools, None, derived_tool);
    let build_rss_kib = rss_raw.saturating_sub(rss_before);
    let derived_rss_kib = rss_kib().saturating_sub(rss_raw);
    drop((raw, derived));
    let (build_ms, build_cpu_ms) = builds(tools, rounds, raw_tool);
    let (derived_build_ms, _) = builds(tools, rounds, derived_tool);

    let mut requests_cpu = Vec::new();
    runtime.block_on(async {
        let default_page = wymcp::chain::post::router(Arc::new(build(tools, None, raw_tool)));
        let one_page = wymcp::chain::post::router(Arc::new(build(tools, Some(tools), raw_tool)));
        let single = wymcp::chain::post::router(Arc::new(build(1, None, raw_tool)));
        let list = || request("tools/list", None, json!({}));
        let (cpu, bytes) = per_request(&default_page, requests, list).await?;
        requests_cpu.push((
            "tools/list, first page (100 tools, the default page size)".to_owned(),
            cpu,
            bytes,
        ));
        let (cpu, bytes) = per_request(&one_page, requests, list).await?;
        requests_cpu.push((
            format!("tools/list, every tool in one page ({tools} tools)"),
            cpu,
            bytes,
        ));
        let call = || {
            request(
                "tools/call",
                Some("tool_0000"),
                json!({"name": "tool_0000", "arguments": {"text_0": "hello", "count": 1}}),
            )
        };
        let (cpu, bytes) = per_request(&default_page, requests, call).await?;
        requests_cpu.push((
            format!("tools/call on the server with {tools} tools"),
            cpu,
            bytes,
        ));
        let (cpu, bytes) = per_request(&single, requests, call).await?;
        requests_cpu.push(("tools/call on a server with 1 tool".to_owned(), cpu, bytes));
        Ok::<_, String>(())
    })?;
    Ok(Startup {
        tools,
        build_ms,
        build_cpu_ms,
        build_rss_kib,
        derived_build_ms,
        derived_rss_kib,
        requests,
        requests_cpu,
        load_average: load_average(),
    })
}

/// The run as Markdown.
#[must_use]
pub fn table(s: &Startup) -> String {
    let load = s.load_average.map_or("?".to_owned(), |l| {
        format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
    });
    #[allow(clippy::cast_precision_loss)]
    let per_tool = |kib: u64| kib as f64 * 1024.0 / s.tools as f64;
    let mut out = format!(
        "| build of {} tools | time (median) | RSS added | per tool |\n|---|---:|---:|---:|\n\
         | distinct raw schemas | {:.1} ms ({:.1} ms CPU) | {} KiB | {:.0} B |\n\
         | derived schemas (`JsonSchema`) | {:.1} ms | {} KiB | {:.0} B |\n\n\
         | request ({} each, sequential, one core) | CPU / request | answer bytes |\n|---|---:|---:|\n",
        s.tools,
        s.build_ms,
        s.build_cpu_ms,
        s.build_rss_kib,
        per_tool(s.build_rss_kib),
        s.derived_build_ms,
        s.derived_rss_kib,
        per_tool(s.derived_rss_kib),
        s.requests,
    );
    for (name, cpu, bytes) in &s.requests_cpu {
        let _ = writeln!(out, "| {name} | {cpu:.1} µs | {bytes} |");
    }
    let _ = writeln!(out, "\nload average at the end: {load}");
    out
}
