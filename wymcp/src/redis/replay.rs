//! [`RedisDpopReplay`]: the DPoP proofs' replay store shared by every
//! replica that uses the same Redis server and key prefix.

use std::sync::Arc;
use std::time::Duration;

use super::config::{Health, RedisConfig};
use crate::auth::{DpopReplay, ReplayFuture};

/// A [`DpopReplay`] in Redis: each accepted proof is one key,
/// `<key_prefix>dpop:<digest of its key and jti>`, written with `SET … NX
/// PX <window>`, so the first replica to record a proof wins and a proof
/// replayed to any replica is refused until its `iat` leaves the window.
///
/// Redis's answer is read as the one thing it may be (`OK`, or nothing
/// when the key exists); anything else, an error or a wait past
/// [`RedisConfig::command_timeout`] is an outage, and the request is
/// refused `503` with `Retry-After` (fail closed: a proof that cannot be
/// checked for replay is not accepted). One warning is logged per outage.
///
/// ```no_run
/// use wymcp::auth::{AuthConfig, Dpop, StaticTokens};
/// use wymcp::redis::{RedisConfig, RedisDpopReplay};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = wymcp::Server::builder()
///     .auth(
///         StaticTokens::new(),
///         AuthConfig::new()
///             .resource("https://mcp.example.com/mcp")
///             .authorization_server("https://auth.example.com")
///             .dpop(Dpop::required()),
///     )
///     .dpop_replay(RedisDpopReplay::new("redis://127.0.0.1:6379/", RedisConfig::default())?)
///     .build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisDpopReplay {
    manager: redis::aio::ConnectionManager,
    config: RedisConfig,
    health: Arc<Health>,
}

impl std::fmt::Debug for RedisDpopReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDpopReplay")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisDpopReplay {
    /// A replay store on the Redis server at `url`, connected lazily (a
    /// server starts whether Redis is up or not).
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let manager =
            redis::aio::ConnectionManager::new_lazy_with_config(client, config.manager())?;
        Ok(RedisDpopReplay {
            manager,
            config,
            health: Arc::default(),
        })
    }
}

impl DpopReplay for RedisDpopReplay {
    fn first_use<'a>(&'a self, key: &'a str, ttl: Duration) -> ReplayFuture<'a> {
        Box::pin(async move {
            let mut manager = self.manager.clone();
            let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut set = redis::cmd("SET");
            set.arg(format!("{}dpop:{key}", self.config.key_prefix))
                .arg("1")
                .arg("NX")
                .arg("PX")
                .arg(millis);
            let answer = tokio::time::timeout(
                self.config.command_timeout,
                set.query_async::<redis::Value>(&mut manager),
            )
            .await;
            match answer {
                Ok(Ok(value)) => {
                    self.health.succeeded("DPoP replay store");
                    match value {
                        redis::Value::Okay => Ok(true),
                        redis::Value::SimpleString(s) if s == "OK" => Ok(true),
                        redis::Value::Nil => Ok(false),
                        _ => Err("an unexpected answer from Redis".to_owned()),
                    }
                }
                Ok(Err(error)) => {
                    self.health.failed("DPoP replay store", &error);
                    Err("Redis is unreachable".to_owned())
                }
                Err(_) => {
                    self.health
                        .failed("DPoP replay store", &"a command timed out");
                    Err("a Redis command timed out".to_owned())
                }
            }
        })
    }
}
