// A tool method shares the state: `&self`, never `&mut self`.
use wymcp::ToolResult;

struct Counter(u64);

#[wymcp::tools]
impl Counter {
    #[tool]
    async fn bump(&mut self) -> ToolResult {
        self.0 += 1;
        ToolResult::text(self.0.to_string())
    }
}

fn main() {
    let _ = Counter::tools();
}
