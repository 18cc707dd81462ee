//! `wymcp::testing::Client`: the in-process client an application's tests
//! drive its server with. Each test names the rule it pins: what a client
//! of each era sends (headers, `_meta`, the `Mcp-Param-*` a tool's
//! annotations ask for), and what it reads back (results, failures,
//! notifications of an SSE answer, a listen stream, an MRTR round).

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::mrtr::InputRequest;
use wymcp::testing::Client;
use wymcp::{
    Completions, Context, HandlerError, Prompt, PromptArgs, PromptResult, Resource,
    ResourceContents, Server, Tool, ToolResult,
};

/// Answers what it was given, after two progress steps.
#[wymcp::tool]
async fn echo(text: String, cx: Context) -> ToolResult {
    cx.progress(1.0, Some(2.0), None);
    cx.progress(2.0, Some(2.0), Some("done"));
    ToolResult::text(text)
}

/// Asks the client for a name, then greets it.
#[wymcp::tool]
async fn greet(cx: Context) -> Result<ToolResult, HandlerError> {
    if let Some(name) = cx.inputs().accepted("who").and_then(|c| c.get("name")) {
        return Ok(ToolResult::text(format!(
            "Hello, {}!",
            name.as_str().unwrap_or("?")
        )));
    }
    let ask = cx.input_required().request(
        "who",
        InputRequest::elicit(
            "Who?",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        ),
    )?;
    Err(ask.into())
}

fn server() -> Arc<Server> {
    let regional = Tool::new("regional")
        .input_schema(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
        }}))
        .raw_handler(|args: Value, _| async move { Ok(ToolResult::text(args.to_string())) });
    Arc::new(
        Server::builder()
            .tool(echo_tool())
            .tool(greet_tool())
            .tool(regional)
            .resource(
                Resource::new("memo://one", "one").handler(|uri: String, _| async move {
                    Ok(vec![ResourceContents::text(uri, "the first memo")])
                }),
            )
            .prompt(Prompt::new("hello").argument("name", "Who").handler(
                |args: PromptArgs, _| async move {
                    Ok(PromptResult::new().user(format!("Say hello to {}", args["name"])))
                },
            ))
            .completion(|request, _| async move {
                Ok(Completions::matching(
                    &request.value,
                    ["ada", "alan", "grace"],
                ))
            })
            .build()
            .unwrap(),
    )
}

/// Rule: a 2026 client binds the standard headers to the body and puts the
/// protocol version and its capabilities in `_meta`; the result is a 2026
/// one (`resultType`).
#[tokio::test]
async fn a_2026_client_sends_headers_and_meta() {
    let client = Client::new(server()).capabilities(json!({"elicitation": {}}));
    let called = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(called.text(), "hi");
    assert!(!called.is_error());
    assert_eq!(called.result["resultType"], "complete");
    let meta = &called.exchange.request["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(called.exchange.status, StatusCode::OK);
    assert_eq!(called.exchange.header("content-type"), "application/json");
}

/// Rule: a 2025 client sends no `_meta` and `MCP-Protocol-Version:
/// 2025-11-25`; its results are 2025 results.
#[tokio::test]
async fn a_2025_client_sends_no_meta() {
    let client = Client::new(server()).legacy();
    let called = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(called.text(), "hi");
    assert!(called.exchange.request["params"].get("_meta").is_none());
    assert!(
        called.result.get("resultType").is_none(),
        "{}",
        called.result
    );
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 3);
}

/// Rule: a client of the server sends the `Mcp-Param-*` headers its tools'
/// `x-mcp-header` annotations ask for, so HeaderBinding lets the call
/// through; one sent over a bare router cannot, and fails with -32020.
#[tokio::test]
async fn the_client_sends_the_headers_a_tool_annotates() {
    let server = server();
    let arguments = json!({"region": "eu west", "count": 3});
    let called = Client::new(server.clone())
        .call_tool("regional", arguments.clone())
        .await
        .unwrap();
    assert_eq!(called.text(), arguments.to_string());

    let bare = Client::over(wymcp::chain::post::router(server));
    let failure = bare.call_tool("regional", arguments).await.unwrap_err();
    assert_eq!(
        (failure.status, failure.code),
        (StatusCode::BAD_REQUEST, Some(-32020))
    );
}

/// Rule: an answer that is no result is a `Failure` with its status, code
/// and message, in either era's status.
#[tokio::test]
async fn an_error_is_a_failure_with_its_status_and_code() {
    let client = Client::new(server());
    let failure = client.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(
        (failure.status, failure.code),
        (StatusCode::BAD_REQUEST, Some(-32602))
    );
    assert!(failure.to_string().contains("nope"), "{failure}");
    let failure = client
        .legacy()
        .call_tool("nope", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (failure.status, failure.code),
        (StatusCode::OK, Some(-32602))
    );
}

/// Rule: with a `progressToken`, the answer is an SSE stream: its
/// notifications come before the result, both read.
#[tokio::test]
async fn progress_notifications_are_read_before_the_result() {
    for client in [Client::new(server()), Client::new(server()).legacy()] {
        let called = client
            .call_tool_with_meta("echo", json!({"text": "hi"}), json!({"progressToken": "p"}))
            .await
            .unwrap();
        assert_eq!(called.exchange.header("content-type"), "text/event-stream");
        let progress: Vec<&Value> = called.notifications().collect();
        assert_eq!(progress.len(), 2, "{:?}", called.exchange.messages);
        assert_eq!(progress[1]["params"]["message"], "done");
        assert_eq!(called.text(), "hi");
    }
}

/// Rule: an MRTR round is finished by sending the answers and the round's
/// `requestState` back.
#[tokio::test]
async fn an_mrtr_round_is_finished() {
    let client = Client::new(server()).capabilities(json!({"elicitation": {}}));
    let round = client.call_tool("greet", json!({})).await.unwrap();
    let asked = round.input_requests().expect("the tool asks");
    assert_eq!(asked["who"]["method"], "elicitation/create");
    let answers = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let done = client.finish_round(&round, answers).await.unwrap();
    assert_eq!(done.text(), "Hello, Ada!");
    assert!(done.input_requests().is_none());
}

/// Rule: resources, prompts and completion are read as their results say.
#[tokio::test]
async fn resources_prompts_and_completion() {
    for client in [Client::new(server()), Client::new(server()).legacy()] {
        let contents = client.read_resource("memo://one").await.unwrap();
        assert_eq!(contents[0]["text"], "the first memo");
        assert_eq!(
            client.list_resources().await.unwrap()[0]["uri"],
            "memo://one"
        );
        let prompt = client
            .get_prompt("hello", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(prompt["messages"][0]["content"]["text"], "Say hello to Ada");
        assert_eq!(client.list_prompts().await.unwrap()[0]["name"], "hello");
        let values = client
            .complete(json!({"type": "ref/prompt", "name": "hello"}), "name", "a")
            .await
            .unwrap();
        assert_eq!(values, ["ada", "alan"]);
    }
}

/// Rule: a listen stream is acknowledged first, then carries what changes.
#[tokio::test]
async fn a_listen_stream_carries_what_changes() {
    let server = server();
    let client = Client::new(server.clone());
    let mut listen = client
        .listen(json!({"toolsListChanged": true}))
        .await
        .unwrap();
    assert_eq!(listen.status, StatusCode::OK);
    let ack = listen.next().await.expect("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    server.notify_tools_changed();
    let changed = listen.next().await.expect("a change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(server.close_subscriptions(), 1);
    let last = listen.next().await.expect("the listen's result");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert!(listen.ended().await);

    // A 2025 client has no listen.
    let failure = client
        .legacy()
        .listen(json!({"toolsListChanged": true}))
        .await
        .unwrap_err();
    assert_eq!(failure.code, Some(-32601), "{failure}");
}
