// Rule 2: a stage before `Validate` that is neither a wire check nor body-bound.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Classify = stages::Classify;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
