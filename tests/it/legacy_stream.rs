//! The 2025 standalone GET stream, served statelessly (issue 27 §1): a 2025
//! client's `initialize` gets a session token naming its streams; a GET
//! with it runs the chain's wire checks, then opens an SSE stream of every
//! list change and of `resources/updated` for what the session subscribes
//! to while the stream is open; each refusal's status, code, id and
//! headers; the stream's ends (token expiry, shutdown, its place).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::testing::{Client, Failure, Listen};
use wymcp::{ListenLimits, NoArgs, Prompt, PromptResult, Resource, Server, Tool, ToolResult};

use crate::support::{Req, chain, heard, send};

fn tool(name: &str) -> Tool {
    Tool::new(name).handler(|_: NoArgs, _| async { Ok(ToolResult::text("ok")) })
}

fn builder() -> wymcp::ServerBuilder {
    Server::builder()
        .tool(tool("t"))
        .prompt(
            Prompt::new("p")
                .handler(|_: NoArgs, _cx| async move { Ok(PromptResult::new().user("hi")) }),
        )
        .resource(Resource::new("test://r", "r").text("r"))
}

fn server() -> Arc<Server> {
    Arc::new(builder().build().unwrap())
}

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    Principal::new(subject, scopes.iter().copied())
}

/// A server with callers `alice` (scope `a`), `bob` (scope `a`), `narrow`
/// (no scope) and `brief` (whose token expires in 2 s), and a resource
/// that needs scope `secret`.
fn authenticated() -> Arc<Server> {
    authenticated_with(ListenLimits::default())
}

/// [`authenticated`] with these stream limits.
fn authenticated_with(limits: ListenLimits) -> Arc<Server> {
    let mut brief = principal("brief", &["a"]);
    brief.expires_at = Some(SystemTime::now() + Duration::from_secs(2));
    let tokens = StaticTokens::new()
        .token("alice", principal("alice", &["a"]))
        .token("bob", principal("bob", &["a"]))
        .token("narrow", principal("narrow", &[]))
        .token("brief", brief);
    Arc::new(
        builder()
            .resource(
                Resource::new("test://secret", "s")
                    .text("s")
                    .scopes(["secret"]),
            )
            .auth(tokens, AuthConfig::new())
            .listen_limits(limits)
            .build()
            .unwrap(),
    )
}

/// A 2025 client's `initialize` (declaring nothing a server may ask):
/// the result and the session token.
async fn initialize(client: &Client) -> (Value, String) {
    let answer = client
        .send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}}),
        )
        .await;
    let result = answer.result().unwrap().clone();
    let token = answer.header("mcp-session-id").to_owned();
    (result, token)
}

/// A 2025 client of `server` (with `bearer`, when given), initialized:
/// the client and its token.
async fn initialized(server: &Arc<Server>, bearer: Option<&str>) -> (Client, String) {
    let mut client = Client::new(server.clone()).legacy();
    if let Some(bearer) = bearer {
        client = client.bearer(bearer);
    }
    let (_, token) = initialize(&client).await;
    (client, token)
}

async fn open(client: &Client, token: &str) -> Listen {
    let stream = client
        .open_stream(token, &[])
        .await
        .expect("the stream opens");
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.headers["content-type"], "text/event-stream");
    stream
}

/// Subscribes (or unsubscribes) `uri` with the session `token`.
async fn subscription(
    client: &Client,
    token: &str,
    method: &str,
    uri: &str,
) -> wymcp::testing::Transcript {
    client
        .send_with(method, json!({"uri": uri}), &[("mcp-session-id", token)])
        .await
}

/// Asserts a refusal of the GET: its status, code, null id, and the JSON
/// envelope.
#[track_caller]
fn refused(failure: &Failure, status: StatusCode, code: i64) {
    assert_eq!(failure.status, status, "{failure:?}");
    assert_eq!(failure.code, Some(code), "{failure:?}");
    let message = failure.exchange.response().expect("a JSON-RPC error");
    assert_eq!(message["id"], Value::Null, "{message}");
    assert!(message.get("result").is_none());
}

/// Rule (issue 27 §1): a 2025 `initialize` advertises `listChanged` and
/// `subscribe`, and mints a token even for a client that declared nothing
/// a server may ask mid-call.
#[tokio::test]
async fn initialize_advertises_notifications_and_mints_a_token() {
    let server = server();
    let (result, token) = initialize(&Client::new(server.clone()).legacy()).await;
    assert_eq!(
        result["capabilities"],
        json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true},
               "resources": {"listChanged": true, "subscribe": true}, "logging": {}})
    );
    assert!(!token.is_empty());
    // The token still opens for everything else the client sends.
    let client = Client::new(server).legacy();
    let listed = client
        .send_with("tools/list", json!({}), &[("mcp-session-id", &token)])
        .await;
    assert!(listed.result().is_ok(), "{listed:?}");
}

/// Rule (issue 27, what must hold): a 2025 client on its GET stream hears
/// `tools/list_changed` and `prompts/list_changed` within a second of a
/// change made through another connection; untagged, with no id.
#[tokio::test]
async fn a_get_stream_hears_list_changes_made_elsewhere() {
    let server = server();
    let (client, token) = initialized(&server, None).await;
    let mut stream = open(&client, &token).await;
    server.catalog().add_tool(tool("added")).unwrap();
    let event = stream
        .next_within(Duration::from_secs(1))
        .await
        .expect("a list_changed within 1 s");
    assert_eq!(
        event,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    server.notify_prompts_changed();
    server.notify_resources_changed();
    assert_eq!(
        heard(&mut stream, Duration::from_millis(300)).await,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed"
        ]
    );
}

/// Rule (issue 27 §1): a subscribe reaches the session's open stream, and
/// what lies beneath the URI; an unsubscribe stops it. A subscribe made
/// before any stream was open is not remembered (nothing is stored): the
/// stream opened after it hears nothing until the client subscribes again.
#[tokio::test]
async fn subscriptions_reach_the_open_stream_and_only_it() {
    let server = server();
    let (client, token) = initialized(&server, None).await;
    let early = subscription(&client, &token, "resources/subscribe", "test://r").await;
    assert_eq!(early.result().unwrap(), &json!({}));
    let mut stream = open(&client, &token).await;
    server.notify_resource_updated("test://r");
    assert!(
        heard(&mut stream, Duration::from_millis(300))
            .await
            .is_empty(),
        "a subscribe before the stream opened is not remembered"
    );
    let again = subscription(&client, &token, "resources/subscribe", "test://r").await;
    assert_eq!(again.result().unwrap(), &json!({}));
    server.notify_resource_updated("test://r");
    server.notify_resource_updated("test://r/part");
    server.notify_resource_updated("test://other");
    let event = stream.next_within(Duration::from_secs(1)).await.unwrap();
    assert_eq!(
        event,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "test://r"}})
    );
    assert_eq!(
        heard(&mut stream, Duration::from_millis(300)).await,
        ["notifications/resources/updated test://r/part"]
    );
    // Another session's stream hears none of it.
    let (other, other_token) = initialized(&server, None).await;
    let mut elsewhere = open(&other, &other_token).await;
    let off = subscription(&client, &token, "resources/unsubscribe", "test://r").await;
    assert_eq!(off.result().unwrap(), &json!({}));
    server.notify_resource_updated("test://r");
    assert!(
        heard(&mut stream, Duration::from_millis(300))
            .await
            .is_empty()
    );
    assert!(
        heard(&mut elsewhere, Duration::from_millis(50))
            .await
            .is_empty()
    );
}

/// Rule (issue 27 §1): a subscribe is held to the listen streams' URI
/// bound (-32602, `data.limit`), and to the resource's scopes as
/// `resources/read` is (403, `insufficient_scope`); and a stream is told of
/// an update only as its caller's scopes permit (a watched prefix covers
/// URIs no subscribe named). Without a token a subscribe is acknowledged
/// and reaches nothing.
#[tokio::test]
async fn a_subscribe_is_bounded_and_held_to_the_resources_scopes() {
    let server = authenticated();
    let (client, token) = initialized(&server, Some("narrow")).await;
    let mut stream = open(&client, &token).await;
    let forbidden = subscription(&client, &token, "resources/subscribe", "test://secret").await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN);
    assert!(
        forbidden
            .header("www-authenticate")
            .contains("insufficient_scope")
    );
    assert_eq!(forbidden.response().unwrap()["id"], forbidden.request["id"]);
    server.notify_resource_updated("test://secret");
    assert!(
        heard(&mut stream, Duration::from_millis(300))
            .await
            .is_empty()
    );
    // A prefix names no resource, so it is not refused; what lies beneath
    // it is still told only as the caller's scopes permit.
    let prefix = subscription(&client, &token, "resources/subscribe", "test://").await;
    assert_eq!(prefix.result().unwrap(), &json!({}));
    server.notify_resource_updated("test://secret");
    server.notify_resource_updated("test://r");
    assert_eq!(
        heard(&mut stream, Duration::from_millis(300)).await,
        ["notifications/resources/updated test://r"]
    );
    let long = format!(
        "test://{}",
        "x".repeat(ListenLimits::default().max_uri_bytes)
    );
    let over = subscription(&client, &token, "resources/subscribe", &long).await;
    assert_eq!(over.response().unwrap()["id"], over.request["id"]);
    assert!(over.header("mcp-session-id").is_empty(), "{over:?}");
    let error = over.result().unwrap_err();
    // A 2025 method's error is answered on a 200, as its era answers one.
    assert_eq!(error.status, StatusCode::OK, "{error:?}");
    assert_eq!(error.code, Some(-32602));
    assert_eq!(error.data.unwrap()["limit"], "max_uri_bytes");
    let untokened = client
        .send("resources/subscribe", json!({"uri": "test://r"}))
        .await;
    assert_eq!(untokened.result().unwrap(), &json!({}));
}

/// Rule (issue 27 §1): the GET runs the chain's wire checks, with their
/// usual answers and a null id: auth's 401 with its challenge, the origin
/// check's 403, an unserved 2025 version's 400.
#[tokio::test]
async fn the_get_runs_the_chains_wire_checks() {
    let server = authenticated();
    let (_, token) = initialized(&server, Some("alice")).await;
    let anonymous = Client::new(server.clone()).legacy();
    let unauthorized = anonymous.open_stream(&token, &[]).await.unwrap_err();
    refused(&unauthorized, StatusCode::UNAUTHORIZED, -32600);
    assert!(
        unauthorized
            .exchange
            .header("www-authenticate")
            .starts_with("Bearer")
    );
    let get = || {
        Req::get("/mcp")
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &token)
            .bearer("alice")
    };
    let origin = send(
        &chain(server.clone()),
        get().header("Origin", "https://evil.example"),
    )
    .await;
    origin.rejected("OriginCheck", 403, -32600, &Value::Null);
    let version = send(
        &chain(server.clone()),
        get().header("MCP-Protocol-Version", "2024-01-01"),
    )
    .await;
    version.rejected("HeaderBinding", 400, -32600, &Value::Null);
}

/// Rule (issue 27 §1): what a GET answers past the wire checks, each arm
/// with its status, code, null id and headers.
#[tokio::test]
async fn every_refusal_of_the_get_is_pinned() {
    let server = authenticated();
    let (alice, token) = initialized(&server, Some("alice")).await;
    let get = || {
        Req::get("/mcp")
            .header("Mcp-Session-Id", &token)
            .bearer("alice")
    };
    // 2026-07-28 has no GET stream.
    let modern = send(
        &chain(server.clone()),
        get()
            .header("Accept", "text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28"),
    )
    .await;
    assert_eq!(modern.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(modern.header("allow"), "POST");
    // An Accept without text/event-stream.
    let json_only = send(
        &chain(server.clone()),
        get().header("Accept", "application/json"),
    )
    .await;
    json_only.rejected("open_stream", 406, -32600, &Value::Null);
    // No session token.
    let bare = Req::get("/mcp").header("Accept", "*/*").bearer("alice");
    send(&chain(server.clone()), bare)
        .await
        .rejected("open_stream", 400, -32600, &Value::Null);
    // A token that does not open: forged, or another subject's.
    refused(
        &alice.open_stream("forged", &[]).await.unwrap_err(),
        StatusCode::NOT_FOUND,
        -32600,
    );
    let bob = Client::new(server.clone()).legacy().bearer("bob");
    let stolen = bob.open_stream(&token, &[]).await.unwrap_err();
    refused(&stolen, StatusCode::NOT_FOUND, -32600);
    assert_eq!(stolen.data.unwrap()["reason"], "session");
    // DELETE (and HEAD, which would open a stream no one reads) stay 405,
    // naming both served verbs.
    let head = send(
        &chain(server.clone()),
        Req::new(Method::HEAD, "/mcp")
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &token)
            .bearer("alice"),
    )
    .await;
    assert_eq!(head.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(head.header("allow"), "GET, POST");
    let delete = send(
        &chain(server.clone()),
        Req::new(Method::DELETE, "/mcp").header("Mcp-Session-Id", &token),
    )
    .await;
    assert_eq!(delete.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(delete.header("allow"), "GET, POST");
}

/// Rule (issue 27 §1): a server that announces nothing serves no GET
/// stream: GET and DELETE are 405 `Allow: POST`, and `initialize`
/// advertises nothing to listen for.
#[tokio::test]
async fn a_server_without_notifications_serves_no_get() {
    let server = Arc::new(builder().without_notifications().build().unwrap());
    for verb in [Method::GET, Method::DELETE] {
        let reply = send(
            &chain(server.clone()),
            Req::new(verb.clone(), "/mcp").header("Accept", "text/event-stream"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{verb}");
        assert_eq!(reply.header("allow"), "POST", "{verb}");
    }
    let answer = Client::new(server)
        .legacy()
        .send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "c", "version": "1"}}),
        )
        .await;
    assert_eq!(answer.result().unwrap()["capabilities"]["tools"], json!({}));
    assert!(answer.headers.get("mcp-session-id").is_none());
}

/// Rule (issue 27 §1): a GET stream is a place of the ledger's
/// `LegacyStreams`: over the caller's share is 429 with `Retry-After`,
/// and closing one gives the place back.
#[tokio::test]
async fn a_caller_over_its_share_of_get_streams_is_429() {
    let server = Arc::new(
        builder()
            .listen_limits(ListenLimits::default().max_streams_per_caller(1))
            .build()
            .unwrap(),
    );
    let (client, token) = initialized(&server, None).await;
    let first = open(&client, &token).await;
    assert_eq!(server.ledger().held(wymcp::ledger::Kind::LegacyStreams), 1);
    let second = client.open_stream(&token, &[]).await.unwrap_err();
    refused(&second, StatusCode::TOO_MANY_REQUESTS, -32600);
    assert_eq!(second.exchange.header("retry-after"), "10");
    assert_eq!(second.data.unwrap()["limit"], "max_streams_per_caller");
    drop(first);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.ledger().held(wymcp::ledger::Kind::LegacyStreams), 0);
    let _third = open(&client, &token).await;
}

/// Rule (issue 27 §1): the stream ends cleanly (the end of the SSE, no
/// result: a 2025 stream just ends) on shutdown, and at its credentials'
/// expiry.
#[tokio::test]
async fn the_stream_ends_on_shutdown_and_at_token_expiry() {
    let server = authenticated();
    let (client, token) = initialized(&server, Some("alice")).await;
    let mut stream = open(&client, &token).await;
    assert_eq!(server.close_subscriptions(), 1);
    assert!(stream.ended().await, "the stream ends at shutdown");
    let (brief, brief_token) = initialized(&server, Some("brief")).await;
    let mut stream = open(&brief, &brief_token).await;
    let started = std::time::Instant::now();
    assert!(
        stream.ended().await,
        "the stream ends at its token's expiry"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
}

/// Rule (issue 27 §1): nothing is kept for `Last-Event-ID`: a client
/// resuming is told conservatively at once, a list_changed for every list.
#[tokio::test]
async fn last_event_id_is_told_conservatively() {
    let server = server();
    let (client, token) = initialized(&server, None).await;
    let mut stream = client
        .open_stream(&token, &[("last-event-id", "7")])
        .await
        .unwrap();
    assert_eq!(
        heard(&mut stream, Duration::from_millis(300)).await,
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed"
        ]
    );
}

/// Rule (issue 27 §1): `examples/everything`, a real process over a
/// socket, advertises `listChanged` to a 2025 client and serves its GET
/// stream: a tool added through another connection
/// (`test_trigger_tool_change`) is heard on it within a second.
#[tokio::test]
async fn everything_serves_a_2025_clients_get_stream() {
    use wymcp_tests::child::Everything;
    use wymcp_tests::wire::{RawConn, RawRequest};

    let server = Everything::start(&[], &[]);
    let addr = server.addr();
    let host = addr.to_string();
    let post = |body: Value, legacy_header: bool| {
        let mut request = RawRequest::post("/mcp")
            .host(&host)
            .header("Accept", "application/json, text/event-stream");
        if legacy_header {
            request = request.header("MCP-Protocol-Version", "2025-11-25");
        }
        request.json(serde_json::to_vec(&body).unwrap())
    };
    let mut conn = RawConn::connect(addr).await;
    let init = conn
        .request(&post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "c", "version": "1"}}}),
            false,
        ))
        .await;
    assert_eq!(init.status, 200);
    assert_eq!(
        init.json()["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    let token = init
        .header("mcp-session-id")
        .expect("a session token")
        .to_owned();
    let mut stream = RawConn::connect(addr).await;
    let get = RawRequest::new("GET", "/mcp")
        .host(&host)
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &token);
    stream.send(&get.head()).await.unwrap();
    let head = stream
        .head(Duration::from_secs(5))
        .await
        .expect("the stream's head");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let mut other = RawConn::connect(addr).await;
    let added = other
        .request(&post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "test_trigger_tool_change", "arguments": {}}}),
            true,
        ))
        .await;
    assert_eq!(added.status, 200);
    assert!(
        stream
            .read_until(b"notifications/tools/list_changed", Duration::from_secs(1))
            .await,
        "the change is heard on the GET stream within 1 s"
    );
}

/// Rule (issue 27 §1): at the server's cap of GET streams, a caller that
/// would take the place of nobody's over its fair share is `503`, -32603,
/// `Retry-After`, id null.
#[tokio::test]
async fn at_the_cap_of_get_streams_a_newcomer_is_503() {
    let server = authenticated_with(ListenLimits::default().max_streams(1));
    let (alice, alices) = initialized(&server, Some("alice")).await;
    let _open = open(&alice, &alices).await;
    let (bob, bobs) = initialized(&server, Some("bob")).await;
    let full = bob.open_stream(&bobs, &[]).await.unwrap_err();
    refused(&full, StatusCode::SERVICE_UNAVAILABLE, -32603);
    assert_eq!(full.exchange.header("retry-after"), "10");
    assert_eq!(full.data.unwrap()["limit"], "max_streams");
}
