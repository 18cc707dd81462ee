// Each key is given once.
use wymcp::ToolResult;

#[wymcp::tool(title = "Ping", read_only, title = "Pong")]
async fn ping() -> ToolResult {
    ToolResult::text("pong")
}

fn main() {
    let _ = ping_tool();
}
