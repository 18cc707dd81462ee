//! `examples/quota.rs`, a stage of a user's own in a chain of its own,
//! driven with `wymcp::testing` over that chain: the quota counts each
//! tenant's `tools/call` apart, refuses the one past it as the example
//! documents, and lets every other method through.

use http::StatusCode;
use serde_json::json;
use wymcp::testing::Client;

#[allow(dead_code)] // its `main`
#[path = "../../examples/quota.rs"]
mod example;

fn client(limit: u32) -> Client {
    Client::over(example::post::router(example::server(limit).unwrap()))
}

/// Rule: a tenant's calls past its quota are `429`, `-32600`, the request's
/// id, `Retry-After` within the window and the limit named; the other
/// tenant's quota is its own.
#[tokio::test]
async fn a_tenant_past_its_quota_is_refused_429_with_retry_after() {
    let client = client(2);
    let (acme, globex) = (client.bearer("acme-token"), client.bearer("globex-token"));
    for _ in 0..2 {
        let called = acme.call_tool("greet", json!({"name": "a"})).await.unwrap();
        assert_eq!(called.text(), "Hello, a!");
    }
    let refused = acme
        .call_tool("greet", json!({"name": "a"}))
        .await
        .unwrap_err();
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.code, Some(-32600));
    let response = refused.exchange.response().unwrap();
    assert_eq!(response["id"], refused.exchange.request["id"]);
    assert_eq!(
        refused.data,
        Some(json!({"limit": "tenant_quota", "ceiling": 2}))
    );
    let retry: u64 = refused.exchange.header("retry-after").parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After: {retry}");
    // Another tenant's quota is untouched.
    let called = globex.call_tool("usage", json!({})).await.unwrap();
    assert_eq!(called.text(), "1 calls left");
}

/// Rule: only `tools/call` counts: lists and other methods pass however
/// often, and a caller Auth refuses is answered by Auth, not the quota.
#[tokio::test]
async fn only_tool_calls_count_and_auth_answers_first() {
    let client = client(1);
    let acme = client.bearer("acme-token");
    for _ in 0..3 {
        let tools = acme.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["greet", "usage"]);
    }
    let called = acme.call_tool("usage", json!({})).await.unwrap();
    assert_eq!(called.text(), "0 calls left");
    let stranger = client.bearer("nobody");
    let refused = stranger
        .call_tool("greet", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(
        refused
            .exchange
            .header("www-authenticate")
            .starts_with("Bearer")
    );
    assert_eq!(refused.exchange.header("retry-after"), "");
}

/// The chain's table names the stage where it was declared, body-bound with
/// its reason, between Auth and Validate.
#[test]
fn the_quota_sits_between_auth_and_validate() {
    let names: Vec<&str> = example::post::CHAIN.iter().map(|s| s.name).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert!(at("Auth") < at("TenantQuota") && at("TenantQuota") < at("Validate"));
    let row = &example::post::CHAIN[at("TenantQuota")];
    assert!(row.reason().is_some_and(|r| r.contains("Auth")), "{row:?}");
}
