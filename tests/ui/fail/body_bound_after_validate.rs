// `#[body_bound]` means nothing after `Validate`.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    pub type Validate = stages::Validate;
    #[body_bound(reason = "reads the validated body")]
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
