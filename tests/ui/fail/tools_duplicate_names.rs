// Two methods of one `#[tools]` impl may not serve one tool name.
use wymcp::ToolResult;

struct Notes;

#[wymcp::tools]
impl Notes {
    #[tool]
    async fn add_note(&self) -> ToolResult {
        ToolResult::text("added")
    }

    #[tool(name = "add_note")]
    async fn append_note(&self) -> ToolResult {
        ToolResult::text("appended")
    }
}

fn main() {
    let _ = Notes::tools();
}
