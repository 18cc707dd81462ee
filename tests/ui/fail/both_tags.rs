// Rule 4: a stage is a wire check or body-bound, not both.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    #[body_bound(reason = "reads the body")]
    pub type Classify = stages::Classify;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
