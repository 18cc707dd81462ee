//! The Redis backends (feature `redis`): [`RedisBus`], a [`ChangeRelay`]
//! that carries catalog changes and resource updates between replicas
//! through Redis pub/sub, and [`RedisTaskStore`], a
//! [`TaskStore`](crate::tasks::TaskStore) whose tasks every replica sharing
//! the Redis server can poll, update and cancel. Both are built on the
//! `redis` crate's Tokio support and its connection manager, connect
//! lazily (a server starts whether Redis is up or not), bound every wait on
//! Redis by [`RedisConfig::command_timeout`], and log one warning per
//! outage. What each guarantees is in docs/deployment.md.
//!
//! ```no_run
//! use wymcp::redis::{RedisBus, RedisConfig, RedisTaskStore};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "redis://127.0.0.1:6379/";
//! let server = wymcp::Server::builder()
//!     .change_relay(RedisBus::new(url, RedisConfig::default())?)
//!     .task_store(RedisTaskStore::new(url, RedisConfig::default())?)
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```
//!
//! [`ChangeRelay`]: crate::ChangeRelay

mod answers;
mod bus;
mod config;
mod store;

pub use answers::RedisAnswers;
pub use bus::RedisBus;
pub use config::RedisConfig;
pub use redis::RedisError;
pub use store::RedisTaskStore;
