//! The origin policy: which `Origin` and `Host` values a server answers,
//! parsed once from its configuration and read by
//! [`OriginCheck`](crate::stages::OriginCheck), which says why the policy
//! reads as it does.

use std::net::{IpAddr, SocketAddr};

use crate::protocol::net::network;

/// The address the server's listener is bound to, as the serving entry tells
/// the chain through a request extension.
///
/// Add it with `router.layer(axum::Extension(BoundTo(addr)))` when serving
/// without [`serve()`](crate::serve()).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTo(pub SocketAddr);

/// Where a request comes from: the address of the peer, or of the client a
/// trusted proxy names (see [`ServeConfig::trusted_proxies`](crate::ServeConfig::trusted_proxies)),
/// as the serving entry tells the chain through a request extension. Limits
/// counted per caller count an unauthenticated caller by it.
///
/// Add it with a layer when serving without [`serve()`](crate::serve()).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub std::net::IpAddr);

/// A network of addresses, `addr/prefix` (a single address is `/32` or
/// `/128`): how the trusted proxies are named (see
/// [`ServeConfig::trusted_proxies`](crate::ServeConfig::trusted_proxies)).
///
/// ```
/// let lan: wymcp::IpNet = "10.0.0.0/8".parse()?;
/// assert!(lan.contains("10.1.2.3".parse()?));
/// let one: wymcp::IpNet = "::1".parse()?;
/// assert!(!one.contains("::2".parse()?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

/// An `addr/prefix` that is not a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an address or an `addr/prefix` network")]
pub struct IpNetError(String);

impl IpNet {
    /// The network of `addr`'s first `prefix` bits.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self, IpNetError> {
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(IpNetError(format!("{addr}/{prefix}")));
        }
        Ok(IpNet { addr, prefix })
    }

    /// Whether `addr` lies in the network (an IPv4-mapped IPv6 address is
    /// its IPv4 address).
    #[must_use]
    pub fn contains(&self, addr: IpAddr) -> bool {
        let (net, addr) = (self.addr.to_canonical(), addr.to_canonical());
        net.is_ipv4() == addr.is_ipv4() && network(net, self.prefix) == network(addr, self.prefix)
    }
}

impl std::str::FromStr for IpNet {
    type Err = IpNetError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || IpNetError(text.chars().take(64).collect());
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix.parse::<u8>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let prefix = prefix.unwrap_or(if addr.is_ipv4() { 32 } else { 128 });
        IpNet::new(addr, prefix).map_err(|_| bad())
    }
}

/// The client a request comes from: the peer, unless the peer is a trusted
/// proxy; then the address the forwarding headers name as the last hop
/// before the trusted ones (`X-Forwarded-For`, else RFC 7239 `Forwarded`).
/// An address a client wrote itself is never believed: the chain is read
/// from the right, and only trusted proxies' entries are skipped. An entry
/// that is not an address stops the walk at the proxy that added it.
pub(crate) fn client_of(peer: IpAddr, headers: &http::HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |addr: IpAddr| trusted.iter().any(|net| net.contains(addr));
    if !is_trusted(peer) {
        return peer;
    }
    let mut hops: Vec<Option<IpAddr>> = Vec::new();
    let xff: Vec<&http::HeaderValue> = headers.get_all("x-forwarded-for").iter().collect();
    if xff.is_empty() {
        for value in headers.get_all(http::header::FORWARDED) {
            let Ok(text) = value.to_str() else {
                hops.push(None);
                continue;
            };
            for element in text.split(',') {
                let forwarded_for = element
                    .split(';')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(key, _)| key.trim().eq_ignore_ascii_case("for"))
                    .map(|(_, value)| value.trim().trim_matches('"'));
                hops.push(forwarded_for.and_then(forwarded_address));
            }
        }
    } else {
        for value in xff {
            let Ok(text) = value.to_str() else {
                hops.push(None);
                continue;
            };
            hops.extend(text.split(',').map(|a| forwarded_address(a.trim())));
        }
    }
    let mut client = peer;
    for hop in hops.into_iter().rev() {
        match hop {
            Some(addr) if is_trusted(addr) => client = addr,
            Some(addr) => return addr,
            None => return client,
        }
    }
    client
}

/// An address as a forwarding header writes it: `1.2.3.4`, `1.2.3.4:80`,
/// `[2001:db8::1]`, `[2001:db8::1]:80`, or a bare IPv6 address.
fn forwarded_address(text: &str) -> Option<IpAddr> {
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Some(addr);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

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
                        && rule.port.is_none_or(|p| {
                            // A Host without a port names the scheme's
                            // default one (RFC 9110 §7.2): 80 or 443.
                            port == Some(p) || (port.is_none() && matches!(p, 80 | 443))
                        })
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

/// The bytes a host name may carry here: letters, digits, and
/// ``-._~[]:%!$&'()*+,;=``; a table, as every request's `Host` is checked.
static HOST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b: u8 = 0;
    loop {
        table[b as usize] = b.is_ascii_alphanumeric();
        if b == u8::MAX {
            break;
        }
        b += 1;
    }
    let extra = b"-._~[]:%!$&'()*+,;=";
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
};

/// Splits `host[:port]` (an IPv6 literal in brackets) into the host name and
/// the port. `None` when it is not of that form.
fn split_authority(raw: &[u8]) -> Option<(&str, Option<u16>)> {
    // Byte by byte, in one pass over each part: every request's `Host` is
    // split here.
    // An `:authority` may carry userinfo; the host follows the last `@`.
    let raw = match raw.iter().rposition(|&b| b == b'@') {
        Some(at) => {
            std::str::from_utf8(&raw[..at]).ok()?;
            &raw[at + 1..]
        }
        None => raw,
    };
    let (name, port) = if raw.first() == Some(&b'[') {
        let end = raw.iter().position(|&b| b == b']')?;
        let (name, rest) = raw.split_at(end + 1);
        match rest {
            [] => (name, None),
            [b':', digits @ ..] => (name, Some(digits)),
            _ => return None,
        }
    } else {
        match raw.iter().position(|&b| b == b':') {
            Some(colon) => (&raw[..colon], Some(&raw[colon + 1..])),
            None => (raw, None),
        }
    };
    // Every byte the table allows is ASCII, so a valid name is UTF-8.
    let valid_name = !name.is_empty() && name.iter().all(|&b| HOST_BYTES[usize::from(b)]);
    if !valid_name {
        return None;
    }
    let port = match port {
        None | Some([]) => None,
        Some(digits) => {
            let mut port: u16 = 0;
            for &b in digits {
                if !b.is_ascii_digit() {
                    return None;
                }
                port = port.checked_mul(10)?.checked_add(u16::from(b - b'0'))?;
            }
            Some(port)
        }
    };
    Some((std::str::from_utf8(name).ok()?, port))
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

    /// The host-byte table is exactly the set the host rule names.
    #[test]
    fn host_bytes_are_the_named_set() {
        for b in 0..=u8::MAX {
            let named = b.is_ascii_alphanumeric() || b"-._~[]:%!$&'()*+,;=".contains(&b);
            assert_eq!(HOST_BYTES[usize::from(b)], named, "byte {b:#04x}");
        }
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

    /// The split as it was written over `str` before it went byte by
    /// byte: the reference the byte split is held to.
    fn split_authority_by_str(raw: &[u8]) -> Option<(&str, Option<u16>)> {
        let raw = std::str::from_utf8(raw).ok()?;
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
        if name.is_empty() || !name.bytes().all(|b| HOST_BYTES[usize::from(b)]) {
            return None;
        }
        let port = match port {
            None | Some("") => None,
            Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => {
                Some(digits.parse().ok()?)
            }
            Some(_) => return None,
        };
        Some((name, port))
    }

    /// Every authority built from these pieces (userinfo, a name or an IPv6
    /// literal, a port, stray bytes) splits as the `str` version did.
    #[test]
    fn the_byte_split_agrees_with_the_str_split() {
        let users: &[&[u8]] = &[b"", b"u@", b"a@b@", b"\xff@", b"@"];
        let names: &[&[u8]] = &[
            b"",
            b"localhost",
            b"127.0.0.1",
            b"[::1]",
            b"[::1",
            b"::1]",
            b"h\xc3\xa9",
            b"a b",
            b"x]y",
            b"[",
            b"]",
        ];
        let ports: &[&[u8]] = &[
            b"",
            b":",
            b":0",
            b":80",
            b":65535",
            b":65536",
            b":0065535",
            b":99999999999",
            b":+1",
            b":1x",
            b"x",
            b"::1",
            b":\xff",
            b"]:1",
        ];
        let mut checked = 0;
        for user in users {
            for name in names {
                for port in ports {
                    let raw = [*user, *name, *port].concat();
                    assert_eq!(
                        split_authority(&raw),
                        split_authority_by_str(&raw),
                        "{:?}",
                        String::from_utf8_lossy(&raw)
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, users.len() * names.len() * ports.len());
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
        // Issue 16, item 17: a default port configured allows a Host
        // without one (the scheme's default), and only that port.
        let tls = policy(None, Some(&["example.com:443", "plain.example:80"]));
        assert!(tls.allows_host(b"example.com", Some(lo)));
        assert!(tls.allows_host(b"example.com:443", Some(lo)));
        assert!(!tls.allows_host(b"example.com:8443", Some(lo)));
        assert!(tls.allows_host(b"plain.example", Some(lo)));
        assert!(!p.allows_host(b"other.example", Some(lo)));
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

    /// Rule (issue 16, item 8): the client is the peer unless the peer is a
    /// trusted proxy; the forwarding chain is read from the right, trusted
    /// hops skipped, and what a client wrote at the left is never believed.
    #[test]
    fn the_client_is_read_from_trusted_proxies_only() {
        use http::{HeaderMap, HeaderValue};
        let ip = |s: &str| s.parse::<IpAddr>().expect("an address");
        let net = |s: &str| s.parse::<IpNet>().expect("a network");
        let trusted = [net("10.0.0.0/8"), net("::1")];
        let with = |name: &'static str, value: &'static str| {
            let mut h = HeaderMap::new();
            h.append(name, HeaderValue::from_static(value));
            h
        };
        let none = HeaderMap::new();
        // An untrusted peer is the client, whatever it says.
        let spoofed = with("x-forwarded-for", "9.9.9.9");
        assert_eq!(
            client_of(ip("203.0.113.7"), &spoofed, &trusted),
            ip("203.0.113.7")
        );
        // A trusted peer: the right-most untrusted hop.
        let chain = with("x-forwarded-for", "1.1.1.1, 198.51.100.2, 10.0.0.5");
        assert_eq!(
            client_of(ip("10.0.0.1"), &chain, &trusted),
            ip("198.51.100.2")
        );
        // Without forwarding headers the proxy is the client.
        assert_eq!(client_of(ip("10.0.0.1"), &none, &trusted), ip("10.0.0.1"));
        // Garbage in the chain stops at the proxy that added it.
        let garbage = with("x-forwarded-for", "198.51.100.2, unknown");
        assert_eq!(
            client_of(ip("10.0.0.1"), &garbage, &trusted),
            ip("10.0.0.1")
        );
        // RFC 7239, ports and brackets.
        let forwarded = with(
            "forwarded",
            r#"for=192.0.2.60;proto=http, for="[2001:db8::1]:8080""#,
        );
        assert_eq!(
            client_of(ip("::1"), &forwarded, &trusted),
            ip("2001:db8::1")
        );
        let ported = with("x-forwarded-for", "192.0.2.9:4711");
        assert_eq!(client_of(ip("::1"), &ported, &trusted), ip("192.0.2.9"));
        // Networks.
        assert!(net("10.0.0.0/8").contains(ip("10.255.0.1")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("0.0.0.0/0").contains(ip("8.8.8.8")));
        assert!(net("10.0.0.1").contains(ip("::ffff:10.0.0.1")));
        assert!("10.0.0.0/33".parse::<IpNet>().is_err());
        assert!("nope".parse::<IpNet>().is_err());
    }
}
