//! [`RedisTaskStore`]: tasks in Redis, shared by every replica that uses
//! the same server and key prefix.

use std::sync::Arc;

use super::config::{Health, RedisConfig};
use super::mac::{DropLog, Dropped, Keys, Purpose, receive};
use crate::protocol::ids::{hex, now_ms};
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
///
/// **Trust.** `d` holds the task behind an HMAC-SHA256 tag under the
/// replicas' shared key ([`RedisConfig::shared_key`]) bound to the task's
/// id and version: a record read back longer than
/// [`RedisConfig::max_record_bytes`], or whose tag does not verify
/// (written by someone without the key, or moved from another task), is
/// dropped unread and the task is unknown.
#[derive(Clone)]
pub struct RedisTaskStore {
    manager: redis::aio::ConnectionManager,
    config: RedisConfig,
    replace: Arc<redis::Script>,
    reserve: Arc<redis::Script>,
    health: Arc<Health>,
    drops: Arc<DropLog>,
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
    ///
    /// # Errors
    ///
    /// The URL does not parse, or `config` has no
    /// [`shared_key`](RedisConfig::shared_key).
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        config.keys()?;
        let client = redis::Client::open(url)?;
        let manager =
            redis::aio::ConnectionManager::new_lazy_with_config(client, config.manager())?;
        Ok(RedisTaskStore {
            manager,
            config,
            replace: Arc::new(redis::Script::new(REPLACE)),
            reserve: Arc::new(redis::Script::new(RESERVE)),
            health: Arc::default(),
            drops: Arc::default(),
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
        let hex = hex(&digest);
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

/// What a task record's tag is bound to: its id and its version.
fn record_context(id: &str, version: u64) -> Vec<u8> {
    let mut context = version.to_be_bytes().to_vec();
    context.extend_from_slice(id.as_bytes());
    context
}

/// A task's data as stored in `d`: behind its tag, bound to the task's id
/// and version (`None` without a key).
pub(crate) fn seal_record(keys: &Keys, id: &str, version: u64, data: &[u8]) -> Option<Vec<u8>> {
    keys.sign(Purpose::Tasks, &record_context(id, version), data)
}

/// A task's data as read back from `d`: bounded to `max` bytes and its tag
/// verified for the task's id and version before anything else reads it.
pub(crate) fn open_record<'r>(
    keys: &Keys,
    id: &str,
    version: u64,
    max: usize,
    record: &'r [u8],
) -> Result<&'r [u8], Dropped> {
    receive(
        keys,
        Purpose::Tasks,
        &record_context(id, version),
        max,
        record,
    )
}

impl RedisTaskStore {
    /// `entry`'s data, sealed for Redis.
    fn sealed(&self, entry: &TaskEntry) -> Result<Vec<u8>, TaskStoreError> {
        if entry.data.len() > self.config.max_record_bytes {
            // Written, it could not be read back.
            return Err(TaskStoreError::Unavailable(format!(
                "a task record of {} bytes is over RedisConfig::max_record_bytes ({})",
                entry.data.len(),
                self.config.max_record_bytes
            )));
        }
        seal_record(
            self.config.keys_unchecked(),
            &entry.id,
            entry.version,
            &entry.data,
        )
        .ok_or_else(|| TaskStoreError::Unavailable("the task store has no key".into()))
    }
}

impl TaskStore for RedisTaskStore {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let data = self.sealed(&entry)?;
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
                .arg(&data)
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
                (Some(version), Some(expires_at_ms), Some(record)) if expires_at_ms > now_ms() => {
                    let keys = self.config.keys_unchecked();
                    match open_record(keys, id, version, self.config.max_record_bytes, &record) {
                        Ok(data) => Some(TaskEntry {
                            id: id.to_owned(),
                            version,
                            expires_at_ms,
                            data: data.to_vec(),
                        }),
                        Err(dropped) => {
                            self.drops.dropped("task record", dropped);
                            None
                        }
                    }
                }
                _ => None,
            })
        })
    }

    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let data = self.sealed(&entry)?;
            let mut manager = self.manager.clone();
            let mut invocation = self.replace.key(self.key(&entry.id));
            invocation
                .arg(entry.version.saturating_sub(1))
                .arg(entry.version)
                .arg(&data);
            let replaced = self
                .bounded(invocation.invoke_async::<i64>(&mut manager))
                .await?;
            Ok(replaced == 1)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mrtr::SealingKey;

    /// Rule (issue 23, item 7): a task record opens for the id and version
    /// it was sealed for only, under the shared key only, and one over the
    /// bound is refused before its tag is checked.
    #[test]
    fn a_record_opens_for_its_task_and_version_only() {
        let keys = Keys::new(&SealingKey::new("k", vec![1u8; 32]).unwrap());
        let record = seal_record(&keys, "t1", 3, b"{\"s\":1}").unwrap();
        assert_eq!(
            open_record(&keys, "t1", 3, 64, &record),
            Ok(&b"{\"s\":1}"[..])
        );
        assert_eq!(
            open_record(&keys, "t2", 3, 64, &record),
            Err(Dropped::Forged)
        );
        assert_eq!(
            open_record(&keys, "t1", 4, 64, &record),
            Err(Dropped::Forged)
        );
        assert_eq!(
            open_record(&keys, "t1", 3, 64, b"{\"s\":1}"),
            Err(Dropped::Forged)
        );
        let other = Keys::new(&SealingKey::new("k", vec![2u8; 32]).unwrap());
        assert_eq!(
            open_record(&other, "t1", 3, 64, &record),
            Err(Dropped::Forged)
        );
        assert_eq!(
            open_record(&keys, "t1", 3, 6, &record),
            Err(Dropped::TooLarge(record.len()))
        );
    }
}
