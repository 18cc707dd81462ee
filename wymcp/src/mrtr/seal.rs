//! Sealing `requestState`: keys, the sealer, and what a state is bound to
//! (see [the module docs](super#sealing) for the token's layout).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::protocol::error::RpcError;

type HmacSha256 = Hmac<Sha256>;

/// The token format: 2 since the sealed bytes carry the round and its asked
/// keys (see `round.rs`); a version-1 token is refused as malformed.
const VERSION: u8 = 2;
const TAG_LEN: usize = 32;
const DOMAIN: &[u8] = b"wymcp/requestState/v1";
/// The shortest secret a [`SealingKey`] accepts: HMAC-SHA256's block of entropy.
pub const MIN_SECRET_LEN: usize = 32;
/// The default lifetime of a sealed `requestState`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// A key that seals or unseals `requestState`: an id (carried in the token, so
/// the right key is found after a rotation) and a secret.
#[derive(Clone)]
pub struct SealingKey {
    id: String,
    /// Read by the Redis backends (their subkeys) alone: every tag is made
    /// with `keyed`.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    secret: Vec<u8>,
    /// HMAC-SHA256 keyed with `secret` once (the key's two padded blocks
    /// hashed), cloned for each tag: keying it again cost two SHA-256
    /// blocks a seal or an unseal (BENCHMARKS.md, "The 2025 session by
    /// instructions").
    keyed: HmacSha256,
}

/// Why a [`SealingKey`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The id is empty or longer than 255 bytes.
    #[error("a sealing key id must be 1 to 255 bytes long, `{0}` is not")]
    Id(String),
    /// The secret is shorter than [`MIN_SECRET_LEN`] bytes.
    #[error(
        "the sealing key `{id}` has a {len}-byte secret; at least {MIN_SECRET_LEN} bytes are needed"
    )]
    Short {
        /// The key's id.
        id: String,
        /// The secret's length.
        len: usize,
    },
    /// The operating system gave no randomness for a random key.
    #[error("the operating system gave no randomness for a sealing key: {0}")]
    Randomness(String),
}

impl SealingKey {
    /// A key with the given id (1–255 bytes) and secret (at least
    /// [`MIN_SECRET_LEN`] bytes, ideally random).
    pub fn new(id: impl Into<String>, secret: impl Into<Vec<u8>>) -> Result<Self, KeyError> {
        let id = id.into();
        let secret = secret.into();
        if id.is_empty() || id.len() > 255 {
            return Err(KeyError::Id(id));
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(KeyError::Short {
                id,
                len: secret.len(),
            });
        }
        Ok(SealingKey::keyed(id, secret))
    }

    fn keyed(id: String, secret: Vec<u8>) -> Self {
        // HMAC takes a key of any length; this cannot fail.
        let keyed = <HmacSha256 as Mac>::new_from_slice(&secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        SealingKey { id, secret, keyed }
    }

    /// A key with a random secret drawn from the operating system. Fails
    /// when the operating system gives no randomness: wymcp never falls back
    /// to a weaker source.
    pub fn random(id: impl Into<String>) -> Result<Self, KeyError> {
        let id = id.into();
        if id.is_empty() || id.len() > 255 {
            return Err(KeyError::Id(id));
        }
        let mut secret = vec![0u8; MIN_SECRET_LEN];
        getrandom::fill(&mut secret).map_err(|error| KeyError::Randomness(error.to_string()))?;
        Ok(SealingKey::keyed(id, secret))
    }

    /// The key's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The secret, from which the Redis backends derive their subkeys.
    #[cfg(feature = "redis")]
    pub(crate) fn secret(&self) -> &[u8] {
        &self.secret
    }

    fn mac(&self) -> HmacSha256 {
        self.keyed.clone()
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            // `keyed` is the secret too, hashed: not shown either.
            .finish_non_exhaustive()
    }
}

/// What a sealed state is bound to: who asked, for which method, with which
/// params. Built from the request, never sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct Binding {
    subject: String,
    method: String,
    digest: [u8; 32],
}

impl Binding {
    /// The binding of a request by `subject` (the principal's subject, `""`
    /// when unauthenticated) for `method` with `params`.
    #[must_use]
    pub fn new(subject: &str, method: &str, params: Option<&Value>) -> Self {
        Binding {
            subject: subject.to_owned(),
            method: method.to_owned(),
            digest: params_digest(params),
        }
    }
}

/// SHA-256 over the canonical form of the params that identify a request:
/// every member but `_meta`, `inputResponses` and `requestState`.
#[must_use]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub fn params_digest(params: Option<&Value>) -> [u8; 32] {
    let mut bytes = Vec::new();
    match params {
        Some(Value::Object(map)) => {
            let salient: BTreeMap<&String, &Value> = map
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "_meta" | "inputResponses" | "requestState"))
                .collect();
            if salient.is_empty() {
                return *NO_PARAMS;
            }
            canonical_object(salient.into_iter(), &mut bytes);
        }
        Some(other) => canonical(other, &mut bytes),
        None => return *NO_PARAMS,
    }
    Sha256::digest(&bytes).into()
}

/// The digest of no salient params, `{}` (every binding of a session token
/// and of a mid-call request's id), hashed once.
static NO_PARAMS: std::sync::LazyLock<[u8; 32]> =
    std::sync::LazyLock::new(|| Sha256::digest(b"{}").into());

fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            canonical_object(sorted.into_iter(), out);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        // Scalars have one serialisation each; writing to a Vec cannot fail.
        scalar => out.extend(serde_json::to_vec(scalar).unwrap_or_default()),
    }
}

fn canonical_object<'v>(members: impl Iterator<Item = (&'v String, &'v Value)>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(serde_json::to_vec(key).unwrap_or_default());
        out.push(b':');
        canonical(value, out);
    }
    out.push(b'}');
}

/// Why a `requestState` did not unseal. Every case is answered the same way
/// (400/-32602); the distinction is for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub enum UnsealError {
    /// Not base64url, too short, or an unknown version.
    #[error("requestState is malformed")]
    Malformed,
    /// Sealed under a key id this server does not hold.
    #[error("requestState was sealed under an unknown key")]
    UnknownKey,
    /// The tag does not verify: altered, or bound to another principal,
    /// method or params.
    #[error("requestState failed verification")]
    Tampered,
    /// Verified, but past its expiry.
    #[error("requestState has expired")]
    Expired,
}

impl UnsealError {
    /// The error a client gets for this failure: -32602 (400 on
    /// 2026-07-28).
    #[must_use]
    pub fn rpc_error(self) -> RpcError {
        RpcError::invalid_params(self.to_string())
    }
}

/// Seals and unseals `requestState`: one current key, any number of keys
/// still accepted, and a lifetime. Lives in the [`Server`](crate::Server).
#[derive(Clone)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct Sealer {
    current: SealingKey,
    accepted: Vec<SealingKey>,
    ttl: Duration,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("current", &self.current.id)
            .field(
                "accepted",
                &self
                    .accepted
                    .iter()
                    .map(|k| k.id.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Sealer {
    /// A sealer with a key drawn from the operating system for this process
    /// alone (id `process`): what a server built without a sealing key uses.
    pub fn random() -> Result<Self, KeyError> {
        SealingKey::random("process").map(Sealer::new)
    }
}

impl Sealer {
    /// A sealer that seals (and unseals) with `current`, with the default lifetime.
    #[must_use]
    pub fn new(current: SealingKey) -> Self {
        Sealer {
            current,
            accepted: Vec::new(),
            ttl: DEFAULT_TTL,
        }
    }

    /// Makes `key` the sealing key; the previous one stays accepted.
    #[must_use]
    pub fn rotate(mut self, key: SealingKey) -> Self {
        let previous = std::mem::replace(&mut self.current, key);
        self.accepted
            .retain(|k| k.id != self.current.id && k.id != previous.id);
        if previous.id != self.current.id {
            self.accepted.push(previous);
        }
        self
    }

    /// Adds a key that unseals but never seals.
    #[must_use]
    pub fn accept(mut self, key: SealingKey) -> Self {
        if key.id != self.current.id {
            self.accepted.retain(|k| k.id != key.id);
            self.accepted.push(key);
        }
        self
    }

    /// Sets how long a sealed state stays valid.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The lifetime of a sealed state.
    #[must_use]
    pub fn lifetime(&self) -> Duration {
        self.ttl
    }

    /// Seals `state` for the request `binding` describes, valid from now for
    /// the configured lifetime.
    #[must_use]
    pub fn seal(&self, binding: &Binding, state: &[u8]) -> String {
        self.seal_at(binding, state, unix_now())
    }

    /// Unseals a `requestState` presented with the request `binding` describes.
    pub fn unseal(&self, binding: &Binding, sealed: &str) -> Result<Vec<u8>, UnsealError> {
        self.unseal_at(binding, sealed, unix_now())
    }

    pub(crate) fn seal_at(&self, binding: &Binding, state: &[u8], now: u64) -> String {
        self.seal_lasting(binding, state, now, self.ttl)
    }

    /// Seals `state` for `binding`, valid from now for `ttl` rather than the
    /// configured lifetime: the other tokens of the same key family (a 2025
    /// client's session token, the id of a mid-call request), each with a
    /// binding `method` of its own so that no token opens as another kind.
    pub(crate) fn seal_for(&self, binding: &Binding, state: &[u8], ttl: Duration) -> String {
        self.seal_lasting(binding, state, unix_now(), ttl)
    }

    fn seal_lasting(&self, binding: &Binding, state: &[u8], now: u64, ttl: Duration) -> String {
        let key = &self.current;
        let expiry = now.saturating_add(ttl.as_secs());
        let id = key.id.as_bytes();
        let mut token = Vec::with_capacity(2 + id.len() + 8 + state.len() + TAG_LEN);
        token.push(VERSION);
        // SealingKey guarantees 1..=255 bytes.
        token.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
        token.extend_from_slice(id);
        token.extend_from_slice(&expiry.to_be_bytes());
        token.extend_from_slice(state);
        let tag = tag(key, &token, binding);
        token.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(token)
    }

    pub(crate) fn unseal_at(
        &self,
        binding: &Binding,
        sealed: &str,
        now: u64,
    ) -> Result<Vec<u8>, UnsealError> {
        let token = URL_SAFE_NO_PAD
            .decode(sealed)
            .map_err(|_| UnsealError::Malformed)?;
        let (&version, rest) = token.split_first().ok_or(UnsealError::Malformed)?;
        if version != VERSION {
            return Err(UnsealError::Malformed);
        }
        let (&id_len, rest) = rest.split_first().ok_or(UnsealError::Malformed)?;
        let id_len = usize::from(id_len);
        if rest.len() < id_len + 8 + TAG_LEN {
            return Err(UnsealError::Malformed);
        }
        let (id, rest) = rest.split_at(id_len);
        let (expiry, rest) = rest.split_at(8);
        let (state, _tag) = rest.split_at(rest.len() - TAG_LEN);
        let key = std::iter::once(&self.current)
            .chain(&self.accepted)
            .find(|k| k.id.as_bytes() == id)
            .ok_or(UnsealError::UnknownKey)?;
        let (signed, tag_bytes) = token.split_at(token.len() - TAG_LEN);
        let mut mac = key.mac();
        feed(&mut mac, signed, binding);
        // `verify_slice` compares in constant time.
        mac.verify_slice(tag_bytes)
            .map_err(|_| UnsealError::Tampered)?;
        let mut expiry_bytes = [0u8; 8];
        expiry_bytes.copy_from_slice(expiry);
        if now > u64::from_be_bytes(expiry_bytes) {
            return Err(UnsealError::Expired);
        }
        Ok(state.to_vec())
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn feed(mac: &mut HmacSha256, signed: &[u8], binding: &Binding) {
    mac.update(DOMAIN);
    mac.update(&(signed.len() as u64).to_be_bytes());
    mac.update(signed);
    for part in [binding.subject.as_bytes(), binding.method.as_bytes()] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.update(&binding.digest);
}

fn tag(key: &SealingKey, signed: &[u8], binding: &Binding) -> [u8; TAG_LEN] {
    let mut mac = key.mac();
    feed(&mut mac, signed, binding);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn sealer() -> Sealer {
        Sealer::new(SealingKey::new("k1", vec![7u8; 32]).unwrap())
    }

    pub(crate) fn binding() -> Binding {
        Binding::new(
            "alice",
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 1}})),
        )
    }

    pub(crate) const NOW: u64 = 1_800_000_000;

    #[test]
    fn round_trip_returns_the_state() {
        let s = sealer();
        let sealed = s.seal_at(&binding(), b"round-1", NOW);
        assert_eq!(
            s.unseal_at(&binding(), &sealed, NOW + 1).unwrap(),
            b"round-1"
        );
        assert!(
            sealed
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let s = sealer();
        let sealed = s.seal_at(&binding(), b"state", NOW);
        let raw = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        for i in 0..raw.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let result = s.unseal_at(&binding(), &URL_SAFE_NO_PAD.encode(&bad), NOW);
                assert!(
                    result.is_err(),
                    "byte {i} bit {bit:#x} flipped was accepted"
                );
            }
        }
        // The conformance suite's tamper: a suffix.
        assert!(
            s.unseal_at(&binding(), &format!("{sealed}-TAMPERED"), NOW)
                .is_err()
        );
        // Truncation.
        assert!(
            s.unseal_at(&binding(), &sealed[..sealed.len() - 4], NOW)
                .is_err()
        );
    }

    #[test]
    fn expiry_is_enforced() {
        let s = sealer().ttl(Duration::from_secs(60));
        let sealed = s.seal_at(&binding(), b"x", NOW);
        assert!(s.unseal_at(&binding(), &sealed, NOW + 60).is_ok());
        assert_eq!(
            s.unseal_at(&binding(), &sealed, NOW + 61),
            Err(UnsealError::Expired)
        );
    }

    #[test]
    fn real_clock_round_trip_and_default_lifetime() {
        let s = sealer();
        assert_eq!(s.lifetime(), DEFAULT_TTL);
        let sealed = s.seal(&binding(), b"now");
        assert_eq!(s.unseal(&binding(), &sealed).unwrap(), b"now");
    }

    #[test]
    fn another_principal_is_refused() {
        let s = sealer();
        let sealed = s.seal_at(&binding(), b"x", NOW);
        let mallory = Binding::new(
            "mallory",
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 1}})),
        );
        assert_eq!(
            s.unseal_at(&mallory, &sealed, NOW),
            Err(UnsealError::Tampered)
        );
    }

    #[test]
    fn another_method_is_refused() {
        let s = sealer();
        let sealed = s.seal_at(&binding(), b"x", NOW);
        let other = Binding::new(
            "alice",
            "prompts/get",
            Some(&json!({"name": "t", "arguments": {"a": 1}})),
        );
        assert_eq!(
            s.unseal_at(&other, &sealed, NOW),
            Err(UnsealError::Tampered)
        );
    }

    #[test]
    fn other_params_are_refused_but_mrtr_fields_and_order_do_not_matter() {
        let s = sealer();
        let sealed = s.seal_at(&binding(), b"x", NOW);
        let other_args = Binding::new(
            "alice",
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 2}})),
        );
        assert_eq!(
            s.unseal_at(&other_args, &sealed, NOW),
            Err(UnsealError::Tampered)
        );
        let other_tool = Binding::new(
            "alice",
            "tools/call",
            Some(&json!({"name": "u", "arguments": {"a": 1}})),
        );
        assert_eq!(
            s.unseal_at(&other_tool, &sealed, NOW),
            Err(UnsealError::Tampered)
        );
        let retry = Binding::new(
            "alice",
            "tools/call",
            Some(&json!({
                "arguments": {"a": 1},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
                "inputResponses": {"k": {"action": "accept"}},
                "requestState": "whatever",
                "name": "t",
            })),
        );
        assert_eq!(s.unseal_at(&retry, &sealed, NOW).unwrap(), b"x");
    }

    #[test]
    fn canonical_digest_sorts_nested_keys() {
        let a = params_digest(Some(&json!({"x": {"b": [1, {"d": 1, "c": 2}], "a": "é"}})));
        let b = params_digest(Some(&json!({"x": {"a": "é", "b": [1, {"c": 2, "d": 1}]}})));
        assert_eq!(a, b);
        assert_ne!(
            a,
            params_digest(Some(&json!({"x": {"a": "é", "b": [{"c": 2, "d": 1}, 1]}})))
        );
        assert_eq!(
            params_digest(None),
            params_digest(Some(&json!({"_meta": {}})))
        );
    }

    /// No salient params hash to SHA-256 of `{}` (kept once, not hashed
    /// per binding), written out here rather than computed by the code
    /// under test.
    #[test]
    fn no_params_digest_to_sha256_of_an_empty_object() {
        let empty: [u8; 32] =
            hex("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        assert_eq!(params_digest(None), empty);
        assert_eq!(params_digest(Some(&json!({}))), empty);
        assert_eq!(
            params_digest(Some(
                &json!({"_meta": {"a": 1}, "requestState": "s", "inputResponses": {}})
            )),
            empty
        );
        assert_ne!(params_digest(Some(&json!({"a": 1}))), empty);
    }

    /// A key's MAC, keyed once and cloned per tag, is HMAC-SHA256 of its
    /// secret: RFC 4231's vectors (a key shorter than a block, one longer,
    /// hashed first), and a second tag from the same key the same as the
    /// first.
    #[test]
    fn a_keys_mac_is_hmac_sha256_of_its_secret() {
        let cases: [(&[u8], &[u8], &str); 3] = [
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                &[
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                    22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                ],
                &[b'x'; 100],
                "d1c86a42d627e0de515d31da2dd2c101f2b49ffba04d04685fe4b05d877c5601",
            ),
        ];
        for (secret, data, expected) in cases {
            let key = SealingKey::keyed("k".into(), secret.to_vec());
            for _ in 0..2 {
                let mut mac = key.mac();
                mac.update(data);
                let tag: [u8; 32] = mac.finalize().into_bytes().into();
                assert_eq!(tag, hex::<32>(expected), "{expected}");
            }
        }
    }

    fn hex<const N: usize>(text: &str) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    #[test]
    fn rotation_keeps_old_keys_accepted_and_seals_with_the_new() {
        let old = sealer();
        let old_sealed = old.seal_at(&binding(), b"old", NOW);
        let rotated = old.rotate(SealingKey::new("k2", vec![9u8; 32]).unwrap());
        assert_eq!(
            rotated.unseal_at(&binding(), &old_sealed, NOW).unwrap(),
            b"old"
        );
        let new_sealed = rotated.seal_at(&binding(), b"new", NOW);
        let raw = URL_SAFE_NO_PAD.decode(&new_sealed).unwrap();
        assert_eq!(&raw[2..2 + usize::from(raw[1])], b"k2");
        assert_eq!(
            rotated.unseal_at(&binding(), &new_sealed, NOW).unwrap(),
            b"new"
        );
        // A server that only holds the old key cannot read the new state.
        assert_eq!(
            sealer().unseal_at(&binding(), &new_sealed, NOW),
            Err(UnsealError::UnknownKey)
        );
        // An accept-only key unseals but does not seal.
        let accepting = Sealer::new(SealingKey::new("k3", vec![1u8; 32]).unwrap())
            .accept(SealingKey::new("k1", vec![7u8; 32]).unwrap());
        assert_eq!(
            accepting.unseal_at(&binding(), &old_sealed, NOW).unwrap(),
            b"old"
        );
        let raw = URL_SAFE_NO_PAD
            .decode(accepting.seal_at(&binding(), b"", NOW))
            .unwrap();
        assert_eq!(&raw[2..4], b"k3");
    }

    #[test]
    fn same_id_other_secret_is_tampered_and_unknown_id_is_unknown() {
        let sealed = sealer().seal_at(&binding(), b"x", NOW);
        let impostor = Sealer::new(SealingKey::new("k1", vec![8u8; 32]).unwrap());
        assert_eq!(
            impostor.unseal_at(&binding(), &sealed, NOW),
            Err(UnsealError::Tampered)
        );
        let stranger = Sealer::new(SealingKey::new("zz", vec![7u8; 32]).unwrap());
        assert_eq!(
            stranger.unseal_at(&binding(), &sealed, NOW),
            Err(UnsealError::UnknownKey)
        );
    }

    #[test]
    fn garbage_never_panics() {
        let s = sealer();
        let b = binding();
        let mut inputs: Vec<String> = vec![
            String::new(),
            "A".into(),
            "AA".into(),
            "AQ".into(),
            "AQE".into(),
            "====".into(),
            "!!!!".into(),
            "é".into(),
            "\u{0}".repeat(9),
            "_".repeat(1000),
            URL_SAFE_NO_PAD.encode([1, 255]),
            URL_SAFE_NO_PAD.encode([1, 3, b'k']),
            URL_SAFE_NO_PAD.encode([2; 60]),
        ];
        // Every length of a valid-looking prefix.
        let sealed = s.seal_at(&b, b"payload", NOW);
        inputs.extend((0..sealed.len()).map(|n| sealed[..n].to_owned()));
        for input in inputs {
            assert!(
                s.unseal_at(&b, &input, NOW).is_err(),
                "{input:?} was accepted"
            );
        }
    }

    #[test]
    fn base64url_round_trips_and_is_strict() {
        let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).ok();
        for len in 0..40u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37)).collect();
            let text = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(!text.contains('='));
            assert_eq!(decode(&text).unwrap(), bytes);
        }
        assert_eq!(URL_SAFE_NO_PAD.encode(b"hello"), "aGVsbG8");
        assert!(decode("aGVsbG9").is_none(), "non-canonical trailing bits");
        assert!(decode("aGVs+G8").is_none(), "standard alphabet");
        assert!(decode("aGVsbG8=").is_none(), "padding");
    }

    #[test]
    fn keys_are_validated_and_redacted() {
        assert!(matches!(
            SealingKey::new("", vec![0; 32]),
            Err(KeyError::Id(_))
        ));
        assert!(matches!(
            SealingKey::new("x".repeat(256), vec![0; 32]),
            Err(KeyError::Id(_))
        ));
        assert!(matches!(
            SealingKey::new("k", vec![0; 31]),
            Err(KeyError::Short { len: 31, .. })
        ));
        let key = SealingKey::new("k", vec![42; 32]).unwrap();
        assert!(!format!("{key:?}").contains("42"));
        assert_ne!(
            SealingKey::random("a").unwrap().secret,
            SealingKey::random("a").unwrap().secret
        );
        assert!(matches!(SealingKey::random(""), Err(KeyError::Id(_))));
        let s = Sealer::random().unwrap();
        assert!(format!("{s:?}").contains("process"));
    }
}
