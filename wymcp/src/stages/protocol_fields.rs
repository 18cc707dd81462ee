//! `ProtocolFields`: Checks the per-request protocol fields in _meta. (stub; replaced by the real stage)

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage};

/// Checks the per-request protocol fields in _meta.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProtocolFields;

impl Stage for ProtocolFields {
    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
