//! Opaque access tokens, asked about at the authorization server's
//! introspection endpoint (RFC 7662).
//!
//! **The request.** `POST` of `token=…&token_type_hint=access_token`,
//! authenticated with the resource server's client credentials
//! (`client_secret_basic`, RFC 6749 §2.3.1: each part form-encoded, then
//! base64).
//!
//! **The answer's rules.** `active` must be `true` (the JSON boolean);
//! `aud` must name this resource (an answer without `aud` only when that is
//! allowed); `iss`, when an issuer is configured, must be it; `exp` must
//! not have passed and `nbf` must have (with the leeway); `sub` names the
//! principal, `scope` its scopes, `client_id` its client.
//!
//! **The cache.** An accepted answer is kept under the token's SHA-256
//! digest (never the token) for the cache TTL, and never past the answer's
//! `exp`: a cached "active" outlives neither. A refusal the endpoint's
//! answer made (inactive, another audience, expired, …) is kept the same
//! way, in a cache of its own, for the refusal TTL (a few seconds): a
//! client repeating a bad token is answered without asking again, and a
//! flood of bad tokens cannot push accepted ones out. A failure to get an
//! answer is not cached. Each cache is bounded: full, it drops what
//! expired, then the oldest.
//!
//! **Asking again.** The principal carries the token's expiry (`exp` plus
//! the leeway) and a [`Recheck`] that asks about the token again, through
//! the cache, every cache TTL: a listen stream opened with the token ends
//! once the endpoint calls it inactive.
//!
//! **The calls.** Requests carrying one token while it is being asked about
//! share that one call. Each call holds a place of the server's
//! [`ledger`](crate::ledger) ([`Kind::AuthCalls`](crate::ledger::Kind::AuthCalls),
//! counted by the client's address: no principal exists yet), within
//! [`Limits::auth_calls_per_caller`](crate::Limits::auth_calls_per_caller)
//! and [`Limits::auth_calls`](crate::Limits::auth_calls); a request whose
//! token would need a call beyond them is refused at once, `429` or `503`
//! with `Retry-After`, never queued.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderValue, Uri};
use serde_json::Value;

use super::authenticator::{AuthError, AuthFuture, Authenticator, Credentials, Principal, Recheck};
use super::cache::{InFlight, TokenCache, TokenDigest, digest};
use super::certificate::check_certificate_binding;
use super::client_certificate::ClientCertificate;
use super::fetch::{FetchSettings, Fetcher, Outage};
use super::verifier::{self, VerifierConfigError};
use crate::ledger::{Caller, Kind, Ledger};

/// The default longest time an introspection answer is reused.
pub(crate) const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);
/// The default most answers kept (in each of the two caches).
pub(crate) const DEFAULT_CACHE_CAPACITY: usize = 10_000;
/// The default longest time a refusal is reused.
pub(crate) const DEFAULT_REFUSAL_CACHE_TTL: Duration = Duration::from_secs(5);

// What a refused opaque token's challenge says.
pub(crate) const INACTIVE: &str = "the token is not active";
pub(crate) const ISSUER: &str = "the token was issued by another issuer";

/// An [`Authenticator`] for opaque access tokens: each is asked about at
/// the authorization server's introspection endpoint (RFC 7662), with this
/// server's client credentials. A token is accepted when the answer is
/// `active`, names this resource in `aud`, and has not expired; the
/// principal is its `sub`, its `scope` and its `client_id`. Accepted
/// answers are cached (by the token's digest, for at most the cache TTL
/// and never past the token's `exp`), refusals briefly (the refusal TTL);
/// requests with one token share one call, and the calls in flight are
/// places of the server's [`ledger`](crate::ledger), per client address
/// and in all ([`Limits::auth_calls`](crate::Limits::auth_calls)). While the endpoint cannot be reached every token it has not
/// already vouched for is refused `401 invalid_token`, and the outage is
/// logged once.
///
/// ```
/// use wymcp::Server;
/// use wymcp::auth::{AuthConfig, Introspection};
///
/// let introspection = Introspection::builder(
///     "https://auth.example.com/oauth2/introspect",
///     "https://mcp.example.com/mcp",            // this resource: `aud` must name it
/// )
/// .client_credentials("mcp-server", std::env::var("INTROSPECTION_SECRET").unwrap_or_default())
/// .build()?;
/// let server = Server::builder()
///     .auth(
///         introspection,
///         AuthConfig::new()
///             .resource("https://mcp.example.com/mcp")
///             .authorization_server("https://auth.example.com"),
///     )
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Introspection {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: Uri,
    authorization: HeaderValue,
    audiences: Vec<String>,
    allow_missing_audience: bool,
    issuer: Option<String>,
    leeway: Duration,
    cache_ttl: Duration,
    refusal_cache_ttl: Duration,
    max_token_bytes: usize,
    /// The principal of an active token, and the key it is bound to
    /// (`cnf.jkt`, RFC 9449 §6.2), if any.
    cache: TokenCache<Bound>,
    refusals: TokenCache<AuthError>,
    in_flight: InFlight<Result<Bound, AuthError>>,
    fetcher: Fetcher,
    outage: Outage,
}

impl fmt::Debug for Introspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Introspection")
            .field("endpoint", &self.inner.endpoint)
            .field("audiences", &self.inner.audiences)
            .finish_non_exhaustive()
    }
}

/// Builds an [`Introspection`]; from [`Introspection::builder`]. Every
/// setting has a default meant for a public endpoint.
///
/// ```
/// use std::time::Duration;
/// use wymcp::auth::Introspection;
///
/// let introspection = Introspection::builder("https://auth.example.com/introspect", "https://mcp.example.com/mcp")
///     .client_credentials("mcp-server", "s3cret")
///     .issuer("https://auth.example.com")
///     .cache_ttl(Duration::from_secs(30))
///     .cache_capacity(50_000)
///     .refusal_cache_ttl(Duration::from_secs(2))
///     .build()?;
/// # Ok::<(), wymcp::auth::VerifierConfigError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct IntrospectionBuilder {
    endpoint: String,
    audiences: Vec<String>,
    credentials: Option<(String, String)>,
    allow_missing_audience: bool,
    issuer: Option<String>,
    leeway: Duration,
    cache_ttl: Duration,
    cache_capacity: usize,
    refusal_cache_ttl: Duration,
    max_token_bytes: usize,
    fetch: FetchSettings,
}

impl fmt::Debug for IntrospectionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionBuilder")
            .field("endpoint", &self.endpoint)
            .field("audiences", &self.audiences)
            .field("client_id", &self.credentials.as_ref().map(|(id, _)| id))
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Asks `endpoint` about each token; an answer's `aud` must name
    /// `audience`, this server's canonical resource URI (RFC 8707).
    /// [`client_credentials`](IntrospectionBuilder::client_credentials) are
    /// required.
    pub fn builder(
        endpoint: impl Into<String>,
        audience: impl Into<String>,
    ) -> IntrospectionBuilder {
        IntrospectionBuilder {
            endpoint: endpoint.into(),
            audiences: vec![audience.into()],
            credentials: None,
            allow_missing_audience: false,
            issuer: None,
            leeway: verifier::DEFAULT_LEEWAY,
            cache_ttl: DEFAULT_CACHE_TTL,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            refusal_cache_ttl: DEFAULT_REFUSAL_CACHE_TTL,
            max_token_bytes: verifier::DEFAULT_MAX_TOKEN_BYTES,
            fetch: FetchSettings::default(),
        }
    }
}

impl IntrospectionBuilder {
    /// The client id and secret this server authenticates to the endpoint
    /// with (HTTP Basic, as `client_secret_basic`).
    pub fn client_credentials(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.credentials = Some((id.into(), secret.into()));
        self
    }

    /// Another `aud` value accepted as naming this server (see
    /// [`JwtVerifierBuilder::additional_audience`](super::JwtVerifierBuilder::additional_audience)).
    pub fn additional_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Accepts answers that carry no `aud` at all, for an authorization
    /// server that leaves it out (an answer whose `aud` names another
    /// resource is still refused). Only where that server issues tokens
    /// for this resource alone.
    pub fn allow_missing_audience(mut self) -> Self {
        self.allow_missing_audience = true;
        self
    }

    /// The issuer an answer's `iss` must be; unchecked unless set.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// How far `exp` and `nbf` may be off, for clock drift; 30 s unless set.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The longest an accepted answer is reused (never past the token's
    /// `exp`); 60 s unless set, and zero turns the cache off. A revoked
    /// token is accepted for at most this long after its revocation.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The most answers cached; 10,000 unless set. Accepted answers and
    /// refusals are cached apart, each up to this many.
    pub fn cache_capacity(mut self, capacity: usize) -> Self {
        self.cache_capacity = capacity;
        self
    }

    /// The longest a refusal the endpoint's answer made (an inactive
    /// token, another audience, …) is reused; 5 s unless set, and zero
    /// turns it off. A token that becomes active is refused for at most
    /// this long after; a failure to get an answer is never cached.
    pub fn refusal_cache_ttl(mut self, ttl: Duration) -> Self {
        self.refusal_cache_ttl = ttl;
        self
    }

    /// How long one introspection request may take; 5 s unless set.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.fetch.timeout = timeout;
        self
    }

    /// The largest answer read; 256 KiB unless set.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.fetch.max_response_bytes = bytes;
        self
    }

    /// The largest token accepted (a longer one is refused without asking);
    /// 16 KiB unless set.
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.max_token_bytes = bytes;
        self
    }

    /// Allows a plain `http` endpoint on a host that is not loopback (see
    /// [`JwtVerifierBuilder::allow_plain_http`](super::JwtVerifierBuilder::allow_plain_http)):
    /// the client secret and every token then cross the network in clear.
    pub fn allow_plain_http(mut self) -> Self {
        self.fetch.plain_http = true;
        self
    }

    /// The authenticator. Nothing is sent yet.
    pub fn build(self) -> Result<Introspection, VerifierConfigError> {
        if self.audiences.iter().any(String::is_empty) {
            return Err(VerifierConfigError::Empty("an audience"));
        }
        let Some((id, secret)) = self.credentials else {
            return Err(VerifierConfigError::NoClientCredentials);
        };
        if id.is_empty() {
            return Err(VerifierConfigError::Empty("the client id"));
        }
        let fetcher = Fetcher::new(self.fetch)?;
        let endpoint = fetcher.check_url(&self.endpoint)?;
        Ok(Introspection {
            inner: Arc::new(Inner {
                endpoint,
                authorization: basic_authorization(&id, &secret),
                audiences: self.audiences,
                allow_missing_audience: self.allow_missing_audience,
                issuer: self.issuer,
                leeway: self.leeway,
                cache_ttl: self.cache_ttl,
                refusal_cache_ttl: self.refusal_cache_ttl,
                max_token_bytes: self.max_token_bytes,
                cache: TokenCache::new(self.cache_capacity),
                refusals: TokenCache::new(self.cache_capacity),
                in_flight: InFlight::default(),
                fetcher,
                outage: Outage::default(),
            }),
        })
    }
}

/// `Basic base64(form(id) ":" form(secret))` (RFC 6749 §2.3.1), marked
/// sensitive.
fn basic_authorization(id: &str, secret: &str) -> HeaderValue {
    let form = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let credentials = STANDARD.encode(format!("{}:{}", form(id), form(secret)));
    // Base64 is always a valid header value.
    let mut value = HeaderValue::try_from(format!("Basic {credentials}"))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    value.set_sensitive(true);
    value
}

impl Authenticator for Introspection {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = verifier::bearer_of(&credentials, self.inner.max_token_bytes)?;
            let (ledger, caller) = (credentials.ledger(), credentials.caller());
            let certificate = credentials.client_certificate();
            let (mut principal, jkt) = self
                .inner
                .introspect(token, certificate, ledger, caller)
                .await?;
            if let Some(jkt) = jkt {
                credentials.bind_to_key(jkt);
            }
            principal.recheck = Some(self.recheck(token, certificate, ledger, caller));
            Ok(principal)
        })
    }
}

impl Introspection {
    /// Asks about `token` again (through the cache, so at most once a
    /// cache TTL and once for every holder of the token), counted as the
    /// request that brought it was: what keeps a listen stream from
    /// outliving a revoked token. The token is held by the check alone, in
    /// memory, for as long as what it holds open; never in the cache, never
    /// in the principal a handler sees.
    fn recheck(
        &self,
        token: &str,
        certificate: Option<&ClientCertificate>,
        ledger: &Ledger,
        caller: &Caller,
    ) -> Recheck {
        let inner = Arc::clone(&self.inner);
        let token: Arc<str> = Arc::from(token);
        let certificate = certificate.cloned();
        let (ledger, caller) = (ledger.clone(), caller.clone());
        Recheck::new(self.inner.cache_ttl, move || {
            let (inner, token) = (Arc::clone(&inner), Arc::clone(&token));
            let (ledger, caller) = (ledger.clone(), caller.clone());
            let certificate = certificate.clone();
            async move {
                inner
                    .introspect(&token, certificate.as_ref(), &ledger, &caller)
                    .await
                    .map(|_| ())
            }
        })
    }
}

/// An active token's principal and the key it is bound to, if any.
type Bound = (Principal, Option<String>);

/// The claims of an introspection answer: it must be a JSON object (RFC
/// 7662 §2.2); anything else is no answer, refused as an unreachable
/// endpoint is (and, like one, not cached).
fn claims_of(answer: &Value) -> Result<&serde_json::Map<String, Value>, AuthError> {
    match answer {
        Value::Object(claims) => Ok(claims),
        _ => Err(AuthError::invalid_token(verifier::UNREACHABLE)),
    }
}

/// The digest an answer about `token` is cached under: the token's, or,
/// when the request came with a client certificate, the token's and the
/// certificate's thumbprint's, so an answer judged with one certificate
/// (RFC 8705 binding, `cnf.x5t#S256`) is never reused for a request with
/// another, or with none.
fn bound_digest(token: &str, certificate: Option<&ClientCertificate>) -> TokenDigest {
    match certificate {
        None => digest(token),
        Some(cert) => digest(&format!("{token}\n{}", cert.thumbprint())),
    }
}

impl Introspection {
    /// What the answer `answer` of the endpoint makes of a token: the
    /// principal and how long it may be reused, or the refusal; for the
    /// fuzz target of the answer's rules.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn judge_answer(&self, answer: &Value) -> Result<(Principal, Duration), AuthError> {
        self.inner
            .judge(claims_of(answer)?, None)
            .map(|((principal, _), ttl)| (principal, ttl))
    }
}

impl Inner {
    async fn introspect(
        &self,
        token: &str,
        certificate: Option<&ClientCertificate>,
        ledger: &Ledger,
        caller: &Caller,
    ) -> Result<Bound, AuthError> {
        let key = bound_digest(token, certificate);
        let now = Instant::now();
        if let Some(principal) = self.cache.get(&key, now) {
            return Ok(principal);
        }
        if let Some(refusal) = self.refusals.get(&key, now) {
            return Err(refusal);
        }
        self.in_flight
            .run(key, || self.call(token, certificate, ledger, caller))
            .await
    }

    /// One call to the endpoint, if the ledger gives the client a place,
    /// and what its answer says, cached.
    async fn call(
        &self,
        token: &str,
        certificate: Option<&ClientCertificate>,
        ledger: &Ledger,
        caller: &Caller,
    ) -> Result<Bound, AuthError> {
        let _place = ledger
            .take(Kind::AuthCalls, caller, 1)
            .map_err(|refusal| AuthError::refused(ledger, refusal))?;
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let answer = match self
            .fetcher
            .post_form(&self.endpoint, &self.authorization, form)
            .await
        {
            Ok(answer) => {
                self.outage
                    .succeeded("the introspection endpoint", &self.endpoint);
                answer
            }
            Err(error) => {
                self.outage
                    .failed("the introspection endpoint", &self.endpoint, &error);
                return Err(AuthError::invalid_token(verifier::UNREACHABLE));
            }
        };
        let claims = claims_of(&answer)?;
        let key = bound_digest(token, certificate);
        let at = Instant::now();
        match self.judge(claims, certificate) {
            Ok((principal, ttl)) => {
                self.cache.insert(key, principal.clone(), at + ttl, at);
                Ok(principal)
            }
            Err(refusal) => {
                self.refusals
                    .insert(key, refusal.clone(), at + self.refusal_cache_ttl, at);
                Err(refusal)
            }
        }
    }

    /// The answer's rules: the principal it vouches for and how long that
    /// may be reused, or why the token is refused.
    fn judge(
        &self,
        claims: &serde_json::Map<String, Value>,
        certificate: Option<&ClientCertificate>,
    ) -> Result<(Bound, Duration), AuthError> {
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(AuthError::invalid_token(INACTIVE));
        }
        if let Some(issuer) = &self.issuer
            && verifier::string_claim(claims, "iss") != Some(issuer.as_str())
        {
            return Err(AuthError::invalid_token(ISSUER));
        }
        verifier::check_audience(claims, &self.audiences, self.allow_missing_audience)?;
        let now = verifier::now();
        verifier::check_times(claims, now, self.leeway, false)?;
        check_certificate_binding(claims, certificate)?;
        let principal = verifier::principal(claims, self.leeway)?;
        let jkt = verifier::bound_key(claims)?.map(str::to_owned);
        let mut ttl = self.cache_ttl;
        if let Some(exp) = claims.get("exp").and_then(Value::as_f64) {
            ttl = ttl.min(Duration::try_from_secs_f64(exp - now).unwrap_or(Duration::ZERO));
        }
        Ok(((principal, jkt), ttl))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn client_credentials_are_form_encoded_then_base64() {
        let value = basic_authorization("my client", "p@ss:wörd");
        assert!(value.is_sensitive());
        let encoded = value.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap();
        assert_eq!(decoded, "my+client:p%40ss%3Aw%C3%B6rd");
    }

    #[test]
    fn introspection_needs_credentials_and_a_usable_endpoint() {
        let builder = || {
            Introspection::builder(
                "http://127.0.0.1:9/introspect",
                "https://mcp.example.com/mcp",
            )
        };
        assert_eq!(
            builder().build().map(|_| ()).unwrap_err(),
            VerifierConfigError::NoClientCredentials
        );
        assert_eq!(
            builder()
                .client_credentials("", "s")
                .build()
                .map(|_| ())
                .unwrap_err(),
            VerifierConfigError::Empty("the client id")
        );
        assert!(builder().client_credentials("id", "s").build().is_ok());
        assert!(matches!(
            Introspection::builder("http://auth.example.com/introspect", "a")
                .client_credentials("id", "s")
                .build()
                .map(|_| ())
                .unwrap_err(),
            VerifierConfigError::Url { .. }
        ));
        let debug = format!("{:?}", builder().client_credentials("id", "hunter2"));
        assert!(!debug.contains("hunter2"), "{debug}");
    }
}
