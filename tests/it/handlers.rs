//! What a handler author touches (issue 17), end to end through the
//! default chain in both eras, each result checked against its revision's
//! official schema: tool input errors the model reads, `?` for any error,
//! resource not found in the era's code, completion references checked,
//! tool names checked, icons and annotations, the capabilities each era is
//! offered, shared state, notifications from a handler, per-item scopes,
//! typed structured output, typed template variables and prompt arguments,
//! and the request span.
//!
//! The fixture is a small notes server: two bearer tokens, one of which may
//! write; `add_note` (scoped `notes:write`, a typed output), `read_note`
//! (`notes:read`), a `notes://{id}` template read with a typed id, a typed
//! prompt, and a prompt only a writer may get.

#![allow(clippy::needless_pass_by_value)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::{
    Annotations, BuildError, CompletionRef, Completions, Content, Context, Era, HandlerError, Icon,
    IconTheme, NoArgs, Prompt, PromptResult, PromptRole, Resource, ResourceContents,
    ResourceTemplate, Server, Structured, SurfaceError, Tool, ToolResult,
};

use wymcp::testing::{Client, Transcript};

use crate::support::{Answered, LEGACY, MODERN, Req, assert_schema, chain, send};

/// The notes every handler shares, by type.
#[derive(Default)]
struct Notes(Mutex<BTreeMap<u64, String>>);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewNote {
    /// What the note says.
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    /// The new note's id.
    id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteId {
    /// The note's id.
    id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Summarise {
    /// The note to summarise.
    id: u64,
    /// At most this many words.
    words: Option<u32>,
}

/// A value no server of these tests is given.
struct Unset;

fn icon(name: &str) -> Icon {
    Icon::new(format!("https://example.com/{name}.png"))
        .mime_type("image/png")
        .sizes(["48x48"])
        .theme(IconTheme::Light)
}

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    Principal::new(subject, scopes.iter().copied())
}

/// A server of notes: `reader` holds `mcp notes:read`, `writer` also
/// `notes:write`, `guest` only `mcp`; the server requires `mcp`.
fn notes(configure: impl FnOnce(wymcp::ServerBuilder) -> wymcp::ServerBuilder) -> Arc<Server> {
    let tokens = StaticTokens::new()
        .token("guest", principal("guest", &["mcp"]))
        .token("reader", principal("reader", &["mcp", "notes:read"]))
        .token(
            "writer",
            principal("writer", &["mcp", "notes:read", "notes:write"]),
        );
    let builder = Server::builder()
        .info("notes", "1.0.0")
        .title("Notes")
        .description("Keeps notes")
        .icon(icon("server"))
        .website_url("https://example.com/notes")
        .auth(tokens, AuthConfig::new().required_scopes(["mcp"]))
        .state(Notes::default())
        .tool(
            Tool::new("add_note")
                .title("Add a note")
                .description("Adds a note")
                .icon(icon("add"))
                .scopes(["notes:write"])
                .handler(|note: NewNote, cx: Context| async move {
                    let id = {
                        let mut notes = cx.state::<Notes>().0.lock().unwrap();
                        let id = notes.len() as u64 + 1;
                        notes.insert(id, note.text);
                        id
                    };
                    cx.resources_changed();
                    cx.resource_updated(format!("notes://{id}"));
                    Ok(Structured(Added { id }))
                }),
        )
        .tool(
            Tool::new("read_note")
                .description("Reads a note")
                .scopes(["notes:read"])
                .handler(|args: NoteId, cx: Context| async move {
                    let text = cx.state::<Notes>().0.lock().unwrap().get(&args.id).cloned();
                    let text = text
                        .ok_or_else(|| HandlerError::execution(format!("no note {}", args.id)))?;
                    Ok(ToolResult::new([Content::text(text).annotated(
                        Annotations::new()
                            .audience([PromptRole::User, PromptRole::Assistant])
                            .priority(0.5)
                            .last_modified("2026-12-01T09:00:00Z"),
                    )]))
                }),
        )
        .tool(
            Tool::new("read_file")
                .description("Fails with an io::Error")
                .handler(|_: NoArgs, _| async {
                    let text = std::fs::read_to_string("/nonexistent/wymcp/notes.txt")?;
                    Ok(ToolResult::text(text))
                }),
        )
        .tool(
            Tool::new("strict")
                .description("A schema looser than its type")
                .input_schema(json!({"type": "object"}))
                .handler(
                    |args: NoteId, _| async move { Ok(ToolResult::text(args.id.to_string())) },
                ),
        )
        .tool(
            Tool::new("unset_state").handler(|_: NoArgs, cx: Context| async move {
                let _ = cx.state::<Unset>();
                Ok(ToolResult::text("unreachable"))
            }),
        )
        .tool(
            Tool::new("announce").handler(|_: NoArgs, cx: Context| async move {
                cx.tools_changed();
                cx.prompts_changed();
                Ok(ToolResult::text("announced"))
            }),
        )
        .resource(
            Resource::new("notes://about", "about")
                .title("About")
                .icon(icon("about"))
                .annotations(
                    Annotations::new()
                        .audience([PromptRole::Assistant])
                        .priority(1.0),
                )
                .text("A notes server"),
        )
        .resource_template(
            ResourceTemplate::new("notes://{id}", "note")
                .title("A note")
                .icon(icon("note"))
                .annotations(Annotations::new().priority(0.8))
                .mime_type("text/plain")
                .scopes(["notes:read"])
                .handler(|uri: String, note: NoteId, cx: Context| async move {
                    let text = cx.state::<Notes>().0.lock().unwrap().get(&note.id).cloned();
                    let text = text.ok_or_else(|| HandlerError::resource_not_found(uri.clone()))?;
                    Ok(vec![ResourceContents::text(uri, text)])
                }),
        )
        .prompt(
            Prompt::new("summarise")
                .title("Summarise")
                .icon(icon("summarise"))
                .handler(|args: Summarise, _| async move {
                    let words = args.words.unwrap_or(50);
                    Ok(PromptResult::new()
                        .user(format!("Summarise note {} in {words} words.", args.id)))
                }),
        )
        .prompt(
            Prompt::new("purge")
                .scopes(["notes:write"])
                .handler(|_: NoArgs, _| async {
                    Ok(PromptResult::new().user("Purge every note."))
                }),
        )
        .completion(|request, _| async move {
            Ok(match request.reference {
                CompletionRef::Prompt(_) => Completions::matching(&request.value, ["1", "2", "12"]),
                CompletionRef::Resource(_) => Completions::matching(&request.value, ["7", "70"]),
            })
        });
    Arc::new(configure(builder).build().unwrap())
}

/// A request of `era` as `token`'s holder sends it.
fn req(era: Era, id: i64, method: &str, params: Value, token: &str) -> Req {
    match era {
        Era::Modern => Req::modern(id, method).params(params),
        Era::Legacy => Req::legacy(id, method).params(params),
    }
    .bearer(token)
}

/// The revision whose schema a result of `era` is checked against.
fn revision(era: Era) -> &'static str {
    match era {
        Era::Modern => MODERN,
        Era::Legacy => LEGACY,
    }
}

/// The status of a -32602 in `era`: its own on 2026, 200 on 2025.
fn bad_request(era: Era) -> StatusCode {
    match era {
        Era::Modern => StatusCode::BAD_REQUEST,
        Era::Legacy => StatusCode::OK,
    }
}

const ERAS: [Era; 2] = [Era::Modern, Era::Legacy];

/// A request of `era` as `token`'s holder sends it, through the default
/// chain with `wymcp::testing`.
async fn ask(
    server: &Arc<Server>,
    era: Era,
    method: &str,
    params: Value,
    token: &str,
) -> Transcript {
    let client = Client::new(server.clone()).era(era).bearer(token);
    client.send(method, params).await
}

async fn call(server: &Arc<Server>, era: Era, params: Value, token: &str) -> Transcript {
    ask(server, era, "tools/call", params, token).await
}

/// The text of a tool result's first block, asserting the result is a
/// valid `CallToolResult` of the era with `isError` as `is_error`.
#[track_caller]
fn tool_text(reply: &Transcript, era: Era, is_error: bool) -> String {
    let result = reply.answered();
    assert_schema(revision(era), "CallToolResult", result);
    assert_eq!(
        result.get("isError") == Some(&json!(true)),
        is_error,
        "{result}"
    );
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Rule: arguments that break the inputSchema are a tool result with
/// `isError: true` naming the pointer and what was expected, which a
/// client shows the model (SEP-1303), in both eras.
#[tokio::test]
async fn arguments_that_break_the_schema_are_a_result_the_model_reads() {
    let server = notes(|b| b);
    for era in ERAS {
        let reply = call(
            &server,
            era,
            json!({"name": "add_note", "arguments": {"text": 5}}),
            "writer",
        )
        .await;
        let text = tool_text(&reply, era, true);
        assert!(
            text.starts_with("invalid arguments for tool `add_note`:")
                && text.contains("at `/text`")
                && text.contains("\"string\""),
            "{era:?}: {text}"
        );
        let reply = call(
            &server,
            era,
            json!({"name": "add_note", "arguments": {}}),
            "writer",
        )
        .await;
        let text = tool_text(&reply, era, true);
        assert!(
            text.contains("at (root)") && text.contains("text"),
            "{text}"
        );
    }
}

/// Rule: arguments the schema lets through but the handler's type refuses
/// are the same tool input error, naming the field's pointer.
#[tokio::test]
async fn arguments_the_type_refuses_are_a_result_the_model_reads() {
    let server = notes(|b| b);
    for era in ERAS {
        let reply = call(
            &server,
            era,
            json!({"name": "strict", "arguments": {"id": "seven"}}),
            "guest",
        )
        .await;
        let text = tool_text(&reply, era, true);
        assert!(
            text.starts_with("invalid arguments for tool `strict`:") && text.contains("at `/id`"),
            "{era:?}: {text}"
        );
    }
}

/// Rule: an unknown tool stays the protocol's -32602, naming it.
#[tokio::test]
async fn an_unknown_tool_stays_invalid_params() {
    let server = notes(|b| b);
    for era in ERAS {
        let reply = call(
            &server,
            era,
            json!({"name": "nope", "arguments": {}}),
            "writer",
        )
        .await;
        let error = reply.refused(bad_request(era), -32602);
        assert_eq!(error["data"]["name"], "nope");
    }
}

/// Rule: any `std::error::Error` returned with `?` is an execution error,
/// the model reading its message.
#[tokio::test]
async fn question_mark_makes_any_error_a_tool_error() {
    let server = notes(|b| b);
    for era in ERAS {
        let reply = call(&server, era, json!({"name": "read_file"}), "guest").await;
        let text = tool_text(&reply, era, true);
        let expected = std::fs::read_to_string("/nonexistent/wymcp/notes.txt").unwrap_err();
        assert_eq!(text, expected.to_string());
    }
}

/// Rule: `HandlerError::resource_not_found` is -32602 on 2026 (SEP-2164)
/// and -32002 on 2025, with `data.uri`; a URI whose variables do not read
/// into the handler's type names no resource either.
#[tokio::test]
async fn resource_not_found_is_in_the_code_of_the_era() {
    let server = notes(|b| b);
    for (era, code) in [(Era::Modern, -32602), (Era::Legacy, -32002)] {
        for uri in ["notes://99", "notes://abc"] {
            let reply = ask(
                &server,
                era,
                "resources/read",
                json!({"uri": uri}),
                "reader",
            )
            .await;
            let error = reply.refused(bad_request(era), code);
            assert_eq!(error["data"]["uri"], uri);
        }
    }
}

/// Rule: a template handler takes its variables typed: `notes://{id}` hands
/// it a `u64`.
#[tokio::test]
async fn template_variables_are_typed() {
    let server = notes(|b| b);
    call(
        &server,
        Era::Modern,
        json!({"name": "add_note", "arguments": {"text": "milk"}}),
        "writer",
    )
    .await
    .answered();
    for era in ERAS {
        let reply = ask(
            &server,
            era,
            "resources/read",
            json!({"uri": "notes://1"}),
            "reader",
        )
        .await;
        let result = reply.answered();
        assert_schema(revision(era), "ReadResourceResult", result);
        assert_eq!(
            result["contents"],
            json!([{"uri": "notes://1", "mimeType": "text/plain", "text": "milk"}])
        );
    }
}

/// Rule: a required field of the variables' type that the template has no
/// variable for is refused at registration.
#[test]
fn a_typed_variable_the_template_lacks_is_refused() {
    let error = Server::builder()
        .resource_template(ResourceTemplate::new("notes://{name}", "n").handler(
            |uri: String, _: NoteId, _| async move { Ok(vec![ResourceContents::text(uri, "")]) },
        ))
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::Surface(SurfaceError::UriTemplate { template, reason })
            if template == "notes://{name}" && reason.contains("`id`")),
        "{error}"
    );
}

/// Rule: a prompt's argument list derives from its arguments' type (names,
/// doc comments, which are required); each string is read as its field's
/// type; one that is not is -32602 naming it.
#[tokio::test]
async fn prompt_arguments_are_typed() {
    let server = notes(|b| b);
    for era in ERAS {
        let reply = ask(&server, era, "prompts/list", json!({}), "reader").await;
        let result = reply.answered();
        assert_schema(revision(era), "ListPromptsResult", result);
        let summarise = &result["prompts"][0];
        assert_eq!(summarise["name"], "summarise");
        assert_eq!(
            summarise["arguments"],
            json!([
                {"name": "id", "description": "The note to summarise.", "required": true},
                {"name": "words", "description": "At most this many words."}
            ])
        );
        let get = |arguments: Value| {
            ask(
                &server,
                era,
                "prompts/get",
                json!({"name": "summarise", "arguments": arguments}),
                "reader",
            )
        };
        let result = get(json!({"id": "3", "words": "10"})).await;
        let result = result.answered();
        assert_schema(revision(era), "GetPromptResult", result);
        assert_eq!(
            result["messages"][0]["content"]["text"],
            "Summarise note 3 in 10 words."
        );
        let error = get(json!({"id": "three"})).await;
        let error = error.refused(bad_request(era), -32602);
        assert_eq!(error["data"]["argument"], "id");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("expected an integer"),
            "{error}"
        );
        get(json!({"words": "10"}))
            .await
            .refused(bad_request(era), -32602);
    }
}

/// Rule: `completion/complete` naming a prompt, template, argument or
/// variable the server does not have is -32602, not an empty completion.
#[tokio::test]
async fn completion_of_something_the_server_lacks_is_invalid_params() {
    let server = notes(|b| b);
    for era in ERAS {
        let complete = |reference: Value, argument: &'static str| {
            ask(
                &server,
                era,
                "completion/complete",
                json!({"ref": reference, "argument": {"name": argument, "value": "1"}}),
                "reader",
            )
        };
        let reply = complete(json!({"type": "ref/prompt", "name": "summarise"}), "id").await;
        let result = reply.answered();
        assert_schema(revision(era), "CompleteResult", result);
        assert_eq!(result["completion"]["values"], json!(["1", "12"]));
        let reply = complete(json!({"type": "ref/resource", "uri": "notes://{id}"}), "id").await;
        assert_eq!(reply.answered()["completion"]["values"], json!([]));
        for (reference, argument, names) in [
            (
                json!({"type": "ref/prompt", "name": "nope"}),
                "id",
                "unknown prompt `nope`",
            ),
            (
                json!({"type": "ref/prompt", "name": "summarise"}),
                "nope",
                "has no argument `nope`",
            ),
            (
                json!({"type": "ref/resource", "uri": "notes://{x}"}),
                "x",
                "unknown resource template",
            ),
            (
                json!({"type": "ref/resource", "uri": "notes://{id}"}),
                "nope",
                "has no variable `nope`",
            ),
        ] {
            let reply = complete(reference, argument).await;
            let error = reply.refused(bad_request(era), -32602);
            assert!(
                error["message"].as_str().unwrap().contains(names),
                "{error}"
            );
        }
    }
}

/// Rule: tool names are checked at build against the spec's rule (1–128
/// characters of `A-Z a-z 0-9 _ - .`), the error naming the tool.
#[test]
fn tool_names_are_checked_at_build() {
    let tool =
        |name: &str| Tool::new(name).handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) });
    let longest = "a".repeat(128);
    for good in ["a", "get_weather", "notes.add-v2", longest.as_str()] {
        assert!(Server::builder().tool(tool(good)).build().is_ok(), "{good}");
    }
    let too_long = "a".repeat(129);
    for bad in ["", "add note", "ノート", "a/b", too_long.as_str()] {
        let error = Server::builder().tool(tool(bad)).build().unwrap_err();
        assert!(
            matches!(&error, BuildError::Surface(SurfaceError::ToolName { name, .. }) if *name == bad.escape_debug().to_string()),
            "{bad:?}: {error}"
        );
        assert!(
            error
                .to_string()
                .contains(&format!("tool `{}`", bad.escape_debug())),
            "{error}"
        );
    }
    let catalog = Server::builder().build().unwrap();
    assert!(catalog.catalog().add_tool(tool("no spaces")).is_err());
}

/// Rule: icons and titles on tools, resources, templates, prompts and the
/// server's identity, annotations on content blocks and resources: each
/// listed as given, and valid under the revision's schema, in both eras.
#[tokio::test]
async fn icons_titles_and_annotations_are_listed_in_both_eras() {
    let server = notes(|b| b);
    let expected_icon = |name: &str| json!([{"src": format!("https://example.com/{name}.png"), "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}]);
    call(
        &server,
        Era::Modern,
        json!({"name": "add_note", "arguments": {"text": "eggs"}}),
        "writer",
    )
    .await
    .answered();
    for era in ERAS {
        let list = |method: &'static str| ask(&server, era, method, json!({}), "writer");
        let tools = list("tools/list").await;
        let tools = tools.answered();
        assert_schema(revision(era), "ListToolsResult", tools);
        assert_eq!(tools["tools"][0]["title"], "Add a note");
        assert_eq!(tools["tools"][0]["icons"], expected_icon("add"));
        let resources = list("resources/list").await;
        let resources = resources.answered();
        assert_schema(revision(era), "ListResourcesResult", resources);
        assert_eq!(resources["resources"][0]["icons"], expected_icon("about"));
        assert_eq!(
            resources["resources"][0]["annotations"],
            json!({"audience": ["assistant"], "priority": 1.0})
        );
        let templates = list("resources/templates/list").await;
        let templates = templates.answered();
        assert_schema(revision(era), "ListResourceTemplatesResult", templates);
        let note = &templates["resourceTemplates"][0];
        assert_eq!(
            (note["title"].clone(), note["icons"].clone()),
            (json!("A note"), expected_icon("note"))
        );
        assert_eq!(note["annotations"], json!({"priority": 0.8}));
        let prompts = list("prompts/list").await;
        let prompts = prompts.answered();
        assert_eq!(prompts["prompts"][0]["icons"], expected_icon("summarise"));
        let read = call(
            &server,
            era,
            json!({"name": "read_note", "arguments": {"id": 1}}),
            "reader",
        )
        .await;
        let content = &read.answered()["content"][0];
        tool_text(&read, era, false);
        assert_eq!(
            content["annotations"],
            json!({"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-12-01T09:00:00Z"})
        );
    }
    let identity = json!({
        "name": "notes", "version": "1.0.0", "title": "Notes", "description": "Keeps notes",
        "icons": expected_icon("server"), "websiteUrl": "https://example.com/notes"
    });
    let discover = ask(&server, Era::Modern, "server/discover", json!({}), "guest").await;
    let discover = discover.answered();
    assert_schema(MODERN, "DiscoverResult", discover);
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"],
        identity
    );
    assert_schema(MODERN, "Implementation", &identity);
    let initialize = ask(&server, Era::Legacy, "initialize", initialize(), "guest").await;
    // Answered with the session token that names the client's GET stream.
    let initialize = initialize.result().unwrap();
    assert_schema(LEGACY, "InitializeResult", initialize);
    assert_eq!(initialize["serverInfo"], identity);
}

/// The params of a 2025 `initialize`.
fn initialize() -> Value {
    json!({
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
    })
}

/// Rule: a 2026 client is offered `listChanged` and `subscribe` by default
/// (and `subscriptions/listen` is served with no builder call); so is a
/// 2025 client (its standalone GET stream delivers them);
/// `without_notifications` takes both away, and listen with them.
#[tokio::test]
async fn each_era_is_offered_what_it_can_be_delivered() {
    let server = notes(|b| b);
    let discover = ask(&server, Era::Modern, "server/discover", json!({}), "guest").await;
    assert_eq!(
        discover.answered()["capabilities"],
        json!({
            "tools": {"listChanged": true}, "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true}, "completions": {}
        })
    );
    let initialize = ask(&server, Era::Legacy, "initialize", initialize(), "guest").await;
    assert_eq!(
        initialize.result().unwrap()["capabilities"],
        json!({
            "tools": {"listChanged": true}, "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true}, "completions": {},
            "logging": {}
        })
    );
    let tools_changed = json!({"toolsListChanged": true});
    let guest = Client::new(server.clone()).bearer("guest");
    let mut stream = guest.listen(tools_changed.clone()).await.unwrap();
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );

    let quiet = notes(wymcp::ServerBuilder::without_notifications);
    let discover = ask(&quiet, Era::Modern, "server/discover", json!({}), "guest").await;
    assert_eq!(
        discover.answered()["capabilities"],
        json!({"tools": {}, "prompts": {}, "resources": {}, "completions": {}})
    );
    let failure = Client::new(quiet)
        .bearer("guest")
        .listen(tools_changed)
        .await
        .unwrap_err();
    assert_eq!(
        (failure.status, failure.code),
        (StatusCode::NOT_FOUND, Some(-32601))
    );
}

/// Rule: the application's state is one value every handler reaches by
/// type: a note one tool adds, another reads; a handler asking for state
/// the server was not given fails as a panic does (-32603, the server goes
/// on).
#[tokio::test]
async fn handlers_share_the_servers_state() {
    let server = notes(|b| b);
    for era in ERAS {
        let added = call(
            &server,
            era,
            json!({"name": "add_note", "arguments": {"text": "bread"}}),
            "writer",
        )
        .await;
        let id = added.answered()["structuredContent"]["id"]
            .as_u64()
            .unwrap();
        let read = call(
            &server,
            era,
            json!({"name": "read_note", "arguments": {"id": id}}),
            "reader",
        )
        .await;
        assert_eq!(tool_text(&read, era, false), "bread");
    }
    let reply = call(
        &server,
        Era::Modern,
        json!({"name": "unset_state"}),
        "guest",
    )
    .await;
    reply.refused(StatusCode::INTERNAL_SERVER_ERROR, -32603);
    let reply = call(
        &server,
        Era::Legacy,
        json!({"name": "unset_state"}),
        "guest",
    )
    .await;
    reply.refused(StatusCode::OK, -32603);
}

/// Rule: one call on a handler's context announces a change: the lists to
/// streams that asked for them, an update to streams subscribed to the
/// resource.
#[tokio::test]
async fn a_handler_announces_changes_in_one_call() {
    let server = notes(|b| b);
    let reader = Client::new(server.clone()).bearer("reader");
    let mut stream = reader
        .listen(json!({
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["notes://1"]
        }))
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    call(
        &server,
        Era::Modern,
        json!({"name": "add_note", "arguments": {"text": "tea"}}),
        "writer",
    )
    .await
    .answered();
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/resources/list_changed"
    );
    let updated = stream.next().await.unwrap();
    assert_eq!(
        (updated["method"].clone(), updated["params"]["uri"].clone()),
        (json!("notifications/resources/updated"), json!("notes://1"))
    );
    call(&server, Era::Modern, json!({"name": "announce"}), "guest")
        .await
        .answered();
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/prompts/list_changed"
    );
}

/// The names listed by `method` to `token`'s holder.
async fn listed(
    server: &Arc<Server>,
    era: Era,
    method: &str,
    key: &str,
    token: &str,
) -> Vec<String> {
    let reply = ask(server, era, method, json!({}), token).await;
    let result = reply.answered();
    result[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            item.get("name")
                .or_else(|| item.get("uri"))
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Rule: each caller is listed what it may use (a read-only token is never
/// offered a write tool), unless the server lists everything.
#[tokio::test]
async fn each_caller_is_listed_what_it_may_use() {
    let server = notes(|b| b);
    let everything = notes(wymcp::ServerBuilder::list_all);
    for era in ERAS {
        let tools = listed(&server, era, "tools/list", "tools", "reader").await;
        assert_eq!(
            tools,
            [
                "read_note",
                "read_file",
                "strict",
                "unset_state",
                "announce"
            ],
            "{era:?}"
        );
        let tools = listed(&server, era, "tools/list", "tools", "writer").await;
        assert_eq!(tools[0], "add_note");
        let tools = listed(&everything, era, "tools/list", "tools", "guest").await;
        assert_eq!(tools.len(), 6);
        assert_eq!(
            listed(&server, era, "prompts/list", "prompts", "reader").await,
            ["summarise"]
        );
        assert_eq!(
            listed(&server, era, "prompts/list", "prompts", "writer").await,
            ["summarise", "purge"]
        );
        assert!(
            listed(
                &server,
                era,
                "resources/templates/list",
                "resourceTemplates",
                "guest"
            )
            .await
            .is_empty()
        );
        assert_eq!(
            listed(
                &server,
                era,
                "resources/templates/list",
                "resourceTemplates",
                "reader"
            )
            .await,
            ["note"]
        );
    }
}

/// Rule: a caller without an item's scopes is answered 403 with one
/// `insufficient_scope` challenge naming every scope the call needs, the
/// server's and the item's (SEP-2350), and a JSON-RPC message naming them
/// too; -32600 with the request's id, in both eras.
#[tokio::test]
async fn a_call_without_the_items_scopes_is_403_naming_all_of_them() {
    let server = notes(|b| b);
    for era in ERAS {
        for (id, method, params, token, needed) in [
            (
                80,
                "tools/call",
                json!({"name": "add_note", "arguments": {"text": "x"}}),
                "reader",
                "mcp notes:write",
            ),
            (
                81,
                "prompts/get",
                json!({"name": "purge"}),
                "reader",
                "mcp notes:write",
            ),
            (
                82,
                "resources/read",
                json!({"uri": "notes://1"}),
                "guest",
                "mcp notes:read",
            ),
        ] {
            // Raw: the rejection event is part of the rule.
            let reply = send(&chain(server.clone()), req(era, id, method, params, token)).await;
            let error = reply.error(StatusCode::FORBIDDEN, -32600, &json!(id));
            assert_eq!(
                reply.header("www-authenticate"),
                format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\""),
                "{era:?} {method}"
            );
            let message = error["message"].as_str().unwrap();
            assert!(message.contains(needed), "{message}");
            assert_eq!(
                error["data"]["requiredScopes"],
                json!(needed.split(' ').collect::<Vec<_>>())
            );
            assert_eq!(reply.rejections.len(), 1);
            assert_eq!(
                (reply.rejections[0].status, reply.rejections[0].code),
                (403, -32600)
            );
        }
    }
}

/// Rule: an item that requires scopes on a server that authenticates no
/// one could never be used: refused at build, naming it.
#[test]
fn scopes_without_an_authenticator_are_refused_at_build() {
    let error = Server::builder()
        .tool(
            Tool::new("add_note")
                .scopes(["notes:write"])
                .handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) }),
        )
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::Surface(SurfaceError::ScopesWithoutAuth(item)) if item == "tool `add_note`"),
        "{error}"
    );
    let error = Server::builder()
        .auth(StaticTokens::new(), AuthConfig::new())
        .tool(
            Tool::new("t")
                .scopes(["a b"])
                .handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) }),
        )
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::Surface(SurfaceError::Scope { .. })),
        "{error}"
    );
}

/// Rule: a typed output derives the tool's outputSchema and answers
/// `structuredContent` with its JSON as text beside it, in both eras.
#[tokio::test]
async fn a_typed_output_is_structured_content_of_a_derived_schema() {
    let server = notes(|b| b);
    for era in ERAS {
        let tools = ask(&server, era, "tools/list", json!({}), "writer").await;
        let add = tools.answered()["tools"][0].clone();
        assert_eq!(add["outputSchema"]["type"], "object");
        assert_eq!(add["outputSchema"]["properties"]["id"]["type"], "integer");
        assert_eq!(add["outputSchema"]["required"], json!(["id"]));
        let reply = call(
            &server,
            era,
            json!({"name": "add_note", "arguments": {"text": "jam"}}),
            "writer",
        )
        .await;
        let text = tool_text(&reply, era, false);
        let result = reply.answered();
        let id = &result["structuredContent"]["id"];
        assert!(id.is_u64(), "{result}");
        assert_eq!(text, format!("{{\"id\":{id}}}"));
    }
    let error = Server::builder()
        .tool(Tool::new("count").handler(|_: NoArgs, _| async { Ok(Structured(3_u64)) }))
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::Surface(SurfaceError::Schema { tool, which: "outputSchema", .. }) if tool == "count"),
        "{error}"
    );
}

/// The request span: its fields (`mcp.*`, `jsonrpc.*`, `gen_ai.*`,
/// `error.type`, …) and its one event, as a subscriber records them.
mod span {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing_subscriber::layer::Context;

    #[derive(Debug, Default, Clone)]
    pub struct Recorded {
        /// Each request span's fields, in the order opened.
        pub spans: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
        /// Which of `spans` an open span's id is (ids are reused once closed).
        open: Arc<Mutex<BTreeMap<u64, usize>>>,
        pub events: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
        /// Each stage span: its stage, and whether a request span is its parent.
        pub stages: Arc<Mutex<Vec<(String, bool)>>>,
    }

    struct Fields<'a>(&'a mut BTreeMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }

        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Recorded {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
            if attrs.metadata().name() == "wymcp.stage" {
                let mut fields = BTreeMap::new();
                attrs.record(&mut Fields(&mut fields));
                let in_request = attrs
                    .parent()
                    .is_some_and(|p| self.open.lock().unwrap().contains_key(&p.into_u64()));
                self.stages
                    .lock()
                    .unwrap()
                    .push((fields.remove("stage").unwrap_or_default(), in_request));
            }
            if attrs.metadata().name() != "mcp.request" {
                return;
            }
            let mut fields = BTreeMap::new();
            attrs.record(&mut Fields(&mut fields));
            let mut spans = self.spans.lock().unwrap();
            spans.push(fields);
            self.open
                .lock()
                .unwrap()
                .insert(id.into_u64(), spans.len() - 1);
        }

        fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
            if let Some(&index) = self.open.lock().unwrap().get(&id.into_u64()) {
                values.record(&mut Fields(&mut self.spans.lock().unwrap()[index]));
            }
        }

        fn on_close(&self, id: Id, _: Context<'_, S>) {
            self.open.lock().unwrap().remove(&id.into_u64());
        }

        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            if event.metadata().target() == "wymcp::request" {
                let mut fields = BTreeMap::new();
                event.record(&mut Fields(&mut fields));
                self.events.lock().unwrap().push(fields);
            }
        }
    }
}

/// Rule: one `info` span per request carries the MCP semantic-convention
/// attributes (method, protocol version, request id, tool name, outcome and
/// error type), named `{method} {tool}`, with one event giving the status
/// and the duration.
#[tokio::test]
async fn each_request_has_one_span_with_the_semantic_convention_attributes() {
    use tower::ServiceExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let server = notes(|b| b);
    let recorded = span::Recorded::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorded.clone()));
    let router = chain(server.clone());
    for req in [
        req(
            Era::Modern,
            100,
            "tools/call",
            json!({"name": "add_note", "arguments": {"text": "x"}}),
            "writer",
        ),
        req(
            Era::Modern,
            101,
            "tools/call",
            json!({"name": "add_note", "arguments": {"text": 1}}),
            "writer",
        ),
        req(
            Era::Modern,
            102,
            "tools/call",
            json!({"name": "add_note", "arguments": {"text": "x"}}),
            "reader",
        ),
        req(
            Era::Legacy,
            103,
            "prompts/get",
            json!({"name": "summarise", "arguments": {"id": "1"}}),
            "reader",
        ),
    ] {
        let Ok(response) = router.clone().oneshot(req.build()).await;
        let _ = http_body_util::BodyExt::collect(response.into_body()).await;
    }
    let spans = recorded.spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 4, "{spans:#?}");
    let field = |i: usize, name: &str| spans[i].get(name).cloned().unwrap_or_default();
    assert_eq!(field(0, "otel.name"), "tools/call add_note");
    assert_eq!(field(0, "mcp.method.name"), "tools/call");
    assert_eq!(field(0, "mcp.protocol.version"), MODERN);
    assert_eq!(field(0, "jsonrpc.request.id"), "100");
    assert_eq!(field(0, "gen_ai.tool.name"), "add_note");
    assert_eq!(field(0, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(field(0, "http.response.status_code"), "200");
    assert_eq!(field(0, "error.type"), "");
    assert_eq!(field(1, "error.type"), "tool_error");
    assert_eq!(field(2, "error.type"), "-32600");
    assert_eq!(field(2, "rpc.response.status_code"), "-32600");
    assert_eq!(field(2, "http.response.status_code"), "403");
    assert_eq!(field(3, "otel.name"), "prompts/get summarise");
    assert_eq!(field(3, "gen_ai.prompt.name"), "summarise");
    assert_eq!(field(3, "mcp.protocol.version"), LEGACY);
    // The stages from classification on run in the request span; what runs
    // before a message exists is the transport's.
    let stages = recorded.stages.lock().unwrap().clone();
    for (stage, in_request) in &stages[..9] {
        let expected = !matches!(stage.as_str(), "OriginCheck" | "parse_body" | "Classify");
        assert_eq!(*in_request, expected, "{stage}: {stages:?}");
    }
    let events = recorded.events.lock().unwrap().clone();
    assert_eq!(events.len(), 4, "{events:#?}");
    assert_eq!(events[2]["status"], "403");
    assert!(events[0]["duration_ms"].parse::<f64>().unwrap() >= 0.0);
}
