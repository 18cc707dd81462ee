//! MRTR (multi round-trip requests, SEP-2322): `input_required` results, the
//! retry's `inputResponses`, and the sealing of `requestState`.
//!
//! # The API in one screen
//!
//! A `tools/call`, `prompts/get` or `resources/read` handler that needs
//! something from the client answers an [`InputRequired`] instead of its
//! result; the client answers the listed requests and retries the same call
//! with `inputResponses` and the `requestState` echoed. The handler reads them
//! through [`Inputs`]:
//!
//! ```
//! use serde_json::json;
//! use wymcp::mrtr::{InputKind, InputRequest, InputRequired, Inputs};
//!
//! fn greet(inputs: &Inputs) -> Result<String, InputRequired> {
//!     if let Some(name) = inputs.accepted("user_name").and_then(|c| c.get("name")) {
//!         return Ok(format!("Hello, {name}!"));
//!     }
//!     let mut ask = inputs.input_required();
//!     if inputs.declares(InputKind::Elicitation) {
//!         ask = ask
//!             .request(
//!                 "user_name",
//!                 InputRequest::elicit(
//!                     "What is your name?",
//!                     json!({"type": "object", "properties": {"name": {"type": "string"}}}),
//!                 ),
//!             )
//!             .expect("declared, so allowed");
//!     }
//!     Err(ask.state(b"round-1".to_vec()))
//! }
//! # let _ = greet;
//! ```
//!
//! * [`Inputs::from_request`] builds the view of one request (Dispatch calls
//!   it): it unseals `requestState` (a failure is a [`Rejection`] 400/-32602,
//!   ready for [`Exchange::reject`](crate::Exchange::reject)), checks that
//!   `inputResponses` is an object, and reads the declared client
//!   capabilities from `_meta["io.modelcontextprotocol/clientCapabilities"]`.
//! * [`InputRequired::request`] refuses (with [`UndeclaredInput`]) input the
//!   client did not declare it can give, so a handler can never send it: the
//!   kind (`elicitation`, `sampling`, `roots`), and the mode or option used
//!   (a URL elicitation needs `elicitation.url`, a form one `elicitation.form`
//!   or an empty `elicitation`; sampling with `tools`/`toolChoice` needs
//!   `sampling.tools`, with `includeContext` other than `"none"`
//!   `sampling.context`). [`Inputs::allows`] asks first;
//!   [`Inputs::require`] turns a capability a handler cannot do without into
//!   the 400/-32021 rejection with `data.requiredCapabilities`.
//! * [`InputRequired::into_result`] renders the result object
//!   (`resultType: "input_required"`, `inputRequests`, the sealed
//!   `requestState`) for the request the [`Inputs`] came from.
//!
//! # Sealing
//!
//! The handler's own state bytes travel through the client, so they are
//! attacker-controlled. [`Sealer`] protects them with HMAC-SHA256 under a
//! server key. The token is base64url (no padding) of
//!
//! ```text
//! version (1) | key id length (1) | key id | expiry, unix seconds (8, big-endian) | state | tag (32)
//! ```
//!
//! and the tag covers all of that **and** what the state is bound to, which is
//! never sent: the principal's subject, the method, and a SHA-256 digest of the
//! params that identify the request (the params minus `_meta`,
//! `inputResponses` and `requestState`, in a canonical form: keys sorted, no
//! whitespace). A state presented with another principal, another method,
//! other arguments, after its expiry, under a key the server no longer holds,
//! or altered in any byte fails to unseal. Tags are compared in constant time.
//! Sealing gives integrity, not secrecy: the client can read the state bytes,
//! so put no secret in them.
//!
//! Keys: [`ServerBuilder::sealing_key`](crate::ServerBuilder::sealing_key) sets
//! the key that seals (earlier ones stay accepted),
//! [`accept_sealing_key`](crate::ServerBuilder::accept_sealing_key) adds a key
//! that only unseals (a retired key during rotation). Without either, each
//! process draws a random key at start-up: states do not survive a restart or
//! cross replicas, which is the safe default. The lifetime is
//! [`request_state_ttl`](crate::ServerBuilder::request_state_ttl), 10 minutes
//! by default. A state is not single-use: replay within its lifetime, by the
//! same principal for the same request, yields the same answer.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::response::{Rejection, code};

type HmacSha256 = Hmac<Sha256>;

/// The `_meta` key under which a request declares its client capabilities.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The methods on which a server may answer `input_required` (SEP-2322 §Supported Requests).
pub const MRTR_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

const VERSION: u8 = 1;
const TAG_LEN: usize = 32;
const DOMAIN: &[u8] = b"wymcp/requestState/v1";
/// The shortest secret a [`SealingKey`] accepts: HMAC-SHA256's block of entropy.
pub const MIN_SECRET_LEN: usize = 32;
/// The default lifetime of a sealed `requestState`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

// ---------------------------------------------------------------------------
// Keys and the sealer
// ---------------------------------------------------------------------------

/// A key that seals or unseals `requestState`: an id (carried in the token, so
/// the right key is found after a rotation) and a secret.
#[derive(Clone)]
pub struct SealingKey {
    id: String,
    secret: Vec<u8>,
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
        Ok(SealingKey { id, secret })
    }

    /// A key with a random secret, drawn from the operating system.
    #[must_use]
    pub fn random(id: impl Into<String>) -> Self {
        let mut id = id.into();
        if id.is_empty() || id.len() > 255 {
            "random".clone_into(&mut id);
        }
        SealingKey {
            id,
            secret: random_bytes().to_vec(),
        }
    }

    /// The key's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length; this cannot fail.
        <HmacSha256 as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"))
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// 32 bytes from `/dev/urandom`; where that cannot be read, SHA-256 over
/// several independently seeded std hashers, the time and the process id.
fn random_bytes() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    use std::io::Read;
    let mut out = [0u8; 32];
    if let Ok(mut file) = std::fs::File::open("/dev/urandom")
        && file.read_exact(&mut out).is_ok()
    {
        return out;
    }
    let mut digest = Sha256::new();
    for round in 0u64..8 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(round);
        digest.update(hasher.finish().to_le_bytes());
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    digest.update(now.as_nanos().to_le_bytes());
    digest.update(std::process::id().to_le_bytes());
    out.copy_from_slice(&digest.finalize());
    out
}

/// What a sealed state is bound to: who asked, for which method, with which
/// params. Built from the request, never sent.
#[derive(Debug, Clone, PartialEq, Eq)]
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
pub fn params_digest(params: Option<&Value>) -> [u8; 32] {
    let mut bytes = Vec::new();
    match params {
        Some(Value::Object(map)) => {
            let salient: BTreeMap<&String, &Value> = map
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "_meta" | "inputResponses" | "requestState"))
                .collect();
            canonical_object(salient.into_iter(), &mut bytes);
        }
        Some(other) => canonical(other, &mut bytes),
        None => bytes.extend_from_slice(b"{}"),
    }
    Sha256::digest(&bytes).into()
}

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
    /// The rejection a client gets for this failure: 400/-32602.
    #[must_use]
    pub fn rejection(self) -> Rejection {
        Rejection::new(
            StatusCode::BAD_REQUEST,
            code::INVALID_PARAMS,
            self.to_string(),
        )
    }
}

/// Seals and unseals `requestState`: one current key, any number of keys
/// still accepted, and a lifetime. Lives in the [`Server`](crate::Server).
#[derive(Clone)]
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

impl Default for Sealer {
    fn default() -> Self {
        Sealer::new(SealingKey::random("process"))
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

    fn seal_at(&self, binding: &Binding, state: &[u8], now: u64) -> String {
        let key = &self.current;
        let expiry = now.saturating_add(self.ttl.as_secs());
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
        base64url_encode(&token)
    }

    fn unseal_at(&self, binding: &Binding, sealed: &str, now: u64) -> Result<Vec<u8>, UnsealError> {
        let token = base64url_decode(sealed).ok_or(UnsealError::Malformed)?;
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

// ---------------------------------------------------------------------------
// base64url, no padding (RFC 4648 §5)
// ---------------------------------------------------------------------------

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}

fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        }))
    }
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3 + 2);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        // Reject non-canonical trailing bits, so one state has one spelling.
        let unused_bits = match chunk.len() {
            2 => n & 0xffff,
            3 => n & 0xff,
            _ => 0,
        };
        if unused_bits != 0 {
            return None;
        }
        for i in 0..produced {
            out.push(((n >> (16 - 8 * i)) & 0xff) as u8);
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// Input kinds, requests and the input_required result
// ---------------------------------------------------------------------------

/// A kind of input a server may ask the client for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// `elicitation/create`; needs the `elicitation` client capability.
    Elicitation,
    /// `sampling/createMessage`; needs the `sampling` client capability.
    Sampling,
    /// `roots/list`; needs the `roots` client capability.
    Roots,
}

impl InputKind {
    /// The method of an input request of this kind.
    #[must_use]
    pub const fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// The client capability this kind needs, as named in `ClientCapabilities`.
    #[must_use]
    pub const fn capability(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    /// Whether `capabilities` (a `ClientCapabilities` object) declares this kind.
    #[must_use]
    pub fn declared_in(self, capabilities: &Value) -> bool {
        capabilities
            .get(self.capability())
            .is_some_and(Value::is_object)
    }
}

/// One entry of `inputRequests`: a bare `{method, params}`, no `jsonrpc`, no `id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRequest {
    method: &'static str,
    params: Value,
    #[serde(skip)]
    kind: InputKind,
}

impl InputRequest {
    /// A form elicitation: a message and the (flat) schema of what to ask.
    #[must_use]
    pub fn elicit(message: impl Into<String>, requested_schema: Value) -> Self {
        let mut params = Map::new();
        params.insert("message".into(), Value::String(message.into()));
        params.insert("requestedSchema".into(), requested_schema);
        Self::elicitation(Value::Object(params))
    }

    /// An `elicitation/create` request with the given params, verbatim.
    #[must_use]
    pub fn elicitation(params: Value) -> Self {
        Self::of(InputKind::Elicitation, params)
    }

    /// A `sampling/createMessage` of one user text message.
    #[must_use]
    pub fn sample_text(text: impl Into<String>, max_tokens: u32) -> Self {
        Self::sampling(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text.into()}}],
            "maxTokens": max_tokens,
        }))
    }

    /// A `sampling/createMessage` request with the given params, verbatim.
    #[must_use]
    pub fn sampling(params: Value) -> Self {
        Self::of(InputKind::Sampling, params)
    }

    /// A `roots/list` request.
    #[must_use]
    pub fn list_roots() -> Self {
        Self::of(InputKind::Roots, json!({}))
    }

    fn of(kind: InputKind, params: Value) -> Self {
        InputRequest {
            method: kind.method(),
            params,
            kind,
        }
    }

    /// The kind of input asked for.
    #[must_use]
    pub fn kind(&self) -> InputKind {
        self.kind
    }

    /// The client capabilities this request needs, as a `ClientCapabilities`
    /// object: `{"elicitation": {}}` for a form elicitation,
    /// `{"elicitation": {"url": {}}}` for a URL one, `{"sampling": {}}` plus
    /// `tools` when it passes `tools` or `toolChoice` and `context` when it
    /// asks for `includeContext` other than `"none"`, `{"roots": {}}`.
    #[must_use]
    pub fn required_capabilities(&self) -> Value {
        let mut needs = Map::new();
        for sub in self.sub_capabilities() {
            needs.insert(sub.to_owned(), json!({}));
        }
        let mut required = Map::new();
        required.insert(self.kind.capability().to_owned(), Value::Object(needs));
        Value::Object(required)
    }

    /// Whether a client that declared `capabilities` can answer this request.
    #[must_use]
    pub fn allowed_by(&self, capabilities: &Value) -> bool {
        let Some(declared) = capabilities
            .get(self.kind.capability())
            .and_then(Value::as_object)
        else {
            return false;
        };
        let has = |name: &str| declared.get(name).is_some_and(Value::is_object);
        match self.kind {
            InputKind::Elicitation if self.elicitation_mode() == "url" => has("url"),
            // Form mode: `form` declared, or an empty declaration, which
            // means form only (the pre-URL-mode spelling).
            InputKind::Elicitation => {
                has("form") || !(declared.contains_key("form") || declared.contains_key("url"))
            }
            _ => self.sub_capabilities().into_iter().all(has),
        }
    }

    fn elicitation_mode(&self) -> &str {
        self.params
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("form")
    }

    /// The members of the kind's capability this request needs.
    fn sub_capabilities(&self) -> Vec<&'static str> {
        match self.kind {
            InputKind::Elicitation if self.elicitation_mode() == "url" => vec!["url"],
            InputKind::Elicitation | InputKind::Roots => Vec::new(),
            InputKind::Sampling => {
                let mut needs = Vec::new();
                if self.params.get("tools").is_some() || self.params.get("toolChoice").is_some() {
                    needs.push("tools");
                }
                if self
                    .params
                    .get("includeContext")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c != "none")
                {
                    needs.push("context");
                }
                needs
            }
        }
    }

    /// The request's params.
    #[must_use]
    pub fn params(&self) -> &Value {
        &self.params
    }
}

/// A handler asked for input the client did not declare it can give (a kind,
/// or a mode or option of one, such as URL elicitation or sampling with
/// tools). Converts to the 400/-32021 rejection when the handler cannot do
/// without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the client did not declare the capability this input needs: {1}")]
pub struct UndeclaredInput(pub InputKind, Value);

impl UndeclaredInput {
    /// The `ClientCapabilities` the refused request needs.
    #[must_use]
    pub fn required(&self) -> &Value {
        &self.1
    }

    /// 400/-32021 with `data.requiredCapabilities` naming what is needed.
    #[must_use]
    pub fn rejection(self) -> Rejection {
        Rejection::new(
            StatusCode::BAD_REQUEST,
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "this request needs client capabilities the client did not declare: {}",
                self.1
            ),
        )
        .data(json!({ "requiredCapabilities": self.1 }))
    }
}

/// The 400/-32021 `MissingRequiredClientCapability` rejection for `kinds`,
/// with `data.requiredCapabilities` a `ClientCapabilities` object such as
/// `{"sampling": {}}`.
#[must_use]
pub fn missing_capabilities(kinds: &[InputKind]) -> Rejection {
    let required: Map<String, Value> = kinds
        .iter()
        .map(|k| (k.capability().to_owned(), json!({})))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|k| k.capability()).collect();
    Rejection::new(
        StatusCode::BAD_REQUEST,
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this request needs client capabilities the client did not declare: {}",
            names.join(", ")
        ),
    )
    .data(json!({ "requiredCapabilities": required }))
}

/// An `input_required` answer under construction: the input requests (each
/// of a kind the client declared) and the handler's state, still unsealed.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    declared: Value,
    requests: BTreeMap<String, InputRequest>,
    state: Option<Vec<u8>>,
}

impl InputRequired {
    /// An empty answer for a client that declared `capabilities`
    /// (a `ClientCapabilities` object).
    #[must_use]
    pub fn new(capabilities: Value) -> Self {
        InputRequired {
            declared: capabilities,
            requests: BTreeMap::new(),
            state: None,
        }
    }

    /// Adds the input request `key`, unless the client did not declare what
    /// it needs ([`InputRequest::allowed_by`]).
    pub fn request(
        mut self,
        key: impl Into<String>,
        request: InputRequest,
    ) -> Result<Self, UndeclaredInput> {
        if !request.allowed_by(&self.declared) {
            return Err(UndeclaredInput(
                request.kind,
                request.required_capabilities(),
            ));
        }
        self.requests.insert(key.into(), request);
        Ok(self)
    }

    /// Sets the handler's state, sealed when rendered and handed back, via
    /// [`Inputs::state`], on the retry.
    #[must_use]
    pub fn state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// The input requests so far.
    #[must_use]
    pub fn requests(&self) -> &BTreeMap<String, InputRequest> {
        &self.requests
    }

    /// The result object: `resultType: "input_required"`, `inputRequests`
    /// (when any) and `requestState` sealed for `binding` (when a state was
    /// set). With neither, the state is an empty one, sealed, since the result
    /// must carry at least one of the two. No `ttlMs`/`cacheScope`: an
    /// `input_required` result is never cached.
    #[must_use]
    pub fn into_result(self, sealer: &Sealer, binding: &Binding) -> Value {
        let mut result = Map::new();
        result.insert("resultType".into(), json!("input_required"));
        let state = match (self.state, self.requests.is_empty()) {
            (Some(state), _) => Some(state),
            (None, true) => Some(Vec::new()),
            (None, false) => None,
        };
        if !self.requests.is_empty() {
            result.insert(
                "inputRequests".into(),
                serde_json::to_value(&self.requests).unwrap_or_else(|_| json!({})),
            );
        }
        if let Some(state) = state {
            result.insert("requestState".into(), json!(sealer.seal(binding, &state)));
        }
        Value::Object(result)
    }
}

// ---------------------------------------------------------------------------
// The retry, as a handler sees it
// ---------------------------------------------------------------------------

/// One request's MRTR view: the declared client capabilities, the
/// `inputResponses` of a retry, and the unsealed `requestState`.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    capabilities: Value,
    responses: Map<String, Value>,
    state: Option<Vec<u8>>,
}

impl Inputs {
    /// Reads the MRTR fields of a request by `subject` for `method` with
    /// `params`. A `requestState` that does not unseal, or an
    /// `inputResponses` that is not an object, is a 400/-32602 rejection.
    pub fn from_request(
        sealer: &Sealer,
        subject: &str,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Self, Rejection> {
        let capabilities = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(CLIENT_CAPABILITIES))
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let responses = match params.and_then(|p| p.get("inputResponses")) {
            None => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(Rejection::new(
                    StatusCode::BAD_REQUEST,
                    code::INVALID_PARAMS,
                    "inputResponses must be an object",
                ));
            }
        };
        let state = match params.and_then(|p| p.get("requestState")) {
            None => None,
            // The binding (a SHA-256 over the params) is worked out only for a
            // state to unseal: most requests carry none, and Dispatch binds a
            // state it seals itself.
            Some(Value::String(token)) => {
                match sealer.unseal(&Binding::new(subject, method, params), token) {
                    Ok(state) => Some(state),
                    Err(error) => {
                        tracing::debug!(target: "wymcp::mrtr", %error, method, "requestState refused");
                        return Err(error.rejection());
                    }
                }
            }
            Some(_) => return Err(UnsealError::Malformed.rejection()),
        };
        Ok(Inputs {
            capabilities,
            responses,
            state,
        })
    }

    /// The declared client capabilities (a `ClientCapabilities` object; `{}`
    /// when none were declared).
    #[must_use]
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether the client declared the capability `kind` needs.
    #[must_use]
    pub fn declares(&self, kind: InputKind) -> bool {
        kind.declared_in(&self.capabilities)
    }

    /// Whether the client can answer `request` (its kind, and the mode or
    /// options it uses, declared).
    #[must_use]
    pub fn allows(&self, request: &InputRequest) -> bool {
        request.allowed_by(&self.capabilities)
    }

    /// `Ok` when every kind in `kinds` is declared, otherwise the 400/-32021
    /// rejection naming the missing ones: for a handler that cannot proceed
    /// without them.
    pub fn require(&self, kinds: &[InputKind]) -> Result<(), Rejection> {
        let missing: Vec<InputKind> = kinds
            .iter()
            .copied()
            .filter(|k| !self.declares(*k))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing_capabilities(&missing))
        }
    }

    /// Every input response of the retry, by key (unknown keys included;
    /// ignore them).
    #[must_use]
    pub fn responses(&self) -> &Map<String, Value> {
        &self.responses
    }

    /// The input response under `key`, when it is an object.
    #[must_use]
    pub fn response(&self, key: &str) -> Option<&Map<String, Value>> {
        self.responses.get(key)?.as_object()
    }

    /// The `content` of an elicitation answered with `action: "accept"` under
    /// `key`.
    #[must_use]
    pub fn accepted(&self, key: &str) -> Option<&Map<String, Value>> {
        let response = self.response(key)?;
        if response.get("action")?.as_str()? != "accept" {
            return None;
        }
        response.get("content")?.as_object()
    }

    /// The state the handler set on the previous round, unsealed and verified.
    #[must_use]
    pub fn state(&self) -> Option<&[u8]> {
        self.state.as_deref()
    }

    /// A new `input_required` answer for this request's client.
    #[must_use]
    pub fn input_required(&self) -> InputRequired {
        InputRequired::new(self.capabilities.clone())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(SealingKey::new("k1", vec![7u8; 32]).unwrap())
    }

    fn binding() -> Binding {
        Binding::new(
            "alice",
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 1}})),
        )
    }

    const NOW: u64 = 1_800_000_000;

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
        let raw = base64url_decode(&sealed).unwrap();
        for i in 0..raw.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let result = s.unseal_at(&binding(), &base64url_encode(&bad), NOW);
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
        let raw = base64url_decode(&new_sealed).unwrap();
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
        let raw = base64url_decode(&accepting.seal_at(&binding(), b"", NOW)).unwrap();
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
            base64url_encode(&[1, 255]),
            base64url_encode(&[1, 3, b'k']),
            base64url_encode(&[2; 60]),
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
        for len in 0..40u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37)).collect();
            let text = base64url_encode(&bytes);
            assert!(!text.contains('='));
            assert_eq!(base64url_decode(&text).unwrap(), bytes);
        }
        assert_eq!(base64url_encode(b"hello"), "aGVsbG8");
        assert!(
            base64url_decode("aGVsbG9").is_none(),
            "non-canonical trailing bits"
        );
        assert!(base64url_decode("aGVs+G8").is_none(), "standard alphabet");
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
            SealingKey::random("a").secret,
            SealingKey::random("a").secret
        );
        let s = Sealer::default();
        assert!(format!("{s:?}").contains("process"));
    }

    #[test]
    fn builder_configures_keys_rotation_and_lifetime() {
        let k1 = || SealingKey::new("k1", vec![7u8; 32]).unwrap();
        let old = crate::Server::builder().sealing_key(k1()).build().unwrap();
        let sealed = old.sealer().seal(&binding(), b"s");
        let rotated = crate::Server::builder()
            .sealing_key(k1())
            .sealing_key(SealingKey::new("k2", vec![8u8; 32]).unwrap())
            .request_state_ttl(Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(rotated.sealer().unseal(&binding(), &sealed).unwrap(), b"s");
        assert_eq!(rotated.sealer().lifetime(), Duration::from_secs(5));
        assert_eq!(
            old.sealer()
                .unseal(&binding(), &rotated.sealer().seal(&binding(), b"")),
            Err(UnsealError::UnknownKey)
        );
        let accepting = crate::Server::builder()
            .accept_sealing_key(k1())
            .build()
            .unwrap();
        assert_eq!(
            accepting.sealer().unseal(&binding(), &sealed).unwrap(),
            b"s"
        );
        // Two processes without configured keys do not share states.
        let a = crate::Server::builder().build().unwrap();
        let b = crate::Server::builder().build().unwrap();
        let from_a = a.sealer().seal(&binding(), b"");
        assert!(a.sealer().unseal(&binding(), &from_a).is_ok());
        assert!(b.sealer().unseal(&binding(), &from_a).is_err());
    }

    fn params(extra: Value) -> Value {
        let mut p = json!({
            "name": "t",
            "arguments": {},
            "_meta": {CLIENT_CAPABILITIES: {"elicitation": {}, "roots": {}}},
        });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    #[test]
    fn inputs_round_trip_through_input_required() {
        let s = sealer();
        let first = params(json!({}));
        let inputs = Inputs::from_request(&s, "alice", "tools/call", Some(&first)).unwrap();
        assert!(inputs.state().is_none());
        assert!(inputs.declares(InputKind::Elicitation));
        assert!(!inputs.declares(InputKind::Sampling));
        let result = inputs
            .input_required()
            .request(
                "user_name",
                InputRequest::elicit("Name?", json!({"type": "object"})),
            )
            .unwrap()
            .state(b"r1".to_vec())
            .into_result(&s, &Binding::new("alice", "tools/call", Some(&first)));
        assert_eq!(result["resultType"], "input_required");
        assert_eq!(
            result["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        assert_eq!(
            result["inputRequests"]["user_name"]["params"]["message"],
            "Name?"
        );
        assert!(result.get("ttlMs").is_none());
        let retry = params(json!({
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}, "extra": 1},
            "requestState": result["requestState"],
        }));
        let again = Inputs::from_request(&s, "alice", "tools/call", Some(&retry)).unwrap();
        assert_eq!(again.state(), Some(&b"r1"[..]));
        assert_eq!(again.accepted("user_name").unwrap()["name"], "Ada");
        assert!(again.accepted("extra").is_none());
        assert_eq!(again.responses().len(), 2);
        // The same state from another principal is a -32602 rejection.
        let refused = Inputs::from_request(&s, "bob", "tools/call", Some(&retry)).unwrap_err();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        assert_eq!(refused.code(), code::INVALID_PARAMS);
    }

    #[test]
    fn malformed_mrtr_fields_are_invalid_params() {
        let s = sealer();
        for bad in [
            json!({"inputResponses": null}),
            json!({"inputResponses": [1]}),
            json!({"requestState": 5}),
            json!({"requestState": "not-a-state"}),
        ] {
            let err =
                Inputs::from_request(&s, "", "tools/call", Some(&params(bad.clone()))).unwrap_err();
            assert_eq!(err.code(), code::INVALID_PARAMS, "{bad}");
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{bad}");
        }
        // A response that is not an object is simply not an answer.
        let p = params(json!({"inputResponses": {"user_name": 12345}}));
        let inputs = Inputs::from_request(&s, "", "tools/call", Some(&p)).unwrap();
        assert!(inputs.response("user_name").is_none());
        assert!(inputs.accepted("user_name").is_none());
    }

    #[test]
    fn undeclared_kinds_cannot_be_requested() {
        let inputs =
            Inputs::from_request(&sealer(), "", "tools/call", Some(&params(json!({})))).unwrap();
        let err = inputs
            .input_required()
            .request("s", InputRequest::sample_text("hi", 10))
            .unwrap_err();
        assert_eq!(err.0, InputKind::Sampling);
        assert_eq!(err.required(), &json!({"sampling": {}}));
        let rejection = err.rejection();
        assert_eq!(rejection.status(), StatusCode::BAD_REQUEST);
        assert_eq!(rejection.code(), code::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert!(
            inputs
                .require(&[InputKind::Elicitation, InputKind::Roots])
                .is_ok()
        );
        let missing = inputs
            .require(&[InputKind::Sampling, InputKind::Roots])
            .unwrap_err();
        assert_eq!(missing.code(), code::MISSING_REQUIRED_CLIENT_CAPABILITY);
        // No capabilities at all: nothing may be asked.
        let bare = Inputs::from_request(&sealer(), "", "tools/call", None).unwrap();
        assert_eq!(bare.capabilities(), &json!({}));
        assert!(
            bare.input_required()
                .request("r", InputRequest::list_roots())
                .is_err()
        );
        // A capability declared as a non-object is not a declaration.
        assert!(!InputKind::Roots.declared_in(&json!({"roots": true})));
    }

    #[tokio::test]
    async fn missing_capability_renders_400_32021_with_required_capabilities() {
        use http_body_util::BodyExt;
        let server = crate::Server::builder().build().unwrap();
        let request = http::Request::post("/mcp")
            .body(axum::body::Body::empty())
            .unwrap();
        let mut ex = crate::Exchange::new(&server, request);
        ex.message = Some(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call"}));
        ex.kind = Some(crate::MessageKind::Request);
        let response = ex.rejection_response(missing_capabilities(&[
            InputKind::Sampling,
            InputKind::Elicitation,
        ]));
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["id"], 7);
        assert_eq!(body["error"]["code"], -32021);
        assert_eq!(
            body["error"]["data"]["requiredCapabilities"],
            json!({"sampling": {}, "elicitation": {}})
        );
    }

    #[test]
    fn modes_and_options_need_their_sub_capabilities() {
        let url =
            InputRequest::elicitation(json!({"mode": "url", "message": "m", "url": "https://x"}));
        let form = InputRequest::elicit("m", json!({"type": "object", "properties": {}}));
        assert_eq!(
            url.required_capabilities(),
            json!({"elicitation": {"url": {}}})
        );
        assert_eq!(form.required_capabilities(), json!({"elicitation": {}}));
        // An empty declaration means form only.
        assert!(form.allowed_by(&json!({"elicitation": {}})));
        assert!(!url.allowed_by(&json!({"elicitation": {}})));
        assert!(form.allowed_by(&json!({"elicitation": {"form": {}}})));
        assert!(!url.allowed_by(&json!({"elicitation": {"form": {}}})));
        assert!(url.allowed_by(&json!({"elicitation": {"url": {}}})));
        assert!(!form.allowed_by(&json!({"elicitation": {"url": {}}})));
        assert!(form.allowed_by(&json!({"elicitation": {"form": {}, "url": {}}})));

        let plain = InputRequest::sample_text("hi", 5);
        let with_tools =
            InputRequest::sampling(json!({"messages": [], "maxTokens": 5, "tools": []}));
        let choosing = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "toolChoice": {"mode": "auto"}}),
        );
        let context = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "includeContext": "thisServer"}),
        );
        let no_context = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "includeContext": "none"}),
        );
        let sampling = json!({"sampling": {}});
        assert!(plain.allowed_by(&sampling) && no_context.allowed_by(&sampling));
        for needy in [&with_tools, &choosing, &context] {
            assert!(!needy.allowed_by(&sampling), "{needy:?}");
        }
        assert!(with_tools.allowed_by(&json!({"sampling": {"tools": {}}})));
        assert!(context.allowed_by(&json!({"sampling": {"context": {}}})));
        assert_eq!(
            with_tools.required_capabilities(),
            json!({"sampling": {"tools": {}}})
        );
        assert_eq!(
            context.required_capabilities(),
            json!({"sampling": {"context": {}}})
        );
        assert!(InputRequest::list_roots().allowed_by(&json!({"roots": {"listChanged": true}})));

        // Asking anyway is refused, naming exactly what is missing.
        let err = InputRequired::new(json!({"elicitation": {"form": {}}}))
            .request("u", url)
            .unwrap_err();
        assert_eq!(err.required(), &json!({"elicitation": {"url": {}}}));
        assert_eq!(
            err.rejection().code(),
            code::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        let inputs = Inputs::from_request(
            &sealer(),
            "",
            "tools/call",
            Some(&json!({"_meta": {CLIENT_CAPABILITIES: {"sampling": {}}}})),
        )
        .unwrap();
        assert!(inputs.allows(&plain) && !inputs.allows(&with_tools));
    }

    #[test]
    fn an_empty_answer_still_carries_a_state() {
        let s = sealer();
        let b = binding();
        let result = InputRequired::new(json!({})).into_result(&s, &b);
        let state = result["requestState"].as_str().unwrap();
        assert_eq!(s.unseal(&b, state).unwrap(), b"");
        assert!(result.get("inputRequests").is_none());
        let roots = InputRequired::new(json!({"roots": {}}))
            .request("r", InputRequest::list_roots())
            .unwrap()
            .into_result(&s, &b);
        assert!(roots.get("requestState").is_none());
        assert_eq!(
            roots["inputRequests"]["r"],
            json!({"method": "roots/list", "params": {}})
        );
    }
}
