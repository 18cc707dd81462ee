//! `wymcp-bench load`: the harness's own load generator, for smoke runs.
//!
//! `scripts/bench --quick` and `--hotpath --quick` check that the harness
//! runs; their numbers mean nothing. Building `oha` for them cost a fresh
//! clone's CI 5 minutes of its 45, so they drive the servers with this
//! instead. Measurements keep `oha` (BENCHMARKS.md's method is unchanged).
//!
//! It does what the harness asks of `oha` and nothing more: one POST, the
//! same body and headers each time, over `--connections` HTTP/1.1
//! connections on one thread, either for `--millis` (no request starts after
//! it; those under way finish, as `oha -w`), optionally on a new connection
//! each (`--fresh`, as `oha --disable-keepalive`), or for `--requests` in all
//! (as `oha -n`). It prints the part of `oha`'s JSON summary the harness
//! reads (`summary.total`, `statusCodeDistribution`, `errorDistribution`,
//! `latencyPercentiles.p50`/`p99`, in seconds), so the runner reads both
//! the same way.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Uri};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use serde_json::{Value, json};

use crate::io::load::ready_sender;

/// The most of one answer read (the harness's largest echo is 8 MB).
const MAX_ANSWER: usize = 64 << 20;
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The most characters of an error kept as its key.
const ERROR_KEY: usize = 200;

const USAGE: &str = "usage:
  wymcp-bench load URL --connections C --body FILE (--millis MS [--fresh] | --requests N)
                   [--header 'Name: value']…";

/// When the load stops.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// No request starts after this long; `fresh`: a new connection each.
    After { length: Duration, fresh: bool },
    /// After this many requests in all.
    Count(usize),
}

/// What to send, where, and for how long.
#[derive(Debug)]
struct Plan {
    addr: SocketAddr,
    uri: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
    connections: usize,
    stop: Stop,
}

impl Plan {
    fn parse(args: &[String]) -> Result<Plan, String> {
        let mut url = None;
        let mut connections = None;
        let mut body = None;
        let mut millis = None;
        let mut requests = None;
        let mut fresh = false;
        let mut headers = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut next = || {
                args.next()
                    .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
            };
            match arg.as_str() {
                "--connections" => connections = Some(number(arg, next()?)?),
                "--body" => body = Some(next()?.clone()),
                "--millis" => millis = Some(number(arg, next()?)?),
                "--requests" => requests = Some(number(arg, next()?)?),
                "--fresh" => fresh = true,
                "--header" => headers.push(header(next()?)?),
                other if !other.starts_with('-') && url.is_none() => url = Some(other.to_owned()),
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            }
        }
        let url = url.ok_or_else(|| format!("no URL\n{USAGE}"))?;
        let uri: Uri = url.parse().map_err(|e| format!("the URL `{url}`: {e}"))?;
        let addr = uri
            .authority()
            .ok_or_else(|| format!("the URL `{url}` has no host"))?
            .as_str()
            .parse()
            .map_err(|e| format!("the URL `{url}`: its host must be ADDRESS:PORT ({e})"))?;
        let connections: usize = connections.ok_or_else(|| format!("no --connections\n{USAGE}"))?;
        if connections == 0 {
            return Err("--connections must be at least 1".to_owned());
        }
        let body = body.ok_or_else(|| format!("no --body\n{USAGE}"))?;
        let body = std::fs::read(&body).map_err(|e| format!("reading {body}: {e}"))?;
        let stop = match (millis, requests) {
            (Some(ms), None) => Stop::After {
                length: Duration::from_millis(ms),
                fresh,
            },
            (None, Some(n)) if !fresh => Stop::Count(n),
            _ => return Err(format!("one of --millis or --requests\n{USAGE}")),
        };
        Ok(Plan {
            addr,
            uri,
            headers,
            body: Bytes::from(body),
            connections,
            stop,
        })
    }
}

fn number<T: std::str::FromStr>(flag: &str, raw: &str) -> Result<T, String> {
    raw.parse()
        .map_err(|_| format!("{flag}: cannot use `{raw}`\n{USAGE}"))
}

fn header(raw: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| format!("--header `{raw}`: not `Name: value`"))?;
    let name = HeaderName::try_from(name.trim()).map_err(|e| format!("--header `{raw}`: {e}"))?;
    let value =
        HeaderValue::try_from(value.trim()).map_err(|e| format!("--header `{raw}`: {e}"))?;
    Ok((name, value))
}

/// What one connection's requests came to.
#[derive(Debug, Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    errors: BTreeMap<String, u64>,
    /// The latency of each answered request.
    latencies: Vec<Duration>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        for (error, n) in other.errors {
            *self.errors.entry(error).or_default() += n;
        }
        self.latencies.extend(other.latencies);
    }

    fn error(&mut self, error: &str) {
        let key: String = error.chars().take(ERROR_KEY).collect();
        *self.errors.entry(key).or_default() += 1;
    }

    /// `oha`'s summary shape, `total` the whole run's length.
    fn summary(mut self, total: Duration) -> Value {
        self.latencies.sort_unstable();
        let at = |fraction: f64| -> Value {
            if self.latencies.is_empty() {
                return Value::Null;
            }
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let index = ((self.latencies.len() - 1) as f64 * fraction).round() as usize;
            json!(self.latencies[index].as_secs_f64())
        };
        let statuses: BTreeMap<String, u64> = self
            .statuses
            .iter()
            .map(|(status, n)| (status.to_string(), *n))
            .collect();
        json!({
            "summary": {"total": total.as_secs_f64()},
            "statusCodeDistribution": statuses,
            "errorDistribution": self.errors,
            "latencyPercentiles": {"p50": at(0.50), "p99": at(0.99)},
        })
    }
}

/// One connection's turn: requests until the plan's stop, each timed.
async fn connection(plan: Arc<Plan>, left: Arc<AtomicUsize>, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut sender: Option<SendRequest<Full<Bytes>>> = None;
    loop {
        let go = match plan.stop {
            Stop::After { .. } => Instant::now() < deadline,
            Stop::Count(_) => left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        };
        if !go {
            return tally;
        }
        let sent = Instant::now();
        let exchange = tokio::time::timeout(REQUEST_TIMEOUT, send(&plan, &mut sender)).await;
        match exchange.unwrap_or_else(|_| Err("timed out".to_owned())) {
            Ok(status) => {
                tally.latencies.push(sent.elapsed());
                *tally.statuses.entry(status).or_default() += 1;
            }
            Err(e) => {
                tally.error(&e);
                sender = None;
            }
        }
        if matches!(plan.stop, Stop::After { fresh: true, .. }) {
            sender = None;
        }
    }
}

/// Sends the plan's request once on `sender` (connecting first when there
/// is none or it closed) and reads the answer whole: its status.
async fn send(plan: &Plan, sender: &mut Option<SendRequest<Full<Bytes>>>) -> Result<u16, String> {
    let ready = ready_sender(sender, plan.addr).await?;
    let mut request = http::Request::builder()
        .method(Method::POST)
        .uri(plan.uri.path())
        .header(
            http::header::HOST,
            plan.uri.authority().map_or("", |a| a.as_str()),
        );
    for (name, value) in &plan.headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(plan.body.clone()))
        .map_err(|e| e.to_string())?;
    let response = ready
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?;
    Ok(status)
}

/// Runs the plan: its summary.
async fn run(plan: Arc<Plan>) -> Value {
    let start = Instant::now();
    let (left, deadline) = match plan.stop {
        Stop::After { length, .. } => (0, start + length),
        Stop::Count(n) => (n, start),
    };
    let left = Arc::new(AtomicUsize::new(left));
    let connections: Vec<_> = (0..plan.connections)
        .map(|_| tokio::spawn(connection(plan.clone(), left.clone(), deadline)))
        .collect();
    let mut tally = Tally::default();
    for connection in connections {
        match connection.await {
            Ok(t) => tally.merge(t),
            Err(e) => tally.error(&format!("a connection's task failed: {e}")),
        }
    }
    tally.summary(start.elapsed())
}

/// `wymcp-bench load …`: runs the plan on one thread, prints the summary on
/// stdout.
pub fn main(args: &[String]) -> Result<(), String> {
    let plan = Arc::new(Plan::parse(args)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let summary = runtime.block_on(run(plan));
    println!("{summary}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use hyper_util::rt::TokioIo;

    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_summary_has_the_shape_the_runner_reads() {
        let mut tally = Tally::default();
        for ms in 1..=100 {
            tally.latencies.push(Duration::from_millis(ms));
        }
        tally.statuses.insert(200, 99);
        tally.statuses.insert(403, 1);
        tally.error("connecting: refused");
        let summary = tally.summary(Duration::from_secs(2));
        assert_eq!(summary["summary"]["total"], 2.0);
        assert_eq!(summary["statusCodeDistribution"]["200"], 99);
        assert_eq!(summary["statusCodeDistribution"]["403"], 1);
        assert_eq!(summary["errorDistribution"]["connecting: refused"], 1);
        // The 50th of 100 sorted latencies (index 49.5 rounds to 50: 51 ms).
        assert_eq!(summary["latencyPercentiles"]["p50"], 0.051);
        assert_eq!(summary["latencyPercentiles"]["p99"], 0.099);
        let empty = Tally::default().summary(Duration::from_secs(1));
        assert!(empty["latencyPercentiles"]["p99"].is_null());
    }

    /// A server answering every POST 200 and counting the connections it
    /// accepted: the plan sent against it.
    async fn against_a_server(stop: Stop, connections: usize) -> (Value, usize) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let app = axum::Router::new().route("/mcp", axum::routing::post(|| async { "{}" }));
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                counted.fetch_add(1, Ordering::Relaxed);
                let app = app.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |r| {
                        tower::ServiceExt::oneshot(app.clone(), r)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let plan = Plan {
            addr,
            uri: format!("http://{addr}/mcp").parse().expect("uri"),
            headers: vec![header("Content-Type: application/json").expect("header")],
            body: Bytes::from_static(b"{}"),
            connections,
            stop,
        };
        let summary = run(Arc::new(plan)).await;
        server.abort();
        (summary, accepted.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn it_sends_what_the_plan_says() {
        let (summary, accepted) = against_a_server(Stop::Count(25), 3).await;
        assert_eq!(summary["statusCodeDistribution"]["200"], 25, "{summary}");
        assert_eq!(summary["errorDistribution"], json!({}), "{summary}");
        assert_eq!(accepted, 3, "one keep-alive connection each");
        let length = Duration::from_millis(200);
        let (summary, accepted) = against_a_server(
            Stop::After {
                length,
                fresh: true,
            },
            2,
        )
        .await;
        let answered = summary["statusCodeDistribution"]["200"]
            .as_u64()
            .expect("some answered");
        assert!(answered > 0, "{summary}");
        assert_eq!(
            usize::try_from(answered).expect("small"),
            accepted,
            "a new connection for each request"
        );
        assert!(summary["summary"]["total"].as_f64().expect("total") >= 0.2);
    }

    #[test]
    fn a_plan_takes_one_stop_and_a_url_with_an_address() {
        let dir = std::env::temp_dir().join(format!("wymcp-load-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let body = dir.join("body.json");
        std::fs::write(&body, b"{}").expect("body");
        let body = body.to_string_lossy().into_owned();
        let base = [
            "http://127.0.0.1:9/mcp",
            "--connections",
            "2",
            "--body",
            &body,
        ];
        let with = |more: &[&str]| {
            let mut all = args(&base);
            all.extend(args(more));
            Plan::parse(&all)
        };
        let plan = with(&["--millis", "500", "--fresh", "--header", "A: b"]).expect("plan");
        assert!(matches!(plan.stop, Stop::After { fresh: true, .. }));
        assert_eq!(plan.headers.len(), 1);
        assert!(matches!(
            with(&["--requests", "7"]).expect("plan").stop,
            Stop::Count(7)
        ));
        assert!(with(&[]).is_err(), "no stop");
        assert!(
            with(&["--millis", "1", "--requests", "1"]).is_err(),
            "two stops"
        );
        assert!(
            with(&["--requests", "1", "--fresh"]).is_err(),
            "fresh needs --millis"
        );
        assert!(with(&["--millis", "1", "--header", "no colon"]).is_err());
        let mut named = args(&["http://localhost:9/mcp", "--connections", "1", "--body"]);
        named.extend(args(&[&body, "--millis", "1"]));
        assert!(Plan::parse(&named).is_err(), "the host must be an address");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
