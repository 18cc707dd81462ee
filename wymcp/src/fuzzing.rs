//! Internals the fuzz targets (and the project's own tests of the same
//! functions) reach, behind the non-default `fuzzing` feature. Not a public
//! API: it may change in any release.

pub use crate::mrtr::{Binding, Sealer, UnsealError, params_digest};
pub use crate::protocol::headers::{
    Base64Error, HeaderParam, HeaderParamType, HeaderValueError, MCP_METHOD, MCP_NAME,
    MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION, base64_decode, base64_encode, decoded_text,
    encode_value, plain_text, trim_ows,
};
pub use crate::protocol::jsonrpc::{classify, is_request_id};
pub use crate::protocol::meta;
pub use crate::protocol::revision::era_of;

/// The `x-mcp-header` rows `HeaderBinding` checks for the tool `tool`.
#[must_use]
pub fn header_params<'s>(server: &'s crate::Server, tool: &str) -> &'s [HeaderParam] {
    server.header_params(tool)
}

/// The sealer of a server's MRTR `requestState`.
#[must_use]
pub fn sealer(server: &crate::Server) -> &Sealer {
    server.sealer()
}

/// Sets an exchange's facts as the stages before the one under test would
/// leave them, whatever its request says: for the project's tests and
/// benchmarks of one stage in isolation. A chain's stages establish them
/// by their rules (see [`Exchange`](crate::Exchange)).
pub fn set_facts(
    ex: &mut crate::Exchange<'_>,
    bytes: bytes::Bytes,
    message: Option<serde_json::Value>,
    kind: Option<crate::MessageKind>,
    era: crate::Era,
    revision: Option<crate::Revision>,
) {
    ex.set_facts(bytes, message, kind, era, revision);
}

/// What the stdio transport's line reader says next (see
/// [`StdioLines`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioLine {
    /// A line's bytes, without its ending.
    Message(Vec<u8>),
    /// A line over the ceiling, reported once; its rest is skipped.
    TooLong,
    /// The input ended.
    End,
}

/// The stdio transport's line reader, the one its connections read with:
/// newline-delimited messages, none longer than a ceiling.
#[derive(Debug)]
pub struct StdioLines<R>(crate::stdio::lines::Lines<R>);

impl<R: tokio::io::AsyncRead + Unpin> StdioLines<R> {
    /// Lines of at most `ceiling` bytes (their ending not counted) from
    /// `reader`.
    pub fn new(reader: R, ceiling: usize) -> Self {
        StdioLines(crate::stdio::lines::Lines::new(reader, ceiling))
    }

    /// The next line.
    ///
    /// # Errors
    ///
    /// The reader's error.
    pub async fn next(&mut self) -> std::io::Result<StdioLine> {
        use crate::stdio::lines::Line;
        Ok(match self.0.next().await? {
            Line::Message(bytes) => StdioLine::Message(bytes.to_vec()),
            Line::TooLong => StdioLine::TooLong,
            Line::End => StdioLine::End,
        })
    }

    /// How many bytes the reader holds now.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.0.buffered()
    }
}

/// One key a JWK Set yields (see [`jwk_set`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldKey {
    /// Its `kid`.
    pub kid: Option<String>,
    /// `RSA`, `P-256`, `P-384` or `Ed25519`.
    pub kind: &'static str,
    /// The `alg` its JWK names.
    pub alg: Option<String>,
}

/// What a JWT verifier finds in a key set for a token (see [`jwk_set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySelection {
    /// The key the token names, or the one key of its algorithm.
    Found,
    /// No key the token may use.
    NotFound,
    /// The token names no key and several fit.
    Ambiguous,
}

/// A JWK Set as a JWT verifier holds it (see [`jwk_set`]).
#[derive(Debug)]
pub struct JwkSet(crate::auth::jwks::KeySet);

impl JwkSet {
    /// The keys kept, in the order of the document.
    #[must_use]
    pub fn held(&self) -> Vec<HeldKey> {
        self.0
            .held()
            .into_iter()
            .map(|(kid, kind, alg)| HeldKey { kid, kind, alg })
            .collect()
    }

    /// What a token naming `kid` (or none), signed with `alg`, finds.
    #[must_use]
    pub fn select(&self, kid: Option<&str>, alg: crate::auth::Algorithm) -> KeySelection {
        use crate::auth::jwks::Selection;
        match self.0.select(kid, alg) {
            Selection::Found(_) => KeySelection::Found,
            Selection::NotFound => KeySelection::NotFound,
            Selection::Ambiguous => KeySelection::Ambiguous,
        }
    }
}

/// A JWK Set document read as a JWT verifier reads what the authorization
/// server publishes: `None` when it is not a JWK Set.
#[must_use]
pub fn jwk_set(document: &serde_json::Value) -> Option<JwkSet> {
    crate::auth::jwks::KeySet::parse(document, std::time::Instant::now()).map(JwkSet)
}

/// Every signing algorithm a verifier may be told to accept.
pub const ALGORITHMS: [crate::auth::Algorithm; 9] = crate::auth::algorithm::Algorithm::ALL;

/// What an RFC 7662 introspection answer makes of a token, under the rules
/// of an [`Introspection`](crate::auth::Introspection) built with
/// `Introspection::builder(endpoint, audience).issuer(issuer)` and client
/// credentials: the principal and how long it may be reused, or the
/// refusal.
///
/// # Errors
///
/// The refusal the authenticator would answer.
pub fn introspection_answer(
    introspection: &crate::auth::Introspection,
    answer: &serde_json::Value,
) -> Result<(crate::auth::Principal, std::time::Duration), crate::auth::AuthError> {
    introspection.judge_answer(answer)
}

/// Verifies `token` as `verifier` does, against the JWK Set `keys` (read
/// as [`jwk_set`] reads one) instead of the set it would fetch: the header
/// rules, the key selection, the signature, then the claims.
///
/// # Errors
///
/// The refusal the verifier would answer; [`AuthError::Unauthorized`](crate::auth::AuthError::Unauthorized)
/// when `keys` is not a JWK Set.
pub fn jwt_verify(
    verifier: &crate::auth::JwtVerifier,
    keys: &serde_json::Value,
    token: &str,
) -> Result<crate::auth::Principal, crate::auth::AuthError> {
    let set = crate::auth::jwks::KeySet::parse(keys, std::time::Instant::now())
        .ok_or(crate::auth::AuthError::Unauthorized)?;
    verifier.verify_against(token, &set)
}

/// The 2025 mid-call side of a server (see
/// [`LegacyRequests`](crate::LegacyRequests)), as its surface holds it,
/// without a relay: it mints and opens the `Mcp-Session-Id` session token
/// a 2025 client is given at `initialize`, and seals and opens the ids of
/// the requests a 2025 call sends its client.
#[derive(Debug)]
pub struct LegacyPeer(std::sync::Arc<crate::surface::mid_call::Peer>);

/// Why [`LegacyPeer`] refused a session token or a response's id: the
/// `data.reason` its JSON-RPC error carries (`session`, `unknown_id`,
/// `late`, `caller`, `no_waiter`, `unreachable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyRefusal(pub String);

impl LegacyRefusal {
    fn of(refused: crate::surface::mid_call::Refused) -> Self {
        let error = refused.rpc_error();
        let reason = error
            .data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        LegacyRefusal(reason)
    }
}

impl LegacyPeer {
    /// The mid-call side of a server sealing with `sealer` under `limits`.
    #[must_use]
    pub fn new(sealer: Sealer, limits: crate::LegacyRequests) -> Self {
        LegacyPeer(crate::surface::mid_call::Peer::new(
            limits,
            std::sync::Arc::new(sealer),
            None,
            crate::ledger::Ledger::default(),
        ))
    }

    /// What of a client's `initialize` capabilities a session token
    /// carries (`None`: the client declared nothing a server can ask, and
    /// is given no token).
    #[must_use]
    pub fn askable(capabilities: Option<&serde_json::Value>) -> Option<serde_json::Value> {
        crate::surface::mid_call::askable(capabilities)
    }

    /// The `Mcp-Session-Id` `initialize` gives a client of `subject` (`""`
    /// without auth) that negotiated `revision` and declared `askable`.
    #[must_use]
    pub fn mint_session(
        &self,
        subject: &str,
        revision: crate::Revision,
        askable: &serde_json::Value,
    ) -> String {
        self.0.mint_session(subject, revision, askable)
    }

    /// A session token of `subject` sealing any `state` with `sealer`, as
    /// only a holder of the key could make one: what
    /// [`open_session`](Self::open_session) makes of content the server
    /// would never seal.
    #[must_use]
    pub fn seal_session_state(sealer: &Sealer, subject: &str, state: &[u8]) -> String {
        sealer.seal_for(
            &Binding::new(subject, crate::surface::mid_call::SESSION, None),
            state,
            std::time::Duration::from_secs(60),
        )
    }

    /// The capabilities a session token carries for a request of
    /// `subject`, or the refusal (`404` on the wire).
    ///
    /// # Errors
    ///
    /// The refusal of a token that does not open.
    pub fn open_session(
        &self,
        subject: &str,
        token: &str,
    ) -> Result<serde_json::Value, LegacyRefusal> {
        self.0
            .open_session(subject, token)
            .map_err(LegacyRefusal::of)
    }

    /// The id of the request `nonce` names, sent to `caller`, answerable
    /// until `deadline` (ms since the Unix epoch), as a 2025 call seals it.
    #[must_use]
    pub fn seal_id(
        &self,
        nonce: &str,
        caller: &crate::ledger::Caller,
        deadline: u64,
        ttl: std::time::Duration,
    ) -> String {
        self.0.seal_id(nonce, caller, deadline, ttl)
    }

    /// The replica name this peer seals into its ids.
    #[must_use]
    pub fn origin(&self) -> &str {
        self.0.origin()
    }

    /// The nonce and holding replica the id of a client's `response` names,
    /// once it is known to be this server's, in time and `caller`'s.
    ///
    /// # Errors
    ///
    /// The refusal: `unknown_id` and `late` are `400`, `caller` `403`.
    pub fn open_answer(
        &self,
        response: &serde_json::Value,
        caller: &crate::ledger::Caller,
    ) -> Result<(String, String), LegacyRefusal> {
        self.0
            .open_answer(response, caller)
            .map_err(LegacyRefusal::of)
    }
}

/// Milliseconds since the Unix epoch, as the server reads its clock for
/// the deadline sealed into a request id.
#[must_use]
pub fn now_ms() -> u64 {
    crate::protocol::ids::now_ms()
}
/// The Redis backends' receive paths, as they read what Redis holds: the
/// bound and the tag first ([`receive`](redis::receive)), then the parse.
#[cfg(feature = "redis")]
pub mod redis {
    pub use crate::redis::bus::Heard;
    pub use crate::redis::mac::{Dropped, Keys, Purpose, TAG_LEN, receive};

    /// A change as [`RedisBus`](crate::redis::RedisBus) publishes it on
    /// the channel: its JSON behind its tag (`None` without a key, or for
    /// a change the bus does not carry).
    #[must_use]
    pub fn bus_encode(keys: &Keys, origin: &str, change: &crate::Change) -> Option<Vec<u8>> {
        let json = crate::redis::bus::encode(origin, change)?;
        keys.sign(Purpose::Bus, b"", &json)
    }

    /// A message read from the bus's channel by the replica of origin
    /// `mine`, as its subscriber reads it.
    pub fn bus_hear(keys: &Keys, mine: &str, max: usize, message: &[u8]) -> Result<Heard, Dropped> {
        crate::redis::bus::hear(keys, mine, max, message)
    }

    /// A task's data as [`RedisTaskStore`](crate::redis::RedisTaskStore)
    /// writes it.
    #[must_use]
    pub fn task_seal(keys: &Keys, id: &str, version: u64, data: &[u8]) -> Option<Vec<u8>> {
        crate::redis::store::seal_record(keys, id, version, data)
    }

    /// A task's data as the store reads it back.
    pub fn task_open<'r>(
        keys: &Keys,
        id: &str,
        version: u64,
        max: usize,
        record: &'r [u8],
    ) -> Result<&'r [u8], Dropped> {
        crate::redis::store::open_record(keys, id, version, max, record)
    }
}
