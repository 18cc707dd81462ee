// Rule 1: a wire check placed after `Validate`.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = stages::Validate;
    #[wire_check]
    pub type Auth = stages::Auth;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
