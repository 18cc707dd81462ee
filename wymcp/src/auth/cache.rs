//! What is kept about tokens, always under a token's SHA-256 digest (the
//! raw token is never kept): a bounded cache of answers, and the calls in
//! flight that identical tokens share.
//!
//! **The cache.** Each entry has its own expiry; a full cache first drops
//! what has expired, then the oldest entries. A client can send any number
//! of distinct tokens, so the bound is what keeps memory in check.
//!
//! **The calls in flight.** Requests carrying the same token while one
//! call about it runs wait for that call and share its answer, so a burst
//! of one token costs one call. An entry lives as long as a request waits
//! on it: the last to leave (answered, or cancelled) takes it out, so the
//! map holds no more entries than there are requests waiting.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// The digest a token is cached under.
pub(crate) type TokenDigest = [u8; 32];

/// The digest of `token`.
pub(crate) fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

#[derive(Debug)]
pub(crate) struct TokenCache<V> {
    capacity: usize,
    inner: Mutex<Entries<V>>,
}

#[derive(Debug)]
struct Entries<V> {
    map: HashMap<TokenDigest, Entry<V>>,
    /// Insertion order: (sequence, digest). An item whose sequence is not
    /// its digest's entry's any more is stale and skipped.
    order: VecDeque<(u64, TokenDigest)>,
    next: u64,
}

#[derive(Debug)]
struct Entry<V> {
    sequence: u64,
    expires: Instant,
    value: V,
}

impl<V: Clone> TokenCache<V> {
    /// A cache of at most `capacity` entries (none at all for 0).
    pub(crate) fn new(capacity: usize) -> Self {
        TokenCache {
            capacity,
            inner: Mutex::new(Entries {
                map: HashMap::new(),
                order: VecDeque::new(),
                next: 0,
            }),
        }
    }

    /// The value cached for `key`, unless it has expired by `now`.
    pub(crate) fn get(&self, key: &TokenDigest, now: Instant) -> Option<V> {
        let mut entries = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match entries.map.get(key) {
            Some(entry) if now < entry.expires => Some(entry.value.clone()),
            Some(_) => {
                entries.map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Caches `value` for `key` until `expires`.
    pub(crate) fn insert(&self, key: TokenDigest, value: V, expires: Instant, now: Instant) {
        if self.capacity == 0 || expires <= now {
            return;
        }
        let mut entries = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let entries = &mut *entries;
        if entries.map.len() >= self.capacity && !entries.map.contains_key(&key) {
            entries.map.retain(|_, entry| now < entry.expires);
            while entries.map.len() >= self.capacity {
                let Some((sequence, oldest)) = entries.order.pop_front() else {
                    break;
                };
                if entries
                    .map
                    .get(&oldest)
                    .is_some_and(|e| e.sequence == sequence)
                {
                    entries.map.remove(&oldest);
                }
            }
        }
        let sequence = entries.next;
        entries.next += 1;
        entries.map.insert(
            key,
            Entry {
                sequence,
                expires,
                value,
            },
        );
        entries.order.push_back((sequence, key));
        // Stale order items (replaced or expired entries) are dropped once
        // they outnumber the live ones, so the queue stays within twice the
        // capacity.
        if entries.order.len() > 2 * self.capacity {
            let map = &entries.map;
            entries
                .order
                .retain(|(sequence, key)| map.get(key).is_some_and(|e| e.sequence == *sequence));
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .len()
    }

    #[cfg(test)]
    fn order_len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .order
            .len()
    }
}

/// The calls in flight, one per token digest, each shared by every request
/// that carries its token while it runs.
#[derive(Debug)]
pub(crate) struct InFlight<V> {
    calls: Mutex<HashMap<TokenDigest, Arc<OnceCell<V>>>>,
}

impl<V> Default for InFlight<V> {
    fn default() -> Self {
        InFlight {
            calls: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> InFlight<V> {
    /// The answer of the call about `key` in flight, or of `call`, run now
    /// when none is. If the request running it is cancelled, one of those
    /// waiting runs it instead.
    pub(crate) async fn run<F, Fut>(&self, key: TokenDigest, call: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let slot = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        let leave = Leave {
            calls: &self.calls,
            key,
            cell: Some(slot),
        };
        match &leave.cell {
            Some(shared) => shared.get_or_init(call).await.clone(),
            // Set above, taken only by `drop`.
            None => unreachable!("a request's cell is taken only when it leaves"),
        }
    }

    /// How many requests hold the call about `key` in flight.
    #[cfg(test)]
    fn holders(&self, key: &TokenDigest) -> usize {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .map_or(0, |cell| Arc::strong_count(cell) - 1)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// One request leaving a call: the last one out takes its entry out.
///
/// The request's hold on the cell is given up under the map's lock, as it
/// was taken: so the count read there is exact. (Dropped after the lock,
/// two requests leaving at once could each see the other still holding
/// and neither take the entry out, which then answered every later
/// request with that answer, whatever the caches' lifetimes.)
struct Leave<'a, V> {
    calls: &'a Mutex<HashMap<TokenDigest, Arc<OnceCell<V>>>>,
    key: TokenDigest,
    cell: Option<Arc<OnceCell<V>>>,
}

impl<V> Drop for Leave<'_, V> {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(cell) = self.cell.take() else {
            return;
        };
        // Every hold is taken and given up under this lock, so the count is
        // exact: two holders are the map and this request.
        let last = calls
            .get(&self.key)
            .is_some_and(|c| Arc::ptr_eq(c, &cell) && Arc::strong_count(c) == 2);
        drop(cell);
        if last {
            calls.remove(&self.key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn identical_keys_in_flight_share_one_call_and_leave_nothing_behind() {
        let flight = Arc::new(InFlight::<usize>::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Notify::new());
        let mut waiting = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let (flight, calls, gate) = (flight.clone(), calls.clone(), gate.clone());
            waiting.spawn(async move {
                flight
                    .run(digest("same"), || async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        gate.notified().await;
                        7
                    })
                    .await
            });
        }
        tokio::task::yield_now().await;
        assert_eq!(flight.len(), 1);
        gate.notify_one();
        while let Some(answer) = waiting.join_next().await {
            assert_eq!(answer.unwrap(), 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(flight.len(), 0, "the last one out took the entry out");
        // A cancelled call leaves nothing behind either.
        let pending = flight.run(digest("gone"), std::future::pending::<usize>);
        assert!(
            tokio::time::timeout(Duration::from_millis(10), pending)
                .await
                .is_err()
        );
        assert_eq!(flight.len(), 0);
    }

    /// Requests leaving one call at the same moment, each on a thread of
    /// its own (as a server's workers do), still leave no entry behind: an
    /// entry left behind would answer every later request with its answer.
    #[test]
    fn requests_leaving_at_once_leave_nothing_behind() {
        const HOLDERS: usize = 4;
        let flight = Arc::new(InFlight::<usize>::default());
        let key = digest("same");
        for round in 0..300 {
            let gate = Arc::new(tokio::sync::Notify::new());
            let threads: Vec<_> = (0..HOLDERS)
                .map(|_| {
                    let (flight, gate) = (flight.clone(), gate.clone());
                    std::thread::spawn(move || {
                        tokio::runtime::Builder::new_current_thread()
                            .build()
                            .unwrap()
                            .block_on(flight.run(key, || async move {
                                gate.notified().await;
                                round
                            }))
                    })
                })
                .collect();
            let deadline = Instant::now() + Duration::from_secs(30);
            while flight.holders(&key) < HOLDERS {
                assert!(
                    Instant::now() < deadline,
                    "round {round}: the requests never joined"
                );
                std::thread::yield_now();
            }
            gate.notify_one();
            for thread in threads {
                assert_eq!(thread.join().unwrap(), round);
            }
            assert_eq!(flight.len(), 0, "round {round}: an entry was left behind");
        }
    }

    #[test]
    fn entries_expire_on_their_own_time() {
        let cache = TokenCache::new(10);
        let now = Instant::now();
        cache.insert(digest("a"), 1, now + Duration::from_secs(5), now);
        cache.insert(digest("b"), 2, now + Duration::from_secs(60), now);
        cache.insert(digest("c"), 3, now, now);
        let later = now + Duration::from_secs(10);
        assert_eq!(cache.get(&digest("a"), now), Some(1));
        assert_eq!(cache.get(&digest("a"), later), None);
        assert_eq!(cache.get(&digest("b"), later), Some(2));
        assert_eq!(cache.get(&digest("c"), now), None);
    }

    #[test]
    fn a_full_cache_drops_the_expired_then_the_oldest() {
        let cache = TokenCache::new(3);
        let now = Instant::now();
        let long = now + Duration::from_secs(60);
        cache.insert(digest("short"), 0, now + Duration::from_secs(1), now);
        cache.insert(digest("a"), 1, long, now);
        cache.insert(digest("b"), 2, long, now);
        let later = now + Duration::from_secs(2);
        cache.insert(digest("c"), 3, long, later);
        // The expired entry made room; nothing else was dropped.
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&digest("a"), later), Some(1));
        cache.insert(digest("d"), 4, long, later);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&digest("a"), later), None);
        assert_eq!(cache.get(&digest("d"), later), Some(4));
    }

    #[test]
    fn the_cache_stays_bounded_under_a_flood_of_distinct_tokens() {
        let cache = TokenCache::new(100);
        let now = Instant::now();
        let long = now + Duration::from_secs(60);
        for i in 0..10_000 {
            cache.insert(digest(&i.to_string()), i, long, now);
            // Replacing one entry over and over leaves stale order items.
            cache.insert(digest("same"), i, long, now);
        }
        assert!(cache.len() <= 100);
        assert!(cache.order_len() <= 200);
    }

    #[test]
    fn a_zero_capacity_caches_nothing() {
        let cache = TokenCache::new(0);
        let now = Instant::now();
        cache.insert(digest("a"), 1, now + Duration::from_secs(5), now);
        assert_eq!(cache.get(&digest("a"), now), None);
    }
}
