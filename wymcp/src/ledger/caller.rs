//! Who a place is counted against: the principal when the server
//! authenticates, else the client's address, grouped by prefix (an IPv6
//! /64 is one caller by default: one host is given a /64, and a host that
//! draws a new address for each request is still one caller).

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use crate::protocol::net::network;

/// How client addresses group into callers: the prefix length that counts as
/// one caller, per address family. The defaults, `/32` for IPv4 and `/64`
/// for IPv6, count one IPv4 address, or one IPv6 subnet as a host is given
/// it, as one caller.
///
/// ```
/// use wymcp::ledger::{Caller, Grouping};
/// let grouping = Grouping::default();
/// let a = Caller::address("2001:db8:1:2::a".parse()?, grouping);
/// let b = Caller::address("2001:db8:1:2:ffff::b".parse()?, grouping);
/// assert_eq!(a, b);
/// assert_eq!(a.as_str(), "address:2001:db8:1:2::/64");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grouping {
    /// Leading bits of an IPv4 address that name a caller (`0..=32`; default
    /// 32).
    pub ipv4_prefix: u8,
    /// Leading bits of an IPv6 address that name a caller (`0..=128`;
    /// default 64).
    pub ipv6_prefix: u8,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping {
            ipv4_prefix: 32,
            ipv6_prefix: 64,
        }
    }
}

/// Who holds a place: a key, compared by value, cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Caller(Arc<str>);

impl Caller {
    /// The caller an authenticated principal is: its subject.
    #[must_use]
    pub fn principal(subject: &str) -> Self {
        Caller(format!("principal:{subject}").into())
    }

    /// The caller an unauthenticated client is: its address's network of
    /// `grouping`'s prefix (an IPv4-mapped IPv6 address is its IPv4 address).
    #[must_use]
    pub fn address(addr: IpAddr, grouping: Grouping) -> Self {
        let (prefix, whole) = match addr.to_canonical() {
            IpAddr::V4(_) => (grouping.ipv4_prefix.min(32), 32),
            IpAddr::V6(_) => (grouping.ipv6_prefix.min(128), 128),
        };
        let net = network(addr, prefix);
        // Every request of an unauthenticated client names its caller (the
        // body's place, then the call's): written into a stack buffer, an
        // IPv4 address digit by digit, and allocated once, rather than
        // `format!`ted through `IpAddr`'s `Display` and copied into the
        // `Arc`. The bytes are `format!("address:{net}/{prefix}")`'s (a test
        // holds them to it).
        let mut key = Key::default();
        key.push(b"address:");
        match net {
            IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        key.push(b".");
                    }
                    key.decimal(octet);
                }
            }
            IpAddr::V6(v6) => {
                // At most 45 bytes; the buffer holds them.
                let _ = fmt::Write::write_fmt(&mut key, format_args!("{v6}"));
            }
        }
        if prefix != whole {
            key.push(b"/");
            key.decimal(prefix);
        }
        match key.as_str() {
            Some(text) => Caller(Arc::from(text)),
            None if prefix == whole => Caller(format!("address:{net}").into()),
            None => Caller(format!("address:{net}/{prefix}").into()),
        }
    }

    /// The caller of a request that has neither a principal nor an address
    /// (stdio, or a router served without [`ClientAddr`](crate::ClientAddr)):
    /// all such requests are one caller.
    #[must_use]
    pub fn unknown() -> Self {
        Caller("unknown".into())
    }

    /// Who is counted for a request: the principal's subject when there is
    /// one, else the client's address grouped, else [`unknown`](Self::unknown).
    #[must_use]
    pub fn of(subject: Option<&str>, addr: Option<IpAddr>, grouping: Grouping) -> Self {
        match (subject, addr) {
            (Some(subject), _) => Caller::principal(subject),
            (None, Some(addr)) => Caller::address(addr, grouping),
            (None, None) => Caller::unknown(),
        }
    }

    /// The key, as logged and compared: `principal:<subject>`,
    /// `address:<ip>` or `address:<network>/<prefix>`, or `unknown`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An address caller's key as it is written, on the stack: `address:`, an
/// IPv6 address (at most 45 bytes) and `/128` fit with room to spare.
/// Writing past the end marks it spilled; [`as_str`](Self::as_str) then
/// says `None`.
struct Key {
    bytes: [u8; 64],
    len: usize,
    spilled: bool,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            bytes: [0; 64],
            len: 0,
            spilled: false,
        }
    }
}

impl Key {
    fn push(&mut self, part: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + part.len()) {
            Some(to) => {
                to.copy_from_slice(part);
                self.len += part.len();
            }
            None => self.spilled = true,
        }
    }

    /// A byte in decimal, no leading zeros.
    fn decimal(&mut self, n: u8) {
        let digits = [b'0' + n / 100, b'0' + n / 10 % 10, b'0' + n % 10];
        let skip = if n >= 100 {
            0
        } else if n >= 10 {
            1
        } else {
            2
        };
        self.push(&digits[skip..]);
    }

    fn as_str(&self) -> Option<&str> {
        if self.spilled {
            return None;
        }
        std::str::from_utf8(&self.bytes[..self.len]).ok()
    }
}

impl fmt::Write for Key {
    fn write_str(&mut self, part: &str) -> fmt::Result {
        self.push(part.as_bytes());
        if self.spilled {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::protocol::text::truncated(&self.0))
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::protocol::text::truncated(&self.0))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn addr(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn one_ipv6_slash_64_is_one_caller_by_default() {
        let g = Grouping::default();
        assert_eq!(
            Caller::address(addr("2001:db8::1"), g),
            Caller::address(addr("2001:db8::ffff:1"), g)
        );
        assert_ne!(
            Caller::address(addr("2001:db8::1"), g),
            Caller::address(addr("2001:db8:0:1::1"), g)
        );
    }

    #[test]
    fn ipv4_addresses_are_their_own_callers_by_default_and_group_when_asked() {
        let g = Grouping::default();
        assert_ne!(
            Caller::address(addr("10.0.0.1"), g),
            Caller::address(addr("10.0.0.2"), g)
        );
        assert_eq!(
            Caller::address(addr("10.0.0.1"), g).as_str(),
            "address:10.0.0.1"
        );
        let g = Grouping {
            ipv4_prefix: 24,
            ..g
        };
        assert_eq!(
            Caller::address(addr("10.0.0.1"), g).as_str(),
            "address:10.0.0.0/24"
        );
        assert_eq!(
            Caller::address(addr("::ffff:10.0.0.9"), g),
            Caller::address(addr("10.0.0.1"), g)
        );
    }

    #[test]
    fn an_address_key_is_the_formatted_network_and_prefix() {
        // The key written by hand is the one `format!` wrote before it.
        let addresses = [
            "0.0.0.0",
            "9.10.99.100",
            "255.255.255.255",
            "127.0.0.1",
            "192.168.1.200",
            "::",
            "::1",
            "::ffff:10.0.0.9",
            "2001:db8::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fe80::1:2:3:4",
            "1:0:0:1:0:0:0:1",
        ];
        for text in addresses {
            for (ipv4_prefix, ipv6_prefix) in
                [(32, 128), (32, 64), (24, 48), (0, 0), (7, 127), (99, 200)]
            {
                let grouping = Grouping {
                    ipv4_prefix,
                    ipv6_prefix,
                };
                let ip = addr(text);
                let (prefix, whole) = match ip.to_canonical() {
                    IpAddr::V4(_) => (ipv4_prefix.min(32), 32),
                    IpAddr::V6(_) => (ipv6_prefix.min(128), 128),
                };
                let net = network(ip, prefix);
                let expected = if prefix == whole {
                    format!("address:{net}")
                } else {
                    format!("address:{net}/{prefix}")
                };
                assert_eq!(
                    Caller::address(ip, grouping).as_str(),
                    expected,
                    "{text} {grouping:?}"
                );
            }
        }
        let mut key = Key::default();
        key.push(&[b'x'; 65]);
        assert_eq!(key.as_str(), None);
    }

    #[test]
    fn a_principal_is_counted_by_subject_whatever_its_address() {
        let g = Grouping::default();
        assert_eq!(
            Caller::of(Some("alice"), Some(addr("10.0.0.1")), g),
            Caller::of(Some("alice"), Some(addr("10.0.0.2")), g)
        );
        assert_ne!(
            Caller::principal("alice"),
            Caller::address(addr("10.0.0.1"), g)
        );
        assert_eq!(Caller::of(None, None, g), Caller::unknown());
    }
}
