// `Validate` itself takes no tag.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
