// Rule 3: the real `Validate` imported under another name still counts, so a
// wire check after it is still refused (by the type system, not the spelling).
#[wymcp::pipeline]
mod post {
    use wymcp::stages;
    use wymcp::stages::Validate as Schema;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Check = Schema;
    #[wire_check]
    pub type Auth = stages::Auth;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
