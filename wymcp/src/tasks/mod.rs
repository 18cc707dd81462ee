//! Where tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663)
//! are kept: the [`TaskStore`] trait, the entry it keeps, and the
//! in-process default, [`MemoryTaskStore`].
//!
//! A store keeps opaque entries — an id, a version, an expiry and the
//! bytes of the task — and knows nothing of what a task means: the surface
//! reads and writes the bytes, and every change is a compare-and-set on the
//! version ([`TaskStore::replace`]), so replicas sharing one store (the
//! Redis backend, `wymcp::redis::RedisTaskStore`) never lose each other's
//! writes. An entry is gone once its expiry has passed.
//!
//! ```
//! use wymcp::tasks::{MemoryTaskStore, TaskEntry, TaskStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), wymcp::tasks::TaskStoreError> {
//! let store = MemoryTaskStore::new(1_000);
//! let expires = wymcp::tasks::now_ms() + 60_000;
//! store.insert(TaskEntry::new("t1", expires, b"working".to_vec())).await?;
//! let entry = store.load("t1").await?.expect("stored");
//! assert!(store.replace(entry.next(b"done".to_vec())).await?);
//! assert_eq!(store.load("t1").await?.unwrap().data, b"done");
//! # Ok(())
//! # }
//! ```

mod memory;
mod store;

pub use memory::MemoryTaskStore;
pub use store::{Quota, StoreFuture, TaskEntry, TaskStore, TaskStoreError};
// The clock entries' expiries are read on, public where a store's
// implementer reads it.
pub use crate::protocol::ids::now_ms;
