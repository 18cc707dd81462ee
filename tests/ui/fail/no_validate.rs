// Rule 3: a chain with no `Validate` at all.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
