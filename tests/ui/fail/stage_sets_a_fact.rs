// A stage of a user's own cannot make a fact its rule did not compute: the
// exchange's facts are read through methods, and none is a field to assign.
use wymcp::auth::Principal;
use wymcp::{Era, Exchange, Flow, MessageKind, Stage};

pub struct Forger;

impl Stage for Forger {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        ex.principal = Some(Principal::new("admin", ["*"]));
        ex.kind = Some(MessageKind::Notification);
        ex.era = Era::Legacy;
        Flow::Continue
    }
}

fn main() {}
