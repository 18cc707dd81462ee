// `handle`, `CHAIN` and `router` are the macro's to define.
#[wymcp::pipeline]
mod post {
    use wymcp::stages;

    pub fn router() {}
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn main() {}
