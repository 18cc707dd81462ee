// Rule 6: the tags mean nothing outside a `#[pipeline]` module.
use wymcp::stages;

#[wymcp::wire_check]
pub type OriginCheck = stages::OriginCheck;

#[wymcp::body_bound(reason = "reads the body")]
pub type Classify = stages::Classify;

fn main() {
    let _ = OriginCheck;
    let _ = Classify;
}
