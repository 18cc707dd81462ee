//! Client certificates (mTLS) as credentials: the [`CertificateAuth`]
//! authenticator that makes the verified certificate the principal, and the
//! RFC 8705 binding of an access token to it (`cnf.x5t#S256`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::authenticator::{AuthError, AuthFuture, Authenticator, Credentials, Principal};
use super::client_certificate::{ClientCertificate, same_thumbprint};

/// An [`Authenticator`] for mutual TLS: the request's verified
/// [`ClientCertificate`]'s [identity](ClientCertificate::identity) is the
/// [`Principal`]'s subject, so the ledger counts the certificate's holder
/// and the server's required scopes apply to the scopes given here.
///
/// A request without a certificate (over [`ClientAuth::Optional`](crate::serve::ClientAuth::Optional)),
/// or with one that names nobody, is answered 401.
///
/// ```
/// use wymcp::auth::CertificateAuth;
///
/// let auth = CertificateAuth::new()
///     .scopes(["mcp"])
///     .subject_scopes("spiffe://example.org/admin", ["mcp", "admin"]);
/// # let _ = auth;
/// ```
#[derive(Debug, Clone, Default)]
pub struct CertificateAuth {
    scopes: Vec<String>,
    by_subject: HashMap<String, Vec<String>>,
}

impl CertificateAuth {
    /// Every certificate's holder a principal with no scopes.
    #[must_use]
    pub fn new() -> Self {
        CertificateAuth::default()
    }

    /// The scopes every certificate's holder gets (unless named with
    /// [`subject_scopes`](Self::subject_scopes)).
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes the holder of a certificate naming `subject` gets.
    #[must_use]
    pub fn subject_scopes(
        mut self,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.by_subject
            .insert(subject.into(), scopes.into_iter().map(Into::into).collect());
        self
    }
}

impl Authenticator for CertificateAuth {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let result = credentials
            .client_certificate()
            .and_then(ClientCertificate::identity)
            .map(|subject| Principal {
                subject: subject.to_owned(),
                scopes: self.by_subject.get(subject).unwrap_or(&self.scopes).clone(),
                client_id: None,
                expires_at: None,
                recheck: None,
            })
            .ok_or(AuthError::Unauthorized);
        Box::pin(std::future::ready(result))
    }
}

/// What a token bound to another certificate (or sent without one) is
/// answered with.
pub(crate) const UNBOUND: &str =
    "the token is bound to a client certificate this request was not made with";
/// A `cnf` claim that is not an object, or an `x5t#S256` that is not a string.
pub(crate) const BAD_CNF: &str = "the token's confirmation claim is malformed";

/// RFC 8705 §3: a token whose `cnf` holds `x5t#S256` is served only over a
/// connection whose verified client certificate has that thumbprint. A
/// token without it passes (with or without a certificate). `certificate`:
/// the request's verified client certificate
/// ([`Credentials::client_certificate`]).
pub(crate) fn check_certificate_binding(
    claims: &Map<String, Value>,
    certificate: Option<&ClientCertificate>,
) -> Result<(), AuthError> {
    let Some(cnf) = claims.get("cnf") else {
        return Ok(());
    };
    let Some(cnf) = cnf.as_object() else {
        return Err(AuthError::invalid_token(BAD_CNF));
    };
    let Some(bound) = cnf.get("x5t#S256") else {
        return Ok(());
    };
    let Some(bound) = bound.as_str() else {
        return Err(AuthError::invalid_token(BAD_CNF));
    };
    match certificate {
        Some(cert) if same_thumbprint(cert.thumbprint(), bound) => Ok(()),
        _ => Err(AuthError::invalid_token(UNBOUND)),
    }
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
    fn a_bound_token_needs_the_certificate_of_its_thumbprint_and_a_malformed_cnf_is_refused() {
        let cert = ClientCertificate::from_der(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
        let other = ClientCertificate::from_der(vec![0x30, 0x03, 0x02, 0x01, 0x02]);
        let bound = claims(json!({"cnf": {"x5t#S256": cert.thumbprint()}}));
        assert!(check_certificate_binding(&bound, Some(&cert)).is_ok());
        assert_eq!(
            refused(check_certificate_binding(&bound, Some(&other))),
            UNBOUND
        );
        assert_eq!(refused(check_certificate_binding(&bound, None)), UNBOUND);
        // Unbound tokens pass with or without a certificate (a `cnf` of
        // another kind, e.g. DPoP's `jkt`, is not this check's).
        for unbound in [json!({}), json!({"cnf": {"jkt": "x"}})] {
            assert!(check_certificate_binding(&claims(unbound.clone()), None).is_ok());
            assert!(check_certificate_binding(&claims(unbound), Some(&cert)).is_ok());
        }
        for malformed in [json!({"cnf": "x"}), json!({"cnf": {"x5t#S256": 7}})] {
            assert_eq!(
                refused(check_certificate_binding(&claims(malformed), Some(&cert))),
                BAD_CNF
            );
        }
    }
}
