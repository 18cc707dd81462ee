//! The change bus: what the catalog publishes ([`Change`]) and every open
//! listen stream of this replica hears, and the [`ChangeRelay`] that carries
//! it to the other replicas and theirs back ([`ChangeFeed`]). The streams
//! that hear it are counted by the [`ledger`](crate::ledger) (each holds a
//! [`Kind::ListenStreams`](crate::ledger::Kind::ListenStreams) place); what
//! a stream is told is the listen stream's ([`listen`](super::listen)).

use std::sync::Arc;

use tokio::sync::broadcast;

/// How many unread changes a listen stream may fall behind before it is told
/// conservatively (see [`listen`](super::listen)).
pub(crate) const BUS_CAPACITY: usize = 256;

/// A change a listen stream may report.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource (or template) list changed.
    ResourcesListChanged,
    /// The resource with this URI changed.
    ResourceUpdated(String),
    /// A 2025 client subscribed to (`on`) or unsubscribed from the
    /// resource `uri` (`resources/subscribe`/`unsubscribe`), carried to
    /// every replica so that the client's GET streams, wherever they are
    /// open, watch it (docs/limits.md, "The 2025 standalone GET stream").
    /// `session` is the nonce sealed in the client's `Mcp-Session-Id`,
    /// which names its streams. Never written on a stream itself.
    Subscription {
        /// The nonce naming the client's streams.
        session: String,
        /// The resource's URI.
        uri: String,
        /// Subscribed (`true`) or unsubscribed.
        on: bool,
    },
    /// A message of the application's own, carried to every replica's bus
    /// like any change (by its [`ChangeRelay`]) and heard through
    /// [`Catalog::subscribe`](crate::Catalog::subscribe); never written on
    /// a listen stream. `examples/everything` applies the catalog changes of
    /// other replicas with it (docs/deployment.md).
    Application {
        /// What the message is about (the application's own namespace).
        topic: String,
        /// The message.
        body: String,
    },
}

/// Carries a replica's changes to the other replicas and theirs to it: the
/// backend of the change bus. Without one the bus is this process's alone
/// (the default); `wymcp::redis::RedisBus` (feature `redis`) carries it
/// through Redis pub/sub. Set with
/// [`ServerBuilder::change_relay`](crate::ServerBuilder::change_relay).
///
/// ```
/// use wymcp::{Change, ChangeFeed, ChangeRelay};
///
/// /// Prints every change this replica publishes; hears nothing back.
/// #[derive(Debug)]
/// struct Print;
///
/// impl ChangeRelay for Print {
///     fn publish(&self, change: &Change) {
///         println!("{change:?}");
///     }
///     fn start(&self, _feed: ChangeFeed) {}
/// }
///
/// let server = wymcp::Server::builder().change_relay(Print).build()?;
/// server.notify_tools_changed();
/// # Ok::<(), wymcp::BuildError>(())
/// ```
pub trait ChangeRelay: Send + Sync + std::fmt::Debug + 'static {
    /// Called with every change published on this replica (whose own
    /// listen streams the bus tells itself). Called on the publishing
    /// request's thread: it must not block (queue the change, and let a
    /// task of its own send it).
    fn publish(&self, change: &Change);

    /// Called once, when the server is built (inside its Tokio runtime):
    /// `feed` delivers the changes heard from other replicas to this
    /// replica's listen streams. A relay must not deliver this replica's
    /// own changes back (they were delivered when published).
    fn start(&self, feed: ChangeFeed);
}

/// Where a [`ChangeRelay`] delivers what other replicas published: this
/// replica's listen streams (and whoever holds a
/// [`Catalog::subscribe`](crate::Catalog::subscribe) receiver),
/// never the relay again. It does not keep the bus alive: once the server
/// is gone, delivering reaches nobody and [`is_closed`](Self::is_closed)
/// says so.
#[derive(Debug, Clone)]
pub struct ChangeFeed {
    changes: broadcast::WeakSender<Change>,
    resyncs: broadcast::WeakSender<()>,
}

impl ChangeFeed {
    /// Delivers another replica's change; how many subscribers heard it.
    pub fn deliver(&self, change: Change) -> usize {
        self.changes
            .upgrade()
            .and_then(|changes| changes.send(change).ok())
            .unwrap_or(0)
    }

    /// Tells every open listen stream that it may have missed changes (the
    /// relay lost touch with the other replicas for a while): each is told
    /// conservatively, as a stream that fell behind is — a list_changed for
    /// each list it watches, an `updated` for each URI it watches.
    pub fn resync(&self) -> usize {
        self.resyncs
            .upgrade()
            .and_then(|resyncs| resyncs.send(()).ok())
            .unwrap_or(0)
    }

    /// Whether the server this feed delivers to is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.changes.upgrade().is_none()
    }
}

/// The server's change bus: every open listen stream hears what is published,
/// and the relay, when there is one, carries it to the other replicas.
/// Clones share one bus.
#[derive(Debug, Clone)]
pub(crate) struct ChangeBus {
    changes: broadcast::Sender<Change>,
    closes: broadcast::Sender<()>,
    resyncs: broadcast::Sender<()>,
    relay: Option<Arc<dyn ChangeRelay>>,
}

impl Default for ChangeBus {
    fn default() -> Self {
        ChangeBus::new()
    }
}

impl ChangeBus {
    /// A bus with no listeners.
    #[must_use]
    pub(crate) fn new() -> Self {
        ChangeBus {
            changes: broadcast::channel(BUS_CAPACITY).0,
            closes: broadcast::channel(1).0,
            resyncs: broadcast::channel(1).0,
            relay: None,
        }
    }

    /// A bus whose changes `relay` carries to the other replicas, started
    /// with this bus's feed.
    #[must_use]
    pub(crate) fn relayed(relay: Arc<dyn ChangeRelay>) -> Self {
        let mut bus = ChangeBus::new();
        relay.start(bus.feed());
        bus.relay = Some(relay);
        bus
    }

    /// Where other replicas' changes are delivered on this bus.
    #[must_use]
    pub(crate) fn feed(&self) -> ChangeFeed {
        ChangeFeed {
            changes: self.changes.downgrade(),
            resyncs: self.resyncs.downgrade(),
        }
    }

    /// Hands `change` to the relay, and tells every open listen stream of
    /// this replica about it (each forwards it if its filter asked for it).
    /// Returns how many
    /// subscribers of this replica heard it.
    pub(crate) fn publish(&self, change: Change) -> usize {
        if let Some(relay) = &self.relay {
            relay.publish(&change);
        }
        self.changes.send(change).unwrap_or(0)
    }

    /// A bus of its own sharing nothing: what publishing on it reaches is
    /// nobody (a view of a catalog whose changes are not announced).
    #[must_use]
    pub(crate) fn silent() -> Self {
        ChangeBus::new()
    }

    /// Receives every change published from now on.
    #[must_use]
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Hears every [`close_all`](Self::close_all) from now on, and the end
    /// of the bus.
    #[must_use]
    pub(crate) fn subscribe_closes(&self) -> broadcast::Receiver<()> {
        self.closes.subscribe()
    }

    /// Hears every [`ChangeFeed::resync`] from now on.
    #[must_use]
    pub(crate) fn subscribe_resyncs(&self) -> broadcast::Receiver<()> {
        self.resyncs.subscribe()
    }

    /// Ends every open listen stream cleanly: the `complete` result, then the
    /// end of the stream. Streams opened afterwards are unaffected. Returns how
    /// many streams were told.
    pub(crate) fn close_all(&self) -> usize {
        self.closes.send(()).unwrap_or(0)
    }
}
