//! `Classify`: Tags the message kind and era. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Tags the message kind and era.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify;

impl Stage for Classify {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
