// The shapes of tool `#[tool]` and `#[tools]` accept, registered on a server
// that builds.
use std::sync::Mutex;

use wymcp::auth::{AuthConfig, StaticTokens};
use wymcp::{Context, HandlerError, Server, Structured, Tool, ToolResult};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

/// Adds.
#[wymcp::tool(read_only, idempotent = true, title = "Add", scopes = ["math"])]
async fn add(a: i64, b: i64) -> Structured<Sum> {
    Structured(Sum { sum: a + b })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    query: String,
}

#[wymcp::tool(name = "search", icons = ["https://example.com/a.png", "https://example.com/b.png"])]
async fn search_things(cx: Context, #[args] search: Search) -> Result<ToolResult, HandlerError> {
    let _ = cx.method();
    Ok(ToolResult::text(search.query))
}

#[wymcp::tool]
async fn r#type(r#in: String) -> ToolResult {
    ToolResult::text(r#in)
}

#[derive(Default)]
struct Counter(Mutex<u64>);

#[wymcp::tools]
impl Counter {
    /// Bumps.
    #[tool(destructive)]
    async fn bump(&self, by: Option<u64>) -> Result<ToolResult, std::io::Error> {
        let mut n = self.0.lock().unwrap();
        *n += by.unwrap_or(1);
        Ok(ToolResult::text(n.to_string()))
    }

    /// Without `&self`: called as `Self::reset`.
    #[wymcp::tool]
    async fn reset(cx: &Context) -> ToolResult {
        cx.state::<Counter>().0.lock().unwrap().clone_from(&0);
        ToolResult::text("0")
    }
}

fn main() {
    let tools: Vec<Tool> = vec![add_tool(), search_things_tool(), type_tool()];
    Server::builder()
        .auth(StaticTokens::new(), AuthConfig::new())
        .state(Counter::default())
        .tools(tools)
        .tools(Counter::tools())
        .build()
        .expect("the tools register");
}
