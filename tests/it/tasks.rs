//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) through
//! the default chain, on the in-memory store (the Redis store's own tests
//! are in `redis.rs`): negotiation, the CreateTaskResult, `tasks/get`,
//! `tasks/update`, `tasks/cancel`, the binding of a task to its principal,
//! the limits, and a task whose replica stopped.

#![allow(clippy::needless_pass_by_value)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, AuthError, BearerAuth, Principal};
use wymcp::ledger::Kind;
use wymcp::mrtr::InputRequest;
use wymcp::tasks::{MemoryTaskStore, StoreFuture, TaskEntry, TaskStore, TaskStoreError};
use wymcp::{
    HandlerError, NoArgs, Server, ServerBuilder, TaskLimits, TaskSupport, Tool, ToolResult,
};

use crate::support::{Req, chain, send};

pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Client capabilities declaring the extension (and elicitation).
pub fn declaring() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    /// Milliseconds to work.
    ms: u64,
}

/// Sets a flag when dropped: shows a handler's future was dropped.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The task-capable tools the tests call.
pub fn task_tools(builder: ServerBuilder, dropped: Arc<AtomicBool>) -> ServerBuilder {
    builder
        .tool(
            Tool::new("wait")
                .task_support(TaskSupport::Optional)
                .handler(move |args: Wait, _| {
                    let guard = Dropped(dropped.clone());
                    async move {
                        tokio::time::sleep(Duration::from_millis(args.ms)).await;
                        drop(guard);
                        Ok(ToolResult::text(format!("waited {} ms", args.ms)))
                    }
                }),
        )
        .tool(
            Tool::new("only_task")
                .task_support(TaskSupport::Required)
                .handler(|_: NoArgs, _| async {
                    Err::<ToolResult, _>(HandlerError::execution("the tool failed"))
                }),
        )
        .tool(
            Tool::new("broken")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, _| async {
                    Err::<ToolResult, _>(HandlerError::Rpc {
                        code: wymcp::ErrorCode::new(-32050),
                        message: "broken down".into(),
                        data: Some(json!({"why": "test"})),
                    })
                }),
        )
        .tool(
            Tool::new("two_questions")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, cx| async move {
                    let inputs = cx.inputs();
                    if let (Some(a), Some(b)) = (inputs.accepted("a"), inputs.accepted("b")) {
                        // How many answers the round handed over: only the asked keys.
                        let answers = inputs.responses().len();
                        let text = format!("{} and {} ({answers} answers)", a["v"], b["v"]);
                        return Ok(ToolResult::text(text));
                    }
                    let schema = json!({"type": "object", "properties": {"v": {"type": "string"}}});
                    let ask = cx
                        .input_required()
                        .request("a", InputRequest::elicit("A?", schema.clone()))?
                        .request("b", InputRequest::elicit("B?", schema))?;
                    Err(ask.into())
                }),
        )
        .tool(Tool::new("plain").handler(|_: NoArgs, _| async { Ok(ToolResult::text("plain")) }))
}

fn server() -> (Arc<Server>, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = task_tools(Server::builder(), dropped.clone())
        .build()
        .unwrap();
    (Arc::new(server), dropped)
}

/// A `tools/call` of `name` by a client that declares the extension.
pub fn call(id: u64, name: &str, arguments: Value) -> Req {
    Req::modern(id, "tools/call")
        .params(json!({"name": name, "arguments": arguments}))
        .capabilities(declaring())
}

/// A task method naming `task`, by a declaring client.
pub fn task_method(id: u64, method: &str, task: &str) -> Req {
    Req::modern(id, method)
        .params(json!({"taskId": task}))
        .capabilities(declaring())
}

/// Polls `tasks/get` until the task's status is `want` (or terminal).
pub async fn poll(router: &wymcp::axum::Router, task: &str, want: &str) -> Value {
    for attempt in 0..200 {
        let reply = send(router, task_method(9000 + attempt, "tasks/get", task)).await;
        let got = reply.ok(&json!(9000 + attempt)).clone();
        let status = got["status"].as_str().unwrap_or_default().to_owned();
        if status == want || ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {task} never reached {want}");
}

fn is_iso(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 24 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T' && s.ends_with('Z')
}

/// Rule (SEP-2663): a declaring client's call of a task-capable tool is
/// answered at once with the flat CreateTaskResult; `tasks/get` shows it
/// working, then completed with the tool's result inlined.
#[tokio::test]
async fn a_declaring_client_gets_a_task_and_polls_it_to_its_result() {
    let (server, _) = server();
    let router = chain(server);
    let created = send(&router, call(1, "wait", json!({"ms": 300}))).await;
    let task = created.ok(&json!(1)).clone();
    assert_eq!(task["resultType"], "task", "{task}");
    assert_eq!(task["status"], "working");
    assert!(
        task.get("task").is_none()
            && task.get("result").is_none()
            && task.get("requestState").is_none()
    );
    assert!(
        is_iso(&task["createdAt"]) && is_iso(&task["lastUpdatedAt"]),
        "{task}"
    );
    assert_eq!(task["ttlMs"], 3_600_000);
    assert_eq!(task["pollIntervalMs"], 500);
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);

    let working = send(&router, task_method(2, "tasks/get", &id)).await;
    let working = working.ok(&json!(2));
    assert_eq!(working["resultType"], "complete");
    assert_eq!(working["status"], "working");
    assert!(working.get("result").is_none() && working.get("error").is_none());

    let done = poll(&router, &id, "completed").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "waited 300 ms");
    assert!(done.get("error").is_none());
    assert!(
        done["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
}

/// Rule (SEP-2663 §error semantics): a tool's execution error is a
/// `completed` task with `isError`; a protocol error is `failed` with the
/// JSON-RPC error inlined and no result.
#[tokio::test]
async fn a_tool_error_completes_and_a_protocol_error_fails() {
    let (server, _) = server();
    let router = chain(server);
    let tool_error = send(&router, call(1, "only_task", json!({}))).await;
    let id = tool_error.ok(&json!(1))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = poll(&router, &id, "completed").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["content"][0]["text"], "the tool failed");

    let protocol = send(&router, call(2, "broken", json!({}))).await;
    let id = protocol.ok(&json!(2))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let failed = poll(&router, &id, "failed").await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"],
        json!({"code": -32050, "message": "broken down", "data": {"why": "test"}})
    );
    assert!(failed.get("result").is_none());
}

/// Rule (SEP-2663 §required capabilities): without the extension declared,
/// an optional tool answers on its request, a required one is 400/-32021
/// naming the extension before its handler runs, and the task methods are
/// 400/-32021; a 2025 client has no task methods at all (-32601).
#[tokio::test]
async fn without_the_extension_optional_is_plain_and_required_is_32021() {
    let (server, _) = server();
    let router = chain(server);
    let plain = send(
        &router,
        Req::modern(1, "tools/call").params(json!({"name": "wait", "arguments": {"ms": 1}})),
    )
    .await;
    assert_eq!(plain.ok(&json!(1))["content"][0]["text"], "waited 1 ms");

    let required = send(
        &router,
        Req::modern(2, "tools/call").params(json!({"name": "only_task", "arguments": {}})),
    )
    .await;
    let error = required.error(StatusCode::BAD_REQUEST, -32021, &json!(2));
    assert_eq!(
        error["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );

    for (id, method) in [(3, "tasks/get"), (4, "tasks/update"), (5, "tasks/cancel")] {
        let req = Req::modern(id, method)
            .params(json!({"taskId": "00000000000000000000000000000000", "inputResponses": {}}));
        let reply = send(&router, req).await;
        let error = reply.error(StatusCode::BAD_REQUEST, -32021, &json!(id));
        assert_eq!(
            error["data"]["requiredCapabilities"]["extensions"][TASKS],
            json!({}),
            "{method}"
        );
    }
    let legacy = send(
        &router,
        Req::legacy(6, "tasks/get").params(json!({"taskId": "x"})),
    )
    .await;
    legacy.error(StatusCode::OK, -32601, &json!(6));
}

/// Rule (SEP-2663): the server advertises the extension under
/// `capabilities.extensions` (not a v1 `tasks` slot), and a tool lists its
/// `execution.taskSupport`.
#[tokio::test]
async fn the_extension_is_advertised_and_tools_list_their_task_support() {
    let (server, _) = server();
    let router = chain(server);
    let discover = send(&router, Req::modern(1, "server/discover")).await;
    let caps = &discover.ok(&json!(1))["capabilities"];
    assert_eq!(caps["extensions"][TASKS], json!({}));
    assert!(caps.get("tasks").is_none());
    let listed = send(&router, Req::modern(2, "tools/list")).await;
    let tools = listed.ok(&json!(2))["tools"].as_array().unwrap().clone();
    let support = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("wait"), "optional");
    assert_eq!(support("only_task"), "required");
    assert_eq!(support("plain"), Value::Null);
    // A server with no task-capable tool and no store advertises nothing.
    let bare = chain(
        Server::builder()
            .tool(Tool::new("t").handler(|_: NoArgs, _| async { Ok(ToolResult::text("")) }))
            .build()
            .unwrap(),
    );
    let discover = send(&bare, Req::modern(3, "server/discover")).await;
    assert!(
        discover.ok(&json!(3))["capabilities"]
            .get("extensions")
            .is_none()
    );
    let get = send(
        &bare,
        task_method(4, "tasks/get", "00000000000000000000000000000000"),
    )
    .await;
    get.error(StatusCode::NOT_FOUND, -32601, &json!(4));
}

/// Rule (SEP-2663): `tasks/result` and `tasks/list` are removed: 404/-32601.
#[tokio::test]
async fn tasks_result_and_list_do_not_exist() {
    let (server, _) = server();
    let router = chain(server);
    for (id, method) in [(1, "tasks/result"), (2, "tasks/list")] {
        let reply = send(&router, Req::modern(id, method).capabilities(declaring())).await;
        reply.error(StatusCode::NOT_FOUND, -32601, &json!(id));
    }
}

/// Rule (SEP-2663): `tasks/cancel` acknowledges with an empty
/// `{resultType: complete}`, the task settles `cancelled`, its handler is
/// dropped, and a second cancel of the finished task is the same ack.
#[tokio::test]
async fn cancel_settles_cancelled_drops_the_handler_and_is_idempotent() {
    let (server, dropped) = server();
    let router = chain(server.clone());
    let created = send(&router, call(1, "wait", json!({"ms": 60_000}))).await;
    let id = created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    assert_eq!(server.running_tasks(), 1);
    // Let the handler start (the runner is a task of this runtime).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!dropped.load(Ordering::SeqCst));
    for attempt in [2, 3] {
        let ack = send(&router, task_method(attempt, "tasks/cancel", &id)).await;
        let ack = ack.ok(&json!(attempt));
        assert_eq!(ack["resultType"], "complete");
        for field in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(field).is_none(), "{field} in {ack}");
        }
        let after = send(&router, task_method(10 + attempt, "tasks/get", &id)).await;
        assert_eq!(after.ok(&json!(10 + attempt))["status"], "cancelled");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(dropped.load(Ordering::SeqCst), "the handler was dropped");
    assert_eq!(server.running_tasks(), 0);
}

/// Rule (SEP-2663 + SEP-2322): a handler's `input_required` inside a task
/// parks it `input_required` with its `inputRequests`; a partial
/// `tasks/update` is acknowledged and leaves only the unanswered key; an
/// answer to no pending key is ignored; the last answer resumes the
/// handler with every answer of the round.
#[tokio::test]
async fn input_required_inside_a_task_resumes_through_update() {
    let (server, _) = server();
    let router = chain(server);
    let created = send(&router, call(1, "two_questions", json!({}))).await;
    let id = created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    let parked = poll(&router, &id, "input_required").await;
    assert_eq!(parked["status"], "input_required");
    let mut keys: Vec<&String> = parked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(parked["inputRequests"]["a"]["method"], "elicitation/create");
    let update = |id_: u64, responses: Value| {
        Req::modern(id_, "tasks/update")
            .params(json!({"taskId": id, "inputResponses": responses}))
            .capabilities(declaring())
    };
    let answer = |v: &str| json!({"action": "accept", "content": {"v": v}});
    let ack = send(
        &router,
        update(2, json!({"a": answer("one"), "zzz": answer("?")})),
    )
    .await;
    assert_eq!(
        ack.ok(&json!(2)),
        &json!({"resultType": "complete", "_meta": ack.ok(&json!(2))["_meta"]})
    );
    let partial = send(&router, task_method(3, "tasks/get", &id)).await;
    let partial = partial.ok(&json!(3));
    assert_eq!(partial["status"], "input_required");
    assert_eq!(
        partial["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["b"]
    );
    let ack = send(&router, update(4, json!({"b": answer("two")}))).await;
    ack.ok(&json!(4));
    let done = poll(&router, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "\"one\" and \"two\" (2 answers)"
    );
    // An update of a finished task changes nothing and is acknowledged.
    let late = send(&router, update(5, json!({"a": answer("late")}))).await;
    late.ok(&json!(5));
    let update_bad = send(
        &router,
        Req::modern(6, "tasks/update")
            .params(json!({"taskId": id, "inputResponses": [1]}))
            .capabilities(declaring()),
    )
    .await;
    update_bad.error(StatusCode::BAD_REQUEST, -32602, &json!(6));
}

fn authenticated(dropped: Arc<AtomicBool>) -> Arc<Server> {
    let tokens = BearerAuth::new(|token: String| async move {
        match token.as_str() {
            "alice" | "bob" => Ok(Principal::new(token, [""; 0])),
            _ => Err(AuthError::Unauthorized),
        }
    });
    let builder = Server::builder().auth(tokens, AuthConfig::new());
    Arc::new(task_tools(builder, dropped).build().unwrap())
}

/// Rule (issue 18): a task is bound to the principal that created it:
/// another principal, an id of another shape and an id never minted all
/// meet the same 400/-32602 "unknown task", for every task method.
#[tokio::test]
async fn another_principals_task_is_unknown_like_one_never_made() {
    let server = authenticated(Arc::default());
    let router = chain(server);
    let created = send(
        &router,
        call(1, "wait", json!({"ms": 60_000})).bearer("alice"),
    )
    .await;
    let id = created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    let mine = send(&router, task_method(2, "tasks/get", &id).bearer("alice")).await;
    assert_eq!(mine.ok(&json!(2))["status"], "working");
    let never = "0123456789abcdef0123456789abcdef".to_owned();
    let unknown = [
        (id.clone(), "bob"),
        (never, "alice"),
        ("../../etc".to_owned(), "alice"),
        ("x".repeat(10_000), "alice"),
    ];
    let mut n = 10;
    for (task, who) in unknown {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            n += 1;
            let req = Req::modern(n, method)
                .params(json!({"taskId": task, "inputResponses": {}}))
                .capabilities(declaring())
                .bearer(who);
            let reply = send(&router, req).await;
            let error = reply.error(StatusCode::BAD_REQUEST, -32602, &json!(n));
            assert_eq!(error["message"], "unknown task", "{method} by {who}");
        }
    }
    // Bob's cancel did nothing to Alice's task.
    let still = send(&router, task_method(99, "tasks/get", &id).bearer("alice")).await;
    assert_eq!(still.ok(&json!(99))["status"], "working");
}

/// Rule (issue 18, limits): running task handlers are bounded per caller
/// (429/-32600) and per replica (503/-32603), each with `Retry-After` and
/// `data.limit`; a call too large to store is 400/-32602 naming
/// `max_task_bytes`.
#[tokio::test]
async fn running_tasks_and_task_records_are_bounded() {
    let limits = TaskLimits::default()
        .max_running(2)
        .max_running_per_caller(1)
        .max_task_bytes(4096);
    let tokens = BearerAuth::new(|token: String| async move { Ok(Principal::new(token, [""; 0])) });
    let builder = Server::builder()
        .auth(tokens, AuthConfig::new())
        .task_limits(limits);
    let router = chain(task_tools(builder, Arc::default()).build().unwrap());
    let as_ = |id: u64, who: &str| call(id, "wait", json!({"ms": 60_000})).bearer(who);
    send(&router, as_(1, "a")).await.ok(&json!(1));
    let caller = send(&router, as_(2, "a")).await;
    let error = caller.error(StatusCode::TOO_MANY_REQUESTS, -32600, &json!(2));
    assert_eq!(error["data"]["limit"], "max_running_per_caller");
    assert!(caller.header("retry-after").parse::<u64>().unwrap() >= 1);
    send(&router, as_(3, "b")).await.ok(&json!(3));
    let server_full = send(&router, as_(4, "c")).await;
    let error = server_full.error(StatusCode::SERVICE_UNAVAILABLE, -32603, &json!(4));
    assert_eq!(error["data"]["limit"], "max_running");
    assert!(server_full.header("retry-after").parse::<u64>().unwrap() >= 1);

    let big = call(5, "two_questions", json!({"pad": "x".repeat(5000)})).bearer("d");
    let reply = send(&router, big).await;
    let error = reply.error(StatusCode::BAD_REQUEST, -32602, &json!(5));
    assert_eq!(error["data"]["limit"], "max_task_bytes");
}

/// A store that never answers.
#[derive(Debug)]
struct Stuck;

impl TaskStore for Stuck {
    fn insert(&self, _: TaskEntry) -> StoreFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
    fn load<'a>(&'a self, _: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        Box::pin(std::future::pending())
    }
    fn replace(&self, _: TaskEntry) -> StoreFuture<'_, bool> {
        Box::pin(std::future::pending())
    }
}

/// Rule (issue 18): every wait on the store is bounded by
/// `store_timeout`: a store that does not answer is 500/-32603, in time.
#[tokio::test]
async fn a_store_that_does_not_answer_is_500_in_time() {
    let builder = Server::builder()
        .task_store(Stuck)
        .task_limits(TaskLimits::default().store_timeout(Duration::from_millis(100)));
    let router = chain(task_tools(builder, Arc::default()).build().unwrap());
    let started = std::time::Instant::now();
    let created = send(&router, call(1, "wait", json!({"ms": 1}))).await;
    let error = created.error(StatusCode::INTERNAL_SERVER_ERROR, -32603, &json!(1));
    assert_eq!(error["data"]["store"], "unavailable");
    let get = send(
        &router,
        task_method(2, "tasks/get", "0123456789abcdef0123456789abcdef"),
    )
    .await;
    get.error(StatusCode::INTERNAL_SERVER_ERROR, -32603, &json!(2));
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// Two servers ("replicas") sharing one store.
fn replicas(limits: TaskLimits) -> (Arc<Server>, Arc<Server>) {
    let store = Arc::new(MemoryTaskStore::new(100));
    let make = || {
        let builder = Server::builder()
            .task_store(store.clone())
            .task_limits(limits);
        Arc::new(task_tools(builder, Arc::default()).build().unwrap())
    };
    (make(), make())
}

/// Rule (issue 18): a task created through one server is polled, updated
/// (its next round run there) and cancelled through another sharing the
/// store; a cancel made elsewhere reaches the runner at its heartbeat.
#[tokio::test]
async fn a_task_is_served_by_any_server_sharing_the_store() {
    let limits = TaskLimits::default().lease(Duration::from_secs(2), Duration::from_millis(100));
    let (a, b) = replicas(limits);
    served_across(&a, &b).await;
}

/// The round both task stores must serve, with `a` and `b` sharing one:
/// a task created through `a` is polled to `input_required` and updated
/// through `b` (its next round run there) and finished through `a`; a long
/// task on `a` is cancelled through `b`, and the runner on `a` drops its
/// handler at its next heartbeat. Returns the first task's id.
pub(crate) async fn served_across(a: &Arc<Server>, b: &Arc<Server>) -> String {
    let (ra, rb) = (chain(a.clone()), chain(b.clone()));
    let created = send(&ra, call(1, "two_questions", json!({}))).await;
    let first = created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    let parked = poll(&rb, &first, "input_required").await;
    assert_eq!(parked["inputRequests"]["a"]["method"], "elicitation/create");
    let answers = json!({"a": {"action": "accept", "content": {"v": "x"}}, "b": {"action": "accept", "content": {"v": "y"}}});
    let update = Req::modern(2, "tasks/update")
        .params(json!({"taskId": first, "inputResponses": answers}))
        .capabilities(declaring());
    send(&rb, update).await.ok(&json!(2));
    let done = poll(&ra, &first, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "\"x\" and \"y\" (2 answers)"
    );

    let long = send(&ra, call(3, "wait", json!({"ms": 60_000}))).await;
    let id = long.ok(&json!(3))["taskId"].as_str().unwrap().to_owned();
    assert_eq!(a.running_tasks(), 1);
    send(&rb, task_method(4, "tasks/cancel", &id))
        .await
        .ok(&json!(4));
    assert_eq!(poll(&ra, &id, "cancelled").await["status"], "cancelled");
    for _ in 0..100 {
        if a.running_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        a.running_tasks(),
        0,
        "A dropped the handler of a task cancelled on B"
    );
    first
}

/// Rule (issue 18, lease): a `working` task whose replica stopped (its
/// lease no longer renewed) is seen `failed` through another replica once
/// the lease has run out, never `working` forever.
#[test]
fn a_task_whose_replica_stopped_fails_after_its_lease() {
    let limits =
        TaskLimits::default().lease(Duration::from_millis(400), Duration::from_millis(100));
    let (a, b) = replicas(limits);
    // Replica A runs on a runtime of its own, then dies with it.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let id = doomed.block_on(async {
        let created = send(&chain(a.clone()), call(1, "wait", json!({"ms": 60_000}))).await;
        created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let rb = chain(b.clone());
        // Alive: renewed past its first lease.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let alive = send(&rb, task_method(2, "tasks/get", &id)).await;
        assert_eq!(alive.ok(&json!(2))["status"], "working");
    });
    doomed.shutdown_timeout(Duration::from_secs(1));
    runtime.block_on(async {
        let rb = chain(b);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let dead = send(&rb, task_method(3, "tasks/get", &id)).await;
        let dead = dead.ok(&json!(3));
        assert_eq!(dead["status"], "failed", "{dead}");
        assert_eq!(dead["error"]["code"], -32603);
        assert!(dead["error"]["message"].as_str().unwrap().contains("lease"));
    });
}

/// Rule (SEP-2663 §routing headers, SEP-2243): a task method's `Mcp-Name`
/// is bound to `params.taskId`: a mismatch or a missing one is refused by
/// HeaderBinding, 400/-32020.
#[tokio::test]
async fn a_task_methods_mcp_name_is_bound_to_its_task_id() {
    let (server, _) = server();
    let router = chain(server);
    let id = "0123456789abcdef0123456789abcdef";
    let wrong = task_method(1, "tasks/get", id).set("Mcp-Name", "another");
    let reply = send(&router, wrong).await;
    reply.rejected("HeaderBinding", 400, -32020, &json!(1));
    let missing = task_method(2, "tasks/cancel", id).without("Mcp-Name");
    send(&router, missing)
        .await
        .rejected("HeaderBinding", 400, -32020, &json!(2));
}

/// What a [`Faulty`] store does wrong.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Every load finds bytes that are not a task.
    Garbage,
    /// Every replace loses its compare-and-set.
    Contended,
}

/// A memory store that stores and then misbehaves on purpose.
#[derive(Debug)]
struct Faulty(MemoryTaskStore, Fault);

impl TaskStore for Faulty {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        self.0.insert(entry)
    }
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        let fault = self.1;
        Box::pin(async move {
            let found = self.0.load(id).await?;
            Ok(match fault {
                Fault::Garbage => found.map(|e| TaskEntry {
                    data: b"not a task".to_vec(),
                    ..e
                }),
                Fault::Contended => found,
            })
        })
    }
    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        match self.1 {
            Fault::Contended => Box::pin(async { Ok(false) }),
            Fault::Garbage => self.0.replace(entry),
        }
    }
}

/// Rule (issue 18, every rejection arm): a `taskId` that is missing or not
/// a string is 400/-32602; a full store is 503/-32603 with `Retry-After`
/// and `data.limit: "max_stored"` (issue 23: never a 500); a stored task that does not parse
/// and a write that loses every compare-and-set are 500/-32603. Each is
/// one JSON-RPC error with the request's id, as JSON, and no task.
#[tokio::test]
async fn the_rarer_task_rejections_each_answer_as_documented() {
    let (server, _) = server();
    let router = chain(server);
    for (id, params) in [
        (1, json!({})),
        (2, json!({"taskId": 7})),
        (3, json!({"taskId": null})),
    ] {
        // No string to bind, so no Mcp-Name: the surface answers.
        let req = Req::modern(id, "tasks/get")
            .params(params.clone())
            .capabilities(declaring());
        let reply = send(&router, req).await;
        let error = reply.error(StatusCode::BAD_REQUEST, -32602, &json!(id));
        assert_eq!(error["message"], "`taskId` must be a string", "{params}");
    }

    // A full store is never a 500 (issue 23): the cap is 503, -32603,
    // `Retry-After`, whether the ledger or the store itself says so.
    let capped = chain(
        task_tools(
            Server::builder().task_limits(TaskLimits::default().max_stored(1)),
            Arc::default(),
        )
        .build()
        .unwrap(),
    );
    let own = Arc::new(MemoryTaskStore::new(1));
    let full_store = chain(
        task_tools(Server::builder().task_store(own.clone()), Arc::default())
            .build()
            .unwrap(),
    );
    for full in [capped, full_store] {
        send(&full, call(10, "wait", json!({"ms": 60_000})))
            .await
            .ok(&json!(10));
        let over = send(&full, call(11, "wait", json!({"ms": 60_000}))).await;
        let error = over.error(StatusCode::SERVICE_UNAVAILABLE, -32603, &json!(11));
        assert_eq!(error["data"]["limit"], "max_stored");
        assert!(over.header("retry-after").parse::<u64>().unwrap() >= 1);
    }
    assert_eq!(own.len(), 1);

    for (n, fault, method) in [
        (20, Fault::Garbage, "tasks/get"),
        (30, Fault::Contended, "tasks/cancel"),
    ] {
        let builder = Server::builder().task_store(Faulty(MemoryTaskStore::new(10), fault));
        let router = chain(task_tools(builder, Arc::default()).build().unwrap());
        let created = send(&router, call(n, "wait", json!({"ms": 60_000}))).await;
        let task = created.ok(&json!(n))["taskId"].as_str().unwrap().to_owned();
        let reply = send(&router, task_method(n + 1, method, &task)).await;
        let error = reply.error(StatusCode::INTERNAL_SERVER_ERROR, -32603, &json!(n + 1));
        assert!(error.get("data").is_none() || error["data"].get("limit").is_none());
        assert!(
            reply.body.get("result").is_none() && !reply.raw.is_empty(),
            "{fault:?}"
        );
    }
}

/// A declaring client's call of `wait` from `address`, with no auth.
async fn anonymous_call(
    router: &wymcp::axum::Router,
    id: u64,
    address: [u8; 4],
) -> crate::support::Reply {
    anonymous_wait(router, id, address, 60_000).await
}

/// A declaring client's call of `wait` for `ms` from `address`, no auth.
pub(crate) async fn anonymous_wait(
    router: &wymcp::axum::Router,
    id: u64,
    address: [u8; 4],
    ms: u64,
) -> crate::support::Reply {
    let mut request = call(id, "wait", json!({"ms": ms})).build();
    request
        .extensions_mut()
        .insert(wymcp::ClientAddr(std::net::IpAddr::from(address)));
    crate::support::answered(async move {
        use tower::ServiceExt as _;
        let Ok(response) = router.clone().oneshot(request).await;
        response
    })
    .await
}

/// Rule (issue 18, limits): without auth, running tasks are counted per
/// client address, as listen streams are: one anonymous client at its
/// limit is 429/-32600 with `Retry-After`, another address is served
/// (the subject, `""` for every anonymous caller, is not the count's key).
#[tokio::test]
async fn anonymous_callers_are_counted_by_their_address() {
    let builder = Server::builder().task_limits(TaskLimits::default().max_running_per_caller(1));
    let router = chain(task_tools(builder, Arc::default()).build().unwrap());
    anonymous_call(&router, 1, [192, 0, 2, 1])
        .await
        .ok(&json!(1));
    let again = anonymous_call(&router, 2, [192, 0, 2, 1]).await;
    let error = again.error(StatusCode::TOO_MANY_REQUESTS, -32600, &json!(2));
    assert_eq!(error["data"]["limit"], "max_running_per_caller");
    assert!(again.header("retry-after").parse::<u64>().unwrap() >= 1);
    anonymous_call(&router, 3, [192, 0, 2, 2])
        .await
        .ok(&json!(3));
}

/// Rule (issue 17 with issue 18): a task-capable tool's scopes are checked
/// before a task is made: a caller without them is 403/-32600 with the
/// `insufficient_scope` challenge and no task (nothing runs); a caller
/// holding them gets its task.
#[tokio::test]
async fn a_task_capable_tools_scopes_are_checked_before_the_task_is_made() {
    let tokens = BearerAuth::new(|token: String| async move {
        let scopes: Vec<String> = if token == "writer" {
            vec!["jobs:run".to_owned()]
        } else {
            vec![]
        };
        Ok(Principal::new(token, scopes))
    });
    let server = Server::builder()
        .auth(tokens, AuthConfig::new())
        .tool(
            Tool::new("job")
                .scopes(["jobs:run"])
                .task_support(TaskSupport::Required)
                .handler(|_: NoArgs, _| async { Ok(ToolResult::text("ran")) }),
        )
        .build()
        .unwrap();
    let server = Arc::new(server);
    let router = chain(server.clone());
    let refused = send(&router, call(1, "job", json!({})).bearer("reader")).await;
    let error = refused.error(StatusCode::FORBIDDEN, -32600, &json!(1));
    assert_eq!(error["data"]["requiredScopes"], json!(["jobs:run"]));
    assert!(
        refused
            .header("www-authenticate")
            .contains("error=\"insufficient_scope\""),
        "{refused:?}"
    );
    assert_eq!(server.running_tasks(), 0, "no task was made");
    let created = send(&router, call(2, "job", json!({})).bearer("writer")).await;
    let task = created.ok(&json!(2))["taskId"].as_str().unwrap().to_owned();
    let done = send(&router, task_method(3, "tasks/get", &task).bearer("writer")).await;
    assert_ne!(done.ok(&json!(3))["status"], Value::Null);
}

/// Rule (issue 23, item 1): stored task records are counted per caller for
/// as long as they are stored, finished ones included: a caller whose
/// tasks all finished but whose records are kept is at its share,
/// 429/-32600 with `Retry-After` and `data.limit: "max_stored_per_caller"`,
/// while another caller still creates tasks.
#[tokio::test]
async fn one_caller_fills_its_stored_share_and_gets_429_while_another_creates() {
    let limits = TaskLimits::default()
        .max_stored_per_caller(3)
        .max_running_per_caller(16);
    let server = Arc::new(
        task_tools(Server::builder().task_limits(limits), Arc::default())
            .build()
            .unwrap(),
    );
    let router = chain(server.clone());
    let hog = [192, 0, 2, 1];
    for id in 1..=3 {
        let created = anonymous_wait(&router, id, hog, 1).await;
        created.ok(&json!(id));
    }
    // Every one finished: nothing runs, the records are kept.
    for _ in 0..100 {
        if server.running_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.running_tasks(), 0);
    let over = anonymous_wait(&router, 4, hog, 1).await;
    let error = over.error(StatusCode::TOO_MANY_REQUESTS, -32600, &json!(4));
    assert_eq!(error["data"]["limit"], "max_stored_per_caller");
    assert_eq!(error["data"]["max"], 3);
    assert!(over.header("retry-after").parse::<u64>().unwrap() >= 1);
    anonymous_wait(&router, 5, [192, 0, 2, 2], 1)
        .await
        .ok(&json!(5));
    assert_eq!(server.ledger().held(Kind::StoredTasks), 4);
}

/// Rule (issue 23, item 1): a record's place is given back when the record
/// expires, by the sweep timer, with no task created after it; the caller
/// may then create again.
#[tokio::test]
async fn an_expired_records_place_is_given_back_by_the_timer() {
    let limits = TaskLimits::default()
        .ttl(Duration::from_millis(150))
        .sweep_interval(Duration::from_millis(25))
        .max_stored_per_caller(1);
    let server = Arc::new(
        task_tools(Server::builder().task_limits(limits), Arc::default())
            .build()
            .unwrap(),
    );
    let router = chain(server.clone());
    let me = [192, 0, 2, 7];
    anonymous_wait(&router, 1, me, 1).await.ok(&json!(1));
    assert_eq!(server.ledger().held(Kind::StoredTasks), 1);
    let mut given_back = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if server.ledger().held(Kind::StoredTasks) == 0 {
            given_back = true;
            break;
        }
    }
    assert!(given_back, "the expired record's place is still held");
    anonymous_wait(&router, 2, me, 1).await.ok(&json!(2));
}

/// A memory store that can be made unreachable, and counts its failures.
#[derive(Debug)]
struct Flaky {
    inner: Arc<MemoryTaskStore>,
    down: Arc<AtomicBool>,
    failures: Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for Flaky {
    fn default() -> Self {
        Flaky {
            inner: Arc::new(MemoryTaskStore::new(100)),
            down: Arc::default(),
            failures: Arc::default(),
        }
    }
}

impl Flaky {
    fn fail<T: Send + 'static>(&self) -> Option<StoreFuture<'static, T>> {
        if !self.down.load(Ordering::SeqCst) {
            return None;
        }
        self.failures.fetch_add(1, Ordering::SeqCst);
        Some(Box::pin(async {
            Err(TaskStoreError::Unavailable("stalled".into()))
        }))
    }
}

impl TaskStore for Flaky {
    fn insert(&self, entry: TaskEntry) -> StoreFuture<'_, ()> {
        self.fail().unwrap_or_else(|| self.inner.insert(entry))
    }
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskEntry>> {
        self.fail().unwrap_or_else(|| self.inner.load(id))
    }
    fn replace(&self, entry: TaskEntry) -> StoreFuture<'_, bool> {
        self.fail().unwrap_or_else(|| self.inner.replace(entry))
    }
}

/// Counts the warnings of one target, on every thread.
#[derive(Clone)]
struct Warnings(&'static str, Arc<std::sync::atomic::AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() == self.0 && *meta.level() == tracing::Level::WARN {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Rule (issue 23, item 8): a store stall shorter than the lease loses no
/// outcome: a task that finishes while the store cannot be reached is
/// still `completed` once it answers again (the finish write is retried
/// with a backoff until the lease ends), and the outage — every poll and
/// write that failed during it — is one warning of `wymcp::tasks`.
#[tokio::test(flavor = "current_thread")]
async fn a_store_stall_loses_no_outcome_and_warns_once() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let warnings = Warnings("wymcp::tasks", Arc::default());
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    let store = Flaky::default();
    let (down, failures) = (store.down.clone(), store.failures.clone());
    let limits = TaskLimits::default()
        .lease(Duration::from_secs(10), Duration::from_millis(100))
        .store_timeout(Duration::from_millis(200));
    let builder = Server::builder().task_store(store).task_limits(limits);
    let router = chain(task_tools(builder, Arc::default()).build().unwrap());
    let created = send(&router, call(1, "wait", json!({"ms": 200}))).await;
    let task = created.ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    // The store stalls before the handler finishes, for about 1.5 s.
    down.store(true, Ordering::SeqCst);
    for n in 0..5 {
        // Sent as is (`send` records rejections under a subscriber of its
        // own, which would hide the warnings from this one).
        use tower::ServiceExt as _;
        let request = task_method(10 + n, "tasks/get", &task).build();
        let Ok(polled) = router.clone().oneshot(request).await;
        assert_eq!(polled.status(), StatusCode::INTERNAL_SERVER_ERROR);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    down.store(false, Ordering::SeqCst);
    assert!(failures.load(Ordering::SeqCst) >= 8, "the stall was seen");
    let done = poll(&router, &task, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "waited 200 ms");
    assert_eq!(
        warnings.1.load(Ordering::SeqCst),
        1,
        "one warning for the outage, not one per failed operation"
    );
}
