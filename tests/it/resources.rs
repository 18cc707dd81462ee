//! Resources: static and template reads, listing, not found (-32602 with
//! `data.uri` on 2026, -32002 on 2025), caching hints, pagination cursors.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::{Era, Resource, ResourceContents, ResourceTemplate, Server, TemplateVars};

use wymcp::testing::Transcript;

use crate::support::{assert_failure, assert_schema, surface};

fn server() -> Arc<Server> {
    let server = Server::builder()
        .resource(
            Resource::new("test://static-text", "Static text")
                .description("text")
                .mime_type("text/plain")
                .text("This is the content of the static text resource."),
        )
        .resource(
            Resource::new("test://static-binary", "Static binary")
                .mime_type("image/png")
                .blob("iVBORw0KGgo="),
        )
        .resource(Resource::new("test://empty", "Empty").handler(|_, _| async { Ok(Vec::new()) }))
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "Template")
                .mime_type("application/json")
                .handler(|uri, vars: TemplateVars, _| async move {
                    Ok(vec![ResourceContents::text(
                        uri,
                        json!({"id": vars["id"]}).to_string(),
                    )])
                }),
        )
        .build()
        .unwrap();
    Arc::new(server)
}

async fn read(server: &Arc<Server>, era: Era, uri: &str) -> Transcript {
    let client = surface(server.clone()).era(era);
    client.send("resources/read", json!({"uri": uri})).await
}

/// resources/list lists direct resources only; templates/list the
/// templates; both carry the caching hint and are schema-valid.
#[tokio::test]
async fn lists_resources_and_templates() {
    let server = server();
    let client = surface(server.clone());
    let answer = client.send("resources/list", json!({})).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ListResourcesResult", result);
    assert_eq!(
        result["resources"][0],
        json!({
            "uri": "test://static-text", "name": "Static text", "description": "text", "mimeType": "text/plain"
        })
    );
    assert_eq!(result["resources"].as_array().unwrap().len(), 3);
    assert_eq!(result["cacheScope"], "private");
    let answer = client.send("resources/templates/list", json!({})).await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ListResourceTemplatesResult", result);
    assert_eq!(
        result["resourceTemplates"],
        json!([{
            "uriTemplate": "test://template/{id}/data", "name": "Template", "mimeType": "application/json"
        }])
    );
}

/// Static text and blob contents carry the resource's media type; a read
/// result is cacheable and schema-valid.
#[tokio::test]
async fn reads_static_resources() {
    let server = server();
    let answer = read(&server, Era::Modern, "test://static-text").await;
    let result = answer.result().unwrap();
    assert_schema("2026-07-28", "ReadResourceResult", result);
    assert_eq!(
        result["contents"],
        json!([{
            "uri": "test://static-text", "mimeType": "text/plain",
            "text": "This is the content of the static text resource."
        }])
    );
    assert_eq!(
        (result["ttlMs"].clone(), result["resultType"].clone()),
        (json!(0), json!("complete"))
    );
    let answer = read(&server, Era::Modern, "test://static-binary").await;
    assert_eq!(
        answer.result().unwrap()["contents"][0]["blob"],
        "iVBORw0KGgo="
    );
}

/// A URI matching a template is read by its handler with the variables.
#[tokio::test]
async fn reads_through_a_template() {
    let answer = read(&server(), Era::Modern, "test://template/123/data").await;
    let result = answer.result().unwrap();
    assert_eq!(
        result["contents"],
        json!([{
            "uri": "test://template/123/data", "mimeType": "application/json", "text": "{\"id\":\"123\"}"
        }])
    );
}

/// Not found: 2026 says -32602 with `data.uri` (SEP-2164), never empty
/// contents; 2025 says -32002.
#[tokio::test]
async fn unknown_resources_are_not_found() {
    let server = server();
    for uri in [
        "test://nope",
        "test://template//data",
        "test://empty",
        "test://template/1/2/data",
    ] {
        let answer = read(&server, Era::Modern, uri).await;
        let data = assert_failure(
            &answer.result().unwrap_err(),
            StatusCode::BAD_REQUEST,
            -32602,
        );
        assert_eq!(data, json!({"uri": uri}));
    }
    let answer = read(&server, Era::Legacy, "test://nope").await;
    let data = assert_failure(&answer.result().unwrap_err(), StatusCode::OK, -32002);
    assert_eq!(data["uri"], "test://nope");
}

/// Lists are paged with opaque cursors; a cursor the server did not mint
/// is 400/-32602.
#[tokio::test]
async fn pages_follow_cursors_and_refuse_bad_ones() {
    let server = Server::builder()
        .page_size(2)
        .resource(Resource::new("a://1", "1").text("1"))
        .resource(Resource::new("a://2", "2").text("2"))
        .resource(Resource::new("a://3", "3").text("3"))
        .build()
        .unwrap();
    let client = surface(server);
    let mut uris = Vec::new();
    let mut params = json!({});
    for _ in 10..13 {
        let answer = client.send("resources/list", params.clone()).await;
        let result = answer.result().unwrap().clone();
        assert_schema("2026-07-28", "ListResourcesResult", &result);
        uris.extend(
            result["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["uri"].clone()),
        );
        match result.get("nextCursor") {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => break,
        }
    }
    assert_eq!(uris, [json!("a://1"), json!("a://2"), json!("a://3")]);
    for cursor in ["garbage", "p1.99", ""] {
        let answer = client
            .send("resources/list", json!({"cursor": cursor}))
            .await;
        assert_failure(
            &answer.result().unwrap_err(),
            StatusCode::BAD_REQUEST,
            -32602,
        );
    }
}

/// Reads on the 2025 path: plain 2025 results (no resultType, no caching
/// hint), valid against the 2025-11-25 schema.
#[tokio::test]
async fn legacy_reads_are_2025_results() {
    let answer = read(&server(), Era::Legacy, "test://static-text").await;
    let result = answer.result().unwrap();
    assert!(result.get("resultType").is_none());
    assert!(result.get("ttlMs").is_none());
    assert!(result.get("_meta").is_none());
    assert_schema("2025-11-25", "ReadResourceResult", result);
    let _: &Value = result;
}
