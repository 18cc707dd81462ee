// Helper items (`use`, consts, structs, impls, plain fns, macros) sit beside
// the stages and are passed through untouched.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};
    use wymcp::Stage;

    pub const HEADER: &str = "x-tenant";

    #[derive(Debug)]
    pub struct Tenant;

    impl Stage for Tenant {
        async fn run(ex: &mut Exchange<'_>) -> Flow {
            let _ = has_tenant(ex);
            Flow::Continue
        }
    }

    fn has_tenant(ex: &Exchange<'_>) -> bool {
        ex.headers().contains_key(HEADER)
    }

    macro_rules! stage_alias {
        ($name:ident) => {
            stages::$name
        };
    }

    #[wire_check]
    pub type TenantCheck = Tenant;
    pub type Validate = stage_alias!(Validate);
    pub type Dispatch = stages::Dispatch;
}

fn main() {
    assert_eq!(post::HEADER, "x-tenant");
    assert_eq!(post::CHAIN[0].name, "TenantCheck");
}
