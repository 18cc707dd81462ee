//! `server/discover`: the versions served, the capabilities, the
//! instructions and the caching hint of a 2026-07-28 server (the
//! replacement of `initialize`).

use serde_json::{Map, Value};

use super::Surface;
use crate::revision::{Era, Revision};

/// The `DiscoverResult` of a server serving `revisions` (only the 2026
/// ones are listed: a 2025 revision is reached through `initialize`, never
/// named in a request's `_meta`).
pub(crate) fn result(surface: &Surface, revisions: &[Revision]) -> Value {
    let mut result = Map::new();
    let supported: Vec<Value> = revisions
        .iter()
        .filter(|r| r.era() == Era::Modern)
        .map(|r| Value::from(r.as_str()))
        .collect();
    result.insert("supportedVersions".into(), Value::Array(supported));
    result.insert("capabilities".into(), surface.capabilities(Era::Modern));
    if let Some(instructions) = &surface.instructions {
        result.insert("instructions".into(), instructions.clone().into());
    }
    surface.finish(Era::Modern, Value::Object(result), true)
}
