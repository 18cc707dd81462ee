// A tool's handler is awaited: `#[tool]` goes on an `async fn`.
use wymcp::ToolResult;

#[wymcp::tool]
fn ping() -> ToolResult {
    ToolResult::text("pong")
}

fn main() {
    let _ = ping_tool();
}
