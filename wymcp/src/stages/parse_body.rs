//! The parse step (stub; replaced by the real stage).

use crate::exchange::Exchange;
use crate::stage::Flow;

/// Reads and parses the body.
pub async fn parse_body(_ex: &mut Exchange<'_>) -> Flow {
    Flow::Continue
}
