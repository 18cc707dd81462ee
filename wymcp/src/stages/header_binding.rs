//! `HeaderBinding`: Binds the standard headers to the body. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Binds the standard headers to the body.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeaderBinding;

impl Stage for HeaderBinding {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
