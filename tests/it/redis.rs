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

use crate::support::{RedisServer, chain, heard, send};
use crate::tasks::{anonymous_wait, call, poll, served_across, task_method, task_tools};
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

/// For the tests that count what a stream hears and kill no Redis: a
/// command's answer may take 10 s and the subscription is pinged every 5 s.
/// With [`quick`]'s 500 ms a machine busy enough to delay one ping's answer
/// looks like an outage, and the resync that follows re-announces what the
/// streams watch: a change heard twice that no replica sent twice (seen:
/// the fresh-clone CI run beside a release build).
fn steady() -> RedisConfig {
    quick()
        .timeouts(Duration::from_secs(10), Duration::from_secs(10))
        .ping_interval(Duration::from_secs(5))
}

/// A replica: listens to changes, serves tasks, both through `redis`.
fn replica(redis: &RedisServer, limits: TaskLimits) -> Arc<Server> {
    replica_with(redis, limits, quick())
}

/// [`replica`] with `config` for the bus and the task store.
fn replica_with(redis: &RedisServer, limits: TaskLimits, config: RedisConfig) -> Arc<Server> {
    let builder = Server::builder()
        .resources_capability()
        .change_relay(RedisBus::new(&redis.url(), config.clone()).unwrap())
        .task_store(RedisTaskStore::new(&redis.url(), config).unwrap())
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

/// Rule (issue 18, the bus): every replica's listen streams hear every
/// replica's changes, once; a replica does not deliver its own twice, and
/// an application message reaches the other replica's subscribers but no
/// stream.
#[tokio::test]
async fn the_bus_carries_changes_to_every_replica_once() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica_with(&redis, TaskLimits::default(), steady());
    let b = replica_with(&redis, TaskLimits::default(), steady());
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

/// Rule (issue 23, item 1): Redis holds the stored-task quota across
/// replicas: a caller at its share through two replicas is refused 429
/// (-32600, `data.limit: "max_stored_per_caller"`, `Retry-After`) though
/// neither replica alone holds its share, another caller is still served,
/// and the deployment's cap is 503 (-32603, `data.limit: "max_stored"`,
/// `Retry-After`), never a 500; each set of ids expires in Redis.
#[tokio::test]
async fn redis_refuses_a_caller_over_its_stored_share_across_replicas() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let limits = TaskLimits::default().max_stored_per_caller(2).max_stored(4);
    let (a, b) = (
        chain(replica(&redis, limits)),
        chain(replica(&redis, limits)),
    );
    let hog = [192, 0, 2, 1];
    anonymous_wait(&a, 1, hog, 1).await.ok(&json!(1));
    anonymous_wait(&b, 2, hog, 1).await.ok(&json!(2));
    let over = anonymous_wait(&a, 3, hog, 1).await;
    let error = over.error(StatusCode::TOO_MANY_REQUESTS, -32600, &json!(3));
    assert_eq!(error["data"]["limit"], "max_stored_per_caller");
    assert!(over.header("retry-after").parse::<u64>().unwrap() >= 1);
    anonymous_wait(&b, 4, [192, 0, 2, 2], 1).await.ok(&json!(4));
    anonymous_wait(&a, 5, [192, 0, 2, 3], 1).await.ok(&json!(5));
    let capped = anonymous_wait(&b, 6, [192, 0, 2, 4], 1).await;
    let error = capped.error(StatusCode::SERVICE_UNAVAILABLE, -32603, &json!(6));
    assert_eq!(error["data"]["limit"], "max_stored");
    assert!(capped.header("retry-after").parse::<u64>().unwrap() >= 1);
    let pttl: i64 = redis
        .cli(&["PTTL", "wymcp:task:stored"])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pttl > 0, "the count expires with its last task: {pttl}");
}

/// A replica answering 2025 calls: the mid-call tools, answers relayed
/// through `redis`, and the deployment's shared sealing key (which opens
/// every replica's session tokens and request ids).
fn answering(redis: &RedisServer, config: RedisConfig) -> Arc<Server> {
    let builder = Server::builder()
        .sealing_key(shared())
        .answer_relay(RedisAnswers::new(&redis.url(), config).unwrap());
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
    waiting_on_a_with(redis, quick()).await
}

async fn waiting_on_a_with(redis: &RedisServer, config: RedisConfig) -> Waiting {
    use crate::mid_call::{Stream, call, initialize};
    let (a, b) = (answering(redis, config.clone()), answering(redis, config));
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

/// `redis-cli` against `redis`, `input` as its last argument (`-x`: binary
/// and of any length); its raw output.
fn cli_bytes(redis: &RedisServer, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut command = Command::new("redis-cli");
    command.args(["-u", &redis.url()]);
    if input.is_some() {
        command.arg("-x");
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or_default()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "redis-cli {args:?}");
    out.stdout
}

/// What a replica publishes on the bus, signed with `key`.
fn signed(key: &wymcp::mrtr::SealingKey, json: &[u8]) -> Vec<u8> {
    use wymcp::fuzzing::redis::{Keys, Purpose};
    Keys::new(key).sign(Purpose::Bus, b"", json).unwrap()
}

/// Rule (issue 23, item 7): whoever can publish on the bus's channel
/// without the replicas' key injects nothing: a well-formed change with no
/// tag, a wrong tag, or a tag under another key never reaches a listen
/// stream, nor does a correctly signed one over `max_message_bytes`
/// (dropped before its tag is checked or it is parsed); one signed with
/// the shared key does, so the subscription was listening all along. The
/// drops are told in one warning, not one per message.
#[tokio::test]
async fn a_forged_or_oversized_bus_message_reaches_no_listen_stream() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let warnings = Warnings::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    let b = replica(&redis, TaskLimits::default());
    redis.await_subscribers(CHANNEL, 1).await;
    let mut on_b = listen(&b).await;
    let change = br#"{"o":"attacker","k":"updated","u":"test://watched"}"#;
    let mut bad_tag = vec![0u8; 32];
    bad_tag.extend_from_slice(change);
    let other_key = wymcp::mrtr::SealingKey::new("shared", [8u8; 32]).unwrap();
    let padded = format!(
        r#"{{"o":"attacker","k":"tools","pad":"{}"}}"#,
        "x".repeat(100 * 1024)
    );
    for forged in [
        change.to_vec(),
        bad_tag,
        signed(&other_key, change),
        signed(&shared(), padded.as_bytes()),
    ] {
        let receivers = cli_bytes(&redis, &["PUBLISH", CHANNEL], Some(&forged));
        assert_eq!(String::from_utf8_lossy(&receivers).trim(), "1");
    }
    assert_eq!(
        heard(&mut on_b, Duration::from_millis(400)).await,
        Vec::<String>::new(),
        "no forged or oversized change reaches a stream"
    );
    cli_bytes(
        &redis,
        &["PUBLISH", CHANNEL],
        Some(&signed(&shared(), change)),
    );
    assert_eq!(
        heard(&mut on_b, Duration::from_millis(400)).await,
        ["notifications/resources/updated test://watched"],
        "a change signed with the shared key does"
    );
    assert_eq!(
        warnings.0.load(Ordering::SeqCst),
        1,
        "one warning for the burst"
    );
}

/// Rule (issue 23, item 7): a task record written into Redis by someone
/// without the replicas' key is not served: a completed task's record
/// rewritten (its result changed, behind no tag or a wrong one), or
/// replaced by another task's genuine record, makes the task unknown
/// (400/-32602 "unknown task"), never its forged content nor a 500.
#[tokio::test]
async fn a_forged_task_record_is_not_served() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis, TaskLimits::default());
    let router = chain(a);
    let mut ids = Vec::new();
    for n in 1..=2 {
        let created = send(&router, call(n, "wait", json!({"ms": 1}))).await;
        let id = created.ok(&json!(n))["taskId"].as_str().unwrap().to_owned();
        let done = poll(&router, &id, "completed").await;
        assert_eq!(done["status"], "completed", "{done}");
        ids.push(id);
    }
    let key = |id: &str| format!("wymcp:task:{id}");
    let record = |id: &str| {
        let mut raw = cli_bytes(&redis, &["HGET", &key(id), "d"], None);
        assert_eq!(raw.pop(), Some(b'\n'));
        raw
    };
    let genuine = record(&ids[0]);
    let json =
        String::from_utf8(genuine[32..].to_vec()).expect("the record's JSON follows its tag");
    assert!(json.contains("waited 1 ms"), "{json}");
    let forged_json = json.replace("waited 1 ms", "forged!");
    let mut bad_tag = vec![0u8; 32];
    bad_tag.extend_from_slice(forged_json.as_bytes());
    let moved = record(&ids[1]);
    for (n, forged) in [forged_json.as_bytes().to_vec(), bad_tag, moved]
        .into_iter()
        .enumerate()
    {
        cli_bytes(&redis, &["HSET", &key(&ids[0]), "d"], Some(&forged));
        let n = 10 + n as u64;
        let reply = send(&router, task_method(n, "tasks/get", &ids[0])).await;
        let error = reply.error(StatusCode::BAD_REQUEST, -32602, &json!(n));
        assert_eq!(error["message"], "unknown task", "forgery {n}: {error}");
        assert!(!format!("{:?}", reply.body).contains("forged!"));
    }
    // The genuine record back: served again.
    cli_bytes(&redis, &["HSET", &key(&ids[0]), "d"], Some(&genuine));
    let reply = send(&router, task_method(20, "tasks/get", &ids[0])).await;
    assert_eq!(reply.ok(&json!(20))["status"], "completed");
}

/// Rule (issue 23, item 9): a 2025 answer over the bus's 64 KiB is relayed
/// to the replica whose call waits for it (`202`, and the call answers
/// with it): the answers' bound is `max_answer_bytes` (8 MiB), above the
/// default body limit.
#[tokio::test]
async fn an_answer_over_64_kib_is_relayed() {
    use crate::mid_call::answer;
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let Waiting {
        a: _a,
        rb,
        session,
        mut stream,
        request,
        ..
    } = waiting_on_a(&redis).await;
    let name = "B".repeat(200 * 1024);
    let elicited = json!({"action": "accept", "content": {"name": name}});
    let accepted = send(&rb, answer(&request["id"], elicited, &session)).await;
    assert_eq!(
        accepted.status,
        StatusCode::ACCEPTED,
        "{:?}",
        accepted.status
    );
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 8);
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("hello {name}, round 1")
    );
}

/// Rule (issue 23, item 9): an answer longer than the relay carries
/// (`max_answer_bytes`) is refused before it is sent: `413`, -32600,
/// `id: null`, `data.limit: "max_answer_bytes"` with the bound, and no
/// `Retry-After` (sending it again cannot succeed); the call still waits
/// and a shorter answer reaches it.
#[tokio::test]
async fn an_answer_over_max_answer_bytes_is_413_not_retryable() {
    use crate::mid_call::{answer, refused};
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let Waiting {
        a: _a,
        rb,
        session,
        mut stream,
        request,
        ..
    } = waiting_on_a_with(&redis, quick().max_answer_bytes(4096)).await;
    let long = json!({"action": "accept", "content": {"name": "B".repeat(8192)}});
    let reply = send(&rb, answer(&request["id"], long, &session)).await;
    refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, -32600, "too_large");
    let error = &reply.body["error"];
    assert_eq!(error["data"]["limit"], "max_answer_bytes", "{error}");
    assert_eq!(error["data"]["max"], 4096, "{error}");
    assert!(
        reply.headers.get("retry-after").is_none(),
        "{:?}",
        reply.headers
    );
    let short = json!({"action": "accept", "content": {"name": "Bea"}});
    let accepted = send(&rb, answer(&request["id"], short, &session)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "hello Bea, round 1");
}

/// base64url without padding, decoded (a request id as the server seals
/// it); `None` for anything else.
fn base64url(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::new();
    let (mut bits, mut held) = (0u32, 0u32);
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|&a| a == c)?;
        bits = (bits << 6) | u32::try_from(value).ok()?;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push(u8::try_from((bits >> held) & 0xff).ok()?);
        }
    }
    Some(out)
}

/// Rule (issue 23, item 7): an answer published straight on the holding
/// replica's answer channel by someone without the replicas' key (who read
/// the nonce and the holder out of the request id, which is signed, not
/// encrypted) is never handed to the call: the call goes on waiting, and
/// the client's own answer, relayed by a replica, is the one it gets.
#[tokio::test]
async fn a_forged_relayed_answer_never_reaches_the_call() {
    use crate::mid_call::answer;
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let Waiting {
        a: _a,
        rb,
        session,
        mut stream,
        request,
        ..
    } = waiting_on_a(&redis).await;
    // The id: version, key id, expiry, the state (JSON), the tag.
    let token = base64url(request["id"].as_str().unwrap()).unwrap();
    let key_id = usize::from(token[1]);
    let state: Value = serde_json::from_slice(&token[2 + key_id + 8..token.len() - 32]).unwrap();
    let (nonce, holder) = (state["n"].as_str().unwrap(), state["o"].as_str().unwrap());
    let forged = json!({"c": "forged", "r": "attacker", "a": {"n": nonce, "m": {
        "jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"name": "Mallory"}}}}});
    let forged = serde_json::to_vec(&forged).unwrap();
    let mut bad_tag = vec![0u8; 32];
    bad_tag.extend_from_slice(&forged);
    let channel = format!("{CHANNEL}:answers:{holder}");
    for message in [forged, bad_tag] {
        let receivers = cli_bytes(&redis, &["PUBLISH", &channel], Some(&message));
        assert_eq!(String::from_utf8_lossy(&receivers).trim(), "1");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let elicited = json!({"action": "accept", "content": {"name": "Bea"}});
    let accepted = send(&rb, answer(&request["id"], elicited, &session)).await;
    assert_eq!(
        accepted.status,
        StatusCode::ACCEPTED,
        "the call still waits"
    );
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "hello Bea, round 1");
}

/// A replica serving the 2025 GET stream: a tool and a resource, the shared
/// sealing key (so a token minted on one opens on every other), the bus
/// through `redis`.
fn streaming_replica(redis: &RedisServer) -> Arc<Server> {
    Arc::new(
        Server::builder()
            .sealing_key(shared())
            .tool(
                wymcp::Tool::new("t")
                    .handler(|_: wymcp::NoArgs, _| async { Ok(wymcp::ToolResult::text("ok")) }),
            )
            .resource(wymcp::Resource::new("test://r", "r").text("r"))
            .change_relay(RedisBus::new(&redis.url(), steady()).unwrap())
            .build()
            .unwrap(),
    )
}

/// Rule (issue 27 §1): a 2025 client initialized on replica A with its GET
/// stream open on replica B hears a change made on A, and a subscribe sent
/// to A reaches its stream on B: the subscription rides the bus, signed,
/// with no store.
#[tokio::test]
async fn a_get_stream_on_one_replica_hears_changes_and_subscriptions_from_another() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = streaming_replica(&redis);
    let b = streaming_replica(&redis);
    redis.await_subscribers(CHANNEL, 2).await;
    let on_a = Client::new(a.clone()).legacy();
    let initialized = on_a
        .send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}}),
        )
        .await;
    let token = initialized.header("mcp-session-id").to_owned();
    let mut stream = Client::new(b.clone())
        .legacy()
        .open_stream(&token, &[])
        .await
        .expect("the token opens on B");
    a.notify_tools_changed();
    let event = stream
        .next_within(Duration::from_secs(1))
        .await
        .expect("A's change on B within 1 s");
    assert_eq!(event["method"], "notifications/tools/list_changed");
    let subscribed = on_a
        .send_with(
            "resources/subscribe",
            json!({"uri": "test://r"}),
            &[("mcp-session-id", &token)],
        )
        .await;
    assert_eq!(subscribed.result().unwrap(), &json!({}));
    // One publisher, in order: the subscription reaches B before the update.
    a.notify_resource_updated("test://r");
    assert_eq!(
        heard(&mut stream, Duration::from_millis(400)).await,
        ["notifications/resources/updated test://r"]
    );
}
