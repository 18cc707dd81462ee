//! `OriginCheck`: Checks Origin and Host before anything is parsed. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Checks Origin and Host before anything is parsed.
#[derive(Debug, Clone, Copy, Default)]
pub struct OriginCheck;

impl Stage for OriginCheck {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
