// A tool, prompt or resource template taking its arguments whole (`#[args]`)
// needs their type's JSON schema (it is the input schema, the prompt's
// arguments, the template's variables): one error each, at the type, naming
// it and the derive to add.
use wymcp::{PromptResult, ToolResult};

#[derive(serde::Deserialize)]
struct Search {
    query: String,
}

#[wymcp::tool]
async fn search(#[args] search: Search) -> ToolResult {
    ToolResult::text(search.query)
}

struct Notes;

#[wymcp::handlers]
impl Notes {
    #[prompt]
    async fn summarize(&self, #[args] search: Search) -> PromptResult {
        let _ = search.query;
        PromptResult::new()
    }

    #[resource_template("notes://{query}")]
    async fn note(#[args] search: Search) -> String {
        search.query
    }
}

fn main() {
    let _ = search_tool();
    let _ = Notes::handlers();
}
