// The rules of `#[resource]` and `#[prompt]` in a `#[tools]` impl, every
// mistake reported at once: a resource takes no argument; a URI with a
// `{variable}` is a template; the URI comes first; an unknown key (and
// `mime_type` is a resource's, not a prompt's); a method serves one thing.
use wymcp::{PromptResult, ToolResult};

struct Notes;

#[wymcp::tools]
impl Notes {
    #[resource("notes://all")]
    async fn all(&self, id: u64) -> String {
        format!("{id}")
    }

    #[resource("notes://{id}")]
    async fn note(&self) -> String {
        String::new()
    }

    #[resource(name = "nameless")]
    async fn nameless(&self) -> String {
        String::new()
    }

    #[prompt(mime_type = "text/plain")]
    async fn summarize(&self) -> PromptResult {
        PromptResult::new()
    }

    #[prompt]
    #[tool]
    async fn both(&self) -> ToolResult {
        ToolResult::text("both")
    }
}

fn main() {
    let _ = Notes::resources();
    let _ = Notes::prompts();
}
