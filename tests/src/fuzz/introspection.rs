//! The rules an RFC 7662 introspection answer is held to before a token is
//! accepted on its word.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};
use wymcp::auth::Introspection;
use wymcp::fuzzing::introspection_answer;

use super::ensure;

/// The resource the authenticator serves, as an answer's `aud` must name.
pub const AUDIENCE: &str = "https://mcp.example.com/mcp";
/// The issuer an answer's `iss` must be.
pub const ISSUER: &str = "https://auth.example.com";
const LEEWAY: Duration = Duration::from_secs(30);
const CACHE_TTL: Duration = Duration::from_secs(60);

fn introspection() -> &'static Introspection {
    static ONE: OnceLock<Introspection> = OnceLock::new();
    ONE.get_or_init(|| {
        Introspection::builder("http://127.0.0.1:9/introspect", AUDIENCE)
            .issuer(ISSUER)
            .client_credentials("fuzz", "secret")
            .leeway(LEEWAY)
            .cache_ttl(CACHE_TTL)
            .build()
            .expect("a valid configuration")
    })
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A non-empty string claim.
fn text<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    claims
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Checks, on the input as an introspection answer, that
///
/// * an accepted answer is an object whose `active` is exactly `true`, whose
///   `iss` is the issuer, whose `aud` names the resource, whose `exp`,
///   `nbf` and `iat` are numbers that hold (with the leeway), and whose
///   `sub` is a non-empty string; the principal is its `sub`, its scopes
///   are the words of `scope` (else `scp`), its client `client_id` (else
///   `azp`); it is reused no longer than the cache TTL nor past `exp`;
/// * the same answer with `active` anything but `true` (absent, `false`,
///   `"true"`, `1`, `null`), with `exp` or `sub` of another type, or
///   wrapped in an array, is refused;
/// * a value that is not an object is refused.
pub fn check_introspection(data: &[u8]) -> Result<(), String> {
    let Ok(answer) = serde_json::from_slice::<Value>(data) else {
        return Ok(());
    };
    let introspection = introspection();
    let before = now();
    let judged = introspection_answer(introspection, &answer);
    let after = now();
    let Value::Object(claims) = &answer else {
        ensure!(
            judged.is_err(),
            "the non-object answer {answer} was accepted"
        );
        return Ok(());
    };
    if let Ok((principal, ttl)) = &judged {
        accepted(claims, principal, *ttl, before, after)?;
    }
    let refused = |what: &str, claims: Map<String, Value>| {
        let answer = Value::Object(claims);
        match introspection_answer(introspection, &answer) {
            Ok(_) => Err(format!("accepted with {what}: {answer}")),
            Err(_) => Ok(()),
        }
    };
    for active in [
        None,
        Some(Value::Bool(false)),
        Some(Value::from("true")),
        Some(Value::from(1)),
        Some(Value::Null),
        Some(Value::Array(vec![Value::Bool(true)])),
    ] {
        let mut changed = claims.clone();
        match &active {
            None => changed.remove("active"),
            Some(value) => changed.insert("active".to_owned(), value.clone()),
        };
        refused(&format!("active {active:?}"), changed)?;
    }
    for (claim, value) in [
        ("exp", Value::from("4102444800")),
        ("exp", Value::Bool(true)),
        ("nbf", Value::from("0")),
        ("sub", Value::from(7)),
        ("sub", Value::from("")),
        ("sub", Value::Null),
    ] {
        let mut changed = claims.clone();
        changed.insert(claim.to_owned(), value.clone());
        refused(&format!("{claim} {value}"), changed)?;
    }
    let wrapped = Value::Array(vec![answer.clone()]);
    ensure!(
        introspection_answer(introspection, &wrapped).is_err(),
        "an answer wrapped in an array was accepted: {wrapped}"
    );
    Ok(())
}

fn accepted(
    claims: &Map<String, Value>,
    principal: &wymcp::auth::Principal,
    ttl: Duration,
    before: f64,
    after: f64,
) -> Result<(), String> {
    ensure!(
        claims.get("active") == Some(&Value::Bool(true)),
        "accepted with active {:?}",
        claims.get("active")
    );
    ensure!(
        text(claims, "iss") == Some(ISSUER),
        "accepted from the issuer {:?}",
        claims.get("iss")
    );
    let aud = match claims.get("aud") {
        Some(Value::String(aud)) => aud == AUDIENCE,
        Some(Value::Array(auds)) => auds.iter().any(|a| a == AUDIENCE),
        _ => false,
    };
    ensure!(aud, "accepted for the audience {:?}", claims.get("aud"));
    let leeway = LEEWAY.as_secs_f64();
    for claim in ["exp", "nbf", "iat"] {
        ensure!(
            claims.get(claim).is_none_or(Value::is_number),
            "accepted with a {claim} that is no number: {:?}",
            claims.get(claim)
        );
    }
    let time = |claim: &str| claims.get(claim).and_then(Value::as_f64);
    ensure!(
        time("exp").is_none_or(|exp| before < exp + leeway),
        "accepted after its exp {:?}",
        time("exp")
    );
    ensure!(
        time("nbf").is_none_or(|nbf| nbf <= after + leeway),
        "accepted before its nbf {:?}",
        time("nbf")
    );
    ensure!(
        time("iat").is_none_or(|iat| iat <= after + leeway),
        "accepted though issued in the future, iat {:?}",
        time("iat")
    );
    ensure!(
        text(claims, "sub") == Some(principal.subject.as_str()),
        "the principal {:?} is not the sub {:?}",
        principal.subject,
        claims.get("sub")
    );
    let scopes: Vec<String> = match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(list)) => list
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    ensure!(
        principal.scopes == scopes,
        "the scopes {:?} are not the answer's {scopes:?}",
        principal.scopes
    );
    let client = text(claims, "client_id").or_else(|| text(claims, "azp"));
    ensure!(
        principal.client_id.as_deref() == client,
        "the client {:?} is not the answer's {client:?}",
        principal.client_id
    );
    ensure!(ttl <= CACHE_TTL, "reused for {ttl:?}, past the cache TTL");
    if let Some(exp) = time("exp") {
        let within = ttl.as_secs_f64() <= (exp - before).max(0.0) + 0.001;
        ensure!(within, "reused for {ttl:?}, past its exp {exp}");
    }
    Ok(())
}

/// Whether the input, as an introspection answer, is accepted: for the
/// corpus test that pins that seeds reach acceptance, where the checks of
/// an accepted answer run.
#[must_use]
pub fn accepts(data: &[u8]) -> bool {
    serde_json::from_slice::<Value>(data)
        .is_ok_and(|answer| introspection_answer(introspection(), &answer).is_ok())
}
