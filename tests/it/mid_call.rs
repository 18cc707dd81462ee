//! A 2025-11-25 call's requests to its client, mid-call, with no session:
//! the session token minted at `initialize` (what the client declared), the
//! request sent on the call's SSE stream, the answer POSTed back and handed
//! to the waiting call, and every refusal of an answer (unknown id, late,
//! another caller's, nobody waiting) and of a session token.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::axum::Router;
use wymcp::mrtr::InputRequest;
use wymcp::{Era, LegacyRequests, NoArgs, Server, ServerBuilder, Tool, ToolResult};

use crate::support::{Reply, Req, chain, send};

/// The tools every test server serves: `ask` elicits a name, `sample`
/// asks the client's model, `roots` lists the client's roots; each answers
/// what it was told, and says so when the client could not be asked.
pub fn tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(Tool::new("ask").handler(|_: NoArgs, cx| async move {
            if let Some(content) = cx.inputs().accepted("name") {
                return Ok(ToolResult::text(format!(
                    "hello {}, round {}",
                    content["name"].as_str().unwrap_or("?"),
                    cx.inputs().round()
                )));
            }
            if let Some(answer) = cx.inputs().response("name") {
                return Ok(ToolResult::text(format!("declined: {}", answer["action"])));
            }
            match cx.input_required().request(
                "name",
                InputRequest::elicit(
                    "Name?",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                ),
            ) {
                Ok(ask) => Err(ask.into()),
                Err(_) => Ok(ToolResult::text("cannot ask")),
            }
        }))
        .tool(Tool::new("again").handler(|_: NoArgs, cx| async move {
            let round = cx.inputs().round();
            let mut seen: Vec<String> = cx
                .inputs()
                .state()
                .map(|s| {
                    String::from_utf8_lossy(s)
                        .split(' ')
                        .filter(|k| !k.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            seen.extend(cx.inputs().responses().keys().cloned());
            if seen.len() >= 3 {
                return Ok(ToolResult::text(format!("rounds: {}", seen.join(" "))));
            }
            let key = format!("r{}", round + 1);
            let ask = cx
                .input_required()
                .request(
                    key,
                    InputRequest::elicit("More?", json!({"type": "object"})),
                )?
                .state(seen.join(" ").into_bytes());
            Err(ask.into())
        }))
        .tool(Tool::new("sample").handler(|_: NoArgs, cx| async move {
            if let Some(answer) = cx.inputs().response("llm") {
                return Ok(ToolResult::text(format!(
                    "model said {}",
                    answer["content"]["text"].as_str().unwrap_or("?")
                )));
            }
            match cx
                .input_required()
                .request("llm", InputRequest::sample_text("hi", 10))
            {
                Ok(ask) => Err(ask.into()),
                Err(_) => Ok(ToolResult::text("cannot ask")),
            }
        }))
}

fn server(limits: LegacyRequests) -> Arc<Server> {
    Arc::new(
        tools(Server::builder().legacy_requests(limits))
            .build()
            .unwrap(),
    )
}

/// A server with two callers, `alice` and `bob`.
fn authenticated() -> Arc<Server> {
    authenticated_with(LegacyRequests::default())
}

/// [`authenticated`] with its mid-call limits.
fn authenticated_with(limits: LegacyRequests) -> Arc<Server> {
    let who = |subject: &str| Principal {
        subject: subject.into(),
        ..Principal::default()
    };
    let tokens = StaticTokens::new()
        .token("alice", who("alice"))
        .token("bob", who("bob"));
    Arc::new(
        tools(
            Server::builder()
                .auth(tokens, AuthConfig::new())
                .legacy_requests(limits),
        )
        .build()
        .unwrap(),
    )
}

/// A 2025 `initialize` declaring `capabilities`.
#[allow(clippy::needless_pass_by_value)] // `json!` reads it
pub fn initialize(capabilities: Value) -> Req {
    Req::legacy(1, "initialize").params(json!({
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "c", "version": "1"}
    }))
}

/// The `Mcp-Session-Id` a 2025 client declaring `capabilities` is given.
async fn session(router: &Router, capabilities: Value, token: Option<&str>) -> String {
    let mut req = initialize(capabilities);
    if let Some(token) = token {
        req = req.bearer(token);
    }
    let reply = send(router, req).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    reply.header("mcp-session-id").to_owned()
}

/// A 2025 `tools/call` of `tool` carrying `session`.
pub fn call(id: u64, tool: &str, session: &str) -> Req {
    Req::legacy(id, "tools/call")
        .params(json!({"name": tool, "arguments": {}}))
        .set("Mcp-Session-Id", session)
}

/// A call's SSE answer, read event by event while it is still open.
pub struct Stream {
    pub status: StatusCode,
    pub content_type: String,
    body: wymcp::axum::body::Body,
    buffered: Vec<u8>,
}

impl Stream {
    pub async fn open(router: &Router, req: Req) -> Stream {
        let response = router.clone().oneshot(req.build()).await.unwrap();
        let (parts, body) = response.into_parts();
        Stream {
            status: parts.status,
            content_type: parts
                .headers
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default(),
            body,
            buffered: Vec::new(),
        }
    }

    /// The next event's JSON (keep-alive comments skipped), `None` at the end.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffered.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffered.drain(..end + 2).collect();
                let text = std::str::from_utf8(&event).unwrap();
                if let Some(data) = text.trim_end().strip_prefix("data: ") {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("the stream said something in time")?;
            let data: Bytes = frame.unwrap().into_data().unwrap_or_default();
            self.buffered.extend_from_slice(&data);
        }
    }
}

/// The client's answer to the request `id`, as a 2025 client POSTs it.
#[allow(clippy::needless_pass_by_value)] // `json!` reads it
pub fn answer(id: &Value, result: Value, session: &str) -> Req {
    Req::body(json!({"jsonrpc": "2.0", "id": id, "result": result}))
        .bind(Era::Legacy)
        .set("Mcp-Session-Id", session)
}

/// Asserts `reply` is a refusal of an answer: `status`, -32600 (or
/// `code`), `id: null`, `data.reason`, answered as JSON with no session id.
#[track_caller]
pub fn refused(reply: &Reply, status: StatusCode, code: i64, reason: &str) {
    let error = reply.error(status, code, &Value::Null);
    assert_eq!(error["data"]["reason"], reason, "{error}");
    assert!(
        reply.headers.get("mcp-session-id").is_none(),
        "a refusal opens no session: {reply:?}"
    );
}

const ELICITED: fn() -> Value = || json!({"action": "accept", "content": {"name": "Ada"}});

/// Rule: a 2025 client that declared elicitation gets the request on its
/// call's SSE stream; its answer, POSTed back, is `202` with no body, and
/// the call answers on the same stream with what the handler made of it.
#[tokio::test]
async fn an_elicitation_is_asked_mid_call_and_the_call_answers_on_its_stream() {
    let router = chain(server(LegacyRequests::default()));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut stream = Stream::open(&router, call(7, "ask", &session)).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.content_type, "text/event-stream");
    let request = stream.next().await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Name?");
    let id = request["id"].clone();
    assert!(id.as_str().is_some_and(|id| id.len() > 40), "{id}");
    let accepted = send(&router, answer(&id, ELICITED(), &session)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{accepted:?}");
    assert!(accepted.raw.is_empty());
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada, round 1");
    assert!(
        stream.next().await.is_none(),
        "the stream ends with the answer"
    );
    // Answered once: the same answer again finds nobody waiting.
    let again = send(&router, answer(&id, ELICITED(), &session)).await;
    refused(&again, StatusCode::BAD_REQUEST, -32600, "no_waiter");
}

/// Rule: sampling goes the same way, the answer being a
/// `CreateMessageResult`.
#[tokio::test]
async fn sampling_is_asked_mid_call() {
    let router = chain(server(LegacyRequests::default()));
    let session = session(&router, json!({"sampling": {}}), None).await;
    let mut stream = Stream::open(&router, call(3, "sample", &session)).await;
    let request = stream.next().await.unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    let result =
        json!({"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"});
    let accepted = send(&router, answer(&request["id"], result, &session)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "model said yes");
}

/// Rule: only what the client declared at `initialize` is ever asked. A
/// client that declared nothing askable gets a token that names only its
/// GET stream (the server announces list changes), and is asked nothing
/// with it; one that declared elicitation is never sent a sampling request
/// (the handler meets its "not declared" path and answers as JSON); a
/// request with no token is served as before, nothing asked.
#[tokio::test]
async fn an_undeclared_capability_is_never_asked() {
    let router = chain(server(LegacyRequests::default()));
    let bare = session(&router, json!({}), None).await;
    let unasked = send(&router, call(3, "sample", &bare)).await;
    assert_eq!(unasked.ok(&json!(3))["content"][0]["text"], "cannot ask");
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let undeclared = send(&router, call(4, "sample", &session)).await;
    let result = undeclared.ok(&json!(4));
    assert_eq!(result["content"][0]["text"], "cannot ask");
    let tokenless = send(
        &router,
        Req::legacy(5, "tools/call").params(json!({"name": "ask", "arguments": {}})),
    )
    .await;
    assert_eq!(tokenless.ok(&json!(5))["content"][0]["text"], "cannot ask");
}

/// Rule: a session token that does not open — forged, or another
/// caller's — is `404` (2025-11-25: a session id the server does not
/// know), -32600, the request's own id (the rejection-id rule) and
/// `data.reason: "session"`.
#[tokio::test]
async fn a_session_token_that_does_not_open_is_404() {
    let router = chain(authenticated());
    let alices = session(&router, json!({"elicitation": {}}), Some("alice")).await;
    for (token, session) in [("alice", "forged"), ("bob", alices.as_str())] {
        let reply = send(&router, call(9, "ask", session).bearer(token)).await;
        let error = reply.error(StatusCode::NOT_FOUND, -32600, &json!(9));
        assert_eq!(error["data"]["reason"], "session", "{token}");
    }
    // Alice's own opens.
    let mut stream = Stream::open(&router, call(9, "ask", &alices).bearer("alice")).await;
    assert_eq!(stream.next().await.unwrap()["method"], "elicitation/create");
}

/// Rule: an answer from another caller than the call's is `403`, -32600,
/// `id: null`, `data.reason: "caller"`, and the call still waits for its
/// own caller's answer.
#[tokio::test]
async fn an_answer_from_another_caller_is_403() {
    let router = chain(authenticated());
    let alices = session(&router, json!({"elicitation": {}}), Some("alice")).await;
    let bobs = session(&router, json!({"elicitation": {}}), Some("bob")).await;
    let mut stream = Stream::open(&router, call(2, "ask", &alices).bearer("alice")).await;
    let id = stream.next().await.unwrap()["id"].clone();
    let stolen = send(&router, answer(&id, ELICITED(), &bobs).bearer("bob")).await;
    refused(&stolen, StatusCode::FORBIDDEN, -32600, "caller");
    let own = send(&router, answer(&id, ELICITED(), &alices).bearer("alice")).await;
    assert_eq!(own.status, StatusCode::ACCEPTED);
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada, round 1");
}

/// Rule: an answer whose id this server never sent (not sealed by it, or
/// not a string) is `400`, -32600, `id: null`, `data.reason: "unknown_id"`.
#[tokio::test]
async fn an_answer_to_an_unknown_id_is_400() {
    let router = chain(server(LegacyRequests::default()));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    for id in [
        json!("not-one-of-ours"),
        json!("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        let reply = send(&router, answer(&id, ELICITED(), &session)).await;
        refused(&reply, StatusCode::BAD_REQUEST, -32600, "unknown_id");
        assert_eq!(reply.rejections.len(), 1, "one rejection event");
    }
    // An integer id is no id the server sends: held to the envelope.
    let reply = send(&router, answer(&json!(5), ELICITED(), &session)).await;
    let error = reply.error(StatusCode::BAD_REQUEST, -32600, &Value::Null);
    assert_eq!(error["data"]["pointer"], "/id");
    // A 2026-07-28 POST of a response is still no message a server takes.
    let modern = send(
        &router,
        Req::body(json!({"jsonrpc": "2.0", "id": "x", "result": {}})).bind(Era::Modern),
    )
    .await;
    modern.error(StatusCode::BAD_REQUEST, -32600, &Value::Null);
}

/// Rule: a client that never answers gets the call's timeout error on its
/// stream (-32603, `data.timeoutMs`), not a hung stream; its answer after
/// the wait is `400`, -32600, `id: null`, `data.reason: "late"`.
#[tokio::test]
async fn a_late_answer_is_400_and_the_call_times_out() {
    let wait = Duration::from_millis(300);
    let router = chain(server(LegacyRequests::default().wait_timeout(wait)));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut stream = Stream::open(&router, call(6, "ask", &session)).await;
    let id = stream.next().await.unwrap()["id"].clone();
    let timed_out = stream.next().await.unwrap();
    assert_eq!(timed_out["id"], 6);
    assert_eq!(timed_out["error"]["code"], -32603, "{timed_out}");
    assert_eq!(timed_out["error"]["data"]["timeoutMs"], 300);
    let late = send(&router, answer(&id, ELICITED(), &session)).await;
    refused(&late, StatusCode::BAD_REQUEST, -32600, "late");
}

/// Rule: the requests waiting on a replica are bounded: a call that would
/// go over `max_waiting` answers -32603 with `data.limit: "max_waiting"`,
/// asking nothing.
#[tokio::test]
async fn the_waiting_requests_are_bounded() {
    let router = chain(server(LegacyRequests::default().max_waiting(1)));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut first = Stream::open(&router, call(1, "ask", &session)).await;
    assert_eq!(first.next().await.unwrap()["method"], "elicitation/create");
    // Nothing was sent before its answer: a 2025 error, as JSON, `200`.
    let second = send(&router, call(2, "ask", &session)).await;
    let over = second.error(StatusCode::OK, -32603, &json!(2));
    assert_eq!(over["data"]["limit"], "max_waiting");
    // The first call's stream closed: its request no longer waits, and the
    // next call may ask.
    drop(first);
    let mut third = Stream::open(&router, call(3, "ask", &session)).await;
    assert_eq!(third.next().await.unwrap()["method"], "elicitation/create");
}

/// Rule: one caller holds at most `max_waiting_per_caller` of the
/// waiting places: its next call answers -32600 with `data.limit:
/// "max_waiting_per_caller"`, asking nothing, while another caller still
/// asks.
#[tokio::test]
async fn one_caller_cannot_take_every_waiting_place() {
    let limits = LegacyRequests::default().max_waiting_per_caller(1);
    let router = chain(authenticated_with(limits));
    let alices = session(&router, json!({"elicitation": {}}), Some("alice")).await;
    let bobs = session(&router, json!({"elicitation": {}}), Some("bob")).await;
    let mut first = Stream::open(&router, call(1, "ask", &alices).bearer("alice")).await;
    assert_eq!(first.next().await.unwrap()["method"], "elicitation/create");
    let second = send(&router, call(2, "ask", &alices).bearer("alice")).await;
    let over = second.error(StatusCode::OK, -32600, &json!(2));
    assert_eq!(over["data"]["limit"], "max_waiting_per_caller");
    let mut bobs_call = Stream::open(&router, call(3, "ask", &bobs).bearer("bob")).await;
    assert_eq!(
        bobs_call.next().await.unwrap()["method"],
        "elicitation/create"
    );
}

/// Rule (issue 23, item 3): without auth a caller is its address grouped,
/// an IPv6 /64 one caller by default: a second address of the same /64 is
/// over the share (-32600, `data.limit: "max_waiting_per_caller"`, asking
/// nothing), while another /64 still asks.
#[tokio::test]
async fn without_auth_one_slash_64_is_one_caller_for_the_waiting_places() {
    let router = chain(server(LegacyRequests::default().max_waiting_per_caller(1)));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut first = Stream::open(
        &router,
        call(1, "ask", &session).sent_from("2001:db8:1:2::a"),
    )
    .await;
    assert_eq!(first.next().await.unwrap()["method"], "elicitation/create");
    let same_host = send(
        &router,
        call(2, "ask", &session).sent_from("2001:db8:1:2:ffff::b"),
    )
    .await;
    let over = same_host.error(StatusCode::OK, -32600, &json!(2));
    assert_eq!(over["data"]["limit"], "max_waiting_per_caller");
    let mut other =
        Stream::open(&router, call(3, "ask", &session).sent_from("2001:db8:9::1")).await;
    assert_eq!(other.next().await.unwrap()["method"], "elicitation/create");
}

/// Rule (issue 23, the ledger): at the cap, a caller under its fair share
/// still gets its places: the largest holder's oldest round gives way, and
/// its call ends on its stream with the caller-share error (its id,
/// -32600, `data.limit: "max_waiting_per_caller"`).
#[tokio::test]
async fn at_the_cap_the_largest_holders_oldest_round_gives_way() {
    let router = chain(server(LegacyRequests::default().max_waiting(2)));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut oldest = Stream::open(&router, call(1, "ask", &session).sent_from("192.0.2.1")).await;
    assert_eq!(oldest.next().await.unwrap()["method"], "elicitation/create");
    let mut newer = Stream::open(&router, call(2, "ask", &session).sent_from("192.0.2.1")).await;
    let newer_request = newer.next().await.unwrap();
    assert_eq!(newer_request["method"], "elicitation/create");
    let mut newcomer = Stream::open(&router, call(3, "ask", &session).sent_from("192.0.2.2")).await;
    assert_eq!(
        newcomer.next().await.unwrap()["method"],
        "elicitation/create"
    );
    let ended = oldest.next().await.unwrap();
    assert_eq!(ended["id"], 1);
    assert_eq!(ended["error"]["code"], -32600, "{ended}");
    assert_eq!(ended["error"]["data"]["limit"], "max_waiting_per_caller");
    // The hog's newer call still waits, and is answered.
    let own = send(
        &router,
        answer(&newer_request["id"], ELICITED(), &session).sent_from("192.0.2.1"),
    )
    .await;
    assert_eq!(own.status, StatusCode::ACCEPTED);
    assert_eq!(
        newer.next().await.unwrap()["result"]["content"][0]["text"],
        "hello Ada, round 1"
    );
}

/// Rule (issue 23, item 10): without auth, the caller a request was sent
/// to is its client's address: an answer from another address is `403`,
/// -32600, `id: null`, `data.reason: "caller"`; the call still waits for
/// its own caller's answer.
#[tokio::test]
async fn without_auth_an_answer_from_another_address_is_403() {
    let router = chain(server(LegacyRequests::default()));
    let session = session(&router, json!({"elicitation": {}}), None).await;
    let mut stream = Stream::open(&router, call(2, "ask", &session).sent_from("192.0.2.10")).await;
    let id = stream.next().await.unwrap()["id"].clone();
    let stolen = send(
        &router,
        answer(&id, ELICITED(), &session).sent_from("198.51.100.7"),
    )
    .await;
    refused(&stolen, StatusCode::FORBIDDEN, -32600, "caller");
    let own = send(
        &router,
        answer(&id, ELICITED(), &session).sent_from("192.0.2.10"),
    )
    .await;
    assert_eq!(own.status, StatusCode::ACCEPTED);
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada, round 1");
}

/// Rule: a call asks at most `max_rounds` rounds; the next is -32603 with
/// `data.limit: "max_rounds"`. Each round's answers reach the handler as
/// that round's (`again` asks a new key each round, and answers once it
/// has three).
#[tokio::test]
async fn the_rounds_of_a_call_are_bounded() {
    for (max, last) in [(3, "rounds: r1 r2 r3"), (2, "")] {
        let router = chain(server(LegacyRequests::default().max_rounds(max)));
        let session = session(&router, json!({"elicitation": {}}), None).await;
        let mut stream = Stream::open(&router, call(1, "again", &session)).await;
        for _ in 0..max {
            let request = stream.next().await.unwrap();
            assert_eq!(request["method"], "elicitation/create", "{request}");
            let accepted = send(&router, answer(&request["id"], ELICITED(), &session)).await;
            assert_eq!(accepted.status, StatusCode::ACCEPTED);
        }
        let done = stream.next().await.unwrap();
        if last.is_empty() {
            assert_eq!(done["error"]["code"], -32603, "{done}");
            assert_eq!(done["error"]["data"]["limit"], "max_rounds");
        } else {
            assert_eq!(done["result"]["content"][0]["text"], last, "{done}");
        }
    }
}
