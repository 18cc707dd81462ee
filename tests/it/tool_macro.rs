//! `#[wymcp::tool]` and `#[wymcp::tools]`: the tools they generate, listed
//! and called through the default chain with `wymcp::testing`. Each test names the rule it pins:
//! what the listing says (name, description, schemas, annotations, title,
//! icons), how a call reaches the function (gathered arguments, `#[args]`,
//! the context, a method of the state), what it answers (structured output,
//! a failure, bad arguments), and who may call it (scopes).

use std::sync::{Arc, Mutex};

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::{Context, HandlerError, Server, Structured, ToolResult};

use wymcp::testing::Client;

use crate::support::assert_schema;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    /// The sum.
    sum: i64,
}

/// Adds two integers.
///
/// Both are required.
#[wymcp::tool(read_only, idempotent, open_world = false, title = "Add")]
async fn add(
    /// The first term.
    a: i64,
    b: i64,
    scale: Option<i64>,
) -> Structured<Sum> {
    Structured(Sum {
        sum: (a + b) * scale.unwrap_or(1),
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
}

/// Looks for something.
#[wymcp::tool(name = "look.up", icon = "https://example.com/look.png")]
async fn look_up(#[args] search: Search, cx: &Context) -> Result<ToolResult, HandlerError> {
    if search.query.is_empty() {
        return Err(HandlerError::execution("nothing to look for"));
    }
    let who = cx.principal().map_or("nobody", |p| p.subject.as_str());
    Ok(ToolResult::text(format!(
        "{who} looked for {}",
        search.query
    )))
}

/// Takes nothing, and may run as a task.
#[wymcp::tool(task = "optional")]
async fn ping() -> ToolResult {
    ToolResult::text("pong")
}

#[derive(Default)]
struct Notes(Mutex<Vec<String>>);

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Count {
    count: usize,
}

#[wymcp::tools]
impl Notes {
    /// Adds a note.
    #[tool(destructive = false, scopes = ["notes:write"])]
    async fn add_note(&self, text: String, cx: Context) -> Structured<Count> {
        let count = {
            let mut notes = self.0.lock().unwrap();
            notes.push(text);
            notes.len()
        };
        cx.resources_changed();
        Structured(Count { count })
    }

    /// Counts the notes.
    #[tool(read_only)]
    async fn count_notes(&self) -> Structured<Count> {
        Structured(Count {
            count: self.0.lock().unwrap().len(),
        })
    }

    /// Not a tool: left as written.
    fn helper(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn server() -> Arc<Server> {
    let tokens = StaticTokens::new()
        .token("reader", Principal::new("reader", ["notes:read"]))
        .token(
            "writer",
            Principal::new("writer", ["notes:read", "notes:write"]),
        );
    Arc::new(
        Server::builder()
            .auth(tokens, AuthConfig::new())
            .state(Notes::default())
            .tool(add_tool())
            .tool(look_up_tool())
            .tool(ping_tool())
            .tools(Notes::tools())
            .build()
            .unwrap(),
    )
}

async fn list(server: &Arc<Server>, token: &str) -> Vec<Value> {
    let client = Client::new(server.clone()).bearer(token);
    let exchange = client.send("tools/list", json!({})).await;
    let result = exchange.result().unwrap();
    assert_schema("2026-07-28", "ListToolsResult", result);
    result["tools"].as_array().unwrap().clone()
}

async fn call(server: &Arc<Server>, token: &str, name: &str, arguments: Value) -> Value {
    let client = Client::new(server.clone()).bearer(token);
    let called = client.call_tool(name, arguments).await.unwrap();
    assert_schema("2026-07-28", "CallToolResult", &called.result);
    called.result
}

fn named<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools:#?}"))
}

/// Rule: the name is the function's (or `name = …`), the description its
/// doc comment, the title, hints and task support its keys; named parameters are the
/// properties of the `inputSchema`, an `Option` optional; a `Structured<T>`
/// answer gives the `outputSchema`.
#[tokio::test]
async fn the_listing_is_read_off_the_function() {
    let tools = list(&server(), "writer").await;
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["add", "look.up", "ping", "add_note", "count_notes"]);

    let add = named(&tools, "add");
    assert_eq!(
        add["description"],
        "Adds two integers.\n\nBoth are required."
    );
    assert_eq!(add["title"], "Add");
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    let input = &add["inputSchema"];
    assert_eq!(input["type"], "object");
    assert_eq!(input["properties"]["a"]["type"], "integer");
    assert_eq!(input["properties"]["a"]["description"], "The first term.");
    assert_eq!(input["required"], json!(["a", "b"]));
    assert!(input["properties"]["scale"].is_object());
    assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
    assert_eq!(
        add["outputSchema"]["properties"]["sum"]["description"],
        "The sum."
    );

    let look = named(&tools, "look.up");
    assert_eq!(look["description"], "Looks for something.");
    assert_eq!(
        look["icons"],
        json!([{"src": "https://example.com/look.png"}])
    );
    assert_eq!(
        look["inputSchema"]["properties"]["query"]["description"],
        "What to look for."
    );
    assert!(
        look.get("outputSchema").is_none(),
        "a ToolResult has no schema"
    );
    assert!(look.get("annotations").is_none(), "no hint, no annotations");

    assert!(look.get("execution").is_none(), "no `task`, never a task");
    assert_eq!(
        named(&tools, "ping")["execution"],
        json!({"taskSupport": "optional"})
    );
    let ping = &named(&tools, "ping")["inputSchema"];
    assert_eq!(ping["type"], "object");
    assert!(
        ping.get("properties").is_none(),
        "no parameter, no property"
    );
    assert_eq!(
        named(&tools, "add_note")["annotations"],
        json!({"destructiveHint": false})
    );
}

/// Rule: a call deserialises the arguments into the parameters and answers
/// the function's typed result as `structuredContent`.
#[tokio::test]
async fn a_call_reaches_the_function_with_its_arguments() {
    let server = server();
    let result = call(
        &server,
        "reader",
        "add",
        json!({"a": 2, "b": 3, "scale": 10}),
    )
    .await;
    assert_eq!(result["structuredContent"], json!({"sum": 50}));
    let result = call(&server, "reader", "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(result["structuredContent"], json!({"sum": 5}));
    let result = call(&server, "reader", "ping", json!({})).await;
    assert_eq!(result["content"][0]["text"], "pong");
}

/// Rule: `#[args]` takes the arguments object whole; the context
/// parameter is the request's (here: who called).
#[tokio::test]
async fn args_and_the_context_reach_the_function() {
    let result = call(&server(), "reader", "look.up", json!({"query": "cats"})).await;
    assert_eq!(result["content"][0]["text"], "reader looked for cats");
}

/// Rule: arguments the parameters refuse are a tool input error the model
/// reads (`isError`), and so is a `HandlerError::execution`.
#[tokio::test]
async fn bad_arguments_and_failures_are_is_error_results() {
    let server = server();
    let result = call(&server, "reader", "add", json!({"a": "two", "b": 3})).await;
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`/a`"), "{text}");
    let result = call(&server, "reader", "look.up", json!({"query": ""})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "nothing to look for");
}

/// Rule: a `#[tools]` method runs on the server's state, one value shared
/// by every call; `scopes` hide a tool from, and refuse it to, a caller
/// without them.
#[tokio::test]
async fn methods_share_the_state_and_scopes_guard_them() {
    let server = server();
    let reader: Vec<Value> = list(&server, "reader").await;
    assert!(reader.iter().all(|t| t["name"] != "add_note"));

    let result = call(&server, "writer", "add_note", json!({"text": "one"})).await;
    assert_eq!(result["structuredContent"], json!({"count": 1}));
    let result = call(&server, "writer", "add_note", json!({"text": "two"})).await;
    assert_eq!(result["structuredContent"], json!({"count": 2}));
    let result = call(&server, "reader", "count_notes", json!({})).await;
    assert_eq!(result["structuredContent"], json!({"count": 2}));

    let reader = Client::new(server.clone()).bearer("reader");
    let failure = reader
        .call_tool("add_note", json!({"text": "three"}))
        .await
        .unwrap_err();
    assert_eq!(failure.status, StatusCode::FORBIDDEN);
    assert_eq!(Notes::default().helper(), 0);
}

/// A shelf of texts served as resources and prompts written as methods
/// (`#[resource]`, `#[prompt]` in a `#[wymcp::tools]` impl).
#[derive(Default)]
struct Shelf(Mutex<Vec<String>>);

#[wymcp::handlers]
impl Shelf {
    /// Every text, one per line.
    #[resource("shelf://all", name = "all texts", mime_type = "text/plain", scopes = ["shelf:read"])]
    async fn all(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }

    /// How many texts, as contents of its own.
    #[resource("shelf://count", title = "Count")]
    async fn count(&self, cx: &Context) -> Result<wymcp::ResourceContents, HandlerError> {
        let who = cx.principal().map_or("nobody", |p| p.subject.as_str());
        let count = self.0.lock().unwrap().len();
        Ok(wymcp::ResourceContents::text(
            "shelf://count",
            format!("{count} (asked by {who})"),
        ))
    }

    /// A text, by its index.
    #[resource_template("shelf://text/{index}", name = "text", scopes = ["shelf:read"])]
    async fn text(&self, index: u64) -> Option<String> {
        let index = usize::try_from(index).ok()?;
        self.0.lock().unwrap().get(index).cloned()
    }

    /// Asks for a summary of a text.
    #[prompt(scopes = ["shelf:read"])]
    async fn summarize(
        &self,
        /// The text's index.
        index: u64,
        /// At most this many words.
        words: Option<u32>,
    ) -> Result<wymcp::PromptResult, HandlerError> {
        let index = usize::try_from(index).map_err(|_| HandlerError::invalid_params("too far"))?;
        let text = self.0.lock().unwrap().get(index).cloned();
        let text = text.ok_or_else(|| HandlerError::invalid_params("no such text"))?;
        let words = words.unwrap_or(10);
        Ok(wymcp::PromptResult::new().user(format!("In {words} words: {text}")))
    }

    /// Says hello.
    #[prompt(name = "hello", title = "Hello")]
    async fn greet() -> wymcp::PromptResult {
        wymcp::PromptResult::new().user("hello")
    }

    /// The indexes of the texts, for the prompt's `index`.
    #[complete(prompt = "summarize", argument = "index")]
    async fn indexes(&self, value: String) -> wymcp::Completions {
        let count = self.0.lock().unwrap().len();
        let all: Vec<String> = (0..count).map(|i| i.to_string()).collect();
        wymcp::Completions::matching(&value, all.iter().map(String::as_str))
    }

    /// The same, for the template's `index`, with what else was given.
    #[complete(template = "shelf://text/{index}", argument = "index")]
    async fn text_indexes(
        &self,
        value: String,
        context: std::collections::BTreeMap<String, String>,
        cx: &Context,
    ) -> Result<wymcp::Completions, HandlerError> {
        let who = cx.principal().map_or("nobody", |p| p.subject.as_str());
        Ok(wymcp::Completions::new([
            format!("{value}0"),
            format!("{who}:{}", context.len()),
        ]))
    }
}

fn shelf() -> Arc<Server> {
    let tokens = StaticTokens::new()
        .token("reader", Principal::new("reader", ["shelf:read"]))
        .token("nobody", Principal::new("nobody", Vec::<String>::new()));
    let shelf = Shelf::default();
    shelf
        .0
        .lock()
        .unwrap()
        .extend(["one".to_owned(), "two".to_owned()]);
    Arc::new(
        Server::builder()
            .auth(tokens, AuthConfig::new())
            .state(shelf)
            .resources(Shelf::resources())
            .resource_templates(Shelf::resource_templates())
            .prompts(Shelf::prompts())
            .completer(Shelf::completer())
            .build()
            .unwrap(),
    )
}

/// Rule: a `#[complete]` method answers `completion/complete` for its
/// prompt argument or template variable (given what the user typed, the
/// other arguments and the context), through `Shelf::completer()`; an
/// argument that exists but that nothing completes is 400 / -32602 with
/// the request's id (no fallback handler); a server with `#[complete]`
/// methods advertises `completions`.
#[tokio::test]
async fn completion_methods_answer_their_keys() {
    let server = shelf();
    let reader = Client::new(server.clone()).bearer("reader");
    let prompt = json!({"type": "ref/prompt", "name": "summarize"});
    assert_eq!(
        reader.complete(prompt.clone(), "index", "1").await.unwrap(),
        ["1"]
    );
    assert_eq!(
        reader.complete(prompt.clone(), "index", "").await.unwrap(),
        ["0", "1"]
    );
    let template = json!({"type": "ref/resource", "uri": "shelf://text/{index}"});
    let params = json!({"ref": template, "argument": {"name": "index", "value": "4"},
                        "context": {"arguments": {"a": "b"}}});
    let answer = reader.send("completion/complete", params).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "CompleteResult", result);
    assert_eq!(result["completion"], json!({"values": ["40", "reader:1"]}));

    let missing = reader.complete(prompt, "words", "").await.unwrap_err();
    let response = missing.exchange.response().unwrap();
    assert_eq!(response["id"], missing.exchange.request["id"], "{missing}");
    assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{missing}");
    assert_eq!(missing.code, Some(-32602), "{missing}");
    assert_eq!(
        missing.exchange.header("content-type"),
        "application/json",
        "{missing}"
    );
    assert!(
        missing
            .message
            .contains("completes no argument `words` of prompt `summarize`"),
        "{missing}"
    );
    let init = reader.send("server/discover", json!({})).await;
    let caps = &init.result().unwrap()["capabilities"];
    assert_eq!(caps["completions"], json!({}), "{caps}");
}

/// Rule: `Shelf::handlers()`, registered with `ServerBuilder::handlers`,
/// serves everything the impl declares: its resources, templates, prompts
/// and completions (and `Notes::handlers()`, of an impl still written
/// `#[wymcp::tools]`, its tools).
#[tokio::test]
async fn one_registration_serves_the_whole_impl() {
    let tokens = StaticTokens::new().token(
        "reader",
        Principal::new("reader", ["shelf:read", "notes:read", "notes:write"]),
    );
    let server = Arc::new(
        Server::builder()
            .auth(tokens, AuthConfig::new())
            .state(Shelf::default())
            .state(Notes::default())
            .handlers(Shelf::handlers())
            .handlers(Notes::handlers())
            .build()
            .unwrap(),
    );
    let reader = Client::new(server).bearer("reader");
    let names = |listed: Vec<Value>, key: &str| -> Vec<String> {
        let mut names: Vec<String> = listed
            .iter()
            .map(|item| item[key].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(reader.list_tools().await.unwrap(), "name"),
        ["add_note", "count_notes"]
    );
    assert_eq!(
        names(reader.list_resources().await.unwrap(), "uri"),
        ["shelf://all", "shelf://count"]
    );
    assert_eq!(
        names(
            reader.list_resource_templates().await.unwrap(),
            "uriTemplate"
        ),
        ["shelf://text/{index}"]
    );
    assert_eq!(
        names(reader.list_prompts().await.unwrap(), "name"),
        ["hello", "summarize"]
    );
    let prompt = json!({"type": "ref/prompt", "name": "summarize"});
    assert_eq!(
        reader.complete(prompt, "index", "").await.unwrap(),
        Vec::<String>::new()
    );
}

/// Rule: an item added at run time through the `Catalog` whose handler is
/// a `&self` method of a state type the server was not given is refused
/// with `SurfaceError::MissingState` naming the type and the item (as
/// `build()` refuses it), instead of panicking at its first call; given the
/// state, it is added.
#[test]
fn a_method_added_at_run_time_without_its_state_is_refused() {
    type Add = Box<dyn Fn(&wymcp::Catalog) -> Result<(), wymcp::SurfaceError>>;
    let without = Server::builder().build().unwrap();
    let adds: [(&str, Add); 4] = [
        (
            "tool `add_note`",
            Box::new(|c| c.add_tool(Notes::add_note_tool())),
        ),
        ("prompt `hello`", Box::new(|_| Ok(()))),
        (
            "resource `shelf://count`",
            Box::new(|c| c.add_resource(Shelf::count_resource())),
        ),
        (
            "resource template `shelf://text/{index}`",
            Box::new(|c| c.add_resource_template(Shelf::text_resource_template())),
        ),
    ];
    for (what, add) in &adds {
        let result = add(without.catalog());
        if *what == "prompt `hello`" {
            // `greet` is no method: it needs no state.
            without.catalog().add_prompt(Shelf::greet_prompt()).unwrap();
            let error = without
                .catalog()
                .add_prompt(Shelf::summarize_prompt())
                .unwrap_err();
            assert!(
                matches!(&error, wymcp::SurfaceError::MissingState { item, .. }
                    if *item == "prompt `summarize`"),
                "{error}"
            );
            continue;
        }
        let error = result.unwrap_err();
        let wymcp::SurfaceError::MissingState { state, item } = &error else {
            panic!("not MissingState: {error}");
        };
        assert_eq!(item, what);
        assert!(
            state.ends_with("Notes") || state.ends_with("Shelf"),
            "{state}"
        );
        assert!(error.to_string().contains(".state("), "{error}");
    }
    let with = Server::builder()
        .state(Notes::default())
        .state(Shelf::default())
        .build()
        .unwrap();
    for (_, add) in &adds {
        add(with.catalog()).unwrap();
    }
    with.catalog()
        .add_prompt(Shelf::summarize_prompt())
        .unwrap();
}

/// Rule: the completer's table goes before the `completion` fallback (for
/// its keys); the fallback answers the rest; one key in two completers is
/// a build error naming it.
#[tokio::test]
async fn the_completer_goes_before_the_fallback() {
    let tokens = StaticTokens::new().token("reader", Principal::new("reader", ["shelf:read"]));
    let server = Arc::new(
        Server::builder()
            .auth(tokens, AuthConfig::new())
            .state(Shelf::default())
            .prompts(Shelf::prompts())
            .resource_templates(Shelf::resource_templates())
            .completer(Shelf::indexes_completion())
            .completion(|_, _| async { Ok(wymcp::Completions::new(["fallback"])) })
            .build()
            .unwrap(),
    );
    let client = Client::new(server).bearer("reader");
    let prompt = json!({"type": "ref/prompt", "name": "summarize"});
    assert_eq!(
        client.complete(prompt.clone(), "index", "").await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        client.complete(prompt, "words", "").await.unwrap(),
        ["fallback"]
    );

    let twice = Server::builder()
        .state(Shelf::default())
        .completer(Shelf::completer())
        .completer(Shelf::indexes_completion())
        .build()
        .unwrap_err();
    assert!(
        matches!(&twice, wymcp::BuildError::RepeatedCompletion(key)
            if key == "argument `index` of prompt `summarize`"),
        "{twice}"
    );
    let no_state = Server::builder()
        .completer(Shelf::completer())
        .build()
        .unwrap_err();
    assert!(
        matches!(&no_state, wymcp::BuildError::MissingState { item, .. }
            if *item == "completion of argument `index` of prompt `summarize`"),
        "{no_state}"
    );
}

/// Rule: a `#[resource("uri")]` method is listed at its URI, named by
/// `name` (or the method), described by its doc comment, with its
/// `mime_type`, `title` and `scopes`; a read calls the method on the state
/// and a `String` answer is text at the URI; the context reaches it.
#[tokio::test]
async fn resource_methods_are_listed_and_read() {
    let server = shelf();
    let reader = Client::new(server.clone()).bearer("reader");
    let listed = reader.list_resources().await.unwrap();
    assert_eq!(
        listed,
        [
            json!({"uri": "shelf://all", "name": "all texts", "description": "Every text, one per line.", "mimeType": "text/plain"}),
            json!({"uri": "shelf://count", "name": "count", "title": "Count", "description": "How many texts, as contents of its own."}),
        ]
    );
    let all = reader.read_resource("shelf://all").await.unwrap();
    assert_eq!(
        all,
        [json!({"uri": "shelf://all", "mimeType": "text/plain", "text": "one\ntwo"})]
    );
    let count = reader.read_resource("shelf://count").await.unwrap();
    assert_eq!(count[0]["text"], "2 (asked by reader)");

    // `scopes` hide the resource from, and refuse it to, a caller without them.
    let nobody = Client::new(server.clone()).bearer("nobody");
    let listed = nobody.list_resources().await.unwrap();
    assert!(
        listed.iter().all(|r| r["uri"] != "shelf://all"),
        "{listed:?}"
    );
    let refused = nobody.read_resource("shelf://all").await.unwrap_err();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{refused}");
}

/// Rule: a `#[prompt]` method's parameters are the prompt's arguments
/// (an `Option` optional, a parameter's doc comment its description, a
/// number read from its string); its doc comment is the description; a
/// missing or unreadable argument is -32602 before the method runs.
#[tokio::test]
async fn prompt_methods_are_listed_and_rendered() {
    let server = shelf();
    let reader = Client::new(server.clone()).bearer("reader");
    let listed = reader.list_prompts().await.unwrap();
    assert_eq!(
        listed,
        [
            json!({"name": "summarize", "description": "Asks for a summary of a text.", "arguments": [
                {"name": "index", "description": "The text's index.", "required": true},
                {"name": "words", "description": "At most this many words."},
            ]}),
            json!({"name": "hello", "title": "Hello", "description": "Says hello."}),
        ]
    );
    let got = reader
        .get_prompt("summarize", json!({"index": "1", "words": "3"}))
        .await
        .unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "In 3 words: two");
    let got = reader.get_prompt("hello", json!({})).await.unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "hello");

    let missing = reader.get_prompt("summarize", json!({})).await.unwrap_err();
    assert_eq!(missing.code, Some(-32602), "{missing}");
    assert_eq!(
        missing.exchange.response().unwrap()["id"],
        missing.exchange.request["id"]
    );
    let unreadable = reader
        .get_prompt("summarize", json!({"index": "first"}))
        .await
        .unwrap_err();
    assert_eq!(unreadable.code, Some(-32602), "{unreadable}");
    assert_eq!(unreadable.data, Some(json!({"argument": "index"})));
}

/// Rule: a `#[resource_template("uri{var}")]` method is listed with its
/// template, name, description and scopes; a read matching it passes each
/// variable, read into its parameter's type, to the method; a variable
/// that does not read into its type, and a `None` answer, are resource not
/// found (400, -32602 on 2026-07-28) with the request's id.
#[tokio::test]
async fn template_methods_are_listed_and_read() {
    let server = shelf();
    let reader = Client::new(server.clone()).bearer("reader");
    let listed = reader.list_resource_templates().await.unwrap();
    assert_eq!(
        listed,
        [
            json!({"uriTemplate": "shelf://text/{index}", "name": "text", "description": "A text, by its index."})
        ]
    );
    let text = reader.read_resource("shelf://text/1").await.unwrap();
    assert_eq!(text, [json!({"uri": "shelf://text/1", "text": "two"})]);

    for uri in ["shelf://text/7", "shelf://text/first"] {
        let missing = reader.read_resource(uri).await.unwrap_err();
        let response = missing.exchange.response().unwrap();
        assert_eq!(response["id"], missing.exchange.request["id"], "{missing}");
        assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{missing}");
        assert_eq!(missing.code, Some(-32602), "{missing}");
        assert_eq!(missing.data, Some(json!({"uri": uri})), "{missing}");
    }

    let nobody = Client::new(server.clone()).bearer("nobody");
    assert_eq!(
        nobody.list_resource_templates().await.unwrap(),
        Vec::<Value>::new()
    );
    let refused = nobody.read_resource("shelf://text/1").await.unwrap_err();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{refused}");
}

/// Rule: a server given `&self` methods of a type but no `.state(..)` of
/// it is refused by `build()`, naming the type and the first item that
/// needs it, instead of panicking at the first call; functions that are no
/// method need no state.
#[test]
fn a_method_without_its_state_is_a_build_error() {
    let cases: [(wymcp::ServerBuilder, &str, &str); 4] = [
        (
            Server::builder().tools(Notes::tools()),
            "Notes",
            "tool `add_note`",
        ),
        (
            Server::builder().resources(Shelf::resources()),
            "Shelf",
            "resource `shelf://all`",
        ),
        (
            Server::builder().resource_templates(Shelf::resource_templates()),
            "Shelf",
            "resource template `shelf://text/{index}`",
        ),
        (
            Server::builder().prompts(Shelf::prompts()),
            "Shelf",
            "prompt `summarize`",
        ),
    ];
    for (builder, ty, what) in cases {
        let tokens = StaticTokens::new();
        let error = builder.auth(tokens, AuthConfig::new()).build().unwrap_err();
        let wymcp::BuildError::MissingState { state, item } = &error else {
            panic!("not MissingState: {error}");
        };
        assert!(state.ends_with(&format!("::{ty}")), "{state}");
        assert_eq!(*item, what);
        let message = error.to_string();
        assert!(
            message.contains(".state(") && message.contains(what),
            "{message}"
        );
    }
    // A free function (`ping`) and an associated function (`hello`) need no state.
    let hello = Shelf::prompts()
        .into_iter()
        .find(|p| format!("{p:?}").contains("hello"));
    Server::builder()
        .tool(ping_tool())
        .prompts(hello)
        .build()
        .unwrap();
}

/// Every count so far, as a list.
#[wymcp::tool(read_only)]
async fn counts(upto: usize) -> Vec<Count> {
    (1..=upto).map(|count| Count { count }).collect()
}

/// Rule (documented on `ToolOutput`): a tool answering `Vec<T>` answers the
/// object `{"items": [...]}`, and its `outputSchema` is that object's, with
/// `items` required: an `outputSchema` is always an object.
#[tokio::test]
async fn a_list_answer_is_an_object_of_items() {
    let server = Arc::new(Server::builder().tool(counts_tool()).build().unwrap());
    let client = Client::new(server.clone());
    let tools = client.list_tools().await.unwrap();
    let schema = &tools[0]["outputSchema"];
    assert_eq!(schema["type"], "object", "{schema:#}");
    assert_eq!(schema["required"], json!(["items"]), "{schema:#}");
    assert_eq!(schema["properties"]["items"]["type"], "array", "{schema:#}");
    let called = client
        .call_tool("counts", json!({"upto": 2}))
        .await
        .unwrap();
    assert_schema("2026-07-28", "CallToolResult", &called.result);
    assert_eq!(
        called.result["structuredContent"],
        json!({"items": [{"count": 1}, {"count": 2}]})
    );
}

/// A page of a book, taken whole by each method of [`Book`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Page {
    /// The page's number.
    page: u32,
    /// Where on it, when not the top.
    line: Option<u32>,
}

/// A tool, a prompt and a template each taking its arguments whole.
struct Book;

#[wymcp::handlers]
impl Book {
    #[tool]
    async fn turn(#[args] to: Page) -> ToolResult {
        ToolResult::text(format!("page {} line {:?}", to.page, to.line))
    }

    #[prompt]
    async fn quote(#[args] from: Page) -> wymcp::PromptResult {
        wymcp::PromptResult::new().user(format!("quote page {} line {:?}", from.page, from.line))
    }

    #[resource_template("book://{page}")]
    async fn page(#[args] at: Page) -> String {
        format!("page {} line {:?}", at.page, at.line)
    }
}

/// Rule: a tool, prompt or template taking its arguments whole
/// (`#[args]`) is described by the type's own schema, exactly as a
/// handler written by hand taking the type (the same `inputSchema`,
/// prompt arguments, template), and is called with the arguments read
/// into it; arguments the type refuses are refused as they are by hand.
#[tokio::test]
async fn whole_arguments_are_described_and_read_as_by_hand() {
    let by_macro = Arc::new(
        Server::builder()
            .handlers(Book::handlers())
            .build()
            .unwrap(),
    );
    let by_hand = Arc::new(
        Server::builder()
            .tool(wymcp::Tool::new("turn").handler(|_: Page, _| async { Ok(ToolResult::text("")) }))
            .prompt(
                wymcp::Prompt::new("quote")
                    .handler(|_: Page, _| async { Ok(wymcp::PromptResult::new()) }),
            )
            .resource_template(
                wymcp::ResourceTemplate::new("book://{page}", "page")
                    .handler(|_, _: Page, _| async { Ok(Vec::new()) }),
            )
            .build()
            .unwrap(),
    );
    let macro_client = Client::new(by_macro.clone());
    let hand_client = Client::new(by_hand.clone());
    let tools = macro_client.list_tools().await.unwrap();
    assert_eq!(tools, hand_client.list_tools().await.unwrap());
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["page"]["description"], "The page's number.",
        "{tools:#?}"
    );
    let prompts = macro_client.list_prompts().await.unwrap();
    assert_eq!(prompts, hand_client.list_prompts().await.unwrap());
    assert_eq!(
        prompts[0]["arguments"][1],
        json!({"name": "page", "description": "The page's number.", "required": true}),
        "{prompts:#?}"
    );
    assert_eq!(
        macro_client.list_resource_templates().await.unwrap(),
        hand_client.list_resource_templates().await.unwrap()
    );

    let called = macro_client
        .call_tool("turn", json!({"page": 3, "line": 7}))
        .await
        .unwrap();
    assert_eq!(called.result["content"][0]["text"], "page 3 line Some(7)");
    let refused = macro_client
        .call_tool("turn", json!({"page": "three"}))
        .await
        .unwrap();
    assert_eq!(refused.result["isError"], true, "{:#}", refused.result);
    let got = macro_client
        .get_prompt("quote", json!({"page": "4"}))
        .await
        .unwrap();
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "quote page 4 line None"
    );
    let unreadable = macro_client
        .get_prompt("quote", json!({"page": "four"}))
        .await
        .unwrap_err();
    assert_eq!(unreadable.code, Some(-32602), "{unreadable}");
    assert_eq!(unreadable.data, Some(json!({"argument": "page"})));
    let read = macro_client.read_resource("book://5").await.unwrap();
    assert_eq!(
        read,
        [json!({"uri": "book://5", "text": "page 5 line None"})]
    );
    let missing = macro_client.read_resource("book://five").await.unwrap_err();
    assert_eq!(missing.code, Some(-32602), "{missing}");
}
