//! A notes server to start from: tools, `notes://{id}` (its id a `u64`),
//! `notes://all` and a prompt, all methods of the state they share
//! (`#[wymcp::handlers]`), and two bearer tokens of which only the writer's may change notes:
//! `--reader-token R --writer-token W` (or env `NOTES_READER_TOKEN`, …: a
//! command line is visible to every user), `--port 3000`. On start it prints
//! how to connect (`wymcp::serve::DevTokens`). `RUST_LOG=info` logs each request;
//! Ctrl-C stops it gracefully. Tested in `tests/it/notes.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, atomic::AtomicU64, atomic::Ordering};

use wymcp::auth::AuthConfig;
use wymcp::serve::{DevTokens, arg_or_env};
use wymcp::{Content, Context, HandlerError, PromptResult, Server, Structured, ToolResult, chain};

/// The notes and the last id given (never reused): the server's state, `&self`.
#[derive(Default)]
struct Notes(Mutex<BTreeMap<u64, String>>, AtomicU64);

/// The new note's id, and where to read it.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    id: u64,
    uri: String,
}

#[wymcp::handlers]
impl Notes {
    fn book(&self) -> MutexGuard<'_, BTreeMap<u64, String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn insert(&self, text: String) -> u64 {
        let id = self.1.fetch_add(1, Ordering::Relaxed) + 1;
        self.book().insert(id, text);
        id
    }

    /// Adds a note and answers its id.
    #[tool(scopes = ["notes:write"])]
    async fn add_note(&self, text: String, cx: Context) -> Structured<Added> {
        let id = self.insert(text);
        cx.resources_changed(); // tells the `subscriptions/listen` streams
        let uri = format!("notes://{id}");
        Structured(Added { id, uri })
    }

    /// Adds one note per text, reporting progress after each.
    #[tool(scopes = ["notes:write"])]
    async fn import_notes(&self, texts: Vec<String>, cx: Context) -> ToolResult {
        let total = f64::from(u32::try_from(texts.len()).unwrap_or(u32::MAX));
        for (done, text) in (1..).zip(texts) {
            self.insert(text);
            cx.progress(f64::from(done), Some(total), None); // sent if the client asked
        }
        cx.resources_changed();
        ToolResult::text(format!("imported {total} notes"))
    }

    /// Finds the notes containing `query`, case-insensitively.
    #[tool(read_only, scopes = ["notes:read"])]
    async fn search_notes(&self, query: String) -> ToolResult {
        let query = query.to_lowercase();
        let found: Vec<Content> = (self.book().iter())
            .filter(|(_, text)| text.to_lowercase().contains(&query))
            .map(|(id, _)| Content::resource_link(format!("notes://{id}"), format!("note {id}")))
            .collect();
        let summary = Content::text(format!("{} notes match", found.len()));
        ToolResult::new([summary].into_iter().chain(found))
    }

    /// Deletes note `id`.
    #[tool(destructive, idempotent, scopes = ["notes:write"])]
    async fn delete_note(&self, id: u64, cx: Context) -> Result<ToolResult, HandlerError> {
        if self.book().remove(&id).is_none() {
            return Err(HandlerError::execution(format!("no note {id}"))); // the model reads it
        }
        cx.resource_updated(format!("notes://{id}"));
        cx.resources_changed();
        Ok(ToolResult::text(format!("deleted note {id}")))
    }

    /// Every note, one per line.
    #[resource("notes://all", name = "all notes", scopes = ["notes:read"])]
    async fn all(&self) -> String {
        self.book().values().cloned().collect::<Vec<_>>().join("\n")
    }

    /// A note, by id (`None`: resource not found).
    #[resource_template("notes://{id}", name = "note", scopes = ["notes:read"])]
    async fn note(&self, id: u64) -> Option<String> {
        self.book().get(&id).cloned()
    }

    /// Asks for a one-line summary of note `id`.
    #[prompt(scopes = ["notes:read"])]
    async fn summarize(&self, id: u64) -> Result<PromptResult, HandlerError> {
        let text = self.book().get(&id).cloned();
        let text = text.ok_or(HandlerError::invalid_params("no such note"))?;
        Ok(PromptResult::new().user(format!("Summarise this note in a line:\n\n{text}")))
    }
}

/// The two roles, with these tokens: only the writer may change notes.
fn tokens(reader: &str, writer: &str) -> DevTokens {
    let (read, write) = (["notes:read"], ["notes:read", "notes:write"]);
    DevTokens::new("NOTES") // --reader-token, NOTES_READER_TOKEN, …: `from_args_and_env`
        .role("reader", "R", read, "search and read notes")
        .role("writer", "W", write, "also add, import and delete notes")
        .given("reader", reader)
        .given("writer", writer)
}

/// The server, `reader` and `writer` its two tokens.
pub fn server(reader: &str, writer: &str) -> Result<Server, Box<dyn std::error::Error>> {
    Ok(Server::builder()
        .info("notes", env!("CARGO_PKG_VERSION"))
        .auth(tokens(reader, writer).static_tokens()?, AuthConfig::new())
        .state(Notes::default())
        .handlers(Notes::handlers())
        .build()?)
}

/// What `main` prints on start: URL, tokens, a curl line (`DevTokens::how_to_connect`).
pub fn how_to_connect(url: &str, reader: &str, writer: &str) -> String {
    tokens(reader, writer).how_to_connect(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt::init(); // RUST_LOG=info: a line per request
    let tokens = tokens("R", "W").from_args_and_env();
    let token = |role| tokens.token(role).unwrap_or_default();
    let server = Arc::new(server(token("reader"), token("writer"))?);
    let port = arg_or_env("--port", "NOTES_PORT").unwrap_or_else(|| "3000".into()); // 0: any
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("{}", tokens.how_to_connect(&url));
    wymcp::serve(listener, chain::post::router(server.clone()))
        .with_graceful_shutdown(wymcp::serve::shutdown_signal())
        .closing_streams_of(&server)
        .await?;
    Ok(())
}
