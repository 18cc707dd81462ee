//! `server/discover`: the versions served, the capabilities, the
//! instructions and the caching hint of a 2026-07-28 server (the
//! replacement of `initialize`).

use serde_json::{Map, Value};

use super::finish::Finishing;
use crate::protocol::revision::{Era, Revision};

/// The `DiscoverResult` of a server serving `revisions` (only the 2026
/// ones are listed: a 2025 revision is reached through `initialize`, never
/// named in a request's `_meta`).
/// `capabilities` and `instructions` are the server's.
pub(crate) fn result(
    revisions: &[Revision],
    capabilities: Value,
    instructions: Option<&str>,
    finishing: &Finishing,
) -> Value {
    let mut result = Map::new();
    let supported: Vec<Value> = revisions
        .iter()
        .filter(|r| r.era() == Era::Modern)
        .map(|r| Value::from(r.as_str()))
        .collect();
    result.insert("supportedVersions".into(), Value::Array(supported));
    result.insert("capabilities".into(), capabilities);
    if let Some(instructions) = instructions {
        result.insert("instructions".into(), instructions.into());
    }
    finishing.finish(Era::Modern, Value::Object(result), true)
}
