//! `wymcp-bench tasks`: what the tasks extension (SEP-2663) costs per core,
//! with the in-memory store and with the Redis store (issue 15, target 4).
//!
//! One server, driven in this process through its default chain
//! (`wymcp::chain::post::router`, `oneshot` requests, no sockets) on a
//! current-thread runtime on the main thread, so that thread's CPU time
//! (`/proc/self/sched`, to the nanosecond) is one core's work: the chain, the extension and the store's client.
//! redis-server's own CPU is read from `/proc/PID/stat`. Each round runs
//! four phases over `tasks` tasks, `in_flight` requests at a time:
//!
//! 1. **create**: a declaring client's `tools/call` of a task-required
//!    tool, answered with the `CreateTaskResult` (the record stored, the
//!    handler spawned and held at a gate);
//! 2. **poll (working)**: one `tasks/get` of each, still `working`;
//! 3. **finish**: the gate opens; every handler returns and its task is
//!    settled `completed` in the store (a load and a compare-and-set);
//! 4. **poll (completed)**: one `tasks/get` of each, the result inlined.
//!
//! **Limits raised in the benchmark's server only**: `TaskLimits::max_running`
//! and `max_running_per_caller` (defaults 256 and 16) to the task count, so
//! one caller can hold every task of a round at the gate; the records
//! stored (`max_stored`, `max_stored_per_caller`: 10,000 and 256) and the
//! in-memory store's capacity to every round's tasks, as every record is
//! kept for its TTL. Every other setting is the
//! default (TTL 1 h, lease 15 s, heartbeat 5 s, store timeout 2 s).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt as _;
use wymcp::redis::RedisTaskStore;
use wymcp::tasks::{MemoryTaskStore, StoreFuture, TaskEntry, TaskStore};
use wymcp::{NoArgs, Server, TaskLimits, TaskSupport, Tool, ToolResult};

use crate::procfs::{Stat, clock_tick, load_average};

/// A store that counts its successful replacements (so the benchmark knows
/// when every task is settled) and otherwise is `S`.
#[derive(Debug)]
struct Counting<S> {
    inner: S,
    replaced: Arc<AtomicUsize>,
}

impl<S: TaskStore> TaskStore for Counting<S> {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        self.inner.insert(entry)
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        self.inner.load(id)
    }

    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let replaced = self.inner.replace(entry).await?;
            if replaced {
                self.replaced.fetch_add(1, Ordering::Relaxed);
            }
            Ok(replaced)
        })
    }
}

/// One phase's cost, the median round's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    /// `create`, `poll (working)`, `finish`, `poll (completed)`.
    pub phase: &'static str,
    /// Operations per second of wall time.
    pub per_second: f64,
    /// Operations per CPU-second of the main thread (one core).
    pub per_core_second: f64,
    /// The main thread's CPU per operation, in µs.
    pub cpu_us: f64,
    /// redis-server's CPU per operation, in µs (the Redis store).
    pub redis_cpu_us: Option<f64>,
}

/// What one store measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StorePass {
    /// `memory` or `redis`.
    pub store: &'static str,
    /// Tasks per round.
    pub tasks: usize,
    /// Rounds (the median is reported).
    pub rounds: usize,
    /// Requests in flight at once.
    pub in_flight: usize,
    /// The phases, in order.
    pub phases: Vec<Phase>,
    /// The load average when the pass ended.
    pub load_average: Option<[f64; 3]>,
}

const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

fn request(
    id: usize,
    method: &str,
    name: &str,
    params: Value,
) -> http::Request<wymcp::axum::body::Body> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(wymcp::axum::body::Body::from(body.to_string()))
        .expect("a request")
}

/// The result of a JSON (or single-event SSE) answer.
async fn result(
    router: &wymcp::axum::Router,
    request: http::Request<wymcp::axum::body::Body>,
) -> Result<Value, String> {
    let Ok(response) = router.clone().oneshot(request).await;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let json = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("data: ")
                .or_else(|| l.starts_with('{').then_some(l))
        })
        .unwrap_or_default();
    let message: Value = serde_json::from_str(json).map_err(|_| format!("{status}: {text}"))?;
    message
        .get("result")
        .cloned()
        .ok_or_else(|| format!("{status}: {text}"))
}

fn cpu_us(stat: Stat) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ticks = stat.cpu_ticks as f64;
    ticks * clock_tick().as_secs_f64() * 1e6
}

/// Runs `op` for each of `0..n`, `in_flight` at a time.
async fn each<F, Fut>(n: usize, in_flight: usize, op: F) -> Result<Vec<Value>, String>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<Value, String>> + 'static,
{
    let mut out = vec![Value::Null; n];
    let mut running = tokio::task::JoinSet::new();
    let mut next = 0;
    while next < n || !running.is_empty() {
        while next < n && running.len() < in_flight {
            let fut = op(next);
            let at = next;
            running.spawn_local(async move { (at, fut.await) });
            next += 1;
        }
        if let Some(done) = running.join_next().await {
            let (at, value) = done.map_err(|e| e.to_string())?;
            out[at] = value?;
        }
    }
    Ok(out)
}

/// Times `phase`: its wall time, this process's CPU and redis-server's.
struct Meter {
    started: Instant,
    me: f64,
    redis: Option<(u32, Stat)>,
}

impl Meter {
    fn start(redis_pid: Option<u32>) -> Self {
        Meter {
            started: Instant::now(),
            me: crate::startup::main_thread_cpu_ms(),
            redis: redis_pid.and_then(|p| Stat::read(p).ok().map(|s| (p, s))),
        }
    }

    fn stop(self, phase: &'static str, ops: usize) -> Phase {
        let wall = self.started.elapsed().as_secs_f64();
        let cpu = (crate::startup::main_thread_cpu_ms() - self.me) * 1e3;
        #[allow(clippy::cast_precision_loss)]
        let ops = ops as f64;
        Phase {
            phase,
            per_second: ops / wall,
            per_core_second: ops / (cpu / 1e6),
            cpu_us: cpu / ops,
            redis_cpu_us: self.redis.and_then(|(pid, before)| {
                Stat::read(pid)
                    .ok()
                    .map(|after| cpu_us(after.since(before)) / ops)
            }),
        }
    }
}

async fn round(
    router: &wymcp::axum::Router,
    gate: &watch::Sender<bool>,
    replaced: &AtomicUsize,
    tasks: usize,
    in_flight: usize,
    redis_pid: Option<u32>,
) -> Result<Vec<Phase>, String> {
    let _ = gate.send(false);
    let mut phases = Vec::new();

    let meter = Meter::start(redis_pid);
    let created = each(tasks, in_flight, |i| {
        let router = router.clone();
        async move {
            result(
                &router,
                request(
                    i,
                    "tools/call",
                    "gated",
                    json!({"name": "gated", "arguments": {}}),
                ),
            )
            .await
        }
    })
    .await?;
    phases.push(meter.stop("create", tasks));
    let ids: Arc<Vec<String>> = Arc::new(
        created
            .iter()
            .map(|r| match (r["resultType"].as_str(), r["taskId"].as_str()) {
                (Some("task"), Some(id)) => Ok(id.to_owned()),
                _ => Err(format!("not a CreateTaskResult: {r}")),
            })
            .collect::<Result<_, _>>()?,
    );

    let get = |want: &'static str| {
        let ids = ids.clone();
        move |i: usize| {
            let router = router.clone();
            let id = ids[i].clone();
            async move {
                let r =
                    result(&router, request(i, "tasks/get", &id, json!({"taskId": id}))).await?;
                if r["status"] != want {
                    return Err(format!("task {id} is not {want}: {r}"));
                }
                Ok(Value::Null)
            }
        }
    };
    let meter = Meter::start(redis_pid);
    each(tasks, in_flight, get("working")).await?;
    phases.push(meter.stop("poll (working)", tasks));

    let meter = Meter::start(redis_pid);
    let settled = replaced.load(Ordering::Relaxed) + tasks;
    let _ = gate.send(true);
    let started = Instant::now();
    while replaced.load(Ordering::Relaxed) < settled {
        tokio::time::sleep(Duration::from_micros(200)).await;
        if started.elapsed() > Duration::from_secs(60) {
            return Err("the tasks were not settled within 60 s".into());
        }
    }
    phases.push(meter.stop("finish", tasks));

    let meter = Meter::start(redis_pid);
    each(tasks, in_flight, get("completed")).await?;
    phases.push(meter.stop("poll (completed)", tasks));
    Ok(phases)
}

async fn pass(
    name: &'static str,
    store: impl TaskStore,
    replaced: Arc<AtomicUsize>,
    tasks: usize,
    rounds: usize,
    in_flight: usize,
    redis_pid: Option<u32>,
) -> Result<StorePass, String> {
    let (gate, opened) = watch::channel(false);
    let gated = Tool::new("gated")
        .description("Waits for the benchmark's gate, then answers")
        .task_support(TaskSupport::Required)
        .handler(move |_: NoArgs, _cx| {
            let mut opened = opened.clone();
            async move {
                let _ = opened.wait_for(|open| *open).await;
                Ok(ToolResult::text("done"))
            }
        });
    // Every round's records are kept for the TTL: one caller holds them all.
    let stored = tasks * (rounds + 2) + 200;
    let limits = TaskLimits::default()
        .max_running(tasks + 8)
        .max_running_per_caller(tasks + 8)
        .max_stored(stored)
        .max_stored_per_caller(stored);
    let server = Server::builder()
        .tool(gated)
        .task_store(store)
        .task_limits(limits)
        .build()
        .map_err(|e| e.to_string())?;
    let router = wymcp::chain::post::router(Arc::new(server));
    // One warm-up round, then the measured ones.
    round(
        &router,
        &gate,
        &replaced,
        tasks.min(100),
        in_flight,
        redis_pid,
    )
    .await?;
    let mut all = Vec::new();
    for _ in 0..rounds {
        all.push(round(&router, &gate, &replaced, tasks, in_flight, redis_pid).await?);
    }
    // The median round of each phase, by CPU per operation.
    let phases = (0..all[0].len())
        .map(|k| {
            let mut of: Vec<Phase> = all.iter().map(|r| r[k].clone()).collect();
            of.sort_by(|a, b| a.cpu_us.total_cmp(&b.cpu_us));
            of[of.len() / 2].clone()
        })
        .collect();
    Ok(StorePass {
        store: name,
        tasks,
        rounds,
        in_flight,
        phases,
        load_average: load_average(),
    })
}

/// Both stores, memory first, on a current-thread runtime of this thread.
///
/// # Errors
/// When redis-server cannot be started, or a request is not answered as
/// the extension says.
pub fn run(tasks: usize, rounds: usize, in_flight: usize) -> Result<Vec<StorePass>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let capacity = tasks * (rounds + 2) + 200;
        let replaced = Arc::new(AtomicUsize::new(0));
        let memory = Counting {
            inner: MemoryTaskStore::new(capacity),
            replaced: replaced.clone(),
        };
        let mut passes =
            vec![pass("memory", memory, replaced, tasks, rounds, in_flight, None).await?];
        let redis = crate::bus::start_redis()?;
        let url = format!("redis://127.0.0.1:{}/", redis.port());
        let replaced = Arc::new(AtomicUsize::new(0));
        let store = Counting {
            inner: RedisTaskStore::new(&url, crate::bus::redis_config())
                .map_err(|e| e.to_string())?,
            replaced: replaced.clone(),
        };
        passes.push(
            pass(
                "redis",
                store,
                replaced,
                tasks,
                rounds,
                in_flight,
                Some(redis.pid()),
            )
            .await?,
        );
        Ok(passes)
    })
}

/// The passes as a Markdown table.
#[must_use]
pub fn table(passes: &[StorePass]) -> String {
    let mut out = String::from(
        "| store | phase | tasks × rounds | per second (wall) | per core-second | CPU / op | redis-server CPU / op | load average |\n|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for pass in passes {
        let load = pass.load_average.map_or("?".to_owned(), |l| {
            format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
        });
        for p in &pass.phases {
            let redis = p
                .redis_cpu_us
                .map_or("—".to_owned(), |c| format!("{c:.0} µs"));
            let _ = writeln!(
                out,
                "| {} | {} | {} × {} | {:.0} | {:.0} | {:.1} µs | {redis} | {load} |",
                pass.store,
                p.phase,
                pass.tasks,
                pass.rounds,
                p.per_second,
                p.per_core_second,
                p.cpu_us
            );
        }
    }
    out
}
