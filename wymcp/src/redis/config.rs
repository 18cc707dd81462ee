//! [`RedisConfig`]: the settings of both Redis backends, and the outage
//! log they share.

use std::time::Duration;

use super::mac::Keys;
use crate::mrtr::SealingKey;
use crate::outage::Outage;

/// The settings of the Redis backends, each with a safe default.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisConfig {
    /// The pub/sub channel the bus publishes on and listens to: replicas of
    /// one deployment share it. Default `wymcp:changes`.
    pub channel: String,
    /// The prefix of the task store's keys. Default `wymcp:task:`.
    pub key_prefix: String,
    /// How long one connection attempt may take. Default 2 s.
    pub connect_timeout: Duration,
    /// How long one command may wait for its answer (a publish, a task
    /// read or write, a ping). Default 2 s.
    pub command_timeout: Duration,
    /// The first wait before reconnecting after a failure; doubled each
    /// failure up to [`backoff_max`](Self::backoff_max). Default 100 ms.
    pub backoff_min: Duration,
    /// The longest wait between reconnection attempts. Default 5 s.
    pub backoff_max: Duration,
    /// How often the bus's subscription is pinged, so that a connection
    /// that died silently is noticed. Default 5 s.
    pub ping_interval: Duration,
    /// The largest change the bus publishes or accepts, in bytes (an
    /// application message, a long URI); a larger one is not relayed (this
    /// replica's streams still hear it), and one read from the channel is
    /// dropped unread. Default 64 KiB.
    pub max_message_bytes: usize,
    /// The largest 2025 answer [`RedisAnswers`](super::RedisAnswers)
    /// relays to the replica whose call waits for it, and the largest
    /// message it reads from its channel, in bytes. A larger answer is
    /// refused with `413` (not retryable). Default 8 MiB, above the default
    /// body limit (8,000,000 bytes), so every answer a server accepts is
    /// relayed: keep it above [`Limits::body_bytes`](crate::Limits) when
    /// raising that.
    pub max_answer_bytes: usize,
    /// The largest task record the task store writes or reads back, in
    /// bytes: writing a larger one fails the store operation, and one read
    /// back is dropped unread (the task is unknown). Default 16 MiB, above
    /// [`TaskLimits::max_task_bytes`](crate::TaskLimits)'s 1 MiB.
    pub max_record_bytes: usize,
    /// Changes waiting to be published; one more while the queue is full
    /// (Redis slow or away) is dropped for the other replicas. Default 1,024.
    pub queue: usize,
    /// The keys every message and record written to Redis is signed with
    /// and checked against (see [`shared_key`](Self::shared_key)).
    keys: Keys,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            channel: "wymcp:changes".to_owned(),
            key_prefix: "wymcp:task:".to_owned(),
            connect_timeout: Duration::from_secs(2),
            command_timeout: Duration::from_secs(2),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            ping_interval: Duration::from_secs(5),
            max_message_bytes: 64 * 1024,
            max_answer_bytes: 8 * 1024 * 1024,
            max_record_bytes: 16 * 1024 * 1024,
            queue: 1024,
            keys: Keys::default(),
        }
    }
}

impl RedisConfig {
    /// Sets [`channel`](Self::channel).
    #[must_use]
    pub fn channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// Sets [`key_prefix`](Self::key_prefix).
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout) and
    /// [`command_timeout`](Self::command_timeout).
    #[must_use]
    pub fn timeouts(mut self, connect: Duration, command: Duration) -> Self {
        self.connect_timeout = connect;
        self.command_timeout = command;
        self
    }

    /// Sets [`backoff_min`](Self::backoff_min) and
    /// [`backoff_max`](Self::backoff_max).
    #[must_use]
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min;
        self.backoff_max = max;
        self
    }

    /// Sets [`ping_interval`](Self::ping_interval).
    #[must_use]
    pub fn ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }

    /// Sets [`max_message_bytes`](Self::max_message_bytes).
    #[must_use]
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.max_message_bytes = max;
        self
    }

    /// Sets [`max_answer_bytes`](Self::max_answer_bytes).
    #[must_use]
    pub fn max_answer_bytes(mut self, max: usize) -> Self {
        self.max_answer_bytes = max;
        self
    }

    /// Sets [`max_record_bytes`](Self::max_record_bytes).
    #[must_use]
    pub fn max_record_bytes(mut self, max: usize) -> Self {
        self.max_record_bytes = max;
        self
    }

    /// The replicas' shared key: pass the [`SealingKey`] every replica
    /// seals with ([`ServerBuilder::sealing_key`](crate::ServerBuilder::sealing_key)).
    /// Every bus message, relayed answer and task record is signed with an
    /// HMAC-SHA256 subkey derived from its secret (one per purpose), and
    /// what is read from Redis without a valid tag is dropped: whoever can
    /// write to Redis but does not hold the key cannot inject a change or
    /// forge a task. Required: a backend refuses to be made without it.
    /// Called again, the new key signs and the earlier ones still verify
    /// (a rotation: first give every replica the new key with
    /// [`accept_key`](Self::accept_key), then make it the shared key).
    #[must_use]
    pub fn shared_key(mut self, key: &SealingKey) -> Self {
        self.keys = self.keys.rotate(key);
        self
    }

    /// A key whose tags are still (or already) accepted, which never signs.
    #[must_use]
    pub fn accept_key(mut self, key: &SealingKey) -> Self {
        self.keys = self.keys.accept(key);
        self
    }

    /// The keys, checked to hold one that signs.
    pub(crate) fn keys(&self) -> Result<&Keys, redis::RedisError> {
        if !self.keys.signs() {
            return Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "RedisConfig has no shared key: give it the replicas' sealing key (RedisConfig::shared_key)",
            )));
        }
        Ok(&self.keys)
    }

    /// The keys, as they are (a backend checked them when it was made).
    pub(crate) fn keys_unchecked(&self) -> &Keys {
        &self.keys
    }

    /// Sets [`queue`](Self::queue).
    #[must_use]
    pub fn queue(mut self, queue: usize) -> Self {
        self.queue = queue;
        self
    }

    /// The connection manager's settings: these timeouts, no retry of its
    /// own (the backends retry with their backoff).
    pub(crate) fn manager(&self) -> redis::aio::ConnectionManagerConfig {
        redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.command_timeout))
            .set_number_of_retries(1)
            .set_min_delay(self.backoff_min)
            .set_max_delay(self.backoff_max)
    }
}

/// One backend's view of Redis: up or in an outage (the crate's one
/// [`Outage`]). A warning is logged when an outage begins, once, and a line
/// when it ends.
#[derive(Debug, Default)]
pub(crate) struct Health {
    outage: Outage,
}

impl Health {
    /// A failure of `what`: the start of an outage unless one is under way.
    pub(crate) fn failed(&self, what: &'static str, error: &dyn std::fmt::Display) {
        if self.outage.failed() {
            tracing::warn!(target: "wymcp::redis", backend = what, %error,
                "Redis is unavailable; local delivery goes on, reconnecting with backoff");
        } else {
            tracing::debug!(target: "wymcp::redis", backend = what, %error, "Redis still unavailable");
        }
    }

    /// A success: whether it ends an outage.
    pub(crate) fn succeeded(&self, what: &'static str) -> bool {
        let ended = self.outage.succeeded();
        if ended {
            tracing::info!(target: "wymcp::redis", backend = what, "Redis is reachable again");
        }
        ended
    }

    /// Whether an outage is under way.
    pub(crate) fn is_down(&self) -> bool {
        self.outage.is_down()
    }
}

/// The next backoff after `now`, within the configured bounds.
pub(crate) fn backoff_after(now: Duration, config: &RedisConfig) -> Duration {
    (now * 2).clamp(config.backoff_min, config.backoff_max)
}

/// A subscription to `channel`, within the connect and command timeouts:
/// the change bus's and the mid-call answers' subscribers both start here.
pub(super) async fn subscribe(
    client: &redis::Client,
    config: &RedisConfig,
    channel: &str,
) -> Result<(redis::aio::PubSubSink, redis::aio::PubSubStream), String> {
    let connect = tokio::time::timeout(config.connect_timeout, client.get_async_pubsub());
    let pubsub = match connect.await {
        Ok(Ok(pubsub)) => pubsub,
        Ok(Err(error)) => return Err(error.to_string()),
        Err(_) => return Err("connecting timed out".to_owned()),
    };
    let (mut sink, stream) = pubsub.split();
    match tokio::time::timeout(config.command_timeout, sink.subscribe(channel)).await {
        Ok(Ok(())) => Ok((sink, stream)),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("SUBSCRIBE timed out".to_owned()),
    }
}
