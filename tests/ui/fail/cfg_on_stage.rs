// Rule 5: the macro sees the chain before `cfg` is applied.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[cfg(not(test))]
    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    #[cfg_attr(test, wire_check)]
    pub type Auth = stages::Auth;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
