//! The client certificate (mTLS) a TLS connection carries to each of its
//! requests, and who it names.

use std::sync::Arc;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

/// The certificate a client presented in the TLS handshake, verified against
/// the CA bundle of [`TlsBuilder::client_ca`](crate::serve::TlsBuilder::client_ca):
/// a request extension every request of the connection carries. Set only by
/// [`serve`](crate::serve()) after a handshake that verified it; nothing a
/// client sends in a request can set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate(Arc<Inner>);

#[derive(Debug, PartialEq, Eq)]
struct Inner {
    der: Vec<u8>,
    thumbprint: String,
    identity: Option<String>,
}

impl ClientCertificate {
    /// The certificate of DER bytes `der`. Its identity is read here (see
    /// [`identity`](Self::identity)); nothing is verified: the caller
    /// vouches for it, as `serve` does once the handshake verified it.
    #[must_use]
    pub fn from_der(der: Vec<u8>) -> Self {
        let thumbprint =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&der));
        let identity = identity_of(&der);
        ClientCertificate(Arc::new(Inner {
            der,
            thumbprint,
            identity,
        }))
    }

    /// The certificate, DER.
    #[must_use]
    pub fn der(&self) -> &[u8] {
        &self.0.der
    }

    /// Its RFC 8705 thumbprint: the base64url (unpadded) SHA-256 of the DER,
    /// what a bound token's `cnf.x5t#S256` holds.
    #[must_use]
    pub fn thumbprint(&self) -> &str {
        &self.0.thumbprint
    }

    /// Who the certificate names: its first URI subject alternative name
    /// (a SPIFFE ID, `spiffe://…`, names a workload exactly), else its first
    /// DNS name, else its subject's common name (CN); `None` when it names
    /// none of them (or the `tls` feature is off). SANs first because
    /// RFC 6125 deprecates the CN as an identity and a CA checks SANs; the
    /// CN last because client certificates of private CAs often carry only
    /// it.
    #[must_use]
    pub fn identity(&self) -> Option<&str> {
        self.0.identity.as_deref()
    }
}

#[cfg(feature = "tls")]
fn identity_of(der: &[u8]) -> Option<String> {
    let der = rustls::pki_types::CertificateDer::from(der);
    let cert = webpki::EndEntityCert::try_from(&der).ok()?;
    let name = cert
        .valid_uri_names()
        .next()
        .or_else(|| cert.valid_dns_names().next())
        .map(str::to_owned)
        .or_else(|| common_name(cert.subject()));
    name.filter(|n| !n.is_empty() && n.len() <= 1024)
}

#[cfg(not(feature = "tls"))]
fn identity_of(_der: &[u8]) -> Option<String> {
    None
}

/// One DER element at the start of `input`: its tag, its contents, the rest.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The subject's first common name (OID 2.5.4.3) of `name`, a Name's
/// contents (its RDN sets), when a UTF8String, PrintableString or IA5String.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
fn common_name(mut name: &[u8]) -> Option<String> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    while !name.is_empty() {
        let (tag, set, rest) = element(name)?;
        name = rest;
        if tag != 0x31 {
            return None;
        }
        let mut attributes = set;
        while !attributes.is_empty() {
            let (tag, attribute, rest) = element(attributes)?;
            attributes = rest;
            if tag != 0x30 {
                return None;
            }
            let (tag, oid, value) = element(attribute)?;
            if tag != 0x06 || oid != CN {
                continue;
            }
            let (tag, text, _) = element(value)?;
            if matches!(tag, 0x0c | 0x13 | 0x16) {
                return std::str::from_utf8(text).ok().map(str::to_owned);
            }
        }
    }
    None
}

/// Whether a presented key's or certificate's thumbprint is the one a token
/// is bound to (`cnf.jkt`, RFC 9449; `cnf.x5t#S256`, RFC 8705). Both
/// bindings compare here, in time that does not depend on where the two
/// first differ: a thumbprint is not a secret, but one rule for both keeps
/// a later binding from choosing differently.
pub(crate) fn same_thumbprint(presented: &str, bound: &str) -> bool {
    let (a, b) = (presented.as_bytes(), bound.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_common_name_is_read_from_the_subject() {
        // SET { SEQ { OID 2.5.4.6, PrintableString "DE" } },
        // SET { SEQ { OID 2.5.4.3, UTF8String "alice" } }
        let name = [
            0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x06, 0x13, 0x02, b'D', b'E', 0x31,
            0x0e, 0x30, 0x0c, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x05, b'a', b'l', b'i', b'c',
            b'e',
        ];
        assert_eq!(common_name(&name).as_deref(), Some("alice"));
        assert_eq!(common_name(&name[..13]), None);
        assert_eq!(common_name(&name[..20]), None);
        assert_eq!(common_name(&[0x31, 0x85, 0, 0, 0, 0, 1]), None);
    }

    #[test]
    fn a_thumbprint_matches_only_itself() {
        let bound = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";
        assert!(same_thumbprint(bound, bound));
        assert!(!same_thumbprint(
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xt",
            bound
        ));
        assert!(!same_thumbprint(
            "MzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
            bound
        ));
        assert!(!same_thumbprint(&bound[..42], bound));
        assert!(!same_thumbprint("", bound));
        assert!(same_thumbprint("", ""));
    }
}
