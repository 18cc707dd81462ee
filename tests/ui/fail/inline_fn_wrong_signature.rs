// An inline stage with the wrong signature: the type errors point at the
// user's function, not at the macro. (A `type` item naming something that is
// not a `Stage` is refused the same way, at its name, with `Stage`'s own
// diagnostic; it is not pinned here because rustc's list of the types that do
// implement `Stage` changes whenever a stage is added.)
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    #[wire_check]
    pub async fn sync_check(_ex: &str) -> bool {
        true
    }
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
