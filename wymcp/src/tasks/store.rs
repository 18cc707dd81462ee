//! The store's contract: the entry it keeps, the trait every store
//! implements, the error it answers, and the clock and ids tasks are kept by.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future of a store operation.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

/// One task as a store keeps it: opaque bytes under an id, a version that
/// every replacement raises by one, and the instant (milliseconds since the
/// Unix epoch) after which the entry is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEntry {
    /// The task's id.
    pub id: String,
    /// Raised by one on every replacement; a replacement names the version
    /// it replaces.
    pub version: u64,
    /// When the entry expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// The task, as the surface wrote it.
    pub data: Vec<u8>,
}

impl TaskEntry {
    /// A new entry (version 1).
    pub fn new(id: impl Into<String>, expires_at_ms: u64, data: Vec<u8>) -> Self {
        TaskEntry {
            id: id.into(),
            version: 1,
            expires_at_ms,
            data,
        }
    }

    /// The entry that replaces this one with `data`: the next version, the
    /// same id and expiry.
    #[must_use]
    pub fn next(&self, data: Vec<u8>) -> Self {
        TaskEntry {
            id: self.id.clone(),
            version: self.version + 1,
            expires_at_ms: self.expires_at_ms,
            data,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may: the server answers `503`
    /// with `Retry-After` (never a 500).
    #[error("the task store is full ({0} tasks)")]
    Full(usize),
    /// The store holds as many of this caller's tasks as one caller may
    /// ([`Quota::per_caller`]): the server answers `429` with `Retry-After`.
    #[error("the task store holds this caller's share ({0} tasks)")]
    CallerFull(usize),
    /// The store did not answer in time.
    #[error("the task store did not answer within {0:?}")]
    Timeout(Duration),
    /// The store could not be reached or refused the operation.
    #[error("the task store is unavailable: {0}")]
    Unavailable(String),
}

/// Who a new entry counts against and what a store that counts callers
/// itself (one shared by replicas, as the Redis store is) may hold: the
/// server's [`Kind::StoredTasks`](crate::ledger::Kind::StoredTasks) share.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quota {
    /// The caller's key ([`Caller::as_str`](crate::ledger::Caller::as_str)).
    pub caller: String,
    /// Live entries one caller may hold; one more is
    /// [`TaskStoreError::CallerFull`].
    pub per_caller: usize,
    /// Live entries all callers may hold; one more is
    /// [`TaskStoreError::Full`].
    pub global: usize,
}

impl Quota {
    /// `caller`'s quota of `per_caller` entries, of `global` in all.
    pub fn new(caller: impl Into<String>, per_caller: usize, global: usize) -> Self {
        Quota {
            caller: caller.into(),
            per_caller,
            global,
        }
    }
}

/// Where tasks are kept. Every operation is bounded by the implementation's
/// own timeout; none may block the executor.
pub trait TaskStore: Send + Sync + std::fmt::Debug + 'static {
    /// Stores a new entry. Once this returns `Ok`, a `load` of its id on any
    /// replica sharing the store finds it (the extension's durable create).
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()>;

    /// Stores a new entry counted against `quota`'s caller until it
    /// expires. The server counts the records of its own replica in its
    /// ledger either way; a store shared by replicas overrides this to hold
    /// the quota across all of them ([`TaskStoreError::CallerFull`],
    /// [`TaskStoreError::Full`]). By default, [`insert`](Self::insert).
    fn insert_for(&self, entry: TaskEntry, quota: Quota) -> StoreFuture<'_, ()> {
        let _ = quota;
        self.insert(entry)
    }

    /// The entry stored under `id`, unless there is none or it has expired.
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>>;

    /// Replaces the entry of `entry.id` whose version is `entry.version - 1`
    /// with `entry`; `false` (and nothing changed) when the stored version
    /// is another or the entry is gone.
    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool>;
}

/// A store shared behind an `Arc` (several servers of one process, or a
/// store the application also reads).
impl<T: TaskStore> TaskStore for std::sync::Arc<T> {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        (**self).insert(entry)
    }

    fn insert_for(&self, entry: TaskEntry, quota: Quota) -> StoreFuture<'_, ()> {
        (**self).insert_for(entry, quota)
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        (**self).load(id)
    }

    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        (**self).replace(entry)
    }
}
