//! Shared helpers of wymcp's test suite.

pub mod child;
#[doc(hidden)]
pub mod fuzz;
pub mod wire;
