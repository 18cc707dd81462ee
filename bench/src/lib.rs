//! wymcp's benchmark: the three servers it compares (wymcp's default chain,
//! the bare-axum floor, the rmcp peer), the request bodies of its scenarios,
//! and the harness that drives them with `oha` and reads the server's CPU
//! time from `/proc`.
//!
//! Run it with `scripts/bench` (see `BENCHMARKS.md`). Nothing here is part of
//! wymcp's public API; the crate is `publish = false`.
#![forbid(unsafe_code)]

pub mod bus;
pub mod callgrind;
pub mod fanout;
pub mod hostile;
pub mod hotpath;
pub mod io;
pub mod loadgen;
pub mod payload;
pub mod procfs;
pub mod report;
pub mod runner;
pub mod servers;
pub mod startup;
pub mod tasks;
