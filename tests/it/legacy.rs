//! The legacy path for 2025 clients: initialize, ping, logging/setLevel,
//! notifications/initialized, subscribe acknowledgements, and 2025 results.

use http::StatusCode;
use serde_json::json;
use wymcp::NoArgs;
use wymcp::{Era, Resource, Revision, Server, Tool, ToolResult};

use crate::support::{Reply, Req, assert_schema, chain, dispatch, send};

fn server() -> Server {
    Server::builder()
        .info("legacy-test", "9.9.9")
        .instructions("Be kind.")
        .tool(
            Tool::new("t")
                .description("t")
                .handler(|_: NoArgs, _| async { Ok(ToolResult::text("ok")) }),
        )
        .resource(Resource::new("test://r", "r").text("r"))
        .build()
        .unwrap()
}

/// A 2025 `initialize`, id 1, asking for `version` (sent with no MCP
/// header).
fn initialize(version: &str) -> Req {
    Req::legacy(1, "initialize").params(json!({
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
    }))
}

/// initialize answers the requested version when served, else the latest
/// 2025 revision served; capabilities, serverInfo, instructions; no session
/// id; a valid 2025-11-25 InitializeResult.
#[tokio::test]
async fn initialize_negotiates_a_2025_version() {
    let server = server();
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let answer = dispatch(&server, initialize(asked)).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.body["id"], 1);
        let result = answer.result();
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        assert_eq!(
            result["serverInfo"],
            json!({"name": "legacy-test", "version": "9.9.9"})
        );
        assert_eq!(result["instructions"], "Be kind.");
        assert_eq!(
            result["capabilities"],
            json!({
                // As 2026 discover: the standalone GET stream delivers them.
                "tools": {"listChanged": true},
                "resources": {"listChanged": true, "subscribe": true},
                "logging": {}
            })
        );
        // The token that names the client's GET stream.
        assert!(!answer.header("mcp-session-id").is_empty());
        assert!(result.get("resultType").is_none());
        assert_schema("2025-11-25", "InitializeResult", result);
    }
    let both = Server::builder()
        .revisions([
            Revision::V2025_06_18,
            Revision::V2025_11_25,
            Revision::V2026_07_28,
        ])
        .build()
        .unwrap();
    // Each served revision is answered its own (rendered once per
    // revision when the server is built).
    for asked in ["2025-06-18", "2025-11-25"] {
        let answer = dispatch(&both, initialize(asked)).await;
        let result = answer.ok(&json!(1));
        assert_eq!(result["protocolVersion"], asked);
        assert_eq!(result["serverInfo"]["name"], "wymcp");
    }
}

/// A server serving no 2025 revision refuses initialize, listing what it
/// serves.
#[tokio::test]
async fn initialize_without_a_legacy_revision_lists_the_supported_ones() {
    let modern_only = Server::builder()
        .revisions([Revision::V2026_07_28])
        .build()
        .unwrap();
    let answer = dispatch(&modern_only, initialize("2025-11-25")).await;
    let error = answer.error(StatusCode::OK, -32602, &json!(1));
    assert_eq!(
        error["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
}

/// ping and logging/setLevel answer an empty object, exactly; a bad level
/// is -32602.
#[tokio::test]
async fn ping_and_set_level_answer_empty_objects() {
    let server = server();
    let answer = dispatch(&server, Req::legacy("p", "ping").params(json!({}))).await;
    assert_eq!(answer.ok(&json!("p")), &json!({}));
    let no_params = Req::legacy("q", "ping");
    assert_eq!(
        dispatch(&server, no_params).await.ok(&json!("q")),
        &json!({})
    );
    let answer = dispatch(
        &server,
        Req::legacy(2, "logging/setLevel").params(json!({"level": "debug"})),
    )
    .await;
    assert_eq!(answer.ok(&json!(2)), &json!({}));
    let answer = dispatch(
        &server,
        Req::legacy(3, "logging/setLevel").params(json!({"level": "loud"})),
    )
    .await;
    answer.error(StatusCode::OK, -32602, &json!(3));
}

/// notifications/initialized is accepted: 202, empty body, no session id.
#[tokio::test]
async fn initialized_is_accepted() {
    let message = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = dispatch(&server(), Req::body(message).bind(Era::Legacy)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.raw.is_empty());
    assert!(answer.headers.get("mcp-session-id").is_none());
}

/// resources/subscribe and unsubscribe are acknowledged (`{}`, as a 2025
/// server answers) whenever the server serves resources, though never
/// advertised; -32601 on a server without resources.
#[tokio::test]
async fn subscriptions_are_acknowledged_when_resources_are_served() {
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let message = Req::legacy(4, method).params(json!({"uri": "test://r"}));
        assert_eq!(
            dispatch(&server(), message.clone()).await.ok(&json!(4)),
            &json!({})
        );
        let plain = Server::builder()
            .tool(Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("ok")) }))
            .build()
            .unwrap();
        dispatch(&plain, message)
            .await
            .error(StatusCode::OK, -32601, &json!(4));
    }
}

/// Tools the 2025 way: no resultType, no serverInfo _meta, no caching hint;
/// errors in a 200.
#[tokio::test]
async fn legacy_tools_are_2025_results() {
    let server = server();
    let answer = dispatch(&server, Req::legacy(5, "tools/list").params(json!({}))).await;
    let result = answer.ok(&json!(5));
    assert_schema("2025-11-25", "ListToolsResult", result);
    assert!(
        result.get("resultType").is_none()
            && result.get("ttlMs").is_none()
            && result.get("_meta").is_none()
    );
    let answer = dispatch(
        &server,
        Req::legacy(6, "tools/call").params(json!({"name": "t"})),
    )
    .await;
    let result = answer.ok(&json!(6));
    assert_schema("2025-11-25", "CallToolResult", result);
    assert_eq!(
        result,
        &json!({"content": [{"type": "text", "text": "ok"}]})
    );
    let answer = dispatch(
        &server,
        Req::legacy(7, "tools/call").params(json!({"name": "x"})),
    )
    .await;
    answer.error(StatusCode::OK, -32602, &json!(7));
}

/// Through the default chain, as a 2025 client does it: initialize without
/// any MCP header, then initialized, ping and a tool call with
/// `MCP-Protocol-Version: 2025-11-25`; the session id only on
/// `initialize` (the token naming its GET stream), none after.
#[tokio::test]
async fn a_2025_session_through_the_chain() {
    let through = |req| async move { send(&chain(server()), req).await };
    let answer = through(initialize("2025-11-25")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.result()["protocolVersion"], "2025-11-25");
    assert!(!answer.header("mcp-session-id").is_empty());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = through(Req::body(initialized).bind(Era::Legacy)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.raw.is_empty() && answer.headers.get("mcp-session-id").is_none());
    assert_eq!(
        through(Req::legacy(2, "ping").params(json!({})))
            .await
            .ok(&json!(2)),
        &json!({})
    );
    let answer =
        through(Req::legacy(3, "tools/call").params(json!({"name": "t", "arguments": {}}))).await;
    assert_eq!(answer.ok(&json!(3))["content"][0]["text"], "ok");
}

/// Issue 27 §3: a client that sends `server/discover` and then `initialize`
/// anyway (a dual-era client falling back to the 2025 handshake) is
/// answered in the 2025 era, with each set of headers such clients send on
/// that `initialize`: none (the TypeScript and Go SDKs' fallback, the
/// Python SDK's), or the `MCP-Protocol-Version: 2026-07-28` and `Mcp-Method`
/// a transport that keeps the probe's version leaves on it (the Python SDK
/// clears its copy on `initialize` for this very reason). Then the 2025
/// session goes on as 2025 does. An `initialize` with a 2026 `_meta`
/// protocol version stays a 2026 request: the removed method, 404/-32601
/// (what the conformance suite asks).
#[tokio::test]
async fn discover_then_initialize_is_answered_in_the_2025_era() {
    let router = chain(server());
    let discover = send(&router, Req::modern(1, "server/discover")).await;
    assert_eq!(
        discover.ok(&json!(1))["supportedVersions"],
        json!(["2026-07-28"])
    );
    let leftover = |req: Req| {
        req.set("MCP-Protocol-Version", "2026-07-28")
            .set("Mcp-Method", "initialize")
    };
    for (headers, handshake) in [
        ("none", initialize("2025-11-25")),
        ("the probe's", leftover(initialize("2025-11-25"))),
        (
            "the probe's, asking 2024-11-05",
            leftover(initialize("2024-11-05")),
        ),
    ] {
        let answer = send(&router, handshake).await;
        assert!(answer.rejections.is_empty(), "{headers}: {answer:?}");
        let result = handshake_result(&answer);
        assert_eq!(result["protocolVersion"], "2025-11-25", "{headers}");
        assert!(result.get("resultType").is_none(), "{headers}: {result}");
        assert_schema("2025-11-25", "InitializeResult", result);
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = send(&router, Req::body(initialized).bind(Era::Legacy)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.raw.is_empty());
    let ping = send(&router, Req::legacy(2, "ping")).await;
    assert_eq!(ping.ok(&json!(2)), &json!({}));
    let call = Req::legacy(3, "tools/call").params(json!({"name": "t", "arguments": {}}));
    let answer = send(&router, call).await;
    assert_eq!(
        answer.ok(&json!(3)),
        &json!({"content": [{"type": "text", "text": "ok"}]})
    );

    let modern = Req::modern(4, "initialize").meta(json!({}));
    let answer = send(&router, modern).await;
    answer.error(StatusCode::NOT_FOUND, -32601, &json!(4));
}

/// The result of an `initialize` answered `200` to id 1: with the
/// `Mcp-Session-Id` token a server that announces changes gives every 2025
/// client (the key to its GET stream).
#[track_caller]
fn handshake_result(answer: &Reply) -> &serde_json::Value {
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert_eq!(answer.body["id"], 1, "{answer:?}");
    assert!(answer.headers.contains_key("mcp-session-id"), "{answer:?}");
    answer.result()
}

/// Issue 27 §3: an `initialize` whose `MCP-Protocol-Version` header names
/// an older revision than the server serves (the client's own default, sent
/// before anything was negotiated: older Python SDKs and the agents built on
/// them do) is negotiated from its body as the lifecycle says (the version
/// asked when served, else the latest 2025 one), not refused with the
/// `400` that a later request naming an unserved revision still gets.
#[tokio::test]
async fn an_initialize_naming_an_older_revision_in_its_header_is_negotiated() {
    let router = chain(server());
    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let handshake = initialize(version).set("MCP-Protocol-Version", version);
        let answer = send(&router, handshake).await;
        assert!(answer.rejections.is_empty(), "{version}: {answer:?}");
        assert_eq!(
            handshake_result(&answer)["protocolVersion"],
            "2025-11-25",
            "{version}"
        );
    }
    let all = chain(Server::builder().revisions(Revision::ALL).build().unwrap());
    let handshake = initialize("2025-06-18").set("MCP-Protocol-Version", "2025-06-18");
    let answer = send(&all, handshake).await;
    // A server that announces nothing gives no token.
    assert_eq!(answer.ok(&json!(1))["protocolVersion"], "2025-06-18");
    // Any later request is held to the revisions served.
    let ping = Req::legacy(2, "ping").set("MCP-Protocol-Version", "2025-03-26");
    let answer = send(&router, ping).await;
    answer.rejected("HeaderBinding", 400, -32600, &json!(2));
    assert_eq!(
        answer.body["error"]["data"],
        json!({"header": "MCP-Protocol-Version", "supported": ["2025-11-25", "2026-07-28"], "requested": "2025-03-26"})
    );
    // A header that names no revision at all is not a 2025 handshake's.
    let garbage = initialize("2025-11-25").set("MCP-Protocol-Version", "v999");
    let answer = send(&router, garbage).await;
    answer.rejected("ProtocolFields", 400, -32602, &json!(1));
}

/// Issue 27 §3: the flow of the public MCP server benchmark's k6 client
/// (`benchmark/benchmark.js` of the tmdevlab benchmark), with exactly its
/// headers (`Content-Type: application/json`,
/// `Accept: application/json, text/event-stream`, never an MCP header but
/// the `Mcp-Session-Id` it echoes when one is given): `initialize` asking
/// `2024-11-05`, `notifications/initialized` with no params, a `tools/call`
/// and a `tools/list` with no version header, then `DELETE` with the
/// session id, sent only when the server gave one. Its checks read the
/// call's result. The `DELETE` is `405` (`Allow: GET, POST`), the spec's
/// MAY for a server whose sessions a client cannot end: the token is no
/// session and nothing stored could revoke it, so answering it `2xx` would
/// promise the `404` the spec then requires. k6's own `http_req_failed`
/// counts that `405` (as it does a stateless peer's); the benchmark's own
/// checks do not.
#[tokio::test]
async fn the_public_benchmarks_flow_is_served_header_less_as_2025() {
    let router = chain(server());
    let post = |body: serde_json::Value, session: Option<&str>| {
        let req = Req::body(body);
        match session {
            Some(id) => req.set("Mcp-Session-Id", id),
            None => req,
        }
    };
    let answer = send(
        &router,
        post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {},
                "clientInfo": {"name": "k6-bench", "version": "1.0"}}}),
            None,
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert_eq!(answer.body["result"]["protocolVersion"], "2025-11-25");
    let session = answer
        .headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let session = session.as_deref();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = send(&router, post(initialized, session)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "t", "arguments": {}}});
    let answer = send(&router, post(call, session)).await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert_eq!(
        answer.body,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}})
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let answer = send(&router, post(list, session)).await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert_eq!(answer.body["result"]["tools"][0]["name"], "t");
    let id = session.expect("a server announcing changes gives a 2025 client a token");
    let delete = Req::new(http::Method::DELETE, "/mcp").set("Mcp-Session-Id", id);
    let answer = send(&router, delete).await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{answer:?}");
    assert_eq!(answer.header("allow"), "GET, POST");
}

/// Issue 27 §3: the public benchmark's flow (see
/// [`the_public_benchmarks_flow_is_served_header_less_as_2025`]) against
/// `examples/everything` as a child process, over one kept-alive
/// connection as k6 sends it: every answer but the `DELETE`'s `405` below
/// 400, the call's result what its check reads, twice (the
/// script runs one session per tool, then one for `tools/list`).
#[tokio::test]
async fn the_public_benchmarks_flow_through_examples_everything() {
    use wymcp_tests::child::Everything;
    use wymcp_tests::wire::{RawConn, RawRequest};
    let server = Everything::start(&[], &[]);
    let host = server.addr().to_string();
    let mut conn = RawConn::connect(server.addr()).await;
    let post = |body: serde_json::Value, session: Option<&str>| {
        let req = RawRequest::post("/mcp")
            .host(&host)
            .header("Accept", "application/json, text/event-stream")
            .json(body.to_string());
        match session {
            Some(id) => req.header("Mcp-Session-Id", id),
            None => req,
        }
    };
    for (id, method, params) in [
        (
            2,
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        ),
        (2, "tools/list", json!({})),
    ] {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "k6-bench", "version": "1.0"}}});
        let answer = conn.request(&post(initialize, None)).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.json()["result"]["protocolVersion"], "2025-11-25");
        let session = answer.header("mcp-session-id").map(str::to_owned);
        let session = session.as_deref();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = conn.request(&post(initialized, session)).await;
        assert_eq!(answer.status, 202, "{answer:?}");
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = conn.request(&post(request, session)).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let body = answer.json();
        assert_eq!(body["id"], id, "{body}");
        assert!(body.get("error").is_none(), "{body}");
        match method {
            "tools/call" => assert!(body["result"]["content"][0]["text"].is_string(), "{body}"),
            _ => assert!(body["result"]["tools"].is_array(), "{body}"),
        }
        let id = session.expect("everything announces changes: a 2025 client gets a token");
        let delete = RawRequest::new("DELETE", "/mcp")
            .host(&host)
            .header("Mcp-Session-Id", id);
        let answer = conn.request(&delete).await;
        assert_eq!(answer.status, 405, "{answer:?}");
        assert_eq!(answer.header("allow"), Some("GET, POST"), "{answer:?}");
    }
    assert_eq!(server.panics(), 0);
}

/// The rule docs/guide.md states for a 2025 message with no
/// `MCP-Protocol-Version` header: served as 2025, held to the newest 2025
/// revision served, whose schema accepts what a 2024-11-05, 2025-03-26 or
/// 2025-06-18 client sends (each 2025 revision only adds to the one before)
/// ... except a JSON-RPC batch, which only 2025-03-26 allowed: 400, -32600,
/// id null, as on every revision served.
#[tokio::test]
async fn what_older_clients_send_header_less_is_served() {
    let router = chain(server());
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "experimental": {}},
            "clientInfo": {"name": "old", "version": "0.1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "test://r"}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "resources/subscribe", "params": {"uri": "test://r"}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {"level": "info"}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list",
               "params": {"_meta": {"progressToken": "p"}}}),
    ];
    for request in requests {
        let id = request["id"].clone();
        let answer = send(&router, Req::body(request.clone())).await;
        assert!(answer.rejections.is_empty(), "{request}: {answer:?}");
        assert_eq!(answer.status, StatusCode::OK, "{request}: {answer:?}");
        assert_eq!(answer.body["id"], id, "{answer:?}");
        assert!(answer.body["result"].is_object(), "{request}: {answer:?}");
    }
    let notifications = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 4, "reason": "gone"}}),
    ];
    for notification in notifications {
        let answer = send(&router, Req::body(notification.clone())).await;
        assert_eq!(
            answer.status,
            StatusCode::ACCEPTED,
            "{notification}: {answer:?}"
        );
        assert!(answer.raw.is_empty() && answer.rejections.is_empty());
    }
    let batch = json!([{"jsonrpc": "2.0", "id": 9, "method": "ping"}]);
    send(&router, Req::body(batch)).await.rejected(
        "Validate",
        400,
        -32600,
        &serde_json::Value::Null,
    );
}
