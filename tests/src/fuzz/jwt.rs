//! JWT access tokens (compact JWS) as a verifier checks them: the header
//! rules, the key the token may use, the signature, then the claims;
//! against a fixed key set, so no fetch is made.
//!
//! The input: byte 0 even, the rest is a token, verified as it is; odd,
//! the rest is a payload, signed by the set's key (and by an attacker's
//! key, and not at all) into the tokens the check tries.

use std::sync::OnceLock;

use jsonwebtoken::{Algorithm as Jose, EncodingKey};
use serde_json::{Value, json};
use wymcp::auth::{AuthError, JwtVerifier, Principal};
use wymcp::fuzzing::{base64_decode, base64_encode, jwt_verify};

use super::ensure;

/// The issuer a token's `iss` must be.
pub const ISSUER: &str = "https://auth.example.com";
/// The resource a token's `aud` must name.
pub const AUDIENCE: &str = "https://mcp.example.com/mcp";
/// The `kid` of the one key the set publishes.
pub const KID: &str = "k1";

/// The set's Ed25519 key (PKCS#8), generated for this check, and its public
/// `x`.
const SERVER_KEY: &str = "302e020100300506032b657004220420956eed8de8536fd88f5e63918659ed944d8d290124f56afccaeb7a085310b94d";
const SERVER_X: &str = "-taU6GsM9vSAGbMSJoWwTA7p-oQH4yN8LwhZMhJPPyw";
/// An attacker's Ed25519 key, which the set does not hold, and its `x`.
const ATTACKER_KEY: &str = "302e020100300506032b657004220420b95afd653061c0e239613a67e9aaf81e57e4cef69089207b34906232ab04a570";
const ATTACKER_X: &str = "COQwUKURuGDyZHFYywX0Qo4PzZ8EvkNrOrUlk87ZwWI";

/// How many characters of a token the check changes, at most, each once.
const MUTATIONS: usize = 48;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

fn verifier() -> &'static (JwtVerifier, Value) {
    static ONE: OnceLock<(JwtVerifier, Value)> = OnceLock::new();
    ONE.get_or_init(|| {
        let verifier = JwtVerifier::builder(ISSUER, AUDIENCE)
            .jwks_url("http://127.0.0.1:9/jwks")
            .build()
            .expect("a valid configuration");
        let keys = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": KID, "x": SERVER_X}]});
        (verifier, keys)
    })
}

fn verify(token: &str) -> Result<Principal, AuthError> {
    let (verifier, keys) = verifier();
    jwt_verify(verifier, keys, token)
}

fn b64url(bytes: &[u8]) -> String {
    base64_encode(bytes)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

fn from_b64url(text: &str) -> Option<Vec<u8>> {
    if text.contains(['+', '/', '=']) {
        return None;
    }
    let mut standard = text.replace('-', "+").replace('_', "/");
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    base64_decode(standard.as_bytes()).ok()
}

/// `header.payload.signature`, signed with `key` (`None`: an empty
/// signature).
fn token(header: &Value, payload: &[u8], key: Option<(&EncodingKey, Jose)>) -> String {
    let input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(payload)
    );
    let signature = key
        .and_then(|(key, alg)| jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).ok())
        .unwrap_or_default();
    format!("{input}.{signature}")
}

/// Checks that
///
/// * a token the verifier accepts is signed with the set's key: its header
///   names `EdDSA`, its signature verifies with the public key (checked by
///   `jsonwebtoken`'s own verify), and its claims hold: `iss` the issuer,
///   `aud` naming the resource, `exp` a number not passed, `sub` the
///   principal;
/// * an accepted token changed in one character (header, payload or
///   signature) never verifies;
/// * the payload signed under `alg: none` (any case) with no signature,
///   under HS256 with the public key as the secret, by an attacker's key
///   under the set's `kid`, or by an attacker's key carried in the header
///   (`jwk`) or pointed to (`jku`, `x5u`), is refused.
pub fn check_jwt(data: &[u8]) -> Result<(), String> {
    let Some((&mode, rest)) = data.split_first() else {
        return Ok(());
    };
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        if let Ok(principal) = verify(&text) {
            accepted(&text, &principal)?;
        }
        return Ok(());
    }
    let server = EncodingKey::from_ed_der(&hex(SERVER_KEY));
    let attacker = EncodingKey::from_ed_der(&hex(ATTACKER_KEY));
    let header = json!({"alg": "EdDSA", "typ": "at+jwt", "kid": KID});
    let genuine = token(&header, rest, Some((&server, Jose::EdDSA)));
    if let Ok(principal) = verify(&genuine) {
        accepted(&genuine, &principal)?;
    }
    let mut forgeries = Vec::new();
    for none in ["none", "None", "NONE"] {
        let header = json!({"alg": none, "typ": "at+jwt", "kid": KID});
        forgeries.push((format!("alg {none}"), token(&header, rest, None)));
    }
    if let Ok(secret) = EncodingKey::from_secret(SERVER_X.as_bytes()) {
        let header = json!({"alg": "HS256", "typ": "at+jwt", "kid": KID});
        forgeries.push((
            "HS256 with the public key as secret".to_owned(),
            token(&header, rest, Some((&secret, Jose::HS256))),
        ));
    }
    let attacker_jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": ATTACKER_X});
    for header in [
        json!({"alg": "EdDSA", "typ": "at+jwt", "kid": KID}),
        json!({"alg": "EdDSA", "typ": "at+jwt", "jwk": attacker_jwk}),
        json!({"alg": "EdDSA", "typ": "at+jwt", "kid": KID, "jwk": attacker_jwk}),
        json!({"alg": "EdDSA", "typ": "at+jwt", "kid": KID, "jku": "https://attacker.example/jwks"}),
        json!({"alg": "EdDSA", "typ": "at+jwt", "x5u": "https://attacker.example/x5"}),
    ] {
        forgeries.push((
            format!("the attacker's key, header {header}"),
            token(&header, rest, Some((&attacker, Jose::EdDSA))),
        ));
    }
    for (what, forged) in forgeries {
        ensure!(
            verify(&forged).is_err(),
            "accepted a token signed with {what}: {forged}"
        );
    }
    Ok(())
}

/// What must hold of an accepted token.
fn accepted(token: &str, principal: &Principal) -> Result<(), String> {
    let parts: Vec<&str> = token.split('.').collect();
    ensure!(parts.len() == 3, "accepted {token:?}, not of three parts");
    let header: Value = from_b64url(parts[0])
        .and_then(|h| serde_json::from_slice(&h).ok())
        .ok_or_else(|| format!("accepted {token:?}, whose header is not base64url JSON"))?;
    ensure!(
        header["alg"] == "EdDSA",
        "accepted a token of alg {}",
        header["alg"]
    );
    let key = jsonwebtoken::DecodingKey::from_ed_components(SERVER_X)
        .map_err(|e| format!("the set's key: {e}"))?;
    let input = &token[..parts[0].len() + 1 + parts[1].len()];
    let signed = jsonwebtoken::crypto::verify(parts[2], input.as_bytes(), &key, Jose::EdDSA);
    ensure!(
        matches!(signed, Ok(true)),
        "accepted {token:?}, whose signature the set's key does not verify"
    );
    let claims: Value = from_b64url(parts[1])
        .and_then(|p| serde_json::from_slice(&p).ok())
        .ok_or_else(|| format!("accepted {token:?}, whose payload is not base64url JSON"))?;
    ensure!(
        claims["iss"] == ISSUER,
        "accepted from the issuer {}",
        claims["iss"]
    );
    let aud = match &claims["aud"] {
        Value::String(aud) => aud == AUDIENCE,
        Value::Array(auds) => auds.iter().any(|a| a == AUDIENCE),
        _ => false,
    };
    ensure!(aud, "accepted for the audience {}", claims["aud"]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    ensure!(
        claims["exp"].as_f64().is_some_and(|exp| now < exp + 30.0),
        "accepted with the exp {}",
        claims["exp"]
    );
    ensure!(
        claims["sub"] == principal.subject.as_str(),
        "the principal {:?} is not the sub {}",
        principal.subject,
        claims["sub"]
    );
    // One character changed, anywhere: never verifies.
    let chars: Vec<char> = token.chars().collect();
    let step = chars.len().div_ceil(MUTATIONS).max(1);
    for at in (0..chars.len()).step_by(step) {
        if chars[at] == '.' {
            continue;
        }
        let mut changed = chars.clone();
        changed[at] = if chars[at] == 'A' { 'B' } else { 'A' };
        let changed: String = changed.into_iter().collect();
        ensure!(
            verify(&changed).is_err(),
            "accepted {token:?} changed at {at}: {changed:?}"
        );
    }
    Ok(())
}

/// Whether the token the input makes is accepted: the input's token (byte 0
/// even) or the payload signed with the set's key (odd). For the corpus
/// test that pins that seeds reach acceptance, where the checks of an
/// accepted token run.
#[must_use]
pub fn accepts(data: &[u8]) -> bool {
    match data.split_first() {
        Some((mode, rest)) if mode % 2 == 0 => verify(&String::from_utf8_lossy(rest)).is_ok(),
        Some((_, rest)) => {
            let server = EncodingKey::from_ed_der(&hex(SERVER_KEY));
            let header = json!({"alg": "EdDSA", "typ": "at+jwt", "kid": KID});
            verify(&token(&header, rest, Some((&server, Jose::EdDSA)))).is_ok()
        }
        None => false,
    }
}
