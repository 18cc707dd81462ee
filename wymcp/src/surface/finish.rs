//! Completing a result for the wire: what 2026-07-28 adds to every result
//! (`resultType`, the server's identity in `_meta`, the caching hint), and
//! the two answers serialised straight onto the wire without a `Value` tree
//! in between (a tool result, a list page).

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::content::Icon;
use crate::protocol::meta::SERVER_INFO;
use crate::protocol::revision::Era;

/// Who the server says it is: `Implementation` in the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The implementation's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the server does, for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons a client may show for the server.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The server's website.
    #[serde(rename = "websiteUrl", skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Default for ServerInfo {
    fn default() -> Self {
        ServerInfo {
            name: "wymcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            description: None,
            icons: Vec::new(),
            website_url: None,
        }
    }
}

/// Who may reuse a cached result: `cacheScope` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheScope {
    /// Any client or intermediary may reuse it across authorization contexts.
    Public,
    /// Reused only within the same authorization context (the default).
    #[default]
    Private,
}

impl CacheScope {
    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// The caching hint put on discover, list and read results (`ttlMs`,
/// `cacheScope`). The default, `ttlMs: 0` and `private`, tells a client the
/// result is stale at once: right for a catalog that can change at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CachePolicy {
    /// How long, in milliseconds, a client may reuse the result.
    pub(crate) ttl_ms: u64,
    /// Who may reuse it.
    pub(crate) scope: CacheScope,
}

/// What a result needs to be completed for the wire: the server's identity,
/// serialised once when the server is built (not once per result), and its
/// caching hint.
#[derive(Debug)]
pub(crate) struct Finishing {
    info: Value,
    /// `{"io.modelcontextprotocol/serverInfo": info}`, the `_meta` of a
    /// result serialised straight onto the wire, as its bytes: written by
    /// every tool call, so serialised here once.
    meta: Box<RawValue>,
    cache: CachePolicy,
}

impl Finishing {
    pub(crate) fn new(info: &ServerInfo, cache: CachePolicy) -> Self {
        // A struct of strings always serialises.
        let info = serde_json::to_value(info).unwrap_or(Value::Null);
        let mut meta = Map::new();
        meta.insert(SERVER_INFO.into(), info.clone());
        let meta = serde_json::value::to_raw_value(&meta).unwrap_or_default();
        Finishing { info, meta, cache }
    }

    /// Completes a result for the wire: on 2026-07-28, `resultType` (unless
    /// the handler set one), the server's identity in `_meta`, and the
    /// caching hint when `cacheable`; a 2025 result is left as it is.
    pub(crate) fn finish(&self, era: Era, result: Value, cacheable: bool) -> Value {
        let mut object = match result {
            Value::Object(object) => object,
            other => {
                let mut object = Map::new();
                object.insert("value".into(), other);
                object
            }
        };
        if era == Era::Legacy {
            return Value::Object(object);
        }
        object
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO.into(), self.info.clone());
        }
        if cacheable {
            object.insert("ttlMs".into(), Value::from(self.cache.ttl_ms));
            object.insert("cacheScope".into(), Value::from(self.cache.scope.as_str()));
        }
        Value::Object(object)
    }

    /// The server's identity as it appears in results.
    pub(crate) fn info(&self) -> &Value {
        &self.info
    }

    /// The `_meta` a result serialised straight onto the wire carries: the
    /// server's identity alone.
    pub(crate) fn meta(&self) -> ServerMeta<'_> {
        ServerMeta(&self.meta)
    }

    /// One page of a list, completed as [`finish`](Self::finish) completes a
    /// cacheable result, ready to serialise.
    pub(crate) fn list<'a, T>(
        &'a self,
        era: Era,
        key: &'static str,
        items: &'a [T],
        next: Option<String>,
    ) -> WireList<'a, T> {
        WireList {
            key,
            items,
            next,
            finishing: (era == Era::Modern).then_some(self),
        }
    }
}

/// One page of a list result (`tools/list`, `resources/list`, …) as it goes
/// on the wire: the items under `key`, `nextCursor` when there is more, and
/// on 2026-07-28 what [`Finishing::finish`] adds to a cacheable result.
pub(crate) struct WireList<'a, T> {
    key: &'static str,
    items: &'a [T],
    next: Option<String>,
    /// `None` for a 2025 result, which is left as it is.
    finishing: Option<&'a Finishing>,
}

impl<T: Serialize> Serialize for WireList<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        if let Some(finishing) = self.finishing {
            map.serialize_entry("resultType", "complete")?;
            map.serialize_entry("_meta", &finishing.meta())?;
            map.serialize_entry("ttlMs", &finishing.cache.ttl_ms)?;
            map.serialize_entry("cacheScope", finishing.cache.scope.as_str())?;
        }
        map.end()
    }
}

/// `_meta` holding only the server's identity, serialised once by
/// [`Finishing::new`].
#[derive(Clone, Copy, Serialize)]
#[serde(transparent)]
pub(crate) struct ServerMeta<'a>(&'a RawValue);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A list page serialised straight onto the wire is the cacheable result
    /// the general finish makes of it, in both eras, with and without a
    /// next cursor.
    #[test]
    fn a_wire_list_is_the_finished_one() {
        let finishing = Finishing::new(
            &ServerInfo::default(),
            CachePolicy {
                ttl_ms: 60_000,
                scope: CacheScope::Public,
            },
        );
        let items = [json!({"name": "a"}), json!({"name": "b", "x": [1, 2]})];
        for era in [Era::Modern, Era::Legacy] {
            for next in [None, Some("p1.2".to_owned())] {
                let wire = serde_json::to_value(finishing.list(era, "tools", &items, next.clone()))
                    .unwrap();
                let mut plain = Map::new();
                plain.insert("tools".into(), Value::Array(items.to_vec()));
                if let Some(next) = &next {
                    plain.insert("nextCursor".into(), json!(next));
                }
                let finished = finishing.finish(era, Value::Object(plain), true);
                assert_eq!(wire, finished, "{era:?} {next:?}");
            }
        }
    }
}
