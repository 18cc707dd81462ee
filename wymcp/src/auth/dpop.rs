//! DPoP (RFC 9449, SEP-1932) on the resource server: the [`Dpop`] policy an
//! [`AuthConfig`](super::AuthConfig) carries, the checks of a `DPoP` proof
//! header, the server's stateless nonces, and the replay cache of proofs'
//! `jti`s.
//!
//! **The order of the checks** (RFC 9449 §4.3, §7.1). Before the access
//! token is verified: one `DPoP` header of at most
//! [`Dpop::max_proof_bytes`]; a compact JWS whose header has `typ:
//! dpop+jwt`, an `alg` on the allow-list (never `none`, never HMAC), no
//! `crit`, no `jku`/`x5u`/`x5c`, and a public `jwk` (no private member) of
//! the algorithm's kind and size (RSA 2048 to 8192 bits, P-256, Ed25519);
//! the signature verifies with that `jwk`; then the claims: `htm` the
//! request's method, `htu` the resource's URL (query and fragment ignored,
//! both sides normalised per RFC 3986 §6.2.2–6.2.3), `iat` within the
//! window, a `jti` of at most [`MAX_JTI_BYTES`], `ath` the base64url
//! SHA-256 of the access token, and the server's `nonce` when it asks for
//! one. After the token is verified: its `cnf.jkt` must be the RFC 7638
//! thumbprint of the proof's `jwk`, and last, the `jti` must not have been
//! seen within the window (recorded only now, so that a refused request
//! records nothing).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use http::{HeaderMap, Method};
use jsonwebtoken::DecodingKey;
use jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::algorithm::Algorithm;
use crate::ledger::{Caller, Kind, Ledger, Place, Refusal};
use crate::protocol::ids::hex;

/// The header a proof travels in.
pub const DPOP_HEADER: &str = "dpop";
/// The header a server's nonce travels in (RFC 9449 §8).
pub const DPOP_NONCE_HEADER: &str = "dpop-nonce";
/// The longest `jti` accepted.
pub const MAX_JTI_BYTES: usize = 256;
/// The default largest proof accepted.
pub const DEFAULT_MAX_PROOF_BYTES: usize = 8 * 1024;
/// The default window of a proof's `iat`: this far either side of now.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(300);
/// How long one server nonce is handed out (it is accepted for twice that).
pub const NONCE_SLOT: Duration = Duration::from_secs(60);
/// RFC 7518 §3.3 (2048 bits) up to 8192 bits: a larger key only costs the
/// server time.
const RSA_MODULUS_BYTES: std::ops::RangeInclusive<usize> = 256..=1024;

// What a refused proof's challenge says.
pub(crate) const MALFORMED_DPOP_HEADER: &str =
    "the Authorization header does not hold a well-formed DPoP token";
pub(crate) const NO_PROOF: &str = "the request carries no DPoP proof";
pub(crate) const TWO_PROOFS: &str = "the request carries more than one DPoP header";
pub(crate) const PROOF_TOO_LARGE: &str = "the DPoP proof is larger than this server accepts";
pub(crate) const PROOF_MALFORMED: &str = "the DPoP proof is not a well-formed JWT";
pub(crate) const PROOF_TYP: &str = "the DPoP proof's typ is not dpop+jwt";
pub(crate) const PROOF_ALG: &str = "the DPoP proof's signing algorithm is not accepted";
pub(crate) const PROOF_HEADER: &str =
    "the DPoP proof's header has a parameter this server does not accept (crit, jku, x5u, x5c)";
pub(crate) const PROOF_JWK: &str =
    "the DPoP proof's jwk is not a public key of its algorithm's kind and size";
pub(crate) const PROOF_PRIVATE: &str = "the DPoP proof's jwk holds a private key";
pub(crate) const PROOF_SIGNATURE: &str = "the DPoP proof's signature does not verify";
pub(crate) const PROOF_HTM: &str = "the DPoP proof is for another HTTP method";
pub(crate) const PROOF_HTU: &str = "the DPoP proof is for another URL";
pub(crate) const PROOF_IAT: &str = "the DPoP proof's iat is outside the accepted window";
pub(crate) const PROOF_JTI: &str = "the DPoP proof's jti is missing or too long";
pub(crate) const PROOF_ATH: &str = "the DPoP proof's ath is not the hash of the access token";
pub(crate) const PROOF_REPLAYED: &str = "the DPoP proof was already used";
pub(crate) const PROOF_KEY: &str = "the DPoP proof's key is not the key the token is bound to";
pub(crate) const NONCE: &str = "the DPoP proof must carry the nonce this server provides";
pub(crate) const BOUND_AS_BEARER: &str = "a DPoP-bound token must be sent with the DPoP scheme";
pub(crate) const NOT_BOUND: &str = "the token is not bound to a DPoP key";
pub(crate) const DPOP_REQUIRED: &str = "this server accepts only DPoP-bound tokens";
pub(crate) const REPLAY_UNAVAILABLE: &str =
    "the DPoP proof cannot be checked for replay now: the replay store is unreachable";

/// Whether DPoP is required for every request or allowed beside Bearer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpopMode {
    /// Every request carries a DPoP-bound token and its proof; a `Bearer`
    /// token is refused.
    Required,
    /// `Bearer` and `DPoP` are both accepted; a DPoP-bound token still needs
    /// its proof (sent as `Bearer`, it is refused).
    Allowed,
}

/// The DPoP policy of a resource server, set with
/// [`AuthConfig::dpop`](super::AuthConfig::dpop).
///
/// ```
/// use std::time::Duration;
/// use wymcp::auth::{Algorithm, AuthConfig, Dpop};
///
/// let config = AuthConfig::new()
///     .resource("https://mcp.example.com/mcp")    // the proofs' htu
///     .authorization_server("https://auth.example.com")
///     .dpop(
///         Dpop::required()
///             .algorithms([Algorithm::ES256, Algorithm::EdDSA])
///             .window(Duration::from_secs(120))
///             .nonce_key(b"a secret shared by every replica, 32 bytes+"),
///     );
/// assert_eq!(config.metadata_document().unwrap()["dpop_bound_access_tokens_required"], true);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Dpop {
    mode: DpopMode,
    algorithms: Vec<Algorithm>,
    window: Duration,
    max_proof_bytes: usize,
    nonce_key: Option<NonceKey>,
}

/// The nonces' key: its HMAC-SHA256 keyed once (the key's two padded
/// blocks hashed) and cloned for each nonce made or checked, which keying
/// again cost two of a nonce's four SHA-256 blocks, up to three nonces a
/// request. Two are the same when their secrets are.
#[derive(Clone)]
struct NonceKey {
    secret: Vec<u8>,
    keyed: Hmac<Sha256>,
}

impl PartialEq for NonceKey {
    fn eq(&self, other: &Self) -> bool {
        self.secret == other.secret
    }
}

impl Eq for NonceKey {}

impl fmt::Debug for Dpop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dpop")
            .field("mode", &self.mode)
            .field("algorithms", &self.algorithms)
            .field("window", &self.window)
            .field("max_proof_bytes", &self.max_proof_bytes)
            .field("nonces", &self.nonce_key.is_some())
            .finish()
    }
}

impl Dpop {
    /// The algorithms accepted unless told otherwise.
    pub const DEFAULT_ALGORITHMS: [Algorithm; 4] = [
        Algorithm::ES256,
        Algorithm::EdDSA,
        Algorithm::RS256,
        Algorithm::PS256,
    ];

    fn new(mode: DpopMode) -> Self {
        Dpop {
            mode,
            algorithms: Self::DEFAULT_ALGORITHMS.to_vec(),
            window: DEFAULT_WINDOW,
            max_proof_bytes: DEFAULT_MAX_PROOF_BYTES,
            nonce_key: None,
        }
    }

    /// Every request needs a DPoP-bound token and its proof.
    #[must_use]
    pub fn required() -> Self {
        Self::new(DpopMode::Required)
    }

    /// Bearer tokens and DPoP-bound ones are both accepted.
    #[must_use]
    pub fn allowed() -> Self {
        Self::new(DpopMode::Allowed)
    }

    /// The proofs' signing algorithms accepted (asymmetric only: there is
    /// no `none` or HMAC [`Algorithm`]); [`DEFAULT_ALGORITHMS`](Self::DEFAULT_ALGORITHMS)
    /// unless set.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// How far a proof's `iat` may be from now, either side; 5 minutes
    /// unless set. It is also how long a `jti` is remembered.
    #[must_use]
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The largest `DPoP` header accepted; 8 KiB unless set.
    #[must_use]
    pub fn max_proof_bytes(mut self, bytes: usize) -> Self {
        self.max_proof_bytes = bytes;
        self
    }

    /// Asks every proof for a server nonce (RFC 9449 §9): a proof without
    /// the current one is refused `use_dpop_nonce` with a fresh one in
    /// `DPoP-Nonce`. The nonces are stateless: an HMAC of a one-minute
    /// time slot with `key`, so every replica given the same key accepts
    /// the others' without storing anything. Use a secret of 32 bytes or
    /// more.
    #[must_use]
    pub fn nonce_key(mut self, key: impl AsRef<[u8]>) -> Self {
        let secret = key.as_ref().to_vec();
        #[allow(clippy::expect_used)]
        let keyed =
            <Hmac<Sha256> as Mac>::new_from_slice(&secret).expect("HMAC takes a key of any length");
        self.nonce_key = Some(NonceKey { secret, keyed });
        self
    }

    /// Whether DPoP is required or allowed.
    #[must_use]
    pub fn mode(&self) -> DpopMode {
        self.mode
    }

    /// The accepted algorithms' names, space-separated: a challenge's `algs`.
    #[must_use]
    pub fn algs(&self) -> String {
        self.algorithms
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub(crate) fn algorithm_names(&self) -> Vec<&'static str> {
        self.algorithms.iter().map(|a| a.name()).collect()
    }

    /// A fresh nonce, when nonces are asked for.
    pub(crate) fn fresh_nonce(&self, now: f64) -> Option<String> {
        let key = self.nonce_key.as_ref()?;
        Some(nonce_for(key, slot(now)))
    }

    fn nonce_ok(&self, nonce: Option<&str>, now: f64) -> bool {
        let Some(key) = &self.nonce_key else {
            return true;
        };
        let Some(nonce) = nonce else { return false };
        let current = slot(now);
        [current, current.saturating_sub(1)]
            .into_iter()
            .any(|s| constant_eq(nonce_for(key, s).as_bytes(), nonce.as_bytes()))
    }
}

fn slot(now: f64) -> u64 {
    // Seconds since the epoch fit in a u64; a clock before it is slot 0.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let seconds = now.max(0.0) as u64;
    seconds / NONCE_SLOT.as_secs()
}

fn nonce_for(key: &NonceKey, slot: u64) -> String {
    let mut mac = key.keyed.clone();
    mac.update(b"wymcp dpop nonce\0");
    mac.update(&slot.to_be_bytes());
    let tag = mac.finalize().into_bytes();
    let mut bytes = slot.to_be_bytes().to_vec();
    bytes.extend_from_slice(&tag[..16]);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a proof is not accepted: a refusal for the challenge, or a place
/// of the ledger not given. (Turned into an `AuthError` by
/// `authenticator.rs`, which this file does not import: no cycle.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProofError {
    /// `401` with this error code, description and nonce.
    Refused {
        error: &'static str,
        description: &'static str,
        nonce: Option<String>,
    },
    /// The ledger refused a place to remember the proof.
    Ledger(Refusal),
}

/// A proof whose own checks hold, waiting for the token's.
#[derive(Debug)]
pub(crate) struct Proof {
    /// The RFC 7638 thumbprint of its `jwk`.
    pub(crate) jkt: String,
    jti: String,
    iat: f64,
}

pub(crate) fn refused(description: &'static str) -> ProofError {
    ProofError::Refused {
        error: "invalid_dpop_proof",
        description,
        nonce: None,
    }
}

/// The one `DPoP` header of a request: `Ok(None)` without one, refused
/// with two or more.
pub(crate) fn proof_header(headers: &HeaderMap) -> Result<Option<&str>, ProofError> {
    let mut values = headers.get_all(DPOP_HEADER).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(refused(TWO_PROOFS));
    }
    match first {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(Some)
            .map_err(|_| refused(PROOF_MALFORMED)),
    }
}

/// Checks a proof on its own and against the request: everything but the
/// token's binding and the replay cache (module docs).
pub(crate) fn check_proof(
    policy: &Dpop,
    proof: &str,
    method: &Method,
    resource: &str,
    access_token: &str,
    now: f64,
) -> Result<Proof, ProofError> {
    if proof.len() > policy.max_proof_bytes {
        return Err(refused(PROOF_TOO_LARGE));
    }
    let mut parts = proof.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused(PROOF_MALFORMED));
    };
    let header_map = json_object(header)?;
    let alg = match header_map.get("alg") {
        Some(Value::String(alg)) => Algorithm::from_name(alg)
            .filter(|a| policy.algorithms.contains(a))
            .ok_or_else(|| refused(PROOF_ALG))?,
        _ => return Err(refused(PROOF_MALFORMED)),
    };
    if header_map.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
        return Err(refused(PROOF_TYP));
    }
    if ["crit", "jku", "x5u", "x5c"]
        .iter()
        .any(|name| header_map.contains_key(*name))
    {
        return Err(refused(PROOF_HEADER));
    }
    let Some(Value::Object(jwk)) = header_map.get("jwk") else {
        return Err(refused(PROOF_JWK));
    };
    let (key, jkt) = public_key(jwk, alg)?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| refused(PROOF_MALFORMED))?;
    let signing_input = &proof[..header.len() + 1 + payload.len()];
    let verifies = (DEFAULT_PROVIDER.verifier_factory)(&alg.jose(), &key)
        .is_ok_and(|v| v.verify(signing_input.as_bytes(), &signature).is_ok());
    if !verifies {
        return Err(refused(PROOF_SIGNATURE));
    }
    let claims = json_object(payload)?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    if text("htm") != Some(method.as_str()) {
        return Err(refused(PROOF_HTM));
    }
    if !text("htu").is_some_and(|htu| same_url(htu, resource)) {
        return Err(refused(PROOF_HTU));
    }
    let window = policy.window.as_secs_f64();
    let iat = claims
        .get("iat")
        .and_then(Value::as_f64)
        .filter(|iat| (iat - now).abs() <= window)
        .ok_or_else(|| refused(PROOF_IAT))?;
    let jti = text("jti")
        .filter(|jti| !jti.is_empty() && jti.len() <= MAX_JTI_BYTES)
        .ok_or_else(|| refused(PROOF_JTI))?;
    let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(access_token.as_bytes()));
    if !text("ath").is_some_and(|a| constant_eq(a.as_bytes(), ath.as_bytes())) {
        return Err(refused(PROOF_ATH));
    }
    if !policy.nonce_ok(text("nonce"), now) {
        return Err(ProofError::Refused {
            error: "use_dpop_nonce",
            description: NONCE,
            nonce: policy.fresh_nonce(now),
        });
    }
    Ok(Proof {
        jkt,
        jti: jti.to_owned(),
        iat,
    })
}

fn json_object(part: &str) -> Result<Map<String, Value>, ProofError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| refused(PROOF_MALFORMED))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(refused(PROOF_MALFORMED)),
    }
}

/// The verifying key of a proof's `jwk` and its RFC 7638 thumbprint: a
/// public key only, of `alg`'s kind and size.
fn public_key(
    jwk: &Map<String, Value>,
    alg: Algorithm,
) -> Result<(DecodingKey, String), ProofError> {
    // RFC 7517 / 7518 private members: an RSA key's d, p, q, dp, dq, qi,
    // oth; an EC or OKP key's d; a symmetric key's k.
    if ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]
        .iter()
        .any(|name| jwk.contains_key(*name))
    {
        return Err(refused(PROOF_PRIVATE));
    }
    let bad = || refused(PROOF_JWK);
    let text = |name: &str| jwk.get(name).and_then(Value::as_str).ok_or_else(bad);
    let decoded = |name: &str| -> Result<Vec<u8>, ProofError> {
        URL_SAFE_NO_PAD.decode(text(name)?).map_err(|_| bad())
    };
    let kty = text("kty")?;
    let (key, members) = match (alg, kty) {
        (
            Algorithm::RS256
            | Algorithm::PS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS384
            | Algorithm::PS512,
            "RSA",
        ) => {
            let n = decoded("n")?;
            let significant = n.iter().skip_while(|b| **b == 0).count();
            if !RSA_MODULUS_BYTES.contains(&significant) || decoded("e")?.len() > 8 {
                return Err(bad());
            }
            let key =
                DecodingKey::from_rsa_components(text("n")?, text("e")?).map_err(|_| bad())?;
            (
                key,
                vec![("e", text("e")?), ("kty", kty), ("n", text("n")?)],
            )
        }
        (Algorithm::ES256, "EC") => {
            if text("crv")? != "P-256" || decoded("x")?.len() != 32 || decoded("y")?.len() != 32 {
                return Err(bad());
            }
            let key = DecodingKey::from_ec_components(text("x")?, text("y")?).map_err(|_| bad())?;
            let members = vec![
                ("crv", text("crv")?),
                ("kty", kty),
                ("x", text("x")?),
                ("y", text("y")?),
            ];
            (key, members)
        }
        (Algorithm::EdDSA, "OKP") => {
            if text("crv")? != "Ed25519" || decoded("x")?.len() != 32 {
                return Err(bad());
            }
            let key = DecodingKey::from_ed_components(text("x")?).map_err(|_| bad())?;
            (
                key,
                vec![("crv", text("crv")?), ("kty", kty), ("x", text("x")?)],
            )
        }
        _ => return Err(bad()),
    };
    Ok((key, thumbprint(&members)))
}

/// RFC 7638: the SHA-256 of the required members, in lexicographic order,
/// as JSON without whitespace, base64url-encoded.
pub(crate) fn thumbprint(members: &[(&str, &str)]) -> String {
    let body = members
        .iter()
        .map(|(name, value)| format!("{}:{}", Value::from(*name), Value::from(*value)))
        .collect::<Vec<_>>()
        .join(",");
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!("{{{body}}}").as_bytes()))
}

/// Whether a proof's `htu` names `resource` (RFC 9449 §4.3 item 9: query
/// and fragment ignored), both normalised per RFC 3986 §6.2.2 (case of the
/// scheme and host, percent-encoding, dot segments) and §6.2.3 (default
/// port, empty path).
pub(crate) fn same_url(htu: &str, resource: &str) -> bool {
    match (normalised(htu), normalised(resource)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn normalised(url: &str) -> Option<String> {
    let url = &url[..url.find(['?', '#']).unwrap_or(url.len())];
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return None,
    };
    let authority_len = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_len);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let mut host = authority.to_ascii_lowercase();
    if host.ends_with(default_port) {
        host.truncate(host.len() - default_port.len());
    }
    let host = host.strip_suffix(':').unwrap_or(&host).to_owned();
    let path = percent_normalised(path)?;
    let path = remove_dot_segments(&path);
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    Some(format!("{scheme}://{host}{path}"))
}

/// Percent-encodings in upper case, and those of unreserved characters
/// decoded (RFC 3986 §6.2.2.1, §6.2.2.2).
fn percent_normalised(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            let byte = u8::from_str_radix(hex, 16).ok()?;
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push_str(&hex.to_ascii_uppercase());
            }
            i += 3;
        } else {
            out.push(char::from(bytes[i]));
            i += 1;
        }
    }
    Some(out)
}

/// RFC 3986 §5.2.4, on a path that starts with `/` (or is empty).
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    if out.is_empty() && path.is_empty() {
        return String::new();
    }
    format!("/{}", out.join("/"))
}

/// What a shared replay store answers with.
pub type ReplayFuture<'a> = Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'a>>;

/// A store of proofs' `jti`s shared by replicas, so that a proof replayed to
/// another replica is refused; `wymcp::redis::RedisDpopReplay` (feature
/// `redis`) is the Redis one. Each replica also remembers the proofs it saw
/// itself, in its [`ledger`](crate::ledger) ([`Kind::DpopProofs`]).
pub trait DpopReplay: Send + Sync + fmt::Debug + 'static {
    /// Records `key` (a digest of the proof's key and `jti`) for `ttl`:
    /// `Ok(true)` when it was not there, `Ok(false)` when it was (a
    /// replay), `Err` with a description when the store cannot answer (the
    /// request is then refused `503`: fail closed).
    fn first_use<'a>(&'a self, key: &'a str, ttl: Duration) -> ReplayFuture<'a>;
}

/// The proofs this replica saw within the window, each holding its place
/// in the ledger until it expires.
#[derive(Debug, Default)]
pub(crate) struct SeenProofs {
    inner: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    entries: HashMap<[u8; 32], (Instant, Place)>,
    next_sweep: Option<Instant>,
}

impl SeenProofs {
    /// Records the proof: `Err` when it was seen, or when the caller (or
    /// everyone) holds the ledger's share of remembered proofs.
    pub(crate) fn record(
        &self,
        proof: &Proof,
        policy: &Dpop,
        ledger: &Ledger,
        caller: &Caller,
        now: f64,
    ) -> Result<(String, Duration), ProofError> {
        let digest: [u8; 32] = Sha256::new()
            .chain_update(proof.jkt.as_bytes())
            .chain_update([0])
            .chain_update(proof.jti.as_bytes())
            .finalize()
            .into();
        // Remembered until its iat leaves the window (and a second more).
        let ttl = Duration::try_from_secs_f64(proof.iat + policy.window.as_secs_f64() - now)
            .unwrap_or(Duration::ZERO)
            + Duration::from_secs(1);
        let at = Instant::now();
        #[allow(clippy::unwrap_used)]
        let mut seen = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.next_sweep.is_none_or(|next| at >= next) {
            seen.entries.retain(|_, (expires, _)| *expires > at);
            seen.next_sweep = Some(at + Duration::from_secs(1));
        }
        if seen
            .entries
            .get(&digest)
            .is_some_and(|(expires, _)| *expires > at)
        {
            return Err(refused(PROOF_REPLAYED));
        }
        let place = ledger
            .take(Kind::DpopProofs, caller, 1)
            .map_err(ProofError::Ledger)?;
        seen.entries.insert(digest, (at + ttl, place));
        let key = hex(&digest);
        Ok((key, ttl))
    }
}

/// Seconds since the epoch, now.
pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn urls_compare_after_rfc_3986_normalisation() {
        let r = "https://mcp.example.com/mcp";
        for same in [
            "https://mcp.example.com/mcp",
            "HTTPS://MCP.Example.COM/mcp",
            "https://mcp.example.com:443/mcp",
            "https://mcp.example.com/%6Dcp",
            "https://mcp.example.com/a/../mcp",
            "https://mcp.example.com/./mcp",
            "https://mcp.example.com/mcp?x=1",
            "https://mcp.example.com/mcp#f",
        ] {
            assert!(same_url(same, r), "{same}");
        }
        for other in [
            "http://mcp.example.com/mcp",
            "https://mcp.example.com/MCP",
            "https://mcp.example.com/mcp/",
            "https://mcp.example.com:8443/mcp",
            "https://evil.example.com/mcp",
            "https://user@mcp.example.com/mcp",
            "https://mcp.example.com/mcp%2",
            "mcp.example.com/mcp",
        ] {
            assert!(!same_url(other, r), "{other}");
        }
        assert!(same_url("http://h.example", "http://h.example:80/"));
        assert!(same_url("https://h/a%2fb", "https://h/a%2Fb"));
    }

    #[test]
    fn thumbprints_are_rfc_7638s() {
        // RFC 7638 §3.1's example key and thumbprint.
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
        assert_eq!(
            thumbprint(&[("e", "AQAB"), ("kty", "RSA"), ("n", n)]),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn nonces_are_an_hmac_of_the_slot_and_last_two_slots() {
        let policy = Dpop::required().nonce_key(b"k".repeat(32));
        let now = 1_000_000.0;
        let nonce = policy.fresh_nonce(now).unwrap();
        assert!(policy.nonce_ok(Some(&nonce), now));
        assert!(policy.nonce_ok(Some(&nonce), now + 60.0));
        assert!(!policy.nonce_ok(Some(&nonce), now + 180.0));
        assert!(!policy.nonce_ok(None, now));
        let other = Dpop::required().nonce_key(b"x".repeat(32));
        assert!(!other.nonce_ok(Some(&nonce), now));
        assert!(Dpop::required().nonce_ok(None, now));
    }

    /// Rule: a nonce is the slot (8 bytes, big-endian) and the first 16
    /// bytes of HMAC-SHA256 under the key of `wymcp dpop nonce\0` and the
    /// slot, base64url without padding: the same however the MAC is
    /// computed (keyed once and cloned), twice from one policy, so replicas
    /// of different versions accept each other's. The expected nonce was
    /// computed apart from this crate (Python's `hmac`).
    #[test]
    fn a_nonce_is_the_slot_and_its_truncated_hmac() {
        let policy = Dpop::required().nonce_key(b"k".repeat(32));
        for _ in 0..2 {
            assert_eq!(
                policy.fresh_nonce(1_000_000.0).unwrap(),
                "AAAAAAAAQRqNhbtIEKNyI67Tn5LHu5DN"
            );
        }
        assert_eq!(policy, Dpop::required().nonce_key(b"k".repeat(32)));
        assert_ne!(policy, Dpop::required().nonce_key(b"x".repeat(32)));
    }
}
