//! What the in-process tests share: one request builder ([`Req`]), one
//! answer with the assertions they make ([`Reply`], and [`Answered`] for an
//! exchange of `wymcp::testing`), the chains to send through ([`chains`]) and a
//! `wymcp::testing` client of the surface ([`surface`]), the official
//! schemas ([`assert_schema`]), and [`alone`] for a test that needs a
//! process of its own, and [`RedisServer`], a real `redis-server` for a test.

mod alone;
mod chains;
mod redis;
mod reply;
mod req;
mod schema;

pub use alone::alone;
pub use chains::{assert_failure, chain, dispatch, probe, surface, validated, validated_router};
pub use redis::RedisServer;
pub use reply::{Answered, Reply, answered, heard, send};
pub use req::{C, LEGACY, MODERN, Req, V, meta};
pub use schema::assert_schema;
