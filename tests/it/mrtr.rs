//! MRTR end to end, through the default chain: an `input_required` round on a
//! `tools/call` and its retry, every way a `requestState` is refused
//! (-32602), and the client-capability rules (-32021).

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::Principal;
use wymcp::auth::{AuthConfig, AuthError, BearerAuth};
use wymcp::mrtr::{InputKind, InputRequest, SealingKey};
use wymcp::{
    Context, HandlerError, NoArgs, Prompt, PromptResult, Server, ServerBuilder, Tool, ToolResult,
};

use crate::support::{Reply, Req, chain, send};

/// Asks for the user's name (an elicitation) with state `round-1`; on a
/// retry that answers it and carries the state back, greets.
fn greet() -> Tool {
    Tool::new("greet").raw_handler(|_args: Value, cx: Context| async move {
        let inputs = cx.inputs();
        if let (Some(content), Some(state)) = (inputs.accepted("user_name"), inputs.state()) {
            let name = content.get("name").and_then(Value::as_str).unwrap_or("?");
            let state = String::from_utf8_lossy(state);
            return Ok(ToolResult::text(format!("Hello, {name}! (state {state})")));
        }
        let ask = cx
            .input_required()
            .request(
                "user_name",
                InputRequest::elicit(
                    "What is your name?",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                ),
            )?
            .state(b"round-1".to_vec());
        Err(ask.into())
    })
}

/// Cannot proceed without sampling.
fn needs_sampling() -> Tool {
    Tool::new("needs_sampling").raw_handler(|_args: Value, cx: Context| async move {
        cx.inputs().require(&[InputKind::Sampling])?;
        Ok(ToolResult::text("sampled"))
    })
}

/// Asks for sampling whatever the client declared.
fn asks_sampling() -> Tool {
    Tool::new("asks_sampling").raw_handler(|_args: Value, cx: Context| async move {
        let ask = cx
            .input_required()
            .request("q", InputRequest::sample_text("2 + 2?", 10))?;
        Err(HandlerError::from(ask))
    })
}

/// Asks for a URL-mode elicitation.
fn asks_url() -> Tool {
    Tool::new("asks_url").raw_handler(|_args: Value, cx: Context| async move {
        let ask = cx.input_required().request(
            "consent",
            InputRequest::elicitation(json!({
                "mode": "url",
                "message": "Sign in",
                "url": "https://example.com/consent",
                "elicitationId": "e-1",
            })),
        )?;
        Err(HandlerError::from(ask))
    })
}

fn builder() -> ServerBuilder {
    Server::builder()
        .tool(greet())
        .tool(asks_url())
        .tool(needs_sampling())
        .tool(asks_sampling())
        .prompt(
            Prompt::new("greet")
                .handler(|_: NoArgs, _cx| async move { Ok(PromptResult::new().user("hi")) }),
        )
}

fn key(id: &str, byte: u8) -> SealingKey {
    SealingKey::new(id, vec![byte; 32]).unwrap()
}

/// A `tools/call` (or another `method`) of `name` with `arguments`, from a
/// client declaring every input kind.
fn call(id: impl Into<Value>, method: &str, name: &str, arguments: &Value) -> Req {
    Req::modern(id, method)
        .capabilities(json!({"elicitation": {}, "sampling": {}, "roots": {}}))
        .params(json!({"name": name, "arguments": arguments}))
}

/// Round 1 of `greet` on `server`: the sealed state.
async fn first_round(app: &wymcp::axum::Router, bearer: Option<&str>, arguments: &Value) -> String {
    let id = json!("round-1");
    let mut req = call(id.clone(), "tools/call", "greet", arguments);
    if let Some(token) = bearer {
        req = req.bearer(token);
    }
    let reply = send(app, req).await;
    let result = reply.ok(&id);
    assert_eq!(result["resultType"], "input_required", "{result}");
    result["requestState"].as_str().unwrap().to_owned()
}

/// 400/-32602 with the id, refused for its `requestState` (not some other
/// invalid param).
fn refused_state(reply: &Reply, id: &Value) {
    let error = reply.error(StatusCode::BAD_REQUEST, -32602, id);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("requestState"), "{error}");
}

/// The retry of `greet` (by `method`): the answer and the state.
fn retry(id: &Value, method: &str, state: &str, arguments: &Value) -> Req {
    call(id.clone(), method, "greet", arguments).params(json!({
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    }))
}

#[tokio::test]
async fn an_input_required_round_then_the_retry_completes() {
    let app = chain(builder().build().unwrap());
    let id = json!(1);
    let reply = send(&app, call(id.clone(), "tools/call", "greet", &json!({}))).await;
    let result = reply.ok(&id);
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["user_name"],
        json!({"method": "elicitation/create", "params": {
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
    );
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    let state = result["requestState"].as_str().unwrap();
    assert!(
        !state.contains("round-1"),
        "the state travels sealed, not as given"
    );

    // The retry: a new id, the original params, the answers and the state.
    let id = json!("retry");
    let reply = send(&app, retry(&id, "tools/call", state, &json!({}))).await;
    let result = reply.ok(&id);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "Hello, Ada! (state round-1)");
}

#[tokio::test]
async fn a_tampered_state_is_invalid_params() {
    let app = chain(builder().build().unwrap());
    let state = first_round(&app, None, &json!({})).await;
    let mut flipped: Vec<char> = state.chars().collect();
    let middle = flipped.len() / 2;
    flipped[middle] = if flipped[middle] == 'A' { 'B' } else { 'A' };
    let flipped: String = flipped.into_iter().collect();
    for (i, bad) in [
        format!("{state}-TAMPERED"),
        flipped,
        "garbage".to_owned(),
        String::new(),
    ]
    .iter()
    .enumerate()
    {
        let id = json!(100 + i);
        let reply = send(&app, retry(&id, "tools/call", bad, &json!({}))).await;
        refused_state(&reply, &id);
    }
}

#[tokio::test]
async fn an_expired_state_is_invalid_params() {
    let app = chain(builder().request_state_ttl(Duration::ZERO).build().unwrap());
    let state = first_round(&app, None, &json!({})).await;
    // Expiry has a resolution of one second.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let id = json!(7);
    let reply = send(&app, retry(&id, "tools/call", &state, &json!({}))).await;
    refused_state(&reply, &id);
    let error = reply.error(StatusCode::BAD_REQUEST, -32602, &id);
    assert!(
        error["message"].as_str().unwrap().contains("expired"),
        "{error}"
    );
}

#[tokio::test]
async fn a_state_replayed_with_other_arguments_or_another_method_is_refused() {
    let app = chain(builder().build().unwrap());
    // String arguments, so the same params are also valid prompts/get params.
    let state = first_round(&app, None, &json!({"a": "1"})).await;
    let id = json!(8);
    let reply = send(&app, retry(&id, "tools/call", &state, &json!({"a": "2"}))).await;
    refused_state(&reply, &id);
    // Same name and arguments, but prompts/get.
    let id = json!(9);
    let reply = send(&app, retry(&id, "prompts/get", &state, &json!({"a": "1"}))).await;
    refused_state(&reply, &id);
    // The genuine retry still works.
    let id = json!(10);
    let reply = send(&app, retry(&id, "tools/call", &state, &json!({"a": "1"}))).await;
    assert_eq!(reply.ok(&id)["resultType"], "complete");
}

#[tokio::test]
async fn a_state_from_another_principal_is_refused() {
    let auth = BearerAuth::new(|token: String| async move {
        match token.as_str() {
            "alice-token" => Ok(Principal {
                subject: "alice".into(),
                ..Principal::default()
            }),
            "bob-token" => Ok(Principal {
                subject: "bob".into(),
                ..Principal::default()
            }),
            _ => Err(AuthError::Unauthorized),
        }
    });
    let app = chain(builder().auth(auth, AuthConfig::new()).build().unwrap());
    let state = first_round(&app, Some("alice-token"), &json!({})).await;
    let id = json!("bob");
    let reply = send(
        &app,
        retry(&id, "tools/call", &state, &json!({})).bearer("bob-token"),
    )
    .await;
    refused_state(&reply, &id);
    let id = json!("alice");
    let reply = send(
        &app,
        retry(&id, "tools/call", &state, &json!({})).bearer("alice-token"),
    )
    .await;
    assert_eq!(reply.ok(&id)["resultType"], "complete");
}

#[tokio::test]
async fn a_rotated_key_still_accepts_states_sealed_before() {
    let before = chain(builder().sealing_key(key("k1", 1)).build().unwrap());
    let state = first_round(&before, None, &json!({})).await;
    let after = chain(
        builder()
            .sealing_key(key("k1", 1))
            .sealing_key(key("k2", 2))
            .build()
            .unwrap(),
    );
    let id = json!(11);
    let reply = send(&after, retry(&id, "tools/call", &state, &json!({}))).await;
    assert_eq!(reply.ok(&id)["resultType"], "complete");
    // A server without k1 refuses it.
    let stranger = chain(builder().sealing_key(key("k2", 2)).build().unwrap());
    let id = json!(12);
    let reply = send(&stranger, retry(&id, "tools/call", &state, &json!({}))).await;
    refused_state(&reply, &id);
}

#[tokio::test]
async fn a_required_capability_the_client_lacks_is_400_32021() {
    let app = chain(builder().build().unwrap());
    for (i, tool) in ["needs_sampling", "asks_sampling"].into_iter().enumerate() {
        let id = json!(20 + i);
        let req = Req::modern(id.clone(), "tools/call")
            .capabilities(json!({"elicitation": {}}))
            .params(json!({"name": tool, "arguments": {}}));
        let reply = send(&app, req).await;
        let error = reply.error(StatusCode::BAD_REQUEST, -32021, &id);
        assert_eq!(
            error["data"]["requiredCapabilities"],
            json!({"sampling": {}}),
            "{tool}"
        );
    }
    // Declared, it runs.
    let id = json!(30);
    let req = Req::modern(id.clone(), "tools/call")
        .capabilities(json!({"sampling": {}}))
        .params(json!({"name": "needs_sampling", "arguments": {}}));
    let reply = send(&app, req).await;
    assert_eq!(reply.ok(&id)["content"][0]["text"], "sampled");
}

#[tokio::test]
async fn an_undeclared_kind_is_never_requested() {
    let app = chain(builder().build().unwrap());
    // greet asks for an elicitation; a client declaring only sampling gets
    // -32021, never an input request it cannot answer.
    let id = json!(40);
    let req = Req::modern(id.clone(), "tools/call")
        .capabilities(json!({"sampling": {}}))
        .params(json!({"name": "greet", "arguments": {}}));
    let reply = send(&app, req).await;
    let error = reply.error(StatusCode::BAD_REQUEST, -32021, &id);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[tokio::test]
async fn a_mode_the_client_did_not_declare_is_never_requested() {
    let app = chain(builder().build().unwrap());
    // Form-only elicitation: a URL elicitation is refused, naming `url`.
    let id = json!(50);
    let req = Req::modern(id.clone(), "tools/call")
        .capabilities(json!({"elicitation": {"form": {}}}))
        .params(json!({"name": "asks_url", "arguments": {}}));
    let reply = send(&app, req).await;
    let error = reply.error(StatusCode::BAD_REQUEST, -32021, &id);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}})
    );
    // Declared, the client is asked.
    let id = json!(51);
    let req = Req::modern(id.clone(), "tools/call")
        .capabilities(json!({"elicitation": {"url": {}}}))
        .params(json!({"name": "asks_url", "arguments": {}}));
    let reply = send(&app, req).await;
    let result = reply.ok(&id);
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["inputRequests"]["consent"]["params"]["mode"], "url");
}
