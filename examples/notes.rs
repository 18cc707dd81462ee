//! A notes server: the example to start from when writing a server of your
//! own. Tools to add, search and delete notes, each note readable as
//! `notes://{id}`, a prompt to summarise one, and two bearer tokens, one of
//! which may only read.
//!
//! ```text
//! cargo run -p wymcp-examples --example notes -- --port 3000
//! ```
//!
//! It listens on 127.0.0.1 (`--port 0` picks a free port) and prints
//! `listening on http://127.0.0.1:PORT/mcp`. Clients send
//! `Authorization: Bearer TOKEN`:
//!
//! * the reader token (`--reader-token`, or env `NOTES_READER_TOKEN`;
//!   default `reader-token`) holds `notes:read`: it is listed and may call
//!   `search_notes`, read notes and get the prompt;
//! * the writer token (`--writer-token`, or env `NOTES_WRITER_TOKEN`;
//!   default `writer-token`) also holds `notes:write`: it is listed
//!   `add_note` and `delete_note` too.
//!
//! A reader calling a write tool anyway is answered `403`
//! `insufficient_scope`. Prefer the environment over the flags for real
//! tokens: a command line is visible to every user of the machine.
//!
//! Handlers tell `subscriptions/listen` streams what changed
//! (`cx.resources_changed()`, `cx.resource_updated(uri)`); `RUST_LOG=info`
//! logs one line per request on stderr.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::json;
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::{
    Content, Context, HandlerError, Prompt, PromptResult, ResourceContents, ResourceTemplate,
    Server, Structured, Tool, ToolResult, chain,
};

/// Every note, shared by the handlers: registered once with
/// `.state(...)`, reached with `cx.state::<Notes>()`.
#[derive(Default)]
struct Notes(Mutex<Book>);

#[derive(Default)]
struct Book {
    /// Ids are never reused: a deleted note's URI names no later note.
    last_id: u64,
    notes: BTreeMap<u64, String>,
}

impl Notes {
    fn of(cx: &Context) -> MutexGuard<'_, Book> {
        // A handler that panicked holding the lock left the map whole.
        cx.state::<Notes>()
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn uri(id: u64) -> String {
    format!("notes://{id}")
}

// What the tools take and answer. The doc comments become the field
// descriptions of each tool's inputSchema and outputSchema.

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewNote {
    /// What the note says.
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Added {
    /// The new note's id.
    id: u64,
    /// Where to read it.
    uri: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// Words to look for, case-insensitively.
    query: String,
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
    /// At most this many words (default 30).
    words: Option<u32>,
}

fn add_note() -> Tool {
    Tool::new("add_note")
        .description("Adds a note and answers its id")
        .scopes(["notes:write"])
        .handler(|note: NewNote, cx: Context| async move {
            let id = {
                let mut book = Notes::of(&cx);
                book.last_id += 1;
                let id = book.last_id;
                book.notes.insert(id, note.text);
                id
            };
            // One more `notes://` resource exists: tell the clients listening.
            cx.resources_changed();
            Ok(Structured(Added { id, uri: uri(id) }))
        })
}

fn search_notes() -> Tool {
    Tool::new("search_notes")
        .description("Finds the notes containing a text, with progress")
        .scopes(["notes:read"])
        .annotations(json!({"readOnlyHint": true}))
        .handler(|search: Search, cx: Context| async move {
            let query = search.query.to_lowercase();
            let book = Notes::of(&cx);
            let total = book.notes.len();
            let mut found = Vec::new();
            for (done, (id, text)) in book.notes.iter().enumerate() {
                if text.to_lowercase().contains(&query) {
                    found.push(Content::resource_link(uri(*id), format!("note {id}")));
                }
                // Sent only when the client asked for it (a `progressToken`).
                #[allow(clippy::cast_precision_loss)] // a count of notes
                cx.progress((done + 1) as f64, Some(total as f64), None);
            }
            let summary = Content::text(format!("{} of {total} notes match", found.len()));
            Ok(ToolResult::new([summary].into_iter().chain(found)))
        })
}

fn delete_note() -> Tool {
    Tool::new("delete_note")
        .description("Deletes a note")
        .scopes(["notes:write"])
        .annotations(json!({"destructiveHint": true}))
        .handler(|note: NoteId, cx: Context| async move {
            if Notes::of(&cx).notes.remove(&note.id).is_none() {
                // A failure the model reads: a result with `isError: true`.
                return Err(HandlerError::execution(format!("no note {}", note.id)));
            }
            cx.resource_updated(uri(note.id));
            cx.resources_changed();
            Ok(ToolResult::text(format!("deleted note {}", note.id)))
        })
}

/// `notes://{id}`, its `{id}` read into a `u64`: `notes://abc` names no
/// note, and is answered resource not found without calling the handler.
fn note_template() -> ResourceTemplate {
    ResourceTemplate::new("notes://{id}", "note")
        .description("One note, by id")
        .mime_type("text/plain")
        .scopes(["notes:read"])
        .handler(|uri: String, note: NoteId, cx: Context| async move {
            let text = Notes::of(&cx).notes.get(&note.id).cloned();
            let text = text.ok_or_else(|| HandlerError::resource_not_found(uri.clone()))?;
            Ok(vec![ResourceContents::text(uri, text)])
        })
}

/// Prompt arguments arrive as strings; `Summarise` reads `id` as a number
/// and lists `words` as optional.
fn summarise() -> Prompt {
    Prompt::new("summarise_note")
        .description("Asks for a summary of one note")
        .scopes(["notes:read"])
        .handler(|args: Summarise, cx: Context| async move {
            let text = Notes::of(&cx).notes.get(&args.id).cloned();
            let text =
                text.ok_or_else(|| HandlerError::invalid_params(format!("no note {}", args.id)))?;
            let note = ResourceContents::text(uri(args.id), text).mime_type("text/plain");
            Ok(PromptResult::new()
                .user(Content::resource(note))
                .user(format!(
                    "Summarise this note in at most {} words.",
                    args.words.unwrap_or(30)
                )))
        })
}

/// Who holds a token. A principal may carry more than these two (the OAuth
/// client id, …), hence the `..`.
#[allow(clippy::needless_update)]
fn holder(subject: &str, scopes: &[&str]) -> Principal {
    Principal {
        subject: subject.into(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        ..Principal::default()
    }
}

fn server(reader: &str, writer: &str) -> Result<Server, wymcp::BuildError> {
    let tokens = StaticTokens::new()
        .token(reader, holder("reader", &["notes:read"]))
        .token(writer, holder("writer", &["notes:read", "notes:write"]));
    Server::builder()
        .info("notes", env!("CARGO_PKG_VERSION"))
        .instructions("Keeps short notes. Search before adding a duplicate.")
        .auth(tokens, AuthConfig::new())
        .state(Notes::default())
        .tool(add_note())
        .tool(search_notes())
        .tool(delete_note())
        .resource_template(note_template())
        .prompt(summarise())
        .build()
}

const USAGE: &str = "usage: notes [--port PORT] [--reader-token TOKEN] [--writer-token TOKEN] \
    (port 3000 by default, 0 picks one; env NOTES_READER_TOKEN and NOTES_WRITER_TOKEN, \
    `reader-token` and `writer-token` by default)";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let mut reader = env("NOTES_READER_TOKEN", "reader-token");
    let mut writer = env("NOTES_WRITER_TOKEN", "writer-token");
    let mut port: u16 = 3000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), &mut args) {
            ("--port", args) => port = args.next().and_then(|p| p.parse().ok()).ok_or(USAGE)?,
            ("--reader-token", args) => reader = args.next().ok_or(USAGE)?,
            ("--writer-token", args) => writer = args.next().ok_or(USAGE)?,
            _ => return Err(format!("{USAGE}; got `{arg}`").into()),
        }
    }
    if reader == writer {
        return Err("the reader and writer tokens must differ".into());
    }
    let server = std::sync::Arc::new(server(&reader, &writer)?);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    wymcp::serve(listener, chain::post::router(server.clone()))
        .with_graceful_shutdown(wymcp::serve::shutdown_signal())
        .closing_streams_of(&server)
        .await?;
    Ok(())
}
