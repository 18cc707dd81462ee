//! The ledger: every place a caller can hold beyond its own request, counted
//! per caller and in all, in one place.
//!
//! A place is taken before what it stands for is held (a body's bytes, a
//! listen stream, a 2025 call's waiting requests, a running task, a stored
//! task record, a call to the authorization server; a handler's queued
//! notifications grow and shrink theirs) and given back when the [`Place`]
//! drops, so what is counted is what is held, however its request ends (a
//! stored record's place outlives its request: the tasks surface keeps it
//! until the record expires).
//!
//! Each [`Kind`] has a per-caller share and a global cap ([`Share`]). A
//! caller over its share is refused at once (429, `Retry-After`). At the
//! global cap, a caller holding less than its fair share (the cap divided
//! among the callers holding places of the kind, the newcomer counted) still
//! gets its place: the largest holder's oldest place that can give way does
//! ([`Place::evicted`] resolves for it; its request is answered with the
//! caller-share error), so many callers cannot starve a newcomer. Only when
//! no holder is over its fair share is the newcomer refused (503).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::caller::Caller;
use crate::protocol::error::{ErrorCode, RpcError};

/// What a place stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// Request bodies' bytes, from before their read until the last thing
    /// holding them (the parsed message, a streamed answer's handler) ends.
    /// Counted by the client's address: a body is read before its
    /// credentials are.
    Bodies,
    /// Open `subscriptions/listen` streams.
    ListenStreams,
    /// A 2025 call's requests to its client waiting for their answers.
    Waits,
    /// Task handlers running on this replica.
    RunningTasks,
    /// Calls to the authorization server in flight (token introspection).
    /// Counted by the client's address: they are made before a principal
    /// exists.
    AuthCalls,
    /// Task records stored, from a task's creation until its record
    /// expires: a finished task's record is held as a running one is.
    StoredTasks,
    /// Bytes of progress and log notifications a handler queued for its
    /// client and the client has not read yet.
    Notifications,
    /// Open 2025 standalone GET streams, and 2025 clients' stdio session
    /// streams (`Surface::legacy_stream`, `surface/listen.rs`).
    LegacyStreams,
    /// DPoP proofs remembered for replay (RFC 9449 §11.1), from their
    /// acceptance until their `iat` leaves the window. Counted by the
    /// client's address: the proof is recorded by the authentication step.
    DpopProofs,
    /// TLS handshakes in progress on [`serve`](crate::serve()) with
    /// [`Tls`](crate::serve::Tls): from the connection's accept until its
    /// handshake completes, fails or runs out of
    /// [`tls_handshake_timeout`](crate::ServeConfig::tls_handshake_timeout).
    /// Counted by the peer's address: no request exists yet.
    Handshakes,
}

impl Kind {
    /// Every kind, in the order of the limits table.
    pub const ALL: [Kind; 10] = [
        Kind::Bodies,
        Kind::ListenStreams,
        Kind::Waits,
        Kind::RunningTasks,
        Kind::AuthCalls,
        Kind::StoredTasks,
        Kind::Notifications,
        Kind::LegacyStreams,
        Kind::DpopProofs,
        Kind::Handshakes,
    ];

    fn index(self) -> usize {
        match self {
            Kind::Bodies => 0,
            Kind::ListenStreams => 1,
            Kind::Waits => 2,
            Kind::RunningTasks => 3,
            Kind::AuthCalls => 4,
            Kind::StoredTasks => 5,
            Kind::Notifications => 6,
            Kind::LegacyStreams => 7,
            Kind::DpopProofs => 8,
            Kind::Handshakes => 9,
        }
    }

    /// The kind's name in logs and metrics.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bodies => "bodies",
            Kind::ListenStreams => "listen_streams",
            Kind::Waits => "waits",
            Kind::RunningTasks => "running_tasks",
            Kind::AuthCalls => "auth_calls",
            Kind::StoredTasks => "stored_tasks",
            Kind::Notifications => "notifications",
            Kind::LegacyStreams => "legacy_streams",
            Kind::DpopProofs => "dpop_proofs",
            Kind::Handshakes => "handshakes",
        }
    }

    /// The settings named in a refusal's `data.limit`: the per-caller
    /// share's, then the global cap's.
    #[must_use]
    pub fn settings(self) -> (&'static str, &'static str) {
        match self {
            Kind::Bodies => ("bodies_per_caller", "bodies_in_flight"),
            Kind::ListenStreams | Kind::LegacyStreams => ("max_streams_per_caller", "max_streams"),
            Kind::Waits => ("max_waiting_per_caller", "max_waiting"),
            Kind::RunningTasks => ("max_running_per_caller", "max_running"),
            Kind::AuthCalls => ("auth_calls_per_caller", "auth_calls"),
            Kind::StoredTasks => ("max_stored_per_caller", "max_stored"),
            Kind::Notifications => ("notification_bytes_per_caller", "notification_bytes"),
            Kind::DpopProofs => ("dpop_proofs_per_caller", "dpop_proofs"),
            Kind::Handshakes => ("handshakes_per_caller", "handshakes"),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Bodies => "bytes of request bodies held",
            Kind::ListenStreams => "open listen streams",
            Kind::Waits => "requests waiting for the client's answers",
            Kind::RunningTasks => "tasks running",
            Kind::AuthCalls => "calls to the authorization server in flight",
            Kind::StoredTasks => "task records stored",
            Kind::Notifications => "bytes of notifications queued for clients",
            Kind::LegacyStreams => "open 2025 GET streams",
            Kind::DpopProofs => "DPoP proofs remembered against replay",
            Kind::Handshakes => "TLS handshakes in progress",
        }
    }
}

/// A kind's limits: what one caller may hold, what all may, and how long a
/// refused client is asked to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// What one caller may hold.
    pub per_caller: usize,
    /// What all callers together may hold.
    pub global: usize,
    /// The `Retry-After` of a refusal.
    pub retry_after: Duration,
}

/// Why a place was not given, or was taken back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The caller holds its share (or its place gave way to a caller under
    /// its fair share): 429, `Retry-After`.
    Share(Kind),
    /// Every caller is within its fair share and the kind is at its global
    /// cap: 503, `Retry-After`.
    Cap(Kind),
}

impl Refusal {
    /// The kind refused.
    #[must_use]
    pub fn kind(self) -> Kind {
        match self {
            Refusal::Share(kind) | Refusal::Cap(kind) => kind,
        }
    }

    /// Whether it is the caller's share (else the global cap).
    #[must_use]
    pub fn is_share(self) -> bool {
        matches!(self, Refusal::Share(_))
    }
}

#[derive(Debug, Default)]
struct Eviction {
    evicted: AtomicBool,
    notify: Notify,
}

#[derive(Debug)]
struct Held {
    amount: usize,
    /// Set for a place that may give way.
    eviction: Option<Arc<Eviction>>,
}

#[derive(Debug, Default)]
struct Holder {
    held: usize,
    /// By age: a place's sequence number, its amount and whether it may go.
    places: BTreeMap<u64, Held>,
}

#[derive(Debug, Default)]
struct Book {
    total: usize,
    holders: HashMap<Caller, Holder>,
}

#[derive(Debug)]
struct Inner {
    shares: [Share; 10],
    books: [Mutex<Book>; 10],
    next: std::sync::atomic::AtomicU64,
}

/// The places callers hold, by kind: one per server, shared by its clones
/// and by every part that holds something for a caller.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for kind in Kind::ALL {
            map.entry(&kind.name(), &(self.held(kind), self.share(kind)));
        }
        map.finish()
    }
}

impl Default for Ledger {
    /// A ledger with [`Ledger::DEFAULT_SHARES`].
    fn default() -> Self {
        Ledger::new(|kind| Ledger::DEFAULT_SHARES[kind.index()])
    }
}

/// One place held: given back when dropped.
#[derive(Debug)]
pub struct Place {
    inner: Arc<Inner>,
    kind: Kind,
    caller: Caller,
    seq: u64,
    eviction: Option<Arc<Eviction>>,
}

impl Ledger {
    /// The defaults of each kind, in [`Kind::ALL`]'s order (docs/limits.md's
    /// table): bodies 32 MiB a caller of 256 MiB; listen streams 8 of 1,024;
    /// waiting requests 16 of 1,024; running tasks 16 of 256; authorization
    /// server calls 8 of 64; task records stored 256 of 10,000; queued
    /// notification bytes 8 MiB a caller of 64 MiB; 2025 GET streams 8 of
    /// 1,024 (as listen streams); DPoP proofs remembered 4,096 of 200,000;
    /// TLS handshakes in progress 16 of 1,024.
    pub const DEFAULT_SHARES: [Share; 10] = [
        Share {
            per_caller: 32 * 1024 * 1024,
            global: 256 * 1024 * 1024,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 8,
            global: 1024,
            retry_after: Duration::from_secs(10),
        },
        Share {
            per_caller: 16,
            global: 1024,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 16,
            global: 256,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 8,
            global: 64,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 256,
            global: 10_000,
            retry_after: Duration::from_secs(60),
        },
        Share {
            per_caller: 8 * 1024 * 1024,
            global: 64 * 1024 * 1024,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 8,
            global: 1024,
            retry_after: Duration::from_secs(10),
        },
        Share {
            per_caller: 4096,
            global: 200_000,
            retry_after: Duration::from_secs(1),
        },
        Share {
            per_caller: 16,
            global: 1024,
            retry_after: Duration::from_secs(1),
        },
    ];

    /// A ledger whose kinds have the shares `share` answers.
    #[must_use]
    pub fn new(share: impl Fn(Kind) -> Share) -> Self {
        Ledger {
            inner: Arc::new(Inner {
                shares: Kind::ALL.map(share),
                books: Default::default(),
                next: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// A kind's limits.
    #[must_use]
    pub fn share(&self, kind: Kind) -> Share {
        self.inner.shares[kind.index()]
    }

    /// What all callers hold of `kind` now.
    #[must_use]
    pub fn held(&self, kind: Kind) -> usize {
        self.inner.book(kind).total
    }

    /// What `caller` holds of `kind` now.
    #[must_use]
    pub fn held_by(&self, kind: Kind, caller: &Caller) -> usize {
        self.inner
            .book(kind)
            .holders
            .get(caller)
            .map_or(0, |holder| holder.held)
    }

    /// A place of `amount` of `kind` for `caller`, one that never gives way.
    pub fn take(&self, kind: Kind, caller: &Caller, amount: usize) -> Result<Place, Refusal> {
        self.take_place(kind, caller, amount, false)
    }

    /// A place that gives way to a caller under its fair share when the kind
    /// is at its cap: whoever holds it waits on [`Place::evicted`] beside
    /// what it does, and answers the caller-share error when it resolves.
    pub fn take_evictable(
        &self,
        kind: Kind,
        caller: &Caller,
        amount: usize,
    ) -> Result<Place, Refusal> {
        self.take_place(kind, caller, amount, true)
    }

    fn take_place(
        &self,
        kind: Kind,
        caller: &Caller,
        amount: usize,
        evictable: bool,
    ) -> Result<Place, Refusal> {
        let share = self.share(kind);
        let mut guard = self.inner.book(kind);
        let book = &mut *guard;
        // Under the kind's global cap (the usual case) nothing can give way,
        // and the caller's holder is looked up once, by `entry`: each lookup
        // hashes the caller's key (SipHash, as the keys are the clients').
        if book.total.saturating_add(amount) > share.global {
            make_room(book, kind, share, caller, amount)?;
        }
        let holder = book.holders.entry(caller.clone()).or_default();
        if holder.held.saturating_add(amount) > share.per_caller {
            if holder.places.is_empty() {
                book.holders.remove(caller);
            }
            return Err(Refusal::Share(kind));
        }
        let seq = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let eviction = evictable.then(Arc::default);
        book.total += amount;
        holder.held += amount;
        holder.places.insert(
            seq,
            Held {
                amount,
                eviction: eviction.clone(),
            },
        );
        Ok(Place {
            inner: Arc::clone(&self.inner),
            kind,
            caller: caller.clone(),
            seq,
            eviction,
        })
    }

    /// The refusal's JSON-RPC error: -32600 naming the per-caller setting,
    /// or -32603 naming the global one, with the limit.
    #[must_use]
    pub fn error(&self, refusal: Refusal) -> RpcError {
        let kind = refusal.kind();
        let share = self.share(kind);
        let (per_caller, global) = kind.settings();
        match refusal {
            Refusal::Share(_) => RpcError::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "this caller holds its share of {} ({}); try again later",
                    kind.what(),
                    share.per_caller
                ),
            )
            .data(json!({"limit": per_caller, "max": share.per_caller})),
            Refusal::Cap(_) => RpcError::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the server holds as many {} as it serves ({}); try again later",
                    kind.what(),
                    share.global
                ),
            )
            .data(json!({"limit": global, "max": share.global})),
        }
    }
}

/// Makes room in `book` for `amount` more of `caller`'s: refuses a caller
/// over its share; at the cap, evicts the largest holders' oldest evictable
/// places while `caller` stays within its fair share.
fn make_room(
    book: &mut Book,
    kind: Kind,
    share: Share,
    caller: &Caller,
    amount: usize,
) -> Result<(), Refusal> {
    let mine = book.holders.get(caller).map_or(0, |h| h.held);
    if mine.saturating_add(amount) > share.per_caller {
        return Err(Refusal::Share(kind));
    }
    while book.total.saturating_add(amount) > share.global {
        let holders = book.holders.len() + usize::from(!book.holders.contains_key(caller));
        let fair = share.global / holders.max(1);
        if mine.saturating_add(amount) > fair {
            return Err(Refusal::Cap(kind));
        }
        // The largest holder over its fair share with a place that may go.
        let victim = book
            .holders
            .iter()
            .filter(|(who, holder)| {
                *who != caller
                    && holder.held > fair
                    && holder.places.values().any(|p| p.eviction.is_some())
            })
            .max_by_key(|(_, holder)| holder.held)
            .map(|(who, _)| who.clone());
        let Some(victim) = victim else {
            return Err(Refusal::Cap(kind));
        };
        let Some(holder) = book.holders.get_mut(&victim) else {
            return Err(Refusal::Cap(kind));
        };
        let Some(seq) = holder
            .places
            .iter()
            .find(|(_, p)| p.eviction.is_some())
            .map(|(seq, _)| *seq)
        else {
            return Err(Refusal::Cap(kind));
        };
        if let Some(place) = holder.places.remove(&seq) {
            holder.held -= place.amount;
            book.total -= place.amount;
            if holder.places.is_empty() {
                book.holders.remove(&victim);
            }
            if let Some(eviction) = place.eviction {
                eviction.evicted.store(true, Ordering::Release);
                eviction.notify.notify_waiters();
            }
            tracing::debug!(
                target: "wymcp::ledger",
                kind = kind.name(),
                caller = %victim,
                "a place gave way to a caller under its fair share"
            );
        }
    }
    Ok(())
}

impl Inner {
    fn book(&self, kind: Kind) -> std::sync::MutexGuard<'_, Book> {
        self.books[kind.index()]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Place {
    /// What the place stands for.
    #[must_use]
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Who holds it.
    #[must_use]
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// What it holds now (0 once it gave way).
    #[must_use]
    pub fn amount(&self) -> usize {
        let book = self.inner.book(self.kind);
        book.holders
            .get(&self.caller)
            .and_then(|h| h.places.get(&self.seq))
            .map_or(0, |p| p.amount)
    }

    /// `more` on top of what the place holds, within the caller's share and
    /// the cap as [`Ledger::take`] is (a caller within its fair share may
    /// make others' places give way). A place that gave way grows no more.
    pub fn grow(&mut self, more: usize) -> Result<(), Refusal> {
        if self.is_evicted() {
            return Err(Refusal::Share(self.kind));
        }
        let share = self.inner.shares[self.kind.index()];
        let mut guard = self.inner.book(self.kind);
        let book = &mut *guard;
        // As in `take_place`: the holder looked up once under the global cap.
        if book.total.saturating_add(more) > share.global {
            make_room(book, self.kind, share, &self.caller, more)?;
        }
        let Some(holder) = book.holders.get_mut(&self.caller) else {
            return Err(Refusal::Share(self.kind));
        };
        if holder.held.saturating_add(more) > share.per_caller {
            return Err(Refusal::Share(self.kind));
        }
        let Some(held) = holder.places.get_mut(&self.seq) else {
            return Err(Refusal::Share(self.kind));
        };
        held.amount += more;
        holder.held += more;
        book.total += more;
        Ok(())
    }

    /// Gives back `less` of what the place holds (at most all of it).
    pub fn shrink(&mut self, less: usize) {
        let mut book = self.inner.book(self.kind);
        let Some(holder) = book.holders.get_mut(&self.caller) else {
            return;
        };
        let Some(held) = holder.places.get_mut(&self.seq) else {
            return;
        };
        let less = less.min(held.amount);
        held.amount -= less;
        holder.held -= less;
        book.total -= less;
    }

    /// Whether the place gave way.
    #[must_use]
    pub fn is_evicted(&self) -> bool {
        self.eviction
            .as_ref()
            .is_some_and(|e| e.evicted.load(Ordering::Acquire))
    }

    /// The error its holder ends with when the place gives way: the
    /// caller-share error of its kind ([`Ledger::error`]), made when it is
    /// needed rather than kept beside every place held.
    #[must_use]
    pub fn share_error(&self) -> RpcError {
        Ledger {
            inner: Arc::clone(&self.inner),
        }
        .error(Refusal::Share(self.kind))
    }

    /// Resolves when the place gives way to a caller under its fair share
    /// (never, for a place taken with [`Ledger::take`]).
    pub async fn evicted(&self) {
        self.on_evicted().await;
    }

    /// [`evicted`](Self::evicted) as a future of its own, for a holder that
    /// keeps the place and the wait side by side (a stream polled by hand).
    pub fn on_evicted(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let eviction = self.eviction.clone();
        async move {
            let Some(eviction) = eviction else {
                return std::future::pending().await;
            };
            loop {
                let notified = eviction.notify.notified();
                if eviction.evicted.load(Ordering::Acquire) {
                    return;
                }
                notified.await;
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut guard = self.inner.book(self.kind);
        let book = &mut *guard;
        // One lookup (one hash of the key) whether the holder stays or goes.
        let Entry::Occupied(mut holder) = book.holders.entry(self.caller.clone()) else {
            return;
        };
        let Some(place) = holder.get_mut().places.remove(&self.seq) else {
            return;
        };
        holder.get_mut().held -= place.amount;
        if holder.get().places.is_empty() {
            holder.remove();
        }
        book.total -= place.amount;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ledger(per_caller: usize, global: usize) -> Ledger {
        Ledger::new(|_| Share {
            per_caller,
            global,
            retry_after: Duration::from_secs(1),
        })
    }

    fn who(name: &str) -> Caller {
        Caller::principal(name)
    }

    #[test]
    fn a_caller_over_its_share_is_refused_and_others_are_not() {
        let ledger = ledger(2, 10);
        let a = who("a");
        let _one = ledger.take(Kind::Waits, &a, 1).unwrap();
        let two = ledger.take(Kind::Waits, &a, 1).unwrap();
        assert_eq!(
            ledger.take(Kind::Waits, &a, 1).unwrap_err(),
            Refusal::Share(Kind::Waits)
        );
        assert!(ledger.take(Kind::Waits, &who("b"), 1).is_ok());
        drop(two);
        assert!(ledger.take(Kind::Waits, &a, 1).is_ok());
        assert_eq!(ledger.held_by(Kind::Waits, &a), 1);
        // Kinds are counted apart.
        assert!(ledger.take(Kind::ListenStreams, &a, 2).is_ok());
    }

    #[test]
    fn places_given_back_on_drop_leave_nothing_behind() {
        let ledger = ledger(100, 100);
        let places: Vec<_> = (0..50)
            .map(|i| ledger.take(Kind::Bodies, &who(&i.to_string()), 2).unwrap())
            .collect();
        assert_eq!(ledger.held(Kind::Bodies), 100);
        drop(places);
        assert_eq!(ledger.held(Kind::Bodies), 0);
        assert!(ledger.inner.book(Kind::Bodies).holders.is_empty());
    }

    /// A take refused by the caller's share leaves no empty holder behind:
    /// one would count in the cap's fair share (`global / holders`) and
    /// make every other caller's smaller.
    #[test]
    fn a_refused_take_leaves_no_holder_behind() {
        let ledger = ledger(2, 10);
        for i in 0..100 {
            assert_eq!(
                ledger
                    .take(Kind::Waits, &who(&i.to_string()), 3)
                    .unwrap_err(),
                Refusal::Share(Kind::Waits)
            );
        }
        assert!(ledger.inner.book(Kind::Waits).holders.is_empty());
        // A caller holding one place and refused a second keeps the one.
        let a = who("a");
        let _one = ledger.take(Kind::Waits, &a, 2).unwrap();
        assert!(ledger.take(Kind::Waits, &a, 1).is_err());
        assert_eq!(ledger.held_by(Kind::Waits, &a), 2);
        assert_eq!(ledger.inner.book(Kind::Waits).holders.len(), 1);
    }

    #[test]
    fn at_the_cap_the_largest_holders_oldest_evictable_place_gives_way() {
        // Cap 4, share 4: one caller fills it all.
        let ledger = ledger(4, 4);
        let hog = who("hog");
        let places: Vec<_> = (0..4)
            .map(|_| ledger.take_evictable(Kind::ListenStreams, &hog, 1).unwrap())
            .collect();
        let newcomer = who("new");
        let mine = ledger
            .take_evictable(Kind::ListenStreams, &newcomer, 1)
            .unwrap();
        assert!(places[0].is_evicted(), "the oldest gave way");
        assert!(!places[1].is_evicted());
        assert_eq!(places[0].amount(), 0);
        assert_eq!(ledger.held(Kind::ListenStreams), 4);
        assert_eq!(ledger.held_by(Kind::ListenStreams, &hog), 3);
        // Two holders: a fair share is 2; the newcomer takes its second.
        let _second = ledger
            .take_evictable(Kind::ListenStreams, &newcomer, 1)
            .unwrap();
        assert!(places[1].is_evicted());
        // A third would be over its fair share: the cap's refusal.
        assert_eq!(
            ledger.take(Kind::ListenStreams, &newcomer, 1).unwrap_err(),
            Refusal::Cap(Kind::ListenStreams)
        );
        // Dropping what gave way counts nothing twice.
        drop(places);
        assert_eq!(ledger.held(Kind::ListenStreams), 2);
        drop(mine);
        assert_eq!(ledger.held(Kind::ListenStreams), 1);
    }

    #[test]
    fn places_that_never_give_way_are_not_evicted() {
        let ledger = ledger(4, 4);
        let hog = who("hog");
        let _places: Vec<_> = (0..4)
            .map(|_| ledger.take(Kind::RunningTasks, &hog, 1).unwrap())
            .collect();
        assert_eq!(
            ledger.take(Kind::RunningTasks, &who("new"), 1).unwrap_err(),
            Refusal::Cap(Kind::RunningTasks)
        );
    }

    #[test]
    fn many_callers_within_their_shares_cannot_starve_a_newcomer() {
        // 64 callers of 16 fill a cap of 1,024; the 65th still gets a place.
        let ledger = ledger(16, 1024);
        let places: Vec<_> = (0..64)
            .flat_map(|i| {
                let caller = who(&format!("host{i}"));
                let ledger = ledger.clone();
                (0..16).map(move |_| ledger.take_evictable(Kind::Waits, &caller, 1).unwrap())
            })
            .collect();
        assert_eq!(ledger.held(Kind::Waits), 1024);
        let newcomer = ledger.take_evictable(Kind::Waits, &who("newcomer"), 1);
        assert!(newcomer.is_ok());
        assert_eq!(places.iter().filter(|p| p.is_evicted()).count(), 1);
        assert_eq!(ledger.held(Kind::Waits), 1024);
    }

    #[test]
    fn a_place_grows_within_the_share_and_the_cap() {
        let ledger = ledger(10, 15);
        let a = who("a");
        let mut place = ledger.take(Kind::Bodies, &a, 4).unwrap();
        place.grow(6).unwrap();
        assert_eq!(place.grow(1).unwrap_err(), Refusal::Share(Kind::Bodies));
        let _b = ledger.take(Kind::Bodies, &who("b"), 5).unwrap();
        assert_eq!(ledger.held(Kind::Bodies), 15);
        drop(place);
        assert_eq!(ledger.held(Kind::Bodies), 5);
    }

    #[tokio::test]
    async fn evicted_resolves_for_the_place_that_gave_way() {
        let ledger = ledger(2, 2);
        let place = ledger
            .take_evictable(Kind::ListenStreams, &who("a"), 1)
            .unwrap();
        let _younger = ledger
            .take_evictable(Kind::ListenStreams, &who("a"), 1)
            .unwrap();
        let waiter = tokio::spawn(async move {
            place.evicted().await;
            place.is_evicted()
        });
        tokio::task::yield_now().await;
        let _new = ledger.take(Kind::ListenStreams, &who("b"), 1).unwrap();
        assert!(waiter.await.unwrap());
    }

    #[test]
    fn refusals_name_the_setting_and_answer_their_codes() {
        let ledger = Ledger::default();
        let share = ledger.error(Refusal::Share(Kind::ListenStreams));
        assert_eq!(share.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            share.data.as_ref().unwrap()["limit"],
            "max_streams_per_caller"
        );
        let stored = ledger.error(Refusal::Share(Kind::StoredTasks));
        assert_eq!(stored.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            stored.data.as_ref().unwrap()["limit"],
            "max_stored_per_caller"
        );
        let cap = ledger.error(Refusal::Cap(Kind::Bodies));
        assert_eq!(cap.code, ErrorCode::INTERNAL_ERROR);
        assert_eq!(cap.data.as_ref().unwrap()["limit"], "bodies_in_flight");
        assert_eq!(cap.data.as_ref().unwrap()["max"], 256 * 1024 * 1024);
    }
}
