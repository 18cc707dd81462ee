//! The stdio transport (`wymcp::stdio`), driven in-process over a duplex
//! stream as a client would drive it over a pipe, and once as the real
//! `examples/everything --stdio` child process.
//!
//! Each test names the rule it pins: a malformed line is answered and the
//! server goes on; an over-long line is refused as soon as it passes the
//! ceiling and the next line is served; a slow call never delays a fast one;
//! end of input lets a call in flight answer, within the drain timeout;
//! cancellation, the in-flight ceiling, the protocol fields, the 2025
//! lifecycle, listen streams and a 2025 client's session stream (the
//! connection is the stream) behave as the module docs say.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use wymcp::stdio::StdioConfig;
use wymcp::{NoArgs, Revision, Server, Tool, ToolResult};
use wymcp_tests::code;

/// How long a test waits for a line before it calls the line missing.
const WAIT: Duration = Duration::from_secs(5);

/// The `_meta` every 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 `tools/call` of `name`.
fn call(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"_meta": meta(), "name": name, "arguments": {}}})
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// A client of one stdio connection served in-process.
struct Client {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    input: WriteHalf<DuplexStream>,
    serving: JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn new(server: Server, config: StdioConfig) -> Self {
        let (client, transport) = tokio::io::duplex(256 * 1024);
        let (reader, writer) = tokio::io::split(transport);
        let serving = tokio::spawn(wymcp::stdio::serve_io(server, reader, writer, config));
        let (output, input) = tokio::io::split(client);
        Client {
            lines: BufReader::new(output).lines(),
            input,
            serving,
        }
    }

    async fn raw(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).await.expect("the server reads");
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        self.raw(&line).await;
    }

    /// The next line the server writes, as JSON.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("a line in time")
            .expect("readable")
            .expect("a line, not the end of the output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"))
    }

    /// Whether the server writes nothing for `wait`.
    async fn silent_for(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.lines.next_line())
            .await
            .is_err()
    }

    /// Closes the input, then reads what the server still writes until it
    /// ends its output; returns those lines and how `serve_io` ended.
    async fn close(mut self) -> (Vec<Value>, std::io::Result<()>) {
        self.input.shutdown().await.expect("close the input");
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the output ends in time")
            .expect("readable")
        {
            rest.push(serde_json::from_str(&line).expect("JSON"));
        }
        let ended = tokio::time::timeout(WAIT, self.serving)
            .await
            .expect("serve_io returns in time")
            .expect("serve_io does not panic");
        (rest, ended)
    }
}

/// A server whose `slow` tool answers once `release` is notified, and whose
/// `fast` tool answers at once.
fn slow_and_fast(release: Arc<Notify>) -> Server {
    Server::builder()
        .tool(Tool::new("slow").handler(move |_: NoArgs, _| {
            let release = release.clone();
            async move {
                release.notified().await;
                Ok(ToolResult::text("slow done"))
            }
        }))
        .tool(Tool::new("fast").handler(|_: NoArgs, _| async { Ok(ToolResult::text("fast done")) }))
        .build()
        .expect("the server builds")
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result in {answer}"))
}

/// Rule: a line that is not JSON is answered -32700 with a null id, and the
/// server goes on with the next line.
#[tokio::test]
async fn a_malformed_line_is_a_parse_error_with_a_null_id_and_the_server_goes_on() {
    let mut client = Client::new(Server::builder().build().unwrap(), StdioConfig::default());
    client.raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \n").await;
    client.raw(b"\xff\xfe not even UTF-8\n").await;
    client.send(&ping(2)).await;
    for _ in 0..2 {
        let refused = client.next().await;
        assert_eq!(refused["id"], Value::Null, "{refused}");
        assert_eq!(refused["error"]["code"], code::PARSE_ERROR, "{refused}");
    }
    let answer = client.next().await;
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    let (rest, ended) = client.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.expect("a clean end");
}

/// Rule: a line over the line ceiling is refused (-32600, null id,
/// `data.ceiling`) as soon as it passes the ceiling, before its end has
/// been sent, so it is never held whole; its rest is skipped and the next
/// line is served.
#[tokio::test]
async fn an_over_long_line_is_refused_before_it_ends_and_the_next_line_is_served() {
    let config = StdioConfig::default().max_line_bytes(1024);
    let mut client = Client::new(Server::builder().build().unwrap(), config);
    client
        .raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"")
        .await;
    client.raw(&[b'x'; 4096]).await;
    // The line has not ended, and the refusal is already there.
    let refused = client.next().await;
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], code::INVALID_REQUEST, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"ceiling": 1024, "limit": "max_line_bytes"}),
        "{refused}"
    );
    // Megabytes more of the same line cost nothing and answer nothing.
    for _ in 0..256 {
        client.raw(&[b'x'; 8192]).await;
    }
    client.raw(b"\"}}\n").await;
    client.send(&ping(2)).await;
    assert_eq!(
        client.next().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    // A line of exactly the ceiling is served.
    let mut at_ceiling = br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"p":""#.to_vec();
    let close = br#""}}"#;
    at_ceiling.resize(1024 - close.len(), b'p');
    at_ceiling.extend_from_slice(close);
    assert_eq!(at_ceiling.len(), 1024);
    at_ceiling.extend_from_slice(b"\r\n");
    client.raw(&at_ceiling).await;
    assert_eq!(client.next().await["id"], 3);
    let (rest, ended) = client.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.expect("a clean end");
}

/// Rule: requests interleave: a fast call sent after a slow one is
/// answered while the slow one still runs, and the slow one is answered
/// when it finishes.
#[tokio::test]
async fn a_slow_call_never_delays_a_fast_one() {
    let release = Arc::new(Notify::new());
    let mut client = Client::new(slow_and_fast(release.clone()), StdioConfig::default());
    client.send(&call(1, "slow")).await;
    client.send(&call(2, "fast")).await;
    client.send(&ping(3)).await;
    let first = client.next().await;
    let second = client.next().await;
    let mut ids = [first["id"].clone(), second["id"].clone()];
    ids.sort_by_key(ToString::to_string);
    assert_eq!(ids, [json!(2), json!(3)], "{first} {second}");
    let fast = if first["id"] == 2 { &first } else { &second };
    assert_eq!(text(fast), "fast done");
    assert!(client.silent_for(Duration::from_millis(100)).await);
    release.notify_one();
    let slow = client.next().await;
    assert_eq!(slow["id"], 1);
    assert_eq!(text(&slow), "slow done");
    client.close().await.1.expect("a clean end");
}

/// Rule: at the end of input, a call in flight is answered before the
/// server ends its output, and `serve_io` then returns `Ok`.
#[tokio::test]
async fn end_of_input_lets_the_call_in_flight_answer_before_the_server_ends() {
    let release = Arc::new(Notify::new());
    let mut client = Client::new(slow_and_fast(release.clone()), StdioConfig::default());
    client.send(&call(7, "slow")).await;
    // The call has started before the input ends.
    client.send(&call(8, "fast")).await;
    assert_eq!(client.next().await["id"], 8);
    let closing = tokio::spawn(client.close());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !closing.is_finished(),
        "the server waits for the call in flight"
    );
    release.notify_one();
    let (rest, ended) = closing.await.unwrap();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], 7);
    assert_eq!(text(&rest[0]), "slow done");
    ended.expect("a clean end");
}

/// Rule: the drain after the end of input is bounded by the drain
/// timeout: a call that never finishes is dropped unanswered and the
/// server still ends, cleanly.
#[tokio::test]
async fn the_drain_is_bounded_by_the_drain_timeout() {
    let never = Arc::new(Notify::new());
    let config = StdioConfig::default().drain_timeout(Duration::from_millis(200));
    let mut client = Client::new(slow_and_fast(never), config);
    client.send(&call(1, "slow")).await;
    client.send(&ping(2)).await;
    assert_eq!(client.next().await["id"], 2);
    let started = Instant::now();
    let (rest, ended) = client.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.expect("a clean end");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

/// Rule: `notifications/cancelled` naming a request in flight drops its
/// handler, and nothing is written for it; an unknown id is ignored.
#[tokio::test]
async fn a_cancelled_request_drops_its_handler_and_is_never_answered() {
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let server = Server::builder()
        .tool(Tool::new("forever").handler(move |_: NoArgs, _| {
            let guard = Guard(flag.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok(ToolResult::text("never"))
            }
        }))
        .build()
        .unwrap();
    let mut client = Client::new(server, StdioConfig::default());
    client.send(&call(5, "forever")).await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 99, "reason": "unknown"}}),
        )
        .await;
    client.send(&ping(1)).await;
    assert_eq!(client.next().await["id"], 1);
    assert!(
        !dropped.load(Ordering::SeqCst),
        "an unknown id cancels nothing"
    );
    client
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 5, "reason": "the user gave up"}}),
        )
        .await;
    client.send(&ping(2)).await;
    assert_eq!(client.next().await["id"], 2);
    let deadline = Instant::now() + WAIT;
    while !dropped.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the handler was dropped");
    // Its id is free again, and the end of input has nothing to wait for.
    let (rest, ended) = client.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.expect("a clean end");
}

/// Rule: a handler that panics is answered -32603 with its id, and the
/// server goes on.
#[tokio::test]
async fn a_panicking_handler_is_answered_internal_error_and_the_server_goes_on() {
    let server = Server::builder()
        .tool(Tool::new("boom").handler(|_: NoArgs, _| async {
            tokio::task::yield_now().await;
            // Fails always (opaque to the compiler): the handler's own bug.
            assert!(std::hint::black_box(false), "the handler's own bug");
            Ok(ToolResult::text("unreachable"))
        }))
        .build()
        .unwrap();
    let mut client = Client::new(server, StdioConfig::default());
    client.send(&call(4, "boom")).await;
    let failed = client.next().await;
    assert_eq!(failed["id"], 4, "{failed}");
    assert_eq!(failed["error"]["code"], code::INTERNAL_ERROR, "{failed}");
    client.send(&ping(5)).await;
    assert_eq!(client.next().await["id"], 5);
    client.close().await.1.expect("a clean end");
}

/// Rule: a request over the in-flight ceiling is answered -32603 with
/// `data.limit: "max_in_flight"` at once, and a request reusing the id of one in flight is
/// -32600; notifications are still read meanwhile.
#[tokio::test]
async fn the_in_flight_ceiling_and_ids_in_flight_are_refused_with_the_request_id() {
    let release = Arc::new(Notify::new());
    let config = StdioConfig::default().max_in_flight(1);
    let mut client = Client::new(slow_and_fast(release.clone()), config);
    client.send(&call(1, "slow")).await;
    client.send(&call(1, "fast")).await;
    let reused = client.next().await;
    assert_eq!(reused["id"], 1, "{reused}");
    assert_eq!(reused["error"]["code"], code::INVALID_REQUEST, "{reused}");
    client.send(&call(2, "fast")).await;
    let over = client.next().await;
    assert_eq!(over["id"], 2, "{over}");
    assert_eq!(over["error"]["code"], code::INTERNAL_ERROR, "{over}");
    assert_eq!(
        over["error"]["data"],
        json!({"limit": "max_in_flight", "max": 1}),
        "{over}"
    );
    // A request the surface answers at once runs no task: not counted.
    client.send(&ping(3)).await;
    assert_eq!(client.next().await["id"], 3);
    release.notify_one();
    assert_eq!(text(&client.next().await), "slow done");
    client.send(&call(4, "fast")).await;
    assert_eq!(text(&client.next().await), "fast done");
    client.close().await.1.expect("a clean end");
}

/// Rule: the rules the HTTP chain enforces before dispatch hold on every
/// line, by the same code: a 2026 request's protocol fields (-32602, or
/// -32022 naming what is served), its schema (-32602 naming the pointer),
/// an unidentified request (-32600, id never echoed); a refused
/// notification and a JSON-RPC response are never answered.
#[tokio::test]
async fn each_line_is_held_to_the_rules_of_the_chain() {
    let release = Arc::new(Notify::new());
    let mut client = Client::new(slow_and_fast(release), StdioConfig::default());
    client
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                       "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}))
        .await;
    let missing = client.next().await;
    assert_eq!(missing["id"], 1);
    assert_eq!(missing["error"]["code"], code::INVALID_PARAMS, "{missing}");
    assert_eq!(missing["error"]["data"]["field"], "params._meta");
    let mut unserved = meta();
    unserved["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    client
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                       "params": {"_meta": unserved}}))
        .await;
    let version = client.next().await;
    assert_eq!(version["id"], 2);
    assert_eq!(
        version["error"]["code"],
        code::UNSUPPORTED_PROTOCOL_VERSION,
        "{version}"
    );
    assert_eq!(
        version["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "v999.0.0"})
    );
    client
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"_meta": meta(), "name": 7}}))
        .await;
    let schema = client.next().await;
    assert_eq!(schema["error"]["code"], code::INVALID_PARAMS, "{schema}");
    assert_eq!(schema["error"]["data"]["pointer"], "/params/name");
    // Refused, but a notification: no answer. A response: no answer either.
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 9, "result": {}}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}))
        .await;
    let unidentified = client.next().await;
    assert_eq!(unidentified["id"], Value::Null, "{unidentified}");
    assert_eq!(unidentified["error"]["code"], code::INVALID_REQUEST);
    // Removed in 2026: the surface answers it -32601 as over HTTP.
    client
        .send(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": meta()}}))
        .await;
    let removed = client.next().await;
    assert_eq!(
        removed["error"]["code"],
        code::METHOD_NOT_FOUND,
        "{removed}"
    );
    client.close().await.1.expect("a clean end");
}

/// Rule: the server's own `Limits` hold on every line as on every body: a
/// line of more JSON values than `json_values` is -32600 (null id,
/// `data.limit`), and a string id longer than `id_bytes` is never echoed.
#[tokio::test]
async fn the_servers_parse_limits_hold_on_every_line() {
    let limits = wymcp::Limits {
        json_values: 50,
        id_bytes: 8,
        ..wymcp::Limits::default()
    };
    let server = Server::builder().limits(limits).build().unwrap();
    let mut client = Client::new(server, StdioConfig::default());
    let mut many = ping(1);
    many["params"] = json!({"values": vec![0; 100]});
    client.send(&many).await;
    let refused = client.next().await;
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], code::INVALID_REQUEST, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"ceiling": 50, "limit": "json_values"})
    );
    client
        .send(&json!({"jsonrpc": "2.0", "id": "123456789", "method": "ping"}))
        .await;
    let long_id = client.next().await;
    assert_eq!(long_id["id"], Value::Null, "{long_id}");
    assert_eq!(long_id["error"]["code"], code::INVALID_REQUEST, "{long_id}");
    client
        .send(&json!({"jsonrpc": "2.0", "id": "12345678", "method": "ping"}))
        .await;
    assert_eq!(client.next().await["id"], "12345678");
    client.close().await.1.expect("a clean end");
}

/// Rule: a 2025 client negotiates its revision with `initialize`, and the
/// connection holds its later messages to that revision's schema:
/// `tasks/get` is a 2025-11-25 method (bad params: -32602) the 2025-06-18
/// schema does not define (the surface's -32601).
#[tokio::test]
async fn initialize_negotiates_the_revision_later_messages_are_held_to() {
    let server = || {
        Server::builder()
            .revisions(Revision::ALL)
            .build()
            .expect("the server builds")
    };
    let tasks = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": 5});

    let mut unnegotiated = Client::new(server(), StdioConfig::default());
    unnegotiated.send(&tasks).await;
    let refused = unnegotiated.next().await;
    assert_eq!(refused["error"]["code"], code::INVALID_PARAMS, "{refused}");
    unnegotiated.close().await.1.expect("a clean end");

    let mut client = Client::new(server(), StdioConfig::default());
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
    let initialized = client.next().await;
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18");
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client.send(&tasks).await;
    let unknown = client.next().await;
    assert_eq!(unknown["id"], 2);
    assert_eq!(
        unknown["error"]["code"],
        code::METHOD_NOT_FOUND,
        "{unknown}"
    );
    client.send(&ping(3)).await;
    assert_eq!(client.next().await["result"], json!({}));
    client.close().await.1.expect("a clean end");
}

/// Rule: stdio carries no credentials: every call runs as the configured
/// principal, and as nobody without one.
#[tokio::test]
async fn every_call_runs_as_the_configured_principal() {
    let server = || {
        Server::builder()
            .tool(Tool::new("whoami").handler(|_: NoArgs, cx| async move {
                let who = cx.principal().map_or("nobody", |p| p.subject.as_str());
                Ok(ToolResult::text(who))
            }))
            .build()
            .unwrap()
    };
    let launcher = wymcp::auth::Principal {
        subject: "the-launching-user".into(),
        ..wymcp::auth::Principal::default()
    };
    let mut client = Client::new(server(), StdioConfig::default().principal(launcher));
    client.send(&call(1, "whoami")).await;
    assert_eq!(text(&client.next().await), "the-launching-user");
    client.close().await.1.expect("a clean end");
    let mut client = Client::new(server(), StdioConfig::default());
    client.send(&call(1, "whoami")).await;
    assert_eq!(text(&client.next().await), "nobody");
    client.close().await.1.expect("a clean end");
}

/// Rule: progress notifications a handler sends are written before its
/// answer, on the shared output.
#[tokio::test]
async fn progress_comes_before_the_answer() {
    let server = Server::builder()
        .tool(Tool::new("steps").handler(|_: NoArgs, cx| async move {
            for step in [1.0, 2.0] {
                cx.progress(step, Some(2.0), None);
                tokio::task::yield_now().await;
            }
            Ok(ToolResult::text("stepped"))
        }))
        .build()
        .unwrap();
    let mut client = Client::new(server, StdioConfig::default());
    let mut steps = call(1, "steps");
    steps["params"]["_meta"]["progressToken"] = json!("t");
    client.send(&steps).await;
    for step in [1, 2] {
        let progress = client.next().await;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], "t");
        assert_eq!(progress["params"]["progress"], step);
    }
    assert_eq!(text(&client.next().await), "stepped");
    client.close().await.1.expect("a clean end");
}

/// Rule: a listen stream writes its acknowledgement and the changes it
/// asked for, tagged with its id, and at the end of input the server ends
/// it with `notifications/cancelled` naming it.
#[tokio::test]
async fn a_listen_stream_is_acknowledged_hears_changes_and_is_cancelled_at_the_end() {
    let server = Arc::new(
        Server::builder()
            .tool(Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("t")) }))
            .build()
            .unwrap(),
    );
    let mut client = Client::new_shared(server.clone());
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
                       "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}}),
        )
        .await;
    let ack = client.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    server.notify_tools_changed();
    let changed = client.next().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    // The stream does not hold other requests up.
    client.send(&ping(1)).await;
    assert_eq!(client.next().await["id"], 1);
    let (rest, ended) = client.close().await;
    assert_eq!(
        rest,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "sub", "reason": "the server is shutting down"}})
        ]
    );
    ended.expect("a clean end");
}

impl Client {
    fn new_shared(server: Arc<Server>) -> Self {
        let (client, transport) = tokio::io::duplex(256 * 1024);
        let (reader, writer) = tokio::io::split(transport);
        let serving = tokio::spawn(wymcp::stdio::serve_io(
            server,
            reader,
            writer,
            StdioConfig::default(),
        ));
        let (output, input) = tokio::io::split(client);
        Client {
            lines: BufReader::new(output).lines(),
            input,
            serving,
        }
    }
}

/// Rule: `examples/everything --stdio` as its client launches it: only
/// protocol messages on stdout (its logs, at `debug`, go to stderr), a
/// progress call answered after its notifications, and end of input ends
/// the process with status 0.
#[test]
fn everything_over_stdio_writes_only_protocol_messages_and_exits_at_end_of_input() {
    use std::io::{BufRead as _, Write as _};
    use std::process::{Command, Stdio};
    let mut child = Command::new(wymcp_tests::child::everything_binary())
        .arg("--stdio")
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start examples/everything --stdio");
    let stderr = child.stderr.take().expect("its stderr");
    let logs = std::thread::spawn(move || {
        std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .count()
    });
    let mut input = child.stdin.take().expect("its stdin");
    let mut progress = call(2, "test_tool_with_progress");
    progress["params"]["_meta"]["progressToken"] = json!(7);
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}),
        progress,
    ] {
        writeln!(input, "{message}").expect("write a line");
    }
    input.write_all(b"not json\n").expect("write a line");
    drop(input);
    let started = Instant::now();
    let stdout = child.stdout.take().expect("its stdout");
    let lines: Vec<Value> = std::io::BufReader::new(stdout)
        .lines()
        .map(|line| {
            let line = line.expect("readable stdout");
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a non-message {line:?}: {e}"))
        })
        .collect();
    let status = child.wait().expect("the child ends");
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(logs.join().expect("stderr read") > 0, "it logged to stderr");
    let ids: Vec<&Value> = lines.iter().map(|l| &l["id"]).collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(
        ids.contains(&&json!(1)) && ids.contains(&&Value::Null),
        "{ids:?}"
    );
    let progress: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .map(|l| &l["params"]["progress"])
        .collect();
    assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
    let last = lines.last().expect("lines");
    assert_eq!(last["id"], 2, "the answer comes last: {lines:?}");
    assert_eq!(text(last), "Progress test completed");
}

/// The `initialize` of a 2025 client, asking for `version`.
fn handshake(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

/// Rule (issue 27 §3): a client that sends `server/discover` and then
/// `initialize` anyway on one connection, as a widely used coding assistant
/// does (its frames: the discover, a `notifications/roots/list_changed`
/// before any handshake, then `initialize`), is answered in the 2025 era,
/// and the connection then behaves as that era's: `initialized` accepted,
/// `ping` served, later messages held to the negotiated revision (here
/// 2025-06-18, whose schema has no `tasks/get`: the surface's -32601). The
/// discover's answer holds it to nothing: a 2026 message on the same
/// connection is still a 2026 message.
#[tokio::test]
async fn discover_then_initialize_on_one_connection_is_served_as_2025() {
    let server = Server::builder()
        .revisions(Revision::ALL)
        .tool(Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("ok")) }))
        .build()
        .expect("the server builds");
    let mut client = Client::new(server, StdioConfig::default());
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": meta()}}),
        )
        .await;
    let discovered = client.next().await;
    assert_eq!(discovered["id"], 1);
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    client
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}}),
        )
        .await;
    client.send(&handshake(2, "2025-06-18")).await;
    let initialized = client.next().await;
    assert_eq!(initialized["id"], 2, "the notification is not answered");
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18");
    assert!(initialized["result"].get("resultType").is_none());
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client.send(&ping(3)).await;
    assert_eq!(
        client.next().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );
    client
        .send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": 5}))
        .await;
    let unknown = client.next().await;
    assert_eq!(unknown["id"], 4);
    assert_eq!(
        unknown["error"]["code"],
        code::METHOD_NOT_FOUND,
        "{unknown}"
    );
    client
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "t", "arguments": {}}}))
        .await;
    assert_eq!(
        client.next().await,
        json!({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "ok"}]}})
    );
    client.send(&call(6, "t")).await;
    let modern = client.next().await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    client.close().await.1.expect("a clean end");
}

/// Rule (issue 27 §3): an `initialize` asking for an older revision
/// (`2024-11-05`, `2025-03-26`, or `2025-06-18` where it is not served) is
/// answered with the latest 2025 revision served, as the 2025 lifecycle
/// says, and the connection holds later messages to it (2025-11-25 has
/// `tasks/get`: bad params are -32602); one asking for a served revision is
/// answered with it.
#[tokio::test]
async fn initialize_answers_an_older_version_with_the_latest_served() {
    let default = || Server::builder().build().expect("the server builds");
    for asked in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let mut client = Client::new(default(), StdioConfig::default());
        client.send(&handshake(1, asked)).await;
        let answer = client.next().await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{asked}");
        client
            .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": 5}))
            .await;
        let refused = client.next().await;
        assert_eq!(
            refused["error"]["code"],
            code::INVALID_PARAMS,
            "{asked}: {refused}"
        );
        client.close().await.1.expect("a clean end");
    }
    let all = || {
        Server::builder()
            .revisions(Revision::ALL)
            .build()
            .expect("the server builds")
    };
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2025-11-25"),
        ("2025-03-26", "2025-11-25"),
    ] {
        let mut client = Client::new(all(), StdioConfig::default());
        client.send(&handshake(1, asked)).await;
        assert_eq!(
            client.next().await["result"]["protocolVersion"],
            answered,
            "{asked}"
        );
        client.close().await.1.expect("a clean end");
    }
}

const LEGACY_STREAMS: wymcp::ledger::Kind = wymcp::ledger::Kind::LegacyStreams;

/// A server serving every revision, with a tool and a resource, as the
/// session-stream tests over stdio want it.
fn session_server(limits: wymcp::ListenLimits) -> Arc<Server> {
    Arc::new(
        Server::builder()
            .revisions(Revision::ALL)
            .listen_limits(limits)
            .tool(Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("t")) }))
            .resource(wymcp::Resource::new("test://r", "r").text("r"))
            .build()
            .expect("the server builds"),
    )
}

impl Client {
    /// A 2025-11-25 `initialize` (id `id`) and its `initialized`.
    async fn initialize_2025(&mut self, id: u64) {
        self.send(&handshake(id, "2025-11-25")).await;
        let answer = self.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert!(
            answer["result"]["capabilities"]["tools"]["listChanged"] == true,
            "{answer}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    /// A 2025 `resources/subscribe` or `unsubscribe` of `uri`, answered `{}`.
    async fn subscription(&mut self, id: u64, method: &str, uri: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": uri}}))
            .await;
        let answer = self.next().await;
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }
}

/// Rule (issue 27 §1): over stdio the connection is a 2025 client's session
/// stream: once `initialize` succeeded, a list change the server announces
/// is written on the connection as the GET stream would carry it (no id, no
/// subscription id), and the end of input ends it with nothing more (no
/// `notifications/cancelled`: there is no request to name).
#[tokio::test]
async fn a_2025_client_over_stdio_hears_list_changes_on_its_connection() {
    let server = session_server(wymcp::ListenLimits::default());
    let mut client = Client::new_shared(server.clone());
    client.initialize_2025(1).await;
    // The stream's place, as a GET stream's.
    assert_eq!(server.ledger().held(LEGACY_STREAMS), 1);
    server.notify_tools_changed();
    assert_eq!(
        client.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    // The stream holds nothing up.
    client.send(&ping(2)).await;
    assert_eq!(client.next().await["id"], 2);
    let (rest, ended) = client.close().await;
    assert_eq!(rest, Vec::<Value>::new());
    ended.expect("a clean end");
    assert_eq!(server.ledger().held(LEGACY_STREAMS), 0);
}

/// Rule (issue 27 §1): `resources/subscribe` on the connection reaches its
/// session stream (an update is written as `notifications/resources/updated`),
/// `resources/unsubscribe` stops it (nothing more is written).
#[tokio::test]
async fn subscribe_over_stdio_reaches_the_connection_and_unsubscribe_stops_it() {
    let server = session_server(wymcp::ListenLimits::default());
    let mut client = Client::new_shared(server.clone());
    client.initialize_2025(1).await;
    client
        .subscription(2, "resources/subscribe", "test://r")
        .await;
    server.notify_resource_updated("test://r");
    assert_eq!(
        client.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "test://r"}})
    );
    client
        .subscription(3, "resources/unsubscribe", "test://r")
        .await;
    server.notify_resource_updated("test://r");
    assert!(client.silent_for(Duration::from_millis(300)).await);
    client.close().await.1.expect("a clean end");
}

/// Rule (issue 27 §1): a session stream over stdio that reaches its lifetime
/// is reopened at once, still watching what the connection subscribed to;
/// a second `initialize` replaces it (one stream a connection: a change is
/// written once).
#[tokio::test]
async fn the_session_stream_outlives_its_lifetime_and_a_second_initialize_replaces_it() {
    let limits = wymcp::ListenLimits::default().max_lifetime(Duration::from_millis(200));
    let server = session_server(limits);
    let mut client = Client::new_shared(server.clone());
    client.initialize_2025(1).await;
    client
        .subscription(2, "resources/subscribe", "test://r")
        .await;
    // Past two lifetimes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.notify_resource_updated("test://r");
    assert_eq!(
        client.next().await["method"],
        "notifications/resources/updated"
    );
    server.notify_tools_changed();
    assert_eq!(
        client.next().await["method"],
        "notifications/tools/list_changed"
    );

    client.initialize_2025(3).await;
    // The replaced stream gives its place back as its task ends.
    let deadline = Instant::now() + WAIT;
    while server.ledger().held(LEGACY_STREAMS) != 1 {
        assert!(Instant::now() < deadline, "one stream's place held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.notify_tools_changed();
    assert_eq!(
        client.next().await["method"],
        "notifications/tools/list_changed"
    );
    assert!(client.silent_for(Duration::from_millis(300)).await);
    client.close().await.1.expect("a clean end");
}

/// Rule (issue 27 §1): a 2026-07-28 client over stdio is told nothing it did
/// not ask for (it opens `subscriptions/listen`).
#[tokio::test]
async fn a_2026_client_over_stdio_hears_nothing_unasked() {
    let server = session_server(wymcp::ListenLimits::default());
    let mut client = Client::new_shared(server.clone());
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": meta()}}),
        )
        .await;
    assert!(client.next().await["result"].is_object());
    client.send(&call(2, "t")).await;
    assert_eq!(text(&client.next().await), "t");
    server.notify_tools_changed();
    server.notify_resource_updated("test://r");
    assert!(client.silent_for(Duration::from_millis(300)).await);
    client.close().await.1.expect("a clean end");
}

/// Rule (issue 27 §1): over stdio, a subscribe whose session token no
/// longer opens (past `LegacyRequests::session_ttl`) is answered as over
/// HTTP, with its id (-32600, `data.reason: "session"`: initialize again);
/// the connection then forgets the token, so a later subscribe is
/// acknowledged and reaches nothing, until a new `initialize` gives it one.
#[tokio::test]
async fn an_expired_session_token_over_stdio_is_refused_once_then_forgotten() {
    let server = Arc::new(
        Server::builder()
            .revisions(Revision::ALL)
            .legacy_requests(wymcp::LegacyRequests::default().session_ttl(Duration::from_secs(1)))
            .resource(wymcp::Resource::new("test://r", "r").text("r"))
            .build()
            .expect("the server builds"),
    );
    let mut client = Client::new_shared(server.clone());
    client.send(&handshake(1, "2025-11-25")).await;
    assert_eq!(client.next().await["id"], 1);
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                      "params": {"uri": "test://r"}}),
        )
        .await;
    let refused = client.next().await;
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], code::INVALID_REQUEST, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "session", "{refused}");
    client
        .subscription(3, "resources/subscribe", "test://r")
        .await;

    client.send(&handshake(4, "2025-11-25")).await;
    assert_eq!(client.next().await["id"], 4);
    client
        .subscription(5, "resources/subscribe", "test://r")
        .await;
    server.notify_resource_updated("test://r");
    assert_eq!(
        client.next().await["method"],
        "notifications/resources/updated"
    );
    client.close().await.1.expect("a clean end");
}

impl Client {
    fn new_shared_as(server: Arc<Server>, subject: &str) -> Self {
        let (client, transport) = tokio::io::duplex(256 * 1024);
        let (reader, writer) = tokio::io::split(transport);
        let config = StdioConfig::default().principal(wymcp::auth::Principal::new(subject, ["a"]));
        let serving = tokio::spawn(wymcp::stdio::serve_io(server, reader, writer, config));
        let (output, input) = tokio::io::split(client);
        Client {
            lines: BufReader::new(output).lines(),
            input,
            serving,
        }
    }
}

/// Rule (issue 27 §1): a stdio session stream is a `LegacyStreams` place
/// that gives way as a GET stream's does: at the cap, a caller under its
/// fair share takes the largest holder's oldest place; that connection is
/// written the caller-share error (id null, -32600,
/// `data.limit: "max_streams_per_caller"`) and its stream is not reopened
/// (it would take the place back), while the others still hear changes.
#[tokio::test]
async fn a_stdio_session_stream_gives_way_to_a_caller_under_its_fair_share() {
    let limits = wymcp::ListenLimits::default()
        .max_streams(2)
        .max_streams_per_caller(2);
    let server = session_server(limits);
    let mut first = Client::new_shared_as(server.clone(), "alice");
    let mut second = Client::new_shared_as(server.clone(), "alice");
    let mut newcomer = Client::new_shared_as(server.clone(), "bob");
    first.initialize_2025(1).await;
    second.initialize_2025(1).await;
    assert_eq!(server.ledger().held(LEGACY_STREAMS), 2);
    newcomer.initialize_2025(1).await;
    let evicted = first.next().await;
    assert_eq!(evicted["id"], Value::Null, "{evicted}");
    assert_eq!(evicted["error"]["code"], code::INVALID_REQUEST, "{evicted}");
    assert_eq!(
        evicted["error"]["data"]["limit"], "max_streams_per_caller",
        "{evicted}"
    );
    server.notify_tools_changed();
    for client in [&mut second, &mut newcomer] {
        assert_eq!(
            client.next().await["method"],
            "notifications/tools/list_changed"
        );
    }
    assert!(first.silent_for(Duration::from_millis(300)).await);
    assert_eq!(server.ledger().held(LEGACY_STREAMS), 2);
    for client in [first, second, newcomer] {
        client.close().await.1.expect("a clean end");
    }
}

/// Rule (issue 27 §1): `Server::close_subscriptions` ends a stdio session
/// stream for good, writing nothing (a GET stream just ends): it is not
/// reopened, and its place is given back; the connection still answers.
#[tokio::test]
async fn close_subscriptions_ends_a_stdio_session_stream_for_good() {
    let server = session_server(wymcp::ListenLimits::default());
    let mut client = Client::new_shared(server.clone());
    client.initialize_2025(1).await;
    assert_eq!(server.close_subscriptions(), 1);
    assert!(client.silent_for(Duration::from_millis(200)).await);
    server.notify_tools_changed();
    assert!(client.silent_for(Duration::from_millis(300)).await);
    assert_eq!(server.ledger().held(LEGACY_STREAMS), 0);
    client.send(&ping(2)).await;
    assert_eq!(client.next().await["id"], 2);
    client.close().await.1.expect("a clean end");
}
