//! `Auth` (wire check): authenticates the caller with the server's
//! [`Authenticator`](crate::auth::Authenticator) through
//! [`Exchange::authenticate`], which establishes [`Exchange::principal`];
//! what it answers is built from the public [`AuthConfig`](crate::auth::AuthConfig)
//! alone, as a user's stage could build it.
//!
//! **Why here.** Every request must be authenticated on its own (there is no
//! session), and before anything else in the body is trusted. It runs after
//! classification so that its rejections follow the rejection-id rule like
//! every other (the seed: "auth's 401 included"), and before the
//! singleton-header check, so an unauthenticated caller learns nothing about
//! how its other headers fare.
//!
//! **What it answers.** A server built without an authenticator: nothing
//! (every request continues, with no principal). Otherwise:
//!
//! * `401`, `-32600`, `WWW-Authenticate: Bearer resource_metadata="…",
//!   scope="…"` (each part only when configured) for missing credentials,
//!   or credentials the authenticator refuses without saying why
//!   ([`AuthError::Unauthorized`]);
//! * `401`, `-32600`, `WWW-Authenticate: Bearer error="invalid_token",
//!   error_description="…", resource_metadata="…", scope="…"` for a token
//!   the authenticator refused and said why ([`AuthError::InvalidToken`]);
//!   the JSON-RPC message carries the same description;
//! * `403`, `-32600`, `WWW-Authenticate: Bearer error="insufficient_scope",
//!   scope="…", resource_metadata="…"` when the principal lacks a required
//!   scope (the configuration's, or the ones the authenticator names); to a
//!   request authenticated with the `DPoP` scheme, `DPoP
//!   error="insufficient_scope", scope="…", algs="…", resource_metadata="…"`
//!   (RFC 9449 §7.1).
//! * `503`, `-32600`, `Retry-After` (whole seconds, at least 1) and no
//!   challenge when the credentials cannot be judged now because a shared
//!   place is full ([`AuthError::Unavailable`]: the cap of introspection
//!   calls in flight); the token is not refused, the client comes back;
//! * `429`, `-32600`, `Retry-After` and no challenge when the client holds
//!   its share of such a place ([`AuthError::Throttled`]: its calls to the
//!   authorization server in flight, counted by the
//!   [`ledger`](crate::ledger)).
//!
//! **A repeated `Authorization` header.** The singleton-header check lists
//! `Authorization`, but auth comes first and reads it first. With an
//! authenticator configured, two `Authorization` headers are ambiguous
//! credentials, which are no credentials: auth answers its `401` without
//! consulting the authenticator and without picking either value. A stage
//! knows nothing of its neighbours, so auth never lets through a request it
//! could not authenticate in the hope that a later check refuses it. Without
//! an authenticator, auth continues and the singleton-header check answers
//! its `400` naming the header.

use std::borrow::Cow;

use http::{HeaderValue, StatusCode, header};

use crate::auth::{AuthError, DPOP_NONCE_HEADER, error_description};
use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::Stage;

/// Authenticates the caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct Auth;

impl Stage for Auth {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        let server = ex.server();
        let Some(config) = server.auth_config() else {
            return Flow::Continue;
        };
        let outcome = ex.authenticate().await.map(|_| ());
        let (status, message, challenge): (_, Cow<'static, str>, _) = match outcome {
            Ok(()) => return Flow::Continue,
            Err(AuthError::InvalidToken { description }) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "unauthorized: invalid token: {}",
                    error_description(&description)
                )
                .into(),
                config.invalid_token_challenge(&description),
            ),
            Err(AuthError::Dpop {
                error,
                description,
                nonce,
            }) => {
                let challenge = HeaderValue::try_from(config.dpop_challenge(error, &description))
                    .unwrap_or_else(|_| HeaderValue::from_static("DPoP"));
                let mut rejection = Rejection::new(
                    StatusCode::UNAUTHORIZED,
                    ErrorCode::INVALID_REQUEST,
                    format!("unauthorized: {error}: {}", error_description(&description)),
                )
                .header(header::WWW_AUTHENTICATE, challenge);
                // A nonce of our own making: base64url, a valid value.
                if let Some(nonce) = nonce.and_then(|n| HeaderValue::try_from(n).ok()) {
                    rejection =
                        rejection.header(http::HeaderName::from_static(DPOP_NONCE_HEADER), nonce);
                }
                return ex.reject(rejection);
            }
            Err(AuthError::InsufficientScope { required }) => (
                StatusCode::FORBIDDEN,
                "forbidden: the token lacks a scope this request needs".into(),
                config.forbidden_challenge(ex.headers(), &required),
            ),
            Err(
                ref error @ (AuthError::Unavailable {
                    ref description,
                    retry_after,
                }
                | AuthError::Throttled {
                    ref description,
                    retry_after,
                }),
            ) => {
                // A full place, not a refusal: no challenge, and a whole
                // number of seconds to wait (at least one). The client's
                // share is 429, the server's cap 503.
                let (status, what) = match error {
                    AuthError::Throttled { .. } => (StatusCode::TOO_MANY_REQUESTS, "throttled"),
                    _ => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                };
                let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                return ex.reject(
                    Rejection::new(
                        status,
                        ErrorCode::INVALID_REQUEST,
                        format!("{what}: {}", error_description(description)),
                    )
                    .header(header::RETRY_AFTER, HeaderValue::from(seconds.max(1))),
                );
            }
            Err(AuthError::Unauthorized) => (
                StatusCode::UNAUTHORIZED,
                "unauthorized: this server needs a valid bearer token in one `Authorization` header"
                    .into(),
                config.unauthorized_challenge(),
            ),
        };
        // Built from validated configuration and RFC 6749 scope tokens only,
        // so it is a valid header value; a bare challenge if it were not.
        let challenge =
            HeaderValue::try_from(challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        ex.reject(
            Rejection::new(status, ErrorCode::INVALID_REQUEST, message)
                .header(header::WWW_AUTHENTICATE, challenge),
        )
    }
}
