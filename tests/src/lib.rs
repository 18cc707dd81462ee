//! Shared helpers of wymcp's test suite.

pub mod wire;
