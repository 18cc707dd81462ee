//! `SingletonHeaders`: Refuses repeated singleton headers. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Refuses repeated singleton headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingletonHeaders;

impl Stage for SingletonHeaders {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
