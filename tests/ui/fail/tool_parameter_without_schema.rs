// A parameter's type needs a JSON schema (the tool's input schema is made
// of them): one error, at the type, naming the parameter and the derive.
use wymcp::ToolResult;

#[derive(serde::Deserialize)]
struct Query {
    text: String,
}

#[wymcp::tool]
async fn search(query: Query, limit: u32) -> ToolResult {
    ToolResult::text(format!("{} {limit}", query.text))
}

fn main() {
    let _ = search_tool();
}
