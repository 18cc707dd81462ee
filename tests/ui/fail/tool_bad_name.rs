// A tool name is 1 to 128 of `A-Z a-z 0-9 _ - .` (SEP-986).
use wymcp::ToolResult;

#[wymcp::tool(name = "add note")]
async fn add_note() -> ToolResult {
    ToolResult::text("added")
}

fn main() {
    let _ = add_note_tool();
}
