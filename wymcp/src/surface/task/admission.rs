//! Who may start a task and how many run: the extension declared in a
//! request's `_meta`, the settings ([`TaskLimits`]), the handlers this
//! replica runs (each holding a [`Slot`], a place in the ledger counted in
//! all and per caller), and the
//! [`Tasks`] of a server that holds them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::ledger::{Caller, Kind, Ledger, Place, Refusal, Share};
use crate::outage::Outage;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::ids::random_hex;
use crate::protocol::ids::{every, now_ms};
use crate::protocol::meta::{CLIENT_CAPABILITIES, TASKS_EXTENSION};
use crate::surface::call::{Answer, Busy, Outcome};
use crate::tasks::{MemoryTaskStore, Quota, TaskStore};

/// The settings of the tasks extension, each with a default meant for a
/// public endpoint (see
/// [`ServerBuilder::task_limits`](crate::ServerBuilder::task_limits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskLimits {
    /// How long a task stays readable after it was created (`ttlMs`), its
    /// result included. Default 1 hour.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    /// Default 500 ms.
    pub poll_interval: Duration,
    /// How long a replica's hold on a task it runs lasts without a
    /// heartbeat: a `working` task whose lease ran out is `failed`.
    /// Default 15 s.
    pub lease: Duration,
    /// How often the replica running a task renews its lease (and sees a
    /// cancellation made elsewhere). Default 5 s; keep it well under the
    /// lease.
    pub heartbeat: Duration,
    /// Task handlers running at once on this replica; one more task is
    /// refused `503` (-32603) with `Retry-After`. Default 256.
    pub max_running: usize,
    /// Task handlers running at once on this replica for one caller (the
    /// principal's subject when the server authenticates, else the
    /// client's address, as for listen streams); one more is refused `429`
    /// (-32600) with `Retry-After`. Default 16.
    pub max_running_per_caller: usize,
    /// The largest task record stored, in bytes: the call's arguments and
    /// `_meta`, the answers gathered, the result. A call whose record would
    /// be larger is refused -32602 (`data.limit: "max_task_bytes"`); a
    /// result that would make it larger fails the task. Default 1 MiB.
    pub max_task_bytes: usize,
    /// How long one store operation may take before the request is answered
    /// -32603. Default 2 s.
    pub store_timeout: Duration,
    /// Task records stored at once, finished ones included until their
    /// records expire (the [`ledger`](crate::ledger)'s
    /// [`Kind::StoredTasks`] cap, and the default in-memory store's
    /// capacity); one more is refused `503` (-32603,
    /// `data.limit: "max_stored"`) with `Retry-After`. With a store shared
    /// by replicas (Redis), the cap holds for all of them. Default 10,000.
    pub max_stored: usize,
    /// Task records stored at once for one caller (counted as
    /// [`max_running_per_caller`](Self::max_running_per_caller) is), from
    /// a task's creation until its record expires; one more is refused
    /// `429` (-32600, `data.limit: "max_stored_per_caller"`) with
    /// `Retry-After`. Default 256.
    pub max_stored_per_caller: usize,
    /// How often expired task records are swept from the in-memory store
    /// and their places given back to the ledger. Default 10 s.
    pub sweep_interval: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(15),
            heartbeat: Duration::from_secs(5),
            max_running: 256,
            max_running_per_caller: 16,
            max_task_bytes: 1024 * 1024,
            store_timeout: Duration::from_secs(2),
            max_stored: 10_000,
            max_stored_per_caller: 256,
            sweep_interval: Duration::from_secs(10),
        }
    }
}

impl TaskLimits {
    /// Sets [`ttl`](Self::ttl).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets [`poll_interval`](Self::poll_interval).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets [`lease`](Self::lease) and [`heartbeat`](Self::heartbeat).
    #[must_use]
    pub fn lease(mut self, lease: Duration, heartbeat: Duration) -> Self {
        self.lease = lease;
        self.heartbeat = heartbeat;
        self
    }

    /// Sets [`max_running`](Self::max_running).
    #[must_use]
    pub fn max_running(mut self, max: usize) -> Self {
        self.max_running = max;
        self
    }

    /// Sets [`max_running_per_caller`](Self::max_running_per_caller).
    #[must_use]
    pub fn max_running_per_caller(mut self, max: usize) -> Self {
        self.max_running_per_caller = max;
        self
    }

    /// Sets [`max_task_bytes`](Self::max_task_bytes).
    #[must_use]
    pub fn max_task_bytes(mut self, max: usize) -> Self {
        self.max_task_bytes = max;
        self
    }

    /// Sets [`store_timeout`](Self::store_timeout).
    #[must_use]
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.store_timeout = timeout;
        self
    }

    /// Sets [`max_stored`](Self::max_stored).
    #[must_use]
    pub fn max_stored(mut self, max: usize) -> Self {
        self.max_stored = max;
        self
    }

    /// Sets [`max_stored_per_caller`](Self::max_stored_per_caller).
    #[must_use]
    pub fn max_stored_per_caller(mut self, max: usize) -> Self {
        self.max_stored_per_caller = max;
        self
    }

    /// Sets [`sweep_interval`](Self::sweep_interval).
    #[must_use]
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }
}

impl TaskLimits {
    /// Running handlers' share of the [`ledger`](crate::ledger): these
    /// limits, and a refused client asked to wait 5 s.
    pub(crate) fn share(&self) -> Share {
        Share {
            per_caller: self.max_running_per_caller,
            global: self.max_running,
            retry_after: Duration::from_secs(5),
        }
    }

    /// Stored records' share of the [`ledger`](crate::ledger): these
    /// limits, and a refused client asked to wait 60 s (a place is given
    /// back only when a record expires).
    pub(crate) fn stored_share(&self) -> Share {
        Share {
            per_caller: self.max_stored_per_caller,
            global: self.max_stored,
            retry_after: Duration::from_secs(60),
        }
    }
}

/// Whether the request's `_meta` declares the tasks extension.
pub(crate) fn declared(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// The -32021 of a request that needs the extension and did not declare it.
pub(crate) fn undeclared(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("`{method}` needs the client to declare the `{TASKS_EXTENSION}` extension"),
    )
    .data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// A fresh task id: 128 bits from the operating system, hex.
pub(super) fn new_id() -> Result<String, RpcError> {
    random_hex()
        .ok_or_else(|| RpcError::new(ErrorCode::INTERNAL_ERROR, "no randomness to mint a task id"))
}

/// Whether `id` has the shape [`new_id`] mints: 32 lowercase hex digits.
pub(super) fn minted(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The running handlers of this replica that a cancellation may abort.
#[derive(Debug, Default)]
pub(super) struct Local {
    pub(super) aborts: HashMap<String, tokio::task::AbortHandle>,
}

/// A running handler's place in the [`ledger`](crate::ledger), given back
/// when dropped (when the handler finishes, fails or is dropped by a
/// cancellation).
#[derive(Debug)]
pub(super) struct Slot {
    tasks: Arc<Tasks>,
    _place: Place,
    pub(super) id: Option<String>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.tasks.local().aborts.remove(id);
        }
    }
}

/// The places of the records this replica stored, by expiry: each given
/// back to the ledger once its record has expired.
#[derive(Debug, Default)]
pub(super) struct Stored {
    places: BTreeMap<(u64, u64), Place>,
    next: u64,
    sweeping: bool,
}

impl Stored {
    /// Gives back the places of the records expired by `now`.
    fn sweep(&mut self, now: u64) {
        while let Some(entry) = self.places.first_entry() {
            if entry.key().0 > now {
                break;
            }
            entry.remove();
        }
    }
}

/// The tasks of a server: the store, the settings, this replica's name and
/// the handlers it runs.
pub(crate) struct Tasks {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) limits: TaskLimits,
    /// This process's name in a task's `runner` (random, per process).
    pub(super) replica: String,
    pub(super) local: Mutex<Local>,
    /// Where running handlers and stored records take their places.
    pub(super) ledger: Ledger,
    /// The places of the records stored through this replica.
    pub(super) stored: Mutex<Stored>,
    /// Whether the store is in an outage: one warning per outage.
    pub(super) outage: Outage,
    /// `wymcp.tasks.statuses`: the tasks that reached each status, counted
    /// where the change was written (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(super) statuses: opentelemetry::metrics::Counter<u64>,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("store", &self.store)
            .field("limits", &self.limits)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// Tasks kept in `store` (the in-memory default when `None`).
    pub(crate) fn new(
        store: Option<Arc<dyn TaskStore>>,
        limits: TaskLimits,
        ledger: Ledger,
    ) -> Self {
        let store = store.unwrap_or_else(|| {
            Arc::new(MemoryTaskStore::new(limits.max_stored).sweep_every(limits.sweep_interval))
        });
        Tasks {
            store,
            limits,
            replica: new_id().unwrap_or_else(|_| format!("pid-{}", std::process::id())),
            local: Mutex::default(),
            ledger,
            stored: Mutex::default(),
            outage: Outage::default(),
            #[cfg(feature = "metrics")]
            statuses: opentelemetry::global::meter_with_scope(
                opentelemetry::InstrumentationScope::builder("wymcp")
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .build(),
            )
            .u64_counter("wymcp.tasks.statuses")
            .with_unit("{task}")
            .with_description(
                "Tasks that reached each status (working at creation), counted on the \
                 replica that wrote the change",
            )
            .build(),
        }
    }

    fn stored(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.stored.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more stored record of `caller` (the places of
    /// expired records given back first).
    pub(super) fn admit_record(self: &Arc<Self>, caller: &Caller) -> Result<Place, Refusal> {
        self.stored().sweep(now_ms());
        self.ledger.take(Kind::StoredTasks, caller, 1)
    }

    /// Keeps `place` until `expires_at_ms`, when the record it stands for
    /// expires; a timer gives it back (and those of every record expired)
    /// even when no task is created after.
    pub(super) fn keep_record(self: &Arc<Self>, place: Place, expires_at_ms: u64) {
        let mut stored = self.stored();
        let seq = stored.next;
        stored.next += 1;
        stored.places.insert((expires_at_ms, seq), place);
        if stored.sweeping {
            return;
        }
        let tasks = Arc::downgrade(self);
        stored.sweeping = every(self.limits.sweep_interval, tasks, |tasks: &Self| {
            tasks.stored().sweep(now_ms());
        });
    }

    /// The quota a store shared by replicas holds `caller` to.
    pub(super) fn quota(&self, caller: &Caller) -> Quota {
        let share = self.ledger.share(Kind::StoredTasks);
        Quota::new(caller.as_str(), share.per_caller, share.global)
    }

    pub(super) fn local(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many task handlers run on this replica.
    pub(crate) fn running(&self) -> usize {
        self.ledger.held(Kind::RunningTasks)
    }

    /// A place for one more running handler of `caller`.
    pub(super) fn admit(self: &Arc<Self>, caller: &Caller) -> Result<Slot, Refusal> {
        let place = self.ledger.take(Kind::RunningTasks, caller, 1)?;
        Ok(Slot {
            tasks: Arc::clone(self),
            _place: place,
            id: None,
        })
    }

    /// The answer to a task the ledger refused (429 for the caller's share,
    /// 503 for the replica's cap, `Retry-After` 5 s).
    pub(super) fn busy(&self, refusal: Refusal) -> Answer {
        Answer::Busy {
            error: self.ledger.error(refusal),
            refusal,
            retry_after: self.ledger.share(refusal.kind()).retry_after,
        }
    }

    /// [`busy`](Self::busy) as the outcome of a call under way (a store
    /// shared by replicas refused it): the same status, error and
    /// `Retry-After`.
    pub(super) fn refused(&self, refusal: Refusal) -> Outcome {
        Outcome::Busy(Box::new(Busy {
            error: self.ledger.error(refusal),
            refusal,
            retry_after: self.ledger.share(refusal.kind()).retry_after,
        }))
    }
}
