// Rule 3: the real `Validate` under another name beside the spelled one is a
// second `Validate`, found by the type system.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;
    use wymcp::stages::Validate as Schema;

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
    pub type Recheck = Schema;
}

fn main() {}
