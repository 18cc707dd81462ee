// Stage types defined elsewhere, named by path.
mod checks {
    use wymcp::{Exchange, Flow, Stage};

    pub struct Tenant;

    impl Stage for Tenant {
        async fn run(_ex: &mut Exchange<'_>) -> Flow {
            Flow::Continue
        }
    }

    pub mod deep {
        pub struct Audit;

        impl wymcp::Stage for Audit {
            async fn run(_ex: &mut wymcp::Exchange<'_>) -> wymcp::Flow {
                wymcp::Flow::Continue
            }
        }
    }
}

#[wymcp::pipeline]
pub mod post {
    #[wire_check]
    pub type Tenant = crate::checks::Tenant;
    pub type Validate = wymcp::stages::Validate;
    pub type Audit = super::checks::deep::Audit;
    pub type Dispatch = wymcp::stages::Dispatch;
}

fn main() {
    assert_eq!(post::CHAIN[0].role, wymcp::Role::WireCheck);
    assert_eq!(post::CHAIN[2].role, wymcp::Role::After);
}
