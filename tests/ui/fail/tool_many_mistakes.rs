// Every mistake of a tool is reported in one build.
use wymcp::{Context, ToolResult};

#[wymcp::tool(colour = "red", read_only, read_only)]
fn search(query: &str, (a, b): (u8, u8), cx: Context, again: Context) -> ToolResult {
    let _ = (query, a, b, cx, again);
    ToolResult::text("found")
}

fn main() {
    let _ = search_tool();
}
