// The shapes `#[resource]` and `#[prompt]` accept in a `#[tools]` impl: a
// `String`, `ResourceContents` or `Vec<ResourceContents>` answer (or a
// `Result` of one), the context by value or by reference, a prompt taking
// typed arguments or none, a template its variables, a method or an
// associated function.
use wymcp::auth::{AuthConfig, StaticTokens};
use wymcp::{Context, HandlerError, PromptResult, ResourceContents};

#[derive(Default)]
struct Notes;

#[wymcp::tools]
impl Notes {
    /// Text.
    #[resource("notes://text")]
    async fn text(&self) -> String {
        String::new()
    }

    #[wymcp::resource("notes://one", name = "one", title = "One", mime_type = "text/plain")]
    async fn one(&self, cx: Context) -> ResourceContents {
        let _ = cx;
        ResourceContents::text("notes://one", "one")
    }

    #[resource("notes://many", scopes = ["notes:read"])]
    async fn many(cx: &Context) -> Result<Vec<ResourceContents>, HandlerError> {
        let _ = cx;
        Ok(Vec::new())
    }

    /// A note.
    #[resource_template("notes://{id}/{+path}", mime_type = "text/plain")]
    async fn note(&self, id: u64, path: String) -> Option<String> {
        Some(format!("{id} {path}"))
    }

    #[resource_template("notes://count/{id}")]
    async fn counted(id: String, cx: &Context) -> Result<Vec<ResourceContents>, HandlerError> {
        let _ = (id, cx);
        Ok(Vec::new())
    }

    /// Summarises.
    #[prompt(title = "Summarise", scopes = "notes:read")]
    async fn summarize(&self, id: u64, words: Option<u32>) -> Result<PromptResult, HandlerError> {
        Ok(PromptResult::new().user(format!("{id} {words:?}")))
    }

    #[prompt(name = "hello")]
    async fn hello() -> PromptResult {
        PromptResult::new()
    }
}

fn main() {
    let server = wymcp::Server::builder()
        .auth(StaticTokens::new(), AuthConfig::new())
        .state(Notes)
        .resources(Notes::resources())
        .resource_templates(Notes::resource_templates())
        .prompts(Notes::prompts())
        .tools(Notes::tools())
        .build();
    if let Err(error) = server {
        panic!("{error}");
    }
}
