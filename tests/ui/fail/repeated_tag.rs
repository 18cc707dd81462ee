// Rule 4: a tag written twice on one stage.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
