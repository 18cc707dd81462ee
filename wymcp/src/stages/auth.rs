//! `Auth`: Authenticates the caller. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Authenticates the caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct Auth;

impl Stage for Auth {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
