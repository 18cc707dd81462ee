//! A stage of a user's own reaches what a built-in stage reaches: `Auth`
//! and `HeaderBinding` written again outside the crate, against the public
//! API alone (`Exchange`'s methods, `Server`'s getters, `AuthConfig`'s
//! challenges), put in a chain in their places, and held to answer every
//! request as the built-in ones do (ARCHITECTURE.md, "Which way imports
//! run": built-in stages use nothing a user's stage cannot).

use std::sync::Arc;

use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use wymcp::auth::{AuthConfig, AuthError, Principal, StaticTokens, error_description};
use wymcp::{
    Era, ErrorCode, Exchange, Flow, HeaderParamType, MessageKind, Rejection, Server, Stage, Tool,
    ToolResult,
};

/// `Auth`, through `Exchange::authenticate` and the configuration's own
/// challenges.
struct OutsideAuth;

impl Stage for OutsideAuth {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        let Some(config) = ex.server().auth_config() else {
            return Flow::Continue;
        };
        let (status, message, challenge) = match ex.authenticate().await.map(|_| ()) {
            Ok(()) => return Flow::Continue,
            Err(AuthError::InvalidToken { description }) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "unauthorized: invalid token: {}",
                    error_description(&description)
                ),
                config.invalid_token_challenge(&description),
            ),
            Err(AuthError::InsufficientScope { required }) => (
                StatusCode::FORBIDDEN,
                "forbidden: the token lacks a scope this request needs".to_owned(),
                config.forbidden_challenge(ex.headers(), &required),
            ),
            Err(AuthError::Unavailable {
                description,
                retry_after,
            }) => {
                return ex.reject(
                    Rejection::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        ErrorCode::INVALID_REQUEST,
                        format!("unavailable: {}", error_description(&description)),
                    )
                    .header(
                        header::RETRY_AFTER,
                        HeaderValue::from(retry_after.as_secs().max(1)),
                    ),
                );
            }
            Err(_) => (
                StatusCode::UNAUTHORIZED,
                "unauthorized: this server needs a valid bearer token in one `Authorization` header"
                    .to_owned(),
                config.unauthorized_challenge(),
            ),
        };
        let challenge = HeaderValue::try_from(challenge).unwrap();
        ex.reject(
            Rejection::new(status, ErrorCode::INVALID_REQUEST, message)
                .header(header::WWW_AUTHENTICATE, challenge),
        )
    }
}

/// `HeaderBinding`'s 2026-07-28 rows for plain values: the protocol
/// version, `Mcp-Method`, `Mcp-Name` of a `tools/call`, and each
/// `Mcp-Param-*` the tool's schema annotates (`Server::header_params`);
/// the revision established as the built-in establishes it.
struct OutsideBinding;

fn row(ex: &Exchange<'_>, header: &str, body: Option<&str>, required: bool) -> Result<(), String> {
    let sent = ex
        .headers()
        .get(header)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    match (sent, body) {
        (None, _) if !required => Ok(()),
        (Some(sent), Some(body)) if sent.trim() == body => Ok(()),
        (None, None) => Ok(()),
        _ => Err(header.to_owned()),
    }
}

fn bind(ex: &Exchange<'_>) -> Result<(), String> {
    let (Some(message), Some(kind)) = (ex.message(), ex.kind()) else {
        return Ok(());
    };
    let request = kind == MessageKind::Request;
    let params = message.get("params");
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str);
    row(ex, "MCP-Protocol-Version", version, request)?;
    let method = message.get("method").and_then(Value::as_str);
    row(ex, "Mcp-Method", method, request)?;
    if !request || method != Some("tools/call") {
        return Ok(());
    }
    let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str);
    row(ex, "Mcp-Name", tool, true)?;
    let arguments = params.and_then(|p| p.get("arguments"));
    for param in ex.server().header_params(tool.unwrap_or_default()) {
        assert_eq!(
            param.ty,
            HeaderParamType::String,
            "this test's tools annotate strings"
        );
        let value = param
            .path
            .iter()
            .try_fold(arguments, |v, key| v.and_then(|v| v.get(key)).map(Some))
            .flatten()
            .and_then(Value::as_str);
        let header = format!("Mcp-Param-{}", param.name);
        if value.is_some() {
            row(ex, &header, value, true)?;
        }
    }
    Ok(())
}

impl Stage for OutsideBinding {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        if ex.era() != Era::Modern {
            return Flow::Continue;
        }
        match bind(ex) {
            Ok(()) => {
                ex.establish_revision();
                Flow::Continue
            }
            Err(header) => ex.reject(
                Rejection::new(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::HEADER_MISMATCH,
                    format!("header mismatch: `{header}`"),
                )
                .data(json!({ "header": header })),
            ),
        }
    }
}

/// The default chain with the two stages above in the built-ins' places.
#[wymcp::pipeline]
mod outside {
    use wymcp::{Exchange, Flow, stages};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }
    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;
    #[wire_check]
    pub type Auth = super::OutsideAuth;
    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;
    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;
    #[wire_check]
    pub type HeaderBinding = super::OutsideBinding;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

fn server() -> Server {
    let tokens = StaticTokens::new()
        .token("reader", Principal::new("r", ["read"]))
        .token("writer", Principal::new("w", ["read", "write"]));
    let region = Tool::new("regional")
        .input_schema(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
        }}))
        .raw_handler(|args: Value, _| async move { Ok(ToolResult::text(args.to_string())) });
    Server::builder()
        .auth(tokens, AuthConfig::new().required_scopes(["read"]))
        .tool(region)
        .tool(Tool::new("who").raw_handler(|_: Value, cx| async move {
            let who = cx
                .principal()
                .map(|p| p.subject.clone())
                .unwrap_or_default();
            Ok(ToolResult::text(who))
        }))
        .build()
        .unwrap()
}

/// What the two chains' answers must share: status, the JSON-RPC code, id
/// and `data.header`, the challenge, and a result's content.
fn gist(status: StatusCode, challenge: &str, body: &[u8]) -> Value {
    let response: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    json!({
        "status": status.as_u16(),
        "id": response["id"],
        "code": response["error"]["code"],
        "header": response["error"]["data"]["header"],
        "challenge": challenge,
        "content": response["result"]["content"],
    })
}

/// Sends one 2026-07-28 request with exactly these headers beside the
/// framing ones; answers the status, the challenge and the body.
async fn send(
    router: &wymcp::axum::Router,
    token: Option<&str>,
    message: &Value,
    headers: &[(&str, &str)],
) -> (StatusCode, String, bytes::Bytes) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let mut request = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(wymcp::axum::body::Body::from(
            serde_json::to_vec(message).unwrap(),
        ))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, challenge, body)
}

/// One request of the table: its name, the bearer token, the message, the
/// headers beside the framing ones, and the status the default chain answers.
type Case<'m> = (
    &'static str,
    Option<&'static str>,
    &'m Value,
    Vec<(&'static str, &'static str)>,
    u16,
);

/// Rule: every request below, sent to the default chain and to the chain
/// of outside stages, is answered alike: Auth's three refusals word for
/// word, HeaderBinding's mismatches naming the same header, and the
/// principal and revision they establish reaching the handler alike.
#[tokio::test]
async fn outside_auth_and_header_binding_answer_as_the_built_in_ones() {
    let builtin = wymcp::chain::post::router(server());
    let outside = outside::router(server());
    let version = wymcp::Revision::LATEST.as_str();
    let message = |method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    };
    let list = message("tools/list", json!({}));
    let who = message("tools/call", json!({"name": "who", "arguments": {}}));
    let region = message(
        "tools/call",
        json!({"name": "regional", "arguments": {"region": "eu"}}),
    );
    let std = |method: &'static str, name: Option<&'static str>| {
        let mut h = vec![("mcp-protocol-version", version), ("mcp-method", method)];
        h.extend(name.map(|n| ("mcp-name", n)));
        h
    };
    let with = |mut h: Vec<(&'static str, &'static str)>,
                extra: &[(&'static str, &'static str)]| {
        h.extend_from_slice(extra);
        h
    };
    let cases: Vec<Case<'_>> = vec![
        ("no token", None, &list, std("tools/list", None), 401),
        (
            "unknown token",
            Some("stolen"),
            &list,
            std("tools/list", None),
            401,
        ),
        (
            "served",
            Some("reader"),
            &list,
            std("tools/list", None),
            200,
        ),
        (
            "principal",
            Some("writer"),
            &who,
            std("tools/call", Some("who")),
            200,
        ),
        (
            "param bound",
            Some("reader"),
            &region,
            with(
                std("tools/call", Some("regional")),
                &[("mcp-param-region", "eu")],
            ),
            200,
        ),
        (
            "param missing",
            Some("reader"),
            &region,
            std("tools/call", Some("regional")),
            400,
        ),
        (
            "param differs",
            Some("reader"),
            &region,
            with(
                std("tools/call", Some("regional")),
                &[("mcp-param-region", "us")],
            ),
            400,
        ),
        (
            "method differs",
            Some("reader"),
            &list,
            std("prompts/list", None),
            400,
        ),
        (
            "name differs",
            Some("reader"),
            &region,
            with(
                std("tools/call", Some("other")),
                &[("mcp-param-region", "eu")],
            ),
            400,
        ),
        (
            "version missing",
            Some("reader"),
            &list,
            vec![("mcp-method", "tools/list")],
            400,
        ),
    ];
    for (case, token, message, headers, status) in cases {
        let (s1, c1, b1) = send(&builtin, token, message, &headers).await;
        let (s2, c2, b2) = send(&outside, token, message, &headers).await;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(s1.as_u16(), status, "{case}: {}", text(&b1));
        assert_eq!(
            gist(s1, &c1, &b1),
            gist(s2, &c2, &b2),
            "{case}: {}\nvs {}",
            text(&b1),
            text(&b2)
        );
        if status == 401 {
            assert_eq!(b1, b2, "{case}: Auth's refusal word for word");
        }
    }
    let _ = Arc::new(());
}

/// An authenticator that counts its calls and names every caller `counted`.
struct Counting(Arc<std::sync::atomic::AtomicUsize>);

impl wymcp::auth::Authenticator for Counting {
    fn authenticate<'a>(
        &'a self,
        _credentials: wymcp::auth::Credentials<'a>,
    ) -> wymcp::auth::AuthFuture<'a> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(Principal::new("counted", ["read"]))))
    }
}

/// Rule: each fact is established once, by its rule. A stage that runs
/// `authenticate` and `classify` before the built-in stages do makes them
/// answer what it established (the authenticator is asked once); the
/// revision is what the request's own version names, nothing else: a
/// header that disagrees with the body establishes none.
#[tokio::test]
async fn facts_are_established_once_by_their_rules() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = Server::builder()
        .auth(Counting(calls.clone()), AuthConfig::new())
        .build()
        .unwrap();
    let version = wymcp::Revision::LATEST.as_str();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let request = |header: &str| {
        http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", header)
            .body(wymcp::axum::body::Body::from(body.to_string()))
            .unwrap()
    };

    let mut ex = Exchange::new(&server, request(version));
    assert!(ex.message().is_none() && ex.kind().is_none() && ex.principal().is_none());
    ex.read_body().await.unwrap();
    assert_eq!(ex.classify(), MessageKind::Request);
    assert_eq!(ex.era(), Era::Modern);
    let first = ex.authenticate().await.unwrap().map(|p| p.subject.clone());
    assert_eq!(first.as_deref(), Some("counted"));
    assert_eq!(ex.establish_revision(), Some(wymcp::Revision::LATEST));
    // The built-in stages, run after, answer what was established.
    assert!(matches!(
        wymcp::stages::Auth::run(&mut ex).await,
        Flow::Continue
    ));
    assert!(matches!(
        wymcp::stages::Classify::run(&mut ex).await,
        Flow::Continue
    ));
    assert!(ex.read_body().await.is_ok(), "a read body reads as read");
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(ex.principal().map(|p| p.subject.as_str()), Some("counted"));

    // A header naming another served revision than the body's: none.
    let mut ex = Exchange::new(&server, request("2025-11-25"));
    ex.read_body().await.unwrap();
    ex.classify();
    assert_eq!(ex.era(), Era::Legacy, "the header names a 2025 revision");
    assert_eq!(ex.establish_revision(), Some(wymcp::Revision::V2025_11_25));
    let mut ex = Exchange::new(&server, request("2026-01-01"));
    ex.read_body().await.unwrap();
    ex.classify();
    assert_eq!(
        ex.establish_revision(),
        None,
        "the header disagrees with the body"
    );

    // ProtocolFields' rule: judged in one read, refused with its error.
    let mut ex = Exchange::new(&server, request(version));
    ex.read_body().await.unwrap();
    ex.classify();
    assert_eq!(
        ex.judge_protocol_fields().map_err(|e| e.code),
        Ok(Some(wymcp::Revision::LATEST))
    );
    assert_eq!(ex.revision(), Some(wymcp::Revision::LATEST));
    let unserved = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2099-01-01")
        .body(wymcp::axum::body::Body::from(unserved.to_string()))
        .unwrap();
    let mut ex = Exchange::new(&server, request);
    ex.read_body().await.unwrap();
    ex.classify();
    let refused = ex.judge_protocol_fields().unwrap_err();
    assert_eq!(refused.code, wymcp::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(ex.revision(), None);
}

/// A stage that reads the body itself and lets a failed read go on.
struct CarelessReader;

impl Stage for CarelessReader {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        let _ = ex.read_body().await;
        Flow::Continue
    }
}

/// A misassembled chain: the parse step after a stage that read the body.
#[wymcp::pipeline]
mod reads_twice {
    use wymcp::{Exchange, Flow, stages};

    #[body_bound(reason = "reads the body before the parse step, to show what that answers")]
    pub type CarelessReader = super::CarelessReader;
    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

/// Rule: a body is read once. After a read that failed, the parse step has
/// no body to read and says the chain is misassembled: 500, -32603, a null
/// id (nothing was parsed), and no header beyond the body's type and length.
#[tokio::test]
async fn the_parse_step_after_a_failed_read_is_a_misassembled_chain() {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let router = reads_twice::router(Server::builder().build().unwrap());
    let request = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(wymcp::axum::body::Body::from("{not json"))
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let headers: Vec<&str> = response
        .headers()
        .keys()
        .map(http::HeaderName::as_str)
        .collect();
    assert_eq!(headers, ["content-type", "content-length"]);
    let body: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], -32603);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("after the body was read and refused"),
        "{body}"
    );
}
