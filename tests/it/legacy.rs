//! The legacy path for 2025 clients: initialize, ping, logging/setLevel,
//! notifications/initialized, subscribe acknowledgements, and 2025 results.

use http::StatusCode;
use serde_json::json;
use wymcp::NoArgs;
use wymcp::{Era, Resource, Revision, Server, Tool, ToolResult};

use crate::support::{Req, assert_schema, chain, dispatch, send};

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
    let answer = dispatch(&both, initialize("2025-06-18")).await;
    assert_eq!(answer.ok(&json!(1))["protocolVersion"], "2025-06-18");
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
