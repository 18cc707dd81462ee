//! The Redis backends against a real `redis-server` (one per test, see
//! `support::RedisServer`): the bus carries changes between servers
//! ("replicas") and never back to their origin, an outage keeps local
//! delivery going with one warning and a resync after, and the task store
//! serves a task through any replica, expires it with its TTL, and fails a
//! task whose replica died.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Value, json};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt as _};
use wymcp::redis::{RedisAnswers, RedisBus, RedisConfig, RedisTaskStore};
use wymcp::{Change, Server, TaskLimits};

use crate::support::{RedisServer, chain, send};
use crate::tasks::{call, poll, served_across, task_method, task_tools};
use wymcp::testing::{Client, Listen};

const CHANNEL: &str = "wymcp:changes";

/// The deployment's shared key: the replicas seal with it and sign what
/// they write to Redis with it.
fn shared() -> wymcp::mrtr::SealingKey {
    wymcp::mrtr::SealingKey::new("shared", [7u8; 32]).unwrap()
}

/// Settings that notice an outage and come back quickly, with the shared
/// key.
fn quick() -> RedisConfig {
    RedisConfig::default()
        .shared_key(&shared())
        .timeouts(Duration::from_millis(500), Duration::from_millis(500))
        .backoff(Duration::from_millis(50), Duration::from_millis(200))
        .ping_interval(Duration::from_millis(200))
}

/// A replica: listens to changes, serves tasks, both through `redis`.
fn replica(redis: &RedisServer, limits: TaskLimits) -> Arc<Server> {
    let builder = Server::builder()
        .resources_capability()
        .change_relay(RedisBus::new(&redis.url(), quick()).unwrap())
        .task_store(RedisTaskStore::new(&redis.url(), quick()).unwrap())
        .task_limits(limits);
    Arc::new(task_tools(builder, Arc::default()).build().unwrap())
}

async fn listen(server: &Arc<Server>) -> Listen {
    let mut stream = Client::new(server.clone())
        .listen(json!({"toolsListChanged": true, "resourceSubscriptions": ["test://watched"]}))
        .await
        .expect("the listen stream opens");
    assert_eq!(stream.status, StatusCode::OK);
    let ack = stream.next().await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

/// The methods of every event that arrives within `wait`.
async fn heard(stream: &mut Listen, wait: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < 1000
        && let Some(event) = stream.next_within(wait).await
    {
        let method = event["method"].as_str().unwrap_or_default().to_owned();
        let uri = event["params"]["uri"]
            .as_str()
            .map(|u| format!(" {u}"))
            .unwrap_or_default();
        out.push(format!("{method}{uri}"));
    }
    out
}

/// Rule (issue 18, the bus): every replica's listen streams hear every
/// replica's changes, once; a replica does not deliver its own twice, and
/// an application message reaches the other replica's subscribers but no
/// stream.
#[tokio::test]
async fn the_bus_carries_changes_to_every_replica_once() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis, TaskLimits::default());
    let b = replica(&redis, TaskLimits::default());
    redis.await_subscribers(CHANNEL, 2).await;
    let mut on_a = listen(&a).await;
    let mut on_b = listen(&b).await;
    let mut app_on_b = b.catalog().subscribe();

    a.notify_tools_changed();
    a.notify_resource_updated("test://watched/part");
    a.catalog().broadcast("everything/catalog", "tool:add");
    let quiet = Duration::from_millis(400);
    let on_a = heard(&mut on_a, quiet).await;
    let on_b = heard(&mut on_b, quiet).await;
    let want = [
        "notifications/tools/list_changed",
        "notifications/resources/updated test://watched/part",
    ];
    assert_eq!(on_a, want, "A's own changes, once");
    assert_eq!(on_b, want, "A's changes on B, once");
    let mut app = None;
    while let Ok(change) = app_on_b.try_recv() {
        if let Change::Application { topic, body } = change {
            app = Some((topic, body));
        }
    }
    assert_eq!(app, Some(("everything/catalog".into(), "tool:add".into())));
}

/// Counts the warnings of `wymcp::redis`.
#[derive(Clone, Default)]
struct Warnings(Arc<AtomicUsize>);

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        let meta = event.metadata();
        if meta.target() == "wymcp::redis" && *meta.level() == tracing::Level::WARN {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Rule (issue 18, outages): with Redis gone, a replica's own streams still
/// hear its changes at once and publishing never blocks; the subscriber
/// and the publisher each warn once for the outage, not once per change or
/// retry; once Redis is back, the other replica's streams are told
/// conservatively (what they watch, re-announced) and changes flow again.
#[tokio::test(flavor = "current_thread")]
async fn an_outage_keeps_local_delivery_warns_once_and_resyncs_after() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let warnings = Warnings::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    let a = replica(&redis, TaskLimits::default());
    let b = replica(&redis, TaskLimits::default());
    redis.await_subscribers(CHANNEL, 2).await;
    let mut on_a = listen(&a).await;
    let mut on_b = listen(&b).await;

    redis.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    for _ in 0..50 {
        a.notify_tools_changed();
    }
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "publishing never waits on Redis"
    );
    let local = heard(&mut on_a, Duration::from_millis(300)).await;
    assert_eq!(local.len(), 50, "A's streams heard every change of A's");
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Each backend that met the outage warned once (A and B subscribers,
    // A's publisher): never once per retry or per change.
    let during = warnings.0.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&during),
        "{during} warnings for one outage"
    );

    redis.restart();
    redis.await_subscribers(CHANNEL, 2).await;
    // B, back, is told to re-read what it watches (it may have missed A's).
    let resync = heard(&mut on_b, Duration::from_millis(600)).await;
    assert!(
        resync.contains(&"notifications/tools/list_changed".to_owned()),
        "{resync:?}"
    );
    assert!(
        resync.contains(&"notifications/resources/updated test://watched".to_owned()),
        "{resync:?}"
    );
    let _ = heard(&mut on_a, Duration::from_millis(100)).await;
    a.notify_tools_changed();
    assert_eq!(
        heard(&mut on_b, Duration::from_millis(400)).await,
        ["notifications/tools/list_changed"]
    );
    assert_eq!(
        warnings.0.load(Ordering::SeqCst),
        during,
        "no warning once Redis is back"
    );
}

/// Rule (issue 18, tasks): a task created through one replica is polled,
/// updated (its next round run where the update landed) and cancelled
/// through another; its record carries its TTL in Redis.
#[tokio::test]
async fn a_task_is_served_by_every_replica_sharing_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let limits = TaskLimits::default()
        .ttl(Duration::from_secs(120))
        .lease(Duration::from_secs(2), Duration::from_millis(100));
    let a = replica(&redis, limits);
    let b = replica(&redis, limits);
    let id = served_across(&a, &b).await;
    let ttl = send(&chain(b.clone()), task_method(5, "tasks/get", &id)).await;
    assert_eq!(ttl.ok(&json!(5))["ttlMs"], 120_000);
    let pttl: i64 = redis
        .cli(&["PTTL", &format!("wymcp:task:{id}")])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        (100_000..=120_000).contains(&pttl),
        "the key expires with the task: {pttl}"
    );
}

/// Rule (issue 18, lease): a working task whose replica died is seen
/// failed through another replica once its lease has run out.
#[test]
fn a_task_whose_replica_died_fails_through_another() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let limits =
        TaskLimits::default().lease(Duration::from_millis(500), Duration::from_millis(100));
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let id = doomed.block_on(async {
        let a = replica(&redis, limits);
        let created = send(&chain(a), call(1, "wait", json!({"ms": 60_000}))).await;
        created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let rb = chain(replica(&redis, limits));
        tokio::time::sleep(Duration::from_millis(800)).await;
        let alive = send(&rb, task_method(2, "tasks/get", &id)).await;
        assert_eq!(
            alive.ok(&json!(2))["status"],
            "working",
            "renewed while A lives"
        );
    });
    doomed.shutdown_timeout(Duration::from_secs(1));
    runtime.block_on(async {
        let rb = chain(replica(&redis, limits));
        tokio::time::sleep(Duration::from_millis(700)).await;
        let dead = send(&rb, task_method(3, "tasks/get", &id)).await;
        let dead = dead.ok(&json!(3)).clone();
        assert_eq!(dead["status"], "failed", "{dead}");
        assert!(dead["error"]["message"].as_str().unwrap().contains("lease"));
    });
}

/// Rule (issue 18): with Redis gone the task methods answer 500/-32603 in
/// bounded time (the command timeout), and work again once it is back.
#[tokio::test]
async fn the_task_store_answers_500_in_time_while_redis_is_away() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis, TaskLimits::default());
    let router = chain(a);
    redis.kill();
    let started = Instant::now();
    let created = send(&router, call(1, "wait", json!({"ms": 1}))).await;
    let error: Value = created
        .error(StatusCode::INTERNAL_SERVER_ERROR, -32603, &json!(1))
        .clone();
    assert_eq!(error["data"]["store"], "unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    redis.restart();
    let mut created = None;
    for attempt in 0..50 {
        let reply = send(&router, call(10 + attempt, "wait", json!({"ms": 1}))).await;
        if reply.status == StatusCode::OK {
            created = Some(reply.body["result"]["taskId"].as_str().unwrap().to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let id = created.expect("the store works again once Redis is back");
    assert_eq!(poll(&router, &id, "completed").await["status"], "completed");
}

/// A replica answering 2025 calls: the mid-call tools, answers relayed
/// through `redis`, and the deployment's shared sealing key (which opens
/// every replica's session tokens and request ids).
fn answering(redis: &RedisServer) -> Arc<Server> {
    let builder = Server::builder()
        .sealing_key(shared())
        .answer_relay(RedisAnswers::new(&redis.url(), quick()).unwrap());
    Arc::new(crate::mid_call::tools(builder).build().unwrap())
}

/// Two replicas on `redis`, each listening on its own answer channel, and
/// a 2025 call of `ask` (id 8) on A waiting for its elicitation.
struct Waiting {
    a: Arc<Server>,
    ra: axum::Router,
    rb: axum::Router,
    session: String,
    stream: crate::mid_call::Stream,
    request: Value,
}

async fn waiting_on_a(redis: &RedisServer) -> Waiting {
    use crate::mid_call::{Stream, call, initialize};
    let (a, b) = (answering(redis), answering(redis));
    let (ra, rb) = (chain(a.clone()), chain(b));
    // Both replicas listen on a channel of their own.
    for _ in 0..500 {
        let channels = redis.cli(&["PUBSUB", "CHANNELS", "wymcp:changes:answers:*"]);
        if channels.is_some_and(|c| c.lines().filter(|l| !l.is_empty()).count() == 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let init = send(&ra, initialize(json!({"elicitation": {}}))).await;
    let session = init.header("mcp-session-id").to_owned();
    let mut stream = Stream::open(&ra, call(8, "ask", &session)).await;
    let request = stream.next().await.unwrap();
    Waiting {
        a,
        ra,
        rb,
        session,
        stream,
        request,
    }
}

/// Rule: a 2025 client's answer that lands on another replica reaches the
/// call waiting on the first, through Redis (`202`, and the call answers
/// on its own stream); one whose replica is gone finds nobody (`400`,
/// -32600, `id: null`, `data.reason: "no_waiter"`).
#[tokio::test]
async fn an_answer_reaches_its_call_on_another_replica() {
    use crate::mid_call::{Stream, answer, call, refused};
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let Waiting {
        a,
        ra,
        rb,
        session,
        mut stream,
        request,
    } = waiting_on_a(&redis).await;
    assert_eq!(request["method"], "elicitation/create");
    let elicited = json!({"action": "accept", "content": {"name": "Bea"}});
    let accepted = send(&rb, answer(&request["id"], elicited.clone(), &session)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{accepted:?}");
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 8);
    assert_eq!(done["result"]["content"][0]["text"], "hello Bea, round 1");
    // A call whose replica is gone: its answer finds nobody listening.
    let mut stream = Stream::open(&ra, call(9, "ask", &session)).await;
    let request = stream.next().await.unwrap();
    drop(stream);
    drop(ra);
    drop(a);
    let mut gone = None;
    for _ in 0..100 {
        let reply = send(&rb, answer(&request["id"], elicited.clone(), &session)).await;
        if reply.status != StatusCode::ACCEPTED {
            gone = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    refused(
        &gone.expect("the gone replica's channel closes"),
        StatusCode::BAD_REQUEST,
        -32600,
        "no_waiter",
    );
}

/// Rule: an answer for a call held by another replica, while Redis does
/// not answer, is `503` with `Retry-After`, -32603, `id: null`,
/// `data.reason: "unreachable"`: the client may send it again, and the
/// answer is never taken as handed.
#[tokio::test]
async fn an_answer_that_cannot_be_relayed_is_503_with_retry_after() {
    use crate::mid_call::{answer, refused};
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    // A and its call stay alive: the call waits on A while B is answered.
    let Waiting {
        a: _a,
        ra: _ra,
        rb,
        session,
        stream: _stream,
        request,
    } = waiting_on_a(&redis).await;
    redis.kill();
    let elicited = json!({"action": "accept", "content": {"name": "Bea"}});
    let reply = send(&rb, answer(&request["id"], elicited, &session)).await;
    refused(
        &reply,
        StatusCode::SERVICE_UNAVAILABLE,
        -32603,
        "unreachable",
    );
    assert_eq!(reply.header("retry-after"), "1");
}
