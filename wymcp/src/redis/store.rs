//! [`RedisTaskStore`]: tasks in Redis, shared by every replica that uses
//! the same server and key prefix.

use std::sync::Arc;

use super::config::{Health, RedisConfig};
use crate::protocol::ids::now_ms;
use crate::tasks::{StoreFuture, TaskEntry, TaskStore, TaskStoreError};

/// The compare-and-set of a replacement: `ARGV[1]` the version replaced,
/// `ARGV[2]` the new one, `ARGV[3]` the data.
const REPLACE: &str = r"
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  return 1
end
return 0
";

/// [`RedisTaskStore`]: tasks in Redis, shared by every replica that uses
/// the same server and key prefix.
///
/// A task is one hash, `{key_prefix}{id}`, of three fields — `v` (the
/// version), `e` (the expiry, milliseconds since the epoch) and `d` (the
/// task) — expiring at `e` (`PEXPIREAT`), so Redis itself forgets a task at
/// the end of its TTL. An insert writes all three and the expiry in one
/// transaction; a replacement is a compare-and-set on `v` in one Lua script
/// (atomic on the server). Every command is bounded by
/// [`RedisConfig::command_timeout`].
#[derive(Clone)]
pub struct RedisTaskStore {
    manager: redis::aio::ConnectionManager,
    config: RedisConfig,
    replace: Arc<redis::Script>,
    health: Arc<Health>,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    /// A store on the Redis server at `url`; connects lazily, on the first
    /// operation (so it must be made inside a Tokio runtime).
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let manager =
            redis::aio::ConnectionManager::new_lazy_with_config(client, config.manager())?;
        Ok(RedisTaskStore {
            manager,
            config,
            replace: Arc::new(redis::Script::new(REPLACE)),
            health: Arc::default(),
        })
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.config.key_prefix)
    }

    /// Runs `op` within the command timeout, logging the start and end of
    /// an outage.
    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, TaskStoreError> {
        match tokio::time::timeout(self.config.command_timeout, op).await {
            Ok(Ok(value)) => {
                self.health.succeeded("task store");
                Ok(value)
            }
            Ok(Err(error)) => {
                self.health.failed("task store", &error);
                Err(TaskStoreError::Unavailable(error.to_string()))
            }
            Err(_) => {
                self.health.failed("task store", &"a command timed out");
                Err(TaskStoreError::Timeout(self.config.command_timeout))
            }
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let key = self.key(&entry.id);
            let mut manager = self.manager.clone();
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("HSET")
                .arg(&key)
                .arg("v")
                .arg(entry.version)
                .arg("e")
                .arg(entry.expires_at_ms)
                .arg("d")
                .arg(&entry.data)
                .ignore()
                .cmd("PEXPIREAT")
                .arg(&key)
                .arg(entry.expires_at_ms)
                .ignore();
            self.bounded(pipe.query_async::<()>(&mut manager)).await
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        Box::pin(async move {
            let mut manager = self.manager.clone();
            let mut hmget = redis::cmd("HMGET");
            hmget.arg(self.key(id)).arg("v").arg("e").arg("d");
            let read =
                hmget.query_async::<(Option<u64>, Option<u64>, Option<Vec<u8>>)>(&mut manager);
            let (version, expires, data) = self.bounded(read).await?;
            Ok(match (version, expires, data) {
                (Some(version), Some(expires_at_ms), Some(data)) if expires_at_ms > now_ms() => {
                    Some(TaskEntry {
                        id: id.to_owned(),
                        version,
                        expires_at_ms,
                        data,
                    })
                }
                _ => None,
            })
        })
    }

    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let mut manager = self.manager.clone();
            let mut invocation = self.replace.key(self.key(&entry.id));
            invocation
                .arg(entry.version.saturating_sub(1))
                .arg(entry.version)
                .arg(&entry.data);
            let replaced = self
                .bounded(invocation.invoke_async::<i64>(&mut manager))
                .await?;
            Ok(replaced == 1)
        })
    }
}
