// Every mistake of a module is reported in one build.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    pub type OriginCheck = stages::OriginCheck;
    #[body_bound(reason = "")]
    pub type Classify = stages::Classify;
    #[wire_check]
    #[wire_check]
    pub type Auth = stages::Auth;
    #[wire_check]
    pub const LIMIT: usize = 3;
    pub type Validate = stages::Validate;
    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;
    pub type Dispatch = stages::Dispatch;
}

fn main() {
    let _ = post::CHAIN;
}
