//! [`RedisAnswers`]: a 2025 client's answers to mid-call requests, carried
//! to the replica whose call waits for them by Redis pub/sub.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;

use super::config::{Health, RedisConfig, backoff_after};
use crate::surface::{AnswerFeed, AnswerRelay, BoxFuture};

/// [`RedisAnswers`]: carries a 2025 client's answer to a mid-call request
/// from the replica it reached to the replica whose call waits for it.
///
/// Every replica subscribes to a channel of its own,
/// `{RedisConfig::channel}:answers:{origin}` (the origin is 128 random
/// bits, sealed into the id of every request the replica sends). An answer
/// that reaches another replica is `PUBLISH`ed on the holder's channel
/// while the client's POST waits; Redis answers how many subscribers heard
/// it: one means the holding replica is there and the answer is handed to
/// its call (`202`), none means no replica of that name listens (`400`, as
/// for a request nobody waits for), and a Redis that does not answer within
/// [`RedisConfig::command_timeout`] is `503` with `Retry-After`.
///
/// What a client sees, exactly: the id's seal, deadline and caller are
/// judged where the answer lands, so a forged, late or another caller's
/// answer is refused at once on any replica. Whether the call still waits
/// is known only on its replica: an answer for a call that ended (its
/// client went away, or it was answered twice) after the holder was
/// reached is accepted and dropped there (logged at debug level).
#[derive(Debug)]
pub struct RedisAnswers {
    client: redis::Client,
    config: RedisConfig,
    origin: String,
    manager: Arc<tokio::sync::OnceCell<redis::aio::ConnectionManager>>,
    health: Arc<Health>,
}

impl RedisAnswers {
    /// The relay through the Redis server at `url`; only the URL is checked
    /// here, nothing is connected until the server is built.
    pub fn new(url: &str, config: RedisConfig) -> Result<Self, redis::RedisError> {
        Ok(RedisAnswers {
            client: redis::Client::open(url)?,
            config,
            origin: super::bus::origin(),
            manager: Arc::default(),
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

    fn forward(&self, holder: &str, message: Vec<u8>) -> BoxFuture<Result<bool, String>> {
        let client = self.client.clone();
        let config = self.config.clone();
        let manager = Arc::clone(&self.manager);
        let channel = Self::channel_of(&self.config, holder);
        Box::pin(async move {
            if message.len() > config.max_message_bytes {
                return Err("the answer is larger than RedisConfig::max_message_bytes".into());
            }
            let made = manager
                .get_or_try_init(|| async {
                    redis::aio::ConnectionManager::new_lazy_with_config(client, config.manager())
                })
                .await
                .map_err(|e| e.to_string())?;
            let mut manager = made.clone();
            let mut publish = redis::cmd("PUBLISH");
            publish.arg(&channel).arg(&message);
            let published = publish.query_async::<i64>(&mut manager);
            match tokio::time::timeout(config.command_timeout, published).await {
                Ok(Ok(receivers)) => Ok(receivers > 0),
                Ok(Err(error)) => Err(error.to_string()),
                Err(_) => Err("PUBLISH timed out".into()),
            }
        })
    }

    fn start(&self, feed: AnswerFeed) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(target: "wymcp::redis", "RedisAnswers started outside a Tokio runtime: it relays nothing");
            return;
        };
        runtime.spawn(listen(
            self.client.clone(),
            self.config.clone(),
            Self::channel_of(&self.config, &self.origin),
            feed,
            Arc::clone(&self.health),
        ));
    }
}

/// Holds this replica's subscription, handing what other replicas forward
/// to the waiting calls, until the server is gone.
async fn listen(
    client: redis::Client,
    config: RedisConfig,
    channel: String,
    feed: AnswerFeed,
    health: Arc<Health>,
) {
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
                            if !feed.deliver(message.get_payload_bytes()) {
                                tracing::debug!(target: "wymcp::redis", "a relayed answer found no waiting call");
                            }
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

async fn subscribe(
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
