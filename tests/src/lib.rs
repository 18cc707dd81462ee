//! Shared helpers of wymcp's test suite.
