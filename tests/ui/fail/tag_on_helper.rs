// Rule 4: tags belong on stages (`type` items, `async fn`s), not helper items.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    const LIMIT: usize = 3;

    #[body_bound(reason = "a plain fn is not a stage")]
    fn helper() -> usize {
        LIMIT
    }

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
