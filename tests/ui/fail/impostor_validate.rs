// Rule 3: a stage of the user's own, named `Validate`, cannot pose as wymcp's.
mod mine {
    use wymcp::{Exchange, Flow, Stage};

    pub struct Validate;

    impl Stage for Validate {
        async fn run(_ex: &mut Exchange<'_>) -> Flow {
            Flow::Continue
        }
    }
}

#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = super::mine::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
