//! Who the caller is and how a request is judged: [`Principal`], the
//! [`Authenticator`] trait, what it is shown of a request, and the
//! authenticator a server was built with.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use http::request::Parts;
use http::{HeaderValue, header};
use serde_json::Value;

use crate::ledger::{Caller, Kind, Ledger, Place, Refusal};
use crate::protocol::jsonrpc::MessageKind;

use super::config::{AuthConfig, AuthConfigError};
use super::dpop::{self, Dpop, DpopMode, DpopReplay, ProofError, SeenProofs};

/// Who made the request, as the authenticator established it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Principal {
    /// A stable identifier of the caller (a token's `sub`, a client id, …).
    pub subject: String,
    /// The scopes the caller holds.
    pub scopes: Vec<String>,
    /// The OAuth client the token was issued to (a JWT's `client_id` or
    /// `azp`, an introspection answer's `client_id`), when known.
    pub client_id: Option<String>,
    /// When what the authenticator accepted stops being valid (a token's
    /// `exp`, plus the leeway the authenticator gives it), when known.
    /// Something that outlives its request (a `subscriptions/listen`
    /// stream) ends then: the client opens a new one with a new token.
    /// `None`: no expiry is known, and the stream lives its own lifetime.
    pub expires_at: Option<SystemTime>,
    /// How to ask again whether what was accepted still is, for credentials
    /// that can be revoked before they expire (an introspected token). A
    /// listen stream asks at [`Recheck::every`] and ends when the answer is
    /// a refusal. `None`: never asked again.
    pub recheck: Option<Recheck>,
}

/// What [`Recheck::check`] answers with.
pub type RecheckFuture = Pin<Box<dyn Future<Output = Result<(), AuthError>> + Send>>;

/// How an [`Authenticator`] asks again whether credentials it accepted are
/// still valid: a check, and how often to run it. Set it as
/// [`Principal::recheck`].
///
/// The check answers `Ok(())` while the credentials hold. An
/// [`AuthError::Unavailable`] or [`AuthError::Throttled`] answer (a place
/// of the ledger is full) is no verdict: it is asked again at the next
/// interval. Any other error ends what the credentials hold open.
///
/// ```
/// use std::time::Duration;
/// use wymcp::auth::{AuthError, Principal, Recheck};
///
/// let mut principal = Principal::new("alice", ["mcp"]);
/// principal.recheck = Some(Recheck::new(Duration::from_secs(60), || async {
///     // Ask the session store whether alice's session is still open.
///     Err::<(), _>(AuthError::invalid_token("the session was closed"))
/// }));
/// ```
#[derive(Clone)]
pub struct Recheck {
    every: Duration,
    check: Arc<dyn Fn() -> RecheckFuture + Send + Sync>,
}

impl Recheck {
    /// Runs `check` every `every` (at least one second apart).
    pub fn new<F, Fut>(every: Duration, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), AuthError>> + Send + 'static,
    {
        Recheck {
            every,
            check: Arc::new(move || Box::pin(check())),
        }
    }

    /// How often the check runs: at least one second apart.
    #[must_use]
    pub fn every(&self) -> Duration {
        self.every.max(Duration::from_secs(1))
    }

    /// Runs the check once.
    #[must_use]
    pub fn check(&self) -> RecheckFuture {
        (self.check)()
    }
}

impl fmt::Debug for Recheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recheck")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// Two rechecks are equal when they are one check (clones of it), run as
/// often.
impl PartialEq for Recheck {
    fn eq(&self, other: &Self) -> bool {
        self.every == other.every && Arc::ptr_eq(&self.check, &other.check)
    }
}

impl Eq for Recheck {}

impl Principal {
    /// A caller called `subject` holding `scopes`, its client unknown.
    ///
    /// ```
    /// use wymcp::auth::{Principal, StaticTokens};
    ///
    /// let tokens = StaticTokens::new()
    ///     .token("read-token", Principal::new("reader", ["notes:read"]));
    /// # let _ = tokens;
    /// ```
    pub fn new(
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Principal {
            subject: subject.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
            client_id: None,
            expires_at: None,
            recheck: None,
        }
    }

    /// How long from now until [`expires_at`](Self::expires_at): `None`
    /// when no expiry is known, zero once it has passed.
    #[must_use]
    pub fn expires_in(&self) -> Option<Duration> {
        let at = self.expires_at?;
        Some(
            at.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO),
        )
    }
}

impl AuthError {
    /// [`AuthError::InvalidToken`] with this description.
    ///
    /// ```
    /// use wymcp::auth::AuthError;
    ///
    /// let refused = AuthError::invalid_token("the token has expired");
    /// assert_eq!(refused.to_string(), "invalid token: the token has expired");
    /// ```
    #[must_use]
    pub fn invalid_token(description: impl Into<String>) -> Self {
        AuthError::InvalidToken {
            description: description.into(),
        }
    }
}

/// The future an [`Authenticator`] answers with.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthError>> + Send + 'a>>;

/// Why a request was not let through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No credentials, or credentials that are malformed, invalid, expired or
    /// not meant for this server: answered `401` with a `WWW-Authenticate:
    /// Bearer` challenge that names no error (RFC 6750 §3.1: what a request
    /// without a token is answered).
    #[error("missing or invalid credentials")]
    Unauthorized,
    /// A bearer token was sent and is not accepted (malformed, badly signed,
    /// expired, not yet valid, for another audience or issuer, inactive, or
    /// not verifiable now): answered `401` with `WWW-Authenticate: Bearer
    /// error="invalid_token", error_description="…"`.
    ///
    /// The description is for the client, so it says what was wrong and
    /// nothing more: never key material, never the token. The challenge
    /// keeps at most [`MAX_ERROR_DESCRIPTION`](super::MAX_ERROR_DESCRIPTION) characters of it, each
    /// outside RFC 6750's `error_description` set replaced by `?`.
    #[error("invalid token: {description}")]
    InvalidToken {
        /// What was wrong with the token.
        description: String,
    },
    /// Valid credentials that lack scopes this request needs: answered `403`
    /// with `WWW-Authenticate: Bearer error="insufficient_scope"` naming
    /// `required`.
    #[error("insufficient scope")]
    InsufficientScope {
        /// The scopes the request needs.
        required: Vec<String>,
    },
    /// The credentials cannot be judged now because a shared place is full
    /// (the cap of calls to the authorization server in flight): answered
    /// `503` with `Retry-After` and no challenge. The token may well be
    /// valid; the client is told to come back, not that it is refused.
    #[error("unavailable: {description}")]
    Unavailable {
        /// Why, for the client (never a token, never key material).
        description: String,
        /// How long the client should wait before it tries again.
        retry_after: std::time::Duration,
    },
    /// The credentials cannot be judged now because this client holds its
    /// share of a place (its calls to the authorization server in flight):
    /// answered `429` with `Retry-After` and no challenge.
    #[error("throttled: {description}")]
    Throttled {
        /// Why, for the client (never a token, never key material).
        description: String,
        /// How long the client should wait before it tries again.
        retry_after: std::time::Duration,
    },
    /// A DPoP request (RFC 9449) refused: answered `401` with
    /// `WWW-Authenticate: DPoP error="…", error_description="…", algs="…"`
    /// (and the configuration's `resource_metadata` and `scope`), and a
    /// `DPoP-Nonce` header when `nonce` is set.
    #[error("{error}: {description}")]
    Dpop {
        /// `invalid_dpop_proof`, `invalid_token` or `use_dpop_nonce`.
        error: &'static str,
        /// What was wrong, for the client.
        description: String,
        /// The nonce the client is to put in its next proof.
        nonce: Option<String>,
    },
}

impl AuthError {
    /// [`AuthError::Dpop`] with this error code and description.
    #[must_use]
    pub fn dpop(error: &'static str, description: impl Into<String>) -> Self {
        AuthError::Dpop {
            error,
            description: description.into(),
            nonce: None,
        }
    }
}

impl AuthError {
    /// The error of a place the ledger refused: [`Throttled`](Self::Throttled)
    /// for the client's share, [`Unavailable`](Self::Unavailable) for the
    /// server's cap, with the ledger's message and `Retry-After`.
    #[must_use]
    pub fn refused(ledger: &Ledger, refusal: Refusal) -> Self {
        let description = ledger.error(refusal).message.into_owned();
        let retry_after = ledger.share(refusal.kind()).retry_after;
        if refusal.is_share() {
            AuthError::Throttled {
                description,
                retry_after,
            }
        } else {
            AuthError::Unavailable {
                description,
                retry_after,
            }
        }
    }
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
    ledger: &'a Ledger,
    caller: &'a Caller,
    /// Whether a `DPoP` scheme's token counts as the access token (DPoP is
    /// configured).
    dpop: bool,
    /// The RFC 7638 thumbprint the token is bound to (`cnf.jkt`), as the
    /// authenticator found it.
    binding: &'a OnceLock<String>,
}

impl<'a> Credentials<'a> {
    /// Says the token is bound to the key whose RFC 7638 thumbprint is
    /// `jkt` (its `cnf.jkt`, RFC 9449 §6): the request then needs a DPoP
    /// proof made with that key. An authenticator that reads tokens of its
    /// own calls it for a bound one; the first call counts.
    pub fn bind_to_key(&self, jkt: impl Into<String>) {
        let _ = self.binding.set(jkt.into());
    }

    /// The access token of an `Authorization: Bearer <token>` header, or of
    /// an `Authorization: DPoP <token>` one when the server is configured
    /// for DPoP (its proof is checked around the authenticator).
    #[must_use]
    pub fn access_token(&self) -> Option<&'a str> {
        let value = self.authorization?;
        bearer_token(value).or_else(|| self.dpop.then(|| scheme_token(value, "dpop")).flatten())
    }

    /// Whether the `Authorization` header uses the `DPoP` scheme.
    pub(crate) fn is_dpop_scheme(&self) -> bool {
        self.dpop && self.authorization.is_some_and(|v| scheme_is(v, "dpop"))
    }

    /// A place of `amount` of `kind` in the server's
    /// [`ledger`](crate::ledger), for this request's client (its address:
    /// no principal exists yet), or the error to answer: what an
    /// authenticator that calls out (an introspection endpoint, a key
    /// server) holds while it waits.
    pub fn take_place(&self, kind: Kind, amount: usize) -> Result<Place, AuthError> {
        self.ledger
            .take(kind, self.caller, amount)
            .map_err(|refusal| AuthError::refused(self.ledger, refusal))
    }

    /// The server's ledger, for an authenticator that takes places later
    /// (a [`Recheck`] that calls out again).
    pub(crate) fn ledger(&self) -> &'a Ledger {
        self.ledger
    }

    /// Who the ledger counts this request against before it is
    /// authenticated: its client's address, grouped.
    #[must_use]
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }

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

    /// The client certificate the connection's TLS handshake verified
    /// (mTLS, [`serve`](crate::serve()) with
    /// [`TlsBuilder::client_ca`](crate::serve::TlsBuilder::client_ca)), if any.
    #[must_use]
    pub fn client_certificate(&self) -> Option<&'a super::client_certificate::ClientCertificate> {
        self.parts
            .extensions
            .get::<super::client_certificate::ClientCertificate>()
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
    scheme_token(value, "bearer")
}

/// Whether `value`'s scheme is `scheme` (case-insensitive).
pub(crate) fn scheme_is(value: &HeaderValue, scheme: &str) -> bool {
    let text = value.as_bytes();
    let start = text
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    let word: Vec<u8> = text[start..]
        .iter()
        .take_while(|b| **b != b' ')
        .copied()
        .collect();
    word.eq_ignore_ascii_case(scheme.as_bytes())
}

fn scheme_token<'v>(value: &'v HeaderValue, wanted: &str) -> Option<&'v str> {
    let text = value.to_str().ok()?.trim_matches([' ', '\t']);
    let (scheme, token) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case(wanted) {
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
/// [`BearerAuth`](super::BearerAuth) with a closure, or
/// [`StaticTokens`](super::StaticTokens) for tests. The trait is
/// object-safe: the server holds it as `Arc<dyn Authenticator>`.
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates one request: `Ok` with the caller, or why not.
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a>;
}

/// The error to answer for a refused proof.
fn proof_error(ledger: &Ledger, error: ProofError) -> AuthError {
    match error {
        ProofError::Refused {
            error,
            description,
            nonce,
        } => AuthError::Dpop {
            error,
            description: description.to_owned(),
            nonce,
        },
        ProofError::Ledger(refusal) => AuthError::refused(ledger, refusal),
    }
}

/// The authenticator and configuration a server was built with.
#[derive(Clone)]
pub(crate) struct AuthSetup {
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) config: AuthConfig,
    /// The DPoP proofs this replica saw within the window.
    seen: Arc<SeenProofs>,
    /// The replay store shared with other replicas, when set.
    pub(crate) replay: Option<Arc<dyn DpopReplay>>,
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
            seen: Arc::default(),
            replay: None,
        }
    }

    pub(crate) fn check(&self) -> Result<(), AuthConfigError> {
        self.config.check()
    }

    /// Runs the authenticator on one request; a request with more than one
    /// `Authorization` header is unauthorized without consulting it. With
    /// DPoP configured, the proof is checked around it (`auth/dpop.rs`).
    pub(crate) async fn authenticate(
        &self,
        parts: &Parts,
        message: Option<&Value>,
        kind: Option<MessageKind>,
        ledger: &Ledger,
        caller: &Caller,
    ) -> Result<Principal, AuthError> {
        let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
        let authorization = values.next();
        if values.next().is_some() {
            return Err(AuthError::Unauthorized);
        }
        let binding = OnceLock::new();
        let credentials = Credentials {
            parts,
            authorization,
            message,
            kind,
            ledger,
            caller,
            dpop: self.config.dpop_policy().is_some(),
            binding: &binding,
        };
        let principal = match self.config.dpop_policy() {
            None => self.authenticator.authenticate(credentials).await?,
            Some(policy) => self.with_dpop(policy, credentials, &binding).await?,
        };
        let required = self.config.required();
        if required.iter().any(|s| !principal.scopes.contains(s)) {
            return Err(AuthError::InsufficientScope {
                required: required.to_vec(),
            });
        }
        Ok(principal)
    }

    /// The authenticator, with the DPoP proof's checks before it (the
    /// proof on its own) and after it (the token's binding, then replay).
    async fn with_dpop(
        &self,
        policy: &Dpop,
        credentials: Credentials<'_>,
        binding: &OnceLock<String>,
    ) -> Result<Principal, AuthError> {
        let invalid_token = |description: &str| AuthError::dpop("invalid_token", description);
        let ledger = credentials.ledger;
        let proof_header =
            dpop::proof_header(&credentials.parts.headers).map_err(|e| proof_error(ledger, e))?;
        let now = dpop::now();
        let proof = if credentials.is_dpop_scheme() {
            let token = credentials
                .access_token()
                .ok_or_else(|| invalid_token(dpop::MALFORMED_DPOP_HEADER))?;
            let proof = proof_header
                .ok_or_else(|| AuthError::dpop("invalid_dpop_proof", dpop::NO_PROOF))?;
            // `check` refuses a configuration with DPoP and no resource.
            let resource = self.config.resource_id().unwrap_or_default();
            Some(
                dpop::check_proof(
                    policy,
                    proof,
                    &credentials.parts.method,
                    resource,
                    token,
                    now,
                )
                .map_err(|e| proof_error(ledger, e))?,
            )
        } else {
            if policy.mode() == DpopMode::Required && credentials.authorization.is_some() {
                return Err(invalid_token(dpop::DPOP_REQUIRED));
            }
            None
        };
        let principal = match self.authenticator.authenticate(credentials).await {
            Err(AuthError::InvalidToken { description }) if proof.is_some() => {
                return Err(invalid_token(&description));
            }
            other => other?,
        };
        let Some(proof) = proof else {
            if binding.get().is_some() {
                return Err(invalid_token(dpop::BOUND_AS_BEARER));
            }
            return Ok(principal);
        };
        match binding.get() {
            None => return Err(invalid_token(dpop::NOT_BOUND)),
            Some(jkt) if !super::client_certificate::same_thumbprint(&proof.jkt, jkt) => {
                return Err(AuthError::dpop("invalid_dpop_proof", dpop::PROOF_KEY));
            }
            Some(_) => {}
        }
        let (key, ttl) = self
            .seen
            .record(&proof, policy, credentials.ledger, credentials.caller, now)
            .map_err(|e| proof_error(ledger, e))?;
        if let Some(replay) = &self.replay {
            match replay.first_use(&key, ttl).await {
                Ok(true) => {}
                Ok(false) => {
                    return Err(AuthError::dpop("invalid_dpop_proof", dpop::PROOF_REPLAYED));
                }
                Err(_) => {
                    return Err(AuthError::Unavailable {
                        description: dpop::REPLAY_UNAVAILABLE.to_owned(),
                        retry_after: std::time::Duration::from_secs(1),
                    });
                }
            }
        }
        Ok(principal)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
