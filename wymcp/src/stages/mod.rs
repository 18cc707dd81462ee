//! The stages of wymcp's default POST chain, one file each, named as in the
//! chain. See [`chain::post`](crate::chain::post) for their order and why.

pub use crate::exchange::Exchange;
pub use crate::stage::{Flow, Stage};

mod validate;

pub use validate::Validate;
