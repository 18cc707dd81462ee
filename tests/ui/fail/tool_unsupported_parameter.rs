// An argument is a name and a type; the name is the property's.
use wymcp::ToolResult;

#[wymcp::tool]
async fn add((a, b): (i64, i64)) -> ToolResult {
    ToolResult::text((a + b).to_string())
}

fn main() {
    let _ = add_tool();
}
