// A chain with no `Validate` and other mistakes: the missing `Validate`, found
// by the type system, is reported in the same build as the rest.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[body_bound]
    pub type Classify = stages::Classify;
    #[wire_check]
    const LIMIT: usize = 3;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
