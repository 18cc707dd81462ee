//! A notes server to start from: tools written with `#[wymcp::tool]` on the
//! state they share, `notes://{id}` (its id a `u64`) and `notes://all`, a
//! prompt, and two bearer tokens of which only the writer's may change notes:
//! `--reader-token R --writer-token W` (or env `NOTES_READER_TOKEN`, …: a
//! command line is visible to every user), `--port 3000`. On start it prints
//! how to connect (`how_to_connect`). `RUST_LOG=info` logs each request;
//! Ctrl-C stops it gracefully. Tested in `tests/it/notes.rs`.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError, atomic::AtomicU64, atomic::Ordering};

use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::{Content, Context, HandlerError, Prompt, PromptResult, Resource, ResourceContents};
use wymcp::{ResourceTemplate, Server, Structured, ToolResult, chain};

/// The notes and the last id given (never reused): the server's state, `&self`.
#[derive(Default)]
struct Notes(Mutex<BTreeMap<u64, String>>, AtomicU64);

/// The new note's id, and where to read it.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    id: u64,
    uri: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteId {
    /// The note's id.
    id: u64,
}

#[wymcp::tools]
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
}

/// The server, `reader` and `writer` its two tokens.
pub fn server(reader: &str, writer: &str) -> Result<Server, wymcp::BuildError> {
    let (read, write) = (["notes:read"], ["notes:read", "notes:write"]);
    let tokens = StaticTokens::new()
        .token(reader, Principal::new("reader", read))
        .token(writer, Principal::new("writer", write));
    let all = Resource::new("notes://all", "all notes").scopes(["notes:read"]);
    let all = all.handler(|uri: String, cx: Context| async move {
        let book = cx.state::<Notes>().book();
        let all: Vec<&str> = book.values().map(String::as_str).collect();
        Ok(vec![ResourceContents::text(uri, all.join("\n"))])
    });
    let note = ResourceTemplate::new("notes://{id}", "note").scopes(["notes:read"]);
    let note = note.handler(|uri: String, note: NoteId, cx: Context| async move {
        let text = cx.state::<Notes>().book().get(&note.id).cloned();
        let text = text.ok_or(HandlerError::resource_not_found(&uri))?;
        Ok(vec![ResourceContents::text(uri, text)])
    });
    let prompt = Prompt::new("summarize").scopes(["notes:read"]);
    let prompt = prompt.handler(|note: NoteId, cx: Context| async move {
        let text = cx.state::<Notes>().book().get(&note.id).cloned();
        let text = text.ok_or(HandlerError::invalid_params("no such note"))?;
        Ok(PromptResult::new().user(format!("Summarise this note in a line:\n\n{text}")))
    });
    Server::builder()
        .info("notes", env!("CARGO_PKG_VERSION"))
        .auth(tokens, AuthConfig::new())
        .state(Notes::default())
        .tools(Notes::tools())
        .resource(all)
        .resource_template(note)
        .prompt(prompt)
        .build()
}

/// What `main` prints on start: the URL, the tokens (only the defaults are
/// shown: a token of your own is a secret), and a curl line listing the tools.
pub fn how_to_connect(url: &str, reader: &str, writer: &str) -> String {
    let defaults = (reader, writer) == ("R", "W");
    let (reader, writer) = if defaults {
        ("R", "W")
    } else {
        ("<reader token>", "<writer token>")
    };
    let source = if defaults {
        "development defaults; set your own with"
    } else {
        "given by"
    };
    format!(
        "listening on {url}\n\
         reader token: {reader} (search and read notes)\n\
         writer token: {writer} (also add, import and delete notes)\n\
         ({source} --reader-token/--writer-token or NOTES_READER_TOKEN/NOTES_WRITER_TOKEN)\n\
         list the tools:\n  \
         curl -s -H 'Authorization: Bearer {writer}' -H 'Content-Type: application/json' \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}' {url}\n\
         or with the MCP Inspector (Node.js):\n  \
         npx @modelcontextprotocol/inspector --cli {url} --method tools/list \
         --header 'Authorization: Bearer {writer}'"
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt::init(); // RUST_LOG=info: a line per request
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, env: &str, default: &str| {
        let at = args.iter().position(|arg| arg == name);
        let given = at.and_then(|at| args.get(at + 1)).cloned();
        given
            .or_else(|| std::env::var(env).ok())
            .unwrap_or_else(|| default.into())
    };
    let (reader, writer) = (
        flag("--reader-token", "NOTES_READER_TOKEN", "R"),
        flag("--writer-token", "NOTES_WRITER_TOKEN", "W"),
    );
    if reader == writer {
        return Err("the reader and writer tokens must differ".into());
    }
    let server = std::sync::Arc::new(server(&reader, &writer)?);
    let port: u16 = flag("--port", "NOTES_PORT", "3000").parse()?; // 0: any free port
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("{}", how_to_connect(&url, &reader, &writer));
    wymcp::serve(listener, chain::post::router(server.clone()))
        .with_graceful_shutdown(wymcp::serve::shutdown_signal())
        .closing_streams_of(&server)
        .await?;
    Ok(())
}
