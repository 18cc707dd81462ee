// Rule 3: `Validate` twice.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
    pub type Revalidate = stages::Validate;
}

fn main() {}
