//! How a server presents itself as an OAuth 2.1 protected resource: the
//! challenges of its `401`/`403` answers and its RFC 9728 metadata document.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::dpop::{Dpop, DpopMode};

/// The well-known path of RFC 9728 protected-resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The most characters of an [`AuthError::InvalidToken`](super::AuthError)
/// description a challenge carries; the rest is cut.
pub const MAX_ERROR_DESCRIPTION: usize = 200;

/// Why an [`AuthConfig`] cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// The resource identifier is not an absolute `http(s)` URL.
    #[error("the resource `{0}` must be an absolute http(s) URL")]
    Resource(String),
    /// A resource identifier is set but no authorization server.
    #[error("a resource's metadata must name at least one authorization server")]
    NoAuthorizationServer,
    /// A challenge built from the configuration is not a valid header value.
    #[error("the challenge `{0}` is not a valid header value")]
    Challenge(String),
    /// DPoP is configured without a resource identifier: proofs' `htu` has
    /// nothing to name.
    #[error("DPoP needs a resource identifier: the URL every proof's htu names")]
    DpopWithoutResource,
    /// DPoP is configured with no signing algorithm.
    #[error("DPoP needs at least one signing algorithm")]
    DpopWithoutAlgorithm,
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
    dpop: Option<Dpop>,
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

    /// Verifies DPoP proofs (RFC 9449) as `policy` says: required for every
    /// request, or allowed beside Bearer. Needs a
    /// [`resource`](Self::resource): it is the URL every proof's `htu`
    /// must name. The metadata document then advertises
    /// `dpop_signing_alg_values_supported` and
    /// `dpop_bound_access_tokens_required`, and challenges name the `DPoP`
    /// scheme with its `algs`. See docs/auth.md.
    #[must_use]
    pub fn dpop(mut self, policy: Dpop) -> Self {
        self.dpop = Some(policy);
        self
    }

    /// The DPoP policy, if configured.
    #[must_use]
    pub fn dpop_policy(&self) -> Option<&Dpop> {
        self.dpop.as_ref()
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
        if let Some(dpop) = &self.dpop {
            doc["dpop_signing_alg_values_supported"] = json!(dpop.algorithm_names());
            doc["dpop_bound_access_tokens_required"] = json!(dpop.mode() == DpopMode::Required);
        }
        Some(doc)
    }

    /// The paths the metadata document is served at for a server whose
    /// endpoint is `endpoint`: the well-known path itself, and the
    /// well-known path followed by the endpoint's and the resource
    /// identifier's paths (RFC 9728 §3.1). Empty when no resource is set.
    #[must_use]
    pub fn metadata_paths(&self, endpoint: &str) -> Vec<String> {
        let Some(resource) = &self.resource else {
            return Vec::new();
        };
        let mut paths = std::collections::BTreeSet::from([METADATA_PATH.to_owned()]);
        let resource_path = split_url(resource).map(|(_, path)| path.trim_end_matches('/'));
        for path in [Some(endpoint.trim_end_matches('/')), resource_path]
            .into_iter()
            .flatten()
        {
            if !path.is_empty() {
                paths.insert(format!("{METADATA_PATH}{path}"));
            }
        }
        paths.into_iter().collect()
    }

    /// The `WWW-Authenticate` value of a `401`:
    /// `Bearer resource_metadata="…", scope="…"`, each part only when
    /// configured.
    ///
    /// With [`dpop`](Self::dpop): `DPoP algs="…", resource_metadata="…",
    /// scope="…"` when DPoP is required, and the Bearer challenge followed
    /// by that one when it is allowed (RFC 9449 §7.1).
    #[must_use]
    pub fn unauthorized_challenge(&self) -> String {
        let mut params = Vec::new();
        if let Some(url) = self.metadata_url() {
            params.push(format!("resource_metadata={}", quoted(&url)));
        }
        if let Some(scope) = scope_list(&self.required_scopes) {
            params.push(format!("scope={}", quoted(&scope)));
        }
        match &self.dpop {
            None => challenge(&params),
            Some(dpop) => {
                let mut dpop_params = vec![format!("algs={}", quoted(&dpop.algs()))];
                dpop_params.extend(params.iter().cloned());
                let dpop_challenge = format!("DPoP {}", dpop_params.join(", "));
                match dpop.mode() {
                    DpopMode::Required => dpop_challenge,
                    DpopMode::Allowed => format!("{}, {dpop_challenge}", challenge(&params)),
                }
            }
        }
    }

    /// The `WWW-Authenticate` value of a refused DPoP request (RFC 9449
    /// §7.1): `DPoP error="…", error_description="…", algs="…",
    /// resource_metadata="…", scope="…"`, the description bounded and made
    /// header-safe as [`invalid_token_challenge`](Self::invalid_token_challenge)'s is.
    #[must_use]
    pub fn dpop_challenge(&self, error: &str, description: &str) -> String {
        let mut params = vec![format!("error={}", quoted(error))];
        let description = error_description(description);
        if !description.is_empty() {
            params.push(format!("error_description={}", quoted(&description)));
        }
        if let Some(dpop) = &self.dpop {
            params.push(format!("algs={}", quoted(&dpop.algs())));
        }
        if let Some(url) = self.metadata_url() {
            params.push(format!("resource_metadata={}", quoted(&url)));
        }
        if let Some(scope) = scope_list(&self.required_scopes) {
            params.push(format!("scope={}", quoted(&scope)));
        }
        format!("DPoP {}", params.join(", "))
    }

    /// The `WWW-Authenticate` value of a `401` for a token that was sent
    /// and refused: `Bearer error="invalid_token", error_description="…",
    /// resource_metadata="…", scope="…"` (RFC 6750 §3.1), the last two only
    /// when configured. The description is cut to
    /// [`MAX_ERROR_DESCRIPTION`] characters, and each character RFC 6750
    /// does not allow in it (outside `%x20-21 / %x23-5B / %x5D-7E`: quotes,
    /// backslashes, control and non-ASCII characters) becomes `?`, so that
    /// whatever an authenticator says the header stays valid.
    #[must_use]
    pub fn invalid_token_challenge(&self, description: &str) -> String {
        let mut params = vec![format!("error={}", quoted("invalid_token"))];
        let description = error_description(description);
        if !description.is_empty() {
            params.push(format!("error_description={}", quoted(&description)));
        }
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

    /// The `WWW-Authenticate` value of a `403` to a request authenticated
    /// with the `DPoP` scheme (RFC 9449 §7.1: the challenge names the
    /// scheme the request used): `DPoP error="insufficient_scope",
    /// scope="…", algs="…", resource_metadata="…"`, each part but the
    /// error only when configured.
    #[must_use]
    pub fn dpop_insufficient_scope_challenge(&self, required: &[String]) -> String {
        let mut params = vec![format!("error={}", quoted("insufficient_scope"))];
        if let Some(scope) = scope_list(required) {
            params.push(format!("scope={}", quoted(&scope)));
        }
        if let Some(dpop) = &self.dpop {
            params.push(format!("algs={}", quoted(&dpop.algs())));
        }
        if let Some(url) = self.metadata_url() {
            params.push(format!("resource_metadata={}", quoted(&url)));
        }
        format!("DPoP {}", params.join(", "))
    }

    /// The `403` challenge for a request with these headers:
    /// [`dpop_insufficient_scope_challenge`](Self::dpop_insufficient_scope_challenge)
    /// when the request [uses the `DPoP` scheme](Self::uses_dpop_scheme),
    /// [`insufficient_scope_challenge`](Self::insufficient_scope_challenge)
    /// otherwise.
    #[must_use]
    pub fn forbidden_challenge(&self, headers: &HeaderMap, required: &[String]) -> String {
        if self.uses_dpop_scheme(headers) {
            self.dpop_insufficient_scope_challenge(required)
        } else {
            self.insufficient_scope_challenge(required)
        }
    }

    /// Whether DPoP is configured and the request's one `Authorization`
    /// header uses the `DPoP` scheme: a request that passed authentication
    /// so was authenticated by DPoP (RFC 9449 §7.1).
    #[must_use]
    pub fn uses_dpop_scheme(&self, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        match (values.next(), values.next()) {
            // The scheme: the first word, case-insensitive (RFC 9110 §11.1).
            (Some(value), None) => {
                self.dpop.is_some()
                    && value
                        .as_bytes()
                        .trim_ascii_start()
                        .split(|b| *b == b' ')
                        .next()
                        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"dpop"))
            }
            _ => false,
        }
    }

    pub(crate) fn check(&self) -> Result<(), AuthConfigError> {
        if let Some(resource) = &self.resource {
            if split_url(resource).is_none() {
                return Err(AuthConfigError::Resource(resource.clone()));
            }
            if self.authorization_servers.is_empty() {
                return Err(AuthConfigError::NoAuthorizationServer);
            }
        }
        if let Some(dpop) = &self.dpop {
            if self.resource.is_none() {
                return Err(AuthConfigError::DpopWithoutResource);
            }
            if dpop.algs().is_empty() {
                return Err(AuthConfigError::DpopWithoutAlgorithm);
            }
        }
        for value in [
            self.unauthorized_challenge(),
            self.invalid_token_challenge("x"),
            self.insufficient_scope_challenge(&[]),
            self.dpop_insufficient_scope_challenge(&[]),
            self.dpop_challenge("invalid_dpop_proof", "x"),
        ] {
            if HeaderValue::try_from(value.as_str()).is_err() {
                return Err(AuthConfigError::Challenge(value));
            }
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

/// An `error_description` as RFC 6750 §3 allows it: at most
/// [`MAX_ERROR_DESCRIPTION`] characters of `%x20-21 / %x23-5B / %x5D-7E`,
/// any other character replaced by `?`.
pub fn error_description(text: &str) -> String {
    text.chars()
        .take(MAX_ERROR_DESCRIPTION)
        .map(|c| match c {
            ' ' | '!' | '\x23'..='\x5B' | '\x5D'..='\x7E' => c,
            _ => '?',
        })
        .collect()
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

    /// RFC 9449 §7.1: the 403 names the scheme the request used; the
    /// scheme is read case-insensitively, and only when DPoP is configured.
    #[test]
    fn a_403_to_a_dpop_request_is_challenged_with_the_dpop_scheme() {
        let config = AuthConfig::new()
            .resource("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com")
            .dpop(Dpop::allowed().algorithms([crate::auth::algorithm::Algorithm::ES256]));
        let headers = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
            h
        };
        let dpop = r#"DPoP error="insufficient_scope", scope="admin", algs="ES256", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#;
        for value in ["DPoP abc", "dpop abc", " DPOP abc"] {
            assert!(config.uses_dpop_scheme(&headers(value)), "{value}");
            assert_eq!(
                config.forbidden_challenge(&headers(value), &["admin".into()]),
                dpop
            );
        }
        for value in ["Bearer abc", "DPoPx abc"] {
            assert!(!config.uses_dpop_scheme(&headers(value)), "{value}");
            assert!(
                config
                    .forbidden_challenge(&headers(value), &["admin".into()])
                    .starts_with("Bearer error=\"insufficient_scope\"")
            );
        }
        assert!(!config.uses_dpop_scheme(&HeaderMap::new()));
        // Without DPoP configured, a DPoP scheme is no DPoP request.
        assert!(!AuthConfig::new().uses_dpop_scheme(&headers("DPoP abc")));
    }

    #[test]
    fn an_invalid_token_challenge_names_the_error_and_its_description() {
        assert_eq!(
            AuthConfig::new().invalid_token_challenge("the token has expired"),
            r#"Bearer error="invalid_token", error_description="the token has expired""#
        );
        let full = AuthConfig::new()
            .resource("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com")
            .required_scopes(["files:read"]);
        assert_eq!(
            full.invalid_token_challenge("bad"),
            r#"Bearer error="invalid_token", error_description="bad", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#
        );
        assert_eq!(
            AuthConfig::new().invalid_token_challenge(""),
            r#"Bearer error="invalid_token""#
        );
    }

    #[test]
    fn an_error_description_is_bounded_and_header_safe() {
        assert_eq!(
            error_description("say \"hi\"\\ now\r\nX: y é\u{7f}"),
            "say ?hi?? now??X: y ??"
        );
        let long = "a".repeat(10 * MAX_ERROR_DESCRIPTION);
        assert_eq!(error_description(&long).len(), MAX_ERROR_DESCRIPTION);
        let challenge = AuthConfig::new().invalid_token_challenge(&format!("\"\u{0}{long}"));
        assert!(HeaderValue::try_from(challenge.as_str()).is_ok());
        assert!(challenge.len() < MAX_ERROR_DESCRIPTION + 64);
        // Every allowed character is kept as it is.
        let allowed: String = (0x20u8..=0x7e)
            .filter(|b| *b != b'"' && *b != b'\\')
            .map(char::from)
            .collect();
        assert_eq!(error_description(&allowed), allowed);
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
