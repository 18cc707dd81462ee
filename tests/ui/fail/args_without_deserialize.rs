// The arguments taken whole (`#[args]`) are read from JSON: a type that
// cannot be is one error, at the type, naming it and the derive to add.
use wymcp::ToolResult;

#[derive(schemars::JsonSchema)]
struct Search {
    query: String,
}

#[wymcp::tool]
async fn search(#[args] search: Search) -> ToolResult {
    ToolResult::text(search.query)
}

fn main() {
    let _ = search_tool();
}
