//! Tools: typed and verbatim schemas, argument handling, results, the
//! outputSchema check, MRTR rounds, and the `x-mcp-header` rules checked at
//! registration.

#![allow(clippy::needless_pass_by_value)]

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::mrtr::InputRequest;
use wymcp::{BuildError, HandlerError, Server, Tool, ToolResult};
use wymcp::{NoArgs, SurfaceError};

use wymcp::testing::Transcript;

use crate::support::{assert_failure, assert_schema, meta, surface};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

fn verbatim_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"city": {"type": "string"}}}},
        "properties": {"address": {"$ref": "#/$defs/address"}, "n": {"type": "integer", "minimum": 1}},
        "allOf": [{"anyOf": [{"required": ["address"]}, {"required": ["n"]}]}],
        "if": {"required": ["n"]}, "then": {"properties": {"n": {"maximum": 9}}}, "else": {},
        "additionalProperties": false
    })
}

fn server() -> Arc<Server> {
    let server = Server::builder()
        .tool(
            Tool::new("add")
                .description("Adds two integers")
                .handler(|args: Add, _| async move {
                    Ok(ToolResult::text((args.a + args.b).to_string()))
                }),
        )
        .tool(
            Tool::new("none")
                .description("Takes nothing")
                .handler(|_: NoArgs, _| async { Ok(ToolResult::text("ok")) }),
        )
        .tool(
            Tool::new("verbatim")
                .description("A verbatim schema")
                .input_schema(verbatim_schema())
                .raw_handler(|args, _| async move { Ok(ToolResult::text(args.to_string())) }),
        )
        .tool(
            Tool::new("fails")
                .description("Fails")
                .handler(|_: NoArgs, _| async { Err::<ToolResult, _>(HandlerError::execution("the disk is full")) }),
        )
        .tool(
            Tool::new("structured")
                .description("Answers per its outputSchema, or not")
                .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}))
                .raw_handler(|args, _| async move {
                    let value = if args["good"] == true { json!({"sum": 3}) } else { json!({"sum": "three"}) };
                    Ok(ToolResult::structured(value))
                }),
        )
        .tool(
            Tool::new("ask")
                .description("MRTR: asks for a name")
                .handler(|_: NoArgs, cx| async move {
                    if let Some(name) = cx.inputs().accepted("who").and_then(|c| c.get("name")) {
                        let round = String::from_utf8_lossy(cx.inputs().state().unwrap_or_default()).into_owned();
                        return Ok(ToolResult::text(format!("{round}: {name}")));
                    }
                    let ask = cx
                        .input_required()
                        .request("who", InputRequest::elicit("Who?", json!({"type": "object", "properties": {"name": {"type": "string"}}})))?
                        .state(b"round-1".to_vec());
                    Err(ask.into())
                }),
        )
        .build()
        .unwrap();
    Arc::new(server)
}

/// A `tools/call` of `params` as the surface answers it.
async fn call(server: &Arc<Server>, params: Value) -> Transcript {
    surface(server.clone()).send("tools/call", params).await
}

/// tools/list: typed schemas derived from the argument type, verbatim ones
/// listed exactly as given; a valid ListToolsResult with the caching hint.
#[tokio::test]
async fn tools_list_lists_derived_and_verbatim_schemas() {
    let server = server();
    let answer = surface(server.clone()).send("tools/list", json!({})).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ListToolsResult", result);
    assert_eq!(
        (result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["add", "none", "verbatim", "fails", "structured", "ask"]
    );
    let add = &tools[0]["inputSchema"];
    assert_eq!(add["type"], "object");
    assert_eq!(add["properties"]["a"]["type"], "integer");
    assert_eq!(add["required"], json!(["a", "b"]));
    assert_eq!(tools[1]["inputSchema"]["type"], "object");
    assert!(tools[1]["inputSchema"].get("properties").is_none());
    assert_eq!(tools[2]["inputSchema"], verbatim_schema());
    assert!(tools[4]["outputSchema"].is_object());
}

/// A typed call runs the handler with the deserialised arguments.
#[tokio::test]
async fn typed_call_answers_a_complete_result() {
    let answer = call(
        &server(),
        json!({"name": "add", "arguments": {"a": 2, "b": 40}}),
    )
    .await;
    let result = answer.result().unwrap();
    assert_eq!(result["content"], json!([{"type": "text", "text": "42"}]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "wymcp"
    );
    assert!(result.get("isError").is_none());
    assert!(
        result.get("ttlMs").is_none(),
        "a call result is not cacheable"
    );
    assert_schema("2026-07-28", "CallToolResult", result);
}

/// A missing `arguments` is an empty object.
#[tokio::test]
async fn missing_arguments_are_an_empty_object() {
    let answer = call(&server(), json!({"name": "none"})).await;
    assert_eq!(answer.result().unwrap()["content"][0]["text"], "ok");
    // ... and so a typed tool that needs arguments answers a tool input
    // error, which the model sees (SEP-1303).
    let answer = call(&server(), json!({"name": "add"})).await;
    assert_eq!(answer.result().unwrap()["isError"], true);
}

/// Arguments that break the schema are a result with `isError: true`
/// naming the JSON pointer and what was expected (SEP-1303); arguments
/// that are not an object are the protocol's -32602.
#[tokio::test]
async fn bad_arguments_are_tool_input_errors() {
    let server = server();
    for (params, pointer) in [
        (
            json!({"name": "add", "arguments": {"a": "two", "b": 1}}),
            "`/a`",
        ),
        (json!({"name": "add", "arguments": {"a": 1}}), "(root)"),
        (json!({"name": "verbatim", "arguments": {"n": 0}}), "`/n`"),
        (json!({"name": "verbatim", "arguments": {"n": 10}}), "`/n`"),
        (
            json!({"name": "verbatim", "arguments": {"other": 1, "n": 2}}),
            "(root)",
        ),
        (json!({"name": "verbatim", "arguments": {}}), "(root)"),
    ] {
        let answer = call(&server, params.clone()).await;
        let result = answer.result().unwrap();
        assert_schema("2026-07-28", "CallToolResult", result);
        assert_eq!(result["isError"], true, "{params}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("invalid arguments for tool `")
                && text.contains(&format!("at {pointer}")),
            "{params}: {text}"
        );
    }
    let answer = call(&server, json!({"name": "add", "arguments": [1, 2]})).await;
    assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
    let answer = call(&server, json!({"name": "verbatim", "arguments": {"n": 3}})).await;
    answer.result().unwrap();
}

/// An unknown tool is 400/-32602 naming it.
#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let answer = call(&server(), json!({"name": "nope", "arguments": {}})).await;
    let error = assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
    assert_eq!(error["name"], "nope");
}

/// An execution failure is a result with `isError: true`, not an error.
#[tokio::test]
async fn execution_failures_are_is_error_results() {
    let answer = call(&server(), json!({"name": "fails"})).await;
    let result = answer.result().unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "the disk is full"}])
    );
    assert_schema("2026-07-28", "CallToolResult", result);
}

/// structuredContent is checked against the outputSchema: a conforming one
/// is sent, a breaking one is the server's fault, 500/-32603.
#[tokio::test]
async fn structured_content_is_checked_against_the_output_schema() {
    let server = server();
    let answer = call(
        &server,
        json!({"name": "structured", "arguments": {"good": true}}),
    )
    .await;
    assert_eq!(
        answer.result().unwrap()["structuredContent"],
        json!({"sum": 3})
    );
    let answer = call(
        &server,
        json!({"name": "structured", "arguments": {"good": false}}),
    )
    .await;
    assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::INTERNAL_SERVER_ERROR,
        -32603,
    );
}

/// A `tools/call` from a client declaring `capabilities`.
async fn with_capabilities(
    server: &Arc<Server>,
    params: &Value,
    capabilities: &Value,
) -> Transcript {
    let client = surface(server.clone()).capabilities(capabilities.clone());
    client.send("tools/call", params.clone()).await
}

/// MRTR: an input_required result with a sealed requestState; the retry
/// with the answer and the state completes; a tampered state is -32602; a
/// client without the capability gets 400/-32021.
#[tokio::test]
async fn input_required_rounds_carry_a_sealed_state() {
    let server = server();
    let elicitation = json!({"elicitation": {}});
    let first = with_capabilities(&server, &json!({"name": "ask"}), &elicitation).await;
    let result = first.result().unwrap().clone();
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    assert!(result.get("ttlMs").is_none());
    assert_schema("2026-07-28", "InputRequiredResult", &result);
    let state = result["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"name": "ask", "requestState": state,
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}});
    let second = with_capabilities(&server, &retry, &elicitation).await;
    assert_eq!(
        second.result().unwrap()["content"][0]["text"],
        "round-1: \"Ada\""
    );
    let mut tampered = retry.clone();
    tampered["requestState"] = json!(format!("{state}x"));
    let third = with_capabilities(&server, &tampered, &elicitation).await;
    assert_failure(
        &third.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
    let undeclared = with_capabilities(&server, &json!({"name": "ask"}), &json!({})).await;
    let error = assert_failure(
        &undeclared.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32021,
    );
    assert_eq!(error["requiredCapabilities"], json!({"elicitation": {}}));
}

fn build_with_schema(schema: Value) -> Result<Server, BuildError> {
    Server::builder()
        .tool(
            Tool::new("annotated")
                .input_schema(schema)
                .raw_handler(|_, _| async { Ok(ToolResult::text("")) }),
        )
        .build()
}

fn header_error(schema: Value) -> (String, String) {
    match build_with_schema(schema) {
        Err(BuildError::Surface(SurfaceError::HeaderAnnotation {
            tool,
            property,
            reason,
        })) => {
            assert_eq!(tool, "annotated");
            (property, reason)
        }
        other => panic!("expected an x-mcp-header build error, got {other:?}"),
    }
}

fn one(property: Value) -> Value {
    json!({"type": "object", "properties": {"p": property}})
}

/// Every `x-mcp-header` rule of the spec is a build error naming the tool
/// and the property.
#[test]
fn bad_x_mcp_header_annotations_are_build_errors() {
    let cases = [
        (
            one(json!({"type": "string", "x-mcp-header": ""})),
            "p",
            "empty",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": "My Region"})),
            "p",
            "token",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
            "p",
            "token",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": "Région"})),
            "p",
            "token",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": "Region\t1"})),
            "p",
            "token",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": "Region\r\n"})),
            "p",
            "token",
        ),
        (
            one(json!({"type": "string", "x-mcp-header": 7})),
            "p",
            "string",
        ),
        (
            one(json!({"type": "number", "x-mcp-header": "Score"})),
            "p",
            "`type`",
        ),
        (
            one(json!({"type": "object", "x-mcp-header": "Data"})),
            "p",
            "`type`",
        ),
        (
            one(json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"})),
            "p",
            "`type`",
        ),
        (
            one(json!({"type": "null", "x-mcp-header": "Nil"})),
            "p",
            "`type`",
        ),
        (one(json!({"x-mcp-header": "Untyped"})), "p", "`type`"),
        (
            one(json!({"type": ["string", "integer"], "x-mcp-header": "Two"})),
            "p",
            "`type`",
        ),
        (
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"}}}),
            "b",
            "repeats",
        ),
        (
            one(json!({"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}})),
            "p.items",
            "reached from the schema root",
        ),
        (
            one(json!({"anyOf": [{"type": "string", "x-mcp-header": "Alt"}]})),
            "p.anyOf",
            "reached from the schema root",
        ),
        (
            json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "Def"}}}),
            "$defs.d",
            "reached from the schema root",
        ),
        (
            json!({"type": "object", "x-mcp-header": "Root"}),
            "(root)",
            "reached from the schema root",
        ),
    ];
    for (schema, property, reason) in cases {
        let (got_property, got_reason) = header_error(schema.clone());
        assert_eq!(got_property, property, "{schema}");
        assert!(got_reason.contains(reason), "{schema}: {got_reason}");
    }
}

/// Valid annotations (string, integer, boolean, nested through
/// `properties`, nullable) fill HeaderBinding's table; data keywords that
/// merely contain the key are not annotations.
#[test]
fn valid_x_mcp_header_annotations_fill_the_header_table() {
    use wymcp::fuzzing::{HeaderParam, HeaderParamType};
    let server = build_with_schema(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "opts": {"type": "object", "properties": {"verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"}}},
        "doc": {"type": "object", "default": {"x-mcp-header": "not an annotation"}}
    }}))
    .unwrap();
    let mut params = wymcp::fuzzing::header_params(&server, "annotated").to_vec();
    params.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        params,
        [
            HeaderParam::new("Priority", "priority", HeaderParamType::Integer),
            HeaderParam::new("Region", "region", HeaderParamType::String),
            HeaderParam::nested("Verbose", ["opts", "verbose"], HeaderParamType::Boolean),
        ]
    );
    assert!(wymcp::fuzzing::header_params(&server, "other").is_empty());
}

/// A tool with annotations cannot be added at run time (HeaderBinding's
/// table is made at build); one without can, and is listed.
#[tokio::test]
async fn run_time_tools_without_annotations_are_listed() {
    let server = server();
    let annotated = Tool::new("late")
        .input_schema(one(json!({"type": "string", "x-mcp-header": "Late"})))
        .raw_handler(|_, _| async { Ok(ToolResult::text("")) });
    assert!(matches!(
        server.catalog().add_tool(annotated),
        Err(SurfaceError::HeaderParamsAtRunTime(name)) if name == "late"
    ));
    server
        .catalog()
        .add_tool(Tool::new("late").handler(|_: NoArgs, _| async { Ok(ToolResult::text("late")) }))
        .unwrap();
    let answer = call(&server, json!({"name": "late"})).await;
    assert_eq!(answer.result().unwrap()["content"][0]["text"], "late");
    assert!(server.catalog().remove_tool("late"));
    let answer = call(&server, json!({"name": "late"})).await;
    assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
}

/// A tool without a handler, or two tools of one name, do not build.
#[test]
fn tools_need_a_handler_and_a_unique_name() {
    assert!(matches!(
        Server::builder().tool(Tool::new("bare")).build(),
        Err(BuildError::Surface(SurfaceError::NoHandler(name))) if name == "bare"
    ));
    let twice = || Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) });
    assert!(matches!(
        Server::builder().tool(twice()).tool(twice()).build(),
        Err(BuildError::Surface(SurfaceError::Duplicate {
            kind: "tool",
            ..
        }))
    ));
}

/// Catalog changes at run time are published on the server's change bus,
/// which `subscriptions/listen` streams hear.
#[tokio::test]
async fn catalog_changes_reach_the_change_bus() {
    use std::time::Duration;
    use wymcp::Change;
    let server = server();
    let mut changes = server.catalog().subscribe();
    // A change that never comes fails the test instead of hanging it.
    let mut next = async move || {
        tokio::time::timeout(Duration::from_secs(5), changes.recv())
            .await
            .expect("a change within 5 s")
            .unwrap()
    };
    let late = Tool::new("late2").handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) });
    server.catalog().add_tool(late).unwrap();
    assert_eq!(next().await, Change::ToolsListChanged);
    assert!(server.catalog().remove_tool("late2"));
    assert_eq!(next().await, Change::ToolsListChanged);
    assert!(!server.catalog().remove_tool("late2"));
    server.catalog().resource_updated("test://x");
    assert_eq!(next().await, Change::ResourceUpdated("test://x".into()));
}

/// A handler's context sends progress only with a progressToken and logs
/// only at or above the requested level.
#[test]
fn context_sends_only_what_the_request_asked_for() {
    use wymcp::Context;
    use wymcp::LogLevel;
    let silent = Context::for_test(meta());
    assert!(silent.progress_token().is_none());
    assert!(!silent.has_client_capability("sampling"));
    let asked = Context::for_test(json!({
        "progressToken": "t",
        "io.modelcontextprotocol/logLevel": "warning",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
    }));
    assert_eq!(asked.progress_token(), Some(&json!("t")));
    assert!(asked.has_client_capability("sampling"));
    assert!(asked.emitter().reports_progress());
    assert!(asked.emitter().logs(LogLevel::Error));
    assert!(!asked.emitter().logs(LogLevel::Info));
    assert!(!silent.emitter().logs(LogLevel::Emergency));
}
