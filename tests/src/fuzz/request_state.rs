//! MRTR `requestState`: sealing and unsealing.

use std::sync::OnceLock;

use serde_json::{Value, json};
use wymcp::fuzzing::{Binding, Sealer, UnsealError};
use wymcp::mrtr::{Inputs, SealingKey};

use super::ensure;

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn sealer() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| Sealer::new(key("fuzz", 0x42)))
}

/// The same key id with another secret: what an attacker guessing the id gets.
fn impostor() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| Sealer::new(key("fuzz", 0x43)))
}

/// A server that holds another key only.
fn stranger() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| Sealer::new(key("other", 0x42)))
}

fn key(id: &str, byte: u8) -> SealingKey {
    SealingKey::new(id, vec![byte; 32]).expect("a valid key")
}

fn params() -> Value {
    json!({"name": "ask", "arguments": {"region": "eu", "n": 1}})
}

/// Checks that
///
/// * the input, read as a token, never unseals (nothing the fuzzer writes
///   is a state sealed under the key);
/// * the input, sealed as a state, is a base64url token that unseals to it
///   for its binding, and for nothing else: another subject, method or
///   params, another key with the same id, another server's key;
/// * params that differ only in `_meta`, `inputResponses` or
///   `requestState` bind the same state;
/// * a token changed in one character, cut short or lengthened never
///   unseals;
/// * `Inputs::from_request` on the input as params never yields a state.
pub fn check_request_state(data: &[u8]) -> Result<(), String> {
    let ours = sealer();
    let binding = Binding::new("alice", "tools/call", Some(&params()));

    let text = String::from_utf8_lossy(data);
    ensure!(
        ours.unseal(&binding, &text).is_err(),
        "the unsealed token {text:?} was not sealed by this server"
    );

    let sealed = ours.seal(&binding, data);
    ensure!(
        sealed.bytes().all(|b| URL_SAFE.contains(&b)),
        "the token {sealed:?} is not base64url"
    );
    ensure!(
        ours.unseal(&binding, &sealed).as_deref() == Ok(data),
        "the state {data:?} did not round-trip"
    );

    let mut same = params();
    same["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    same["inputResponses"] = json!({"k": {"action": "accept"}});
    same["requestState"] = Value::String(sealed.clone());
    ensure!(
        ours.unseal(&Binding::new("alice", "tools/call", Some(&same)), &sealed)
            .as_deref()
            == Ok(data),
        "the MRTR fields of params changed the binding"
    );

    let mut other_arguments = params();
    other_arguments["arguments"]["n"] = json!(2);
    for (what, other) in [
        (
            "subject",
            Binding::new("mallory", "tools/call", Some(&params())),
        ),
        (
            "method",
            Binding::new("alice", "prompts/get", Some(&params())),
        ),
        (
            "params",
            Binding::new("alice", "tools/call", Some(&other_arguments)),
        ),
        ("no params", Binding::new("alice", "tools/call", None)),
    ] {
        ensure!(
            ours.unseal(&other, &sealed) == Err(UnsealError::Tampered),
            "a state sealed for one request unsealed for another {what}"
        );
    }
    ensure!(
        impostor().unseal(&binding, &sealed) == Err(UnsealError::Tampered),
        "a state unsealed under another secret with the same key id"
    );
    ensure!(
        stranger().unseal(&binding, &sealed) == Err(UnsealError::UnknownKey),
        "a state sealed under an unknown key id was not refused as such"
    );

    if let [op, at_high, at_low, with, ..] = *data {
        let mut altered = sealed.clone().into_bytes();
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
        if mutated != sealed {
            ensure!(
                ours.unseal(&binding, &mutated).is_err(),
                "the altered token {mutated:?} (of {sealed:?}) unsealed"
            );
        }
    }

    if let Ok(params) = serde_json::from_slice::<Value>(data) {
        let method = params
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("tools/call");
        if let Ok(inputs) = Inputs::from_request(ours, "alice", method, Some(&params)) {
            ensure!(
                inputs.state().is_none(),
                "Inputs::from_request unsealed a state nobody sealed: {params}"
            );
        }
    }
    Ok(())
}
