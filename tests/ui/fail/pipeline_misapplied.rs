// `#[pipeline]` goes on a module, and takes no arguments.
#[wymcp::pipeline]
fn post() {}

#[wymcp::pipeline(strict)]
mod chain {
    pub type Validate = wymcp::stages::Validate;
}

fn main() {
    post();
    let _ = chain::CHAIN;
}
