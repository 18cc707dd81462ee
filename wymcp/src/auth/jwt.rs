//! JWT access tokens (RFC 9068), verified against the authorization
//! server's published keys.
//!
//! **The order of the checks.** The header first, before any key is looked
//! up: three base64url parts; an `alg` that is on the allow-list (`none`
//! and the HMAC algorithms cannot be put on it: a public key is never an
//! HMAC secret); no `crit`; a `typ` of `at+jwt` (or, when allowed, `JWT` or
//! none). Then the key the `kid` names, in the set the authorization
//! server publishes (a key embedded in the token, `jwk`, `jku`, `x5u`,
//! `x5c`, is never used), and the signature. Only a token whose signature
//! verifies has its claims read: `iss` exactly the configured issuer, `aud`
//! naming this resource, `exp` required, `nbf` and `iat` with the leeway,
//! `sub` required. The principal is `sub`, the scopes of `scope` or `scp`,
//! and the client of `client_id` or `azp`.
//!
//! **The crypto.** `jsonwebtoken`'s RustCrypto backend, called directly
//! (never through the process-wide provider, which another crate of the
//! application may have set up otherwise).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER;
use serde_json::{Map, Value};

use super::algorithm::Algorithm;
use super::authenticator::{AuthError, AuthFuture, Authenticator, Credentials, Principal};
use super::certificate::check_certificate_binding;
use super::client_certificate::ClientCertificate;
use super::fetch::{FetchSettings, Fetcher};
use super::jwks::{self, Key, Keys, Missing, Source};
use super::verifier::{self, VerifierConfigError};

// What a refused JWT's challenge says, beyond the shared descriptions.
pub(crate) const MALFORMED: &str = "the token is not a well-formed JWT";
pub(crate) const UNSIGNED: &str = "the token is not signed (alg none)";
pub(crate) const ALGORITHM: &str = "the token's signing algorithm is not accepted";
pub(crate) const CRITICAL: &str =
    "the token has critical header parameters this server does not understand";
pub(crate) const TYP: &str = "the token's typ is not at+jwt (RFC 9068)";
pub(crate) const UNKNOWN_KEY: &str =
    "the token names a signing key the authorization server does not publish";
pub(crate) const AMBIGUOUS_KEY: &str =
    "the token names no signing key (kid), and the authorization server publishes several";
pub(crate) const SIGNATURE: &str = "the token's signature does not verify";
pub(crate) const ISSUER: &str = "the token was issued by another issuer";

/// An [`Authenticator`] for JWT access tokens (RFC 9068): the signature is
/// checked against the authorization server's JWK Set, `iss` must be the
/// issuer, `aud` must name this resource (RFC 8707: a token minted for
/// another resource is refused), and `exp`, `nbf` and `iat` must hold with
/// a small leeway. The principal is the token's `sub`, its scopes (`scope`,
/// or `scp`) and its client (`client_id`, or `azp`).
///
/// The key set is found at [`jwks_url`](JwtVerifierBuilder::jwks_url), or
/// else through the issuer's RFC 8414 / OpenID Connect metadata; it is
/// fetched on the first token, cached, fetched again when it is older than
/// [`keys_max_age`](JwtVerifierBuilder::keys_max_age) or a token names a
/// `kid` it does not hold, and never twice within
/// [`refresh_interval`](JwtVerifierBuilder::refresh_interval). A token is
/// refused `401 invalid_token` with a description of what was wrong; while
/// the authorization server cannot be reached, a token whose key is not
/// already held is refused the same way (never a 5xx), and the outage is
/// logged once.
///
/// ```
/// use wymcp::Server;
/// use wymcp::auth::{AuthConfig, JwtVerifier};
///
/// let verifier = JwtVerifier::builder(
///     "https://auth.example.com/realms/mcp",  // `iss`, exactly
///     "https://mcp.example.com/mcp",          // this resource: `aud` must name it
/// )
/// .build()?;                                  // keys found through the issuer's metadata
/// let server = Server::builder()
///     .auth(
///         verifier,
///         AuthConfig::new()
///             .resource("https://mcp.example.com/mcp")
///             .authorization_server("https://auth.example.com/realms/mcp")
///             .required_scopes(["mcp:tools"]),
///     )
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    generic_typ: bool,
    leeway: Duration,
    max_token_bytes: usize,
    keys: Keys,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &self.inner.algorithms)
            .finish_non_exhaustive()
    }
}

/// Builds a [`JwtVerifier`]; from [`JwtVerifier::builder`]. Every setting
/// has a default meant for a public endpoint.
///
/// ```
/// use std::time::Duration;
/// use wymcp::auth::{Algorithm, JwtVerifier};
///
/// let verifier = JwtVerifier::builder("https://tenant.example-idp.com/", "https://mcp.example.com/mcp")
///     .jwks_url("https://tenant.example-idp.com/.well-known/jwks.json")
///     .algorithms([Algorithm::RS256, Algorithm::PS256])
///     .accept_generic_typ()               // the server issues `typ: JWT`
///     .leeway(Duration::from_secs(10))
///     .refresh_interval(Duration::from_secs(120))
///     .build()?;
/// # Ok::<(), wymcp::auth::VerifierConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct JwtVerifierBuilder {
    issuer: String,
    audiences: Vec<String>,
    jwks_url: Option<String>,
    algorithms: Vec<Algorithm>,
    generic_typ: bool,
    leeway: Duration,
    refresh_interval: Duration,
    keys_max_age: Duration,
    max_token_bytes: usize,
    fetch: FetchSettings,
}

impl JwtVerifier {
    /// A verifier of tokens issued by `issuer` (compared with `iss`
    /// exactly) for `audience`: this server's canonical resource URI (RFC
    /// 8707), which a token's `aud` must name.
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            jwks_url: None,
            algorithms: Algorithm::DEFAULT.to_vec(),
            generic_typ: false,
            leeway: verifier::DEFAULT_LEEWAY,
            refresh_interval: jwks::DEFAULT_REFRESH_INTERVAL,
            keys_max_age: jwks::DEFAULT_MAX_AGE,
            max_token_bytes: verifier::DEFAULT_MAX_TOKEN_BYTES,
            fetch: FetchSettings::default(),
        }
    }
}

impl JwtVerifierBuilder {
    /// Where the authorization server publishes its JWK Set. Unset, it is
    /// the `jwks_uri` of the issuer's metadata (RFC 8414
    /// `/.well-known/oauth-authorization-server`, then OpenID Connect
    /// `/.well-known/openid-configuration`), whose `issuer` must be the
    /// configured issuer, and whose `jwks_uri` must be `https` or on the
    /// issuer's own origin (a server's answer never gets the leeway
    /// [`allow_plain_http`](Self::allow_plain_http) gives the URLs configured
    /// here).
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.jwks_url = Some(url.into());
        self
    }

    /// Another `aud` value accepted as naming this server, for an
    /// authorization server that does not put the resource URI in `aud`
    /// (one that names its API by an id). The resource URI given to
    /// [`JwtVerifier::builder`] stays accepted.
    pub fn additional_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// The signing algorithms accepted; [`Algorithm::DEFAULT`] unless set.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Also accepts a `typ` of `JWT`, or none, besides RFC 9068's `at+jwt`:
    /// most authorization servers type their access tokens so. The audience
    /// check still keeps out an ID token (whose `aud` is a client).
    pub fn accept_generic_typ(mut self) -> Self {
        self.generic_typ = true;
        self
    }

    /// How far `exp`, `nbf` and `iat` may be off, for clock drift; 30 s
    /// unless set.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the key set, whatever asks
    /// for one (a `kid` not in the set, the set's age); 60 s unless set.
    /// One fetch runs at a time; while it does, the other requests verify
    /// against the keys already held.
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// The age past which the key set is fetched again (so that a key the
    /// authorization server withdrew stops verifying); 15 minutes unless
    /// set. While the server cannot be reached, the keys held go on being
    /// used.
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.keys_max_age = age;
        self
    }

    /// How long one exchange with the authorization server (connect,
    /// request, whole response) may take; 5 s unless set.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.fetch.timeout = timeout;
        self
    }

    /// The largest response read from the authorization server; 256 KiB
    /// unless set.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.fetch.max_response_bytes = bytes;
        self
    }

    /// The largest token accepted; a longer one is refused before it is
    /// decoded. 16 KiB unless set.
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.max_token_bytes = bytes;
        self
    }

    /// Allows plain `http` URLs to hosts that are not loopback (plain
    /// `http` to `localhost`, `127.0.0.0/8` or `::1` is always allowed).
    /// Anyone on the path of such a request can substitute keys: use it
    /// only inside a network you trust.
    pub fn allow_plain_http(mut self) -> Self {
        self.fetch.plain_http = true;
        self
    }

    /// The verifier. Nothing is fetched yet: the key set is read on the
    /// first token, so a server starts while its authorization server is
    /// down (and refuses tokens until it answers).
    pub fn build(self) -> Result<JwtVerifier, VerifierConfigError> {
        if self.issuer.is_empty() {
            return Err(VerifierConfigError::Empty("the issuer"));
        }
        if self.audiences.iter().any(String::is_empty) {
            return Err(VerifierConfigError::Empty("an audience"));
        }
        if self.algorithms.is_empty() {
            return Err(VerifierConfigError::NoAlgorithms);
        }
        let fetcher = Fetcher::new(self.fetch)?;
        let source = if let Some(url) = &self.jwks_url {
            Source::Url(fetcher.check_url(url)?)
        } else {
            fetcher.check_url(&self.issuer)?;
            let metadata = jwks::metadata_urls(&self.issuer)
                .iter()
                .map(|url| fetcher.check_url(url))
                .collect::<Result<_, _>>()?;
            Source::Discovery {
                issuer: self.issuer.clone(),
                metadata,
            }
        };
        let keys = Keys::new(fetcher, source, self.refresh_interval, self.keys_max_age);
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audiences: self.audiences,
                algorithms: self.algorithms,
                generic_typ: self.generic_typ,
                leeway: self.leeway,
                max_token_bytes: self.max_token_bytes,
                keys,
            }),
        })
    }
}

impl Authenticator for JwtVerifier {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = verifier::bearer_of(&credentials, self.inner.max_token_bytes)?;
            let (principal, jkt) = self
                .inner
                .verify(token, credentials.client_certificate())
                .await?;
            if let Some(jkt) = jkt {
                credentials.bind_to_key(jkt);
            }
            Ok(principal)
        })
    }
}

/// The parts of a compact JWS, decoded: the header, the signing input, the
/// signature, and the payload still encoded.
struct Compact<'t> {
    header: Map<String, Value>,
    signing_input: &'t str,
    payload: &'t str,
    signature: Vec<u8>,
}

fn decode_part(part: &str) -> Result<Vec<u8>, AuthError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| AuthError::invalid_token(MALFORMED))
}

fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, AuthError> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(AuthError::invalid_token(MALFORMED)),
    }
}

fn compact(token: &str) -> Result<Compact<'_>, AuthError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::invalid_token(MALFORMED));
    };
    if header.is_empty() || payload.is_empty() {
        return Err(AuthError::invalid_token(MALFORMED));
    }
    Ok(Compact {
        header: json_object(&decode_part(header)?)?,
        signing_input: &token[..header.len() + 1 + payload.len()],
        payload,
        signature: decode_part(signature)?,
    })
}

impl Inner {
    /// The header's rules: what is known before any key is looked up.
    fn check_header<'h>(
        &self,
        header: &'h Map<String, Value>,
    ) -> Result<(Algorithm, Option<&'h str>), AuthError> {
        let Some(Value::String(alg)) = header.get("alg") else {
            return Err(AuthError::invalid_token(MALFORMED));
        };
        if alg.eq_ignore_ascii_case("none") {
            return Err(AuthError::invalid_token(UNSIGNED));
        }
        let alg = Algorithm::from_name(alg)
            .filter(|a| self.algorithms.contains(a))
            .ok_or_else(|| AuthError::invalid_token(ALGORITHM))?;
        if header.contains_key("crit") {
            return Err(AuthError::invalid_token(CRITICAL));
        }
        let typ_ok = match header.get("typ") {
            Some(Value::String(typ)) => {
                let typ = typ.to_ascii_lowercase();
                let typ = typ.strip_prefix("application/").unwrap_or(&typ);
                typ == "at+jwt" || (self.generic_typ && typ == "jwt")
            }
            None => self.generic_typ,
            Some(_) => false,
        };
        if !typ_ok {
            return Err(AuthError::invalid_token(TYP));
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(AuthError::invalid_token(MALFORMED)),
        };
        Ok((alg, kid))
    }

    async fn verify(
        &self,
        token: &str,
        certificate: Option<&ClientCertificate>,
    ) -> Result<(Principal, Option<String>), AuthError> {
        let jws = compact(token)?;
        let (alg, kid) = self.check_header(&jws.header)?;
        let key = self
            .keys
            .find(kid, alg)
            .await
            .map_err(|missing| match missing {
                Missing::Unknown => AuthError::invalid_token(UNKNOWN_KEY),
                Missing::Ambiguous => AuthError::invalid_token(AMBIGUOUS_KEY),
                Missing::Unreachable => AuthError::invalid_token(verifier::UNREACHABLE),
            })?;
        self.verified(&jws, alg, &key, certificate)
    }

    /// The token's principal and the key it is bound to (`cnf.jkt`), once
    /// `key` was found for it: its signature must verify with that key
    /// before any claim is read.
    fn verified(
        &self,
        jws: &Compact<'_>,
        alg: Algorithm,
        key: &Key,
        certificate: Option<&ClientCertificate>,
    ) -> Result<(Principal, Option<String>), AuthError> {
        if !signature_verifies(alg, key, jws.signing_input, &jws.signature) {
            return Err(AuthError::invalid_token(SIGNATURE));
        }
        let claims = json_object(&decode_part(jws.payload)?)?;
        if verifier::string_claim(&claims, "iss") != Some(self.issuer.as_str()) {
            return Err(AuthError::invalid_token(ISSUER));
        }
        verifier::check_audience(&claims, &self.audiences, false)?;
        verifier::check_times(&claims, verifier::now(), self.leeway, true)?;
        check_certificate_binding(&claims, certificate)?;
        let jkt = verifier::bound_key(&claims)?.map(str::to_owned);
        Ok((verifier::principal(&claims, self.leeway)?, jkt))
    }
}

impl JwtVerifier {
    /// Verifies `token` as [`authenticate`](Authenticator::authenticate)
    /// does, against the key set `keys` instead of the one it fetches: for
    /// the fuzz target of the token checks.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn verify_against(
        &self,
        token: &str,
        keys: &jwks::KeySet,
    ) -> Result<Principal, AuthError> {
        let jws = compact(token)?;
        let (alg, kid) = self.inner.check_header(&jws.header)?;
        let key = match keys.select(kid, alg) {
            jwks::Selection::Found(key) => key,
            jwks::Selection::NotFound => return Err(AuthError::invalid_token(UNKNOWN_KEY)),
            jwks::Selection::Ambiguous => return Err(AuthError::invalid_token(AMBIGUOUS_KEY)),
        };
        self.inner
            .verified(&jws, alg, &key, None)
            .map(|(principal, _)| principal)
    }
}

fn signature_verifies(alg: Algorithm, key: &Key, signing_input: &str, signature: &[u8]) -> bool {
    (DEFAULT_PROVIDER.verifier_factory)(&alg.jose(), &key.decoding).is_ok_and(|verifier| {
        verifier
            .verify(signing_input.as_bytes(), &signature.to_vec())
            .is_ok()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn inner(generic_typ: bool) -> Arc<Inner> {
        let mut builder = JwtVerifier::builder("http://127.0.0.1:1", "https://mcp.example.com/mcp")
            .jwks_url("http://127.0.0.1:1/jwks");
        if generic_typ {
            builder = builder.accept_generic_typ();
        }
        builder.build().unwrap().inner
    }

    fn header_of(header: &str) -> Result<(Algorithm, Option<String>), String> {
        let header: Map<String, Value> = serde_json::from_str(header).unwrap();
        inner(false)
            .check_header(&header)
            .map(|(alg, kid)| (alg, kid.map(str::to_owned)))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_header_is_held_to_the_allow_list_before_any_key_is_looked_up() {
        let refused = |why: &str| Err(format!("invalid token: {why}"));
        assert_eq!(
            header_of(r#"{"alg":"RS256","typ":"at+jwt","kid":"k"}"#),
            Ok((Algorithm::RS256, Some("k".to_owned())))
        );
        assert_eq!(
            header_of(r#"{"alg":"EdDSA","typ":"application/AT+JWT"}"#),
            Ok((Algorithm::EdDSA, None))
        );
        assert_eq!(
            header_of(r#"{"alg":"none","typ":"at+jwt"}"#),
            refused(UNSIGNED)
        );
        assert_eq!(header_of(r#"{"alg":"NONE"}"#), refused(UNSIGNED));
        assert_eq!(
            header_of(r#"{"alg":"HS256","typ":"at+jwt"}"#),
            refused(ALGORITHM)
        );
        // Supported, but not on the default allow-list.
        assert_eq!(
            header_of(r#"{"alg":"PS256","typ":"at+jwt"}"#),
            refused(ALGORITHM)
        );
        assert_eq!(header_of(r#"{"typ":"at+jwt"}"#), refused(MALFORMED));
        assert_eq!(header_of(r#"{"alg":7}"#), refused(MALFORMED));
        assert_eq!(
            header_of(r#"{"alg":"RS256","typ":"at+jwt","crit":["exp"]}"#),
            refused(CRITICAL)
        );
        assert_eq!(header_of(r#"{"alg":"RS256","typ":"JWT"}"#), refused(TYP));
        assert_eq!(header_of(r#"{"alg":"RS256"}"#), refused(TYP));
        assert_eq!(
            header_of(r#"{"alg":"RS256","typ":"at+jwt","kid":3}"#),
            refused(MALFORMED)
        );
        let generic = inner(true);
        for header in [r#"{"alg":"RS256","typ":"JWT"}"#, r#"{"alg":"RS256"}"#] {
            let header: Map<String, Value> = serde_json::from_str(header).unwrap();
            assert!(generic.check_header(&header).is_ok());
        }
    }

    #[test]
    fn a_compact_token_has_three_parts_of_strict_base64url() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256"}"#);
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"a"}"#);
        let good = format!("{header}.{payload}.c2ln");
        let jws = compact(&good).unwrap();
        assert_eq!(jws.signing_input, format!("{header}.{payload}"));
        assert_eq!(jws.signature, b"sig");
        for bad in [
            format!("{header}.{payload}"),
            format!("{header}.{payload}.c2ln.x"),
            format!("{header}.{payload}.c2ln="),
            format!("{header}=.{payload}.c2ln"),
            format!(".{payload}.c2ln"),
            format!("{}.{payload}.c2ln", URL_SAFE_NO_PAD.encode(b"[1]")),
            format!("{}.{payload}.c2ln", URL_SAFE_NO_PAD.encode(b"{")),
        ] {
            assert!(compact(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_verifier_needs_an_issuer_an_audience_and_an_algorithm() {
        let build = |b: JwtVerifierBuilder| b.build().map(|_| ()).unwrap_err();
        assert_eq!(
            build(JwtVerifier::builder("", "a")),
            VerifierConfigError::Empty("the issuer")
        );
        assert_eq!(
            build(JwtVerifier::builder("http://127.0.0.1", "")),
            VerifierConfigError::Empty("an audience")
        );
        assert_eq!(
            build(JwtVerifier::builder("http://127.0.0.1", "a").algorithms([])),
            VerifierConfigError::NoAlgorithms
        );
        assert!(matches!(
            build(JwtVerifier::builder("http://auth.example.com", "a")),
            VerifierConfigError::Url { .. }
        ));
        // With a JWKS URL, the issuer is only compared, never fetched.
        assert!(
            JwtVerifier::builder("urn:example:issuer", "a")
                .jwks_url("http://127.0.0.1:9/jwks")
                .build()
                .is_ok()
        );
    }
}
