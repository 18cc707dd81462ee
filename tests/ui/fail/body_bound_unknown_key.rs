// Rule 4: `reason` is `#[body_bound]`'s only key.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[body_bound(reason = "reads the body", why = "a misspelt key")]
    pub type Classify = stages::Classify;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
