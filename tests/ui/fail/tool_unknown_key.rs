// `#[tool]` names the keys it knows.
use wymcp::ToolResult;

#[wymcp::tool(read_only, readonly, colour = "red")]
async fn ping() -> ToolResult {
    ToolResult::text("pong")
}

fn main() {
    let _ = ping_tool();
}
