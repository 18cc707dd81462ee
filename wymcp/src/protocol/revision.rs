//! Protocol revisions wymcp knows, and the era a request belongs to.

use std::fmt;

use http::HeaderMap;
use serde_json::Value;

use super::headers::{MCP_PROTOCOL_VERSION, trim_ows};
use super::meta;

/// A protocol revision, by its date string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Revision {
    /// `2025-06-18`, served on the legacy (initialize) path.
    V2025_06_18,
    /// `2025-11-25`, served on the legacy (initialize) path.
    V2025_11_25,
    /// `2026-07-28`: stateless, per-request `_meta`, POST only.
    V2026_07_28,
}

impl Revision {
    /// Every revision wymcp knows, oldest first.
    pub const ALL: [Revision; 3] = [Self::V2025_06_18, Self::V2025_11_25, Self::V2026_07_28];

    /// The newest revision.
    pub const LATEST: Revision = Self::V2026_07_28;

    /// The revision's date string, as it appears on the wire.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision a wire string names exactly (case-sensitive), if wymcp knows it.
    #[must_use]
    pub fn parse(s: &str) -> Option<Revision> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The era this revision belongs to.
    #[must_use]
    pub const fn era(self) -> Era {
        match self {
            Self::V2025_06_18 | Self::V2025_11_25 => Era::Legacy,
            Self::V2026_07_28 => Era::Modern,
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which protocol era a request speaks; tagged by classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// 2026-07-28: stateless, every request carries its protocol fields.
    #[default]
    Modern,
    /// 2025-06-18 and 2025-11-25 clients: `initialize` handshake, no `_meta`
    /// protocol fields; served statelessly, never with a session id.
    Legacy,
}

/// The era of a request, from its `MCP-Protocol-Version` header and body:
/// legacy (2025) iff the header names a 2025 revision, or there is no such
/// header and the body has no
/// `params._meta["io.modelcontextprotocol/protocolVersion"]`, or the message
/// is a 2025 handshake (an `initialize` with no such `_meta`) whatever revision its header
/// names; modern otherwise (see [`Classify`](crate::stages::Classify)).
#[must_use]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub fn era_of(headers: &HeaderMap, message: &Value) -> Era {
    match headers.get(MCP_PROTOCOL_VERSION) {
        Some(value) if names_2025_revision(trim_ows(value.as_bytes())) => Era::Legacy,
        Some(value) if is_handshake(message) && date_shaped(trim_ows(value.as_bytes())) => {
            Era::Legacy
        }
        Some(_) => Era::Modern,
        None => era_of_message(message),
    }
}

/// Whether `message` is a 2025 `initialize`: the method `initialize` with
/// no `params._meta["io.modelcontextprotocol/protocolVersion"]`.
///
/// Its `MCP-Protocol-Version` header names no negotiated revision (the
/// handshake is what negotiates one): it is a client's default, or what a
/// `server/discover` probe left in the client's transport before it fell
/// back to `initialize` on the same connection. So a date-shaped header of
/// any year leaves a handshake in the 2025 era, and is not held to the
/// revisions served (the body's `protocolVersion` is negotiated instead).
/// An `initialize` that carries a 2026 `_meta` protocol version is a 2026
/// request, answered as 2026 answers a removed method.
#[must_use]
pub(crate) fn is_handshake(message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("initialize")
        && era_of_message(message) == Era::Legacy
}

/// The era of a message with no header to say it: modern iff it has a
/// `params._meta["io.modelcontextprotocol/protocolVersion"]`, whatever its
/// value. How every stdio line is read (stdio has no header layer), and an
/// HTTP request without `MCP-Protocol-Version`.
#[must_use]
pub(crate) fn era_of_message(message: &Value) -> Era {
    let has_version = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .is_some();
    if has_version {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// A `YYYY-MM-DD` revision string of a year before 2026.
fn names_2025_revision(value: &[u8]) -> bool {
    date_shaped(value) && &value[..4] < b"2026".as_slice()
}

/// A `YYYY-MM-DD` revision string, of any year.
fn date_shaped(value: &[u8]) -> bool {
    value.len() == 10
        && value.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn with(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn the_era_follows_the_header_then_the_body() {
        let modern_body = json!({"params":{"_meta":{meta::PROTOCOL_VERSION:"2026-07-28"}}});
        let bare = json!({"method":"tools/list","id":1});
        assert_eq!(era_of(&with("2025-11-25"), &modern_body), Era::Legacy);
        assert_eq!(era_of(&with(" 2025-06-18 "), &bare), Era::Legacy);
        assert_eq!(era_of(&with("2025-03-26"), &bare), Era::Legacy);
        assert_eq!(era_of(&with("2026-07-28"), &bare), Era::Modern);
        assert_eq!(era_of(&with("v999.0.0"), &bare), Era::Modern);
        assert_eq!(era_of(&with("2025-11-2x"), &bare), Era::Modern);
        assert_eq!(era_of(&HeaderMap::new(), &bare), Era::Legacy);
        assert_eq!(era_of(&HeaderMap::new(), &modern_body), Era::Modern);
        let null_version = json!({"params":{"_meta":{meta::PROTOCOL_VERSION:null}}});
        assert_eq!(era_of(&HeaderMap::new(), &null_version), Era::Modern);
    }

    /// A 2025 `initialize` stays 2025 whatever date its header names (a
    /// client's default, a discover probe's leftover); a header that names
    /// no revision, or an `initialize` with a 2026 `_meta` version, does not.
    #[test]
    fn a_handshake_is_2025_whatever_date_its_header_names() {
        let handshake = json!({"method": "initialize", "id": 1,
                               "params": {"protocolVersion": "2024-11-05"}});
        for header in ["2026-07-28", "2024-11-05", "2025-03-26", "2099-01-01"] {
            assert_eq!(era_of(&with(header), &handshake), Era::Legacy, "{header}");
        }
        assert_eq!(era_of(&with("v999.0.0"), &handshake), Era::Modern);
        let modern = json!({"method": "initialize", "id": 1,
                            "params": {"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}});
        assert_eq!(era_of(&with("2026-07-28"), &modern), Era::Modern);
        let call = json!({"method": "tools/call", "id": 1, "params": {"name": "t"}});
        assert_eq!(era_of(&with("2026-07-28"), &call), Era::Modern);
    }
}
