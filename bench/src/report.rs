//! The results of a benchmark run, and their two forms: a Markdown table and
//! JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::path::Path;

use serde::Serialize;

use crate::payload::CEILING_CALL_BYTES;

/// One measured run of one server in one scenario.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Run {
    /// Answers received (any status).
    pub requests: u64,
    /// Answers with a status outside 2xx.
    pub non_2xx: u64,
    /// Requests that got no answer (connection errors, aborted).
    pub errors: u64,
    /// The status codes received and how often.
    pub statuses: BTreeMap<String, u64>,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Answers per second.
    pub requests_per_second: f64,
    /// Request-body megabytes (10^6 bytes) per second.
    pub megabytes_per_second: f64,
    /// Median latency, milliseconds.
    pub p50_ms: f64,
    /// 99th-percentile latency, milliseconds.
    pub p99_ms: f64,
    /// Server CPU time (user + system) per answer, microseconds.
    pub cpu_us_per_request: f64,
    /// Server minor page faults per answer.
    pub minor_faults_per_request: f64,
}

/// One server in one scenario: its runs and what they add up to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerResult {
    /// Every measured run, in order.
    pub runs: Vec<Run>,
    /// The median of each figure over the runs (`non_2xx`, `errors` and
    /// `requests` are sums).
    pub summary: Run,
    /// Peak RSS over the scenario's measured runs (`VmHWM`, reset before), KiB.
    pub peak_rss_kib: u64,
    /// RSS before the scenario, KiB.
    pub idle_rss_kib: u64,
    /// RSS once the scenario's load ended and memory settled, KiB.
    pub after_rss_kib: u64,
}

impl ServerResult {
    /// Summarises `runs`.
    #[must_use]
    pub fn from_runs(runs: Vec<Run>) -> ServerResult {
        let median = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        let summary = Run {
            requests: runs.iter().map(|r| r.requests).sum(),
            non_2xx: runs.iter().map(|r| r.non_2xx).sum(),
            errors: runs.iter().map(|r| r.errors).sum(),
            statuses: runs.iter().fold(BTreeMap::new(), |mut all, run| {
                for (status, count) in &run.statuses {
                    *all.entry(status.clone()).or_default() += count;
                }
                all
            }),
            seconds: runs.iter().map(|r| r.seconds).sum(),
            requests_per_second: median(|r| r.requests_per_second),
            megabytes_per_second: median(|r| r.megabytes_per_second),
            p50_ms: median(|r| r.p50_ms),
            p99_ms: median(|r| r.p99_ms),
            cpu_us_per_request: median(|r| r.cpu_us_per_request),
            minor_faults_per_request: median(|r| r.minor_faults_per_request),
        };
        ServerResult {
            runs,
            summary,
            ..ServerResult::default()
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count).
#[must_use]
pub fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        f64::midpoint(values[mid - 1], values[mid])
    }
}

/// One scenario: what it sends and each server's result.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// Short name (`small_call`, …).
    pub name: String,
    /// What it sends, in words.
    pub description: String,
    /// Size of the request body, bytes.
    pub body_bytes: usize,
    /// Concurrent connections.
    pub connections: usize,
    /// Result per server name.
    pub servers: BTreeMap<String, ServerResult>,
}

impl ScenarioResult {
    fn cpu(&self, server: &str) -> Option<f64> {
        let cpu = self.servers.get(server)?.summary.cpu_us_per_request;
        (cpu > 0.0).then_some(cpu)
    }

    fn mbps(&self, server: &str) -> Option<f64> {
        let mbps = self.servers.get(server)?.summary.megabytes_per_second;
        (mbps > 0.0).then_some(mbps)
    }

    /// wymcp's CPU per request over the floor's.
    #[must_use]
    pub fn wymcp_over_floor(&self) -> Option<f64> {
        Some(self.cpu("wymcp")? / self.cpu("floor")?)
    }

    /// rmcp's CPU per request over wymcp's: how many times more requests
    /// per core wymcp serves.
    #[must_use]
    pub fn rmcp_over_wymcp(&self) -> Option<f64> {
        Some(self.cpu("rmcp")? / self.cpu("wymcp")?)
    }

    /// wymcp's MB/s over the floor's.
    #[must_use]
    pub fn wymcp_mbps_over_floor(&self) -> Option<f64> {
        Some(self.mbps("wymcp")? / self.mbps("floor")?)
    }
}

/// Where and how the run was made.
#[derive(Debug, Clone, Serialize)]
pub struct Conditions {
    /// UTC date and time the run started (`date -u`).
    pub date: String,
    /// `nproc`.
    pub cores: usize,
    /// CPU model, from `/proc/cpuinfo`.
    pub cpu: String,
    /// Load averages (1, 5, 15 min) before the run.
    pub load_before: Option<[f64; 3]>,
    /// Load averages after the run.
    pub load_after: Option<[f64; 3]>,
    /// Versions: rustc, oha, rmcp, wymcp's commit.
    pub versions: BTreeMap<String, String>,
    /// The allocator the servers run with.
    pub allocator: String,
    /// The `GLIBC_TUNABLES` every server ran with (`None`: glibc's defaults).
    pub malloc_tunables: Option<String>,
    /// wymcp's idle memory release threshold, bytes (`None`: off).
    pub release_memory_after: Option<u64>,
    /// `--quick`, seconds per run, runs per server, warm-up seconds.
    pub settings: BTreeMap<String, String>,
}

/// A target of the issue and whether the run met it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// The target, in words.
    pub target: String,
    /// What the run measured.
    pub measured: String,
    /// Met, missed, or not measured.
    pub verdict: String,
}

/// A whole benchmark run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where and how.
    pub conditions: Conditions,
    /// Every scenario, in the order run.
    pub scenarios: Vec<ScenarioResult>,
    /// The issue's targets this harness measures.
    pub targets: Vec<Target>,
}

fn fmt_opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

fn mib(kib: u64) -> String {
    if kib == 0 {
        "–".to_owned()
    } else {
        #[allow(clippy::cast_precision_loss)]
        let mib = kib as f64 / 1024.0;
        format!("{mib:.1}")
    }
}

/// The bound the issue sets on peak RSS under 64 concurrent 8 MB bodies:
/// 1.5 × 64 × 8 MB + 32 MB, in KiB.
#[must_use]
pub fn burst_peak_bound_kib() -> u64 {
    let bytes = 64 * CEILING_CALL_BYTES as u64 * 3 / 2 + 32_000_000;
    bytes / 1024
}

/// Judges the issue's targets that this harness measures.
#[must_use]
pub fn judge(scenarios: &[ScenarioResult]) -> Vec<Target> {
    let find = |name: &str| scenarios.iter().find(|s| s.name == name);
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "missed",
        None => "not measured",
    };
    let mut targets = Vec::new();
    let mut push = |target: &str, measured: String, ok: Option<bool>| {
        targets.push(Target {
            target: target.to_owned(),
            measured,
            verdict: verdict(ok).to_owned(),
        });
    };

    let small = find("small_call");
    let ratio = small.and_then(ScenarioResult::wymcp_over_floor);
    push(
        "small tools/call: wymcp CPU/request ≤ 1.25 × floor",
        format!("{}×", fmt_opt(ratio, 2)),
        ratio.map(|r| r <= 1.25),
    );
    let ratio = small.and_then(ScenarioResult::rmcp_over_wymcp);
    push(
        "small tools/call: ≥ 3 × rmcp's throughput per core",
        format!("{}×", fmt_opt(ratio, 2)),
        ratio.map(|r| r >= 3.0),
    );

    let served = small.and_then(|s| s.cpu("wymcp"));
    for name in ["bad_origin", "malformed"] {
        let rejected = find(name).and_then(|s| s.cpu("wymcp"));
        push(
            &format!("a rejection ({name}) costs less than a served request"),
            format!("{} µs vs {} µs", fmt_opt(rejected, 1), fmt_opt(served, 1)),
            rejected.zip(served).map(|(r, s)| r < s),
        );
    }

    // The malformed body's answer closes its connection (DESIGN §4), so each
    // one costs a new connection: against a served request that also costs
    // one, the comparison is like for like.
    let fresh = find("fresh_call").and_then(|s| s.cpu("wymcp"));
    let rejected = find("malformed").and_then(|s| s.cpu("wymcp"));
    push(
        "a rejection (malformed, a new connection each) costs less than a served request on a new connection",
        format!("{} µs vs {} µs", fmt_opt(rejected, 1), fmt_opt(fresh, 1)),
        rejected.zip(fresh).map(|(r, s)| r < s),
    );

    let ratio = find("large_call").and_then(ScenarioResult::wymcp_mbps_over_floor);
    push(
        "1 MB bodies: wymcp ≥ 0.9 × floor MB/s",
        format!("{}×", fmt_opt(ratio, 2)),
        ratio.map(|r| r >= 0.9),
    );

    let burst = find("burst_8mb").and_then(|s| s.servers.get("wymcp"));
    let bound = burst_peak_bound_kib();
    push(
        "64 × 8 MB: wymcp peak RSS ≤ 1.5 × 64 × 8 MB + 32 MB",
        burst.map_or_else(
            || "–".to_owned(),
            |b| format!("{} MiB (bound {} MiB)", mib(b.peak_rss_kib), mib(bound)),
        ),
        burst.map(|b| b.peak_rss_kib > 0 && b.peak_rss_kib <= bound),
    );
    push(
        "64 × 8 MB: wymcp memory returns within 10% of idle",
        burst.map_or_else(
            || "–".to_owned(),
            |b| {
                format!(
                    "{} MiB after, {} MiB idle",
                    mib(b.after_rss_kib),
                    mib(b.idle_rss_kib)
                )
            },
        ),
        burst.map(|b| b.idle_rss_kib > 0 && b.after_rss_kib * 10 <= b.idle_rss_kib * 11),
    );
    targets
}

impl Report {
    /// The report as Markdown: conditions, the table, ratios, targets.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let c = &self.conditions;
        let load = |l: Option<[f64; 3]>| {
            l.map_or_else(
                || "?".to_owned(),
                |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"),
            )
        };
        let _ = writeln!(out, "* date: {}", c.date);
        let _ = writeln!(out, "* machine: {} cores, {}", c.cores, c.cpu);
        let _ = writeln!(
            out,
            "* load average (1/5/15 min): before {}, after {}",
            load(c.load_before),
            load(c.load_after)
        );
        let versions: Vec<String> = c
            .versions
            .iter()
            .map(|(k, v)| {
                if v.starts_with(k.as_str()) {
                    v.clone()
                } else {
                    format!("{k} {v}")
                }
            })
            .collect();
        let _ = writeln!(out, "* versions: {}", versions.join(", "));
        let _ = writeln!(out, "* allocator: {}", c.allocator);
        let settings: Vec<String> = c.settings.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "* settings: {}", settings.join(", "));
        out.push('\n');

        out.push_str(
            "| scenario | server | req/s | MB/s | p50 ms | p99 ms | non-2xx | CPU µs/req | faults/req | peak RSS MiB |\n",
        );
        out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for scenario in &self.scenarios {
            for (server, result) in &scenario.servers {
                let s = &result.summary;
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.0} | {:.1} | {:.3} | {:.3} | {} | {:.1} | {:.2} | {} |",
                    scenario.name,
                    server,
                    s.requests_per_second,
                    s.megabytes_per_second,
                    s.p50_ms,
                    s.p99_ms,
                    s.non_2xx,
                    s.cpu_us_per_request,
                    s.minor_faults_per_request,
                    mib(result.peak_rss_kib),
                );
            }
        }
        out.push('\n');

        out.push_str("| scenario | body | CPU wymcp/floor | CPU rmcp/wymcp | MB/s wymcp/floor | statuses (floor; wymcp; rmcp) |\n");
        out.push_str("|---|---:|---:|---:|---:|---|\n");
        for scenario in &self.scenarios {
            let statuses: Vec<String> = ["floor", "wymcp", "rmcp"]
                .iter()
                .map(|name| {
                    scenario.servers.get(*name).map_or_else(
                        || "–".to_owned(),
                        |r| {
                            let mut parts: Vec<String> = r
                                .summary
                                .statuses
                                .iter()
                                .map(|(code, n)| format!("{code}×{n}"))
                                .collect();
                            if r.summary.errors > 0 {
                                parts.push(format!("errors×{}", r.summary.errors));
                            }
                            parts.join(" ")
                        },
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} B | {} | {} | {} | {} |",
                scenario.name,
                scenario.body_bytes,
                fmt_opt(scenario.wymcp_over_floor(), 2),
                fmt_opt(scenario.rmcp_over_wymcp(), 2),
                fmt_opt(scenario.wymcp_mbps_over_floor(), 2),
                statuses.join("; "),
            );
        }
        out.push('\n');

        if let Some(burst) = self.scenarios.iter().find(|s| s.name == "burst_8mb") {
            out.push_str("| 64 × 8 MB | idle RSS MiB | peak RSS MiB | RSS after MiB |\n");
            out.push_str("|---|---:|---:|---:|\n");
            for (server, r) in &burst.servers {
                let _ = writeln!(
                    out,
                    "| {server} | {} | {} | {} |",
                    mib(r.idle_rss_kib),
                    mib(r.peak_rss_kib),
                    mib(r.after_rss_kib)
                );
            }
            out.push('\n');
        }

        out.push_str("| target | measured | verdict |\n|---|---|---|\n");
        for t in &self.targets {
            let _ = writeln!(out, "| {} | {} | {} |", t.target, t.measured, t.verdict);
        }
        out
    }
}

/// Writes what a subcommand printed where its `--markdown` and `--json`
/// flags ask (either may be absent): the table as printed, the report as
/// pretty JSON.
pub fn write_outputs(
    markdown: Option<(&Path, &str)>,
    json: Option<(&Path, &impl Serialize)>,
) -> Result<(), String> {
    if let Some((path, text)) = markdown {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some((path, value)) = json {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert!((median(vec![3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(vec![4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!(median(Vec::new()).abs() < f64::EPSILON);
    }

    #[test]
    fn the_burst_bound_is_the_issues() {
        // 1.5 × 64 × 8,000,000 + 32,000,000 bytes = 800,000,000 bytes.
        assert_eq!(burst_peak_bound_kib(), 800_000_000 / 1024);
    }
}
