// Arguments are read from JSON into owned types.
use wymcp::ToolResult;

#[wymcp::tool]
async fn echo(text: &str) -> ToolResult {
    ToolResult::text(text)
}

fn main() {
    let _ = echo_tool();
}
