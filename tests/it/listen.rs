//! `subscriptions/listen` end to end, through the default chain: the
//! acknowledgement first, every message tagged with the subscription id, the
//! filter honoured, list_changed on a catalog change at run time,
//! resources/updated for a watched resource, and a clean close; in-process
//! through `wymcp::testing`, and over a socket through a graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::fuzzing::meta::SUBSCRIPTION_ID;
use wymcp::{Context, NoArgs, Prompt, PromptResult, Resource, Server, Tool, ToolResult};

use wymcp::testing::{Client, Listen};

use crate::support::{assert_failure, assert_schema, chain, meta};

fn tool(name: &str) -> Tool {
    Tool::new(name)
        .raw_handler(|_args: Value, _cx: Context| async move { Ok(ToolResult::text("ok")) })
}

fn server() -> Arc<Server> {
    Arc::new(
        Server::builder()
            .tool(tool("first"))
            .prompt(
                Prompt::new("p")
                    .handler(|_: NoArgs, _cx| async move { Ok(PromptResult::new().user("hi")) }),
            )
            .resource(Resource::new("test://watched-resource", "watched").text("v1"))
            .build()
            .unwrap(),
    )
}

/// A listen stream of `server` asking for `notifications`, through the
/// default chain with `wymcp::testing`, with the headers a stream needs.
async fn listen(server: &Arc<Server>, notifications: Value) -> Listen {
    let stream = Client::new(server.clone())
        .listen(notifications)
        .await
        .unwrap();
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.headers["content-type"], "text/event-stream");
    assert_eq!(stream.headers["x-accel-buffering"], "no");
    assert!(stream.headers.get("mcp-session-id").is_none());
    stream
}

/// The next message, within 5 s.
async fn next(stream: &mut Listen) -> Value {
    stream.next().await.expect("a message within 5 s")
}

fn tag(message: &Value) -> &Value {
    &message["params"]["_meta"][SUBSCRIPTION_ID]
}

#[tokio::test]
async fn the_acknowledgement_comes_first_tagged_with_the_listen_id() {
    let server = server();
    let mut stream = listen(&server, json!({"toolsListChanged": true, "bogus": true})).await;
    let ack = next(&mut stream).await;
    assert_eq!(ack["jsonrpc"], "2.0");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert!(ack.get("id").is_none());
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(tag(&ack), &stream.request["id"]);
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_announced_to_streams_that_asked() {
    let server = server();
    let mut tools = listen(&server, json!({"toolsListChanged": true})).await;
    let mut prompts = listen(&server, json!({"promptsListChanged": true})).await;
    let _ = next(&mut tools).await;
    let _ = next(&mut prompts).await;
    server.catalog().add_tool(tool("second")).unwrap();
    let change = next(&mut tools).await;
    assert_eq!(
        change,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {SUBSCRIPTION_ID: tools.request["id"]}}})
    );
    // Filtered to prompts: the tool change never arrives.
    assert!(
        prompts
            .next_within(Duration::from_millis(200))
            .await
            .is_none()
    );
    server.catalog().remove_prompt("p");
    let change = next(&mut prompts).await;
    assert_eq!(change["method"], "notifications/prompts/list_changed");
    assert_eq!(tag(&change), &prompts.request["id"]);
    assert!(
        tools
            .next_within(Duration::from_millis(200))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn a_watched_resource_gets_updated_notifications() {
    let server = server();
    let mut stream = listen(
        &server,
        json!({"resourceSubscriptions": ["test://watched-resource"]}),
    )
    .await;
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://watched-resource"]})
    );
    server.notify_resource_updated("test://other");
    server.notify_resource_updated("test://watched-resource");
    let updated = next(&mut stream).await;
    assert_eq!(
        updated,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "test://watched-resource",
                          "_meta": {SUBSCRIPTION_ID: stream.request["id"]}}})
    );
}

/// The graceful close is the 2026-07-28 schema's own (as amended after the
/// release: `SubscriptionsListenResultResponse`, whose result is a
/// `SubscriptionsListenResult`: `resultType` and a `_meta` that requires
/// `io.modelcontextprotocol/subscriptionId`, the listen request's id), with
/// the server's identity in `_meta` as every 2026 result carries it.
#[tokio::test]
async fn closing_subscriptions_ends_each_stream_with_a_complete_result() {
    let server = server();
    let mut stream = listen(&server, json!({"toolsListChanged": true})).await;
    let _ = next(&mut stream).await;
    server.close_subscriptions();
    let last = next(&mut stream).await;
    let id = &stream.request["id"];
    assert_eq!(&last["id"], id);
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(&last["result"]["_meta"][SUBSCRIPTION_ID], id);
    assert!(
        last["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string(),
        "{last}"
    );
    assert_schema("2026-07-28", "SubscriptionsListenResultResponse", &last);
    assert_schema("2026-07-28", "SubscriptionsListenResult", &last["result"]);
    assert!(stream.ended().await);
}

#[tokio::test]
async fn a_listen_without_a_filter_object_is_invalid_params() {
    let failure = Client::new(server())
        .listen(json!([true]))
        .await
        .unwrap_err();
    assert_failure(&failure, StatusCode::BAD_REQUEST, -32602);
}

#[tokio::test]
async fn no_log_messages_ever_reach_a_listen_stream() {
    let server = server();
    let client = Client::new(server.clone());
    let debug = json!({"io.modelcontextprotocol/logLevel": "debug"});
    let mut stream = client
        .listen_with_meta(json!({"toolsListChanged": true}), debug)
        .await
        .unwrap();
    let _ = next(&mut stream).await;
    server.catalog().add_tool(tool("third")).unwrap();
    let change = next(&mut stream).await;
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert!(
        stream
            .next_within(Duration::from_millis(200))
            .await
            .is_none()
    );
}

/// Over a real socket, through a graceful shutdown: the listen stream ends
/// with its complete result and the end of the chunked body, and the server
/// stops instead of waiting forever on the open stream.
#[tokio::test]
async fn a_graceful_shutdown_ends_open_listen_streams_cleanly() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let closer = server.clone();
    let serving = tokio::spawn(
        wymcp::serve(listener, chain(server.clone()))
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                closer.close_subscriptions();
            })
            .into_future(),
    );

    let body = json!({"jsonrpc": "2.0", "id": "bye", "method": "subscriptions/listen", "params": {
        "_meta": meta(), "notifications": {"toolsListChanged": true},
    }})
    .to_string();
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("subscriptions/acknowledged") {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    stop.send(()).unwrap();
    // Read to the end of the connection.
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .expect("the stream ended in time")
            .unwrap();
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    let at = text.find(r#""result":"#).expect("a result on the stream");
    let result = &text[at..];
    assert!(result.contains(r#""resultType":"complete""#), "{text}");
    assert!(
        result.contains(r#""io.modelcontextprotocol/subscriptionId":"bye""#),
        "{text}"
    );
    assert!(
        text.ends_with("0\r\n\r\n"),
        "the chunked body was ended: {text:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server shut down")
        .unwrap()
        .unwrap();
}

/// Rule (issue 27 §1, as the 2025 GET stream): a listen stream tells of an
/// update only as the caller's scopes permit the resource it names, as
/// lists filter, whether the URI was asked for itself or lies beneath a
/// watched prefix; a lagging stream's catch-up passes it over too.
#[tokio::test]
async fn updates_are_told_only_as_the_callers_scopes_permit() {
    use wymcp::auth::{AuthConfig, Principal, StaticTokens};
    let tokens = StaticTokens::new()
        .token("narrow", Principal::new("narrow", Vec::<String>::new()))
        .token("wide", Principal::new("wide", ["secret"]));
    let server = Arc::new(
        Server::builder()
            .resource(Resource::new("test://r", "r").text("r"))
            .resource(
                Resource::new("test://secret", "s")
                    .text("s")
                    .scopes(["secret"]),
            )
            .auth(tokens, AuthConfig::new())
            .build()
            .unwrap(),
    );
    let watch = json!({"resourceSubscriptions": ["test://secret", "test://"]});
    let mut narrow = Client::new(server.clone())
        .bearer("narrow")
        .listen(watch.clone())
        .await
        .unwrap();
    let mut wide = Client::new(server.clone())
        .bearer("wide")
        .listen(watch)
        .await
        .unwrap();
    for stream in [&mut narrow, &mut wide] {
        let ack = next(stream).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    server.notify_resource_updated("test://secret");
    server.notify_resource_updated("test://r");
    let uri = |m: Value| m["params"]["uri"].as_str().unwrap_or_default().to_owned();
    assert_eq!(uri(next(&mut narrow).await), "test://r");
    assert_eq!(uri(next(&mut wide).await), "test://secret");
    assert_eq!(uri(next(&mut wide).await), "test://r");
    assert!(
        narrow
            .next_within(Duration::from_millis(200))
            .await
            .is_none()
    );
}
