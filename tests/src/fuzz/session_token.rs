//! The `Mcp-Session-Id` a 2025 client is given at `initialize`: a sealed
//! token of what it declared, opened on each of its later requests.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use wymcp::fuzzing::{Binding, LegacyPeer, LegacyRefusal, Sealer, base64_decode, base64_encode};
use wymcp::ledger::Caller;
use wymcp::mrtr::SealingKey;
use wymcp::{LegacyRequests, Revision};

use super::ensure;

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The longest token `initialize` may give: the version byte, the key id's
/// length and id (`fuzz`), the expiry, the largest declaration (every kind
/// and mode, names only, with the version) and the tag, in base64url. What
/// a client declares beyond the names never makes it longer.
pub const MAX_TOKEN_LEN: usize = 256;

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

fn refused_as_session(result: &Result<Value, LegacyRefusal>) -> bool {
    matches!(result, Err(LegacyRefusal(reason)) if reason == "session")
}

/// The client capabilities the input stands for: the input as JSON, else
/// byte 0's bits as the kinds and modes declared.
fn capabilities(data: &[u8]) -> Value {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        return value;
    }
    let bits = data.first().copied().unwrap_or(0);
    let mut caps = Map::new();
    let mut kind = |bit: u8, name: &str, modes: &[(u8, &str)]| {
        if bits & bit != 0 {
            let mut declared = Map::new();
            for (mode_bit, mode) in modes {
                if bits & mode_bit != 0 {
                    declared.insert((*mode).to_owned(), json!({"extra": data}));
                }
            }
            caps.insert(name.to_owned(), Value::Object(declared));
        }
    };
    kind(0x01, "sampling", &[(0x02, "tools"), (0x04, "context")]);
    kind(0x08, "elicitation", &[(0x10, "form"), (0x20, "url")]);
    kind(0x40, "roots", &[(0x40, "listChanged")]);
    Value::Object(caps)
}

/// What a token may carry of `capabilities`, decided independently: each
/// of `sampling`, `elicitation`, `roots` declared as an object, with its
/// modes declared as objects, every value `{}`.
fn reference_askable(capabilities: &Value) -> Option<Value> {
    let mut kept = Map::new();
    for (kind, modes) in [
        ("sampling", &["tools", "context"][..]),
        ("elicitation", &["form", "url"][..]),
        ("roots", &[][..]),
    ] {
        if let Some(Value::Object(declared)) = capabilities.get(kind) {
            let names: Map<String, Value> = modes
                .iter()
                .filter(|mode| matches!(declared.get(**mode), Some(Value::Object(_))))
                .map(|mode| ((*mode).to_owned(), json!({})))
                .collect();
            kept.insert(kind.to_owned(), Value::Object(names));
        }
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// Whether the input's capabilities are given a token (the seeds that
/// are, and those that are not, are pinned by the corpus test).
#[must_use]
pub fn mints(data: &[u8]) -> bool {
    LegacyPeer::askable(Some(&capabilities(data))).is_some()
}

/// Checks that
///
/// * the input, read as a token, never opens, for a subject or none
///   (nothing the fuzzer writes was sealed under the key), and is refused
///   as `session` (`404`);
/// * the capabilities the input stands for are kept as a reference keeps
///   them (names only), and a client that declared nothing askable is
///   given no token;
/// * a minted token is base64url, no longer than [`MAX_TOKEN_LEN`]
///   whatever the client declared, and opens for its subject to exactly
///   what was kept; never for another subject, never under another secret
///   with the same key id or another key, never as a `requestState` nor as
///   a request id, and a `requestState` sealed with the same bytes for the
///   same subject never opens as a session token;
/// * a token with one bit flipped in any of its parts, or changed in one
///   character, cut short or lengthened never opens;
/// * any content sealed as a session token (as only a key holder could)
///   opens only when it is a JSON object whose `c` is an object, to that
///   object: never a panic.
pub fn check_session_token(data: &[u8]) -> Result<(), String> {
    let ours = peer();
    // Without auth the subject is "": both are bound.
    let subject = if data.len().is_multiple_of(3) {
        ""
    } else {
        "alice"
    };

    let text = String::from_utf8_lossy(data);
    for who in ["", "alice"] {
        let opened = ours.open_session(who, &text);
        ensure!(
            refused_as_session(&opened),
            "the token {text:?} was not minted by this server, yet it was not refused as `session` for {who:?}: {opened:?}"
        );
    }

    let capabilities = capabilities(data);
    let askable = LegacyPeer::askable(Some(&capabilities));
    ensure!(
        askable == reference_askable(&capabilities),
        "the capabilities {capabilities} were kept as {askable:?}, the reference keeps {:?}",
        reference_askable(&capabilities)
    );
    let Some(askable) = askable else {
        return sealed_contents(data, subject);
    };
    let revision = if data.len().is_multiple_of(2) {
        Revision::V2025_11_25
    } else {
        Revision::V2025_06_18
    };
    let token = ours.mint_session(subject, revision, &askable);
    ensure!(
        token.bytes().all(|b| URL_SAFE.contains(&b)),
        "the token {token:?} is not base64url"
    );
    ensure!(
        token.len() <= MAX_TOKEN_LEN,
        "the token for {askable} is {} characters, over {MAX_TOKEN_LEN}",
        token.len()
    );
    ensure!(
        ours.open_session(subject, &token).as_ref() == Ok(&askable),
        "the token minted for {askable} did not open to it: {:?}",
        ours.open_session(subject, &token)
    );
    for other in ["", "alice", "mallory", "alice\0", "principal:alice"] {
        if other != subject {
            ensure!(
                refused_as_session(&ours.open_session(other, &token)),
                "a token minted for {subject:?} opened for {other:?}"
            );
        }
    }
    ensure!(
        refused_as_session(&impostor().open_session(subject, &token)),
        "a token opened under another secret with the same key id"
    );
    ensure!(
        refused_as_session(&stranger().open_session(subject, &token)),
        "a token opened on a server without its key"
    );
    ensure!(
        sealer()
            .unseal(&Binding::new(subject, "tools/call", None), &token)
            .is_err(),
        "a session token unsealed as a requestState"
    );
    let as_id = json!({"jsonrpc": "2.0", "id": token, "result": {}});
    for caller in [Caller::unknown(), Caller::principal(subject)] {
        let opened = ours.open_answer(&as_id, &caller);
        ensure!(
            matches!(&opened, Err(LegacyRefusal(r)) if r == "unknown_id"),
            "a session token was taken for a request id: {opened:?}"
        );
    }
    let state = sealer().seal(&Binding::new(subject, "tools/call", None), token.as_bytes());
    ensure!(
        refused_as_session(&ours.open_session(subject, &state)),
        "a requestState opened as a session token"
    );

    let flips = flipped(&token);
    ensure!(
        flips.len() == 7,
        "the token {token:?} did not decode for flipping"
    );
    for bad in flips {
        ensure!(
            refused_as_session(&ours.open_session(subject, &bad)),
            "the token {bad:?}, {token:?} with one bit flipped, opened"
        );
    }
    if let [_, op, at_high, at_low, with, ..] = *data {
        let mut altered = token.clone().into_bytes();
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
        if mutated != token {
            ensure!(
                refused_as_session(&ours.open_session(subject, &mutated)),
                "the altered token {mutated:?} (of {token:?}) opened"
            );
        }
    }
    sealed_contents(data, subject)
}

/// The token with one bit flipped in each part of what it decodes to: the
/// version, the key id's length, the key id, the expiry, the content's
/// last byte, the tag's first and last bytes; each re-encoded as canonical
/// base64url, so that only the seal can refuse it.
pub(crate) fn flipped(token: &str) -> Vec<String> {
    // The header codec is standard base64 with padding: the same bits.
    let mut standard = token.replace('-', "+").replace('_', "/");
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    let Ok(raw) = base64_decode(standard.as_bytes()) else {
        return Vec::new();
    };
    let tag = raw.len().saturating_sub(32);
    [
        0,
        1,
        2,
        2 + 4 + 7,
        tag.saturating_sub(1),
        tag,
        raw.len() - 1,
    ]
    .into_iter()
    .filter(|at| *at < raw.len())
    .map(|at| {
        let mut bad = raw.clone();
        bad[at] ^= 0x01;
        base64_encode(&bad)
            .trim_end_matches('=')
            .replace('+', "-")
            .replace('/', "_")
    })
    .collect()
}

/// Content only a key holder could seal: opens to its `c` when that is an
/// object, is refused otherwise, and never panics.
fn sealed_contents(data: &[u8], subject: &str) -> Result<(), String> {
    let token = LegacyPeer::seal_session_state(&sealer(), subject, data);
    let opened = peer().open_session(subject, &token);
    let expected = serde_json::from_slice::<Value>(data)
        .ok()
        .and_then(|v| v.get("c").filter(|c| c.is_object()).cloned());
    match (&opened, &expected) {
        (Ok(got), Some(want)) => ensure!(
            got == want,
            "the sealed content {:?} opened to {got}, not to its `c`",
            String::from_utf8_lossy(data)
        ),
        (Err(_), None) => {}
        _ => {
            return Err(format!(
                "the sealed content {:?} opened as {opened:?}; its `c` is {expected:?}",
                String::from_utf8_lossy(data)
            ));
        }
    }
    Ok(())
}

/// Whether the input is a session token sealed under the fuzz key for
/// `alice` or for no subject whose time is past: a genuine token, refused
/// only for its age (the corpus holds such).
#[must_use]
pub fn is_expired_token(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    ["", "alice"].iter().any(|subject| {
        sealer().unseal(&Binding::new(subject, "wymcp/legacy-session", None), &text)
            == Err(wymcp::fuzzing::UnsealError::Expired)
    })
}
