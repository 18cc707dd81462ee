//! [`RedisAnswers`]: a 2025 client's answers to mid-call requests, carried
//! to the replica whose call waits for them by Redis pub/sub.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::config::{Health, RedisConfig, backoff_after, subscribe};
use super::mac::{DropLog, Purpose, receive};
use crate::surface::{AnswerFeed, AnswerRelay, BoxFuture};

/// [`RedisAnswers`]: carries a 2025 client's answer to a mid-call request
/// from the replica it reached to the replica whose call waits for it.
///
/// Every replica subscribes to a channel of its own,
/// `{RedisConfig::channel}:answers:{origin}` (the origin is 128 random
/// bits, sealed into the id of every request the replica sends). An answer
/// that reaches another replica is `PUBLISH`ed on the holder's channel
/// while the client's POST waits, with a correlation id and the sender's
/// origin; the holder hands it to its call and publishes an acknowledgement
/// (handed over or not) on the sender's channel. So the POST is answered
/// exactly as on the holding replica: `202` when the call took it, `400`
/// when nobody waits (the call ended, it was answered already, or Redis
/// counts no subscriber on the holder's channel: the replica is gone), and
/// `503` with `Retry-After` when Redis or the acknowledgement does not come
/// within [`RedisConfig::command_timeout`]. The id's seal, deadline and
/// caller are judged where the answer lands, before anything is relayed.
///
/// An answer up to [`RedisConfig::max_answer_bytes`] is relayed (by
/// default, any a server accepts); a larger one is refused with `413`
/// before it is sent, which no retry changes. Every message carries an
/// HMAC-SHA256 tag under the replicas' shared key
/// ([`RedisConfig::shared_key`]) bound to the replica it is for; one read
/// from the channel that is over the bound or whose tag does not verify is
/// dropped unread.
#[derive(Debug)]
pub struct RedisAnswers {
    client: redis::Client,
    config: RedisConfig,
    origin: String,
    manager: Arc<tokio::sync::OnceCell<redis::aio::ConnectionManager>>,
    /// The acknowledgements this replica's forwarded answers wait for.
    acks: Arc<Mutex<HashMap<String, oneshot::Sender<bool>>>>,
    health: Arc<Health>,
}

/// Takes a forwarded answer's acknowledgement out of the waiting set, however
/// the wait ends.
struct Awaiting {
    acks: Arc<Mutex<HashMap<String, oneshot::Sender<bool>>>>,
    correlation: String,
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        lock(&self.acks).remove(&self.correlation);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Publishes `message` on `channel`: how many subscribers heard it.
async fn publish(
    manager: &tokio::sync::OnceCell<redis::aio::ConnectionManager>,
    client: &redis::Client,
    config: &RedisConfig,
    channel: &str,
    message: &[u8],
) -> Result<i64, String> {
    let made = manager
        .get_or_try_init(|| async {
            redis::aio::ConnectionManager::new_lazy_with_config(client.clone(), config.manager())
        })
        .await
        .map_err(|e| e.to_string())?;
    let mut manager = made.clone();
    let mut command = redis::cmd("PUBLISH");
    command.arg(channel).arg(message);
    let published = command.query_async::<i64>(&mut manager);
    match tokio::time::timeout(config.command_timeout, published).await {
        Ok(Ok(receivers)) => Ok(receivers),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("PUBLISH timed out".into()),
    }
}

impl RedisAnswers {
    /// The relay through the Redis server at `url`; only the URL is checked
    /// here, nothing is connected until the server is built.
    ///
    /// # Errors
    ///
    /// The URL does not parse, or `config` has no
    /// [`shared_key`](RedisConfig::shared_key).
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        config.keys()?;
        Ok(RedisAnswers {
            client: redis::Client::open(url)?,
            config,
            origin: super::bus::origin(),
            manager: Arc::default(),
            acks: Arc::default(),
            health: Arc::default(),
        })
    }

    fn channel_of(config: &RedisConfig, origin: &str) -> String {
        format!("{}:answers:{origin}", config.channel)
    }
}

impl AnswerRelay for RedisAnswers {
    fn origin(&self) -> &str {
        &self.origin
    }

    fn max_answer_bytes(&self) -> usize {
        self.config.max_answer_bytes
    }

    fn forward(&self, holder: &str, message: Vec<u8>) -> BoxFuture<Result<bool, String>> {
        let holder = holder.to_owned();
        let client = self.client.clone();
        let config = self.config.clone();
        let manager = Arc::clone(&self.manager);
        let channel = Self::channel_of(&self.config, &holder);
        let origin = self.origin.clone();
        let acks = Arc::clone(&self.acks);
        Box::pin(async move {
            if message.len() > config.max_answer_bytes {
                // The server refuses it before (413); another caller of
                // the trait is told the same, as an error.
                return Err("the answer is larger than RedisConfig::max_answer_bytes".into());
            }
            let answer: Value = serde_json::from_slice(&message).map_err(|e| e.to_string())?;
            let correlation = super::bus::origin();
            let wrapped = serde_json::to_vec(&json!({"c": correlation, "r": origin, "a": answer}))
                .map_err(|e| e.to_string())?;
            let wrapped = config
                .keys_unchecked()
                .sign(Purpose::Answers, holder.as_bytes(), &wrapped)
                .ok_or("the relay has no key")?;
            let (tx, rx) = oneshot::channel();
            lock(&acks).insert(correlation.clone(), tx);
            let _awaiting = Awaiting {
                acks: Arc::clone(&acks),
                correlation,
            };
            if publish(&manager, &client, &config, &channel, &wrapped).await? == 0 {
                return Ok(false);
            }
            match tokio::time::timeout(config.command_timeout, rx).await {
                Ok(Ok(handed)) => Ok(handed),
                _ => Err("the holding replica did not acknowledge the answer in time".into()),
            }
        })
    }

    fn start(&self, feed: AnswerFeed) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(target: "wymcp::redis", "RedisAnswers started outside a Tokio runtime: it relays nothing");
            return;
        };
        runtime.spawn(listen(
            Relay {
                client: self.client.clone(),
                config: self.config.clone(),
                manager: Arc::clone(&self.manager),
                acks: Arc::clone(&self.acks),
                origin: self.origin.clone(),
                drops: Arc::default(),
            },
            Self::channel_of(&self.config, &self.origin),
            feed,
            Arc::clone(&self.health),
        ));
    }
}

/// What the listening task needs to answer what it hears.
#[derive(Clone)]
struct Relay {
    client: redis::Client,
    config: RedisConfig,
    manager: Arc<tokio::sync::OnceCell<redis::aio::ConnectionManager>>,
    acks: Arc<Mutex<HashMap<String, oneshot::Sender<bool>>>>,
    origin: String,
    drops: Arc<DropLog>,
}

/// What a relayed message may hold besides the answer: the correlation id,
/// the sender's origin, the keys and the tag.
const ENVELOPE_BYTES: usize = 256;

impl Relay {
    /// One message on this replica's channel: an acknowledgement of an
    /// answer it forwarded, or another replica's answer for one of its
    /// calls (handed over, then acknowledged to its sender).
    fn heard(&self, feed: &AnswerFeed, message: &[u8]) {
        let max = self.config.max_answer_bytes.saturating_add(ENVELOPE_BYTES);
        let keys = self.config.keys_unchecked();
        let payload = match receive(keys, Purpose::Answers, self.origin.as_bytes(), max, message) {
            Ok(payload) => payload,
            Err(dropped) => {
                self.drops.dropped("relayed answer", dropped);
                return;
            }
        };
        let Ok(message) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        let text = |key: &str| message.get(key).and_then(Value::as_str);
        if let (Some(correlation), Some(handed)) =
            (text("ack"), message.get("ok").and_then(Value::as_bool))
        {
            if let Some(tx) = lock(&self.acks).remove(correlation) {
                let _ = tx.send(handed);
            }
            return;
        }
        let (Some(correlation), Some(sender), Some(answer)) =
            (text("c"), text("r"), message.get("a"))
        else {
            return;
        };
        let handed = feed.deliver(&serde_json::to_vec(answer).unwrap_or_default());
        if !handed {
            tracing::debug!(target: "wymcp::redis", "a relayed answer found no waiting call");
        }
        let ack =
            serde_json::to_vec(&json!({"ack": correlation, "ok": handed})).unwrap_or_default();
        let Some(ack) = keys.sign(Purpose::Answers, sender.as_bytes(), &ack) else {
            return;
        };
        let channel = RedisAnswers::channel_of(&self.config, sender);
        // Sent by a task of its own: the subscription goes on reading.
        let relay = self.clone();
        tokio::spawn(async move {
            let sent = publish(&relay.manager, &relay.client, &relay.config, &channel, &ack).await;
            if let Err(error) = sent {
                tracing::debug!(target: "wymcp::redis", error = %crate::protocol::text::Bounded(&error), "an answer's acknowledgement was not sent");
            }
        });
    }
}

/// Holds this replica's subscription, handing what other replicas forward
/// to the waiting calls and their acknowledgements to the forwarded answers
/// waiting for them, until the server is gone.
async fn listen(relay: Relay, channel: String, feed: AnswerFeed, health: Arc<Health>) {
    let (client, config) = (relay.client.clone(), relay.config.clone());
    let mut backoff = Duration::ZERO;
    while !feed.is_closed() {
        match subscribe(&client, &config, &channel).await {
            Ok((mut sink, mut stream)) => {
                backoff = Duration::ZERO;
                health.succeeded("answer subscriber");
                let mut ping = tokio::time::interval(config.ping_interval);
                ping.tick().await;
                loop {
                    tokio::select! {
                        message = stream.next() => {
                            let Some(message) = message else {
                                health.failed("answer subscriber", &"the subscription ended");
                                break;
                            };
                            relay.heard(&feed, message.get_payload_bytes());
                        }
                        _ = ping.tick() => {
                            if feed.is_closed() {
                                return;
                            }
                            match tokio::time::timeout(config.command_timeout, sink.ping::<redis::Value>()).await {
                                Ok(Ok(_)) => {}
                                Ok(Err(error)) => { health.failed("answer subscriber", &error); break; }
                                Err(_) => { health.failed("answer subscriber", &"PING timed out"); break; }
                            }
                        }
                    }
                }
            }
            Err(error) => health.failed("answer subscriber", &error),
        }
        backoff = backoff_after(backoff, &config);
        tokio::time::sleep(backoff).await;
    }
}
