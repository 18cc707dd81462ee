//! What the two resource-server authenticators share: why one cannot be
//! built, the rules a token's claims are held to (audience, expiry, not
//! before, issued at, with a leeway), the scopes read from `scope` or `scp`,
//! and the descriptions a refused token's challenge carries.
//!
//! The descriptions are fixed texts: they tell a client what was wrong and
//! quote nothing, neither the token nor the keys nor the authorization
//! server's answers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::authenticator::{AuthError, Credentials, Principal};

/// Why a [`JwtVerifier`](super::JwtVerifier) or an
/// [`Introspection`](super::Introspection) cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifierConfigError {
    /// A URL of the authorization server cannot be used.
    #[error("`{url}`: {reason}")]
    Url {
        /// The URL, as configured (cut to 200 characters).
        url: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// A required setting is empty.
    #[error("{0} must not be empty")]
    Empty(&'static str),
    /// No signing algorithm is allowed.
    #[error("at least one signing algorithm must be allowed")]
    NoAlgorithms,
    /// The introspection endpoint would be called without credentials.
    #[error("the introspection endpoint needs client credentials (RFC 7662 §2.1)")]
    NoClientCredentials,
    /// The TLS client could not be set up.
    #[error("TLS: {0}")]
    Tls(String),
}

/// The default leeway on `exp`, `nbf` and `iat`: clocks drift.
pub(crate) const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The largest token accepted, by default.
pub(crate) const DEFAULT_MAX_TOKEN_BYTES: usize = 16 * 1024;

// What a refused token's challenge says (RFC 6750 §3.1 `error_description`).
pub(crate) const MALFORMED_HEADER: &str =
    "the Authorization header does not hold a well-formed bearer token";
pub(crate) const TOO_LARGE: &str = "the token is larger than this server accepts";
pub(crate) const UNREACHABLE: &str =
    "the token cannot be verified now: the authorization server is unreachable";
pub(crate) const AUDIENCE: &str = "the token was issued for another audience";
pub(crate) const NO_AUDIENCE: &str = "the token names no audience";
pub(crate) const EXPIRED: &str = "the token has expired";
pub(crate) const NO_EXPIRY: &str = "the token has no expiry";
pub(crate) const NOT_YET_VALID: &str = "the token is not valid yet";
pub(crate) const ISSUED_IN_FUTURE: &str = "the token was issued in the future";
pub(crate) const BAD_TIME: &str = "a time claim of the token is not a number";
pub(crate) const NO_SUBJECT: &str = "the token names no subject";
pub(crate) const BAD_CNF: &str = "the token's confirmation (cnf) is malformed";

/// The bearer token of a request, or why there is none: no `Authorization`
/// header or another scheme is a missing token (`Unauthorized`); a Bearer
/// header whose token is not a `token68`, or a token over `max_bytes`, is
/// an invalid one.
pub(crate) fn bearer_of<'a>(
    credentials: &Credentials<'a>,
    max_bytes: usize,
) -> Result<&'a str, AuthError> {
    let Some(value) = credentials.authorization() else {
        return Err(AuthError::Unauthorized);
    };
    if credentials.is_dpop_scheme() {
        // The DPoP scheme (RFC 9449 §7.1), when DPoP is configured.
        let token = credentials
            .access_token()
            .ok_or_else(|| AuthError::invalid_token(MALFORMED_HEADER))?;
        if token.len() > max_bytes {
            return Err(AuthError::invalid_token(TOO_LARGE));
        }
        return Ok(token);
    }
    let scheme = value
        .as_bytes()
        .iter()
        .skip_while(|b| **b == b' ' || **b == b'\t')
        .take_while(|b| **b != b' ')
        .copied()
        .collect::<Vec<u8>>();
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(AuthError::Unauthorized);
    }
    let token = credentials
        .bearer()
        .ok_or_else(|| AuthError::invalid_token(MALFORMED_HEADER))?;
    if token.len() > max_bytes {
        return Err(AuthError::invalid_token(TOO_LARGE));
    }
    Ok(token)
}

/// Seconds since the epoch, now.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A NumericDate claim: absent, a number, or not a number (refused).
fn time_claim(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, AuthError> {
    match claims.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| AuthError::invalid_token(BAD_TIME)),
    }
}

/// `exp` (required when `require_exp`), `nbf` and `iat` against `now`,
/// each with `leeway`: expired at `exp + leeway`, valid from
/// `nbf - leeway`, and not issued after `now + leeway`.
pub(crate) fn check_times(
    claims: &Map<String, Value>,
    now: f64,
    leeway: Duration,
    require_exp: bool,
) -> Result<(), AuthError> {
    let leeway = leeway.as_secs_f64();
    match time_claim(claims, "exp")? {
        Some(exp) if now >= exp + leeway => return Err(AuthError::invalid_token(EXPIRED)),
        None if require_exp => return Err(AuthError::invalid_token(NO_EXPIRY)),
        _ => {}
    }
    if time_claim(claims, "nbf")?.is_some_and(|nbf| now + leeway < nbf) {
        return Err(AuthError::invalid_token(NOT_YET_VALID));
    }
    if time_claim(claims, "iat")?.is_some_and(|iat| iat > now + leeway) {
        return Err(AuthError::invalid_token(ISSUED_IN_FUTURE));
    }
    Ok(())
}

/// Whether `aud` (a string or an array of strings) names one of
/// `audiences`; `None` when the claims have no `aud`.
pub(crate) fn audience_matches(claims: &Map<String, Value>, audiences: &[String]) -> Option<bool> {
    let names = |value: &str| audiences.iter().any(|a| a == value);
    match claims.get("aud")? {
        Value::String(aud) => Some(names(aud)),
        Value::Array(auds) => Some(auds.iter().filter_map(Value::as_str).any(names)),
        _ => Some(false),
    }
}

/// The audience rule: the claims must name one of `audiences`; claims
/// without `aud` pass only when `allow_missing`.
pub(crate) fn check_audience(
    claims: &Map<String, Value>,
    audiences: &[String],
    allow_missing: bool,
) -> Result<(), AuthError> {
    match audience_matches(claims, audiences) {
        Some(true) => Ok(()),
        None if allow_missing => Ok(()),
        None => Err(AuthError::invalid_token(NO_AUDIENCE)),
        Some(false) => Err(AuthError::invalid_token(AUDIENCE)),
    }
}

/// The scopes of a token: `scope` (RFC 9068, RFC 7662: space-separated),
/// else `scp` (a space-separated string, or an array of strings, as some
/// authorization servers write it).
pub(crate) fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let value = claims.get("scope").or_else(|| claims.get("scp"));
    match value {
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
    }
}

/// A non-empty string claim.
pub(crate) fn string_claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    claims
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The RFC 7638 thumbprint a token is bound to (RFC 9449 §6: `cnf.jkt`),
/// if any; a `cnf` that is not an object, or a `jkt` that is not a
/// non-empty string, is refused.
pub(crate) fn bound_key(claims: &Map<String, Value>) -> Result<Option<&str>, AuthError> {
    match claims.get("cnf") {
        None => Ok(None),
        Some(Value::Object(cnf)) => match cnf.get("jkt") {
            None => Ok(None),
            Some(Value::String(jkt)) if !jkt.is_empty() && jkt.len() <= 128 => Ok(Some(jkt)),
            Some(_) => Err(AuthError::invalid_token(BAD_CNF)),
        },
        Some(_) => Err(AuthError::invalid_token(BAD_CNF)),
    }
}

/// The principal of verified claims: `sub` (required), the scopes, the
/// client (`client_id`, else `azp`), and when it expires: `exp` plus
/// `leeway`, the moment [`check_times`] starts refusing the token.
pub(crate) fn principal(
    claims: &Map<String, Value>,
    leeway: Duration,
) -> Result<Principal, AuthError> {
    let subject =
        string_claim(claims, "sub").ok_or_else(|| AuthError::invalid_token(NO_SUBJECT))?;
    let expires_at = claims
        .get("exp")
        .and_then(Value::as_f64)
        .and_then(|exp| Duration::try_from_secs_f64(exp.max(0.0)).ok())
        .and_then(|exp| UNIX_EPOCH.checked_add(exp)?.checked_add(leeway));
    Ok(Principal {
        subject: subject.to_owned(),
        scopes: scopes(claims),
        client_id: string_claim(claims, "client_id")
            .or_else(|| string_claim(claims, "azp"))
            .map(str::to_owned),
        expires_at,
        recheck: None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn refused(result: Result<(), AuthError>) -> String {
        match result {
            Err(AuthError::InvalidToken { description }) => description,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn times_hold_with_the_leeway_and_not_past_it() {
        let leeway = Duration::from_secs(30);
        let now = 1_000_000.0;
        let at = |c: Value| check_times(&claims(c), now, leeway, true);
        assert!(at(json!({"exp": now + 1.0})).is_ok());
        assert!(at(json!({"exp": now - 29.0})).is_ok());
        assert_eq!(refused(at(json!({"exp": now - 30.0}))), EXPIRED);
        assert_eq!(refused(at(json!({}))), NO_EXPIRY);
        assert!(check_times(&claims(json!({})), now, leeway, false).is_ok());
        assert_eq!(refused(at(json!({"exp": "soon"}))), BAD_TIME);
        assert!(at(json!({"exp": now + 60.0, "nbf": now + 29.0})).is_ok());
        assert_eq!(
            refused(at(json!({"exp": now + 60.0, "nbf": now + 31.0}))),
            NOT_YET_VALID
        );
        assert!(at(json!({"exp": now + 60.0, "iat": now + 29.0})).is_ok());
        assert_eq!(
            refused(at(json!({"exp": now + 60.0, "iat": now + 31.0}))),
            ISSUED_IN_FUTURE
        );
        assert_eq!(
            refused(at(json!({"exp": now + 60.0, "nbf": null}))),
            BAD_TIME
        );
    }

    #[test]
    fn the_audience_is_a_string_or_an_array_that_names_this_resource() {
        let ours = ["https://mcp.example.com/mcp".to_owned()];
        let check = |c: Value, missing| check_audience(&claims(c), &ours, missing);
        assert!(check(json!({"aud": "https://mcp.example.com/mcp"}), false).is_ok());
        assert!(
            check(
                json!({"aud": ["other", "https://mcp.example.com/mcp"]}),
                false
            )
            .is_ok()
        );
        assert_eq!(
            refused(check(
                json!({"aud": "https://mcp.example.com/other"}),
                false
            )),
            AUDIENCE
        );
        assert_eq!(
            refused(check(
                json!({"aud": ["https://mcp.example.com/mcp/"]}),
                false
            )),
            AUDIENCE
        );
        assert_eq!(refused(check(json!({"aud": 7}), false)), AUDIENCE);
        assert_eq!(refused(check(json!({}), false)), NO_AUDIENCE);
        assert!(check(json!({}), true).is_ok());
        assert_eq!(refused(check(json!({"aud": []}), true)), AUDIENCE);
    }

    #[test]
    fn scopes_come_from_scope_or_scp_in_either_form() {
        assert_eq!(scopes(&claims(json!({"scope": "a  b"}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scp": "a b"}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scp": ["a", 1, "b"]}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scope": "a", "scp": "b"}))), ["a"]);
        assert!(scopes(&claims(json!({"scope": 3}))).is_empty());
    }

    #[test]
    fn the_principal_is_the_subject_its_scopes_and_its_client() {
        let leeway = Duration::from_secs(30);
        let p = principal(
            &claims(json!({"sub": "alice", "scope": "x", "azp": "app"})),
            leeway,
        )
        .unwrap();
        assert_eq!(
            p,
            Principal {
                subject: "alice".into(),
                scopes: vec!["x".into()],
                client_id: Some("app".into()),
                expires_at: None,
                recheck: None,
            }
        );
        let p = principal(
            &claims(json!({"sub": "s", "client_id": "c", "azp": "a", "exp": 1000})),
            leeway,
        )
        .unwrap();
        assert_eq!(p.client_id.as_deref(), Some("c"));
        // It expires when the token stops being accepted: exp + leeway.
        assert_eq!(p.expires_at, Some(UNIX_EPOCH + Duration::from_secs(1030)));
        assert!(matches!(
            principal(&claims(json!({"sub": ""})), leeway),
            Err(AuthError::InvalidToken { .. })
        ));
    }
}
