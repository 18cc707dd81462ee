//! Safe defaults under hostile load (issue 16): each item an attacker
//! exploited on `examples/everything` with its defaults, through the real
//! server over sockets, each refusal pinned by status, code, id and headers.

#![allow(
    clippy::unwrap_used,
    clippy::missing_panics_doc,
    clippy::needless_pass_by_value,
    clippy::manual_assert
)]

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wymcp::{Limits, ListenLimits, ServeConfig, Server, Tool, ToolResult};
use wymcp_tests::wire::{RawConn, RawRequest, RawResponse, TestServer, frame};

const MODERN: &str = "2026-07-28";

/// A 2026 request of `method` with `params` (its `_meta` protocol fields
/// added) and its standard headers.
fn call(id: Value, method: &str, mut params: Value) -> RawRequest {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = match method {
        "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
        "resources/read" => params["uri"].as_str().map(str::to_owned),
        _ => None,
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = RawRequest::post("/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", method);
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    request.json(serde_json::to_vec(&body).unwrap())
}

fn listen(id: u64) -> RawRequest {
    call(
        json!(id),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
}

fn server_with(builder: wymcp::ServerBuilder) -> Arc<Server> {
    let echo = Tool::new("echo").raw_handler(|_, _| async { Ok(ToolResult::text("hi")) });
    Arc::new(builder.tool(echo).tools_capability().build().unwrap())
}

/// Opens a listen stream on `conn` and waits for its acknowledgement.
async fn open_listen(conn: &mut RawConn, id: u64) {
    conn.send(&listen(id).to_bytes()).await.unwrap();
    assert!(
        conn.read_until(
            b"notifications/subscriptions/acknowledged",
            Duration::from_secs(10)
        )
        .await,
        "the listen stream opened"
    );
}

fn loopback(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// Asserts a JSON-RPC error with this status, code and id, and returns it.
fn refused(
    response: &RawResponse,
    status: u16,
    code: i64,
    id: &Value,
) -> wymcp_tests::wire::RpcError {
    assert_eq!(response.status, status, "{response:?}");
    let error = response.rpc_error();
    assert_eq!(error.code, code, "{error:?}");
    assert_eq!(&error.id, id, "{error:?}");
    error
}

// ------------------------------------------------------------ listen streams

/// Rule (items 1, 8; issue 23's ledger): a caller at its limit of open
/// listen streams is refused 429/-32600 with `Retry-After` and its id,
/// while a client from another address opens one, and a plain call of the
/// same caller is served. At the server's limit a newcomer under its fair
/// share still gets a stream: the largest holder's oldest stream gives way
/// and ends with the caller-share error; a caller already at its fair share
/// is refused 503/-32603.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_streams_are_capped_per_caller_and_per_server() {
    let limits = ListenLimits::default()
        .max_streams(3)
        .max_streams_per_caller(2);
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().listen_limits(limits),
    )))
    .await;
    let mut held = Vec::new();
    for id in 0..2 {
        let mut conn = RawConn::connect_from(listening.addr(), loopback(1)).await;
        open_listen(&mut conn, id).await;
        held.push(conn);
    }
    let mut third = RawConn::connect_from(listening.addr(), loopback(1)).await;
    let response = third.request(&listen(7)).await;
    let error = refused(&response, 429, -32600, &json!(7));
    assert!(error.message.contains("(2)"), "{error:?}");
    assert_eq!(error.data["limit"], "max_streams_per_caller");
    assert_eq!(error.data["max"], 2);
    assert!(response.header("retry-after").is_some(), "{response:?}");
    // The same caller's plain calls are served.
    let served = third
        .request(&call(
            json!(8),
            "tools/call",
            json!({"name": "echo", "arguments": {}}),
        ))
        .await;
    assert_eq!(served.status, 200, "{served:?}");
    // Another address opens its own: the server holds 3.
    let mut other = RawConn::connect_from(listening.addr(), loopback(2)).await;
    open_listen(&mut other, 9).await;
    // A third address holds nothing, under its fair share (3 / 3): it gets
    // a stream, and the largest holder's oldest stream ends with the
    // caller-share error.
    let mut fourth = RawConn::connect_from(listening.addr(), loopback(3)).await;
    open_listen(&mut fourth, 10).await;
    assert!(
        held[0]
            .read_until(b"max_streams_per_caller", Duration::from_secs(10))
            .await,
        "the oldest stream of the largest holder gave way"
    );
    // Everyone now holds its fair share: one more from any of them is 503.
    let mut fifth = RawConn::connect_from(listening.addr(), loopback(2)).await;
    let response = fifth.request(&listen(12)).await;
    let error = refused(&response, 503, -32603, &json!(12));
    assert_eq!(error.data["limit"], "max_streams");
    assert!(response.header("retry-after").is_some());
    // A stream closed gives its slot back.
    drop(held.pop());
    let mut again = RawConn::connect_from(listening.addr(), loopback(1)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        again.send(&listen(11).to_bytes()).await.unwrap();
        if again
            .read_until(
                b"notifications/subscriptions/acknowledged",
                Duration::from_millis(500),
            )
            .await
        {
            break;
        }
        assert!(Instant::now() < deadline, "the slot came back");
        again = RawConn::connect_from(listening.addr(), loopback(1)).await;
    }
}

/// Rule (item 8): behind a trusted proxy the caller is the client its
/// forwarding header names; without trust the header is not believed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_behind_a_trusted_proxy_are_told_apart_by_their_forwarded_address() {
    let limits = ListenLimits::default().max_streams_per_caller(1);
    let router = wymcp::chain::post::router(server_with(Server::builder().listen_limits(limits)));
    let trusting = TestServer::start_with(
        router.clone(),
        ServeConfig::default().trusted_proxies(["127.0.0.1".parse().unwrap()]),
    )
    .await;
    let forwarded = |id: u64, client: &str| listen(id).header("X-Forwarded-For", client);
    let mut a = RawConn::connect(trusting.addr()).await;
    a.send(&forwarded(1, "198.51.100.1").to_bytes())
        .await
        .unwrap();
    assert!(a.read_until(b"acknowledged", Duration::from_secs(10)).await);
    let mut b = RawConn::connect(trusting.addr()).await;
    b.send(&forwarded(2, "198.51.100.2").to_bytes())
        .await
        .unwrap();
    assert!(b.read_until(b"acknowledged", Duration::from_secs(10)).await);
    let mut a_again = RawConn::connect(trusting.addr()).await;
    let response = a_again.request(&forwarded(3, "198.51.100.1")).await;
    refused(&response, 429, -32600, &json!(3));
    // Not trusted: every request is the peer's, whatever it claims.
    let plain = TestServer::start(router).await;
    let mut c = RawConn::connect(plain.addr()).await;
    c.send(&forwarded(4, "198.51.100.3").to_bytes())
        .await
        .unwrap();
    assert!(c.read_until(b"acknowledged", Duration::from_secs(10)).await);
    let mut d = RawConn::connect(plain.addr()).await;
    let response = d.request(&forwarded(5, "198.51.100.4")).await;
    refused(&response, 429, -32600, &json!(5));
}

/// Rule (item 2): a listen filter over its bounds is 400/-32602 with the
/// request's id, naming the limit.
#[tokio::test]
async fn an_oversized_listen_filter_is_invalid_params() {
    let listening =
        TestServer::start(wymcp::chain::post::router(server_with(Server::builder()))).await;
    let mut conn = listening.connect().await;
    let many: Vec<String> = (0..300).map(|i| format!("r://{i}")).collect();
    let response = conn
        .request(&call(
            json!("f"),
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": many}}),
        ))
        .await;
    let error = refused(&response, 400, -32602, &json!("f"));
    assert_eq!(error.data["limit"], "max_watched_uris");
    let long = "r://".to_owned() + &"x".repeat(4_000);
    let response = conn
        .request(&call(
            json!("g"),
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": [long]}}),
        ))
        .await;
    let error = refused(&response, 400, -32602, &json!("g"));
    assert_eq!(error.data["limit"], "max_uri_bytes");
}

/// Rule (item 3): a string id longer than the bound is not an id wymcp
/// echoes: 400/-32600 with a null id.
#[tokio::test]
async fn an_overlong_id_is_never_echoed() {
    let listening =
        TestServer::start(wymcp::chain::post::router(server_with(Server::builder()))).await;
    let mut conn = listening.connect().await;
    let long = "i".repeat(Limits::default().id_bytes + 1);
    let response = conn
        .request(&call(json!(long), "tools/list", json!({})))
        .await;
    refused(&response, 400, -32600, &Value::Null);
    assert!(response.body.len() < 1_000, "the id is not in the answer");
    let at = "i".repeat(Limits::default().id_bytes);
    let response = conn
        .request(&call(json!(at), "tools/list", json!({})))
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["id"], json!(at));
}

/// Rule (item 5): a listen stream ends cleanly at its lifetime: the
/// `complete` result with its id, then the end of the stream.
#[tokio::test]
async fn a_listen_stream_ends_at_its_lifetime() {
    let limits = ListenLimits::default().max_lifetime(Duration::from_millis(300));
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().listen_limits(limits),
    )))
    .await;
    let mut conn = listening.connect().await;
    open_listen(&mut conn, 5).await;
    assert!(
        conn.read_until(br#""resultType":"complete""#, Duration::from_secs(5))
            .await,
        "the stream ended with its result"
    );
}

// ------------------------------------------------------ connections, bodies

/// Rule (item 6): a body trickled in, a byte well within the read timeout
/// each time, is cut off at the body deadline: 408, connection closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_is_cut_off_at_the_deadline() {
    let limits = Limits {
        read_timeout: Duration::from_secs(5),
        body_deadline: Duration::from_millis(800),
        ..Limits::default()
    };
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().limits(limits),
    )))
    .await;
    let mut conn = listening.connect().await;
    conn.send(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        .await
        .unwrap();
    let started = Instant::now();
    let trickle = async {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if conn.send(b" ").await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        () = trickle => {}
        () = tokio::time::sleep(Duration::from_secs(4)) => panic!("the trickle was never cut off"),
    }
    assert!(started.elapsed() < Duration::from_secs(4));
    // The 408 was answered before the close.
    let mut fresh = listening.connect().await;
    let ok = fresh
        .request(&call(json!(1), "tools/list", json!({})))
        .await;
    assert_eq!(ok.status, 200, "the server goes on");
}

/// Rule (item 6): what the trickled client reads is a 408 with no body, at
/// the body deadline, though every byte came well within the read timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trickled_client_reads_a_408() {
    let limits = Limits {
        read_timeout: Duration::from_secs(10),
        body_deadline: Duration::from_millis(600),
        ..Limits::default()
    };
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().limits(limits),
    )))
    .await;
    let mut conn = listening.connect().await;
    let started = Instant::now();
    conn.send(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        .await
        .unwrap();
    // A byte every 250 ms for 2 s; the server may close meanwhile.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if conn.send(b" ").await.is_err() {
            break;
        }
    }
    let response = conn.response().await;
    assert_eq!(response.status, 408, "{response:?}");
    assert!(response.body.is_empty());
    assert!(response.closes());
    // The trickle ended at 2 s and the read timeout is 10 s: a 408 before
    // 8 s is the deadline's, not a stall's.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// Rule (item 7): an HTTP/2 connection that opens no stream is idle however
/// many `PING`s it sends: closed at the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_pings_do_not_keep_an_idle_connection_open() {
    let listening = TestServer::start_with(
        wymcp::chain::post::router(server_with(Server::builder())),
        ServeConfig::default().idle_timeout(Duration::from_millis(600)),
    )
    .await;
    let mut h2 = listening.raw_h2().await;
    let started = Instant::now();
    let closed = loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if h2.send(&frame(0x6, 0, 0, &[1; 8])).await.is_err() {
            break true;
        }
        if started.elapsed() > Duration::from_secs(5) {
            break false;
        }
        // Drain what came (SETTINGS, PING acks, a GOAWAY).
        let read = tokio::time::timeout(Duration::from_millis(10), h2.frame()).await;
        if let Ok(None) = read {
            break true;
        }
        if let Ok(Some(f)) = read
            && f.kind == 0x7
        {
            break true;
        }
    };
    assert!(closed, "the pinging connection was closed");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Rule (item 8): one peer holds at most its share of connections: one more
/// is closed at once, another peer is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_holds_at_most_its_connections() {
    let listening = TestServer::start_with(
        wymcp::chain::post::router(server_with(Server::builder())),
        ServeConfig::default().max_connections_per_peer(2),
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut conn = RawConn::connect_from(listening.addr(), loopback(1)).await;
        let response = conn.request(&call(json!(1), "tools/list", json!({}))).await;
        assert_eq!(response.status, 200);
        held.push(conn);
    }
    let mut over = RawConn::connect_from(listening.addr(), loopback(1)).await;
    assert!(
        over.closed(Duration::from_secs(5)).await,
        "the third was closed"
    );
    let mut other = RawConn::connect_from(listening.addr(), loopback(2)).await;
    let response = other
        .request(&call(json!(2), "tools/list", json!({})))
        .await;
    assert_eq!(response.status, 200);
    drop(held);
}

/// Rule (item 8): a body that would take the server over its budget of body
/// bytes in flight is refused 503/-32603 with `Retry-After` before it is
/// read (a declared length), or as soon as it goes over (chunked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_in_flight_are_budgeted() {
    let limits = Limits {
        bodies_in_flight: 10_000,
        ..Limits::default()
    };
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().limits(limits),
    )))
    .await;
    // One stalled body holds 8,000 bytes of the budget.
    let mut holder = listening.connect().await;
    holder
        .send(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 8000\r\n\r\n{")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut declared = listening.connect().await;
    declared
        .send(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n")
        .await
        .unwrap();
    let response = declared.response().await;
    let error = refused(&response, 503, -32603, &Value::Null);
    assert_eq!(error.data["limit"], "bodies_in_flight");
    assert!(response.header("retry-after").is_some());
    assert!(response.closes());
    // A small call still fits.
    let mut small = listening.connect().await;
    let ok = small
        .request(&call(json!(1), "tools/list", json!({})))
        .await;
    assert_eq!(ok.status, 200);
    // Chunked: refused once its bytes go over.
    let mut chunked = listening.connect().await;
    let pad = "x".repeat(3_000);
    chunked
        .send(format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{pad}\r\n", pad.len()).as_bytes())
        .await
        .unwrap();
    let response = chunked.response().await;
    refused(&response, 503, -32603, &Value::Null);
    drop(holder);
}

/// Rule (item 9): a body of many tiny values (an unauthenticated `[0,0,…]`
/// of 7.9 MB) is refused while it is parsed, 413/-32600 naming the limit,
/// before anything authenticates it; the server answers the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_too_many_values_is_refused_while_parsed() {
    let tokens = wymcp::auth::StaticTokens::new().token(
        "t",
        wymcp::auth::Principal {
            subject: "s".into(),
            ..wymcp::auth::Principal::default()
        },
    );
    let listening = TestServer::start(wymcp::chain::post::router(server_with(
        Server::builder().auth(tokens, wymcp::auth::AuthConfig::new()),
    )))
    .await;
    let mut conn = listening.connect().await;
    let mut body = b"[".to_vec();
    body.extend(b"0,".repeat(3_950_000));
    body.extend(b"0]");
    let response = conn.request(&RawRequest::post("/mcp").json(body)).await;
    let error = refused(&response, 413, -32600, &Value::Null);
    assert_eq!(error.data["limit"], "json_values");
    assert_eq!(error.data["ceiling"], Limits::default().json_values);
    let mut next = listening.connect().await;
    let response = next.request(&call(json!(1), "tools/list", json!({}))).await;
    assert_eq!(response.status, 401, "the next request meets auth");
}

// ------------------------------------------------------------------ logic

/// Rule (item 16): a request line longer than any request-target is 414,
/// whatever the header limit; a head of headers too large stays 431.
#[tokio::test]
async fn an_overlong_request_line_is_414_and_large_headers_431() {
    let listening =
        TestServer::start(wymcp::chain::post::router(server_with(Server::builder()))).await;
    for len in [70_000, 200_000] {
        let mut conn = listening.connect().await;
        let line = format!(
            "POST /mcp?{} HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "q".repeat(len)
        );
        let _ = conn.send(line.as_bytes()).await;
        let response = conn.response().await;
        assert_eq!(response.status, 414, "{len}: {response:?}");
        assert!(response.closes());
    }
    let mut conn = listening.connect().await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(200_000)
    );
    let _ = conn.send(head.as_bytes()).await;
    assert_eq!(conn.response().await.status, 431);
}

/// Rule (item 13): a handler that panics answers 500/-32603 with the id,
/// and the connection goes on serving.
#[tokio::test]
async fn a_panicking_handler_answers_32603_and_the_connection_lives() {
    let boom = Tool::new("boom").raw_handler(|_, _| async {
        if std::hint::black_box(true) {
            panic!("the handler broke");
        }
        Ok(ToolResult::text("never"))
    });
    let eager = Tool::new("eager").raw_handler(
        |_, _| -> std::future::Ready<Result<ToolResult, wymcp::HandlerError>> {
            panic!("broke before its future");
        },
    );
    let listening = TestServer::start(wymcp::chain::post::router(Arc::new(
        Server::builder().tool(boom).tool(eager).build().unwrap(),
    )))
    .await;
    let mut conn = listening.connect().await;
    for (id, tool) in [(1, "boom"), (2, "eager")] {
        let response = conn
            .request(&call(
                json!(id),
                "tools/call",
                json!({"name": tool, "arguments": {}}),
            ))
            .await;
        let error = refused(&response, 500, -32603, &json!(id));
        assert!(
            !error.message.contains("broke"),
            "the panic is not told: {error:?}"
        );
    }
    let response = conn.request(&call(json!(3), "tools/list", json!({}))).await;
    assert_eq!(response.status, 200, "the same connection serves on");
}

/// Rule (item 15): a client's string in the answer's message is cut, its
/// length noted, however long it was sent.
#[tokio::test]
async fn a_huge_method_is_quoted_bounded() {
    let listening =
        TestServer::start(wymcp::chain::post::router(server_with(Server::builder()))).await;
    let mut conn = listening.connect().await;
    let method = "m".repeat(100_000);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method,
                      "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                           "io.modelcontextprotocol/clientCapabilities": {}}}});
    let request = RawRequest::post("/mcp")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", &method)
        .json(serde_json::to_vec(&body).unwrap());
    let response = conn.request(&request).await;
    let error = refused(&response, 404, -32601, &json!(1));
    assert!(error.message.len() < 400, "{}", error.message.len());
    assert!(error.message.contains("100000 bytes"), "{}", error.message);
    assert!(response.body.len() < 2_000);
}

/// A server whose `deploy` tool mirrors `region` (a string) and `count` (an
/// integer) into `Mcp-Param-*` headers.
fn annotated() -> Arc<Server> {
    let deploy = Tool::new("deploy")
        .input_schema(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"}
        }}))
        .raw_handler(|_, _| async { Ok(ToolResult::text("deployed")) });
    Arc::new(Server::builder().tool(deploy).build().unwrap())
}

/// A 2025 request (no `_meta` protocol fields) with these headers.
fn legacy(id: u64, method: &str, params: Value, headers: &[(&str, &str)]) -> RawRequest {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = RawRequest::post("/mcp").header("MCP-Protocol-Version", "2025-11-25");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(serde_json::to_vec(&body).unwrap())
}

/// Rule (item 10): in the 2025 era every 2026 header that is present is
/// bound to the body (-32020 on a mismatch, with the id), an absent one
/// passes, and a 2025 header beside a 2026 `_meta` version is a mismatch.
#[tokio::test]
async fn present_headers_are_bound_in_the_2025_era_too() {
    let listening = TestServer::start(wymcp::chain::post::router(annotated())).await;
    let mut conn = listening.connect().await;
    let args = json!({"name": "deploy", "arguments": {"region": "eu", "count": 2}});
    // No 2026 headers: served.
    let response = conn
        .request(&legacy(1, "tools/call", args.clone(), &[]))
        .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert!(response.json().get("result").is_some());
    // Each mismatched header refused, naming it.
    for (id, header, value) in [
        (2, "Mcp-Method", "tools/list"),
        (3, "Mcp-Name", "other"),
        (4, "Mcp-Param-Region", "us"),
        (5, "Mcp-Param-Count", "3"),
    ] {
        let response = conn
            .request(&legacy(id, "tools/call", args.clone(), &[(header, value)]))
            .await;
        let error = refused(&response, 400, -32020, &json!(id));
        assert_eq!(error.data["header"], header, "{error:?}");
    }
    // Matching headers pass.
    let response = conn
        .request(&legacy(
            6,
            "tools/call",
            args.clone(),
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "deploy"),
                ("Mcp-Param-Region", "eu"),
            ],
        ))
        .await;
    assert_eq!(response.status, 200);
    // A 2026 `_meta` version under a 2025 header.
    let mut modern_meta = args;
    modern_meta["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
    let response = conn
        .request(&legacy(7, "tools/call", modern_meta, &[]))
        .await;
    let error = refused(&response, 400, -32020, &json!(7));
    assert_eq!(error.data["header"], "MCP-Protocol-Version");
}

/// Rule (item 11): an `x-mcp-header` integer no header can spell exactly
/// (beyond 64 bits, which the schema's `integer` accepts) is refused
/// -32020, never left unbound.
#[tokio::test]
async fn integers_beyond_64_bits_are_refused_not_unbound() {
    let listening = TestServer::start(wymcp::chain::post::router(annotated())).await;
    let mut conn = listening.connect().await;
    for (id, count) in [
        (1, "1e20"),
        (2, "123456789012345678901234567890"),
        (3, "-1.8446744073709552e19"),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"deploy","arguments":{{"count":{count}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        );
        let request = RawRequest::post("/mcp")
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "deploy")
            .header("Mcp-Param-Count", "100000000000000000000")
            .json(body.into_bytes());
        let response = conn.request(&request).await;
        let error = refused(&response, 400, -32020, &json!(id));
        assert_eq!(error.data["header"], "Mcp-Param-Count", "{count}");
    }
}

/// Rule (item 14): the sealed state binds the keys its round asked: the
/// handler sees answers to those keys only. An answer to another key, or
/// round two's answer with round one's state, is ignored (SEP-2322: unknown
/// keys are ignored, what is missing asked again), never seen.
#[tokio::test]
async fn a_retry_answers_only_what_its_round_asked() {
    use wymcp::mrtr::InputRequest;
    let ask = Tool::new("ask").raw_handler(|_, cx: wymcp::Context| async move {
        let inputs = cx.inputs();
        let seen: Vec<String> = inputs.responses().keys().cloned().collect();
        // What this round needs answered first: re-asked while missing.
        let (wanted, next) = match inputs.round() {
            0 => (None, "first"),
            1 => (Some("first"), "second"),
            _ => (Some("second"), ""),
        };
        match wanted {
            Some(key) if inputs.responses().contains_key(key) && next.is_empty() => {
                Ok(ToolResult::text(format!("done: {seen:?}")))
            }
            Some(key) if inputs.responses().contains_key(key) => Err(inputs
                .input_required()
                .request(next, InputRequest::list_roots())?
                .into()),
            Some(key) => Err(inputs
                .input_required()
                .request(key, InputRequest::list_roots())?
                .into()),
            None => Err(inputs
                .input_required()
                .request(next, InputRequest::list_roots())?
                .into()),
        }
    });
    let listening = TestServer::start(wymcp::chain::post::router(Arc::new(
        Server::builder().tool(ask).build().unwrap(),
    )))
    .await;
    let mut conn = listening.connect().await;
    let with = |id: u64, extra: Value| {
        let mut params = json!({"name": "ask", "arguments": {}});
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        let request = call(json!(id), "tools/call", params.clone());
        // Declare roots, so the round may ask for them.
        let mut body: Value = serde_json::from_slice(&request.framed_body()).unwrap();
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"roots": {}});
        request.body(serde_json::to_vec(&body).unwrap())
    };
    let roots = json!({"roots": []});
    let one = conn.request(&with(1, json!({}))).await.json();
    assert_eq!(one["result"]["resultType"], "input_required");
    let state1 = one["result"]["requestState"].clone();
    let two = conn
        .request(&with(
            2,
            json!({"inputResponses": {"first": roots}, "requestState": state1}),
        ))
        .await
        .json();
    assert_eq!(two["result"]["resultType"], "input_required");
    let state2 = two["result"]["requestState"].clone();
    // Round one's state with round two's answer: not seen, so round one's
    // question is asked again.
    let three = conn
        .request(&with(
            3,
            json!({"inputResponses": {"second": roots}, "requestState": state1}),
        ))
        .await
        .json();
    assert_eq!(three["result"]["resultType"], "input_required", "{three}");
    assert!(
        three["result"]["inputRequests"].get("first").is_some(),
        "{three}"
    );
    // An answer to a key never asked beside the right one: ignored.
    // The right answer to the right round finishes the call.
    let done = conn
        .request(&with(
            5,
            json!({"inputResponses": {"second": roots, "nobody": roots}, "requestState": state2}),
        ))
        .await
        .json();
    assert_eq!(
        done["result"]["content"][0]["text"], "done: [\"second\"]",
        "{done}"
    );
}
