//! The JWK Set parser a JWT verifier reads the authorization server's keys
//! with (RFC 7517 §5), and the key selection over what it keeps.

use serde_json::{Map, Value};
use wymcp::auth::Algorithm;
use wymcp::fuzzing::{ALGORITHMS, HeldKey, KeySelection, base64_decode, jwk_set};

use super::ensure;

/// Base64url without padding, decoded through the strict standard decoder.
fn base64url(text: &str) -> Option<Vec<u8>> {
    let mut standard: String = text
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            '+' | '/' | '=' => '!',
            c => c,
        })
        .collect();
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    base64_decode(standard.as_bytes()).ok()
}

/// The kind of key a JWK is, for a reference that reads only its type,
/// curve, use and operations: `None` for a JWK no verifier may use.
fn kind_of(jwk: &Map<String, Value>) -> Option<&'static str> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    if jwk.get("use").is_some_and(|u| u != "sig") {
        return None;
    }
    if jwk.get("key_ops").is_some_and(|ops| {
        !ops.as_array()
            .is_some_and(|ops| ops.iter().any(|op| op == "verify"))
    }) {
        return None;
    }
    match (text("kty")?, text("crv")) {
        ("RSA", _) => {
            // RFC 7518 §3.3: 2048 bits or more.
            let modulus = base64url(text("n")?)?;
            (modulus.iter().skip_while(|b| **b == 0).count() >= 256).then_some("RSA")
        }
        ("EC", Some("P-256")) => Some("P-256"),
        ("EC", Some("P-384")) => Some("P-384"),
        ("OKP", Some("Ed25519")) => Some("Ed25519"),
        _ => None,
    }
}

/// The key kind an algorithm signs with.
fn kind_for(alg: Algorithm) -> &'static str {
    match alg.name() {
        "ES256" => "P-256",
        "ES384" => "P-384",
        "EdDSA" => "Ed25519",
        _ => "RSA",
    }
}

/// Checks, on the input as a JSON document, that
///
/// * it is read as a set exactly when it is an object whose `keys` is an
///   array (RFC 7517 §5): a document without one is an error, never an
///   empty set;
/// * every key kept comes from a JWK of that `kid` and `alg` whose type
///   and curve a verifier may use (RSA of 2048 bits or more, EC on P-256
///   or P-384, OKP on Ed25519), whose `use` is `sig` or absent and whose
///   `key_ops` allow `verify`; never `oct`; no two kept keys share a `kid`;
///   no more keys than JWKs;
/// * a key is selected by its `kid` for exactly the algorithms of its kind
///   (and only its own `alg` when its JWK names one); without a `kid`, a
///   token finds the key when it is the one of its kind, and is ambiguous
///   when several fit;
/// * reading the same document twice keeps the same keys.
pub fn check_jwk_set(data: &[u8]) -> Result<(), String> {
    let Ok(document) = serde_json::from_slice::<Value>(data) else {
        return Ok(());
    };
    let is_set = document.get("keys").is_some_and(Value::is_array);
    let Some(set) = jwk_set(&document) else {
        ensure!(
            !is_set,
            "a document with a `keys` array was refused: {document}"
        );
        return Ok(());
    };
    ensure!(
        is_set,
        "a document without a `keys` array was read as a set: {document}"
    );
    let held = set.held();
    let jwks: Vec<&Map<String, Value>> = document["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    ensure!(
        held.len() <= jwks.len(),
        "{} keys kept from {} JWKs",
        held.len(),
        jwks.len()
    );
    for (i, key) in held.iter().enumerate() {
        let from = jwks.iter().any(|jwk| {
            let kid = match jwk.get("kid") {
                None => None,
                Some(Value::String(kid)) => Some(kid.clone()),
                Some(_) => return false,
            };
            let alg = jwk.get("alg").and_then(Value::as_str).map(str::to_owned);
            kid == key.kid && alg == key.alg && kind_of(jwk) == Some(key.kind)
        });
        ensure!(from, "kept {key:?}, which no usable JWK of the input is");
        ensure!(
            key.kid.is_none() || held[..i].iter().all(|k| k.kid != key.kid),
            "two keys kept under the kid {:?}",
            key.kid
        );
    }
    for alg in ALGORITHMS {
        let fitting: Vec<&HeldKey> = held
            .iter()
            .filter(|k| k.kind == kind_for(alg) && k.alg.as_deref().is_none_or(|a| a == alg.name()))
            .collect();
        for key in &held {
            let Some(kid) = key.kid.as_deref() else {
                continue;
            };
            let expected = if fitting.iter().any(|k| k.kid.as_deref() == Some(kid)) {
                KeySelection::Found
            } else {
                KeySelection::NotFound
            };
            let got = set.select(Some(kid), alg);
            ensure!(
                got == expected,
                "kid {kid:?} with {alg}: {got:?}, expected {expected:?}"
            );
        }
        let expected = match fitting.len() {
            0 => KeySelection::NotFound,
            1 => KeySelection::Found,
            _ => KeySelection::Ambiguous,
        };
        let got = set.select(None, alg);
        ensure!(
            got == expected,
            "no kid with {alg}: {got:?}, expected {expected:?}"
        );
    }
    let again = jwk_set(&document).map(|set| set.held());
    ensure!(
        again.as_ref() == Some(&held),
        "read twice: {held:?}, then {again:?}"
    );
    Ok(())
}
