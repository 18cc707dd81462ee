//! The Redis backends (feature `redis`): [`RedisBus`], a [`ChangeRelay`]
//! that carries catalog changes and resource updates between replicas
//! through Redis pub/sub, and [`RedisTaskStore`], a
//! [`TaskStore`](crate::tasks::TaskStore) whose tasks every replica sharing
//! the Redis server can poll, update and cancel, and [`RedisDpopReplay`],
//! the DPoP proofs' replay store shared by replicas. All are built on the
//! `redis` crate's Tokio support and its connection manager, connect
//! lazily (a server starts whether Redis is up or not), bound every wait on
//! Redis by [`RedisConfig::command_timeout`], and log one warning per
//! outage. Everything they write to Redis is signed with a subkey of the
//! replicas' shared key ([`RedisConfig::shared_key`]) and everything they
//! read is bounded and checked before it is parsed: Redis is a trust
//! boundary. What each guarantees is in docs/deployment.md.
//!
//! ```no_run
//! use wymcp::redis::{RedisBus, RedisConfig, RedisTaskStore};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "redis://127.0.0.1:6379/";
//! // The key every replica seals with, from the deployment's secrets.
//! let key = wymcp::mrtr::SealingKey::new("2026-12", std::env::var("SEALING_KEY")?)?;
//! let config = RedisConfig::default().shared_key(&key);
//! let server = wymcp::Server::builder()
//!     .sealing_key(key)
//!     .change_relay(RedisBus::new(url, config.clone())?)
//!     .task_store(RedisTaskStore::new(url, config)?)
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```
//!
//! [`ChangeRelay`]: crate::ChangeRelay

mod answers;
pub(crate) mod bus;
mod config;
pub(crate) mod mac;
mod replay;
pub(crate) mod store;

pub use answers::RedisAnswers;
pub use bus::RedisBus;
pub use config::RedisConfig;
pub use redis::RedisError;
pub use replay::RedisDpopReplay;
pub use store::RedisTaskStore;
