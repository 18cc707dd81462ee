//! Per-item scopes: what a tool, prompt, resource or resource template
//! requires of its caller's token, on top of what the whole server
//! requires ([`AuthConfig::required_scopes`](crate::auth::AuthConfig::required_scopes)).
//!
//! A caller without an item's scopes does not see it listed (unless the
//! server lists everything to everyone, [`ServerBuilder::list_all`]) and
//! is answered `403` with `WWW-Authenticate: Bearer error="insufficient_scope"`
//! when it calls, gets or reads it. The challenge names every scope the
//! call needs, the server's and the item's (SEP-2350: one challenge, all
//! scopes), so a client can ask for them all in one step-up.
//!
//! [`ServerBuilder::list_all`]: crate::ServerBuilder::list_all

use std::sync::Arc;

use super::error::SurfaceError;
use crate::auth::Principal;

/// The scopes an item requires: sorted, without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scopes(Arc<[String]>);

impl Scopes {
    /// These scopes.
    pub(crate) fn new(scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        scopes.sort();
        scopes.dedup();
        Scopes(scopes.into())
    }

    /// Whether each scope is an RFC 6749 §3.3 `scope-token`, which a
    /// challenge can carry; `item` names the item in the error.
    pub(crate) fn check(&self, item: &str) -> Result<(), SurfaceError> {
        match self.0.iter().find(|s| !is_scope_token(s)) {
            None => Ok(()),
            Some(bad) => Err(SurfaceError::Scope {
                item: item.to_owned(),
                scope: bad.escape_debug().to_string(),
            }),
        }
    }

    /// Whether `principal` holds every scope. An item without scopes is
    /// open to everyone; an item with some is closed to a caller the server
    /// did not authenticate.
    pub(crate) fn permit(&self, principal: Option<&Principal>) -> bool {
        self.0.is_empty() || principal.is_some_and(|p| self.0.iter().all(|s| p.scopes.contains(s)))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn to_vec(&self) -> Vec<String> {
        self.0.to_vec()
    }
}

/// RFC 6749 §3.3: `1*( %x21 / %x23-5B / %x5D-7E )`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(scopes: &[&str]) -> Principal {
        Principal::new("s", scopes.iter().copied())
    }

    #[test]
    fn every_scope_is_needed() {
        let scopes = Scopes::new(["notes:write", "notes:read", "notes:write"]);
        assert_eq!(scopes.to_vec(), ["notes:read", "notes:write"]);
        assert!(scopes.permit(Some(&principal(&["notes:read", "notes:write", "x"]))));
        assert!(!scopes.permit(Some(&principal(&["notes:read"]))));
        assert!(!scopes.permit(None));
        assert!(Scopes::default().permit(None));
    }

    #[test]
    fn scopes_are_scope_tokens() {
        assert!(Scopes::new(["a:b", "!~"]).check("t").is_ok());
        for bad in ["", "a b", "a\"b", "a\\b", "é"] {
            assert!(Scopes::new([bad]).check("t").is_err(), "{bad:?}");
        }
    }
}
