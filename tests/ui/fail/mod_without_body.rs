// Rule 5: the chain must be written inline.
#[wymcp::pipeline]
mod post;

fn main() {
    let _ = post::CHAIN;
}
