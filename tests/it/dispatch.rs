//! Dispatch: method routing, removed and unknown methods, capability
//! gating, notifications, and `server/discover`.

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::{Era, Server, Tool, ToolResult};

use crate::support::{Req, assert_schema, chain, dispatch, send};

fn bare() -> Server {
    Server::builder().build().unwrap()
}

fn with_tool() -> Server {
    Server::builder()
        .info("dispatch-test", "1.2.3")
        .instructions("Use the echo tool.")
        .tool(
            Tool::new("echo")
                .description("echo")
                .raw_handler(|args, _| async move { Ok(ToolResult::text(args.to_string())) }),
        )
        .build()
        .unwrap()
}

/// Methods removed in 2026 and unknown ones are 404/-32601 on the 2026
/// wire, with the request's id.
#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    let server = with_tool();
    for (i, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
        "foo/bar",
        "tasks/get",
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(500 + i);
        let answer = dispatch(&server, Req::modern(id.clone(), method)).await;
        let error = answer.error(StatusCode::NOT_FOUND, -32601, &id);
        assert_eq!(error["data"]["method"], method);
    }
}

/// A method gated behind a capability the server does not advertise is
/// 404/-32601, and discover does not advertise it.
#[tokio::test]
async fn methods_of_unadvertised_capabilities_are_404() {
    let server = bare();
    for method in [
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "completion/complete",
    ] {
        let id = json!("s-1");
        let answer = dispatch(&server, Req::modern(id.clone(), method)).await;
        answer.error(StatusCode::NOT_FOUND, -32601, &id);
    }
    let discover = dispatch(&server, Req::modern(1, "server/discover")).await;
    assert_eq!(discover.ok(&json!(1))["capabilities"], json!({}));
    // With a tool registered, the tools methods are served.
    let answer = dispatch(&with_tool(), Req::modern(2, "tools/list")).await;
    assert!(answer.ok(&json!(2))["tools"].is_array());
}

/// A notification is accepted with 202 and an empty body, in either era.
#[tokio::test]
async fn notifications_are_202_with_an_empty_body() {
    let server = with_tool();
    for (era, method) in [
        (Era::Modern, "notifications/cancelled"),
        (Era::Modern, "notifications/whatever"),
        (Era::Legacy, "notifications/initialized"),
        (Era::Legacy, "notifications/roots/list_changed"),
    ] {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": {}});
        let answer = dispatch(&server, Req::body(message).bind(era)).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{method}");
        assert!(answer.raw.is_empty(), "{method}");
        assert!(answer.headers.get("content-type").is_none());
        assert!(answer.headers.get("mcp-session-id").is_none());
    }
}

/// Kinds Validate refuses are refused here too, for a chain without it:
/// 400/-32600 and a null id.
#[tokio::test]
async fn messages_that_are_not_requests_are_400_invalid_request() {
    let server = with_tool();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {}}),
    ] {
        let answer = dispatch(&server, Req::body(message).bind(Era::Modern)).await;
        answer.error(StatusCode::BAD_REQUEST, -32600, &Value::Null);
    }
}

/// `server/discover`: the served 2026 versions, capabilities, instructions,
/// caching hint, `resultType` and serverInfo in `_meta`; a valid
/// `DiscoverResult`.
#[tokio::test]
async fn discover_reports_versions_capabilities_and_identity() {
    let server = with_tool();
    let answer = dispatch(&server, Req::modern(7, "server/discover")).await;
    let result = answer.ok(&json!(7));
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    // `listChanged` by default: the catalog can change at run time.
    assert_eq!(
        result["capabilities"],
        json!({"tools": {"listChanged": true}})
    );
    assert_eq!(result["instructions"], "Use the echo tool.");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "dispatch-test", "version": "1.2.3"})
    );
    assert_schema("2026-07-28", "DiscoverResult", result);
    assert_schema("2026-07-28", "JSONRPCResultResponse", &answer.body);
}

/// The caching hint is configurable.
#[tokio::test]
async fn discover_carries_the_configured_cache_policy() {
    let server = Server::builder()
        .cache(60_000, wymcp::CacheScope::Public)
        .build()
        .unwrap();
    let answer = dispatch(&server, Req::modern(1, "server/discover")).await;
    let result = answer.ok(&json!(1));
    assert_eq!(
        (result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!(60_000), json!("public"))
    );
}

/// `server/discover` is a 2026 method: a 2025 client gets -32601 (in a 200,
/// as 2025 clients read errors).
#[tokio::test]
async fn discover_is_not_a_legacy_method() {
    let answer = dispatch(
        &with_tool(),
        Req::legacy(3, "server/discover").params(json!({})),
    )
    .await;
    answer.error(StatusCode::OK, -32601, &json!(3));
}

/// Through the default chain: removed and unknown methods with valid 2026
/// protocol fields reach Dispatch and are 404/-32601 with the id.
#[tokio::test]
async fn removed_methods_are_404_through_the_chain() {
    for (i, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "unknown/method",
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(600 + i);
        let answer = send(&chain(with_tool()), Req::modern(id.clone(), method)).await;
        answer.error(StatusCode::NOT_FOUND, -32601, &id);
    }
}

/// Through the default chain: a notification is 202 with an empty body; a
/// discover is a schema-valid result.
#[tokio::test]
async fn notifications_and_discover_through_the_chain() {
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}});
    let answer = send(
        &chain(with_tool()),
        Req::body(notification).bind(Era::Modern),
    )
    .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.raw.is_empty());
    let answer = send(&chain(with_tool()), Req::modern("d", "server/discover")).await;
    assert_schema("2026-07-28", "DiscoverResult", answer.ok(&json!("d")));
}
