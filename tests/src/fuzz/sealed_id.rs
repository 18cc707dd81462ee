//! The ids of the requests a 2025 call sends its client mid-call: sealed,
//! naming the waiting request, its replica, the caller and the deadline;
//! opened when the client's response comes back.

use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use wymcp::LegacyRequests;
use wymcp::fuzzing::{Binding, LegacyPeer, LegacyRefusal, Sealer, now_ms};
use wymcp::ledger::{Caller, Grouping};
use wymcp::mrtr::SealingKey;

use super::ensure;

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const TTL: Duration = Duration::from_secs(61);

fn key(id: &str, byte: u8) -> SealingKey {
    SealingKey::new(id, vec![byte; 32]).expect("a valid key")
}

fn sealer() -> Sealer {
    Sealer::new(key("fuzz", 0x42))
}

fn peer() -> &'static LegacyPeer {
    static PEER: OnceLock<LegacyPeer> = OnceLock::new();
    PEER.get_or_init(|| LegacyPeer::new(sealer(), LegacyRequests::default()))
}

/// Another replica with the same key (its own origin).
fn replica() -> &'static LegacyPeer {
    static PEER: OnceLock<LegacyPeer> = OnceLock::new();
    PEER.get_or_init(|| LegacyPeer::new(sealer(), LegacyRequests::default()))
}

/// The same key id with another secret.
fn impostor() -> &'static LegacyPeer {
    static PEER: OnceLock<LegacyPeer> = OnceLock::new();
    PEER.get_or_init(|| LegacyPeer::new(Sealer::new(key("fuzz", 0x43)), LegacyRequests::default()))
}

/// A server that holds another key only.
fn stranger() -> &'static LegacyPeer {
    static PEER: OnceLock<LegacyPeer> = OnceLock::new();
    PEER.get_or_init(|| LegacyPeer::new(Sealer::new(key("other", 0x42)), LegacyRequests::default()))
}

fn reason(result: &Result<(String, String), LegacyRefusal>) -> &str {
    match result {
        Ok(_) => "opened",
        Err(LegacyRefusal(reason)) => reason,
    }
}

fn response(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept"}})
}

/// A caller from `bytes`, by the kind `tag` picks: a principal named by
/// the bytes, a client address (IPv4 or IPv6, grouped by default or with
/// the prefixes in the bytes), or the unknown caller.
fn caller(tag: u8, bytes: &[u8]) -> Caller {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    match tag % 5 {
        0 | 1 => Caller::principal(&String::from_utf8_lossy(bytes)),
        2 => Caller::address(
            IpAddr::from([at(0), at(1), at(2), at(3)]),
            Grouping::default(),
        ),
        3 => {
            let mut octets = [0u8; 16];
            for (i, o) in octets.iter_mut().enumerate() {
                *o = at(i);
            }
            let grouping = Grouping {
                ipv4_prefix: at(16),
                ipv6_prefix: at(17),
            };
            Caller::address(IpAddr::from(octets), grouping)
        }
        _ => Caller::unknown(),
    }
}

/// Checks that
///
/// * the input as a response's id (a string), and the input as a whole
///   response, never open: refused as `unknown_id` (`400`), or `late`
///   (`400`) for an id sealed under the key whose time is past (the
///   corpus holds one), never `caller`;
/// * an id sealed for a caller drawn from the input (a principal, an
///   address grouped by prefix, the unknown caller) opens for that caller
///   to its nonce and this replica, and for another caller drawn from the
///   input exactly when the two are the same caller (else `caller`,
///   `403`); never for a fixed set of other callers;
/// * another replica with the key opens it and finds it held here;
/// * past its deadline it is `late`; under another secret with the same
///   key id, or without the key, `unknown_id`; a number id is
///   `unknown_id`; it never opens as a session token nor a `requestState`;
/// * an id with one bit flipped in any of its parts, or changed in one
///   character, cut short or lengthened never opens.
pub fn check_sealed_id(data: &[u8]) -> Result<(), String> {
    let ours = peer();
    let text = String::from_utf8_lossy(data);
    let anyone = Caller::unknown();
    let forged = ours.open_answer(&response(&Value::String(text.to_string())), &anyone);
    // `late` only for an id that verifies (the corpus's expired one).
    ensure!(
        matches!(reason(&forged), "unknown_id" | "late"),
        "the id {text:?} was not sealed by this server, yet it was not refused as unknown_id: {forged:?}"
    );
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let opened = ours.open_answer(&value, &anyone);
        ensure!(
            matches!(reason(&opened), "unknown_id" | "late"),
            "the response {value} was not sealed by this server, yet it was not refused as unknown_id: {opened:?}"
        );
    }

    let (tag, rest) = data.split_first().map_or((0, &[][..]), |(t, r)| (*t, r));
    let half = rest.len() / 2;
    let (first, second) = rest.split_at(half);
    let sender = caller(tag, first);
    let answerer = caller((tag >> 3) ^ tag, second);
    let nonce: String = first.iter().take(16).fold(String::new(), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    });
    let deadline = now_ms() + 60_000;
    let id = ours.seal_id(&nonce, &sender, deadline, TTL);
    ensure!(
        id.bytes().all(|b| URL_SAFE.contains(&b)),
        "the id {id:?} is not base64url"
    );
    let sent = response(&Value::String(id.clone()));
    let here = (nonce.clone(), ours.origin().to_owned());
    ensure!(
        ours.open_answer(&sent, &sender) == Ok(here.clone()),
        "the id sealed for {sender} did not open for it: {:?}",
        ours.open_answer(&sent, &sender)
    );
    let by_answerer = ours.open_answer(&sent, &answerer);
    if answerer.as_str() == sender.as_str() {
        ensure!(
            by_answerer == Ok(here.clone()),
            "the id sealed for {sender} did not open for the same caller: {by_answerer:?}"
        );
    } else {
        ensure!(
            reason(&by_answerer) == "caller",
            "the id sealed for {sender} was not refused as `caller` for {answerer}: {by_answerer:?}"
        );
    }
    for other in [
        Caller::principal("mallory"),
        Caller::principal(""),
        Caller::unknown(),
        Caller::address(IpAddr::from([127, 0, 0, 1]), Grouping::default()),
        Caller::address(
            "2001:db8::1".parse().expect("an address"),
            Grouping::default(),
        ),
    ] {
        if other.as_str() != sender.as_str() {
            let opened = ours.open_answer(&sent, &other);
            ensure!(
                reason(&opened) == "caller",
                "the id sealed for {sender} was not refused as `caller` for {other}: {opened:?}"
            );
        }
    }
    ensure!(
        replica().open_answer(&sent, &sender) == Ok(here),
        "another replica with the key did not find the id held here"
    );

    let late = response(&Value::String(ours.seal_id(
        &nonce,
        &sender,
        now_ms() - 1,
        TTL,
    )));
    ensure!(
        reason(&ours.open_answer(&late, &sender)) == "late",
        "an id past its deadline was not refused as `late`: {:?}",
        ours.open_answer(&late, &sender)
    );
    for (who, server) in [("another secret", impostor()), ("no key", stranger())] {
        let opened = server.open_answer(&sent, &sender);
        ensure!(
            reason(&opened) == "unknown_id",
            "an id opened, or was not refused as unknown_id, with {who}: {opened:?}"
        );
    }
    let numbered = ours.open_answer(&response(&json!(7)), &sender);
    ensure!(
        reason(&numbered) == "unknown_id",
        "a number id was not refused as unknown_id: {numbered:?}"
    );
    ensure!(
        ours.open_session("", &id).is_err(),
        "a request id opened as a session token"
    );
    ensure!(
        sealer()
            .unseal(&Binding::new("", "tools/call", None), &id)
            .is_err(),
        "a request id unsealed as a requestState"
    );

    let flips = super::session_token::flipped(&id);
    ensure!(
        flips.len() == 7,
        "the id {id:?} did not decode for flipping"
    );
    for bad in flips {
        let opened = ours.open_answer(&response(&Value::String(bad.clone())), &sender);
        ensure!(
            reason(&opened) == "unknown_id",
            "the id {bad:?}, {id:?} with one bit flipped, was not refused as unknown_id: {opened:?}"
        );
    }
    if let [_, op, at_high, at_low, with, ..] = *data {
        let mut altered = id.clone().into_bytes();
        let at = (usize::from(at_high) << 8 | usize::from(at_low)) % altered.len();
        let replacement = URL_SAFE[usize::from(with) % URL_SAFE.len()];
        match op % 4 {
            0 => altered[at] = replacement,
            1 => altered[at] = with,
            2 => {
                altered.remove(at);
            }
            _ => altered.insert(at, replacement),
        }
        let mutated = String::from_utf8_lossy(&altered);
        if mutated != id {
            let opened = ours.open_answer(&response(&Value::String(mutated.to_string())), &sender);
            ensure!(
                reason(&opened) == "unknown_id",
                "the altered id {mutated:?} (of {id:?}) was not refused as unknown_id: {opened:?}"
            );
        }
    }
    Ok(())
}

/// How this server refuses the input as a response's id, or the input as
/// a whole response when it is JSON (the corpus test pins the seeds').
#[must_use]
pub fn refusal(data: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(data)
        .ok()
        .filter(|v| v.get("id").is_some())
        .unwrap_or_else(|| response(&Value::String(String::from_utf8_lossy(data).into_owned())));
    reason(&peer().open_answer(&message, &Caller::unknown())).to_owned()
}
