//! Protocol revisions wymcp knows, and the era a request belongs to.

use std::fmt;

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
