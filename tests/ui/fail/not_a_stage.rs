// A type that does not implement `Stage`, and an inline stage with the wrong
// signature: the type errors point at the user's items.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub type Origin = String;
    #[wire_check]
    pub async fn sync_check(_ex: &str) -> bool {
        true
    }
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
