//! `Dispatch`: Routes the method to its handler. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Routes the method to its handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dispatch;

impl Stage for Dispatch {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
