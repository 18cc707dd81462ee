//! The origin policy: which `Origin` and `Host` values a server answers,
//! parsed once from its configuration and read by
//! [`OriginCheck`](crate::stages::OriginCheck), which says why the policy
//! reads as it does.

use std::net::SocketAddr;

/// The address the server's listener is bound to, as the serving entry tells
/// the chain through a request extension.
///
/// Add it with `router.layer(axum::Extension(BoundTo(addr)))` when serving
/// without [`serve()`](crate::serve()).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTo(pub SocketAddr);

/// A configured origin or host that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OriginError {
    /// An allowed origin is not of the form `scheme://host[:port]`.
    #[error("the allowed origin `{0}` is not of the form `scheme://host[:port]`")]
    Origin(String),
    /// An allowed host is not of the form `host[:port]`.
    #[error("the allowed host `{0}` is not of the form `host[:port]`")]
    Host(String),
}

/// The names every loopback-bound server answers to by default.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A host as configured: a name and, optionally, the one port it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostRule {
    name: String,
    port: Option<u16>,
}

/// An origin: scheme, host name and port, lower-cased, the default port
/// written out.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    name: String,
    port: Option<u16>,
}

/// The origin check's configuration, built once by the server builder.
#[derive(Debug, Clone, Default)]
pub(crate) struct OriginPolicy {
    origins: Option<Vec<Origin>>,
    hosts: Option<Vec<HostRule>>,
    /// The address given to `ServerBuilder::bound_to`, if any.
    pub(crate) bound_to: Option<SocketAddr>,
}

impl OriginPolicy {
    /// Parses the configured origins and hosts.
    pub(crate) fn new(
        origins: Option<Vec<String>>,
        hosts: Option<Vec<String>>,
        bound_to: Option<SocketAddr>,
    ) -> Result<Self, OriginError> {
        let origins = origins
            .map(|list| {
                list.into_iter()
                    .map(|raw| {
                        let trimmed = raw.strip_suffix('/').unwrap_or(&raw);
                        parse_origin(trimmed.as_bytes()).ok_or(OriginError::Origin(raw.clone()))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let hosts = hosts
            .map(|list| {
                list.into_iter()
                    .map(|raw| {
                        let (name, port) = split_authority(raw.as_bytes())
                            .ok_or(OriginError::Host(raw.clone()))?;
                        Ok(HostRule {
                            name: name.to_ascii_lowercase(),
                            port,
                        })
                    })
                    .collect::<Result<Vec<_>, OriginError>>()
            })
            .transpose()?;
        Ok(OriginPolicy {
            origins,
            hosts,
            bound_to,
        })
    }

    pub(crate) fn allows_host(&self, host: &[u8], bound: Option<SocketAddr>) -> bool {
        let parsed = split_authority(host);
        match &self.hosts {
            Some(rules) => parsed.is_some_and(|(name, port)| {
                rules.iter().any(|rule| {
                    rule.name.eq_ignore_ascii_case(name)
                        && rule.port.is_none_or(|p| port == Some(p))
                })
            }),
            // Knowing no address, the server is taken to be loopback-bound.
            None if bound.is_none_or(|addr| addr.ip().to_canonical().is_loopback()) => {
                parsed.is_some_and(|(name, _)| is_loopback_name(name))
            }
            None => true,
        }
    }

    pub(crate) fn allows_origin(&self, origin: &[u8]) -> bool {
        let Some(origin) = parse_origin(origin) else {
            return false;
        };
        match &self.origins {
            Some(allowed) => allowed.contains(&origin),
            None => {
                (origin.scheme == "http" || origin.scheme == "https")
                    && is_loopback_name(&origin.name)
            }
        }
    }
}

fn is_loopback_name(name: &str) -> bool {
    LOOPBACK_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Splits `host[:port]` (an IPv6 literal in brackets) into the host name and
/// the port. `None` when it is not of that form.
fn split_authority(raw: &[u8]) -> Option<(&str, Option<u16>)> {
    let raw = std::str::from_utf8(raw).ok()?;
    // An `:authority` may carry userinfo; the host follows the last `@`.
    let raw = raw.rsplit_once('@').map_or(raw, |(_, host)| host);
    let (name, port) = if raw.starts_with('[') {
        let end = raw.find(']')?;
        let (name, rest) = raw.split_at(end + 1);
        match rest {
            "" => (name, None),
            _ => (name, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match raw.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (raw, None),
        }
    };
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~[]:%!$&'()*+,;=".contains(&b));
    if !valid_name {
        return None;
    }
    let port = match port {
        None | Some("") => None,
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => Some(digits.parse().ok()?),
        Some(_) => return None,
    };
    Some((name, port))
}

/// Parses `scheme://host[:port]`, the serialised form of an origin.
fn parse_origin(raw: &[u8]) -> Option<Origin> {
    let text = std::str::from_utf8(raw).ok()?;
    let (scheme, authority) = text.split_once("://")?;
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    if !scheme_ok || authority.contains(['/', '@', '?', '#']) {
        return None;
    }
    let (name, port) = split_authority(authority.as_bytes())?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    Some(Origin {
        port: port.or(default_port),
        scheme,
        name: name.to_ascii_lowercase(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(origins: Option<&[&str]>, hosts: Option<&[&str]>) -> OriginPolicy {
        let own = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        OriginPolicy::new(origins.map(own), hosts.map(own), None).expect("valid policy")
    }

    #[test]
    fn authorities_split_into_name_and_port() {
        assert_eq!(split_authority(b"localhost"), Some(("localhost", None)));
        assert_eq!(
            split_authority(b"localhost:3000"),
            Some(("localhost", Some(3000)))
        );
        assert_eq!(split_authority(b"[::1]:8080"), Some(("[::1]", Some(8080))));
        assert_eq!(split_authority(b"[::1]"), Some(("[::1]", None)));
        assert_eq!(split_authority(b"user@host:1"), Some(("host", Some(1))));
        assert_eq!(split_authority(b"localhost:"), Some(("localhost", None)));
        assert_eq!(split_authority(b"localhost:99999"), None);
        assert_eq!(split_authority(b"localhost:x"), None);
        assert_eq!(split_authority(b"[::1]x"), None);
        assert_eq!(split_authority(b"local host"), None);
        assert_eq!(split_authority(b""), None);
        assert_eq!(split_authority(b"\xff"), None);
    }

    #[test]
    fn loopback_bound_default_allows_only_loopback_names() {
        let p = policy(None, None);
        let lo: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        for ok in ["localhost", "LOCALHOST:1", "127.0.0.1:3000", "[::1]:9"] {
            assert!(p.allows_host(ok.as_bytes(), Some(lo)), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "127.0.0.2",
            "localhost.evil.com",
            "[::2]",
        ] {
            assert!(!p.allows_host(bad.as_bytes(), Some(lo)), "{bad}");
        }
        // Knowing no address fails closed.
        assert!(!p.allows_host(b"evil.example.com", None));
        // A public bind does not check the host.
        let public: SocketAddr = "0.0.0.0:1".parse().expect("addr");
        assert!(p.allows_host(b"evil.example.com", Some(public)));
        // An IPv4-mapped loopback address is loopback.
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:1".parse().expect("addr");
        assert!(!p.allows_host(b"evil.example.com", Some(mapped)));
    }

    #[test]
    fn configured_hosts_replace_the_default() {
        let p = policy(None, Some(&["api.example.com", "Other.example:8443"]));
        let lo: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        assert!(p.allows_host(b"api.example.com:1234", Some(lo)));
        assert!(p.allows_host(b"other.example:8443", Some(lo)));
        assert!(!p.allows_host(b"other.example:8444", Some(lo)));
        assert!(!p.allows_host(b"localhost", Some(lo)));
    }

    #[test]
    fn default_origins_are_loopback_ones() {
        let p = policy(None, None);
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "HTTPS://127.0.0.1:1",
            "http://[::1]:3000",
        ] {
            assert!(p.allows_origin(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "null",
            "file://localhost",
            "http://localhost/",
            "http://user@localhost",
            "localhost",
        ] {
            assert!(!p.allows_origin(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn configured_origins_compare_normalised() {
        let p = policy(
            Some(&["https://App.Example.com/", "http://x.test:8080"]),
            None,
        );
        assert!(p.allows_origin(b"https://app.example.com"));
        assert!(p.allows_origin(b"https://app.example.com:443"));
        assert!(p.allows_origin(b"http://x.test:8080"));
        assert!(!p.allows_origin(b"http://app.example.com"));
        assert!(!p.allows_origin(b"http://x.test"));
        assert!(!p.allows_origin(b"http://localhost"));
    }

    #[test]
    fn malformed_configuration_is_a_build_error() {
        let bad_origin = OriginPolicy::new(Some(vec!["example.com".into()]), None, None);
        assert!(matches!(bad_origin, Err(OriginError::Origin(o)) if o == "example.com"));
        let bad_host = OriginPolicy::new(None, Some(vec!["a b".into()]), None);
        assert!(matches!(bad_host, Err(OriginError::Host(h)) if h == "a b"));
    }
}
