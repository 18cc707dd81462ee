//! The two ready-made [`Authenticator`]s: a closure over Bearer tokens, and
//! a fixed table of them.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use sha2::{Digest, Sha256};

use super::authenticator::{AuthError, AuthFuture, Authenticator, Credentials, Principal};

/// An [`Authenticator`] for `Authorization: Bearer` tokens, verified by a
/// closure. A request without a well-formed Bearer token is
/// [`Unauthorized`](AuthError::Unauthorized) without calling it.
#[derive(Clone)]
pub struct BearerAuth<F> {
    verify: F,
}

impl<F> fmt::Debug for BearerAuth<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth").finish_non_exhaustive()
    }
}

impl<F, Fut> BearerAuth<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, AuthError>> + Send + 'static,
{
    /// Verifies each Bearer token with `verify`.
    pub fn new(verify: F) -> Self {
        BearerAuth { verify }
    }
}

impl<F, Fut> Authenticator for BearerAuth<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, AuthError>> + Send + 'static,
{
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        match credentials.bearer() {
            Some(token) => Box::pin((self.verify)(token.to_owned())),
            None => Box::pin(std::future::ready(Err(AuthError::Unauthorized))),
        }
    }
}

/// A fixed table of Bearer tokens, for tests and development. Tokens are
/// kept and looked up by their SHA-256 digest.
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<[u8; 32], Principal>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// An empty table: every request is unauthorized.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `token` in as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens.insert(digest(token.as_ref()), principal);
        self
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let found = credentials
            .bearer()
            .and_then(|token| self.tokens.get(&digest(token)).cloned());
        Box::pin(std::future::ready(found.ok_or(AuthError::Unauthorized)))
    }
}
