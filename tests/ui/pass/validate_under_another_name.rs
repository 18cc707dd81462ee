// The real `Validate`, imported under another name, is recognised by the type
// system: the chain builds and `CHAIN` gives it the validate role.
use wymcp::Role;

#[wymcp::pipeline]
mod post {
    use wymcp::stages;
    use wymcp::stages::Validate as Schema;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type SchemaCheck = Schema;
    pub type Dispatch = stages::Dispatch;
}

fn main() {
    let roles: Vec<Role> = post::CHAIN.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::WireCheck, Role::Validate, Role::After]);
}
