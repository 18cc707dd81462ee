//! What the in-process tests share: one request builder ([`Req`]), one
//! answer with the assertions they make ([`Reply`]), an SSE answer kept open
//! ([`Stream`]), the chains to send through ([`chains`]), the official
//! schemas ([`assert_schema`]), and [`alone`] for a test that needs a
//! process of its own, and [`RedisServer`], a real `redis-server` for a test.

mod alone;
mod chains;
mod redis;
mod reply;
mod req;
mod schema;

pub use alone::alone;
pub use chains::{chain, dispatch, probe, validated, validated_router};
pub use redis::RedisServer;
pub use reply::{Reply, Stream, answered, send};
pub use req::{C, LEGACY, MODERN, Req, V, meta};
pub use schema::assert_schema;
