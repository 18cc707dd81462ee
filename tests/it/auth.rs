//! Auth: the 401 and 403 challenges in their exact forms, the Bearer
//! helpers, the RFC 9728 metadata document, and auth answering before the
//! singleton-header check.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::Server;
use wymcp::auth::Principal;
use wymcp::auth::{AuthConfig, AuthError, BearerAuth, StaticTokens};

use crate::support::{Reply, Req, probe};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

fn alice(scopes: &[&str]) -> Principal {
    Principal {
        subject: "alice".into(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        ..Principal::default()
    }
}

fn full_config() -> AuthConfig {
    AuthConfig::new()
        .resource(RESOURCE)
        .authorization_server("https://auth.example.com")
        .required_scopes(["files:read"])
}

fn with_auth(config: AuthConfig) -> Arc<Server> {
    let tokens = StaticTokens::new()
        .token("good", alice(&["files:read", "files:write"]))
        .token("narrow", alice(&["files:write"]));
    Arc::new(Server::builder().auth(tokens, config).build().unwrap())
}

/// A server with the defaults (serves 2025-11-25 and 2026-07-28).
fn server() -> Arc<Server> {
    Arc::new(Server::builder().build().unwrap())
}

/// A conforming 2026 `tools/list`, id `r-1`.
fn list() -> Req {
    Req::modern("r-1", "tools/list")
}

#[tokio::test]
async fn without_an_authenticator_every_request_continues() {
    let reply = probe(&server(), list()).await;
    assert_eq!(reply.passed()["principal"], Value::Null);
}

#[tokio::test]
async fn a_good_token_sets_the_principal() {
    let server = with_auth(full_config());
    let reply = probe(&server, list().bearer("good")).await;
    assert_eq!(reply.passed()["principal"], "alice");
}

#[tokio::test]
async fn a_401_challenge_names_exactly_what_is_configured() {
    let cases = [
        (AuthConfig::new(), "Bearer"),
        (
            AuthConfig::new().required_scopes(["files:read", "files:write"]),
            r#"Bearer scope="files:read files:write""#,
        ),
        (
            AuthConfig::new().resource_metadata("https://meta.example/prm"),
            r#"Bearer resource_metadata="https://meta.example/prm""#,
        ),
        (
            full_config(),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#,
        ),
    ];
    for (config, challenge) in cases {
        let server = with_auth(config);
        let reply = probe(&server, list()).await;
        reply.rejected("Auth", 401, -32600, &json!("r-1"));
        assert_eq!(reply.header("www-authenticate"), challenge);
    }
}

#[tokio::test]
async fn missing_wrong_and_malformed_credentials_are_401() {
    let server = with_auth(full_config());
    for authorization in [
        None,
        Some("Bearer bad"),
        Some("Basic Z29vZA=="),
        Some("Bearer"),
        Some("Bearer good extra"),
        Some("good"),
    ] {
        let req = match authorization {
            Some(authorization) => list().header("Authorization", authorization),
            None => list(),
        };
        let reply = probe(&server, req).await;
        reply.rejected("Auth", 401, -32600, &json!("r-1"));
        assert_eq!(
            reply.header("www-authenticate"),
            format!(r#"Bearer resource_metadata="{METADATA}", scope="files:read""#),
            "{authorization:?}"
        );
    }
    // The scheme is case-insensitive.
    let reply = probe(&server, list().header("Authorization", "bEaReR good")).await;
    reply.passed();
}

#[tokio::test]
async fn a_token_without_a_required_scope_is_403_insufficient_scope() {
    let server = with_auth(full_config());
    let reply = probe(&server, list().bearer("narrow")).await;
    reply.rejected("Auth", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"Bearer error="insufficient_scope", scope="files:read", resource_metadata="{METADATA}""#
        )
    );
}

#[tokio::test]
async fn an_authenticator_may_require_scopes_per_method() {
    // BearerAuth with a closure; the scopes it names are the 403's.
    let auth = BearerAuth::new(|token: String| async move {
        match token.as_str() {
            "admin" => Err(AuthError::InsufficientScope {
                required: vec!["tools:admin".into(), "tools:call".into()],
            }),
            "ok" => Ok(alice(&[])),
            _ => Err(AuthError::Unauthorized),
        }
    });
    let server = Arc::new(
        Server::builder()
            .auth(auth, AuthConfig::new())
            .build()
            .unwrap(),
    );
    let reply = probe(&server, list().bearer("admin")).await;
    reply.rejected("Auth", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        r#"Bearer error="insufficient_scope", scope="tools:admin tools:call""#
    );
    let reply = probe(&server, list().bearer("ok")).await;
    assert_eq!(reply.passed()["principal"], "alice");
    let reply = probe(&server, list().bearer("nope")).await;
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    assert_eq!(reply.header("www-authenticate"), "Bearer");
}

#[tokio::test]
async fn auth_answers_before_the_singleton_header_check() {
    let server = with_auth(full_config());
    let repeated = || list().repeat("MCP-Protocol-Version");
    // Bad credentials and a repeated MCP-Protocol-Version: auth's 401.
    let reply = probe(&server, repeated().bearer("bad")).await;
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    // Good credentials: the singleton-header check answers next.
    let reply = probe(&server, repeated().bearer("good")).await;
    reply.rejected("SingletonHeaders", 400, -32600, &json!("r-1"));
    assert_eq!(
        reply.body["error"]["data"]["header"],
        "MCP-Protocol-Version"
    );
}

#[tokio::test]
async fn a_repeated_authorization_header_is_auths_401_when_auth_is_configured() {
    // Even two good tokens: ambiguous credentials are no credentials.
    let twice = || list().bearer("good").repeat("Authorization");
    let reply = probe(&with_auth(full_config()), twice()).await;
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    // Without an authenticator, the singleton-header check names it.
    let reply = probe(&server(), twice()).await;
    reply.rejected("SingletonHeaders", 400, -32600, &json!("r-1"));
    assert_eq!(reply.body["error"]["data"]["header"], "Authorization");
}

async fn get(server: &Arc<Server>, path: &str) -> Reply {
    probe(server, Req::get(path)).await
}

#[tokio::test]
async fn the_metadata_document_is_served_at_both_well_known_paths() {
    let server = with_auth(
        full_config()
            .authorization_server("https://other-auth.example.com")
            .scopes_supported(["files:read", "files:write"])
            .resource_name("Example files"),
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = get(&server, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.header("content-type"), "application/json");
        assert_eq!(
            reply.body,
            json!({
                "resource": RESOURCE,
                "authorization_servers": ["https://auth.example.com", "https://other-auth.example.com"],
                "scopes_supported": ["files:read", "files:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Example files",
            }),
            "{path}"
        );
        assert!(reply.rejections.is_empty());
    }
}

#[tokio::test]
async fn the_metadata_document_defaults_scopes_supported_to_the_required_scopes() {
    let reply = get(
        &with_auth(full_config()),
        "/.well-known/oauth-protected-resource/mcp",
    )
    .await;
    assert_eq!(reply.body["scopes_supported"], json!(["files:read"]));
}

#[tokio::test]
async fn no_metadata_document_without_a_resource() {
    for server in [
        server(),
        with_auth(AuthConfig::new().required_scopes(["a"])),
    ] {
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ] {
            assert_eq!(
                get(&server, path).await.status,
                StatusCode::NOT_FOUND,
                "{path}"
            );
        }
    }
}

#[test]
fn a_resource_without_an_authorization_server_does_not_build() {
    let built = Server::builder()
        .auth(StaticTokens::new(), AuthConfig::new().resource(RESOURCE))
        .build();
    assert!(matches!(built, Err(wymcp::BuildError::Auth(_))));
}
