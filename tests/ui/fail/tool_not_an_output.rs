// A tool answers a `ToolResult` or a `Structured<T>`: the type error points
// at the return type.
#[wymcp::tool]
async fn ping() -> String {
    "pong".to_owned()
}

fn main() {
    let _ = ping_tool();
}
