//! The conformance contract of `CONFORMANCE.md`: every tool, prompt and
//! resource the official conformance suite calls, served by wymcp's default
//! chain (`cargo run -p wymcp-examples --example everything -- --bind
//! 127.0.0.1:3000`) or, with `--stdio`, on stdin and stdout as a client's
//! subprocess.
//!
//! Without auth flags it serves without auth. `--jwks-url URL --issuer ISS
//! --audience AUD` makes it an OAuth resource server for JWT access tokens
//! (`wymcp::auth::JwtVerifier`), typed `at+jwt` unless
//! `--accept-generic-typ` also lets in `typ: JWT` and untyped ones (what
//! most authorization servers issue); `--introspection-url URL --client-id ID
//! --client-secret S` (with `--audience AUD`, by default the served URL)
//! one for opaque tokens (`wymcp::auth::Introspection`). Each takes
//! `--required-scope S`, as often as needed: every request must hold it
//! (`403 insufficient_scope` naming them otherwise). `--static-token TOKEN`
//! lets in a fixed Bearer token (`wymcp::auth::StaticTokens`), as often as
//! needed, each a principal of its own (the first `static-token`, the n-th
//! `static-token-n`): for the benchmark's auth scenarios and local tests,
//! never a deployment.
//!
//! `--dpop required|allowed` (with `--jwks-url` or `--introspection-url`)
//! verifies DPoP proofs (RFC 9449) against tokens bound to a key
//! (`cnf.jkt`): every request must carry one, or Bearer tokens stay
//! accepted beside them; `--dpop-nonce` also asks for the server's nonce
//! (stateless, keyed with `WYMCP_SEALING_KEY`). With `--redis-url` the
//! proofs' `jti`s are shared by the replicas (`RedisDpopReplay`).
//!
//! `--metrics ADDR` serves the server's metrics (wymcp's `metrics` feature:
//! the MCP semantic conventions' `mcp.server.operation.duration`, the
//! rejections per stage, the ledger per kind, the listen streams, the
//! tasks) as Prometheus text on `GET http://ADDR/metrics`, a listener of its
//! own, never the MCP endpoint; it prints `metrics on http://ADDR/metrics`
//! after the `listening on` line (`127.0.0.1:0`: a port the OS picks).
//! Logs go to stderr through `wymcp::telemetry` (`RUST_LOG`, `warn` when
//! unset; `WYMCP_LOG_FORMAT=json` for JSON lines).
//!
//! `--tls-cert FILE --tls-key FILE` serve https (`wymcp::serve::Tls`: the
//! PEM chain and key, reloaded when they change or on SIGHUP; ALPN h2 and
//! http/1.1); `--tls-client-ca FILE` verifies client certificates against
//! a CA bundle (`--tls-client-auth required`, or `optional`, the default);
//! `--cert-auth` makes the verified certificate's identity the principal
//! (`wymcp::auth::CertificateAuth`, every holder given the
//! `--required-scope`s). `--tls-handshake-timeout-ms MS` sets
//! `ServeConfig::tls_handshake_timeout`.
//!
//! `--group-ipv4 PREFIX` / `--group-ipv6 PREFIX` set `Limits::grouping`:
//! how many leading bits of a client's address name one caller of the
//! ledger (default 32 and 64). On loopback there is no IPv6 /64 beyond
//! `::1`, so the hostile soak groups `127.0.0.0/24` instead.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wymcp::auth::{
    AuthConfig, AuthFuture, Authenticator, CertificateAuth, Credentials, Dpop, Introspection,
    JwtVerifier, Principal, StaticTokens,
};
use wymcp::axum::http::HeaderValue;
use wymcp::mrtr::{InputKind, InputRequest, SealingKey};
use wymcp::{CompletionRef, Completions, LogLevel, NoArgs, PromptArgs, TaskSupport, TemplateVars};
use wymcp::{
    Content, Context, HandlerError, Prompt, PromptResult, Resource, ResourceContents,
    ResourceTemplate, Server, Tool, ToolResult, chain,
};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with no samples (8 kHz, mono, 8-bit).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

type Outcome = Result<ToolResult, HandlerError>;

#[allow(clippy::unnecessary_wraps)] // the handlers' own return type
fn text(s: impl Into<String>) -> Outcome {
    Ok(ToolResult::text(s))
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

fn name_schema(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

/// The text of a sampling answer (`CreateMessageResult.content.text`).
fn sampled(answer: &serde_json::Map<String, Value>) -> String {
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// An elicitation answered in any way, described as the suite expects.
fn elicited(cx: &Context, key: &str) -> Option<String> {
    let answer = cx.inputs().response(key)?;
    Some(format!(
        "action={}, content={}",
        answer
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("unknown"),
        answer.get("content").cloned().unwrap_or(Value::Null)
    ))
}

fn ask_elicitation(cx: &Context, key: &str, params: Value) -> Outcome {
    let ask = cx
        .input_required()
        .request(key, InputRequest::elicitation(params))?;
    Err(ask.into())
}

fn content_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_simple_text")
            .description("Returns simple text")
            .handler(|_: NoArgs, _| async { text("This is a simple text response for testing.") }),
        Tool::new("test_image_content")
            .description("Returns a 1x1 PNG")
            .handler(|_: NoArgs, _| async { Ok(ToolResult::new([Content::image(PNG, "image/png")])) }),
        Tool::new("test_audio_content")
            .description("Returns a WAV file")
            .handler(|_: NoArgs, _| async { Ok(ToolResult::new([Content::audio(WAV, "audio/wav")])) }),
        Tool::new("test_embedded_resource")
            .description("Returns an embedded resource")
            .handler(|_: NoArgs, _| async {
                Ok(ToolResult::new([Content::resource(
                    ResourceContents::text("test://embedded-resource", "This is an embedded resource content.")
                        .mime_type("text/plain"),
                )]))
            }),
        Tool::new("test_multiple_content_types")
            .description("Returns text, an image and a resource")
            .handler(|_: NoArgs, _| async {
                Ok(ToolResult::new([
                    Content::text("Multiple content types test:"),
                    Content::image(PNG, "image/png"),
                    Content::resource(
                        ResourceContents::text(
                            "test://mixed-content-resource",
                            r#"{"test":"data","value":123}"#,
                        )
                        .mime_type("application/json"),
                    ),
                ]))
            }),
        Tool::new("test_error_handling")
            .description("Always fails")
            .handler(|_: NoArgs, _| async {
                Err::<ToolResult, _>(HandlerError::execution("This tool intentionally returns an error for testing"))
            }),
        Tool::new("test_reconnection")
            .description("Answers after a pause")
            .handler(|_: NoArgs, _| async {
                pause().await;
                text("Reconnection test completed")
            }),
        Tool::new("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }))
            .raw_handler(|args, _| async move { text(format!("Received: {args}")) }),
        Tool::new("test_x_mcp_header")
            .description("Mirrors its region argument in the Mcp-Param-Region header")
            .input_schema(json!({
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"]
            }))
            .raw_handler(|args, _| async move {
                text(format!("Region: {}", args["region"].as_str().unwrap_or_default()))
            }),
    ]
}

fn streaming_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_tool_with_progress")
            .description("Reports progress 0, 50, 100 of 100")
            .handler(|_: NoArgs, cx| async move {
                for step in [0.0, 50.0, 100.0] {
                    if step > 0.0 {
                        pause().await;
                    }
                    cx.progress(step, Some(100.0), None);
                }
                text("Progress test completed")
            }),
        Tool::new("test_progress_flood")
            .description("Reports progress `count` times (at most 100,000) as fast as it can")
            .handler(|args: FloodArgs, cx| async move {
                let count = args.count.min(100_000);
                for step in 0..count {
                    cx.progress(f64::from(step), Some(f64::from(count)), None);
                    if step % 64 == 63 {
                        tokio::task::yield_now().await;
                    }
                }
                text(format!("Reported progress {count} times"))
            }),
        Tool::new("test_tool_with_logging")
            .description("Logs three messages at info level")
            .handler(|_: NoArgs, cx| async move {
                cx.log(LogLevel::Info, "Tool execution started");
                pause().await;
                cx.log(LogLevel::Info, "Tool processing data");
                pause().await;
                cx.log(LogLevel::Info, "Tool execution completed");
                text("Logging test completed")
            }),
        Tool::new("test_logging_tool")
            .description("Logs when the request asks for log messages")
            .handler(|_: NoArgs, cx| async move {
                cx.log(LogLevel::Info, "test_logging_tool: info");
                cx.log(LogLevel::Debug, "test_logging_tool: debug");
                pause().await;
                text("Logging tool completed")
            }),
        Tool::new("test_trigger_tool_change")
            .description("Adds or removes test_dynamic_tool (tools/list_changed)")
            .handler(|_: NoArgs, cx| async move {
                let catalog = cx.catalog();
                let op = if catalog
                    .tool_names()
                    .iter()
                    .any(|n| n == "test_dynamic_tool")
                {
                    Op::RemoveTool
                } else {
                    Op::AddTool
                };
                // The other replicas first (they apply it without announcing),
                // then here, announced to every replica's listen streams.
                op.broadcast(catalog);
                op.apply(catalog).map_err(HandlerError::execution)?;
                settle().await;
                text(op.done())
            }),
        Tool::new("test_trigger_prompt_change")
            .description("Adds or removes test_dynamic_prompt (prompts/list_changed)")
            .handler(|_: NoArgs, cx| async move {
                let catalog = cx.catalog();
                let op = if catalog
                    .prompt_names()
                    .iter()
                    .any(|n| n == "test_dynamic_prompt")
                {
                    Op::RemovePrompt
                } else {
                    Op::AddPrompt
                };
                op.broadcast(catalog);
                op.apply(catalog).map_err(HandlerError::execution)?;
                settle().await;
                text(op.done())
            }),
    ]
}

/// The topic of the catalog changes replicas apply on each other's word
/// (docs/deployment.md, "What is shared").
const CATALOG_TOPIC: &str = "everything/catalog";

/// Whether replicas share a bus (`--redis-url`).
static REPLICATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// With replicas, gives the others time to apply a catalog change before
/// the client hears back: the bus is asynchronous (a millisecond or so),
/// and the suite reads the list from another replica at once.
async fn settle() {
    if REPLICATED.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// This process's name on the bus, so it ignores its own catalog messages.
fn replica_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}-{}", std::process::id(), now.as_nanos())
    })
}

/// A run-time catalog change of the conformance fixtures, applied on every
/// replica: here by the tool that makes it, announced; on the others by
/// [`mirror_catalog`], unannounced (the announcement reached their streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    AddTool,
    RemoveTool,
    AddPrompt,
    RemovePrompt,
}

impl Op {
    const ALL: [Op; 4] = [Op::AddTool, Op::RemoveTool, Op::AddPrompt, Op::RemovePrompt];

    fn name(self) -> &'static str {
        match self {
            Op::AddTool => "tool:add",
            Op::RemoveTool => "tool:remove",
            Op::AddPrompt => "prompt:add",
            Op::RemovePrompt => "prompt:remove",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Op::AddTool => "test_dynamic_tool added",
            Op::RemoveTool => "test_dynamic_tool removed",
            Op::AddPrompt => "test_dynamic_prompt added",
            Op::RemovePrompt => "test_dynamic_prompt removed",
        }
    }

    fn broadcast(self, catalog: &wymcp::Catalog) {
        catalog.broadcast(CATALOG_TOPIC, format!("{} {}", replica_id(), self.name()));
    }

    /// Applies the change to `catalog`; an add of what is there or a removal
    /// of what is not changes nothing.
    fn apply(self, catalog: &wymcp::Catalog) -> Result<(), wymcp::SurfaceError> {
        match self {
            Op::AddTool
                if !catalog
                    .tool_names()
                    .iter()
                    .any(|n| n == "test_dynamic_tool") =>
            {
                catalog.add_tool(
                    Tool::new("test_dynamic_tool")
                        .description("Added at run time")
                        .handler(|_: NoArgs, _| async { text("dynamic") }),
                )
            }
            Op::AddPrompt
                if !catalog
                    .prompt_names()
                    .iter()
                    .any(|n| n == "test_dynamic_prompt") =>
            {
                catalog.add_prompt(
                    Prompt::new("test_dynamic_prompt")
                        .description("Added at run time")
                        .handler(|_: NoArgs, _| async { Ok(PromptResult::new().user("dynamic")) }),
                )
            }
            Op::RemoveTool => {
                catalog.remove_tool("test_dynamic_tool");
                Ok(())
            }
            Op::RemovePrompt => {
                catalog.remove_prompt("test_dynamic_prompt");
                Ok(())
            }
            Op::AddTool | Op::AddPrompt => Ok(()),
        }
    }
}

/// Applies, unannounced, the catalog changes other replicas broadcast.
async fn mirror_catalog(catalog: wymcp::Catalog) {
    let mut changes = catalog.subscribe();
    let quiet = catalog.unannounced();
    loop {
        match changes.recv().await {
            Ok(wymcp::Change::Application { topic, body }) if topic == CATALOG_TOPIC => {
                let Some((from, name)) = body.rsplit_once(' ') else {
                    continue;
                };
                if from == replica_id() {
                    continue;
                }
                if let Some(op) = Op::ALL.into_iter().find(|op| op.name() == name)
                    && let Err(error) = op.apply(&quiet)
                {
                    tracing::warn!(%error, "a catalog change of another replica did not apply");
                }
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

fn elicitation_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_sampling")
            .description("Asks the client's LLM (sampling, over MRTR)")
            .handler(|args: SamplingArgs, cx| async move {
                if let Some(answer) = cx.inputs().response("sampling") {
                    return text(format!("LLM response: {}", sampled(answer)));
                }
                let ask = cx
                    .input_required()
                    .request("sampling", InputRequest::sample_text(args.prompt, 100))?;
                Err(ask.into())
            }),
        Tool::new("test_elicitation")
            .description("Asks the user (elicitation, over MRTR)")
            .handler(|args: ElicitationArgs, cx| async move {
                if let Some(answer) = elicited(&cx, "elicitation") {
                    return text(format!("User response: {answer}"));
                }
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                }, "required": ["username", "email"]});
                ask_elicitation(&cx, "elicitation", json!({"message": args.message, "requestedSchema": schema}))
            }),
        Tool::new("test_streaming_elicitation")
            .description("Asks the user, as an input_required result, never a request")
            .handler(|_: NoArgs, cx| async move {
                if let Some(answer) = elicited(&cx, "confirmation") {
                    return text(format!("User response: {answer}"));
                }
                ask_elicitation(&cx, "confirmation", json!({"message": "Continue?", "requestedSchema": name_schema("answer")}))
            }),
        Tool::new("test_elicitation_sep1034_defaults")
            .description("Elicitation with defaults for every primitive type")
            .handler(|_: NoArgs, cx| async move {
                if let Some(answer) = elicited(&cx, "defaults") {
                    return text(format!("Elicitation completed: {answer}"));
                }
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }});
                ask_elicitation(&cx, "defaults", json!({"message": "Defaults test", "requestedSchema": schema}))
            }),
        Tool::new("test_elicitation_sep1330_enums")
            .description("Elicitation with the five enum variants")
            .handler(|_: NoArgs, cx| async move {
                if let Some(answer) = elicited(&cx, "enums") {
                    return text(format!("Elicitation completed: {answer}"));
                }
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }});
                ask_elicitation(&cx, "enums", json!({"message": "Enums test", "requestedSchema": schema}))
            }),
        Tool::new("test_missing_capability")
            .description("Needs the client's sampling capability")
            .handler(|_: NoArgs, cx| async move {
                if !cx.inputs().declares(InputKind::Sampling) {
                    return Err(HandlerError::missing_capability("sampling"));
                }
                if let Some(answer) = cx.inputs().response("sampling") {
                    return text(format!("LLM response: {}", sampled(answer)));
                }
                let ask = cx
                    .input_required()
                    .request("sampling", InputRequest::sample_text("Say hello", 50))?;
                Err(ask.into())
            }),
    ]
}

fn mrtr_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_input_required_result_elicitation")
            .description("MRTR: asks for a name")
            .handler(|_: NoArgs, cx| async move {
                if let Some(name) = cx.inputs().accepted("user_name").and_then(|c| c.get("name")) {
                    return text(format!("Hello, {}!", name.as_str().unwrap_or_default()));
                }
                let ask = cx.input_required().request(
                    "user_name",
                    InputRequest::elicit("What is your name?", name_schema("name")),
                )?;
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_sampling")
            .description("MRTR: asks the client's LLM")
            .handler(|_: NoArgs, cx| async move {
                if let Some(answer) = cx.inputs().response("capital_question") {
                    return text(format!("The LLM says: {}", sampled(answer)));
                }
                let ask = cx.input_required().request(
                    "capital_question",
                    InputRequest::sample_text("What is the capital of France?", 100),
                )?;
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_list_roots")
            .description("MRTR: asks for the client's roots")
            .handler(|_: NoArgs, cx| async move {
                if let Some(answer) = cx.inputs().response("client_roots") {
                    let roots = answer.get("roots").cloned().unwrap_or(json!([]));
                    return text(format!("Client roots: {roots}"));
                }
                let ask = cx
                    .input_required()
                    .request("client_roots", InputRequest::list_roots())?;
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_request_state")
            .description("MRTR: round-trips a requestState")
            .handler(|_: NoArgs, cx| async move {
                let inputs = cx.inputs();
                if inputs.state() == Some(b"confirm-round".as_slice()) && inputs.response("confirm").is_some() {
                    return text("state-ok: the requestState came back intact");
                }
                let ask = cx
                    .input_required()
                    .request("confirm", InputRequest::elicit("Please confirm", json!({
                        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})))?
                    .state(b"confirm-round".to_vec());
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_multiple_inputs")
            .description("MRTR: asks for three inputs at once")
            .handler(|_: NoArgs, cx| async move {
                let inputs = cx.inputs();
                let keys = ["user_name", "greeting", "client_roots"];
                if inputs.state() == Some(b"multiple".as_slice())
                    && keys.iter().all(|k| inputs.response(k).is_some())
                {
                    return text("All inputs received");
                }
                let ask = cx
                    .input_required()
                    .request("user_name", InputRequest::elicit("What is your name?", name_schema("name")))?
                    .request("greeting", InputRequest::sample_text("Generate a greeting", 50))?
                    .request("client_roots", InputRequest::list_roots())?
                    .state(b"multiple".to_vec());
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_multi_round")
            .description("MRTR: two rounds of questions")
            .handler(|_: NoArgs, cx| async move {
                let inputs = cx.inputs();
                if inputs.state() == Some(b"round-2".as_slice())
                    && let Some(color) = inputs.accepted("step2").and_then(|c| c.get("color"))
                {
                    return text(format!("Favorite color: {}", color.as_str().unwrap_or_default()));
                }
                if inputs.state() == Some(b"round-1".as_slice()) && inputs.response("step1").is_some()
                    || inputs.state() == Some(b"round-2".as_slice())
                {
                    let ask = cx
                        .input_required()
                        .request("step2", InputRequest::elicit("Step 2: What is your favorite color?", name_schema("color")))?
                        .state(b"round-2".to_vec());
                    return Err(ask.into());
                }
                let ask = cx
                    .input_required()
                    .request("step1", InputRequest::elicit("Step 1: What is your name?", name_schema("name")))?
                    .state(b"round-1".to_vec());
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_tampered_state")
            .description("MRTR: refuses a tampered requestState")
            .handler(|_: NoArgs, cx| async move {
                if cx.inputs().state() == Some(b"untampered".as_slice()) {
                    return text("state verified");
                }
                let ask = cx
                    .input_required()
                    .request("confirm", InputRequest::elicit("Please confirm", name_schema("ok")))?
                    .state(b"untampered".to_vec());
                Err(ask.into())
            }),
        Tool::new("test_input_required_result_capabilities")
            .description("MRTR: asks only for input kinds the client declared")
            .handler(|_: NoArgs, cx| async move {
                let inputs = cx.inputs();
                if !inputs.responses().is_empty() {
                    return text("Inputs received");
                }
                let mut ask = cx.input_required();
                if inputs.declares(InputKind::Elicitation) {
                    ask = ask.request("user_name", InputRequest::elicit("What is your name?", name_schema("name")))?;
                }
                if inputs.declares(InputKind::Sampling) {
                    ask = ask.request("greeting", InputRequest::sample_text("Generate a greeting", 50))?;
                }
                if inputs.declares(InputKind::Roots) {
                    ask = ask.request("client_roots", InputRequest::list_roots())?;
                }
                if ask.requests().is_empty() {
                    return text("The client declared no input capability");
                }
                Err(ask.into())
            }),
    ]
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FloodArgs {
    /// How many progress notifications to send (at most 100,000).
    count: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds (at most 600).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

/// The fixtures of the suite's `tasks-*` scenarios (the tasks extension).
fn task_tools() -> Vec<Tool> {
    let confirm = || json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
    vec![
        Tool::new("greet")
            .description("Greets by name (never a task)")
            .handler(|args: GreetArgs, _| async move { text(format!("Hello, {}!", args.name)) }),
        Tool::new("slow_compute")
            .description("Works for `seconds` seconds, as a task when the client allows")
            .task_support(TaskSupport::Optional)
            .handler(|args: SlowArgs, _| async move {
                let seconds = args.seconds.clamp(0.0, 600.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                text(format!("Computed {} in {seconds} s", args.label))
            }),
        Tool::new("failing_job")
            .description("Always fails with a tool error after a second (a task only)")
            .task_support(TaskSupport::Required)
            .handler(|_: NoArgs, _| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<ToolResult, _>(HandlerError::execution("the job failed, as it always does"))
            }),
        Tool::new("protocol_error_job")
            .description("Fails with a protocol error (a failed task)")
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, _| async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                Err::<ToolResult, _>(HandlerError::Rpc {
                    code: wymcp::ErrorCode::INTERNAL_ERROR,
                    message: "the job broke down".into(),
                    data: None,
                })
            }),
        Tool::new("confirm_delete")
            .description("Asks for a confirmation, then deletes (as a task)")
            .task_support(TaskSupport::Optional)
            .handler(move |args: DeleteArgs, cx| async move {
                if let Some(answer) = cx.inputs().accepted("confirm") {
                    let yes = answer
                        .get("confirm")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    return text(if yes {
                        format!("Deleted {}", args.filename)
                    } else {
                        format!("Kept {}", args.filename)
                    });
                }
                let ask = cx.input_required().request(
                    "confirm",
                    InputRequest::elicit(format!("Delete {}?", args.filename), confirm()),
                )?;
                Err(ask.into())
            }),
        Tool::new("multi_input")
            .description("Asks two questions at once (as a task)")
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, cx| async move {
                let inputs = cx.inputs();
                if inputs.response("first").is_some() && inputs.response("second").is_some() {
                    return text("Both inputs received");
                }
                let ask = cx
                    .input_required()
                    .request(
                        "first",
                        InputRequest::elicit("First question", name_schema("name")),
                    )?
                    .request(
                        "second",
                        InputRequest::elicit("Second question", name_schema("name")),
                    )?;
                Err(ask.into())
            }),
        Tool::new("test_tool_with_task")
            .description("MRTR for a name on the request, then a task greeting it")
            .task_support(TaskSupport::Required)
            .task_when(|cx| cx.inputs().response("user_name").is_some())
            .handler(|_: NoArgs, cx| async move {
                if let Some(name) = cx
                    .inputs()
                    .accepted("user_name")
                    .and_then(|c| c.get("name"))
                {
                    let name = name.as_str().unwrap_or_default().to_owned();
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    return text(format!("Hello, {name}! (from a task)"));
                }
                let ask = cx.input_required().request(
                    "user_name",
                    InputRequest::elicit("What is your name?", name_schema("name")),
                )?;
                Err(ask.into())
            }),
    ]
}

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new("test_simple_prompt")
            .description("A simple prompt without arguments")
            .handler(|_: NoArgs, _| async {
                Ok(PromptResult::new().user("This is a simple prompt for testing."))
            }),
        Prompt::new("test_prompt_with_arguments")
            .description("A prompt with two arguments")
            .argument("arg1", "First test argument")
            .argument("arg2", "Second test argument")
            .handler(|args: PromptArgs, _| async move {
                Ok(PromptResult::new().user(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    args["arg1"], args["arg2"]
                )))
            }),
        Prompt::new("test_prompt_with_embedded_resource")
            .description("A prompt embedding a resource")
            .argument("resourceUri", "URI of the resource to embed")
            .handler(|args: PromptArgs, _| async move {
                Ok(PromptResult::new()
                    .user(Content::resource(
                        ResourceContents::text(
                            args["resourceUri"].clone(),
                            "Embedded resource content for testing.",
                        )
                        .mime_type("text/plain"),
                    ))
                    .user("Please process the embedded resource above."))
            }),
        Prompt::new("test_prompt_with_image")
            .description("A prompt with an image")
            .handler(|_: NoArgs, _| async {
                Ok(PromptResult::new()
                    .user(Content::image(PNG, "image/png"))
                    .user("Please analyze the image above."))
            }),
        Prompt::new("test_input_required_result_prompt")
            .description("MRTR on prompts/get: asks for context")
            .handler(|_: NoArgs, cx| async move {
                if let Some(context) = cx
                    .inputs()
                    .accepted("user_context")
                    .and_then(|c| c.get("context"))
                {
                    let context = context.as_str().unwrap_or_default().to_owned();
                    return Ok(PromptResult::new().user(format!("Use this context: {context}")));
                }
                let ask = cx.input_required().request(
                    "user_context",
                    InputRequest::elicit(
                        "What context should the prompt use?",
                        name_schema("context"),
                    ),
                )?;
                Err(ask.into())
            }),
    ]
}

fn completion(request: &wymcp::CompletionRequest) -> Completions {
    match (&request.reference, request.argument.as_str()) {
        (CompletionRef::Prompt(name), "arg1") if name == "test_prompt_with_arguments" => {
            Completions::matching(&request.value, ["paris", "park", "party"])
        }
        (CompletionRef::Resource(template), "id") if template == "test://template/{id}/data" => {
            Completions::matching(&request.value, ["1", "2", "3", "123"])
        }
        _ => Completions::default(),
    }
}

fn server(
    keys: Keys,
    auth: Option<AuthSetup>,
    redis: Option<&str>,
    grouping: wymcp::ledger::Grouping,
) -> Result<Server, Box<dyn std::error::Error>> {
    let mut builder = Server::builder()
        .limits(wymcp::Limits {
            grouping,
            ..wymcp::Limits::default()
        })
        .info("wymcp-everything", env!("CARGO_PKG_VERSION"))
        .instructions("The MCP conformance suite's test server, built with wymcp.")
        .logging()
        .completion(|request, _| async move { Ok(completion(&request)) })
        .resource(
            Resource::new("test://static-text", "Static text")
                .description("A static text resource")
                .mime_type("text/plain")
                .text("This is the content of the static text resource."),
        )
        .resource(
            Resource::new("test://static-binary", "Static binary")
                .description("A static binary resource (a PNG)")
                .mime_type("image/png")
                .blob(PNG),
        )
        .resource(
            Resource::new("test://watched-resource", "Watched resource")
                .description("A resource whose updates are announced")
                .mime_type("text/plain")
                .text("Watched resource content."),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "Template data")
                .description("Data for an id")
                .mime_type("application/json")
                .handler(|uri, vars: TemplateVars, _| async move {
                    let id = vars.get("id").cloned().unwrap_or_default();
                    let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                    Ok(vec![ResourceContents::text(uri, body.to_string())])
                }),
        )
        // The Skills extension (SEP-2640), declared on 2026-07-28: two
        // skills read from disk, one with a subdirectory.
        .skills_dir(
            std::env::var_os("WYMCP_SKILLS_DIR").map_or_else(
                || std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/skills")),
                std::path::PathBuf::from,
            ),
        );
    for tool in content_tools()
        .into_iter()
        .chain(streaming_tools())
        .chain(elicitation_tools())
        .chain(mrtr_tools())
        .chain(task_tools())
    {
        builder = builder.tool(tool);
    }
    for prompt in prompts() {
        builder = builder.prompt(prompt);
    }
    // The replicas sign what they write to Redis with the key they seal
    // with, so a replica believes only what another replica wrote.
    let redis = match redis {
        Some(url) => Some((url, keys.redis_config()?)),
        None => None,
    };
    if let Some(key) = keys.accepted {
        builder = builder.accept_sealing_key(key);
    }
    if let Some(key) = keys.current {
        builder = builder.sealing_key(key);
    }
    if let Some(auth) = auth {
        let dpop = auth.config.dpop_policy().is_some();
        builder = builder.auth(auth.authenticator, auth.config);
        if let (true, Some((url, config))) = (dpop, &redis) {
            // A proof replayed to another replica is refused.
            builder = builder.dpop_replay(wymcp::redis::RedisDpopReplay::new(url, config.clone())?);
        }
    }
    if let Ok(ms) = std::env::var("WYMCP_TASK_LEASE_MS") {
        // A short lease for scripts/replicas' killed replica.
        let lease = Duration::from_millis(ms.parse()?);
        builder = builder.task_limits(wymcp::TaskLimits::default().lease(lease, lease / 3));
    }
    if let Some((url, config)) = redis {
        // Replicas share Redis: the change bus, a 2025 client's answers to
        // mid-call requests, and the task store.
        REPLICATED.store(true, std::sync::atomic::Ordering::Relaxed);
        builder = builder
            .change_relay(wymcp::redis::RedisBus::new(url, config.clone())?)
            .answer_relay(wymcp::redis::RedisAnswers::new(url, config.clone())?)
            .task_store(wymcp::redis::RedisTaskStore::new(url, config)?);
    }
    Ok(builder.build()?)
}

/// The sealing keys of the environment: the one that seals, and a retired
/// one still accepted (the second step of a rotation, docs/deployment.md).
#[derive(Default)]
struct Keys {
    current: Option<SealingKey>,
    accepted: Option<SealingKey>,
}

impl Keys {
    /// The Redis settings of a replica holding these keys: it signs with
    /// the one that seals, and still accepts the retired one.
    fn redis_config(&self) -> Result<wymcp::redis::RedisConfig, &'static str> {
        let shared = self.current.as_ref().ok_or(
            "--redis-url needs WYMCP_SEALING_KEY: the replicas sign what they write to Redis with the key they share",
        )?;
        let mut config = wymcp::redis::RedisConfig::default().shared_key(shared);
        if let Some(retired) = &self.accepted {
            config = config.accept_key(retired);
        }
        Ok(config)
    }

    /// `WYMCP_SEALING_KEY` (the secret) and `WYMCP_SEALING_KEY_ID` (its id,
    /// `shared` by default); `WYMCP_ACCEPT_SEALING_KEY` and
    /// `WYMCP_ACCEPT_SEALING_KEY_ID` for a key that only unseals.
    fn from_env() -> Result<Keys, wymcp::mrtr::KeyError> {
        let key = |secret: &str, id: &str| -> Result<Option<SealingKey>, wymcp::mrtr::KeyError> {
            match std::env::var(secret) {
                Ok(secret) => {
                    let id = std::env::var(id).unwrap_or_else(|_| "shared".to_owned());
                    SealingKey::new(id, secret.into_bytes()).map(Some)
                }
                Err(_) => Ok(None),
            }
        };
        Ok(Keys {
            current: key("WYMCP_SEALING_KEY", "WYMCP_SEALING_KEY_ID")?,
            accepted: key("WYMCP_ACCEPT_SEALING_KEY", "WYMCP_ACCEPT_SEALING_KEY_ID")?,
        })
    }
}

const USAGE: &str = "usage: everything [--bind ADDR] [--replica NAME] [--trusted-proxy ADDR[/PREFIX]]… \
    [--jwks-url URL --issuer ISS --audience AUD [--accept-generic-typ] | \
    --introspection-url URL --client-id ID --client-secret S [--audience AUD] [--issuer ISS]] \
    [--dpop required|allowed [--dpop-nonce]] [--required-scope S]… [--static-token TOKEN]… [--group-ipv4 PREFIX] [--group-ipv6 PREFIX] \
    [--redis-url URL] [--metrics ADDR] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE \
    [--tls-client-auth optional|required]] [--cert-auth] [--tls-handshake-timeout-ms MS]] | --stdio \
    (env WYMCP_REDIS_URL: the Redis the replicas share for the change bus and \
    the task store; WYMCP_TASK_LEASE_MS: a task's lease; \
    WYMCP_SEALING_KEY: a shared requestState secret of at least 32 bytes, \
    WYMCP_SEALING_KEY_ID: its id, `shared` by default; \
    WYMCP_ACCEPT_SEALING_KEY[_ID]: a retired key that still unseals)";

/// `GET /metrics` on its own listener: the Prometheus text of what the
/// server recorded, collected at each scrape.
async fn serve_metrics(listener: tokio::net::TcpListener, prometheus: wymcp::metrics::Prometheus) {
    use wymcp::axum::http::header::CONTENT_TYPE;
    let router = wymcp::axum::Router::new().route(
        "/metrics",
        wymcp::axum::routing::get(move || {
            let prometheus = prometheus.clone();
            async move {
                // The SDK collects synchronously: off the runtime's threads.
                let text = tokio::task::spawn_blocking(move || prometheus.render())
                    .await
                    .unwrap_or_default();
                (
                    [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
                    text,
                )
            }
        }),
    );
    if let Err(error) = wymcp::axum::serve(listener, router).await {
        tracing::warn!(%error, "the metrics listener failed");
    }
}

/// The auth settings of the command line; none of them: no auth.
#[derive(Default)]
struct AuthArgs {
    jwks_url: Option<String>,
    /// JWTs typed `JWT`, or not typed, are accepted too.
    accept_generic_typ: bool,
    issuer: Option<String>,
    audience: Option<String>,
    introspection_url: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    required_scopes: Vec<String>,
    /// Each a principal of its own: `static-token`, `static-token-2`, …
    static_tokens: Vec<String>,
    /// `--dpop required|allowed`.
    dpop: Option<String>,
    /// `--dpop-nonce`: proofs must carry the server's nonce.
    dpop_nonce: bool,
    /// The verified client certificate is the principal.
    cert_auth: bool,
    /// `https` with `--tls-cert`.
    scheme: &'static str,
}

/// The resource server the command line asked for.
enum ResourceServer {
    Jwt(JwtVerifier),
    Introspection(Introspection),
    Static(StaticTokens),
    Certificate(CertificateAuth),
}

impl Authenticator for ResourceServer {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        match self {
            ResourceServer::Jwt(verifier) => verifier.authenticate(credentials),
            ResourceServer::Introspection(introspection) => introspection.authenticate(credentials),
            ResourceServer::Static(tokens) => tokens.authenticate(credentials),
            ResourceServer::Certificate(auth) => auth.authenticate(credentials),
        }
    }
}

/// What `server` is built with when the command line asks for auth.
struct AuthSetup {
    authenticator: ResourceServer,
    config: AuthConfig,
    /// What it does, for the start-up line.
    mode: String,
}

impl AuthArgs {
    /// The resource server the arguments describe, if any: JWT access
    /// tokens checked against a JWK Set, or opaque tokens introspected.
    fn resource_server(&self, bind: &str) -> Result<Option<AuthSetup>, Box<dyn std::error::Error>> {
        let audience = self
            .audience
            .clone()
            .unwrap_or_else(|| format!("{}://{bind}/mcp", self.scheme));
        let dpop = match self.dpop.as_deref() {
            None if self.dpop_nonce => return Err("--dpop-nonce needs --dpop".into()),
            None => None,
            Some("required") => Some(Dpop::required()),
            Some("allowed") => Some(Dpop::allowed()),
            Some(other) => {
                return Err(format!("--dpop takes `required` or `allowed`, not `{other}`").into());
            }
        };
        let dpop = match dpop {
            Some(policy) if self.dpop_nonce => {
                let key = std::env::var("WYMCP_SEALING_KEY")
                    .map_err(|_| "--dpop-nonce needs WYMCP_SEALING_KEY: the replicas' nonce key")?;
                Some(policy.nonce_key(key))
            }
            other => other,
        };
        if dpop.is_some() && self.jwks_url.is_none() && self.introspection_url.is_none() {
            return Err("--dpop needs --jwks-url or --introspection-url".into());
        }
        let config = |issuer: &str| {
            let config = AuthConfig::new()
                .resource(audience.clone())
                .authorization_server(issuer)
                .required_scopes(self.required_scopes.clone());
            match dpop.clone() {
                Some(policy) => config.dpop(policy),
                None => config,
            }
        };
        if self.accept_generic_typ && self.jwks_url.is_none() {
            return Err("--accept-generic-typ needs --jwks-url".into());
        }
        if let Some(jwks_url) = &self.jwks_url {
            let (Some(issuer), Some(audience)) = (&self.issuer, &self.audience) else {
                return Err("--jwks-url needs --issuer and --audience".into());
            };
            let mut verifier = JwtVerifier::builder(issuer, audience).jwks_url(jwks_url);
            if self.accept_generic_typ {
                verifier = verifier.accept_generic_typ();
            }
            let verifier = verifier.build()?;
            return Ok(Some(AuthSetup {
                authenticator: ResourceServer::Jwt(verifier),
                config: config(issuer),
                mode: format!(
                    "JWT access tokens from {issuer} (keys at {jwks_url}) for {audience}"
                ),
            }));
        }
        if let Some(url) = &self.introspection_url {
            let (Some(id), Some(secret)) = (&self.client_id, &self.client_secret) else {
                return Err("--introspection-url needs --client-id and --client-secret".into());
            };
            let mut introspection =
                Introspection::builder(url, &audience).client_credentials(id, secret);
            if let Some(issuer) = &self.issuer {
                introspection = introspection.issuer(issuer);
            }
            return Ok(Some(AuthSetup {
                authenticator: ResourceServer::Introspection(introspection.build()?),
                config: config(self.issuer.as_deref().unwrap_or(url)),
                mode: format!("opaque tokens introspected at {url} for {audience}"),
            }));
        }
        if self.cert_auth {
            return Ok(Some(AuthSetup {
                authenticator: ResourceServer::Certificate(
                    CertificateAuth::new().scopes(self.required_scopes.clone()),
                ),
                config: config(self.issuer.as_deref().unwrap_or("https://127.0.0.1/")),
                mode: format!("client certificates (mTLS) for {audience}"),
            }));
        }
        if !self.static_tokens.is_empty() {
            let mut tokens = StaticTokens::new();
            for (i, token) in self.static_tokens.iter().enumerate() {
                let subject = match i {
                    0 => "static-token".to_owned(),
                    i => format!("static-token-{}", i + 1),
                };
                tokens = tokens.token(token, Principal::new(subject, self.required_scopes.clone()));
            }
            let n = self.static_tokens.len();
            return Ok(Some(AuthSetup {
                authenticator: ResourceServer::Static(tokens),
                config: config(self.issuer.as_deref().unwrap_or("http://127.0.0.1/")),
                mode: format!(
                    "{n} static Bearer token(s), each its own principal, for {audience} (benchmarks and tests only)"
                ),
            }));
        }
        if self.issuer.is_some() || self.audience.is_some() || !self.required_scopes.is_empty() {
            return Err(
                "--issuer, --audience and --required-scope need --jwks-url or --introspection-url"
                    .into(),
            );
        }
        Ok(None)
    }
}

/// A `--group-ipv4`/`--group-ipv6` value: a prefix length of at most `max`.
fn prefix(arg: Option<String>, max: u8) -> Result<u8, Box<dyn std::error::Error>> {
    let arg = arg.ok_or(USAGE)?;
    match arg.parse::<u8>() {
        Ok(bits) if bits <= max => Ok(bits),
        _ => Err(format!("a prefix length of 0 to {max} bits, not `{arg}`").into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: over stdio, stdout carries nothing but the protocol.
    // `warn` unless RUST_LOG says more: the tests run it under load.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    wymcp::telemetry::init_with(wymcp::telemetry::Format::from_env(), filter)?;
    let mut args = std::env::args().skip(1);
    let mut bind = "127.0.0.1:3000".to_owned();
    let mut replica: Option<String> = None;
    let mut auth = AuthArgs {
        scheme: "http",
        ..AuthArgs::default()
    };
    let mut tls_cert: Option<String> = None;
    let mut tls_key: Option<String> = None;
    let mut tls_client_ca: Option<String> = None;
    let mut tls_client_auth = wymcp::serve::ClientAuth::Optional;
    let mut handshake_timeout: Option<Duration> = None;
    let mut trusted: Vec<wymcp::IpNet> = Vec::new();
    let mut stdio = false;
    let mut metrics: Option<String> = None;
    let mut grouping = wymcp::ledger::Grouping::default();
    let mut redis = std::env::var("WYMCP_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty());
    while let Some(arg) = args.next() {
        match (arg.as_str(), &mut args) {
            ("--stdio", _) => stdio = true,
            ("--bind", args) => bind = args.next().ok_or(USAGE)?,
            ("--replica", args) => replica = Some(args.next().ok_or(USAGE)?),
            ("--trusted-proxy", args) => trusted.push(args.next().ok_or(USAGE)?.parse()?),
            ("--redis-url", args) => redis = Some(args.next().ok_or(USAGE)?),
            ("--metrics", args) => metrics = Some(args.next().ok_or(USAGE)?),
            ("--jwks-url", args) => auth.jwks_url = Some(args.next().ok_or(USAGE)?),
            ("--accept-generic-typ", _) => auth.accept_generic_typ = true,
            ("--issuer", args) => auth.issuer = Some(args.next().ok_or(USAGE)?),
            ("--audience", args) => auth.audience = Some(args.next().ok_or(USAGE)?),
            ("--introspection-url", args) => {
                auth.introspection_url = Some(args.next().ok_or(USAGE)?);
            }
            ("--client-id", args) => auth.client_id = Some(args.next().ok_or(USAGE)?),
            ("--client-secret", args) => auth.client_secret = Some(args.next().ok_or(USAGE)?),
            ("--required-scope", args) => auth.required_scopes.push(args.next().ok_or(USAGE)?),
            ("--static-token", args) => auth.static_tokens.push(args.next().ok_or(USAGE)?),
            ("--dpop", args) => auth.dpop = Some(args.next().ok_or(USAGE)?),
            ("--dpop-nonce", _) => auth.dpop_nonce = true,
            ("--tls-cert", args) => tls_cert = Some(args.next().ok_or(USAGE)?),
            ("--tls-key", args) => tls_key = Some(args.next().ok_or(USAGE)?),
            ("--tls-client-ca", args) => tls_client_ca = Some(args.next().ok_or(USAGE)?),
            ("--tls-client-auth", args) => {
                tls_client_auth = match args.next().as_deref() {
                    Some("optional") => wymcp::serve::ClientAuth::Optional,
                    Some("required") => wymcp::serve::ClientAuth::Required,
                    _ => return Err(USAGE.into()),
                };
            }
            ("--tls-handshake-timeout-ms", args) => {
                let ms: u64 = args.next().ok_or(USAGE)?.parse()?;
                handshake_timeout = Some(Duration::from_millis(ms));
            }
            ("--cert-auth", _) => auth.cert_auth = true,
            ("--group-ipv4", args) => grouping.ipv4_prefix = prefix(args.next(), 32)?,
            ("--group-ipv6", args) => grouping.ipv6_prefix = prefix(args.next(), 128)?,
            _ => return Err(format!("{USAGE}; got `{arg}`").into()),
        }
    }
    let tls = match (&tls_cert, &tls_key) {
        (Some(cert), Some(key)) => {
            let mut tls = wymcp::serve::Tls::builder(cert, key);
            if let Some(ca) = &tls_client_ca {
                tls = tls.client_ca(ca, tls_client_auth);
            }
            Some(tls.build()?)
        }
        (None, None) if tls_client_ca.is_none() => None,
        _ => {
            return Err(
                "--tls-cert and --tls-key go together (and --tls-client-ca needs them)".into(),
            );
        }
    };
    if auth.cert_auth && tls_client_ca.is_none() {
        return Err("--cert-auth needs --tls-client-ca".into());
    }
    if tls.is_some() {
        auth.scheme = "https";
    }
    let resource_server = auth.resource_server(&bind)?;
    // Replicas behind one load balancer share the key that seals MRTR
    // requestState, so a round begun on one finishes on any other.
    let auth_mode = resource_server.as_ref().map(|setup| setup.mode.clone());
    if stdio && resource_server.is_some() {
        // A stdio client sends no bearer token: auth is HTTP's.
        return Err("--stdio takes no auth flags: over stdio there is no token to check".into());
    }
    // Installed before the server is built: its instruments come from the
    // global meter provider.
    let prometheus = metrics
        .as_ref()
        .map(|_| wymcp::metrics::Prometheus::install());
    let server = Arc::new(server(
        Keys::from_env()?,
        resource_server,
        redis.as_deref(),
        grouping,
    )?);
    if redis.is_some() {
        // Not the URL: it may hold a password. On stderr: over stdio,
        // stdout carries nothing but the protocol.
        eprintln!("sharing Redis with the other replicas");
    }
    tokio::spawn(mirror_catalog(server.catalog().clone()));
    if stdio {
        wymcp::stdio::serve(server).await?;
        return Ok(());
    }
    // Large bodies read, then quiet: free memory back to the kernel (the
    // deployment guide's "Memory and the allocator").
    let mut router = chain::post::router(server.clone()).layer(
        wymcp::memory::ReleaseMemory::after(wymcp::memory::DEFAULT_RELEASE_AFTER),
    );
    if let Some(name) = replica {
        // Names the replica that answered, for the multi-replica test.
        let value = HeaderValue::from_str(&name)?;
        router = router.layer(wymcp::axum::middleware::map_response(
            move |mut response: wymcp::axum::response::Response| {
                let value = value.clone();
                async move {
                    response.headers_mut().insert("x-wymcp-replica", value);
                    response
                }
            },
        ));
    }
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let scheme = auth.scheme;
    println!("listening on {scheme}://{}/mcp", listener.local_addr()?);
    if let (Some(addr), Some(prometheus)) = (metrics, prometheus) {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        println!("metrics on http://{}/metrics", listener.local_addr()?);
        tokio::spawn(serve_metrics(listener, prometheus));
    }
    if let Some(mode) = auth_mode {
        println!("auth: {mode}");
    }
    let mut config = wymcp::ServeConfig::default().trusted_proxies(trusted);
    if let Some(timeout) = handshake_timeout {
        config = config.tls_handshake_timeout(timeout);
    }
    let mut serve = wymcp::serve_with(listener, router, config)
        .with_graceful_shutdown(wymcp::serve::shutdown_signal())
        .closing_streams_of(&server)
        .counting_in(&server);
    if let Some(tls) = tls {
        serve = serve.tls(tls);
    }
    serve.await?;
    println!("shut down");
    Ok(())
}
