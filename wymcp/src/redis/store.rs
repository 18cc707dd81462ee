//! [`RedisTaskStore`]: tasks in Redis, shared by every replica that uses
//! the same server and key prefix.

use std::sync::Arc;

use super::config::{Health, RedisConfig};
use crate::protocol::ids::now_ms;
use crate::tasks::{Quota, StoreFuture, TaskEntry, TaskStore, TaskStoreError};

/// The compare-and-set of a replacement: `ARGV[1]` the version replaced,
/// `ARGV[2]` the new one, `ARGV[3]` the data.
const REPLACE: &str = r"
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  return 1
end
return 0
";

/// The quota of a new task, held across replicas: `KEYS[1]` the caller's
/// sorted set of live task ids, `KEYS[2]` everyone's, each scored by its
/// expiry; `ARGV[1]` now, `ARGV[2]` the task's expiry, `ARGV[3]` the
/// per-caller share, `ARGV[4]` the cap, `ARGV[5]` the id. The expired are
/// dropped first; 1 is the caller's share reached, 2 the cap, 0 the id
/// counted (each set expiring with its last member).
const RESERVE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 2 end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[5])
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[i], last[2])
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
///
/// **Quotas.** A task the server creates
/// ([`TaskStore::insert_for`]) is counted in Redis, so every replica
/// sharing the server holds one caller's share and the cap together: a
/// sorted set per caller, `{key_prefix}caller:{sha256 of the caller}`, and
/// one of all, `{key_prefix}stored`, each member a task id scored by its
/// expiry. One Lua script drops the expired members, refuses a caller at
/// its share ([`TaskStoreError::CallerFull`], `429`) or everyone at the cap
/// ([`TaskStoreError::Full`], `503`), and counts the task; the record is
/// then written as [`insert`](TaskStore::insert) writes it (its count taken
/// back if that fails). Redis is the shared truth: the count is as true as
/// what Redis holds (whoever can write to it can change it).
#[derive(Clone)]
pub struct RedisTaskStore {
    manager: redis::aio::ConnectionManager,
    config: RedisConfig,
    replace: Arc<redis::Script>,
    reserve: Arc<redis::Script>,
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
            reserve: Arc::new(redis::Script::new(RESERVE)),
            health: Arc::default(),
        })
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.config.key_prefix)
    }

    /// The keys of `caller`'s count and everyone's: the caller hashed, so
    /// a key's length is bounded whatever the caller's name.
    fn count_keys(&self, caller: &str) -> (String, String) {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(caller.as_bytes());
        let hex = digest.iter().fold(String::new(), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        });
        let prefix = &self.config.key_prefix;
        (format!("{prefix}caller:{hex}"), format!("{prefix}stored"))
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

    fn insert_for(&self, entry: TaskEntry, quota: Quota) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let (mine, all) = self.count_keys(&quota.caller);
            let mut manager = self.manager.clone();
            let mut invocation = self.reserve.key(&mine);
            invocation
                .key(&all)
                .arg(now_ms())
                .arg(entry.expires_at_ms)
                .arg(quota.per_caller)
                .arg(quota.global)
                .arg(&entry.id);
            let counted = self
                .bounded(invocation.invoke_async::<i64>(&mut manager))
                .await?;
            match counted {
                0 => {}
                1 => return Err(TaskStoreError::CallerFull(quota.per_caller)),
                _ => return Err(TaskStoreError::Full(quota.global)),
            }
            let id = entry.id.clone();
            let written = self.insert(entry).await;
            if written.is_err() {
                // Not stored: not counted (best effort; else it expires).
                let mut pipe = redis::pipe();
                pipe.cmd("ZREM").arg(&mine).arg(&id).ignore();
                pipe.cmd("ZREM").arg(&all).arg(&id).ignore();
                let _ = self.bounded(pipe.query_async::<()>(&mut manager)).await;
            }
            written
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
