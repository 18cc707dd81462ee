//! Logs and metrics a team can run on (issue 24 §2): the one request line
//! as `wymcp::telemetry` writes it (short, naming the caller, the method,
//! the target, the status and the duration; bounded), and the metrics
//! `examples/everything --metrics` serves as Prometheus text, scraped after
//! a few calls.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::telemetry::{self, Format};
use wymcp::testing::Client;
use wymcp::{NoArgs, Server, Tool, ToolResult};
use wymcp_tests::child::Everything;
use wymcp_tests::wire::{RawConn, RawRequest};

/// A `MakeWriter` collecting what the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    /// The lines written under the target `wymcp::request`.
    fn request_lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .filter(|line| line.contains("wymcp::request"))
            .map(str::to_owned)
            .collect()
    }
}

/// A server with one tool, `hello`, and a token whose principal is `alice`.
fn server() -> Arc<Server> {
    let tokens = StaticTokens::new().token("alice-token", Principal::new("alice", ["x"]));
    Arc::new(
        Server::builder()
            .auth(tokens, AuthConfig::new())
            .tool(
                Tool::new("hello")
                    .description("Says hello")
                    .handler(|_: NoArgs, _| async { Ok(ToolResult::text("hello")) }),
            )
            .build()
            .unwrap(),
    )
}

/// Rule (issue 24 §2): with `wymcp::telemetry`'s text format, each request
/// is one short line — `request answered caller=<subject> method=<method>
/// target=<tool> status=<status> duration_ms=<ms>` — without the request
/// span's field list; and a 100 kB tool name makes no 100 kB line.
#[tokio::test(flavor = "current_thread")]
async fn the_request_line_is_short_names_the_caller_and_is_bounded() {
    let captured = Captured::default();
    let subscriber = telemetry::subscriber(
        Format::Text,
        tracing_subscriber::EnvFilter::new("info"),
        captured.clone(),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    let client = Client::new(server()).bearer("alice-token");
    client.call_tool("hello", json!({})).await.unwrap();
    let long = "n".repeat(100_000);
    let _ = client.call_tool(&long, json!({})).await;

    let lines = captured.request_lines();
    assert_eq!(lines.len(), 2, "one line a request: {lines:#?}");
    let (_, line) = lines[0]
        .split_once("  INFO ")
        .unwrap_or_else(|| panic!("`<time>  INFO …`: {}", lines[0]));
    let (head, duration) = line
        .split_once(" duration_ms=")
        .unwrap_or_else(|| panic!("a duration: {line}"));
    assert_eq!(
        head,
        "wymcp::request: request answered caller=alice method=tools/call \
         target=hello status=200",
        "{line}"
    );
    assert!(duration.parse::<f64>().is_ok(), "{line}");
    for line in &lines {
        assert!(
            !line.contains("mcp.request") && !line.contains("otel."),
            "no span field list: {line}"
        );
    }
    assert!(
        lines[1].len() < 1_000,
        "a 100 kB tool name is cut: {} bytes",
        lines[1].len()
    );
    assert!(lines[1].contains(" target=nnnn"), "{}", lines[1]);
}

/// Rule (issue 24 §2): the JSON format's request line carries the same
/// fields and no span list.
#[tokio::test(flavor = "current_thread")]
async fn the_json_request_line_carries_the_same_fields() {
    let captured = Captured::default();
    let subscriber = telemetry::subscriber(
        Format::Json,
        tracing_subscriber::EnvFilter::new("info"),
        captured.clone(),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    let client = Client::new(server()).bearer("alice-token");
    client.call_tool("hello", json!({})).await.unwrap();

    let lines = captured.request_lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line: Value = serde_json::from_str(&lines[0]).unwrap();
    let mut keys: Vec<&str> = line
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["fields", "level", "target", "timestamp"], "{line}");
    let fields = &line["fields"];
    assert_eq!(fields["message"], "request answered");
    assert_eq!(fields["caller"], "alice");
    assert_eq!(fields["method"], "tools/call");
    assert_eq!(fields["target"], "hello");
    assert_eq!(fields["status"], 200);
    assert!(fields["duration_ms"].is_f64(), "{line}");
}

/// The value of the sample `name{labels}` in a Prometheus text: the line
/// whose name is `name` and whose labels are exactly `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
        if metric != name {
            return None;
        }
        let inner = rest.strip_suffix('}')?;
        let mut found: Vec<(&str, &str)> = if inner.is_empty() {
            Vec::new()
        } else {
            inner
                .split(',')
                .map(|pair| {
                    let (key, value) = pair.split_once('=').unwrap();
                    (key, value.trim_matches('"'))
                })
                .collect()
        };
        let mut wanted = labels.to_vec();
        found.sort_unstable();
        wanted.sort_unstable();
        (found == wanted).then(|| value.parse().unwrap())
    })
}

/// Rule (issue 24 §2): `everything --metrics 127.0.0.1:0` serves `/metrics`
/// on a listener of its own; after two calls of a tool, one call of an
/// unknown tool and one request refused for its Origin, the scrape counts
/// them: the operation duration's `_count` per tool (the unknown name as
/// `_OTHER`, never its own series), the rejection per stage, and a ledger
/// gauge per kind.
#[tokio::test]
async fn everything_serves_metrics_that_count_the_calls_made() {
    let server = Everything::start(&["--metrics", "127.0.0.1:0"], &[]);
    let host = server.addr().to_string();
    let post = |body: Value| {
        RawRequest::post("/mcp")
            .host(&host)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .json(serde_json::to_vec(&body).unwrap())
    };
    let mut conn = RawConn::connect(server.addr()).await;
    for id in 1..=2 {
        let called = conn
            .request(&post(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "test_simple_text", "arguments": {}}}),
            ))
            .await;
        assert_eq!(called.status, 200);
        assert!(called.json()["result"].is_object(), "{:?}", called.json());
    }
    let unknown = conn
        .request(&post(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "no_such_tool", "arguments": {}}}),
        ))
        .await;
    assert!(unknown.json()["error"].is_object(), "{:?}", unknown.json());
    let mut other = RawConn::connect(server.addr()).await;
    let refused = other
        .request(
            &post(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
                .header("Origin", "https://evil.example"),
        )
        .await;
    assert_eq!(refused.status, 403);

    let mut scrape = RawConn::connect(server.metrics_addr()).await;
    let metrics = scrape
        .request(&RawRequest::new("GET", "/metrics").host(server.metrics_addr().to_string()))
        .await;
    assert_eq!(metrics.status, 200);
    assert_eq!(
        metrics.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = String::from_utf8(metrics.body).unwrap();
    let count = "mcp_server_operation_duration_seconds_count";
    assert_eq!(
        sample(
            &text,
            count,
            &[
                ("mcp_method_name", "tools/call"),
                ("gen_ai_tool_name", "test_simple_text")
            ]
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            count,
            &[
                ("mcp_method_name", "tools/call"),
                ("gen_ai_tool_name", "_OTHER"),
                ("error_type", "-32602")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("no_such_tool"), "{text}");
    assert_eq!(
        sample(
            &text,
            "wymcp_rejections_total",
            &[
                ("wymcp_stage", "OriginCheck"),
                ("http_response_status_code", "403")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    // Every JSON-RPC error goes through the one rejection sender: the
    // unknown tool is Dispatch's, answered 200.
    assert_eq!(
        sample(
            &text,
            "wymcp_rejections_total",
            &[
                ("wymcp_stage", "Dispatch"),
                ("http_response_status_code", "200")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    for kind in wymcp::ledger::Kind::ALL {
        assert!(
            sample(
                &text,
                "wymcp_ledger_held",
                &[("wymcp_ledger_kind", kind.name())]
            )
            .is_some(),
            "a gauge for {}: {text}",
            kind.name()
        );
    }
    assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram"));
    assert!(text.contains("# TYPE wymcp_listen_streams gauge"));
    assert!(text.contains("# TYPE wymcp_tasks gauge"));
    assert_eq!(server.panics(), 0);
}

/// Sends `req` (a [`Req`](crate::support::Req), its standard headers) on
/// `conn` as raw HTTP to `host`, and answers its JSON.
async fn raw(conn: &mut RawConn, host: &str, req: &crate::support::Req) -> Value {
    let mut request = RawRequest::post("/mcp").host(host);
    for (name, value) in req.headers() {
        if !name.eq_ignore_ascii_case("host") {
            request = request.header(name, value);
        }
    }
    let body = serde_json::to_vec(req.message()).unwrap();
    let answer = conn.request(&request.body(body)).await;
    assert_eq!(
        answer.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

/// Rule (issue 24 §2, "task counts by state"): `wymcp.tasks.statuses`
/// counts the tasks that reached each status, where the change was
/// written: a task created (`working`) and finished (`completed`) is one of
/// each, and no other status is counted.
#[tokio::test]
async fn everything_counts_the_statuses_its_tasks_reach() {
    use crate::tasks::{call, task_method};
    let server = Everything::start(&["--metrics", "127.0.0.1:0"], &[]);
    let host = server.addr().to_string();
    let mut conn = RawConn::connect(server.addr()).await;
    let created = raw(
        &mut conn,
        &host,
        &call(1, "slow_compute", json!({"seconds": 0, "label": "metrics"})),
    )
    .await;
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let mut status = String::new();
    for attempt in 0..200 {
        let got = raw(
            &mut conn,
            &host,
            &task_method(100 + attempt, "tasks/get", &task),
        )
        .await;
        status = got["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if status == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(status, "completed");

    let mut scrape = RawConn::connect(server.metrics_addr()).await;
    let metrics = scrape
        .request(&RawRequest::new("GET", "/metrics").host(server.metrics_addr().to_string()))
        .await;
    let text = String::from_utf8(metrics.body).unwrap();
    let statuses = "wymcp_tasks_statuses_total";
    for (status, want) in [
        ("working", Some(1.0)),
        ("completed", Some(1.0)),
        ("failed", None),
    ] {
        assert_eq!(
            sample(&text, statuses, &[("wymcp_task_status", status)]),
            want,
            "{status}: {text}"
        );
    }
}
