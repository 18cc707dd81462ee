//! [`RedisBus`]: the change bus carried between replicas by Redis pub/sub.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::config::{Health, RedisConfig, backoff_after, subscribe};
use super::mac::{DropLog, Dropped, Keys, Purpose, receive};
use crate::protocol::ids::{now_ms, random_hex};
use crate::surface::{Change, ChangeFeed, ChangeRelay};

/// [`RedisBus`]: the change bus carried between replicas by Redis pub/sub.
///
/// Every change this replica publishes is queued (never awaited on a
/// request's path) and published on [`RedisConfig::channel`] by a task of
/// the bus's own, through the `redis` crate's connection manager, tagged
/// with this process's origin (128 random bits). A second task holds a
/// subscription to the channel and delivers every change of another origin
/// to this replica's listen streams; its own come back tagged with its
/// origin and are dropped, so a replica never delivers its own change twice.
///
/// **Outages.** Either task that fails logs one warning per outage and
/// tries again with a doubling backoff; local delivery is never affected.
/// What another replica publishes while this one's subscription is down is
/// lost to it, and what this one publishes while it cannot reach Redis is
/// lost to the others (the queue is bounded; a full queue drops). So when
/// the subscription comes back, this replica's streams are told
/// conservatively (as a stream that fell behind is: a list_changed for each
/// list it watches, an `updated` for each URI), and when the publisher comes
/// back it publishes a resync that tells every other replica's streams the
/// same: a client re-reads what it watches rather than miss a change.
///
/// **Trust.** Every message carries an HMAC-SHA256 tag under the replicas'
/// shared key ([`RedisConfig::shared_key`]); one read from the channel that
/// is longer than [`RedisConfig::max_message_bytes`] or whose tag does not
/// verify is dropped unread (one warning per burst). Whoever can publish
/// on the channel without the key can drop or replay changes, not inject
/// one.
#[derive(Debug)]
pub struct RedisBus {
    client: redis::Client,
    config: RedisConfig,
    origin: String,
    queue: mpsc::Sender<Vec<u8>>,
    /// Taken by `start`.
    pending: std::sync::Mutex<Option<mpsc::Receiver<Vec<u8>>>>,
    health: Arc<Health>,
}

impl RedisBus {
    /// A bus through the Redis server at `url` (`redis://host:port/db`);
    /// only the URL is checked here, nothing is connected until the server
    /// is built.
    ///
    /// # Errors
    ///
    /// The URL does not parse, or `config` has no
    /// [`shared_key`](RedisConfig::shared_key).
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        config.keys()?;
        let client = redis::Client::open(url)?;
        let (queue, pending) = mpsc::channel(config.queue.max(1));
        Ok(RedisBus {
            client,
            config,
            origin: origin(),
            queue,
            pending: std::sync::Mutex::new(Some(pending)),
            health: Arc::default(),
        })
    }

    /// This process's origin tag.
    #[must_use]
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the bus is in an outage (its last attempt on Redis failed).
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.health.is_down()
    }
}

impl ChangeRelay for RedisBus {
    fn publish(&self, change: &Change) {
        let Some(message) = encode(&self.origin, change) else {
            return;
        };
        if message.len() > self.config.max_message_bytes {
            tracing::warn!(target: "wymcp::redis", bytes = message.len(),
                max = self.config.max_message_bytes, "a change too large to relay was delivered on this replica only");
            return;
        }
        let Some(message) = self
            .config
            .keys_unchecked()
            .sign(Purpose::Bus, b"", &message)
        else {
            return;
        };
        if self.queue.try_send(message).is_err() {
            tracing::debug!(target: "wymcp::redis", "the publish queue is full; a change was not relayed");
        }
    }

    fn start(&self, feed: ChangeFeed) {
        let Some(pending) = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            tracing::warn!(target: "wymcp::redis", "a RedisBus serves one server; started again, it relays nothing more");
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(target: "wymcp::redis", "RedisBus started outside a Tokio runtime: it relays nothing");
            return;
        };
        runtime.spawn(publisher(
            self.client.clone(),
            self.config.clone(),
            self.origin.clone(),
            pending,
            Arc::clone(&self.health),
        ));
        runtime.spawn(subscriber(
            self.client.clone(),
            self.config.clone(),
            self.origin.clone(),
            feed,
            Arc::clone(&self.health),
        ));
    }
}

/// 128 random bits, hex (a process that cannot draw them takes its pid and
/// the time, which is unique enough among a deployment's replicas).
pub(super) fn origin() -> String {
    random_hex().unwrap_or_else(|| format!("{}-{}", std::process::id(), now_ms()))
}

/// A change as it travels on the channel (before its tag): its origin, its
/// kind and its payload, as JSON.
pub(crate) fn encode(origin: &str, change: &Change) -> Option<Vec<u8>> {
    let message = match change {
        Change::ToolsListChanged => json!({"o": origin, "k": "tools"}),
        Change::PromptsListChanged => json!({"o": origin, "k": "prompts"}),
        Change::ResourcesListChanged => json!({"o": origin, "k": "resources"}),
        Change::ResourceUpdated(uri) => json!({"o": origin, "k": "updated", "u": uri}),
        Change::Application { topic, body } => {
            json!({"o": origin, "k": "app", "t": topic, "b": body})
        }
        Change::Subscription { session, uri, on } => {
            json!({"o": origin, "k": "sub", "s": session, "u": uri, "on": on})
        }
        #[allow(unreachable_patterns)]
        _ => return None,
    };
    serde_json::to_vec(&message).ok()
}

/// What a message from the channel says.
#[derive(Debug, PartialEq)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub enum Heard {
    /// A change of another origin.
    Change(Change),
    /// Another replica's publisher came back: changes may have been missed.
    Resync,
    /// This replica's own, or nothing this version understands.
    Ignored,
}

/// A message as read from the channel, by a replica of origin `mine`:
/// bounded to `max` bytes and its tag verified ([`receive`]) before
/// anything of it is parsed ([`decode`]).
pub(crate) fn hear(keys: &Keys, mine: &str, max: usize, message: &[u8]) -> Result<Heard, Dropped> {
    receive(keys, Purpose::Bus, b"", max, message).map(|payload| decode(mine, payload))
}

/// What a verified message says, to a replica of origin `mine`.
fn decode(mine: &str, payload: &[u8]) -> Heard {
    let Ok(message) = serde_json::from_slice::<Value>(payload) else {
        return Heard::Ignored;
    };
    if message["o"].as_str().is_none_or(|origin| origin == mine) {
        return Heard::Ignored;
    }
    let text = |key: &str| message[key].as_str().map(str::to_owned);
    let change = match message["k"].as_str() {
        Some("tools") => Change::ToolsListChanged,
        Some("prompts") => Change::PromptsListChanged,
        Some("resources") => Change::ResourcesListChanged,
        Some("updated") => match text("u") {
            Some(uri) => Change::ResourceUpdated(uri),
            None => return Heard::Ignored,
        },
        Some("app") => match (text("t"), text("b")) {
            (Some(topic), Some(body)) => Change::Application { topic, body },
            _ => return Heard::Ignored,
        },
        Some("sub") => match (text("s"), text("u"), message["on"].as_bool()) {
            (Some(session), Some(uri), Some(on)) => Change::Subscription { session, uri, on },
            _ => return Heard::Ignored,
        },
        Some("resync") => return Heard::Resync,
        _ => return Heard::Ignored,
    };
    Heard::Change(change)
}

/// Publishes what this replica queues, in order.
async fn publisher(
    client: redis::Client,
    config: RedisConfig,
    origin: String,
    mut pending: mpsc::Receiver<Vec<u8>>,
    health: Arc<Health>,
) {
    let mut manager = match redis::aio::ConnectionManager::new_lazy_with_config(
        client,
        config.manager(),
    ) {
        Ok(manager) => manager,
        Err(error) => {
            tracing::error!(target: "wymcp::redis", %error, "the bus's connection manager could not be made; nothing is relayed");
            return;
        }
    };
    let resync = serde_json::to_vec(&json!({"o": origin, "k": "resync"})).unwrap_or_default();
    let resync = config
        .keys_unchecked()
        .sign(Purpose::Bus, b"", &resync)
        .unwrap_or_default();
    let mut backoff = Duration::ZERO;
    while let Some(message) = pending.recv().await {
        loop {
            let mut publish = redis::cmd("PUBLISH");
            publish.arg(&config.channel).arg(&message);
            let published = publish.query_async::<i64>(&mut manager);
            match tokio::time::timeout(config.command_timeout, published).await {
                Ok(Ok(_)) => {
                    backoff = Duration::ZERO;
                    if health.succeeded("bus publisher") {
                        // Whatever was dropped meanwhile: tell the others.
                        let mut tell = redis::cmd("PUBLISH");
                        tell.arg(&config.channel).arg(&resync);
                        let told = tell.query_async::<i64>(&mut manager);
                        let _ = tokio::time::timeout(config.command_timeout, told).await;
                    }
                    break;
                }
                Ok(Err(error)) => health.failed("bus publisher", &error),
                Err(_) => health.failed("bus publisher", &"PUBLISH timed out"),
            }
            backoff = backoff_after(backoff, &config);
            tokio::time::sleep(backoff).await;
            // What queued up meanwhile is dropped: the queue stays free for
            // what comes after the outage, and the resync covers the gap.
            while pending.try_recv().is_ok() {}
            if pending.is_closed() {
                return;
            }
        }
    }
}

/// Holds the subscription, delivering other replicas' changes, until the
/// server is gone.
async fn subscriber(
    client: redis::Client,
    config: RedisConfig,
    origin: String,
    feed: ChangeFeed,
    health: Arc<Health>,
) {
    let mut backoff = Duration::ZERO;
    let mut subscribed_before = false;
    let drops = DropLog::default();
    while !feed.is_closed() {
        match subscribe(&client, &config, &config.channel).await {
            Ok((mut sink, mut stream)) => {
                backoff = Duration::ZERO;
                if health.succeeded("bus subscriber") || subscribed_before {
                    // Back after an outage: what was published meanwhile
                    // did not reach this replica.
                    feed.resync();
                }
                subscribed_before = true;
                let mut ping = tokio::time::interval(config.ping_interval);
                ping.tick().await;
                loop {
                    tokio::select! {
                        message = stream.next() => {
                            let Some(message) = message else {
                                health.failed("bus subscriber", &"the subscription ended");
                                break;
                            };
                            match hear(config.keys_unchecked(), &origin, config.max_message_bytes, message.get_payload_bytes()) {
                                Ok(Heard::Change(change)) => {
                                    feed.deliver(change);
                                }
                                Ok(Heard::Resync) => {
                                    feed.resync();
                                }
                                Ok(Heard::Ignored) => {}
                                Err(dropped) => drops.dropped("bus message", dropped),
                            }
                        }
                        _ = ping.tick() => {
                            if feed.is_closed() {
                                return;
                            }
                            match tokio::time::timeout(config.command_timeout, sink.ping::<redis::Value>()).await {
                                Ok(Ok(_)) => {}
                                Ok(Err(error)) => { health.failed("bus subscriber", &error); break; }
                                Err(_) => { health.failed("bus subscriber", &"PING timed out"); break; }
                            }
                        }
                    }
                }
            }
            Err(error) => health.failed("bus subscriber", &error),
        }
        backoff = backoff_after(backoff, &config);
        tokio::time::sleep(backoff).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mrtr::SealingKey;

    fn keys() -> Keys {
        Keys::new(&SealingKey::new("k", vec![1u8; 32]).unwrap())
    }

    /// What the publisher sends for `change`.
    fn sent(keys: &Keys, origin: &str, change: &Change) -> Vec<u8> {
        keys.sign(Purpose::Bus, b"", &encode(origin, change).unwrap())
            .unwrap()
    }

    /// Rule: a change travels tagged with its origin; the origin's own
    /// comes back ignored, another's is the same change.
    #[test]
    fn changes_round_trip_and_a_replica_ignores_its_own() {
        let keys = keys();
        let changes = [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated("test://a \"b\"\n".into()),
            Change::Application {
                topic: "t".into(),
                body: "{\"x\":1}".into(),
            },
            Change::Subscription {
                session: "n1".into(),
                uri: "test://a".into(),
                on: true,
            },
            Change::Subscription {
                session: "n1".into(),
                uri: "test://a".into(),
                on: false,
            },
        ];
        for change in changes {
            let bytes = sent(&keys, "a", &change);
            assert_eq!(
                hear(&keys, "a", 1024, &bytes),
                Ok(Heard::Ignored),
                "{change:?}"
            );
            assert_eq!(hear(&keys, "b", 1024, &bytes), Ok(Heard::Change(change)));
        }
        let resync = keys
            .sign(Purpose::Bus, b"", br#"{"o":"a","k":"resync"}"#)
            .unwrap();
        assert_eq!(hear(&keys, "b", 1024, &resync), Ok(Heard::Resync));
        for junk in [
            &b"nope"[..],
            br#"{"k":"tools"}"#,
            br#"{"o":"a","k":"updated"}"#,
            br#"{"o":"a","k":"?"}"#,
            br#"{"o":"a","k":"sub","s":"n","u":"x"}"#,
            br#"{"o":"a","k":"sub","s":1,"u":"x","on":true}"#,
        ] {
            let signed = keys.sign(Purpose::Bus, b"", junk).unwrap();
            assert_eq!(hear(&keys, "b", 1024, &signed), Ok(Heard::Ignored));
        }
    }

    /// Rule (issue 23, item 7): a message without a valid tag (none, one
    /// under another key, one for another purpose) is dropped, however
    /// well formed; one over the bound is dropped before its tag is even
    /// checked.
    #[test]
    fn a_forged_or_oversized_message_is_dropped_unread() {
        let keys = keys();
        let change = Change::ToolsListChanged;
        let plain = encode("a", &change).unwrap();
        assert_eq!(hear(&keys, "b", 1024, &plain), Err(Dropped::Forged));
        let other = Keys::new(&SealingKey::new("k", vec![2u8; 32]).unwrap());
        assert_eq!(
            hear(&keys, "b", 1024, &sent(&other, "a", &change)),
            Err(Dropped::Forged)
        );
        let tasks = keys.sign(Purpose::Tasks, b"", &plain).unwrap();
        assert_eq!(hear(&keys, "b", 1024, &tasks), Err(Dropped::Forged));
        let big = Change::Application {
            topic: "t".into(),
            body: "x".repeat(2000),
        };
        let bytes = sent(&keys, "a", &big);
        assert_eq!(
            hear(&keys, "b", 1024, &bytes),
            Err(Dropped::TooLarge(bytes.len()))
        );
        assert_eq!(hear(&keys, "b", 4096, &bytes), Ok(Heard::Change(big)));
    }
}
