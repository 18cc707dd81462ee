//! A 2025-11-25 call's requests to its client, made in the middle of the
//! call, with no session kept: `elicitation/create`, `sampling/createMessage`
//! and `roots/list`.
//!
//! A handler asks for input once, the same way in both eras
//! ([`Context::input_required`](super::Context::input_required)). A
//! 2026-07-28 client gets the MRTR `input_required` result; for a 2025
//! client the surface sends each request on the call's own SSE stream, as
//! 2025-11-25 allows a server to, waits for the client's answers (each a
//! JSON-RPC response the client POSTs, answered `202`), and runs the
//! handler again with them as the next MRTR round, until it answers or
//! [`LegacyRequests::max_rounds`] is reached. The answer goes on the
//! call's stream.
//!
//! **What the client declared, with no memory.** At `initialize` a 2025
//! client that declares something a server can ask for (`sampling`,
//! `elicitation` and its `form`/`url` modes, `roots`) is given an
//! `Mcp-Session-Id` that is a sealed token, not a session: the declared
//! capabilities (those only, reduced to their names), the negotiated
//! version, sealed with the MRTR key family for the caller's subject, for
//! [`LegacyRequests::session_ttl`]. Nothing is stored; every replica holding
//! the key opens it. When the server announces changes, every 2025 client
//! gets a token at `initialize` (declaring something askable or not), and
//! every token carries a random nonce naming the session's standalone GET
//! streams (see [`listen`](super::listen)); a token without one (minted
//! before streams were) still opens for everything here, and is `404` on
//! the GET. A request carrying it has its capabilities back; a
//! token that does not open (forged, expired, another caller's) is `404`,
//! as 2025-11-25 asks of a session id the server does not know, and the
//! client initializes again. A request with none is served as before, and
//! nothing is asked mid-call: the handler meets its "not declared" path.
//!
//! **Finding the waiting call.** Each request's id is sealed too (same key
//! family, a binding of its own): a random nonce naming the waiting
//! request, the replica holding it, the caller (the
//! [`ledger`](crate::ledger)'s: the principal's subject, else the client's
//! address as the server groups addresses) and the deadline. A response is
//! refused unless its id opens (`400`), is in time (`400`), comes from the
//! same caller (`403`) and finds its request still waiting, here or,
//! through the [`AnswerRelay`], on the replica that holds it (`400` when
//! nobody waits). Waits are bounded by [`LegacyRequests::wait_timeout`];
//! the waiting requests are places of the ledger's
//! [`Kind::Waits`](crate::ledger::Kind::Waits), within
//! [`LegacyRequests::max_waiting_per_caller`] and
//! [`LegacyRequests::max_waiting`] (at the cap, the largest holder's oldest
//! round gives way to a caller under its fair share, and its call ends
//! with the caller-share error).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::context::BoxFuture;
use super::notify::Emitter;
use crate::ledger::{Caller, Kind, Ledger, Refusal, Share};
use crate::mrtr::seal::UnsealError;
use crate::mrtr::{Binding, Sealer};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::ids::{now_ms, random_hex};
use crate::protocol::jsonrpc;
use crate::protocol::revision::Revision;

/// The binding `method` of a session token: no other token opens as one.
pub(crate) const SESSION: &str = "wymcp/legacy-session";
/// The binding `method` of a mid-call request's id.
pub(crate) const ANSWER: &str = "wymcp/legacy-answer";

/// The limits of a 2025 call's mid-call requests, given with
/// [`ServerBuilder::legacy_requests`](crate::ServerBuilder::legacy_requests).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LegacyRequests {
    /// How long a call waits for the client's answers to one round of
    /// requests (default 60 s); past it the call answers -32603 and a late
    /// answer is refused `400`.
    pub wait_timeout: Duration,
    /// How many requests may wait for an answer on this replica at once
    /// (default 1,024); a call that would go over answers -32603 with
    /// `data.limit: "max_waiting"` on its stream, unless a caller over its
    /// fair share gives way (see [`ledger`](crate::ledger)).
    pub max_waiting: usize,
    /// How many of those may be one caller's (default 16; a caller is the
    /// principal's subject, else the client's address), so that one caller
    /// cannot take every waiting place; a call that would go over answers
    /// -32600 with `data.limit: "max_waiting_per_caller"` on its stream.
    pub max_waiting_per_caller: usize,
    /// How many rounds of requests one call may make (default 8); the next
    /// answers -32603 with `data.limit: "max_rounds"`.
    pub max_rounds: u32,
    /// How long the `Mcp-Session-Id` minted at `initialize` opens
    /// (default 24 hours); past it a request carrying it is `404`.
    pub session_ttl: Duration,
}

impl Default for LegacyRequests {
    fn default() -> Self {
        LegacyRequests {
            wait_timeout: Duration::from_secs(60),
            max_waiting: 1024,
            max_waiting_per_caller: 16,
            max_rounds: 8,
            session_ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl LegacyRequests {
    /// Waiting requests' share of the [`ledger`](crate::ledger).
    pub(crate) fn share(&self) -> Share {
        Share {
            per_caller: self.max_waiting_per_caller,
            global: self.max_waiting,
            retry_after: Duration::from_secs(1),
        }
    }

    /// Sets [`wait_timeout`](Self::wait_timeout).
    #[must_use]
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// Sets [`max_waiting`](Self::max_waiting).
    #[must_use]
    pub fn max_waiting(mut self, max: usize) -> Self {
        self.max_waiting = max;
        self
    }

    /// Sets [`max_waiting_per_caller`](Self::max_waiting_per_caller).
    #[must_use]
    pub fn max_waiting_per_caller(mut self, max: usize) -> Self {
        self.max_waiting_per_caller = max;
        self
    }

    /// Sets [`max_rounds`](Self::max_rounds).
    #[must_use]
    pub fn max_rounds(mut self, max: u32) -> Self {
        self.max_rounds = max;
        self
    }

    /// Sets [`session_ttl`](Self::session_ttl).
    #[must_use]
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }
}

/// What carries a client's answer from the replica it reached to the
/// replica whose call waits for it, given with
/// [`ServerBuilder::answer_relay`](crate::ServerBuilder::answer_relay);
/// `wymcp::redis::RedisAnswers` (feature `redis`) is the Redis one.
/// Without one, an answer reaches only calls of its own replica.
pub trait AnswerRelay: Send + Sync + fmt::Debug + 'static {
    /// This replica's name among the others (sealed into every request id
    /// it sends, so an answer can be sent where its call waits).
    fn origin(&self) -> &str;

    /// Sends `message` to the replica named `holder`: `Ok(true)` when it
    /// is there to hear it, `Ok(false)` when no replica of that name
    /// listens, `Err` when the relay cannot say (its backend unreachable).
    fn forward(&self, holder: &str, message: Vec<u8>) -> BoxFuture<Result<bool, String>>;

    /// The longest `message` [`forward`](Self::forward) carries; a longer
    /// answer is refused with `413` (not retryable) before it is forwarded.
    /// Default: no bound of the relay's own.
    fn max_answer_bytes(&self) -> usize {
        usize::MAX
    }

    /// Called once, when the server is built (inside its Tokio runtime):
    /// `feed` hands what other replicas forward here to the waiting calls.
    fn start(&self, feed: AnswerFeed);
}

/// Where an [`AnswerRelay`] hands what other replicas forwarded to this
/// one. It does not keep the server alive.
#[derive(Debug, Clone)]
pub struct AnswerFeed {
    peer: Weak<Peer>,
}

impl AnswerFeed {
    /// Hands a forwarded answer to its waiting call; whether one waited.
    pub fn deliver(&self, message: &[u8]) -> bool {
        let Some(peer) = self.peer.upgrade() else {
            return false;
        };
        let Ok(forwarded) = serde_json::from_slice::<Value>(message) else {
            return false;
        };
        match (
            forwarded.get("n").and_then(Value::as_str),
            forwarded.get("m"),
        ) {
            (Some(nonce), Some(response)) => peer.hand(nonce, response.clone()),
            _ => false,
        }
    }

    /// Whether the server is gone (a relay stops then).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.peer.strong_count() == 0
    }
}

/// Why a message of a 2025 client was refused by this part; the transport
/// gives each its status (the HTTP one in the variant's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `404`: an `Mcp-Session-Id` that does not open.
    Session,
    /// `400`: a response whose id names no request this server sent.
    Unknown,
    /// `400`: a response after its request's wait ended.
    Late,
    /// `403`: a response from another caller than the call's.
    Caller,
    /// `400`: a response whose request no longer waits (answered, or its
    /// call ended).
    NoWaiter,
    /// `503`: the replica holding the call could not be reached.
    Unreachable,
    /// `413`: the answer is longer than the relay carries
    /// ([`AnswerRelay::max_answer_bytes`]); no retry changes that.
    TooLarge {
        /// The relay's bound, in bytes.
        max: usize,
    },
}

impl Refused {
    /// The JSON-RPC error of the refusal (its id is `null`: a response is
    /// no request, whose id a rejection would echo).
    pub(crate) fn rpc_error(self) -> RpcError {
        let (code, message, reason) = match self {
            Refused::Session => (
                ErrorCode::INVALID_REQUEST,
                "the Mcp-Session-Id is not one this server issued, or it has expired: initialize again",
                "session",
            ),
            Refused::Unknown => (
                ErrorCode::INVALID_REQUEST,
                "the response answers no request this server sent",
                "unknown_id",
            ),
            Refused::Late => (
                ErrorCode::INVALID_REQUEST,
                "the response came after its request stopped waiting",
                "late",
            ),
            Refused::Caller => (
                ErrorCode::INVALID_REQUEST,
                "the response comes from another caller than the one the request was sent to",
                "caller",
            ),
            Refused::NoWaiter => (
                ErrorCode::INVALID_REQUEST,
                "no call waits for this response (it was answered already, or its call ended)",
                "no_waiter",
            ),
            Refused::Unreachable => (
                ErrorCode::INTERNAL_ERROR,
                "the replica holding the call could not be reached; try again",
                "unreachable",
            ),
            Refused::TooLarge { max } => {
                return RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "the response is larger than the replicas relay to the one whose call waits for it",
                )
                .data(json!({"reason": "too_large", "limit": "max_answer_bytes", "max": max}));
            }
        };
        RpcError::new(code, message).data(json!({"reason": reason}))
    }
}

/// A response on its way to its waiting call: `Ok` once handed over.
pub(crate) struct Delivery(pub(crate) BoxFuture<Result<(), Refused>>);

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Delivery")
    }
}

/// A request waiting for its answer.
#[derive(Debug)]
struct Slot {
    key: String,
    tx: mpsc::Sender<(String, Value)>,
}

/// The mid-call requests of this replica: the sealer of their tokens, the
/// requests waiting, and the relay to the other replicas.
pub(crate) struct Peer {
    limits: LegacyRequests,
    sealer: Arc<Sealer>,
    origin: String,
    waiting: Mutex<HashMap<String, Slot>>,
    relay: Option<Arc<dyn AnswerRelay>>,
    /// Where a round's requests take their places while they wait.
    ledger: Ledger,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("limits", &self.limits)
            .field("origin", &self.origin)
            .field("relay", &self.relay.is_some())
            .finish_non_exhaustive()
    }
}

/// What of a client's `initialize` capabilities a server may ask by: the
/// kinds and modes, names only (`{"elicitation": {"form": {}}}`), so the
/// token stays small whatever the client sent. `None` when the client
/// declared nothing a server can ask for.
pub(crate) fn askable(capabilities: Option<&Value>) -> Option<Value> {
    let capabilities = capabilities?;
    let mut kept = Map::new();
    for (kind, modes) in [
        ("sampling", &["tools", "context"][..]),
        ("elicitation", &["form", "url"][..]),
        ("roots", &[][..]),
    ] {
        let Some(declared) = capabilities.get(kind).and_then(Value::as_object) else {
            continue;
        };
        let mut names = Map::new();
        for mode in modes {
            if declared.get(*mode).is_some_and(Value::is_object) {
                names.insert((*mode).to_owned(), json!({}));
            }
        }
        kept.insert(kind.to_owned(), Value::Object(names));
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

impl Peer {
    /// The mid-call requests of a server sealing with `sealer`.
    pub(crate) fn new(
        limits: LegacyRequests,
        sealer: Arc<Sealer>,
        relay: Option<Arc<dyn AnswerRelay>>,
        ledger: Ledger,
    ) -> Arc<Self> {
        let origin = relay.as_ref().map_or_else(
            || random_hex().unwrap_or_else(|| std::process::id().to_string()),
            |r| r.origin().to_owned(),
        );
        let peer = Arc::new(Peer {
            limits,
            sealer,
            origin,
            waiting: Mutex::new(HashMap::new()),
            relay,
            ledger,
        });
        if let Some(relay) = &peer.relay {
            relay.start(AnswerFeed {
                peer: Arc::downgrade(&peer),
            });
        }
        peer
    }

    /// The limits.
    pub(crate) fn limits(&self) -> &LegacyRequests {
        &self.limits
    }

    /// The `Mcp-Session-Id` for a client of `subject` that negotiated
    /// `revision` and declared `askable` capabilities (`{}`: none), with a
    /// random nonce naming the session's GET streams (see
    /// [`listen`](super::listen)); a token minted when the OS gives no
    /// random bytes names none.
    pub(crate) fn mint_session(
        &self,
        subject: &str,
        revision: Revision,
        askable: &Value,
    ) -> String {
        let mut state = json!({"c": askable, "v": revision.as_str()});
        if let Some(nonce) = random_hex() {
            state["n"] = Value::String(nonce);
        }
        let bytes = serde_json::to_vec(&state).unwrap_or_default();
        self.sealer.seal_for(
            &Binding::new(subject, SESSION, None),
            &bytes,
            self.limits.session_ttl,
        )
    }

    /// The capabilities a session token of `subject` carries, or the
    /// refusal of one that does not open.
    pub(crate) fn open_session(&self, subject: &str, token: &str) -> Result<Value, Refused> {
        let state = self.open_state(subject, token)?;
        match state.get("c") {
            Some(capabilities @ Value::Object(_)) => Ok(capabilities.clone()),
            _ => Err(Refused::Session),
        }
    }

    /// The nonce naming the GET streams of a session token of `subject`,
    /// or the refusal of one that does not open; a token that opens but
    /// names no stream (minted before streams were, or without random
    /// bytes) is refused too, so that its client initializes again.
    pub(crate) fn open_stream(&self, subject: &str, token: &str) -> Result<String, Refused> {
        let state = self.open_state(subject, token)?;
        match (state.get("c"), state.get("n")) {
            (Some(Value::Object(_)), Some(Value::String(nonce))) => Ok(nonce.clone()),
            _ => Err(Refused::Session),
        }
    }

    fn open_state(&self, subject: &str, token: &str) -> Result<Value, Refused> {
        let bytes = self
            .sealer
            .unseal(&Binding::new(subject, SESSION, None), token)
            .map_err(|error| {
                tracing::debug!(target: "wymcp::legacy", %error, "Mcp-Session-Id refused");
                Refused::Session
            })?;
        serde_json::from_slice(&bytes).map_err(|_| Refused::Session)
    }

    /// The id of the request `nonce` names, sent to `caller`, answerable
    /// until `deadline` (ms since the epoch); the token opens for `ttl`.
    pub(crate) fn seal_id(
        &self,
        nonce: &str,
        caller: &Caller,
        deadline: u64,
        ttl: Duration,
    ) -> String {
        let sealed = json!({"n": nonce, "o": self.origin, "s": caller.as_str(), "d": deadline});
        self.sealer.seal_for(
            &Binding::new("", ANSWER, None),
            &serde_json::to_vec(&sealed).unwrap_or_default(),
            ttl,
        )
    }

    /// The replica name sealed into this replica's request ids.
    #[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// Hands `response` to the request `nonce` names, when it still waits
    /// here; whether it did.
    fn hand(&self, nonce: &str, response: Value) -> bool {
        let slot = self
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(nonce);
        match slot {
            Some(slot) => slot.tx.try_send((slot.key, response)).is_ok(),
            None => false,
        }
    }

    /// A 2025 client's `response` to a request of this server, from
    /// `caller`: handed to the waiting call (here, or through the relay),
    /// or refused (`403` when the request was sent to another caller).
    pub(crate) fn deliver(&self, response: Value, caller: &Caller) -> Delivery {
        Delivery(self.forward(response, caller))
    }

    fn forward(&self, response: Value, caller: &Caller) -> BoxFuture<Result<(), Refused>> {
        let opened = self.open_answer(&response, caller);
        let (nonce, holder) = match opened {
            Ok(found) => found,
            Err(refused) => return Box::pin(std::future::ready(Err(refused))),
        };
        if holder == self.origin {
            let handed = self.hand(&nonce, response);
            return Box::pin(std::future::ready(if handed {
                Ok(())
            } else {
                Err(Refused::NoWaiter)
            }));
        }
        let Some(relay) = self.relay.clone() else {
            // Another replica's request, and no relay to reach it.
            return Box::pin(std::future::ready(Err(Refused::NoWaiter)));
        };
        let message = serde_json::to_vec(&json!({"n": nonce, "m": response})).unwrap_or_default();
        let max = relay.max_answer_bytes();
        if message.len() > max {
            return Box::pin(std::future::ready(Err(Refused::TooLarge { max })));
        }
        Box::pin(async move {
            match relay.forward(&holder, message).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Refused::NoWaiter),
                Err(error) => {
                    tracing::warn!(target: "wymcp::legacy", error = %crate::protocol::text::Bounded(&error), "an answer could not be relayed");
                    Err(Refused::Unreachable)
                }
            }
        })
    }

    /// The nonce and holding replica a response's id names, once it is
    /// known to be this server's, in time, and the caller's (the ledger's
    /// caller: the principal, else the client's address grouped).
    pub(crate) fn open_answer(
        &self,
        response: &Value,
        caller: &Caller,
    ) -> Result<(String, String), Refused> {
        let id = response
            .get("id")
            .and_then(Value::as_str)
            .ok_or(Refused::Unknown)?;
        let bytes = self
            .sealer
            .unseal(&Binding::new("", ANSWER, None), id)
            .map_err(|error| match error {
                UnsealError::Expired => Refused::Late,
                _ => Refused::Unknown,
            })?;
        let sealed: Value = serde_json::from_slice(&bytes).map_err(|_| Refused::Unknown)?;
        let text = |key: &str| sealed.get(key).and_then(Value::as_str);
        let (Some(nonce), Some(holder), Some(owner), Some(deadline)) = (
            text("n"),
            text("o"),
            text("s"),
            sealed.get("d").and_then(Value::as_u64),
        ) else {
            return Err(Refused::Unknown);
        };
        if now_ms() > deadline {
            return Err(Refused::Late);
        }
        if owner != caller.as_str() {
            return Err(Refused::Caller);
        }
        Ok((nonce.to_owned(), holder.to_owned()))
    }
}

/// A 2025 call that may ask its client mid-call: the client's declared
/// capabilities, the caller, the call's stream.
#[derive(Debug, Clone)]
pub(crate) struct MidCall {
    pub(crate) peer: Arc<Peer>,
    pub(crate) capabilities: Value,
    /// Who the caller is: its requests' places in the ledger are counted
    /// against it, and only it may answer them.
    pub(crate) caller: Caller,
    pub(crate) emitter: Emitter,
}

/// Takes a round's requests out of the waiting set, however the round ends
/// (answered, timed out, or the call dropped by a client gone away).
struct Waiting<'a> {
    peer: &'a Peer,
    nonces: Vec<String>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = self
            .peer
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for nonce in &self.nonces {
            waiting.remove(nonce);
        }
    }
}

/// The -32603 of a round that cannot go on.
pub(crate) fn failed(message: String, data: Value) -> RpcError {
    RpcError::new(ErrorCode::INTERNAL_ERROR, message).data(data)
}

impl MidCall {
    /// Sends a round's `requests` (key → `{method, params}`, as MRTR's
    /// `inputRequests`) on the call's stream and waits for every answer:
    /// the results by key, as MRTR's `inputResponses`. A client that
    /// answers with an error, or not in time, ends the call with -32603.
    pub(crate) async fn ask(
        &self,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, RpcError> {
        let limits = self.peer.limits();
        let count = requests.len();
        let (tx, mut rx) = mpsc::channel(count.max(1));
        let deadline = now_ms()
            .saturating_add(u64::try_from(limits.wait_timeout.as_millis()).unwrap_or(u64::MAX));
        let ttl = limits.wait_timeout + Duration::from_secs(1);
        let mut round = Waiting {
            peer: &self.peer,
            nonces: Vec::with_capacity(count),
        };
        let mut messages = Vec::with_capacity(count);
        // The round's places, one per request, taken before any is sent; at
        // the cap, the largest holder's oldest round gives way to a caller
        // under its fair share.
        let place = self
            .peer
            .ledger
            .take_evictable(Kind::Waits, &self.caller, count)
            .map_err(|refusal| self.peer.ledger.error(refusal))?;
        {
            let mut waiting = self
                .peer
                .waiting
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (key, request) in requests {
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                let Some(nonce) = random_hex() else {
                    return Err(failed(
                        "the server could not draw a request id".into(),
                        Value::Null,
                    ));
                };
                let id = self.peer.seal_id(&nonce, &self.caller, deadline, ttl);
                messages.push(jsonrpc::request(&id, method, &params));
                waiting.insert(
                    nonce.clone(),
                    Slot {
                        key,
                        tx: tx.clone(),
                    },
                );
                round.nonces.push(nonce);
            }
        }
        drop(tx);
        for message in messages {
            if !self.emitter.send_message(message) {
                return Err(failed("the call's stream is closed".into(), Value::Null));
            }
        }
        let mut answers = Map::new();
        let collect = async {
            while answers.len() < count {
                let Some((key, response)) = rx.recv().await else {
                    break;
                };
                if let Some(result) = response.get("result") {
                    answers.insert(key, result.clone());
                } else {
                    let error = response.get("error");
                    let code = error
                        .and_then(|e| e.get("code"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let text = error
                        .and_then(|e| e.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    return Err(failed(
                        format!(
                            "the client answered the request `{}` with an error: {}",
                            crate::protocol::text::truncated(&key),
                            crate::protocol::text::truncated(text)
                        ),
                        json!({"clientError": {"code": code}}),
                    ));
                }
            }
            Ok(())
        };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(limits.wait_timeout, collect) => outcome,
            () = place.evicted() => {
                tracing::debug!(target: "wymcp::legacy", "a round of mid-call requests gave way to a caller under its fair share");
                return Err(self.peer.ledger.error(Refusal::Share(Kind::Waits)));
            }
        };
        drop(place);
        match outcome {
            Ok(Ok(())) if answers.len() == count => Ok(answers),
            Ok(Err(error)) => Err(error),
            _ => Err(failed(
                format!(
                    "the client did not answer the server's request within {} ms",
                    limits.wait_timeout.as_millis()
                ),
                json!({"timeoutMs": u64::try_from(limits.wait_timeout.as_millis()).unwrap_or(u64::MAX)}),
            )),
        }
    }
}
