//! The authorization server's signing keys: its JWK Set read into
//! verifying keys, where it is found (a configured URL, or the `jwks_uri`
//! of its RFC 8414 / OpenID Connect metadata), and the cache that holds it.
//!
//! **What is kept of a key set.** Only keys that can verify a signature of
//! an allowed kind: `RSA` (a modulus of 2048 bits or more), `EC` on P-256
//! or P-384, `OKP` on Ed25519; a key whose `use` is not `sig`, whose
//! `key_ops` leave out `verify`, or of any other type (`oct` above all: a
//! shared secret is never a verifying key here) is left out, and so is a
//! key the set repeats under one `kid`.
//!
//! **When it is fetched.** On the first token; when the set is older than
//! its maximum age; and when a token names a `kid` the set does not hold,
//! for a key rotated in. Never twice within the refresh interval, whatever
//! the reason: a stream of tokens naming forged `kid`s costs one fetch per
//! interval, and is answered from the set at hand in between.
//!
//! **While a fetch runs.** One fetch is in flight at a time, and no lock is
//! held across the network: the request that starts it waits for it (each
//! exchange bounded by the fetch timeout), every other request verifies
//! against the set already held, stale or not, and one whose key the held
//! set lacks waits for the fetch in flight (at most as long as it may take)
//! rather than starting another. A slow authorization server therefore
//! delays one request, not every JWT request behind it.
//!
//! **What a fetch must answer.** A JWK Set: a JSON object whose `keys` is
//! an array (RFC 7517 §5). Anything else is a failed fetch, logged as the
//! outage it is, and the keys already held survive it, as they survive an
//! unreachable server: they go on verifying the tokens they can.
//!
//! **Where a discovered key set may be.** A `jwks_uri` read from metadata
//! is the authorization server's word, not the operator's: it must be
//! `https`, or plain `http` on the very origin the operator configured (the
//! issuer's, whose metadata named it). A metadata document cannot point the
//! verifier at another plain-`http` service, on loopback or anywhere else.
//! A configured [`jwks_url`](super::JwtVerifierBuilder::jwks_url) is held
//! to the fetch client's own policy.

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::Uri;
use jsonwebtoken::DecodingKey;
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::algorithm::Algorithm;
use super::fetch::{FetchError, Fetcher, Outage, check_discovered_url};

/// The default least time between two fetches of the key set.
pub(crate) const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// The default age past which the key set is fetched again.
pub(crate) const DEFAULT_MAX_AGE: Duration = Duration::from_secs(15 * 60);

/// RFC 7518 §3.3: RSA keys of 2048 bits or larger.
const MIN_RSA_MODULUS_BYTES: usize = 256;

/// One verifying key of the set.
#[derive(Debug)]
pub(crate) struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    alg: Option<String>,
    kind: Kind,
    pub(crate) decoding: DecodingKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Key {
    /// Whether this key can verify a signature made with `alg`.
    fn fits(&self, alg: Algorithm) -> bool {
        let kind = match alg {
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => Kind::Rsa,
            Algorithm::ES256 => Kind::P256,
            Algorithm::ES384 => Kind::P384,
            Algorithm::EdDSA => Kind::Ed25519,
        };
        self.kind == kind && self.alg.as_deref().is_none_or(|a| a == alg.name())
    }
}

/// A JWK Set, as far as it is usable.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    keys: Vec<Arc<Key>>,
    fetched: Option<Instant>,
}

/// What a key set holds for a token.
#[derive(Debug)]
pub(crate) enum Selection {
    /// The key the token names, or the one key of its algorithm.
    Found(Arc<Key>),
    /// The token names a key the set does not hold (or none of its kind).
    NotFound,
    /// The token names no key, and the set holds several of its algorithm.
    Ambiguous,
}

impl KeySet {
    /// The usable keys of a JWK Set document; `None` when the document is
    /// not a JWK Set (RFC 7517 §5: its `keys` member, an array, is
    /// required), which is never read as a set without keys.
    pub(crate) fn parse(document: &Value, fetched: Instant) -> Option<KeySet> {
        let mut keys: Vec<Arc<Key>> = Vec::new();
        for jwk in document.get("keys").and_then(Value::as_array)? {
            let Some(key) = jwk.as_object().and_then(key_of) else {
                continue;
            };
            let repeated = key.kid.is_some() && keys.iter().any(|k| k.kid == key.kid);
            if !repeated {
                keys.push(Arc::new(key));
            }
        }
        Some(KeySet {
            keys,
            fetched: Some(fetched),
        })
    }

    fn fresh(&self, now: Instant, max_age: Duration) -> bool {
        self.fetched
            .is_some_and(|at| now.saturating_duration_since(at) < max_age)
    }

    /// The key for a token that names `kid` (or none) and is signed with
    /// `alg`.
    pub(crate) fn select(&self, kid: Option<&str>, alg: Algorithm) -> Selection {
        let mut fitting = self.keys.iter().filter(|k| k.fits(alg));
        match kid {
            Some(kid) => fitting
                .find(|k| k.kid.as_deref() == Some(kid))
                .map_or(Selection::NotFound, |k| Selection::Found(k.clone())),
            None => match (fitting.next(), fitting.next()) {
                (Some(key), None) => Selection::Found(key.clone()),
                (Some(_), Some(_)) => Selection::Ambiguous,
                (None, _) => Selection::NotFound,
            },
        }
    }

    /// Each key held: its `kid`, its kind (`RSA`, `P-256`, `P-384`,
    /// `Ed25519`) and the `alg` its JWK names; for the fuzz target's check
    /// of what a set keeps.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn held(&self) -> Vec<(Option<String>, &'static str, Option<String>)> {
        self.keys
            .iter()
            .map(|key| {
                let kind = match key.kind {
                    Kind::Rsa => "RSA",
                    Kind::P256 => "P-256",
                    Kind::P384 => "P-384",
                    Kind::Ed25519 => "Ed25519",
                };
                (key.kid.clone(), kind, key.alg.clone())
            })
            .collect()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

/// A verifying key from one JWK, if it is one this server uses.
fn key_of(jwk: &Map<String, Value>) -> Option<Key> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    if jwk.get("use").is_some() && text("use") != Some("sig") {
        return None;
    }
    if let Some(ops) = jwk.get("key_ops")
        && !ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|op| op == "verify"))
    {
        return None;
    }
    let key_id = match jwk.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return None,
    };
    let (kind, decoding) = match (text("kty")?, text("crv")) {
        ("RSA", _) => {
            let (n, e) = (text("n")?, text("e")?);
            let modulus = URL_SAFE_NO_PAD.decode(n).ok()?;
            let significant = modulus.iter().skip_while(|b| **b == 0).count();
            if significant < MIN_RSA_MODULUS_BYTES {
                return None;
            }
            (Kind::Rsa, DecodingKey::from_rsa_components(n, e).ok()?)
        }
        ("EC", Some(curve @ ("P-256" | "P-384"))) => {
            let (x, y) = (text("x")?, text("y")?);
            let (kind, size) = if curve == "P-256" {
                (Kind::P256, 32)
            } else {
                (Kind::P384, 48)
            };
            let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(c).is_ok_and(|b| b.len() == size);
            if !coordinate(x) || !coordinate(y) {
                return None;
            }
            (kind, DecodingKey::from_ec_components(x, y).ok()?)
        }
        ("OKP", Some("Ed25519")) => {
            let x = text("x")?;
            if URL_SAFE_NO_PAD.decode(x).map(|b| b.len()).ok()? != 32 {
                return None;
            }
            (Kind::Ed25519, DecodingKey::from_ed_components(x).ok()?)
        }
        _ => return None,
    };
    Some(Key {
        kid: key_id,
        alg: text("alg").map(str::to_owned),
        kind,
        decoding,
    })
}

/// Where the key set is read from.
#[derive(Debug)]
pub(crate) enum Source {
    /// A configured JWKS URL.
    Url(Uri),
    /// The issuer's metadata, at these URLs in turn (RFC 8414, then OpenID
    /// Connect Discovery), which must name `issuer`.
    Discovery { issuer: String, metadata: Vec<Uri> },
}

/// The metadata URLs of an issuer, in the order they are tried: RFC 8414
/// §3.1 (the well-known path inserted before the issuer's path), OpenID
/// Connect with the same insertion, OpenID Connect Discovery 1.0 §4
/// (appended).
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (origin, path) = match issuer.find("://").map(|i| i + 3) {
        Some(start) => match issuer[start..].find('/') {
            Some(slash) => issuer.split_at(start + slash),
            None => (issuer, ""),
        },
        None => (issuer, ""),
    };
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ];
    urls.dedup();
    urls
}

/// The key set, fetched and refreshed under the rules of this module.
#[derive(Debug)]
pub(crate) struct Keys {
    fetcher: Fetcher,
    source: Source,
    refresh_interval: Duration,
    max_age: Duration,
    /// The longest one refresh may take (each of its exchanges bounded by
    /// the fetch timeout): how long a request waits for one in flight.
    refresh_bound: Duration,
    current: RwLock<Arc<KeySet>>,
    /// Bookkeeping only, never held across an await.
    refresh: Mutex<Refresh>,
    outage: Outage,
}

#[derive(Debug, Default)]
struct Refresh {
    last_attempt: Option<Instant>,
    /// The JWKS URL discovery found.
    discovered: Option<Uri>,
    /// The refresh in flight, if one is: its sender is dropped when it
    /// ends, which is what a waiting request waits for.
    in_flight: Option<watch::Receiver<()>>,
}

/// What a request does about a set that is stale or lacks its key.
enum Step<'k> {
    /// Fetch now, holding this slot (the one refresh in flight).
    Fetch(InFlight<'k>),
    /// Another request's fetch is in flight.
    Wait(watch::Receiver<()>),
    /// Too soon to fetch again: the set at hand.
    Settle,
}

/// The one refresh in flight, held by the request running it: dropped (its
/// fetch done, or the request cancelled), the slot is free again and every
/// request waiting for it wakes.
struct InFlight<'k> {
    refresh: &'k Mutex<Refresh>,
    _done: watch::Sender<()>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.refresh
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .in_flight = None;
    }
}

/// Why no key was found for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// The set does not hold the key the token names.
    Unknown,
    /// The token names no key and the set holds several.
    Ambiguous,
    /// No key set could be had.
    Unreachable,
}

impl Keys {
    pub(crate) fn new(
        fetcher: Fetcher,
        source: Source,
        refresh_interval: Duration,
        max_age: Duration,
    ) -> Self {
        // A refresh through discovery may try each metadata URL, then the
        // key set; a configured URL is one exchange.
        let exchanges = match &source {
            Source::Url(_) => 1,
            Source::Discovery { metadata, .. } => metadata.len() + 1,
        };
        let refresh_bound = fetcher
            .timeout()
            .saturating_mul(u32::try_from(exchanges).unwrap_or(u32::MAX));
        Keys {
            fetcher,
            source,
            refresh_interval,
            max_age,
            refresh_bound,
            current: RwLock::new(Arc::new(KeySet::default())),
            refresh: Mutex::new(Refresh::default()),
            outage: Outage::default(),
        }
    }

    fn current(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The key that verifies a token naming `kid`, signed with `alg`.
    pub(crate) async fn find(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<Key>, Missing> {
        let set = self.current();
        let held = set.select(kid, alg);
        if set.fresh(Instant::now(), self.max_age) {
            match held {
                Selection::Found(key) => return Ok(key),
                Selection::Ambiguous => return Err(Missing::Ambiguous),
                Selection::NotFound => {}
            }
        }
        let mut timed_out = false;
        match self.step() {
            Step::Fetch(slot) => {
                if let Some(fetched) = self.fetch().await {
                    *self.current.write().unwrap_or_else(PoisonError::into_inner) =
                        Arc::new(fetched);
                }
                drop(slot);
            }
            Step::Wait(mut done) => {
                // The stale set holds the key: it serves while the fetch
                // runs, as it would if the fetch failed.
                if let Selection::Found(key) = held {
                    return Ok(key);
                }
                // Ends when the fetch's sender is dropped.
                timed_out = tokio::time::timeout(self.refresh_bound, done.changed())
                    .await
                    .is_err();
            }
            Step::Settle => {}
        }
        // The set now at hand: just fetched, or the one held (even old).
        let set = self.current();
        let missing = if set.fetched.is_none() || self.outage.is_down() || timed_out {
            Missing::Unreachable
        } else {
            Missing::Unknown
        };
        found(&set, kid, alg, missing)
    }

    /// Takes the one refresh slot if it is free and a fetch is due.
    fn step(&self) -> Step<'_> {
        let mut refresh = self.refresh.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = &refresh.in_flight {
            return Step::Wait(done.clone());
        }
        let now = Instant::now();
        let allowed = refresh
            .last_attempt
            .is_none_or(|at| now.saturating_duration_since(at) >= self.refresh_interval);
        if !allowed {
            return Step::Settle;
        }
        refresh.last_attempt = Some(now);
        let (sender, receiver) = watch::channel(());
        refresh.in_flight = Some(receiver);
        Step::Fetch(InFlight {
            refresh: &self.refresh,
            _done: sender,
        })
    }

    /// Fetches the key set (discovering its URL first if need be); `None`
    /// when the authorization server could not give one.
    async fn fetch(&self) -> Option<KeySet> {
        let discovered = self
            .refresh
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .discovered
            .clone();
        let url = match (&self.source, discovered) {
            (Source::Url(url), _) => url.clone(),
            (Source::Discovery { .. }, Some(url)) => url,
            (Source::Discovery { issuer, metadata }, None) => {
                let url = self.discover(issuer, metadata).await?;
                self.refresh
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .discovered = Some(url.clone());
                url
            }
        };
        let what = "the authorization server's key set";
        let set = self.fetcher.get_json(&url).await.and_then(|document| {
            KeySet::parse(&document, Instant::now()).ok_or(FetchError::Unusable(
                "the answer is not a JWK Set (no `keys` array)",
            ))
        });
        match set {
            Ok(set) => {
                self.outage.succeeded(what, &url);
                Some(set)
            }
            Err(error) => {
                self.outage.failed(what, &url, &error);
                None
            }
        }
    }

    /// The `jwks_uri` of the first metadata document that answers and names
    /// `issuer`, held to the discovered-URL rule.
    async fn discover(&self, issuer: &str, metadata: &[Uri]) -> Option<Uri> {
        let mut last = FetchError::Unusable("no metadata URL");
        for url in metadata {
            let jwks = self.fetcher.get_json(url).await.and_then(|document| {
                if document.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    return Err(FetchError::Unusable("the metadata names another issuer"));
                }
                let jwks = document
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .ok_or(FetchError::Unusable("the metadata names no jwks_uri"))?;
                check_discovered_url(jwks, url).map_err(|_| {
                    FetchError::Unusable(
                        "the metadata's jwks_uri is neither https nor on the issuer's own origin",
                    )
                })
            });
            match jwks {
                Ok(jwks) => {
                    self.outage
                        .succeeded("the authorization server's metadata", url);
                    return Some(jwks);
                }
                Err(error) => last = error,
            }
        }
        let url = metadata.last()?;
        self.outage
            .failed("the authorization server's metadata", url, &last);
        None
    }
}

fn found(
    set: &KeySet,
    kid: Option<&str>,
    alg: Algorithm,
    missing: Missing,
) -> Result<Arc<Key>, Missing> {
    match set.select(kid, alg) {
        Selection::Found(key) => Ok(key),
        Selection::Ambiguous => Err(Missing::Ambiguous),
        Selection::NotFound => Err(missing),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 2048-bit modulus (any 256 bytes with the top bit set).
    fn modulus() -> String {
        URL_SAFE_NO_PAD.encode([0xc5; 256])
    }

    #[allow(clippy::needless_pass_by_value)]
    fn set(keys: Value) -> KeySet {
        KeySet::parse(&json!({ "keys": keys }), Instant::now()).unwrap()
    }

    #[test]
    fn only_verifying_keys_of_allowed_kinds_are_kept() {
        let p256 = URL_SAFE_NO_PAD.encode([7; 32]);
        let keys = set(json!([
            {"kty": "RSA", "kid": "rsa", "n": modulus(), "e": "AQAB"},
            {"kty": "RSA", "kid": "small", "n": URL_SAFE_NO_PAD.encode([0xc5; 128]), "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": modulus(), "e": "AQAB"},
            {"kty": "RSA", "kid": "ops", "key_ops": ["encrypt"], "n": modulus(), "e": "AQAB"},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "EC", "kid": "ec", "crv": "P-256", "x": p256, "y": p256},
            {"kty": "EC", "kid": "short", "crv": "P-256", "x": "AAAA", "y": p256},
            {"kty": "EC", "kid": "k1", "crv": "secp256k1", "x": p256, "y": p256},
            {"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": p256},
            {"kty": "OKP", "kid": "x", "crv": "X25519", "x": p256},
            {"kty": "RSA", "kid": "rsa", "n": modulus(), "e": "AQAB"},
            {"kty": "RSA", "kid": 7, "n": modulus(), "e": "AQAB"},
            "not a key",
        ]));
        assert_eq!(keys.len(), 3);
        assert!(matches!(
            keys.select(Some("rsa"), Algorithm::RS256),
            Selection::Found(_)
        ));
        assert!(matches!(
            keys.select(Some("rsa"), Algorithm::ES256),
            Selection::NotFound
        ));
        assert!(matches!(
            keys.select(Some("ec"), Algorithm::ES256),
            Selection::Found(_)
        ));
        assert!(matches!(
            keys.select(Some("ec"), Algorithm::ES384),
            Selection::NotFound
        ));
        assert!(matches!(
            keys.select(Some("ed"), Algorithm::EdDSA),
            Selection::Found(_)
        ));
        assert!(matches!(
            keys.select(Some("secret"), Algorithm::RS256),
            Selection::NotFound
        ));
        assert_eq!(set(json!([])).len(), 0);
    }

    #[test]
    fn a_document_without_a_keys_array_is_not_a_key_set() {
        let now = Instant::now();
        for document in [
            json!({}),
            json!({"keys": "no"}),
            json!({"keys": {}}),
            json!({"keys": null}),
            json!({"jwks": []}),
        ] {
            assert!(KeySet::parse(&document, now).is_none(), "{document}");
        }
        assert!(KeySet::parse(&json!({"keys": []}), now).is_some());
    }

    #[test]
    fn a_key_that_names_its_alg_verifies_only_that_alg() {
        let keys =
            set(json!([{"kty": "RSA", "kid": "k", "alg": "PS256", "n": modulus(), "e": "AQAB"}]));
        assert!(matches!(
            keys.select(Some("k"), Algorithm::PS256),
            Selection::Found(_)
        ));
        assert!(matches!(
            keys.select(Some("k"), Algorithm::RS256),
            Selection::NotFound
        ));
    }

    #[test]
    fn a_token_without_kid_needs_exactly_one_key_of_its_kind() {
        let one = set(json!([{"kty": "RSA", "kid": "a", "n": modulus(), "e": "AQAB"}]));
        assert!(matches!(
            one.select(None, Algorithm::RS256),
            Selection::Found(_)
        ));
        let two = set(json!([
            {"kty": "RSA", "kid": "a", "n": modulus(), "e": "AQAB"},
            {"kty": "RSA", "kid": "b", "n": modulus(), "e": "AQAB"},
        ]));
        assert!(matches!(
            two.select(None, Algorithm::RS256),
            Selection::Ambiguous
        ));
        assert!(matches!(
            two.select(None, Algorithm::ES256),
            Selection::NotFound
        ));
    }

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_then_openid_put_it() {
        assert_eq!(
            metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example.com/realms/mcp/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/realms/mcp",
                "https://auth.example.com/.well-known/openid-configuration/realms/mcp",
                "https://auth.example.com/realms/mcp/.well-known/openid-configuration",
            ]
        );
    }
}
