//! Where Validate follows `schema.ts` over the generated `schema.json`
//! (`DEVIATIONS` in `protocol/schema.rs`, docs/schema.md), end to end
//! through the default chain: each message the specification allows and the
//! vendored file refuses is answered as any valid message is, and the one
//! place wymcp stays stricter than `schema.ts` (a fractional request id) is
//! still refused.

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::mrtr::InputRequest;
use wymcp::{Context, Revision, Server, ServerBuilder, Tool, ToolResult};

use crate::support::{Req, chain, send};

/// The form of the conformance tool `test_elicitation_sep1034_defaults`: a
/// default for every primitive type.
fn defaults_form() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }})
}

/// What a client answers by accepting the form's own defaults.
fn the_defaults() -> Value {
    json!({"age": 30, "name": "John Doe", "score": 95.5, "status": "active", "verified": true})
}

/// Asks for the defaults form; on the retry, answers with what was accepted.
fn defaults() -> Tool {
    Tool::new("defaults").raw_handler(|_args: Value, cx: Context| async move {
        if let Some(content) = cx.inputs().accepted("defaults") {
            return Ok(ToolResult::text(Value::Object(content.clone()).to_string()));
        }
        let ask = cx.input_required().request(
            "defaults",
            InputRequest::elicit("Defaults test", defaults_form()),
        )?;
        Err(ask.into())
    })
}

/// Asks the client's LLM; on the retry, says it was answered.
fn sampled() -> Tool {
    Tool::new("sampled").raw_handler(|_args: Value, cx: Context| async move {
        if cx.inputs().response("q").is_some() {
            return Ok(ToolResult::text("sampled"));
        }
        let ask = cx
            .input_required()
            .request("q", InputRequest::sample_text("2 + 2?", 10))?;
        Err(ask.into())
    })
}

/// Reports progress when asked to; says whether it could.
fn progress() -> Tool {
    Tool::new("progress").raw_handler(|_args: Value, cx: Context| async move {
        let sent = cx.progress(1.0, Some(1.0), None);
        Ok(ToolResult::text(format!("progress sent: {sent}")))
    })
}

fn builder() -> ServerBuilder {
    Server::builder()
        .tool(defaults())
        .tool(sampled())
        .tool(progress())
}

fn app() -> wymcp::axum::Router {
    chain(builder().build().unwrap())
}

/// A 2026 `tools/call` of `name` from a client declaring elicitation and
/// sampling.
fn call(id: i64, name: &str) -> Req {
    Req::modern(id, "tools/call")
        .capabilities(json!({"elicitation": {}, "sampling": {}}))
        .params(json!({"name": name, "arguments": {}}))
}

/// A `200` JSON answer whose result completed (no `input_required`); its
/// first text.
#[track_caller]
fn completed(reply: &crate::support::Reply, id: i64) -> String {
    assert_eq!(reply.content_type(), "application/json", "{}", reply.body);
    let result = reply.ok(&json!(id));
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_ne!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Round 1 of tool `name`: the sealed `requestState` and the key asked.
async fn first_round(app: &wymcp::axum::Router, name: &str) -> (String, String) {
    let reply = send(app, call(1, name)).await;
    let result = reply.ok(&json!(1));
    assert_eq!(result["resultType"], "input_required", "{result}");
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    (result["requestState"].as_str().unwrap().to_owned(), key)
}

// ---------------------------------------------------------------------------
// 2026-07-28

#[tokio::test]
async fn an_elicitation_accepted_with_the_servers_own_defaults_completes_the_round() {
    // ElicitResult.content: `string | number | boolean | string[]` in
    // schema.ts; the file allows no fraction (the rmcp report: 400/-32602
    // at /params/inputResponses/defaults).
    let app = app();
    let (state, key) = first_round(&app, "defaults").await;
    assert_eq!(key, "defaults");
    let retry = call(2, "defaults").params(json!({
        "inputResponses": {"defaults": {"action": "accept", "content": the_defaults()}},
        "requestState": state,
    }));
    let reply = send(&app, retry).await;
    let text = completed(&reply, 2);
    let echoed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(echoed, the_defaults());
    assert_eq!(echoed["score"], 95.5);
    assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
}

#[tokio::test]
async fn a_sampling_answer_may_link_a_resource_of_fractional_size() {
    // ResourceLink.size: `number` in schema.ts, `integer` in the file.
    let app = app();
    let (state, key) = first_round(&app, "sampled").await;
    let answer = json!({"role": "user", "model": "m", "content": {
    "type": "tool_result", "toolUseId": "t", "content": [
        {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes", "size": 1.5}
    ]}});
    let retry = call(2, "sampled").params(json!({
        "inputResponses": {key: answer},
        "requestState": state,
    }));
    let reply = send(&app, retry).await;
    assert_eq!(completed(&reply, 2), "sampled");
}

#[tokio::test]
async fn capabilities_may_carry_a_fraction_or_a_null() {
    // JSONValue: `string | number | boolean | null | …` in schema.ts; the
    // file's has neither fractions nor null.
    let capabilities = json!({
        "extensions": {"com.example/wymcp-interop": {"ratio": 0.5, "since": null}},
        "experimental": {"com.example/weights": {"w": [0.25, null, 1]}},
        "sampling": {"context": {"share": 0.75}},
    });
    let req = Req::modern(3, "tools/call")
        .capabilities(capabilities)
        .params(json!({"name": "progress", "arguments": {}}));
    let reply = send(&app(), req).await;
    assert_eq!(completed(&reply, 3), "progress sent: false");
}

#[tokio::test]
async fn a_fractional_progress_token_is_answered_without_progress() {
    // ProgressToken: `string | number` in schema.ts. The request is
    // answered; no progress is reported under a token that is not a string
    // or an integer (a receiver is not obliged to).
    let app = app();
    let req = call(4, "progress").meta(json!({"progressToken": 0.5}));
    let reply = send(&app, req).await;
    assert_eq!(completed(&reply, 4), "progress sent: false");
    // An integer token is reported on: the tool's answer tells them apart.
    let reply = send(&app, call(5, "progress").meta(json!({"progressToken": 5}))).await;
    let events = reply.events();
    assert_eq!(events[0]["method"], "notifications/progress", "{events:?}");
}

#[tokio::test]
async fn a_fractional_request_id_stays_refused() {
    // Kept stricter than schema.ts on purpose (docs/schema.md): a request
    // id is echoed, and a cancellation naming a fractional one names no
    // request this server accepted.
    let req = Req::notification("notifications/cancelled").params(json!({"requestId": 1.5}));
    let reply = send(&app(), req).await;
    reply.rejected("Validate", 400, -32602, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["pointer"], "/params/requestId");
}

// ---------------------------------------------------------------------------
// 2025-11-25 and 2025-06-18

/// A 2025 message of `revision` (its `MCP-Protocol-Version`), the body as
/// given.
fn legacy(revision: &str, body: Value) -> Req {
    Req::body(body).set("MCP-Protocol-Version", revision)
}

fn every_revision() -> wymcp::axum::Router {
    chain(
        builder()
            .revisions([
                Revision::V2025_06_18,
                Revision::V2025_11_25,
                Revision::V2026_07_28,
            ])
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn a_2025_fractional_progress_token_is_answered_without_progress() {
    let app = every_revision();
    // 2025-11-25: on a tools/call.
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "_meta": {"progressToken": 0.5}}});
    let reply = send(&app, legacy("2025-11-25", call)).await;
    assert_eq!(reply.content_type(), "application/json", "{}", reply.body);
    let result = reply.ok(&json!(6));
    assert_eq!(
        result["content"][0]["text"], "progress sent: false",
        "{result}"
    );
    // 2025-06-18 describes `_meta` on ping alone.
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping",
                      "params": {"_meta": {"progressToken": 0.5}}});
    let reply = send(&app, legacy("2025-06-18", ping)).await;
    assert_eq!(reply.ok(&json!(7)), &json!({}));
    // A client's own progress notification, in either revision.
    for revision in ["2025-11-25", "2025-06-18"] {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": 0.5, "progress": 1}});
        let reply = send(&app, legacy(revision, progress)).await;
        assert_eq!(
            reply.status,
            StatusCode::ACCEPTED,
            "{revision}: {}",
            reply.body
        );
        assert!(
            reply.rejections.is_empty(),
            "{revision}: {:?}",
            reply.rejections
        );
    }
}

#[tokio::test]
async fn a_2025_task_may_last_a_fractional_number_of_milliseconds() {
    // TaskMetadata.ttl, Task.ttl, Task.pollInterval: `number` in
    // schema.ts. wymcp implements no tasks: the call is answered as a plain
    // call, the status notification accepted and ignored.
    let app = every_revision();
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "task": {"ttl": 1500.5}}});
    let reply = send(&app, legacy("2025-11-25", call)).await;
    let result = reply.ok(&json!(8));
    assert_eq!(
        result["content"][0]["text"], "progress sent: false",
        "{result}"
    );
    for (ttl, poll) in [(json!(60_000.5), json!(250)), (Value::Null, json!(250.5))] {
        let status = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {
            "taskId": "t", "status": "working", "ttl": ttl, "pollInterval": poll,
            "createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z"}});
        let reply = send(&app, legacy("2025-11-25", status)).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.body);
        assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
    }
}
