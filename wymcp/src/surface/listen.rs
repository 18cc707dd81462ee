//! `subscriptions/listen`: the long-lived stream of change notifications
//! (2026-07-28, SUB; SEP-2575 §HTTP subscriptions), and the bus it hears
//! them on. Over HTTP the stream is an SSE answer (see [`crate::sse`]).
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
//!    `resourceSubscriptions` (or beneath one, `uri/…`);
//! 3. on [`Server::close_subscriptions`](crate::Server::close_subscriptions)
//!    (or when the server is dropped): the result
//!    `{"resultType": "complete", "_meta": {subscriptionId}}` with the listen
//!    request's id, then the end of the stream.
//!
//! Every notification carries `params._meta["io.modelcontextprotocol/subscriptionId"]`
//! = the listen request's id. Log messages (`notifications/message`) are
//! never sent here (LOG §Per-request log level). A stream that falls more
//! than 256 changes behind
//! is told conservatively: a list_changed for each list it watches and an
//! `updated` for each URI it watches, since a redundant re-read is harmless and
//! a missed one is not.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::protocol::error::RpcError;
use crate::protocol::jsonrpc::MessageSource;
use crate::protocol::meta::SUBSCRIPTION_ID;

/// How many unread changes a listen stream may fall behind before it is told
/// conservatively (see the [module docs](self)).
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
}

/// The server's change bus: every open listen stream hears what is published.
/// Clones share one bus.
#[derive(Debug, Clone)]
pub(crate) struct ChangeBus {
    changes: broadcast::Sender<Change>,
    closes: broadcast::Sender<()>,
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
        }
    }

    /// Tells every open listen stream about `change` (each forwards it if its
    /// filter asked for it). Returns how many subscribers heard it.
    pub(crate) fn publish(&self, change: Change) -> usize {
        self.changes.send(change).unwrap_or(0)
    }

    /// Receives every change published from now on.
    #[must_use]
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Ends every open listen stream cleanly: the `complete` result, then the
    /// end of the stream. Streams opened afterwards are unaffected. Returns how
    /// many streams were told.
    pub(crate) fn close_all(&self) -> usize {
        self.closes.send(()).unwrap_or(0)
    }

    /// How many listen streams are open.
    #[must_use]
    pub(crate) fn listeners(&self) -> usize {
        self.closes.receiver_count()
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
    pub resource_subscriptions: Option<Vec<String>>,
}

fn invalid(message: &'static str) -> RpcError {
    RpcError::invalid_params(message)
}

impl Filter {
    /// Reads `params.notifications`. A missing or non-object `notifications`,
    /// a flag that is not a boolean or a `resourceSubscriptions` that is not an
    /// array of strings is -32602. Unknown members are ignored.
    pub(crate) fn from_params(params: Option<&Value>) -> Result<Filter, RpcError> {
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
            Some(Value::Array(uris)) => Some(
                uris.iter()
                    .map(|u| u.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| invalid("resourceSubscriptions must be an array of URIs"))?,
            ),
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
    pub(crate) fn honoured(&self, support: Support) -> Filter {
        Filter {
            tools_list_changed: self.tools_list_changed && support.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && support.prompts_list_changed,
            resources_list_changed: self.resources_list_changed && support.resources_list_changed,
            resource_subscriptions: self
                .resource_subscriptions
                .clone()
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
            out.insert("resourceSubscriptions".into(), json!(uris));
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
            Change::ResourceUpdated(uri) => {
                self.resource_subscriptions.as_ref().is_some_and(|subs| {
                    subs.iter().any(|watched| {
                        uri == watched
                            || uri
                                .strip_prefix(watched.as_str())
                                .is_some_and(|rest| rest.starts_with('/') || watched.ends_with('/'))
                    })
                })
            }
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

/// One `subscriptions/listen` request, ready to answer.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    id: Value,
    filter: Filter,
    support: Support,
    result_meta: Map<String, Value>,
}

impl Listen {
    /// A listen stream for the request `id` asking for `filter`; by default
    /// the server supports every type ([`Support::all`]).
    #[must_use]
    pub(crate) fn new(id: Value, filter: Filter) -> Self {
        Listen {
            id,
            filter,
            support: Support::all(),
            result_meta: Map::new(),
        }
    }

    /// What the server can deliver; the rest of the filter is not honoured.
    #[must_use]
    pub(crate) fn support(mut self, support: Support) -> Self {
        self.support = support;
        self
    }

    /// An extra `_meta` member of the closing result (for example
    /// `io.modelcontextprotocol/serverInfo`).
    #[must_use]
    pub(crate) fn result_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.result_meta.insert(key.into(), value);
        self
    }

    /// The stream: acknowledgement first, then the changes the filter
    /// asked for, until the server closes the stream or the client goes
    /// away. Subscribes to `bus` now, so no change published after this call
    /// is missed.
    #[must_use]
    pub(crate) fn open(self, bus: &ChangeBus) -> ListenStream {
        let changes = bus.changes.subscribe();
        let closes = bus.closes.subscribe();
        let filter = self.filter.honoured(self.support);
        let ack = json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": filter.to_json(),
                "_meta": { SUBSCRIPTION_ID: self.id },
            },
        });
        let mut result_meta = self.result_meta;
        result_meta.insert(SUBSCRIPTION_ID.into(), self.id.clone());
        ListenStream {
            pending: VecDeque::from([message(&ack)]),
            next_change: Some(next(changes)),
            next_close: Some(next(closes)),
            id: self.id,
            filter,
            result_meta,
            done: false,
        }
    }
}

fn message(message: &Value) -> Bytes {
    // Serialising a Value cannot fail.
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
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

fn next<T: Clone + Send + 'static>(mut rx: broadcast::Receiver<T>) -> Next<T> {
    Box::pin(async move {
        let received = rx.recv().await;
        (received, rx)
    })
}

/// An open listen stream: the messages not yet given, and the bus it hears.
pub(crate) struct ListenStream {
    pending: VecDeque<Bytes>,
    next_change: Option<Next<Change>>,
    next_close: Option<Next<()>>,
    id: Value,
    filter: Filter,
    result_meta: Map<String, Value>,
    done: bool,
}

impl std::fmt::Debug for ListenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenStream")
            .field("id", &self.id)
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

impl ListenStream {
    fn notify(&mut self, change: &Change) {
        if !self.filter.wants(change) {
            return;
        }
        let meta = json!({ SUBSCRIPTION_ID: self.id });
        let note = match change {
            Change::ToolsListChanged => notification("notifications/tools/list_changed", &meta),
            Change::PromptsListChanged => notification("notifications/prompts/list_changed", &meta),
            Change::ResourcesListChanged => {
                notification("notifications/resources/list_changed", &meta)
            }
            Change::ResourceUpdated(uri) => json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": uri, "_meta": meta},
            }),
        };
        self.pending.push_back(message(&note));
    }

    /// After missing changes: everything the stream watches, once.
    fn caught_up(&mut self) {
        let mut all = vec![
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ];
        if let Some(uris) = &self.filter.resource_subscriptions {
            all.extend(uris.iter().cloned().map(Change::ResourceUpdated));
        }
        for change in &all {
            self.notify(change);
        }
    }

    fn close(&mut self) {
        let result = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "result": {"resultType": "complete", "_meta": self.result_meta},
        });
        self.pending.push_back(message(&result));
        self.next_change = None;
        self.next_close = None;
        self.done = true;
    }
}

fn notification(method: &str, meta: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": meta}})
}

impl MessageSource for ListenStream {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Poll::Ready(Some(message));
            }
            if self.done {
                return Poll::Ready(None);
            }
            // Changes first: one published before a close is delivered before it.
            if let Some(next_change) = &mut self.next_change
                && let Poll::Ready((received, rx)) = next_change.as_mut().poll(cx)
            {
                self.next_change = Some(next(rx));
                match received {
                    Ok(change) => self.notify(&change),
                    Err(broadcast::error::RecvError::Closed) => self.close(),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(target: "wymcp::listen", missed, "a listen stream fell behind");
                        self.caught_up();
                    }
                }
                continue;
            }
            if let Some(next_close) = &mut self.next_close
                && next_close.as_mut().poll(cx).is_ready()
            {
                // Asked to close, or the bus is gone: either way, end cleanly.
                self.close();
                continue;
            }
            return Poll::Pending;
        }
    }

    fn finished(&self) -> bool {
        self.done && self.pending.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::protocol::error::ErrorCode;

    #[allow(clippy::needless_pass_by_value)]
    fn filter(notifications: Value) -> Filter {
        Filter::from_params(Some(&json!({ "notifications": notifications }))).unwrap()
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
            f.resource_subscriptions.as_deref(),
            Some(&["a://x".to_owned()][..])
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
            let err = Filter::from_params(Some(&bad)).unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
        assert!(Filter::from_params(None).is_err());
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
        .open(&bus);
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
            Listen::new(json!(5), filter(json!({"promptsListChanged": true}))).open(&bus);
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
        .open(&bus);
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

    #[tokio::test]
    async fn close_sends_the_complete_result_then_ends() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(json!(42), filter(json!({"toolsListChanged": true})))
            .result_meta(
                "io.modelcontextprotocol/serverInfo",
                json!({"name": "s", "version": "1"}),
            )
            .open(&bus);
        let _ack = next_event(&mut body).await;
        assert_eq!(bus.listeners(), 1);
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
        assert_eq!(bus.listeners(), 0);
    }

    #[tokio::test]
    async fn dropping_the_bus_closes_cleanly_too() {
        let bus = ChangeBus::new();
        let mut body = Listen::new(json!(1), Filter::default()).open(&bus);
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
        .open(&bus);
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
}
