//! `Validate`, the chain's eighth stage, driven directly: the exchange is set
//! up as the earlier stages leave it (parsed message, classification's kind,
//! era, maybe a revision), and each row pins what Validate answers — status,
//! JSON-RPC code, the echoed id, data and headers — or that it lets the
//! message through to Dispatch.
//!
//! The last section sends whole requests through the default chain
//! (`wymcp::chain::post::router`), with every wire check satisfied, and pins
//! that Validate answers them with exactly one rejection event.

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::stages::Validate;
use wymcp::{Era, Exchange, Flow, MessageKind, Revision, Server, Stage};

use crate::support::{Reply, Req, answered, chain, meta, send};

/// What Validate did with one exchange: its answer, or `None` when it let
/// the message through.
type Outcome = Option<Reply>;

/// The state of an exchange as the stages before Validate leave it.
struct Setup {
    message: Value,
    kind: MessageKind,
    era: Era,
    revision: Option<Revision>,
    headers: Vec<(&'static str, &'static str)>,
}

fn setup(kind: MessageKind, message: Value) -> Setup {
    Setup {
        message,
        kind,
        era: Era::Modern,
        revision: Some(Revision::V2026_07_28),
        headers: Vec::new(),
    }
}

impl Setup {
    fn legacy(mut self) -> Self {
        self.era = Era::Legacy;
        self.revision = None;
        self
    }

    fn revision(mut self, revision: Option<Revision>) -> Self {
        self.revision = revision;
        self
    }

    fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }

    async fn run(self) -> Outcome {
        let server = Server::builder().build().expect("default server builds");
        let request = self
            .headers
            .iter()
            .fold(Req::raw(Vec::new()), |req, (name, value)| {
                req.header(name, value)
            });
        let mut ex = Exchange::new(&server, request.build());
        wymcp::fuzzing::set_facts(
            &mut ex,
            bytes::Bytes::new(),
            Some(self.message),
            Some(self.kind),
            self.era,
            self.revision,
        );
        match Validate::run(&mut ex).await {
            Flow::Continue => None,
            Flow::Answer(response) => Some(answered(async { response }).await),
        }
    }
}

/// Asserts a rejection: a `400` JSON-RPC error with this code and echoed
/// id, `data.pointer`, and that the only header is `Content-Type:
/// application/json` (no `Connection: close`, nothing else). Returns the
/// error object for further checks.
#[track_caller]
fn assert_rejected(outcome: &Outcome, code: i64, id: &Value, pointer: &str) -> Value {
    let Some(reply) = outcome else {
        panic!("expected a rejection, Validate let the message through");
    };
    let error = reply.error(StatusCode::BAD_REQUEST, code, id);
    assert_eq!(
        reply.headers.len(),
        1,
        "only Content-Type: {:?}",
        reply.headers
    );
    assert_eq!(error["data"]["pointer"], pointer, "{}", reply.body);
    error.clone()
}

#[track_caller]
fn assert_continues(outcome: &Outcome) {
    assert!(
        outcome.is_none(),
        "expected Validate to let the message through, got {outcome:?}"
    );
}

const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

fn call(id: &Value, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

// ---------------------------------------------------------------------------
// Kinds Validate refuses before any schema: unknown and unidentified_request.

#[tokio::test]
async fn unknown_kinds_are_invalid_requests_with_a_null_id() {
    let rows: &[(Value, &str, &str)] = &[
        (
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            "response cannot be sent to a server",
            "",
        ),
        (
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -1, "message": "no"}}),
            "response cannot be sent to a server",
            "",
        ),
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
            "batch cannot be sent to a server",
            "",
        ),
        (json!([]), "batch cannot be sent to a server", ""),
        (
            json!(42),
            "must be a JSON-RPC request or notification object",
            "",
        ),
        (
            json!("tools/call"),
            "must be a JSON-RPC request or notification object",
            "",
        ),
        (
            Value::Null,
            "must be a JSON-RPC request or notification object",
            "",
        ),
        (
            json!(true),
            "must be a JSON-RPC request or notification object",
            "",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1}),
            "has no method",
            "/method",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
            "method must be a string",
            "/method",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": null}),
            "method must be a string",
            "/method",
        ),
    ];
    for (message, says, pointer) in rows {
        let outcome = setup(MessageKind::Unknown, message.clone()).run().await;
        let error = assert_rejected(&outcome, INVALID_REQUEST, &Value::Null, pointer);
        let text = error["message"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{message}: {text}");
    }
}

#[tokio::test]
async fn unidentified_requests_are_invalid_requests_that_never_echo_their_id() {
    let ids = [
        Value::Null,
        json!(1.5),
        // Beyond u64: serde_json holds it only as a float.
        serde_json::from_str::<Value>("18446744073709551616").expect("a number"),
        json!(true),
        json!({"n": 1}),
        json!([1]),
    ];
    for id in ids {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta()}});
        let outcome = setup(MessageKind::UnidentifiedRequest, message).run().await;
        let error = assert_rejected(&outcome, INVALID_REQUEST, &Value::Null, "/id");
        let text = error["message"].as_str().unwrap_or_default();
        assert!(
            text.contains("id must be a string or an integer"),
            "{id}: {text}"
        );
    }
}

// ---------------------------------------------------------------------------
// The envelope: -32600, keeping a request's id.

#[tokio::test]
async fn jsonrpc_1_0_with_a_string_id_is_an_invalid_request_that_keeps_its_id() {
    let message =
        json!({"jsonrpc": "1.0", "id": "abc", "method": "tools/list", "params": {"_meta": meta()}});
    let outcome = setup(MessageKind::Request, message).run().await;
    let error = assert_rejected(&outcome, INVALID_REQUEST, &json!("abc"), "/jsonrpc");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"2.0\"")
    );
}

#[tokio::test]
async fn a_missing_jsonrpc_is_an_invalid_request_even_for_an_unknown_method() {
    let message = json!({"id": 7, "method": "foo/bar"});
    let outcome = setup(MessageKind::Request, message).run().await;
    assert_rejected(&outcome, INVALID_REQUEST, &json!(7), "/jsonrpc");
}

#[tokio::test]
async fn a_notification_method_sent_with_an_id_is_an_invalid_request() {
    let message = json!({"jsonrpc": "2.0", "id": 3, "method": "notifications/initialized"});
    let outcome = setup(MessageKind::Request, message).legacy().run().await;
    let error = assert_rejected(&outcome, INVALID_REQUEST, &json!(3), "/id");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is a notification")
    );
}

#[tokio::test]
async fn a_request_method_sent_without_an_id_is_an_invalid_request_with_a_null_id() {
    let message =
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"_meta": meta(), "name": "x"}});
    let outcome = setup(MessageKind::Notification, message).run().await;
    let error = assert_rejected(&outcome, INVALID_REQUEST, &Value::Null, "/id");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is a request")
    );
}

// ---------------------------------------------------------------------------
// Schema failures inside params: -32602, naming the failing pointer.

#[tokio::test]
async fn schema_failures_in_params_are_invalid_params_naming_the_pointer() {
    let rows: &[(Value, &str, &str)] = &[
        (json!({"_meta": meta()}), "/params/name", "required"),
        (json!({"_meta": meta(), "name": 7}), "/params/name", "type"),
        (
            json!({"_meta": meta(), "name": "x", "arguments": []}),
            "/params/arguments",
            "type",
        ),
        (json!({"name": "x"}), "/params/_meta", "required"),
        (
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}, "name": "x"}),
            "/params/_meta/io.modelcontextprotocol~1protocolVersion",
            "required",
        ),
        (json!("x"), "/params", "type"),
    ];
    for (params, pointer, keyword) in rows {
        let outcome = setup(MessageKind::Request, call(&json!(11), params))
            .run()
            .await;
        let error = assert_rejected(&outcome, INVALID_PARAMS, &json!(11), pointer);
        assert_eq!(error["data"]["keyword"], *keyword, "{params}");
        let text = error["message"].as_str().unwrap_or_default();
        assert!(text.starts_with("invalid params: "), "{text}");
        assert!(text.contains(pointer), "{text}");
    }
}

#[tokio::test]
async fn missing_params_are_invalid_params_at_params() {
    let message = json!({"jsonrpc": "2.0", "id": "q", "method": "tools/call"});
    let outcome = setup(MessageKind::Request, message).run().await;
    let error = assert_rejected(&outcome, INVALID_PARAMS, &json!("q"), "/params");
    assert_eq!(error["data"]["keyword"], "required");
}

#[tokio::test]
async fn a_schema_failure_never_echoes_a_huge_value() {
    let huge = "x".repeat(1_000_000);
    let params = json!({"_meta": meta(), "name": [huge]});
    let outcome = setup(MessageKind::Request, call(&json!(1), &params))
        .run()
        .await;
    let error = assert_rejected(&outcome, INVALID_PARAMS, &json!(1), "/params/name");
    assert!(error.to_string().len() < 500, "{error}");
}

// ---------------------------------------------------------------------------
// What passes to Dispatch.

#[tokio::test]
async fn valid_requests_and_notifications_pass_to_the_next_stage() {
    let call = call(
        &json!(1),
        &json!({"_meta": meta(), "name": "echo", "arguments": {"x": 1}}),
    );
    assert_continues(&setup(MessageKind::Request, call).run().await);
    let string_id = json!({"jsonrpc": "2.0", "id": "s", "method": "tools/list", "params": {"_meta": meta(), "cursor": "c"}});
    assert_continues(&setup(MessageKind::Request, string_id).run().await);
    let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta()}});
    assert_continues(&setup(MessageKind::Request, discover).run().await);
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_continues(&setup(MessageKind::Notification, cancelled).run().await);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_continues(
        &setup(MessageKind::Notification, initialized)
            .legacy()
            .run()
            .await,
    );
}

#[tokio::test]
async fn methods_the_revision_does_not_define_pass_to_dispatch_whatever_their_params() {
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "sampling/createMessage",
        "foo/bar",
    ] {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": 5});
        assert_continues(&setup(MessageKind::Request, message).run().await);
    }
    let notification =
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": 5});
    assert_continues(&setup(MessageKind::Notification, notification).run().await);
}

// ---------------------------------------------------------------------------
// Which revision's schema.

#[tokio::test]
async fn a_legacy_request_without_a_header_is_held_to_the_2025_11_25_schema() {
    // `ping` is a 2025-11-25 method (PingRequest), absent from 2026-07-28.
    let bad_ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": 5});
    let outcome = setup(MessageKind::Request, bad_ping.clone())
        .legacy()
        .run()
        .await;
    assert_rejected(&outcome, INVALID_PARAMS, &json!(2), "/params");
    let good_ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_continues(&setup(MessageKind::Request, good_ping).legacy().run().await);

    // A header-less `initialize` is judged by 2025-11-25's InitializeRequest.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
    }});
    assert_continues(&setup(MessageKind::Request, initialize).legacy().run().await);
    let no_client_info = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}
    }});
    let outcome = setup(MessageKind::Request, no_client_info)
        .legacy()
        .run()
        .await;
    assert_rejected(&outcome, INVALID_PARAMS, &json!(1), "/params/clientInfo");

    // tasks/get exists in 2025-11-25 and requires params.taskId.
    let tasks = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {}});
    let outcome = setup(MessageKind::Request, tasks.clone())
        .legacy()
        .run()
        .await;
    assert_rejected(&outcome, INVALID_PARAMS, &json!(4), "/params/taskId");
}

#[tokio::test]
async fn a_legacy_header_selects_its_own_revision() {
    // tasks/get is not a 2025-06-18 method: with that header it passes to Dispatch.
    let tasks = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {}});
    let outcome = setup(MessageKind::Request, tasks)
        .legacy()
        .header("mcp-protocol-version", "2025-06-18")
        .run()
        .await;
    assert_continues(&outcome);
}

#[tokio::test]
async fn the_revision_protocol_fields_established_wins() {
    // With the revision 2025-11-25, `ping` is a defined method (its bad params
    // are refused); on 2026-07-28 it passes to Dispatch.
    let bad_ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": 5});
    let outcome = setup(MessageKind::Request, bad_ping.clone())
        .revision(Some(Revision::V2025_11_25))
        .header("mcp-protocol-version", "2026-07-28")
        .run()
        .await;
    assert_rejected(&outcome, INVALID_PARAMS, &json!(2), "/params");
    let outcome = setup(MessageKind::Request, bad_ping).run().await;
    assert_continues(&outcome);
}

#[tokio::test]
async fn a_modern_message_without_an_established_revision_uses_the_2026_schema() {
    // A modern notification: ProtocolFields established no revision.
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}});
    let outcome = setup(MessageKind::Notification, cancelled)
        .revision(None)
        .run()
        .await;
    assert_rejected(&outcome, INVALID_PARAMS, &Value::Null, "/params/requestId");
}

// ---------------------------------------------------------------------------
// Through the default chain: every wire check passes, Validate answers, and
// it records exactly one rejection event (stage, status, code).

async fn through_chain(req: Req) -> Reply {
    send(&chain(Server::builder().build().unwrap()), req).await
}

#[tokio::test]
async fn end_to_end_unknown_and_unidentified_kinds_meet_validate_in_either_era() {
    let bodies = [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}),
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
        json!(42),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": {"_meta": meta()}}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {"_meta": meta()}}),
        json!({"jsonrpc": "2.0", "id": false, "method": "tools/list", "params": {"_meta": meta()}}),
    ];
    for body in &bodies {
        // No protocol header: the legacy era.
        let reply = through_chain(Req::body(body.clone())).await;
        reply.rejected("Validate", 400, INVALID_REQUEST, &Value::Null);
        // With the 2026 header: the modern era.
        let req = Req::body(body.clone()).header("MCP-Protocol-Version", "2026-07-28");
        let reply = through_chain(req).await;
        reply.rejected("Validate", 400, INVALID_REQUEST, &Value::Null);
    }
    // An integer beyond u64 is no request id.
    let text = r#"{"jsonrpc": "2.0", "id": 18446744073709551616, "method": "ping"}"#;
    let reply = through_chain(Req::raw(text)).await;
    reply.rejected("Validate", 400, INVALID_REQUEST, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["pointer"], "/id");
}

#[tokio::test]
async fn end_to_end_jsonrpc_1_0_keeps_its_string_id() {
    let body =
        json!({"jsonrpc": "1.0", "id": "abc", "method": "tools/list", "params": {"_meta": meta()}});
    let reply = through_chain(Req::body(body).bind(Era::Modern)).await;
    reply.rejected("Validate", 400, INVALID_REQUEST, &json!("abc"));
    assert_eq!(reply.body["error"]["data"]["pointer"], "/jsonrpc");
}

#[tokio::test]
async fn end_to_end_a_params_failure_is_invalid_params_naming_the_pointer() {
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"_meta": meta()}});
    let reply = through_chain(Req::body(body).bind(Era::Modern)).await;
    reply.rejected("Validate", 400, INVALID_PARAMS, &json!(9));
    assert_eq!(reply.body["error"]["data"]["pointer"], "/params/name");
    assert_eq!(reply.body["error"]["data"]["keyword"], "required");
}

#[tokio::test]
async fn end_to_end_a_header_less_initialize_is_held_to_the_2025_11_25_schema() {
    let invalid = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}
    }});
    let reply = through_chain(Req::body(invalid)).await;
    reply.rejected("Validate", 400, INVALID_PARAMS, &json!(1));
    assert_eq!(reply.body["error"]["data"]["pointer"], "/params/clientInfo");

    let valid = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
    }});
    let reply = through_chain(Req::body(valid)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(reply.body["result"].is_object(), "{}", reply.body);
    assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
}

#[tokio::test]
async fn end_to_end_valid_messages_reach_dispatch() {
    // A notification: Validate passes it, Dispatch accepts it.
    let body =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let reply = through_chain(Req::body(body).header("MCP-Protocol-Version", "2026-07-28")).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.body);
    assert!(reply.raw.is_empty(), "{:?}", reply.raw);
    assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
    // A removed method: Validate passes it, Dispatch answers 404/-32601.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta()}});
    let reply = through_chain(Req::body(body).bind(Era::Modern)).await;
    reply.rejected("Dispatch", 404, -32601, &json!(3));
}
