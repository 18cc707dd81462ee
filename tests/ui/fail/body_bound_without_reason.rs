// Rule 4: `#[body_bound]` must say why the stage reads the body.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[body_bound]
    pub type Classify = stages::Classify;
    #[body_bound()]
    pub type Auth = stages::Auth;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
