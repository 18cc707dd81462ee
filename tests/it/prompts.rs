//! Prompts (listing, arguments, missing arguments) and completion.

use http::StatusCode;
use serde_json::json;
use wymcp::{CompletionRef, Completions, PromptArgs};
use wymcp::{Content, Prompt, PromptResult, ResourceTemplate, Server, TemplateVars};

use crate::support::{assert_failure, assert_schema, surface};

fn server() -> Server {
    Server::builder()
        .prompt(
            Prompt::new("greet")
                .description("Greets")
                .argument("name", "Who")
                .optional_argument("tone", "How")
                .handler(|args: PromptArgs, _| async move {
                    Ok(PromptResult::new()
                        .user(format!(
                            "Hello {} ({})",
                            args["name"],
                            args.get("tone").map_or("plain", String::as_str)
                        ))
                        .assistant(Content::image("AAAA", "image/png")))
                }),
        )
        .resource_template(
            ResourceTemplate::new("x://{a}", "x")
                .handler(|_, _: TemplateVars, _| async { Ok(Vec::new()) }),
        )
        .completion(|request, _| async move {
            Ok(match request.reference {
                CompletionRef::Prompt(name) if name == "greet" && request.argument == "name" => {
                    Completions::matching(&request.value, ["paris", "park", "party", "london"])
                }
                _ => Completions::new((0..150).map(|i| i.to_string())),
            })
        })
        .build()
        .unwrap()
}

/// prompts/list lists the arguments, required or not; cacheable.
#[tokio::test]
async fn prompts_list_lists_arguments() {
    let answer = surface(server()).send("prompts/list", json!({})).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ListPromptsResult", result);
    assert_eq!(
        result["prompts"],
        json!([{"name": "greet", "description": "Greets", "arguments": [
            {"name": "name", "description": "Who", "required": true},
            {"name": "tone", "description": "How"}
        ]}])
    );
    assert_eq!(result["ttlMs"], 0);
}

/// prompts/get renders the messages from the arguments.
#[tokio::test]
async fn prompts_get_renders_messages() {
    let params = json!({"name": "greet", "arguments": {"name": "Ada", "tone": "warm"}});
    let answer = surface(server()).send("prompts/get", params).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "GetPromptResult", result);
    assert_eq!(
        result["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "Hello Ada (warm)"}},
            {"role": "assistant", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}
        ])
    );
}

/// A missing required argument, a non-string one, and an unknown prompt are
/// 400/-32602.
#[tokio::test]
async fn bad_prompt_requests_are_invalid_params() {
    let client = surface(server());
    for params in [
        json!({"name": "greet"}),
        json!({"name": "greet", "arguments": {"tone": "warm"}}),
        json!({"name": "greet", "arguments": {"name": 7}}),
        json!({"name": "nope", "arguments": {}}),
    ] {
        let answer = client.send("prompts/get", params).await;
        assert_failure(
            &answer.result().unwrap_err(),
            StatusCode::BAD_REQUEST,
            -32602,
        );
    }
    let answer = client.send("prompts/get", json!({"name": "greet"})).await;
    let data = assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
    assert_eq!(data["missing"], json!(["name"]));
}

/// completion/complete answers suggestions, at most 100 (hasMore beyond),
/// and refuses a malformed ref.
#[tokio::test]
async fn completion_suggests_values() {
    let client = surface(server());
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "par"}});
    let answer = client.send("completion/complete", params).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "CompleteResult", result);
    assert_eq!(
        result["completion"],
        json!({"values": ["paris", "park", "party"]})
    );
    let params = json!({"ref": {"type": "ref/resource", "uri": "x://{a}"}, "argument": {"name": "a", "value": ""}});
    let answer = client.send("completion/complete", params).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "CompleteResult", result);
    assert_eq!(
        result["completion"]["values"].as_array().unwrap().len(),
        100
    );
    assert_eq!(
        (
            result["completion"]["hasMore"].clone(),
            result["completion"]["total"].clone()
        ),
        (json!(true), json!(150))
    );
    let params = json!({"ref": {"type": "ref/nothing"}, "argument": {"name": "a", "value": ""}});
    let answer = client.send("completion/complete", params).await;
    assert_failure(
        &answer.result().unwrap_err(),
        StatusCode::BAD_REQUEST,
        -32602,
    );
}
