//! Shared helpers of wymcp's test suite.

pub mod child;
pub mod wire;
