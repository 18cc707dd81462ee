//! [`MemoryTaskStore`]: tasks in this process's memory, the default.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::store::{StoreFuture, TaskEntry, TaskStore, TaskStoreError};
use crate::protocol::ids::{every, now_ms};

type Entries = Mutex<HashMap<String, TaskEntry>>;

/// Tasks in this process's memory: the default store, for one process (a
/// task created here is unknown to any other replica). Holds at most
/// `capacity` live entries; an insert beyond is refused with
/// [`TaskStoreError::Full`] once the expired ones are swept. Expired
/// entries are swept on a timer too (every
/// [`sweep_every`](Self::sweep_every), 10 s by default, from the first
/// insert made inside a Tokio runtime), so their memory is given back
/// whether the store fills or not.
#[derive(Debug)]
pub struct MemoryTaskStore {
    capacity: usize,
    entries: Arc<Entries>,
    sweep: Duration,
    sweeping: AtomicBool,
}

impl MemoryTaskStore {
    /// An empty store holding at most `capacity` tasks.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        MemoryTaskStore {
            capacity,
            entries: Arc::default(),
            sweep: Duration::from_secs(10),
            sweeping: AtomicBool::new(false),
        }
    }

    /// Sweeps expired entries every `interval` (at least 1 ms).
    #[must_use]
    pub fn sweep_every(mut self, interval: Duration) -> Self {
        self.sweep = interval.max(Duration::from_millis(1));
        self
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskEntry>> {
        lock(&self.entries)
    }

    /// How many entries are held now, expired ones included until swept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the store holds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts the timer that sweeps expired entries, once, when there is a
    /// runtime to run it on; it ends with the store.
    fn start_sweeping(&self) {
        if self.sweeping.load(Ordering::Relaxed) {
            return;
        }
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let entries: Weak<Entries> = Arc::downgrade(&self.entries);
        if !every(self.sweep, entries, |entries: &Entries| {
            sweep(&mut lock(entries));
        }) {
            // No runtime: the next entry tries again.
            self.sweeping.store(false, Ordering::SeqCst);
        }
    }
}

fn lock(entries: &Entries) -> std::sync::MutexGuard<'_, HashMap<String, TaskEntry>> {
    // Every critical section leaves the map whole.
    entries.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drops the expired entries.
fn sweep(entries: &mut HashMap<String, TaskEntry>) {
    let now = now_ms();
    entries.retain(|_, e| e.expires_at_ms > now);
}

impl TaskStore for MemoryTaskStore {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        self.start_sweeping();
        let mut entries = self.entries();
        if entries.len() >= self.capacity {
            sweep(&mut entries);
        }
        let outcome = if entries.len() >= self.capacity {
            Err(TaskStoreError::Full(self.capacity))
        } else {
            entries.insert(entry.id.clone(), entry);
            Ok(())
        };
        Box::pin(std::future::ready(outcome))
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        let mut entries = self.entries();
        let found = match entries.get(id) {
            Some(entry) if entry.expires_at_ms <= now_ms() => {
                entries.remove(id);
                None
            }
            other => other.cloned(),
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        let mut entries = self.entries();
        let replaced = match entries.get_mut(&entry.id) {
            Some(stored)
                if stored.version + 1 == entry.version && stored.expires_at_ms > now_ms() =>
            {
                *stored = entry;
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(replaced)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Rule: a replacement names the version it replaces; a stale one (a
    /// writer that lost a race) changes nothing.
    #[tokio::test]
    async fn replace_is_a_compare_and_set_on_the_version() {
        let store = MemoryTaskStore::new(8);
        let later = now_ms() + 60_000;
        store
            .insert(TaskEntry::new("a", later, b"1".to_vec()))
            .await
            .unwrap();
        let first = store.load("a").await.unwrap().unwrap();
        assert!(store.replace(first.next(b"2".to_vec())).await.unwrap());
        // The same base again: stale.
        assert!(!store.replace(first.next(b"3".to_vec())).await.unwrap());
        let now = store.load("a").await.unwrap().unwrap();
        assert_eq!((now.version, now.data.as_slice()), (2, b"2".as_slice()));
        assert!(
            !store
                .replace(TaskEntry::new("gone", later, vec![]).next(vec![]))
                .await
                .unwrap()
        );
    }

    /// Rule: an expired entry is gone, and a full store refuses a new one
    /// only once the expired are swept.
    #[tokio::test]
    async fn expired_entries_are_gone_and_capacity_is_bounded() {
        let store = MemoryTaskStore::new(2);
        let past = now_ms() - 1;
        let later = now_ms() + 60_000;
        store
            .insert(TaskEntry::new("old", past, vec![]))
            .await
            .unwrap();
        assert!(store.load("old").await.unwrap().is_none());
        store
            .insert(TaskEntry::new("x", past, vec![]))
            .await
            .unwrap();
        store
            .insert(TaskEntry::new("a", later, vec![]))
            .await
            .unwrap();
        // Full of one live and one expired: the expired is swept.
        store
            .insert(TaskEntry::new("b", later, vec![]))
            .await
            .unwrap();
        assert_eq!(
            store.insert(TaskEntry::new("c", later, vec![])).await,
            Err(TaskStoreError::Full(2))
        );
    }

    /// Rule (issue 23): expired entries are swept on a timer, the store far
    /// from full, and the timer ends with the store.
    #[tokio::test]
    async fn expired_entries_are_swept_on_a_timer_without_the_store_being_full() {
        let store = MemoryTaskStore::new(1_000).sweep_every(Duration::from_millis(20));
        let soon = now_ms() + 50;
        for id in ["a", "b", "c"] {
            store
                .insert(TaskEntry::new(id, soon, vec![0; 1024]))
                .await
                .unwrap();
        }
        store
            .insert(TaskEntry::new("kept", now_ms() + 60_000, vec![]))
            .await
            .unwrap();
        assert_eq!(store.len(), 4);
        let mut swept = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if store.len() == 1 {
                swept = true;
                break;
            }
        }
        assert!(swept, "the expired entries are still held: {}", store.len());
        let weak = Arc::downgrade(&store.entries);
        drop(store);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(weak.upgrade().is_none(), "the timer holds no store");
    }
}
