// Rule 4: an empty (or blank) reason is no reason.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[body_bound(reason = "")]
    pub type Classify = stages::Classify;
    #[body_bound(reason = "   ")]
    pub type Auth = stages::Auth;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
