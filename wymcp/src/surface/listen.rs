//! `subscriptions/listen`: the long-lived stream of change notifications
//! (2026-07-28, SUB; SEP-2575 §HTTP subscriptions), heard on the change
//! bus ([`bus`](super::bus)), and the limits that keep streams from taking a
//! server down. Over HTTP the stream is an SSE answer (see [`crate::sse`]).
//!
//! The stream, in order:
//!
//! 1. `notifications/subscriptions/acknowledged`, first, whose
//!    `params.notifications` is the subset of the requested filter the server
//!    honours ([`Support`]: a type the server cannot deliver is left out);
//! 2. for each change published on the server's [`ChangeBus`] that the
//!    filter asked for: `notifications/tools/list_changed`,
//!    `notifications/prompts/list_changed`,
//!    `notifications/resources/list_changed`, or
//!    `notifications/resources/updated` (`params.uri`) for a URI in
//!    `resourceSubscriptions` (or beneath one, `uri/…`), when the caller's
//!    scopes permit the resource (or template) it names, as lists filter;
//! 3. on [`Server::close_subscriptions`](crate::Server::close_subscriptions),
//!    when the server is dropped, when the stream reaches its
//!    [lifetime](ListenLimits::max_lifetime), when the credentials it was
//!    opened with expire ([`Principal::expires_at`]), or when asking again
//!    about them ([`Principal::recheck`]: an introspected token, asked about
//!    again each cache TTL) finds them refused: the result
//!    `{"resultType": "complete", "_meta": {subscriptionId, serverInfo}}`
//!    with the listen request's id, then the end of the stream (the client
//!    opens a new one, and a client whose token expired or was revoked is
//!    answered `401` then). That is the graceful close the vendored
//!    2026-07-28 schema (as amended after the release, upstream commit
//!    `271ecc9`) defines: `SubscriptionsListenResultResponse`, whose
//!    `result` is a `SubscriptionsListenResult` (`resultType` and `_meta`
//!    required, the body otherwise empty) and whose `_meta` is a
//!    `SubscriptionsListenResultMetaObject` (the subscription id required,
//!    equal to the response's id; `serverInfo` optional). The test
//!    `listen::closing_subscriptions_ends_each_stream_with_a_complete_result`
//!    holds the close to both definitions.
//!
//! Every notification carries `params._meta["io.modelcontextprotocol/subscriptionId"]`
//! = the listen request's id; the envelope of each kind of notification is
//! rendered once, when the stream opens (a 2025 GET stream's, untagged and
//! the same for every stream, are shared). Log messages
//! (`notifications/message`) are never sent here (LOG §Per-request log
//! level).
//!
//! **Falling behind.** A stream that falls more than
//! [`BUS_CAPACITY`](super::bus::BUS_CAPACITY)
//! changes behind skips the backlog it missed and is told conservatively: a
//! list_changed for each list it watches and an `updated` for each URI it
//! watches, since a redundant re-read is harmless and a missed one is not.
//! The summary is given one message per poll, so a stream watching many
//! URIs never holds the executor (or memory) for all of them at once.
//!
//! **The 2025 standalone GET stream** ([`Listen::session`]) is the same
//! stream for a 2025-11-25 client, opened by a GET carrying its session
//! token, whose nonce names it: no acknowledgement, no `_meta` on what it
//! carries, no closing result (it just ends, on the same occasions; with
//! the caller-share error, id null, when its place gives way). It carries
//! every list_changed the server supports, and `resources/updated` for the
//! URIs its session subscribes to *while it is open*: a 2025
//! `resources/subscribe`/`unsubscribe` is published on the bus as a
//! [`Change::Subscription`] naming the nonce, and every stream of that
//! session, on any replica, watches the URI (or stops), within
//! [`ListenLimits::max_watched_uris`]. **Nothing is stored:** a subscribe
//! made while no stream of its session is open reaches nothing, and a new
//! stream starts with no subscriptions. Its events have no ids: a GET
//! carrying `Last-Event-ID` is told conservatively at once, as a stream
//! that fell behind is. It holds a
//! [`Kind::LegacyStreams`](crate::ledger::Kind::LegacyStreams) place, with
//! the listen streams' numbers.
//!
//! **Limits** ([`ListenLimits`]): open streams per server and per caller
//! (the principal when authenticated, else the client's address), watched
//! URIs per stream and their length, and a stream's lifetime.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::ReusableBoxFuture;

use super::bus::{Change, ChangeBus};
use super::finish::Finishing;
use crate::auth::{AuthError, Principal, Recheck};
use crate::ledger::{Place, Share};
use crate::protocol::error::RpcError;
use crate::protocol::jsonrpc::{self, MessageSource};
use crate::protocol::meta::{SERVER_INFO, SUBSCRIPTION_ID};
use crate::sse;

/// The limits of `subscriptions/listen` streams (and, with the same numbers
/// but counted apart, of 2025 GET streams), each a setting whose
/// default is meant for a public endpoint (see
/// [`ServerBuilder::listen_limits`](crate::ServerBuilder::listen_limits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenLimits {
    /// Streams open at once on the server; one more is refused `503`
    /// (-32603) with `Retry-After`. Default 1,024.
    pub max_streams: usize,
    /// Streams open at once per caller (the principal's subject when the
    /// server authenticates, else the client's address); one more is
    /// refused `429` (-32600) with `Retry-After`. Default 8.
    pub max_streams_per_caller: usize,
    /// URIs one stream may watch (`resourceSubscriptions`); more is -32602.
    /// Default 256.
    pub max_watched_uris: usize,
    /// The longest watched URI, in bytes; longer is -32602. Default 2,048.
    pub max_uri_bytes: usize,
    /// How long a stream lives before it ends cleanly, as at shutdown (the
    /// `complete` result), so that its client opens a new one. Default 1 hour.
    pub max_lifetime: Duration,
}

impl Default for ListenLimits {
    fn default() -> Self {
        ListenLimits {
            max_streams: 1024,
            max_streams_per_caller: 8,
            max_watched_uris: 256,
            max_uri_bytes: 2048,
            max_lifetime: Duration::from_secs(3600),
        }
    }
}

impl ListenLimits {
    /// Sets [`max_streams`](Self::max_streams).
    #[must_use]
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = max;
        self
    }

    /// Sets [`max_streams_per_caller`](Self::max_streams_per_caller).
    #[must_use]
    pub fn max_streams_per_caller(mut self, max: usize) -> Self {
        self.max_streams_per_caller = max;
        self
    }

    /// Sets [`max_watched_uris`](Self::max_watched_uris).
    #[must_use]
    pub fn max_watched_uris(mut self, max: usize) -> Self {
        self.max_watched_uris = max;
        self
    }

    /// Sets [`max_uri_bytes`](Self::max_uri_bytes).
    #[must_use]
    pub fn max_uri_bytes(mut self, max: usize) -> Self {
        self.max_uri_bytes = max;
        self
    }

    /// Sets [`max_lifetime`](Self::max_lifetime).
    #[must_use]
    pub fn max_lifetime(mut self, lifetime: Duration) -> Self {
        self.max_lifetime = lifetime;
        self
    }
}

impl ListenLimits {
    /// The streams' share of the [`ledger`](crate::ledger): these limits,
    /// and a refused client asked to wait 10 s.
    pub(crate) fn share(&self) -> Share {
        Share {
            per_caller: self.max_streams_per_caller,
            global: self.max_streams,
            retry_after: Duration::from_secs(10),
        }
    }
}

/// The URIs a stream watches, sorted, for lookups that cost the length of
/// the URI looked up (times a logarithm), never the number watched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Watched(Vec<Box<str>>);

impl Watched {
    fn new(mut uris: Vec<Box<str>>) -> Self {
        uris.sort_unstable();
        uris.dedup();
        Watched(uris)
    }

    fn contains(&self, uri: &str) -> bool {
        self.0.binary_search_by(|w| (**w).cmp(uri)).is_ok()
    }

    /// Whether `uri` is watched, or lies beneath a watched URI (`w/…`, or
    /// anything after a watched URI ending in `/`).
    fn covers(&self, uri: &str) -> bool {
        if self.contains(uri) {
            return true;
        }
        uri.match_indices('/').any(|(at, _)| {
            // `w` + `/…`, and `w/` + anything.
            self.contains(&uri[..at]) || self.contains(&uri[..=at])
        })
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// Watches `uri` too, unless `max` are watched already; whether it is
    /// watched now.
    fn insert(&mut self, uri: &str, max: usize) -> bool {
        match self.0.binary_search_by(|w| (**w).cmp(uri)) {
            Ok(_) => true,
            Err(_) if self.0.len() >= max => false,
            Err(at) => {
                self.0.insert(at, Box::from(uri));
                true
            }
        }
    }

    /// Stops watching `uri`.
    fn remove(&mut self, uri: &str) {
        if let Ok(at) = self.0.binary_search_by(|w| (**w).cmp(uri)) {
            self.0.remove(at);
        }
    }
}

/// Which notification types a client asked for: the `notifications` member
/// of `subscriptions/listen` params (`SubscriptionFilter`). Omitted or `false`
/// means no.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// `toolsListChanged`
    pub tools_list_changed: bool,
    /// `promptsListChanged`
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: the URIs whose `resources/updated` the client
    /// wants. `None` when not asked for.
    pub resource_subscriptions: Option<Watched>,
}

fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> RpcError {
    RpcError::invalid_params(message)
}

impl Filter {
    /// Reads `params.notifications`. A missing or non-object `notifications`,
    /// a flag that is not a boolean, a `resourceSubscriptions` that is not an
    /// array of strings, or one over `limits` (too many URIs, one too long),
    /// is -32602. Unknown members are ignored.
    pub(crate) fn from_params(
        params: Option<&Value>,
        limits: &ListenLimits,
    ) -> Result<Filter, RpcError> {
        let Some(Value::Object(notifications)) = params.and_then(|p| p.get("notifications")) else {
            return Err(invalid(
                "subscriptions/listen needs a `notifications` filter object",
            ));
        };
        let flag = |name: &str| match notifications.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(invalid("a subscription filter flag must be a boolean")),
        };
        let resource_subscriptions = match notifications.get("resourceSubscriptions") {
            None => None,
            Some(Value::Array(uris)) => {
                if uris.len() > limits.max_watched_uris {
                    return Err(invalid(format!(
                        "resourceSubscriptions lists {} URIs; a stream watches at most {}",
                        uris.len(),
                        limits.max_watched_uris
                    ))
                    .data(json!({"limit": "max_watched_uris", "max": limits.max_watched_uris})));
                }
                let mut watched = Vec::with_capacity(uris.len());
                for uri in uris {
                    let Some(uri) = uri.as_str() else {
                        return Err(invalid("resourceSubscriptions must be an array of URIs"));
                    };
                    if uri.len() > limits.max_uri_bytes {
                        return Err(invalid(format!(
                            "a watched URI is {} bytes long; the limit is {}",
                            uri.len(),
                            limits.max_uri_bytes
                        ))
                        .data(json!({"limit": "max_uri_bytes", "max": limits.max_uri_bytes})));
                    }
                    watched.push(Box::from(uri));
                }
                Some(Watched::new(watched))
            }
            Some(_) => return Err(invalid("resourceSubscriptions must be an array of URIs")),
        };
        Ok(Filter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resource_subscriptions,
        })
    }

    /// The part of this filter `support` can deliver.
    #[must_use]
    pub(crate) fn honoured(self, support: Support) -> Filter {
        Filter {
            tools_list_changed: self.tools_list_changed && support.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && support.prompts_list_changed,
            resources_list_changed: self.resources_list_changed && support.resources_list_changed,
            resource_subscriptions: self
                .resource_subscriptions
                .filter(|_| support.resource_subscriptions),
        }
    }

    /// The filter as a `SubscriptionFilter` object: the types asked for, and
    /// nothing else.
    #[must_use]
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (name, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                out.insert(name.into(), Value::Bool(true));
            }
        }
        if let Some(uris) = &self.resource_subscriptions {
            out.insert("resourceSubscriptions".into(), json!(uris.0));
        }
        Value::Object(out)
    }

    /// Whether a stream with this filter reports `change`.
    #[must_use]
    pub(crate) fn wants(&self, change: &Change) -> bool {
        match change {
            Change::ToolsListChanged => self.tools_list_changed,
            Change::PromptsListChanged => self.prompts_list_changed,
            Change::ResourcesListChanged => self.resources_list_changed,
            Change::ResourceUpdated(uri) => self
                .resource_subscriptions
                .as_ref()
                .is_some_and(|watched| watched.covers(uri)),
            Change::Application { .. } | Change::Subscription { .. } => false,
        }
    }
}

/// What a server can deliver on a listen stream: its `listChanged` and
/// `subscribe` capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Support {
    /// `tools.listChanged`
    pub tools_list_changed: bool,
    /// `prompts.listChanged`
    pub prompts_list_changed: bool,
    /// `resources.listChanged`
    pub resources_list_changed: bool,
    /// `resources.subscribe`
    pub resource_subscriptions: bool,
}

impl Support {
    /// Every notification type.
    #[must_use]
    pub(crate) const fn all() -> Self {
        Support {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: true,
        }
    }
}

/// Whom a stream speaks to, which decides how its messages are tagged and
/// how it ends.
#[derive(Debug, Clone)]
enum Mode {
    /// A `subscriptions/listen` stream: every message tagged with the
    /// request's id, the acknowledgement first, the `complete` result last
    /// (whose `_meta` names the server from `finishing`, shared by every
    /// stream, not a copy each).
    Listen {
        id: Value,
        finishing: Option<Arc<Finishing>>,
    },
    /// A 2025 GET stream: untagged, no acknowledgement, no closing result;
    /// its watched URIs are what its session subscribes to while it is
    /// open ([`Change::Subscription`] naming `nonce`), within `max_watched`
    /// URIs of at most `max_uri_bytes`.
    Session {
        nonce: Box<str>,
        max_watched: usize,
        max_uri_bytes: usize,
    },
}

/// Whether a stream's caller may be told that a URI changed.
#[derive(Clone)]
pub(crate) struct Permits(std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl Permits {
    /// Whatever `permit` says of a URI.
    pub(crate) fn new(permit: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Permits(std::sync::Arc::new(permit))
    }
}

impl std::fmt::Debug for Permits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Permits")
    }
}

/// One `subscriptions/listen` request (or one 2025 GET stream), ready to
/// answer.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    mode: Mode,
    filter: Filter,
    support: Support,
    lifetime: Duration,
    /// How to ask again about the credentials the stream was opened with.
    recheck: Option<Recheck>,
    /// Whether the stream is told conservatively at once, as one that fell
    /// behind (a 2025 client resuming with `Last-Event-ID`).
    behind: bool,
    /// Whether the stream's caller may be told of an update to a URI (its
    /// scopes, as lists filter by them); `None`: every URI it watches.
    permits: Option<Permits>,
}

impl Listen {
    /// A listen stream for the request `id` asking for `filter`; by default
    /// the server supports every type ([`Support::all`]) and the stream
    /// lives as long as the default [`ListenLimits::max_lifetime`].
    #[must_use]
    pub(crate) fn new(id: Value, filter: Filter) -> Self {
        Listen {
            mode: Mode::Listen {
                id,
                finishing: None,
            },
            filter,
            support: Support::all(),
            lifetime: ListenLimits::default().max_lifetime,
            recheck: None,
            behind: false,
            permits: None,
        }
    }

    /// The 2025 GET stream of the session `nonce` names: every list the
    /// server supports, and the URIs the session subscribes to while it is
    /// open (none at first), within `limits`.
    #[must_use]
    pub(crate) fn session(nonce: &str, limits: &ListenLimits) -> Self {
        Listen {
            mode: Mode::Session {
                nonce: Box::from(nonce),
                max_watched: limits.max_watched_uris,
                max_uri_bytes: limits.max_uri_bytes,
            },
            filter: Filter {
                tools_list_changed: true,
                prompts_list_changed: true,
                resources_list_changed: true,
                resource_subscriptions: Some(Watched::default()),
            },
            support: Support::all(),
            lifetime: limits.max_lifetime,
            recheck: None,
            behind: false,
            permits: None,
        }
    }

    /// Tells of an update only when `permits` its URI (the caller's scopes,
    /// as lists filter by them): a watched URI covers URIs beneath it that
    /// nothing checked when the stream was asked for.
    #[must_use]
    pub(crate) fn permits(mut self, permits: Permits) -> Self {
        self.permits = Some(permits);
        self
    }

    /// Tells the stream conservatively as soon as it opens, as a stream
    /// that fell behind is: what a client resuming after a break
    /// (`Last-Event-ID`) is told, since nothing of what it missed is kept.
    #[must_use]
    pub(crate) fn behind(mut self, behind: bool) -> Self {
        self.behind = behind;
        self
    }

    /// Bounds the stream by the credentials it was opened with: it ends
    /// (as at its lifetime) when they expire, and when asking again about
    /// them finds them refused. Call it after [`lifetime`](Self::lifetime).
    #[must_use]
    pub(crate) fn held_by(mut self, principal: Option<&Principal>) -> Self {
        let Some(principal) = principal else {
            return self;
        };
        if let Some(left) = principal.expires_in() {
            self.lifetime = self.lifetime.min(left);
        }
        self.recheck.clone_from(&principal.recheck);
        self
    }

    /// What the server can deliver; the rest of the filter is not honoured.
    #[must_use]
    pub(crate) fn support(mut self, support: Support) -> Self {
        self.support = support;
        self
    }

    /// How long the stream lives before it ends cleanly.
    #[must_use]
    pub(crate) fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The server the closing result names in its `_meta`
    /// (`io.modelcontextprotocol/serverInfo`).
    #[must_use]
    pub(crate) fn server_info(mut self, server: Arc<Finishing>) -> Self {
        if let Mode::Listen { finishing, .. } = &mut self.mode {
            *finishing = Some(server);
        }
        self
    }

    /// The stream, holding `place`: acknowledgement first, then the changes
    /// the filter asked for, until the server closes the stream, its
    /// lifetime ends, the client goes away, or the place gives way to a
    /// caller under its fair share (then the stream ends with the
    /// caller-share error of the place's kind, [`Place::share_error`]).
    /// Subscribes to `bus` now, so no change published after this call is
    /// missed.
    #[must_use]
    pub(crate) fn open(self, bus: &ChangeBus, place: Place) -> ListenStream {
        let changes = bus.subscribe();
        let closes = bus.subscribe_closes();
        let resyncs = bus.subscribe_resyncs();
        let filter = self.filter.honoured(self.support);
        let mut pending = VecDeque::new();
        let mode = self.mode;
        let envelopes = match &mode {
            Mode::Listen { id, .. } => {
                let ack = json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {
                        "notifications": filter.to_json(),
                        "_meta": { SUBSCRIPTION_ID: id },
                    },
                });
                pending.push_back(event(&ack));
                let tag = json!({ SUBSCRIPTION_ID: id });
                let updated = filter.resource_subscriptions.is_some().then_some(&tag);
                Envelopes::new(Some(&tag), updated, &filter)
            }
            Mode::Session { .. } => Envelopes::new(None, None, &filter),
        };
        let rare = sse::Gate::new();
        let mut stream = ListenStream {
            pending,
            next_change: Some(ReusableBoxFuture::new(recv(changes))),
            next_close: Some(next(closes)),
            next_resync: Some(next(resyncs)),
            end_of_life: Box::pin(tokio::time::sleep(self.lifetime)),
            mode,
            filter,
            envelopes,
            catching_up: None,
            done: false,
            next_eviction: Some(Box::pin(place.on_evicted())),
            place: Some(place),
            next_refusal: self.recheck.map(refused),
            outlived: false,
            permits: self.permits,
            rare,
        };
        if self.behind {
            stream.fell_behind();
        }
        stream
    }
}

/// Resolves when asking again about the stream's credentials refuses them;
/// an answer that is no verdict (a full place) is asked again later.
fn refused(recheck: Recheck) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    // Counted from the stream's opening, not from its first poll.
    let first = tokio::time::Instant::now() + recheck.every();
    Box::pin(async move {
        let mut at = first;
        loop {
            tokio::time::sleep_until(at).await;
            at = tokio::time::Instant::now() + recheck.every();
            match recheck.check().await {
                Ok(()) | Err(AuthError::Unavailable { .. } | AuthError::Throttled { .. }) => {}
                Err(_) => return,
            }
        }
    })
}

/// `message` as the SSE event that carries it: a stream keeps its messages
/// so, and gives a transport that wants the JSON alone a slice of it
/// ([`sse::message_of`]).
fn event(message: &Value) -> Bytes {
    // Serialising a Value cannot fail.
    sse::event(&serde_json::to_vec(message).unwrap_or_default())
}

/// The notifications of one stream, rendered when it opens, each as the SSE
/// event that carries it (so a change costs each stream no rendering, copy
/// or allocation): each list_changed whole, and the two halves of an
/// `updated` around its URI.
#[derive(Debug)]
struct Envelopes {
    tools: Bytes,
    prompts: Bytes,
    resources: Bytes,
    /// `,"_meta":{…}}}` and the event's end
    updated_tail: Bytes,
}

/// An `updated` event's head: `data: {…"params":{"uri":`.
const UPDATED_HEAD: &[u8] =
    br#"data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"#;

/// The untagged envelopes (a 2025 GET stream's), the same for every
/// stream: shared, not rendered per stream.
const UNTAGGED_TOOLS: &[u8] =
    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
const UNTAGGED_PROMPTS: &[u8] =
    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n";
const UNTAGGED_RESOURCES: &[u8] =
    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n";
/// An `updated` event's end: its `params` and message closed, then the
/// event's end (the whole tail of an untagged one).
const UPDATED_END: &[u8] = b"}}\n\n";

impl Envelopes {
    /// The envelopes of a stream whose list_changed carry `meta` and whose
    /// `updated` carry `updated_meta` as `params._meta` (none: untagged,
    /// and shared).
    fn new(meta: Option<&Value>, updated_meta: Option<&Value>, filter: &Filter) -> Self {
        let changed = |on: bool, method: &str, untagged: &'static [u8]| match (on, meta) {
            (false, _) => Bytes::new(),
            (true, Some(meta)) => {
                event(&json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": meta}}))
            }
            (true, None) => Bytes::from_static(untagged),
        };
        let updated_tail = match updated_meta {
            None => Bytes::from_static(UPDATED_END),
            Some(meta) => {
                let mut tail = b",\"_meta\":".to_vec();
                tail.extend(serde_json::to_vec(meta).unwrap_or_default());
                tail.extend_from_slice(UPDATED_END);
                Bytes::from(tail)
            }
        };
        Envelopes {
            tools: changed(
                filter.tools_list_changed,
                "notifications/tools/list_changed",
                UNTAGGED_TOOLS,
            ),
            prompts: changed(
                filter.prompts_list_changed,
                "notifications/prompts/list_changed",
                UNTAGGED_PROMPTS,
            ),
            resources: changed(
                filter.resources_list_changed,
                "notifications/resources/list_changed",
                UNTAGGED_RESOURCES,
            ),
            updated_tail,
        }
    }

    fn updated(&self, uri: &str) -> Bytes {
        let mut out =
            Vec::with_capacity(UPDATED_HEAD.len() + uri.len() + 2 + self.updated_tail.len());
        out.extend_from_slice(UPDATED_HEAD);
        // Serialising a string cannot fail.
        out.extend(serde_json::to_vec(uri).unwrap_or_default());
        out.extend_from_slice(&self.updated_tail);
        Bytes::from(out)
    }
}

type Next<T> = Pin<
    Box<
        dyn Future<
                Output = (
                    Result<T, broadcast::error::RecvError>,
                    broadcast::Receiver<T>,
                ),
            > + Send,
    >,
>;

fn next<T: Clone + Send + 'static>(rx: broadcast::Receiver<T>) -> Next<T> {
    Box::pin(recv(rx))
}

/// The next message of `rx`, and `rx` back.
async fn recv<T: Clone>(
    mut rx: broadcast::Receiver<T>,
) -> (
    Result<T, broadcast::error::RecvError>,
    broadcast::Receiver<T>,
) {
    let received = rx.recv().await;
    (received, rx)
}

/// The change receiver's next change, in one box for the stream's life: a
/// delivery writes the next wait where the last one was, where it made a
/// box and freed one (≈ 160 instructions, against ≈ 90 for the reuse;
/// BENCHMARKS.md, "The connection's gate").
type NextChange = ReusableBoxFuture<
    'static,
    (
        Result<Change, broadcast::error::RecvError>,
        broadcast::Receiver<Change>,
    ),
>;

/// Which rare source fired.
enum Fired {
    Close,
    Resync(
        Result<(), broadcast::error::RecvError>,
        broadcast::Receiver<()>,
    ),
    Evicted,
    Lifetime,
    Refused,
}

/// An open listen stream: the messages not yet given, and the bus it hears.
pub(crate) struct ListenStream {
    pending: VecDeque<Bytes>,
    next_change: Option<NextChange>,
    next_close: Option<Next<()>>,
    /// The relay's word that changes may have been missed.
    next_resync: Option<Next<()>>,
    end_of_life: Pin<Box<tokio::time::Sleep>>,
    mode: Mode,
    filter: Filter,
    envelopes: Envelopes,
    /// After falling behind: the next watched URI to tell about.
    catching_up: Option<usize>,
    done: bool,
    /// The stream's place in the ledger, given back when it ends (or is
    /// dropped).
    place: Option<Place>,
    /// Resolves when the place gives way.
    next_eviction: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Resolves when the credentials the stream was opened with are
    /// refused on asking again.
    next_refusal: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Whether the stream ended because its lifetime did (stdio reopens a
    /// 2025 session stream that did, and no other).
    outlived: bool,
    /// Whether the caller may be told of an update to a URI (see
    /// [`Listen::permits`]).
    permits: Option<Permits>,
    /// Whether a rare source woke, and the waker they are polled with: the
    /// stream's close, resync, place, lifetime and refusal, and the SSE
    /// writer's keep-alive timer (see [`sse::Gate`]).
    rare: Arc<sse::Gate>,
}

impl std::fmt::Debug for ListenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenStream")
            .field("mode", &self.mode)
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

impl ListenStream {
    fn notify(&mut self, change: &Change) {
        if let Change::Subscription { session, uri, on } = change {
            self.follow(session, uri, *on);
            return;
        }
        if !self.filter.wants(change) {
            return;
        }
        let note = match change {
            Change::ToolsListChanged => self.envelopes.tools.clone(),
            Change::PromptsListChanged => self.envelopes.prompts.clone(),
            Change::ResourcesListChanged => self.envelopes.resources.clone(),
            Change::ResourceUpdated(uri) => {
                if !self.permitted(uri) {
                    return;
                }
                self.envelopes.updated(uri)
            }
            Change::Application { .. } | Change::Subscription { .. } => return,
        };
        self.pending.push_back(note);
    }

    /// A session's subscription, heard on the bus: a 2025 GET stream of
    /// that session watches `uri` (within its bounds; a URI past them is
    /// not watched), or stops; any other stream ignores it.
    fn follow(&mut self, session: &str, uri: &str, on: bool) {
        let Mode::Session {
            nonce,
            max_watched,
            max_uri_bytes,
        } = &self.mode
        else {
            return;
        };
        let Some(watched) = self.filter.resource_subscriptions.as_mut() else {
            return;
        };
        if **nonce != *session {
            return;
        }
        if !on {
            watched.remove(uri);
            // A catch-up under way starts over on the changed list.
            self.catching_up = self.catching_up.map(|_| 0);
        } else if uri.len() > *max_uri_bytes || !watched.insert(uri, *max_watched) {
            tracing::debug!(target: "wymcp::listen", "a subscription over a GET stream's bounds is not watched");
        }
    }

    /// The id the stream's own messages carry: the listen request's, none
    /// (`null`) on a 2025 GET stream.
    fn id(&self) -> &Value {
        match &self.mode {
            Mode::Listen { id, .. } => id,
            Mode::Session { .. } => &Value::Null,
        }
    }

    /// After missing changes: every list it watches now, and every URI it
    /// watches one poll at a time (see [`MessageSource::poll_message`]).
    fn fell_behind(&mut self) {
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ] {
            self.notify(&change);
        }
        if self.filter.resource_subscriptions.is_some() {
            self.catching_up = Some(0);
        }
    }

    /// The next watched URI of a catch-up, if one is under way.
    fn catch_up(&mut self) -> Option<Bytes> {
        let mut at = self.catching_up?;
        let watched = self.filter.resource_subscriptions.as_ref()?;
        // A URI the caller may not be told of is passed over.
        while at < watched.len() && !self.permitted(&watched.0[at]) {
            at += 1;
        }
        if at >= watched.len() {
            self.catching_up = None;
            return None;
        }
        self.catching_up = Some(at + 1);
        Some(self.envelopes.updated(&watched.0[at]))
    }

    /// Whether the stream's caller may be told that `uri` changed.
    fn permitted(&self, uri: &str) -> bool {
        self.permits.as_ref().is_none_or(|permits| (permits.0)(uri))
    }

    /// Ends the stream cleanly: a listen stream with its `complete` result,
    /// a 2025 GET stream with nothing (it just ends).
    fn close(&mut self) {
        if let Mode::Listen { id, finishing } = &self.mode {
            let mut meta = Map::new();
            meta.insert(SUBSCRIPTION_ID.into(), id.clone());
            if let Some(finishing) = finishing {
                meta.insert(SERVER_INFO.into(), finishing.info().clone());
            }
            let result = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"resultType": "complete", "_meta": meta},
            });
            self.pending.push_back(event(&result));
        }
        self.end();
    }

    /// Stops hearing anything and gives the place back.
    fn end(&mut self) {
        self.catching_up = None;
        self.next_change = None;
        self.next_close = None;
        self.next_resync = None;
        self.next_eviction = None;
        self.next_refusal = None;
        self.place = None;
        self.done = true;
    }

    /// Whether the stream ended at its lifetime (not closed by the server,
    /// refused, nor given way).
    pub(crate) fn outlived(&self) -> bool {
        self.outlived
    }

    /// A 2025 session stream reopened in place of `old`, which outlived
    /// its lifetime: it watches what `old` watched (over stdio, where the
    /// client never sees the stream end and so never subscribes again).
    pub(crate) fn carry_over(&mut self, old: &ListenStream) {
        if let (Mode::Session { .. }, Mode::Session { .. }) = (&self.mode, &old.mode)
            && let Some(watched) = &old.filter.resource_subscriptions
        {
            self.filter.resource_subscriptions = Some(watched.clone());
        }
    }

    /// The place gave way: the caller-share error instead of the result.
    fn give_way(&mut self) {
        tracing::debug!(target: "wymcp::listen", "a listen stream gave way to a caller under its fair share");
        let Some(place) = &self.place else {
            self.end();
            return;
        };
        let evicted = place.share_error();
        let error = jsonrpc::error_envelope(
            self.id(),
            evicted.code,
            &evicted.message,
            evicted.data.as_ref(),
        );
        self.end();
        self.pending.push_back(sse::event(&error));
    }

    /// Polls the rare sources with their own waker, in order (a close
    /// before a resync, the place before the lifetime, the lifetime before
    /// a refusal); the first that fired.
    fn poll_rare(&mut self) -> Option<Fired> {
        let waker = Waker::from(self.rare.clone());
        let mut cx = Context::from_waker(&waker);
        if let Some(next_close) = &mut self.next_close
            && next_close.as_mut().poll(&mut cx).is_ready()
        {
            return Some(Fired::Close);
        }
        if let Some(next_resync) = &mut self.next_resync
            && let Poll::Ready((received, rx)) = next_resync.as_mut().poll(&mut cx)
        {
            return Some(Fired::Resync(received, rx));
        }
        if let Some(next_eviction) = &mut self.next_eviction
            && next_eviction.as_mut().poll(&mut cx).is_ready()
        {
            return Some(Fired::Evicted);
        }
        if self.end_of_life.as_mut().poll(&mut cx).is_ready() {
            return Some(Fired::Lifetime);
        }
        if let Some(next_refusal) = &mut self.next_refusal
            && next_refusal.as_mut().poll(&mut cx).is_ready()
        {
            return Some(Fired::Refused);
        }
        None
    }
}

impl MessageSource for ListenStream {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        sse::EventSource::poll_event(self, cx).map(|event| event.map(|e| sse::message_of(&e)))
    }

    fn finished(&self) -> bool {
        self.done && self.pending.is_empty()
    }
}

/// The stream's messages are kept as events: an SSE answer writes them as
/// they are.
impl sse::EventSource for ListenStream {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.rare.follow(cx.waker());
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Poll::Ready(Some(message));
            }
            if self.done {
                return Poll::Ready(None);
            }
            // Changes first: one published before a close is delivered before it.
            if let Some(next_change) = &mut self.next_change
                && let Poll::Ready((received, rx)) = next_change.poll(cx)
            {
                match received {
                    Ok(change) => {
                        next_change.set(recv(rx));
                        self.notify(&change);
                    }
                    Err(broadcast::error::RecvError::Closed) => self.close(),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(target: "wymcp::listen", missed, "a listen stream fell behind");
                        // Skip the backlog the summary covers: the stream
                        // hears what is published from now on.
                        next_change.set(recv(rx.resubscribe()));
                        self.fell_behind();
                    }
                }
                continue;
            }
            // The rare sources, only when one of them woke.
            if self.rare.take(sse::Gate::SOURCE)
                && let Some(fired) = self.poll_rare()
            {
                self.rare.again(sse::Gate::SOURCE);
                match fired {
                    // Asked to close, or the bus is gone: either way, end cleanly.
                    Fired::Close => self.close(),
                    Fired::Resync(Ok(()) | Err(broadcast::error::RecvError::Lagged(_)), rx) => {
                        tracing::debug!(target: "wymcp::listen", "the relay may have missed changes; the stream is told conservatively");
                        self.next_resync = Some(next(rx));
                        self.fell_behind();
                    }
                    Fired::Resync(Err(broadcast::error::RecvError::Closed), _) => {
                        self.next_resync = None;
                    }
                    Fired::Evicted => self.give_way(),
                    Fired::Lifetime => {
                        tracing::debug!(target: "wymcp::listen", "a listen stream reached its lifetime or its credentials' expiry");
                        self.close();
                        self.outlived = true;
                    }
                    Fired::Refused => {
                        tracing::debug!(target: "wymcp::listen", "a listen stream's credentials were refused on asking again");
                        self.close();
                    }
                }
                continue;
            }
            // A catch-up after falling behind: one watched URI per poll.
            if let Some(message) = self.catch_up() {
                return Poll::Ready(Some(message));
            }
            return Poll::Pending;
        }
    }

    fn finished(&self) -> bool {
        self.done && self.pending.is_empty()
    }

    fn gate(&self) -> Option<&Arc<sse::Gate>> {
        Some(&self.rare)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;
    use std::time::Duration;

    use super::*;
    use crate::ledger::{Caller, Kind, Ledger, Refusal};
    use crate::protocol::error::ErrorCode;
    use crate::surface::bus::BUS_CAPACITY;
    use crate::surface::finish::{CachePolicy, ServerInfo};

    #[allow(clippy::needless_pass_by_value)]
    fn filter(notifications: Value) -> Filter {
        Filter::from_params(
            Some(&json!({ "notifications": notifications })),
            &ListenLimits::default(),
        )
        .unwrap()
    }

    /// A place in `ledger` for a caller of its own.
    fn place_in(ledger: &Ledger) -> Place {
        static CALLERS: AtomicUsize = AtomicUsize::new(0);
        let caller =
            Caller::principal(&format!("test-{}", CALLERS.fetch_add(1, Ordering::Relaxed)));
        ledger
            .take_evictable(Kind::ListenStreams, &caller, 1)
            .unwrap()
    }

    /// A place for a caller of its own, in a ledger of its own.
    fn place() -> Place {
        place_in(&Ledger::default())
    }

    /// The stream's next message, if any.
    async fn frame(stream: &mut ListenStream) -> Option<Bytes> {
        std::future::poll_fn(|cx| stream.poll_message(cx)).await
    }

    /// Reads the next message as JSON.
    async fn next_event(stream: &mut ListenStream) -> Value {
        let message = tokio::time::timeout(Duration::from_secs(5), frame(stream))
            .await
            .expect("an event in time")
            .unwrap();
        serde_json::from_slice(&message).unwrap()
    }

    async fn nothing_within(stream: &mut ListenStream, wait: Duration) -> bool {
        tokio::time::timeout(wait, frame(stream)).await.is_err()
    }

    #[test]
    fn filter_reads_the_schema_names_and_refuses_bad_types() {
        let f = filter(
            json!({"toolsListChanged": true, "promptsListChanged": false,
                              "resourceSubscriptions": ["a://x"], "unknown": 1}),
        );
        assert!(f.tools_list_changed && !f.prompts_list_changed && !f.resources_list_changed);
        assert_eq!(
            f.resource_subscriptions,
            Some(Watched(vec![Box::from("a://x")]))
        );
        assert_eq!(filter(json!({})), Filter::default());
        for bad in [
            json!({}),
            json!({"notifications": null}),
            json!({"notifications": []}),
            json!({"notifications": {"toolsListChanged": "yes"}}),
            json!({"notifications": {"resourceSubscriptions": "a://x"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ] {
            let err = Filter::from_params(Some(&bad), &ListenLimits::default()).unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
        assert!(Filter::from_params(None, &ListenLimits::default()).is_err());
    }

    #[test]
    fn resource_updates_match_watched_uris_and_beneath() {
        let f = filter(json!({"resourceSubscriptions": ["test://watched", "dir://a/"]}));
        let updated = |u: &str| f.wants(&Change::ResourceUpdated(u.into()));
        assert!(updated("test://watched"));
        assert!(updated("test://watched/part"));
        assert!(updated("dir://a/b"));
        assert!(!updated("test://watched-other"));
        assert!(!updated("test://other"));
        assert!(!filter(json!({})).wants(&Change::ResourceUpdated("test://watched".into())));
    }

    #[tokio::test]
    async fn ack_first_tagged_with_the_id_and_honouring_only_what_is_supported() {
        let bus = ChangeBus::new();
        let support = Support {
            prompts_list_changed: false,
            ..Support::all()
        };
        let response = Listen::new(
            json!("sub-1"),
            filter(json!({"toolsListChanged": true, "promptsListChanged": true})),
        )
        .support(support)
        .open(&bus, place());
        let mut body = response;
        let ack = next_event(&mut body).await;
        assert_eq!(
            ack,
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": {"toolsListChanged": true},
                              "_meta": {SUBSCRIPTION_ID: "sub-1"}}})
        );
        // Prompts were asked for but are not supported: not delivered.
        bus.publish(Change::PromptsListChanged);
        bus.publish(Change::ToolsListChanged);
        let change = next_event(&mut body).await;
        assert_eq!(
            change,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                   "params": {"_meta": {SUBSCRIPTION_ID: "sub-1"}}})
        );
    }

    #[tokio::test]
    async fn only_requested_types_are_delivered() {
        let bus = ChangeBus::new();
        let mut body =
            Listen::new(json!(5), filter(json!({"promptsListChanged": true}))).open(&bus, place());
        let _ack = next_event(&mut body).await;
        assert_eq!(bus.publish(Change::ToolsListChanged), 1);
        bus.publish(Change::ResourcesListChanged);
        bus.publish(Change::ResourceUpdated("test://x".into()));
        assert!(nothing_within(&mut body, Duration::from_millis(50)).await);
        bus.publish(Change::PromptsListChanged);
        let change = next_event(&mut body).await;
        assert_eq!(change["method"], "notifications/prompts/list_changed");
        assert_eq!(change["params"]["_meta"][SUBSCRIPTION_ID], 5);
    }

    #[tokio::test]
    async fn watched_resources_get_updated_notifications() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(
            json!(1),
            filter(json!({"resourceSubscriptions": ["test://watched-resource"]})),
        )
        .open(&bus, place());
        let ack = next_event(&mut body).await;
        assert_eq!(
            ack["params"]["notifications"],
            json!({"resourceSubscriptions": ["test://watched-resource"]})
        );
        bus.publish(Change::ResourceUpdated("test://other".into()));
        bus.publish(Change::ResourceUpdated("test://watched-resource".into()));
        let updated = next_event(&mut body).await;
        assert_eq!(
            updated,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"uri": "test://watched-resource", "_meta": {SUBSCRIPTION_ID: 1}}})
        );
    }

    /// What every idle stream holds, pinned (issue 26 §3, RSS per idle
    /// listen stream): no error kept for a give-way that may never come
    /// (the place makes it then), and the server's identity shared, not
    /// copied into each stream.
    #[tokio::test]
    async fn a_stream_keeps_no_copy_of_what_streams_share() {
        let size = std::mem::size_of::<ListenStream>();
        eprintln!("a listen stream: {size} bytes");
        assert!(
            size <= LISTEN_STREAM_MAX,
            "a listen stream is {size} bytes, over {LISTEN_STREAM_MAX}"
        );
        let bus = ChangeBus::new();
        let finishing = std::sync::Arc::new(Finishing::new(
            &ServerInfo::default(),
            CachePolicy::default(),
        ));
        let streams: Vec<_> = (0..3)
            .map(|i| {
                Listen::new(json!(i), filter(json!({"toolsListChanged": true})))
                    .server_info(finishing.clone())
                    .open(&bus, place())
            })
            .collect();
        assert_eq!(std::sync::Arc::strong_count(&finishing), 1 + streams.len());
    }

    /// The most a listen stream may be, in bytes (see above).
    const LISTEN_STREAM_MAX: usize = 416;

    #[tokio::test]
    async fn close_sends_the_complete_result_then_ends() {
        let bus = ChangeBus::new();
        let ledger = Ledger::default();
        let mut body = Listen::new(json!(42), filter(json!({"toolsListChanged": true})))
            .server_info(std::sync::Arc::new(Finishing::new(
                &ServerInfo {
                    name: "s".into(),
                    version: "1".into(),
                    ..ServerInfo::default()
                },
                CachePolicy::default(),
            )))
            .open(&bus, place_in(&ledger));
        let _ack = next_event(&mut body).await;
        assert_eq!(ledger.held(Kind::ListenStreams), 1);
        assert_eq!(bus.close_all(), 1);
        let last = next_event(&mut body).await;
        assert_eq!(
            last,
            json!({"jsonrpc": "2.0", "id": 42,
                   "result": {"resultType": "complete",
                              "_meta": {SUBSCRIPTION_ID: 42,
                                        "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}})
        );
        assert!(body.finished());
        assert!(frame(&mut body).await.is_none());
        assert_eq!(
            ledger.held(Kind::ListenStreams),
            0,
            "the place is given back"
        );
    }

    /// Counts its polls; never resolves.
    struct Polls(Arc<AtomicUsize>);

    impl Future for Polls {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Poll::Pending
        }
    }

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Rule (issue 26 §3): a stream woken by a change polls the change
    /// receiver alone; its rare sources (here a refusal that counts its
    /// polls) are polled once to register, then only when one of them
    /// woke, and they still end the stream when they fire.
    #[tokio::test]
    async fn a_change_polls_no_source_that_did_not_wake_the_stream() {
        let bus = ChangeBus::new();
        let mut body =
            Listen::new(json!(1), filter(json!({"toolsListChanged": true}))).open(&bus, place());
        let polls = Arc::new(AtomicUsize::new(0));
        body.next_refusal = Some(Box::pin(Polls(polls.clone())));
        let _ack = next_event(&mut body).await;
        for _ in 0..5 {
            // The stream waits idle, then a change wakes it.
            let (event, delivered) = tokio::join!(next_event(&mut body), async {
                tokio::task::yield_now().await;
                bus.publish(Change::ToolsListChanged)
            });
            assert_eq!(delivered, 1);
            assert_eq!(event["method"], "notifications/tools/list_changed");
        }
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "polled once, when the stream first waited"
        );
        assert_eq!(bus.close_all(), 1);
        assert_eq!(
            next_event(&mut body).await["result"]["resultType"],
            "complete"
        );
        assert!(frame(&mut body).await.is_none());
    }

    /// Rule (issue 26 §3, memory per idle stream): a 2025 GET stream's
    /// envelopes are the same for every stream, so they are shared, not
    /// rendered per stream, and byte for byte what rendering would give.
    #[test]
    fn untagged_envelopes_are_shared_and_exact() {
        let all = filter(json!({"toolsListChanged": true, "promptsListChanged": true,
                                "resourcesListChanged": true}));
        let (a, b) = (
            Envelopes::new(None, None, &all),
            Envelopes::new(None, None, &all),
        );
        for (x, y, method) in [
            (&a.tools, &b.tools, "notifications/tools/list_changed"),
            (&a.prompts, &b.prompts, "notifications/prompts/list_changed"),
            (
                &a.resources,
                &b.resources,
                "notifications/resources/list_changed",
            ),
            (&a.updated_tail, &b.updated_tail, "(updated)"),
        ] {
            assert_eq!(x.as_ptr(), y.as_ptr(), "{method}: one copy for all streams");
            if method != "(updated)" {
                assert_eq!(x, &event(&json!({"jsonrpc": "2.0", "method": method})));
            }
        }
        assert_eq!(
            a.updated("u://x\"y"),
            event(
                &json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                          "params": {"uri": "u://x\"y"}})
            )
        );
    }

    /// Rule: through the SSE writer, whose keep-alive timer is polled only
    /// when the stream's gate says a rare source woke, a silent stream still
    /// gets a keep-alive comment every [`sse::KEEP_ALIVE`], before and after
    /// a change, and a change still comes at once.
    #[tokio::test(start_paused = true)]
    async fn a_gated_stream_keeps_its_keep_alive() {
        use http_body_util::BodyExt;
        let bus = ChangeBus::new();
        let stream = Listen::new(json!(3), filter(json!({"toolsListChanged": true})))
            .lifetime(Duration::from_secs(3600))
            .open(&bus, place());
        let mut body = sse::respond_events([], stream).into_body();
        let mut next = async || -> (Bytes, tokio::time::Instant) {
            let frame = tokio::time::timeout(Duration::from_secs(60), body.frame())
                .await
                .expect("a frame within a minute")
                .unwrap()
                .unwrap();
            (frame.into_data().unwrap(), tokio::time::Instant::now())
        };
        let (ack, opened) = next().await;
        assert!(ack.starts_with(b"data: "));
        let (comment, at) = next().await;
        assert_eq!(&comment[..], sse::KEEP_ALIVE_COMMENT);
        assert_eq!(at - opened, sse::KEEP_ALIVE);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(bus.publish(Change::ToolsListChanged), 1);
        let (change, changed) = next().await;
        assert!(change.starts_with(b"data: {\"jsonrpc\""), "{change:?}");
        assert_eq!(changed - at, Duration::from_secs(5));
        for _ in 0..2 {
            let (comment, then) = next().await;
            assert_eq!(&comment[..], sse::KEEP_ALIVE_COMMENT);
            assert!(then - changed >= sse::KEEP_ALIVE, "{:?}", then - changed);
        }
    }

    /// Rule: a rare source wakes the task that polled the stream last, not
    /// the one that polled it first.
    #[tokio::test]
    async fn a_rare_source_wakes_the_task_polling_now() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(json!(7), Filter::default()).open(&bus, place());
        let (first, now) = (Arc::new(Wakes::default()), Arc::new(Wakes::default()));
        let (first_waker, now_waker) = (Waker::from(first.clone()), Waker::from(now.clone()));
        let mut cx = Context::from_waker(&first_waker);
        assert!(
            matches!(body.poll_message(&mut cx), Poll::Ready(Some(_))),
            "the ack"
        );
        assert!(body.poll_message(&mut cx).is_pending());
        let mut cx = Context::from_waker(&now_waker);
        assert!(body.poll_message(&mut cx).is_pending());
        assert_eq!(bus.close_all(), 1);
        assert_eq!(
            now.0.load(Ordering::SeqCst),
            1,
            "the task polling now is woken"
        );
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        let Poll::Ready(Some(last)) = body.poll_message(&mut cx) else {
            panic!("the complete result once woken");
        };
        let last: Value = serde_json::from_slice(&last).unwrap();
        assert_eq!(last["id"], 7);
        assert_eq!(last["result"]["resultType"], "complete");
    }

    #[tokio::test]
    async fn dropping_the_bus_closes_cleanly_too() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(json!(1), Filter::default()).open(&bus, place());
        let _ack = next_event(&mut body).await;
        drop(bus);
        let last = next_event(&mut body).await;
        assert_eq!(last["result"]["resultType"], "complete");
        assert!(frame(&mut body).await.is_none());
    }

    #[tokio::test]
    async fn a_lagging_stream_is_told_everything_it_watches() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(
            json!(1),
            filter(json!({"toolsListChanged": true, "resourceSubscriptions": ["u://1"]})),
        )
        .open(&bus, place());
        let _ack = next_event(&mut body).await;
        for _ in 0..=BUS_CAPACITY {
            bus.publish(Change::PromptsListChanged);
        }
        let first = next_event(&mut body).await;
        let second = next_event(&mut body).await;
        assert_eq!(first["method"], "notifications/tools/list_changed");
        assert_eq!(second["method"], "notifications/resources/updated");
        assert_eq!(second["params"]["uri"], "u://1");
    }

    /// Rule (issue 16, item 4): a stream that fell behind skips the backlog
    /// the summary covers (one list_changed, not 257) and is told about each
    /// watched URI once, one per poll, in a number of steps that grows with
    /// the URIs watched, not with their square.
    #[tokio::test]
    async fn a_lagging_stream_skips_its_backlog_and_catches_up_one_uri_a_poll() {
        let bus = ChangeBus::new();
        let uris: Vec<String> = (0..2_000).map(|i| format!("u://{i}")).collect();
        let limits = ListenLimits::default().max_watched_uris(uris.len());
        let watched = Filter::from_params(
            Some(&json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": uris}})),
            &limits,
        )
        .unwrap();
        let mut body = Listen::new(json!(1), watched).open(&bus, place());
        let _ack = next_event(&mut body).await;
        for _ in 0..=BUS_CAPACITY {
            bus.publish(Change::ToolsListChanged);
        }
        let first = next_event(&mut body).await;
        assert_eq!(first["method"], "notifications/tools/list_changed");
        // Every watched URI once, each message one poll.
        let mut told = std::collections::BTreeSet::new();
        for _ in 0..uris.len() {
            let waker = std::task::Waker::noop();
            let mut cx = Context::from_waker(waker);
            let Poll::Ready(Some(message)) = body.poll_message(&mut cx) else {
                panic!("a catch-up message at each poll");
            };
            let event: Value = serde_json::from_slice(&message).unwrap();
            assert_eq!(event["method"], "notifications/resources/updated");
            assert!(told.insert(event["params"]["uri"].as_str().unwrap().to_owned()));
        }
        assert_eq!(told.len(), uris.len());
        // The backlog was skipped: no stale list_changed follows.
        assert!(nothing_within(&mut body, Duration::from_millis(50)).await);
        // And the stream still hears what comes next.
        bus.publish(Change::ToolsListChanged);
        assert_eq!(
            next_event(&mut body).await["method"],
            "notifications/tools/list_changed"
        );
    }

    /// Rule (issue 16, item 2): the filter is bounded: too many URIs, or one
    /// too long, is -32602 naming the limit.
    #[test]
    fn the_filter_is_bounded() {
        let limits = ListenLimits::default().max_watched_uris(2).max_uri_bytes(8);
        let read = |uris: Value| {
            Filter::from_params(
                Some(&json!({"notifications": {"resourceSubscriptions": uris}})),
                &limits,
            )
        };
        assert!(read(json!(["a://1", "a://2"])).is_ok());
        let many = read(json!(["a://1", "a://2", "a://3"])).unwrap_err();
        assert_eq!(many.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(many.data.unwrap()["limit"], "max_watched_uris");
        let long = read(json!(["a://123456"])).unwrap_err();
        assert_eq!(long.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(long.data.unwrap()["limit"], "max_uri_bytes");
        // Repeated URIs are kept once.
        let twice = read(json!(["a://1", "a://1"])).unwrap();
        assert_eq!(twice.resource_subscriptions.unwrap().len(), 1);
    }

    /// Rule (issue 23): a stream whose place gives way to a caller under
    /// its fair share ends with the caller-share error (its id, -32600,
    /// `data.limit`), and gives the place back; the newcomer's stream is
    /// served.
    #[tokio::test]
    async fn a_stream_whose_place_gives_way_ends_with_the_caller_share_error() {
        let bus = ChangeBus::new();
        let ledger = Ledger::new(|_| Share {
            per_caller: 2,
            global: 2,
            retry_after: Duration::from_secs(10),
        });
        let hog = Caller::principal("hog");
        let first = ledger.take_evictable(Kind::ListenStreams, &hog, 1).unwrap();
        let _second = ledger.take_evictable(Kind::ListenStreams, &hog, 1).unwrap();
        let error = ledger.error(Refusal::Share(Kind::ListenStreams));
        let mut body =
            Listen::new(json!("s-1"), filter(json!({"toolsListChanged": true}))).open(&bus, first);
        let _ack = next_event(&mut body).await;
        assert!(nothing_within(&mut body, Duration::from_millis(20)).await);
        let _newcomer = ledger
            .take_evictable(Kind::ListenStreams, &Caller::principal("new"), 1)
            .unwrap();
        let last = next_event(&mut body).await;
        assert_eq!(last["id"], "s-1");
        assert_eq!(last["error"]["code"], -32600);
        assert_eq!(last["error"]["data"]["limit"], "max_streams_per_caller");
        assert_eq!(
            last["error"]["message"].as_str(),
            Some(error.message.as_ref()),
            "the caller-share error of the place's own ledger and kind"
        );
        assert!(last.get("result").is_none());
        assert!(frame(&mut body).await.is_none());
        assert!(body.finished());
        assert_eq!(ledger.held_by(Kind::ListenStreams, &hog), 1);
    }

    /// Rule (issue 16, item 5): a stream ends cleanly at its lifetime, as at
    /// shutdown: the `complete` result, then the end.
    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_cleanly_at_its_lifetime() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(json!(7), filter(json!({"toolsListChanged": true})))
            .lifetime(Duration::from_secs(60))
            .open(&bus, place());
        let _ack = next_event(&mut body).await;
        tokio::time::advance(Duration::from_secs(59)).await;
        bus.publish(Change::ToolsListChanged);
        assert_eq!(
            next_event(&mut body).await["method"],
            "notifications/tools/list_changed"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        let last = next_event(&mut body).await;
        assert_eq!(last["id"], 7);
        assert_eq!(last["result"]["resultType"], "complete");
        assert!(frame(&mut body).await.is_none());
    }

    /// Rule (issue 23, item 6): a stream ends at its credentials' expiry,
    /// as at its lifetime (the `complete` result), not an hour later.
    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_cleanly_when_its_credentials_expire() {
        let bus = ChangeBus::new();
        let mut principal = Principal::new("alice", ["mcp"]);
        principal.expires_at = Some(std::time::SystemTime::now() + Duration::from_secs(2));
        let mut body = Listen::new(json!(8), filter(json!({"toolsListChanged": true})))
            .lifetime(Duration::from_secs(3600))
            .held_by(Some(&principal))
            .open(&bus, place());
        let _ack = next_event(&mut body).await;
        tokio::time::advance(Duration::from_millis(1500)).await;
        bus.publish(Change::ToolsListChanged);
        assert_eq!(
            next_event(&mut body).await["method"],
            "notifications/tools/list_changed"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        let last = next_event(&mut body).await;
        assert_eq!(last["id"], 8);
        assert_eq!(last["result"]["resultType"], "complete");
        assert!(frame(&mut body).await.is_none());
        // Credentials without an expiry leave the lifetime as it is.
        let mut body = Listen::new(json!(9), filter(json!({"toolsListChanged": true})))
            .lifetime(Duration::from_secs(60))
            .held_by(Some(&Principal::new("bob", ["mcp"])))
            .open(&bus, place());
        let _ack = next_event(&mut body).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(nothing_within(&mut body, Duration::from_millis(10)).await);
    }

    /// Rule (issue 23, item 6): credentials that can be revoked are asked
    /// about again at their recheck interval; a refusal ends the stream
    /// cleanly, an answer that is no verdict (a full place) does not.
    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_when_asking_again_refuses_its_credentials() {
        let bus = ChangeBus::new();
        let checks = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = checks.clone();
        let mut principal = Principal::new("alice", ["mcp"]);
        principal.recheck = Some(Recheck::new(Duration::from_secs(60), move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => Ok(()),
                    1 => Err(AuthError::Unavailable {
                        description: "full".into(),
                        retry_after: Duration::from_secs(1),
                    }),
                    _ => Err(AuthError::invalid_token("the token is not active")),
                }
            }
        }));
        let mut body = Listen::new(json!("r"), filter(json!({"toolsListChanged": true})))
            .held_by(Some(&principal))
            .open(&bus, place());
        let _ack = next_event(&mut body).await;
        for asked in 1..=2 {
            tokio::time::advance(Duration::from_secs(60)).await;
            assert!(nothing_within(&mut body, Duration::from_millis(10)).await);
            assert_eq!(checks.load(Ordering::SeqCst), asked);
        }
        tokio::time::advance(Duration::from_secs(60)).await;
        let last = next_event(&mut body).await;
        assert_eq!(checks.load(Ordering::SeqCst), 3);
        assert_eq!(last["id"], "r");
        assert_eq!(last["result"]["resultType"], "complete");
        assert!(frame(&mut body).await.is_none());
    }

    /// Rule (issue 16, item 3): each notification's envelope is rendered
    /// when the stream opens; an `updated` is its two halves around the URI,
    /// valid JSON whatever the URI holds.
    #[tokio::test]
    async fn envelopes_are_rendered_once_and_stay_valid() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(
            json!("s\"1"),
            filter(json!({"toolsListChanged": true, "resourceSubscriptions": ["q://\"x\"/"]})),
        )
        .open(&bus, place());
        let _ack = next_event(&mut body).await;
        bus.publish(Change::ToolsListChanged);
        bus.publish(Change::ToolsListChanged);
        bus.publish(Change::ResourceUpdated("q://\"x\"/a\nb".into()));
        let one = frame(&mut body).await.unwrap();
        let two = frame(&mut body).await.unwrap();
        // The same bytes, shared.
        assert_eq!(one.as_ptr(), two.as_ptr());
        let updated: Value = serde_json::from_slice(&frame(&mut body).await.unwrap()).unwrap();
        assert_eq!(
            updated,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"uri": "q://\"x\"/a\nb", "_meta": {SUBSCRIPTION_ID: "s\"1"}}})
        );
    }

    fn subscription(session: &str, uri: &str, on: bool) -> Change {
        Change::Subscription {
            session: session.into(),
            uri: uri.into(),
            on,
        }
    }

    /// Rule (issue 27 §1): a 2025 GET stream is untagged, starts with no
    /// acknowledgement and no subscriptions, watches what its own session
    /// subscribes to (and beneath it) within its bounds, ignores another
    /// session's, and stops on unsubscribe.
    #[tokio::test]
    async fn a_session_stream_follows_its_sessions_subscriptions_within_bounds() {
        let bus = ChangeBus::new();
        let limits = ListenLimits::default()
            .max_watched_uris(2)
            .max_uri_bytes(16);
        let mut body = Listen::session("n1", &limits).open(&bus, place());
        bus.publish(Change::ToolsListChanged);
        assert_eq!(
            next_event(&mut body).await,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        );
        bus.publish(Change::ResourceUpdated("a://1".into()));
        bus.publish(subscription("n2", "a://1", true));
        bus.publish(Change::ResourceUpdated("a://1".into()));
        assert!(nothing_within(&mut body, Duration::from_millis(50)).await);
        bus.publish(subscription("n1", "a://1", true));
        bus.publish(subscription("n1", "a://2", true));
        // Over the bounds: a third URI, and one too long, are not watched.
        bus.publish(subscription("n1", "a://3", true));
        bus.publish(subscription("n1", "a://long-long-long", true));
        for uri in ["a://1/x", "a://2", "a://3", "a://long-long-long"] {
            bus.publish(Change::ResourceUpdated(uri.into()));
        }
        assert_eq!(
            next_event(&mut body).await,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"uri": "a://1/x"}})
        );
        assert_eq!(next_event(&mut body).await["params"]["uri"], "a://2");
        assert!(nothing_within(&mut body, Duration::from_millis(50)).await);
        bus.publish(subscription("n1", "a://1", false));
        bus.publish(Change::ResourceUpdated("a://1".into()));
        assert!(nothing_within(&mut body, Duration::from_millis(50)).await);
    }

    /// Rule (issue 27 §1): a 2025 GET stream ends with no closing result
    /// (it just ends) and gives its place back; when its place gives way it
    /// ends with the caller-share error, id null.
    #[tokio::test]
    async fn a_session_stream_just_ends_or_ends_with_the_caller_share_error() {
        let bus = ChangeBus::new();
        let ledger = Ledger::default();
        let mut body = Listen::session("n", &ListenLimits::default()).open(&bus, place_in(&ledger));
        assert_eq!(bus.close_all(), 1);
        assert!(
            frame(&mut body).await.is_none(),
            "no result: the stream ends"
        );
        assert_eq!(ledger.held(Kind::ListenStreams), 0);

        let ledger = Ledger::new(|_| Share {
            per_caller: 2,
            global: 2,
            retry_after: Duration::from_secs(10),
        });
        let hog = Caller::principal("hog");
        let first = ledger.take_evictable(Kind::LegacyStreams, &hog, 1).unwrap();
        let _second = ledger.take_evictable(Kind::LegacyStreams, &hog, 1).unwrap();
        let error = ledger.error(Refusal::Share(Kind::LegacyStreams));
        let mut body = Listen::session("n", &ListenLimits::default()).open(&bus, first);
        let _newcomer = ledger
            .take_evictable(Kind::LegacyStreams, &Caller::principal("new"), 1)
            .unwrap();
        let last = next_event(&mut body).await;
        assert_eq!(last["id"], Value::Null);
        assert_eq!(last["error"]["code"], -32600);
        assert_eq!(
            last["error"]["message"].as_str(),
            Some(error.message.as_ref())
        );
        assert!(frame(&mut body).await.is_none());
    }
}
