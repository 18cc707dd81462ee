//! Address networks: the one masking of an address to its prefix, used by
//! the trusted-proxy lists ([`IpNet`](crate::origin::IpNet)) and by the
//! grouping of unauthenticated callers ([`Caller`](crate::ledger::Caller)).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `addr`'s network of `prefix` bits (an IPv4-mapped IPv6 address is its
/// IPv4 address; a prefix longer than the family's is the whole address).
#[must_use]
pub(crate) fn network(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V4(v4) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(prefix.min(128)))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_masks_to_its_network() {
        assert_eq!(network(ip("192.0.2.77"), 24), ip("192.0.2.0"));
        assert_eq!(network(ip("192.0.2.77"), 32), ip("192.0.2.77"));
        assert_eq!(network(ip("192.0.2.77"), 0), ip("0.0.0.0"));
        assert_eq!(network(ip("192.0.2.77"), 99), ip("192.0.2.77"));
        assert_eq!(network(ip("::ffff:192.0.2.77"), 24), ip("192.0.2.0"));
        assert_eq!(network(ip("2001:db8:1:2:3::9"), 64), ip("2001:db8:1:2::"));
        assert_eq!(network(ip("2001:db8::9"), 0), ip("::"));
        assert_eq!(network(ip("2001:db8::9"), 128), ip("2001:db8::9"));
    }
}
