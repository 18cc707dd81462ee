//! `auth::Introspection` against a real introspection endpoint on loopback
//! (RFC 7662): the endpoint checks the resource server's client
//! credentials and answers from a table of tokens. Every refusal pins the
//! status, the `WWW-Authenticate` challenge and the JSON-RPC code and id.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use wymcp::auth::{Introspection, IntrospectionBuilder};
use wymcp_tests::wire::TestServer;

use crate::jwt::{
    AUDIENCE, EXPIRED, NO_AUDIENCE, NOT_YET_VALID, RESOURCE, SCOPE, UNREACHABLE, accepted, call,
    call_apart, now, refused, server_with, server_with_limits,
};

const CLIENT_ID: &str = "mcp server";
const CLIENT_SECRET: &str = "s3cret:&=";
const INACTIVE: &str = "the token is not active";
const ISSUER: &str = "the token was issued by another issuer";

#[derive(Default)]
struct State {
    answers: Mutex<HashMap<String, Value>>,
    hits: AtomicUsize,
    down: AtomicBool,
    forms: Mutex<Vec<String>>,
    /// How long the endpoint takes to answer.
    delay: Mutex<Duration>,
}

/// A loopback introspection endpoint.
struct Endpoint {
    url: String,
    state: Arc<State>,
    _server: TestServer,
}

impl Endpoint {
    async fn start() -> Endpoint {
        let state = Arc::new(State::default());
        let shared = state.clone();
        // RFC 6749 §2.3.1: each part form-encoded, then base64.
        let expected = format!("Basic {}", STANDARD.encode("mcp+server:s3cret%3A%26%3D"));
        let router = axum::Router::new().route(
            "/introspect",
            axum::routing::post(move |headers: HeaderMap, form: String| {
                let state = shared.clone();
                let expected = expected.clone();
                async move {
                    state.hits.fetch_add(1, Ordering::SeqCst);
                    let delay = *state.delay.lock().unwrap();
                    tokio::time::sleep(delay).await;
                    if state.down.load(Ordering::SeqCst) {
                        return (StatusCode::SERVICE_UNAVAILABLE, String::new());
                    }
                    let authorized = headers
                        .get("authorization")
                        .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                    let form_type = headers
                        .get("content-type")
                        .is_some_and(|v| v == "application/x-www-form-urlencoded");
                    if !authorized || !form_type {
                        return (
                            StatusCode::UNAUTHORIZED,
                            json!({"error": "invalid_client"}).to_string(),
                        );
                    }
                    state.forms.lock().unwrap().push(form.clone());
                    let token = form
                        .split('&')
                        .find_map(|pair| pair.strip_prefix("token="))
                        .unwrap_or_default()
                        .to_owned();
                    let answer = state
                        .answers
                        .lock()
                        .unwrap()
                        .get(&token)
                        .cloned()
                        .unwrap_or(json!({"active": false}));
                    (StatusCode::OK, answer.to_string())
                }
            }),
        );
        let server = TestServer::start(router).await;
        Endpoint {
            url: format!("http://{}/introspect", server.addr()),
            state,
            _server: server,
        }
    }

    /// The endpoint answers `answer` about `token` from now on.
    fn answer(&self, token: &str, answer: Value) {
        self.state
            .answers
            .lock()
            .unwrap()
            .insert(token.to_owned(), answer);
    }

    fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    fn introspection(&self) -> IntrospectionBuilder {
        Introspection::builder(&self.url, RESOURCE).client_credentials(CLIENT_ID, CLIENT_SECRET)
    }
}

/// An active answer about alice's token.
fn active() -> Value {
    json!({
        "active": true,
        "sub": "alice",
        "client_id": "app-1",
        "scope": format!("{SCOPE} files:read"),
        "aud": RESOURCE,
        "iss": "https://auth.example.com",
        "exp": now() + 300,
        "token_type": "Bearer",
    })
}

#[tokio::test]
async fn an_active_token_gives_its_principal_and_is_asked_about_once() {
    let endpoint = Endpoint::start().await;
    endpoint.answer("opaque1", active());
    let server = server_with(endpoint.introspection().build().unwrap());
    for _ in 0..3 {
        let principal = accepted(&call(&server, Some("opaque1")).await);
        assert_eq!(
            principal,
            json!({"subject": "alice", "scopes": [SCOPE, "files:read"], "client_id": "app-1"})
        );
    }
    assert_eq!(endpoint.hits(), 1, "cached after the first answer");
    // Authenticated (the endpoint refuses otherwise) and as RFC 7662 asks.
    assert_eq!(
        endpoint.state.forms.lock().unwrap().as_slice(),
        ["token=opaque1&token_type_hint=access_token"]
    );
}

#[tokio::test]
async fn wrong_client_credentials_are_the_endpoint_unreachable_for_the_client() {
    let endpoint = Endpoint::start().await;
    endpoint.answer("opaque1", active());
    let server = server_with(
        Introspection::builder(&endpoint.url, RESOURCE)
            .client_credentials(CLIENT_ID, "wrong")
            .build()
            .unwrap(),
    );
    refused(&call(&server, Some("opaque1")).await, UNREACHABLE);
}

#[tokio::test]
async fn inactive_and_not_truly_active_tokens_are_refused_and_not_cached() {
    let endpoint = Endpoint::start().await;
    // With the refusal cache off: refusals are cached only briefly, by
    // choice (the next test).
    let server = server_with(
        endpoint
            .introspection()
            .refusal_cache_ttl(Duration::ZERO)
            .build()
            .unwrap(),
    );
    refused(&call(&server, Some("unknown")).await, INACTIVE);
    let mut truthy = active();
    truthy["active"] = json!("true");
    endpoint.answer("truthy", truthy);
    refused(&call(&server, Some("truthy")).await, INACTIVE);
    let mut missing = active();
    missing.as_object_mut().unwrap().remove("active");
    endpoint.answer("missing", missing);
    refused(&call(&server, Some("missing")).await, INACTIVE);
    // A refusal is asked about again (it may become active; nothing stale).
    refused(&call(&server, Some("unknown")).await, INACTIVE);
    assert_eq!(endpoint.hits(), 4);
}

#[tokio::test]
async fn expired_not_yet_valid_and_foreign_tokens_are_refused() {
    let endpoint = Endpoint::start().await;
    let server = server_with(
        endpoint
            .introspection()
            .issuer("https://auth.example.com")
            .build()
            .unwrap(),
    );
    let with = |token: &str, name: &str, value: Value| {
        let mut answer = active();
        if value.is_null() {
            answer.as_object_mut().unwrap().remove(name);
        } else {
            answer[name] = value;
        }
        endpoint.answer(token, answer);
    };
    with("expired", "exp", json!(now() - 120));
    refused(&call(&server, Some("expired")).await, EXPIRED);
    with("later", "nbf", json!(now() + 120));
    refused(&call(&server, Some("later")).await, NOT_YET_VALID);
    with("other", "aud", json!(["https://other.example.com/mcp"]));
    refused(&call(&server, Some("other")).await, AUDIENCE);
    with("noaud", "aud", Value::Null);
    refused(&call(&server, Some("noaud")).await, NO_AUDIENCE);
    with("foreign", "iss", json!("https://evil.example.com"));
    refused(&call(&server, Some("foreign")).await, ISSUER);
    // An answer without exp is accepted (RFC 7662: optional).
    with("forever", "exp", Value::Null);
    accepted(&call(&server, Some("forever")).await);
    // Without aud, only when allowed; another resource's aud still is not.
    let lenient = server_with(
        endpoint
            .introspection()
            .allow_missing_audience()
            .build()
            .unwrap(),
    );
    accepted(&call(&lenient, Some("noaud")).await);
    refused(&call(&lenient, Some("other")).await, AUDIENCE);
}

#[tokio::test]
async fn a_cached_active_answer_never_outlives_the_tokens_exp() {
    let endpoint = Endpoint::start().await;
    let server = server_with(
        endpoint
            .introspection()
            .cache_ttl(Duration::from_secs(600))
            .leeway(Duration::ZERO)
            .build()
            .unwrap(),
    );
    let mut short = active();
    short["exp"] = json!(now() + 2);
    endpoint.answer("short", short);
    accepted(&call(&server, Some("short")).await);
    accepted(&call(&server, Some("short")).await);
    assert_eq!(endpoint.hits(), 1);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Past exp: not served from the cache, and the endpoint's own answer
    // (still claiming active) is refused on its exp.
    refused(&call(&server, Some("short")).await, EXPIRED);
    assert_eq!(endpoint.hits(), 2);
}

#[tokio::test]
async fn the_cache_ttl_bounds_how_long_a_revoked_token_is_still_accepted() {
    let endpoint = Endpoint::start().await;
    let ttl = Duration::from_millis(300);
    let server = server_with(endpoint.introspection().cache_ttl(ttl).build().unwrap());
    endpoint.answer("revoked", active());
    accepted(&call(&server, Some("revoked")).await);
    endpoint.answer("revoked", json!({"active": false}));
    accepted(&call(&server, Some("revoked")).await);
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    refused(&call(&server, Some("revoked")).await, INACTIVE);
    // With the cache off, every request asks.
    let uncached = server_with(
        endpoint
            .introspection()
            .cache_ttl(Duration::ZERO)
            .build()
            .unwrap(),
    );
    endpoint.answer("fresh", active());
    accepted(&call(&uncached, Some("fresh")).await);
    accepted(&call(&uncached, Some("fresh")).await);
    assert_eq!(endpoint.hits(), 4);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_401_never_500() {
    let endpoint = Endpoint::start().await;
    endpoint.answer("opaque1", active());
    endpoint.state.down.store(true, Ordering::SeqCst);
    let server = server_with(endpoint.introspection().build().unwrap());
    refused(&call(&server, Some("opaque1")).await, UNREACHABLE);
    endpoint.state.down.store(false, Ordering::SeqCst);
    accepted(&call(&server, Some("opaque1")).await);
    // A closed port, and an endpoint that never answers in time.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let server = server_with(
        Introspection::builder(format!("http://{closed}/introspect"), RESOURCE)
            .client_credentials(CLIENT_ID, CLIENT_SECRET)
            .build()
            .unwrap(),
    );
    refused(&call(&server, Some("opaque1")).await, UNREACHABLE);
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = server_with(
        Introspection::builder(
            format!("http://{}/introspect", silent.local_addr().unwrap()),
            RESOURCE,
        )
        .client_credentials(CLIENT_ID, CLIENT_SECRET)
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap(),
    );
    let started = std::time::Instant::now();
    refused(&call(&server, Some("opaque1")).await, UNREACHABLE);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_active_token_without_the_required_scope_is_403() {
    let endpoint = Endpoint::start().await;
    let mut narrow = active();
    narrow["scope"] = json!("files:read");
    endpoint.answer("narrow", narrow);
    let server = server_with(endpoint.introspection().build().unwrap());
    let reply = call(&server, Some("narrow")).await;
    reply.rejected("Auth", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"Bearer error="insufficient_scope", scope="{SCOPE}", resource_metadata="{}""#,
            crate::jwt::METADATA
        )
    );
}

#[tokio::test]
async fn a_refusal_is_reused_for_the_refusal_ttl_and_then_asked_again() {
    let endpoint = Endpoint::start().await;
    let window = Duration::from_millis(300);
    let server = server_with(
        endpoint
            .introspection()
            .refusal_cache_ttl(window)
            .build()
            .unwrap(),
    );
    refused(&call(&server, Some("unknown")).await, INACTIVE);
    refused(&call(&server, Some("unknown")).await, INACTIVE);
    assert_eq!(endpoint.hits(), 1, "the second use made no call");
    // An answer that refuses on its claims is reused the same way.
    let mut foreign = active();
    foreign["aud"] = json!("https://other.example.com/mcp");
    endpoint.answer("foreign", foreign);
    refused(&call(&server, Some("foreign")).await, AUDIENCE);
    refused(&call(&server, Some("foreign")).await, AUDIENCE);
    assert_eq!(endpoint.hits(), 2);
    // Past the window it is asked about again, and may be active by then.
    endpoint.answer("unknown", active());
    tokio::time::sleep(window + Duration::from_millis(50)).await;
    accepted(&call(&server, Some("unknown")).await);
    assert_eq!(endpoint.hits(), 3);
    // A failure to get an answer is not cached.
    endpoint.state.down.store(true, Ordering::SeqCst);
    refused(&call(&server, Some("later")).await, UNREACHABLE);
    endpoint.state.down.store(false, Ordering::SeqCst);
    refused(&call(&server, Some("later")).await, INACTIVE);
    assert_eq!(endpoint.hits(), 5);
}

#[tokio::test]
async fn concurrent_requests_with_one_unknown_token_make_one_call() {
    let endpoint = Endpoint::start().await;
    *endpoint.state.delay.lock().unwrap() = Duration::from_millis(300);
    // Neither cache helps: only the call in flight is shared.
    let server = server_with(
        endpoint
            .introspection()
            .cache_ttl(Duration::ZERO)
            .refusal_cache_ttl(Duration::ZERO)
            .build()
            .unwrap(),
    );
    let requests: Vec<_> = (0..50).map(|_| call_apart(&server, "unknown")).collect();
    for reply in requests {
        refused(&reply.await.unwrap(), INACTIVE);
    }
    assert_eq!(endpoint.hits(), 1, "50 requests, one call");
    // Once it has answered, the next request asks again (no cache here).
    refused(&call(&server, Some("unknown")).await, INACTIVE);
    assert_eq!(endpoint.hits(), 2);
}

/// Rule (issue 23, items 4 and the ledger): introspection calls are places
/// of the server's ledger. With two calls in flight, a third token is
/// answered at once (the endpoint is not asked) with `status` and
/// `message`, the request's id, `Retry-After` and no challenge: 503 at the
/// server's cap, 429 at the client's share. Tokens in flight share their
/// call; the places come back.
async fn calls_beyond_a_limit_are_refused_at_once(
    limits: wymcp::Limits,
    status: u16,
    message: &str,
) {
    let endpoint = Endpoint::start().await;
    let delay = Duration::from_millis(800);
    *endpoint.state.delay.lock().unwrap() = delay;
    endpoint.answer("first", active());
    endpoint.answer("second", active());
    let server = server_with_limits(endpoint.introspection().build().unwrap(), limits);
    let holding: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|token| call_apart(&server, token))
        .collect();
    while endpoint.hits() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.ledger().held(wymcp::ledger::Kind::AuthCalls), 2);
    let started = std::time::Instant::now();
    let reply = call(&server, Some("third")).await;
    assert!(started.elapsed() < delay / 2, "{:?}", started.elapsed());
    reply.rejected("Auth", status, -32600, &json!("r-1"));
    assert_eq!(reply.header("retry-after"), "1");
    assert!(reply.headers.get("www-authenticate").is_none());
    assert_eq!(reply.body["error"]["message"], message);
    // A token already in flight shares its call rather than needing one.
    accepted(&call(&server, Some("first")).await);
    for reply in holding {
        accepted(&reply.await.unwrap());
    }
    assert_eq!(endpoint.hits(), 2);
    assert_eq!(server.ledger().held(wymcp::ledger::Kind::AuthCalls), 0);
    // The places are free again, and the refusal was not cached.
    *endpoint.state.delay.lock().unwrap() = Duration::ZERO;
    refused(&call(&server, Some("third")).await, INACTIVE);
    assert_eq!(endpoint.hits(), 3);
}

#[tokio::test]
async fn calls_beyond_the_cap_are_refused_at_once_never_queued() {
    calls_beyond_a_limit_are_refused_at_once(
        wymcp::Limits {
            auth_calls: 2,
            ..wymcp::Limits::default()
        },
        503,
        "unavailable: the server holds as many calls to the authorization server in flight as it serves (2); try again later",
    )
    .await;
}

#[tokio::test]
async fn calls_beyond_a_clients_share_are_refused_429() {
    calls_beyond_a_limit_are_refused_at_once(
        wymcp::Limits {
            auth_calls_per_caller: 2,
            ..wymcp::Limits::default()
        },
        429,
        "throttled: this caller holds its share of calls to the authorization server in flight (2); try again later",
    )
    .await;
}

/// Rule (issue 23, item 6): a listen stream opened with an introspected
/// token asks about it again each cache TTL; while it is active the
/// stream lives, once the endpoint says inactive the stream ends with its
/// clean close, not an hour later.
#[tokio::test]
async fn a_listen_stream_ends_once_its_introspected_token_is_revoked() {
    let endpoint = Endpoint::start().await;
    let ttl = Duration::from_secs(1);
    let server = server_with(endpoint.introspection().cache_ttl(ttl).build().unwrap());
    endpoint.answer("listener", active());
    let client = wymcp::testing::Client::new(server.clone()).bearer("listener");
    let mut stream = client
        .listen(json!({"toolsListChanged": true}))
        .await
        .unwrap();
    assert_eq!(stream.status, StatusCode::OK);
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(endpoint.hits(), 1);
    // Asked again after a TTL: still active, the stream lives on.
    assert!(stream.next_within(ttl + ttl / 2).await.is_none());
    assert_eq!(endpoint.hits(), 2, "asked again at the cache TTL");
    endpoint.answer("listener", json!({"active": false}));
    let last = stream
        .next_within(Duration::from_secs(4))
        .await
        .expect("the stream ends once the token is found inactive");
    assert_eq!(last["id"], stream.request["id"]);
    assert_eq!(last["result"]["resultType"], "complete");
    assert!(stream.ended().await);
    assert_eq!(endpoint.hits(), 3);
}

/// A server introspecting with `endpoint`, DPoP configured as `dpop`, with
/// a `whoami` that answers the caller's subject.
fn dpop_server(endpoint: &Endpoint, dpop: wymcp::auth::Dpop) -> Arc<wymcp::Server> {
    let whoami = wymcp::Tool::new("whoami")
        .description("Says who called")
        .handler(|_: wymcp::NoArgs, cx| async move {
            let subject = cx
                .principal()
                .map(|p| p.subject.clone())
                .unwrap_or_default();
            Ok(wymcp::ToolResult::text(subject))
        });
    Arc::new(
        wymcp::Server::builder()
            .auth(
                endpoint.introspection().build().unwrap(),
                wymcp::auth::AuthConfig::new()
                    .resource(RESOURCE)
                    .authorization_server("https://auth.example.com")
                    .required_scopes([SCOPE])
                    .dpop(dpop),
            )
            .tool(whoami)
            .build()
            .unwrap(),
    )
}

/// Rule (RFC 9449 §6.2): an introspection answer's `cnf.jkt` binds the
/// token as a JWT's does, cached answers included: the proof must be made
/// with that key, and the token is refused as Bearer.
#[tokio::test]
async fn an_introspected_tokens_cnf_jkt_binds_it_to_the_proofs_key() {
    use crate::dpop::{BOUND_AS_BEARER, PROOF_KEY, accepted, dpop_call, proof, refused, send};
    let endpoint = Endpoint::start().await;
    let client = crate::jwt::Signer::ec("client");
    let mut answer = active();
    answer["cnf"] = json!({"jkt": crate::dpop::thumbprint(&client)});
    endpoint.answer("bound1", answer);
    let server = dpop_server(&endpoint, wymcp::auth::Dpop::required());
    accepted(&send(&server, "bound1", &[&proof(&client, "bound1")]).await);
    // From the cache now: the binding is kept with the principal.
    let thief = crate::jwt::Signer::ec("thief");
    refused(
        &send(&server, "bound1", &[&proof(&thief, "bound1")]).await,
        "invalid_dpop_proof",
        PROOF_KEY,
    );
    assert_eq!(endpoint.hits(), 1);
    let allowed = dpop_server(&endpoint, wymcp::auth::Dpop::allowed());
    refused(
        &crate::support::validated(&allowed, dpop_call("bound1", &[]).bearer("bound1")).await,
        "invalid_token",
        BOUND_AS_BEARER,
    );
}
