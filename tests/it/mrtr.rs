//! MRTR end to end, through the default chain: an `input_required` round on a
//! `tools/call` and its retry, every way a `requestState` is refused
//! (-32602), and the client-capability rules (-32021); through
//! `wymcp::testing`.

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::Principal;
use wymcp::auth::{AuthConfig, AuthError, BearerAuth};
use wymcp::mrtr::{InputKind, InputRequest, SealingKey};
use wymcp::{
    Context, HandlerError, NoArgs, Prompt, PromptResult, Server, ServerBuilder, Tool, ToolResult,
};

use wymcp::testing::{Client, Transcript};

use crate::support::Answered;

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

/// A client of `server` declaring every input kind.
fn client(server: Server) -> Client {
    Client::new(server).capabilities(json!({"elicitation": {}, "sampling": {}, "roots": {}}))
}

/// Round 1 of `greet`: the sealed state.
async fn first_round(client: &Client, arguments: &Value) -> String {
    let reply = client.call_tool("greet", arguments.clone()).await.unwrap();
    let asked = reply.input_requests().is_some();
    assert!(asked, "{}", reply.result);
    reply.result["requestState"].as_str().unwrap().to_owned()
}

/// 400/-32602 with the id, refused for its `requestState` (not some other
/// invalid param).
fn refused_state(reply: &Transcript) {
    let error = reply.refused(StatusCode::BAD_REQUEST, -32602);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("requestState"), "{error}");
}

/// The retry of `greet` (as `method`): the answer and the state.
async fn retry(client: &Client, method: &str, state: &str, arguments: &Value) -> Transcript {
    let params = json!({
        "name": "greet", "arguments": arguments,
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    });
    client.send(method, params).await
}

#[tokio::test]
async fn an_input_required_round_then_the_retry_completes() {
    let client = client(builder().build().unwrap());
    let round = client.call_tool("greet", json!({})).await.unwrap();
    let result = round.exchange.answered();
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
    let answers = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let done = client.finish_round(&round, answers).await.unwrap();
    assert_ne!(done.exchange.request["id"], round.exchange.request["id"]);
    let result = done.exchange.answered();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "Hello, Ada! (state round-1)");
}

#[tokio::test]
async fn a_tampered_state_is_invalid_params() {
    let client = client(builder().build().unwrap());
    let state = first_round(&client, &json!({})).await;
    let mut flipped: Vec<char> = state.chars().collect();
    let middle = flipped.len() / 2;
    flipped[middle] = if flipped[middle] == 'A' { 'B' } else { 'A' };
    let flipped: String = flipped.into_iter().collect();
    for bad in [
        format!("{state}-TAMPERED"),
        flipped,
        "garbage".to_owned(),
        String::new(),
    ] {
        refused_state(&retry(&client, "tools/call", &bad, &json!({})).await);
    }
}

#[tokio::test]
async fn an_expired_state_is_invalid_params() {
    let client = client(builder().request_state_ttl(Duration::ZERO).build().unwrap());
    let state = first_round(&client, &json!({})).await;
    // Expiry has a resolution of one second.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let reply = retry(&client, "tools/call", &state, &json!({})).await;
    refused_state(&reply);
    let error = reply.refused(StatusCode::BAD_REQUEST, -32602);
    assert!(
        error["message"].as_str().unwrap().contains("expired"),
        "{error}"
    );
}

#[tokio::test]
async fn a_state_replayed_with_other_arguments_or_another_method_is_refused() {
    let client = client(builder().build().unwrap());
    // String arguments, so the same params are also valid prompts/get params.
    let state = first_round(&client, &json!({"a": "1"})).await;
    refused_state(&retry(&client, "tools/call", &state, &json!({"a": "2"})).await);
    // Same name and arguments, but prompts/get.
    refused_state(&retry(&client, "prompts/get", &state, &json!({"a": "1"})).await);
    // The genuine retry still works.
    let reply = retry(&client, "tools/call", &state, &json!({"a": "1"})).await;
    assert_eq!(reply.answered()["resultType"], "complete");
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
    let client = client(builder().auth(auth, AuthConfig::new()).build().unwrap());
    let (alice, bob) = (client.bearer("alice-token"), client.bearer("bob-token"));
    let state = first_round(&alice, &json!({})).await;
    refused_state(&retry(&bob, "tools/call", &state, &json!({})).await);
    let reply = retry(&alice, "tools/call", &state, &json!({})).await;
    assert_eq!(reply.answered()["resultType"], "complete");
}

#[tokio::test]
async fn a_rotated_key_still_accepts_states_sealed_before() {
    let before = client(builder().sealing_key(key("k1", 1)).build().unwrap());
    let state = first_round(&before, &json!({})).await;
    let after = client(
        builder()
            .sealing_key(key("k1", 1))
            .sealing_key(key("k2", 2))
            .build()
            .unwrap(),
    );
    let reply = retry(&after, "tools/call", &state, &json!({})).await;
    assert_eq!(reply.answered()["resultType"], "complete");
    // A server without k1 refuses it.
    let stranger = client(builder().sealing_key(key("k2", 2)).build().unwrap());
    refused_state(&retry(&stranger, "tools/call", &state, &json!({})).await);
}

/// `tools/call` of `tool` from a client declaring `capabilities`.
async fn declaring(client: &Client, capabilities: Value, tool: &str) -> Transcript {
    let client = client.capabilities(capabilities);
    client
        .send("tools/call", json!({"name": tool, "arguments": {}}))
        .await
}

#[tokio::test]
async fn a_required_capability_the_client_lacks_is_400_32021() {
    let client = client(builder().build().unwrap());
    for tool in ["needs_sampling", "asks_sampling"] {
        let reply = declaring(&client, json!({"elicitation": {}}), tool).await;
        let error = reply.refused(StatusCode::BAD_REQUEST, -32021);
        assert_eq!(
            error["data"]["requiredCapabilities"],
            json!({"sampling": {}}),
            "{tool}"
        );
    }
    // Declared, it runs.
    let reply = declaring(&client, json!({"sampling": {}}), "needs_sampling").await;
    assert_eq!(reply.answered()["content"][0]["text"], "sampled");
}

#[tokio::test]
async fn an_undeclared_kind_is_never_requested() {
    let client = client(builder().build().unwrap());
    // greet asks for an elicitation; a client declaring only sampling gets
    // -32021, never an input request it cannot answer.
    let reply = declaring(&client, json!({"sampling": {}}), "greet").await;
    let error = reply.refused(StatusCode::BAD_REQUEST, -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[tokio::test]
async fn a_mode_the_client_did_not_declare_is_never_requested() {
    let client = client(builder().build().unwrap());
    // Form-only elicitation: a URL elicitation is refused, naming `url`.
    let reply = declaring(&client, json!({"elicitation": {"form": {}}}), "asks_url").await;
    let error = reply.refused(StatusCode::BAD_REQUEST, -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}})
    );
    // Declared, the client is asked.
    let reply = declaring(&client, json!({"elicitation": {"url": {}}}), "asks_url").await;
    let result = reply.answered();
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["inputRequests"]["consent"]["params"]["mode"], "url");
}
