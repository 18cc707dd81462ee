//! Authentication: the [`Authenticator`] a server is built with, the Bearer
//! helpers, the challenges the [`Auth`](crate::stages::Auth) stage answers
//! with, and the RFC 9728 protected-resource metadata document.
//!
//! ```
//! use wymcp::auth::{AuthConfig, AuthError, BearerAuth};
//! use wymcp::{Principal, Server};
//!
//! let server = Server::builder()
//!     .auth(
//!         BearerAuth::new(|token: String| async move {
//!             if token == "let-me-in" {
//!                 Ok(Principal { subject: "alice".into(), scopes: vec!["mcp".into()] })
//!             } else {
//!                 Err(AuthError::Unauthorized)
//!             }
//!         }),
//!         AuthConfig::new()
//!             .resource("https://mcp.example.com/mcp")
//!             .authorization_server("https://auth.example.com")
//!             .required_scopes(["mcp"]),
//!     )
//!     .build()
//!     .unwrap();
//! assert_eq!(
//!     server.auth_config().unwrap().metadata_url().as_deref(),
//!     Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
//! );
//! ```

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::exchange::{MessageKind, Principal};
use crate::response::json_response;
use crate::server::{BuildError, Server};

/// The well-known path of RFC 9728 protected-resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The future an [`Authenticator`] answers with.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthError>> + Send + 'a>>;

/// Why a request was not let through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No credentials, or credentials that are malformed, invalid, expired or
    /// not meant for this server: answered `401` with a `WWW-Authenticate:
    /// Bearer` challenge.
    #[error("missing or invalid credentials")]
    Unauthorized,
    /// Valid credentials that lack scopes this request needs: answered `403`
    /// with `WWW-Authenticate: Bearer error="insufficient_scope"` naming
    /// `required`.
    #[error("insufficient scope")]
    InsufficientScope {
        /// The scopes the request needs.
        required: Vec<String>,
    },
}

/// What an [`Authenticator`] is shown of a request.
///
/// The request has been parsed and classified but not validated: the message
/// may be read to require per-method scopes, but nothing in it is trusted.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    parts: &'a Parts,
    authorization: Option<&'a HeaderValue>,
    message: Option<&'a Value>,
    kind: Option<MessageKind>,
}

impl<'a> Credentials<'a> {
    /// The request line and headers.
    #[must_use]
    pub fn parts(&self) -> &'a Parts {
        self.parts
    }

    /// The one `Authorization` header, if sent. A request with more than one
    /// never reaches the authenticator.
    #[must_use]
    pub fn authorization(&self) -> Option<&'a HeaderValue> {
        self.authorization
    }

    /// The token of an `Authorization: Bearer <token>` header (RFC 6750
    /// §2.1: the scheme case-insensitive, the token a `token68`).
    #[must_use]
    pub fn bearer(&self) -> Option<&'a str> {
        bearer_token(self.authorization?)
    }

    /// The parsed, unvalidated JSON-RPC message.
    #[must_use]
    pub fn message(&self) -> Option<&'a Value> {
        self.message
    }

    /// The message's `method`, when it is a string.
    #[must_use]
    pub fn method(&self) -> Option<&'a str> {
        self.message?.get("method")?.as_str()
    }

    /// The message kind classification tagged.
    #[must_use]
    pub fn kind(&self) -> Option<MessageKind> {
        self.kind
    }
}

fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let text = value.to_str().ok()?.trim_matches([' ', '\t']);
    let (scheme, token) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let token68 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    token68.then_some(token)
}

/// Decides who a request comes from.
///
/// Implement it for a token introspection client, a JWT verifier, …; or use
/// [`BearerAuth`] with a closure, or [`StaticTokens`] for tests. The trait is
/// object-safe: the server holds it as `Arc<dyn Authenticator>`.
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates one request: `Ok` with the caller, or why not.
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a>;
}

/// An [`Authenticator`] for `Authorization: Bearer` tokens, verified by a
/// closure. A request without a well-formed Bearer token is
/// [`Unauthorized`](AuthError::Unauthorized) without calling it.
#[derive(Clone)]
pub struct BearerAuth<F> {
    verify: F,
}

impl<F> fmt::Debug for BearerAuth<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth").finish_non_exhaustive()
    }
}

impl<F, Fut> BearerAuth<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, AuthError>> + Send + 'static,
{
    /// Verifies each Bearer token with `verify`.
    pub fn new(verify: F) -> Self {
        BearerAuth { verify }
    }
}

impl<F, Fut> Authenticator for BearerAuth<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, AuthError>> + Send + 'static,
{
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        match credentials.bearer() {
            Some(token) => Box::pin((self.verify)(token.to_owned())),
            None => Box::pin(std::future::ready(Err(AuthError::Unauthorized))),
        }
    }
}

/// A fixed table of Bearer tokens, for tests and development. Tokens are
/// kept and looked up by their SHA-256 digest.
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<[u8; 32], Principal>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// An empty table: every request is unauthorized.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `token` in as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens.insert(digest(token.as_ref()), principal);
        self
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let found = credentials
            .bearer()
            .and_then(|token| self.tokens.get(&digest(token)).cloned());
        Box::pin(std::future::ready(found.ok_or(AuthError::Unauthorized)))
    }
}

/// How a server presents itself as an OAuth 2.1 protected resource: what its
/// challenges say and its RFC 9728 metadata document holds. Every part is
/// optional; a challenge names only the parts configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    resource: Option<String>,
    resource_metadata: Option<String>,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
}

impl AuthConfig {
    /// A configuration with nothing set: challenges are a bare `Bearer`, and
    /// no metadata document is served.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The resource identifier (RFC 8707), the absolute URL clients reach the
    /// endpoint at, e.g. `https://mcp.example.com/mcp`. Setting it serves the
    /// metadata document at `/.well-known/oauth-protected-resource` and at
    /// `/.well-known/oauth-protected-resource/<endpoint path>`, and puts
    /// `resource_metadata` in every challenge. Needs at least one
    /// [`authorization_server`](Self::authorization_server).
    #[must_use]
    pub fn resource(mut self, url: impl Into<String>) -> Self {
        self.resource = Some(url.into());
        self
    }

    /// The metadata URL named in challenges, when it is not the one derived
    /// from [`resource`](Self::resource) (RFC 9728 §3.1: the well-known path
    /// inserted between host and path).
    #[must_use]
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// An authorization server (its issuer identifier) that issues tokens for
    /// this resource; listed in `authorization_servers`.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Scopes every request needs: named in the `scope` of both challenges,
    /// and checked against the principal's scopes after authentication (a
    /// missing one is a `403 insufficient_scope`). Also the default
    /// `scopes_supported`.
    #[must_use]
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The `scopes_supported` of the metadata document, when it is not the
    /// required scopes.
    #[must_use]
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The human-readable `resource_name` of the metadata document.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The `resource_documentation` URL of the metadata document.
    #[must_use]
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The resource identifier, if configured.
    #[must_use]
    pub fn resource_id(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// The scopes every request needs.
    #[must_use]
    pub fn required(&self) -> &[String] {
        &self.required_scopes
    }

    /// The metadata URL challenges name: the configured one, or the one
    /// derived from the resource identifier.
    #[must_use]
    pub fn metadata_url(&self) -> Option<String> {
        if let Some(url) = &self.resource_metadata {
            return Some(url.clone());
        }
        let (origin, path) = split_url(self.resource.as_deref()?)?;
        Some(format!(
            "{origin}{METADATA_PATH}{}",
            path.trim_end_matches('/')
        ))
    }

    /// The RFC 9728 metadata document, when a resource identifier is set.
    #[must_use]
    pub fn metadata_document(&self) -> Option<Value> {
        let resource = self.resource.as_ref()?;
        let mut doc = json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        let scopes = self
            .scopes_supported
            .as_ref()
            .unwrap_or(&self.required_scopes);
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        if let Some(url) = &self.resource_documentation {
            doc["resource_documentation"] = json!(url);
        }
        Some(doc)
    }

    /// The `WWW-Authenticate` value of a `401`:
    /// `Bearer resource_metadata="…", scope="…"`, each part only when
    /// configured.
    #[must_use]
    pub fn unauthorized_challenge(&self) -> String {
        let mut params = Vec::new();
        if let Some(url) = self.metadata_url() {
            params.push(format!("resource_metadata={}", quoted(&url)));
        }
        if let Some(scope) = scope_list(&self.required_scopes) {
            params.push(format!("scope={}", quoted(&scope)));
        }
        challenge(&params)
    }

    /// The `WWW-Authenticate` value of a `403`:
    /// `Bearer error="insufficient_scope", scope="…", resource_metadata="…"`.
    #[must_use]
    pub fn insufficient_scope_challenge(&self, required: &[String]) -> String {
        let mut params = vec![format!("error={}", quoted("insufficient_scope"))];
        if let Some(scope) = scope_list(required) {
            params.push(format!("scope={}", quoted(&scope)));
        }
        if let Some(url) = self.metadata_url() {
            params.push(format!("resource_metadata={}", quoted(&url)));
        }
        challenge(&params)
    }

    fn check(&self) -> Result<(), BuildError> {
        if let Some(resource) = &self.resource {
            if split_url(resource).is_none() {
                return Err(BuildError::Auth(format!(
                    "the resource `{resource}` must be an absolute http(s) URL"
                )));
            }
            if self.authorization_servers.is_empty() {
                return Err(BuildError::Auth(
                    "a resource's metadata must name at least one authorization server".into(),
                ));
            }
        }
        for value in [
            self.unauthorized_challenge(),
            self.insufficient_scope_challenge(&[]),
        ] {
            HeaderValue::try_from(value.as_str()).map_err(|_| {
                BuildError::Auth(format!(
                    "the challenge `{value}` is not a valid header value"
                ))
            })?;
        }
        Ok(())
    }
}

fn challenge(params: &[String]) -> String {
    if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    }
}

/// Scope tokens as RFC 6749 §3.3 spells them; anything else is left out of
/// a challenge rather than breaking its syntax.
fn scope_list(scopes: &[String]) -> Option<String> {
    let valid: Vec<&str> = scopes
        .iter()
        .map(String::as_str)
        .filter(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
        })
        .collect();
    (!valid.is_empty()).then(|| valid.join(" "))
}

fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Splits `scheme://authority/path` into `scheme://authority` and `/path`.
fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if authority_len == 0 {
        return None;
    }
    let scheme_len = url.len() - rest.len();
    let origin = &url[..scheme_len + authority_len];
    let tail = &rest[authority_len..];
    let path = &tail[..tail.find(['?', '#']).unwrap_or(tail.len())];
    Some((origin, path))
}

/// The authenticator and configuration a server was built with.
#[derive(Clone)]
pub(crate) struct AuthSetup {
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) config: AuthConfig,
}

impl fmt::Debug for AuthSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSetup")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AuthSetup {
    pub(crate) fn new(authenticator: impl Authenticator, config: AuthConfig) -> Self {
        AuthSetup {
            authenticator: Arc::new(authenticator),
            config,
        }
    }

    pub(crate) fn check(&self) -> Result<(), BuildError> {
        self.config.check()
    }

    /// Runs the authenticator on one request; a request with more than one
    /// `Authorization` header is unauthorized without consulting it.
    pub(crate) async fn authenticate(
        &self,
        parts: &Parts,
        message: Option<&Value>,
        kind: Option<MessageKind>,
    ) -> Result<Principal, AuthError> {
        let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
        let authorization = values.next();
        if values.next().is_some() {
            return Err(AuthError::Unauthorized);
        }
        let principal = self
            .authenticator
            .authenticate(Credentials {
                parts,
                authorization,
                message,
                kind,
            })
            .await?;
        let required = &self.config.required_scopes;
        if required.iter().any(|s| !principal.scopes.contains(s)) {
            return Err(AuthError::InsufficientScope {
                required: required.clone(),
            });
        }
        Ok(principal)
    }
}

/// The routes serving the RFC 9728 metadata document, when the server's
/// auth configuration has a resource identifier; an empty router otherwise.
pub(crate) fn metadata_router(server: &Server) -> Router {
    let Some(doc) = server.auth_config().and_then(AuthConfig::metadata_document) else {
        return Router::new();
    };
    let body = bytes::Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
    let mut paths = BTreeSet::from([METADATA_PATH.to_owned()]);
    let resource_path = server
        .auth_config()
        .and_then(AuthConfig::resource_id)
        .and_then(split_url)
        .map(|(_, path)| path.trim_end_matches('/'));
    for path in [Some(server.endpoint().trim_end_matches('/')), resource_path]
        .into_iter()
        .flatten()
    {
        if !path.is_empty() {
            paths.insert(format!("{METADATA_PATH}{path}"));
        }
    }
    paths.into_iter().fold(Router::new(), |router, path| {
        let body = body.clone();
        router.route(
            &path,
            axum::routing::get(move || {
                let body = body.clone();
                async move { json_response(StatusCode::OK, body.to_vec()) }
            }),
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn challenges_name_only_what_is_configured() {
        assert_eq!(AuthConfig::new().unauthorized_challenge(), "Bearer");
        let scoped = AuthConfig::new().required_scopes(["files:read", "files:write"]);
        assert_eq!(
            scoped.unauthorized_challenge(),
            r#"Bearer scope="files:read files:write""#
        );
        let full = scoped
            .resource("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com");
        assert_eq!(
            full.unauthorized_challenge(),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#
        );
        assert_eq!(
            full.insufficient_scope_challenge(&["admin".into()]),
            r#"Bearer error="insufficient_scope", scope="admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
        );
        assert_eq!(
            AuthConfig::new().insufficient_scope_challenge(&[]),
            r#"Bearer error="insufficient_scope""#
        );
    }

    #[test]
    fn the_metadata_url_is_derived_per_rfc_9728() {
        let url = |r: &str| AuthConfig::new().resource(r).metadata_url();
        assert_eq!(
            url("https://h.example").as_deref(),
            Some("https://h.example/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            url("http://127.0.0.1:3000/a/mcp/?x=1").as_deref(),
            Some("http://127.0.0.1:3000/.well-known/oauth-protected-resource/a/mcp")
        );
        assert_eq!(url("mcp.example.com/mcp"), None);
        assert_eq!(
            AuthConfig::new()
                .resource("https://h.example/mcp")
                .resource_metadata("https://meta.example/prm")
                .metadata_url()
                .as_deref(),
            Some("https://meta.example/prm")
        );
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        let token = |v: &str| bearer_token(&HeaderValue::from_str(v).unwrap()).map(str::to_owned);
        assert_eq!(
            token("Bearer abc.DEF-_~+/=="),
            Some("abc.DEF-_~+/==".into())
        );
        assert_eq!(token("bearer   abc"), Some("abc".into()));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer"), None);
        assert_eq!(token("Bearer a b"), None);
        assert_eq!(token("Bearer ==="), None);
        assert_eq!(token("Bearer a=b"), None);
    }

    #[test]
    fn a_resource_needs_an_authorization_server() {
        assert!(
            AuthConfig::new()
                .resource("https://h.example/mcp")
                .check()
                .is_err()
        );
        assert!(
            AuthConfig::new()
                .resource("ftp://h.example/mcp")
                .authorization_server("https://a")
                .check()
                .is_err()
        );
        assert!(AuthConfig::new().check().is_ok());
    }
}
