//! What the in-process tests share: one request builder ([`Req`]), one
//! answer with the assertions they make ([`Reply`]), an SSE answer kept open
//! ([`Stream`]), the chains to send through ([`chains`]) and a
//! `wymcp::testing` client of the surface ([`surface`]), the official
//! schemas ([`assert_schema`]), and [`alone`] for a test that needs a
//! process of its own.

mod alone;
mod chains;
mod reply;
mod req;
mod schema;

pub use alone::alone;
pub use chains::{assert_failure, chain, dispatch, probe, surface, validated, validated_router};
pub use reply::{Answered, Reply, Stream, answered, send};
pub use req::{C, LEGACY, MODERN, Req, V, meta};
pub use schema::assert_schema;
