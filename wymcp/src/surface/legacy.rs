//! The 2025 methods a stateless server still answers for 2025-06-18 and
//! 2025-11-25 clients: `initialize` (version negotiation, capabilities,
//! identity; the `Mcp-Session-Id` token of what the client declared, minted
//! by [`mid_call`](super::mid_call), is no session), `ping` and
//! `logging/setLevel`.
//!
//! What a stateless server cannot give a 2025 client: a level set with
//! `logging/setLevel` is not remembered (it is acknowledged, and log
//! messages at `info` and above are sent on a tool call's own stream).
//! Notifications outside a request (`list_changed`, `resources/updated`
//! for what `resources/subscribe` named) go on the standalone GET stream
//! the session token names (see [`listen`](super::listen)); a subscribe is
//! not remembered, it reaches the streams open when it is made.
//! Server-to-client requests (sampling, elicitation, roots) are made on a
//! call's own stream ([`mid_call`](super::mid_call)).

use serde_json::{Map, Value, json};

use super::context::HandlerError;
use super::finish::Finishing;
use super::notify::LogLevel;
use crate::protocol::revision::{Era, Revision};
use crate::protocol::text::truncated;

/// The revision an `initialize` with these `params` negotiates among the
/// served `revisions`: the `protocolVersion` asked for when it is a served
/// 2025 revision, else the latest 2025 revision served; `None` when none is
/// served. What [`initialize`] answers, and what a transport with a
/// connection to remember it on (stdio) holds the client's later messages to.
pub(crate) fn negotiate(revisions: &[Revision], params: Option<&Value>) -> Option<Revision> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let mut legacy = revisions.iter().copied().filter(|r| r.era() == Era::Legacy);
    requested
        .and_then(|v| legacy.clone().find(|r| r.as_str() == v))
        .or_else(|| legacy.next_back())
}

/// The `InitializeResult` of the revision `chosen` (what [`negotiate`]
/// chose). `capabilities` and `instructions` are the server's: every part
/// is the server's but the revision, so a server renders it once per
/// revision served, when it is built.
pub(crate) fn initialize_result(
    chosen: Revision,
    capabilities: Value,
    instructions: Option<&str>,
    finishing: &Finishing,
) -> Value {
    let mut result = Map::new();
    result.insert("protocolVersion".into(), chosen.as_str().into());
    result.insert("capabilities".into(), capabilities);
    result.insert("serverInfo".into(), finishing.info().clone());
    if let Some(instructions) = instructions {
        result.insert("instructions".into(), instructions.into());
    }
    Value::Object(result)
}

/// What an `initialize` is answered by a server serving no 2025 revision:
/// -32602 listing what it serves.
pub(crate) fn unserved(revisions: &[Revision], params: Option<&Value>) -> HandlerError {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    HandlerError::InvalidParams {
        message: "this server serves no initialize-based protocol version".into(),
        data: Some(json!({
            "supported": revisions.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "requested": requested,
        })),
    }
}

/// `logging/setLevel`: checks the level and acknowledges it.
pub(crate) fn set_level(params: Option<&Value>) -> Result<Value, HandlerError> {
    let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
    match level.and_then(LogLevel::parse) {
        Some(_) => Ok(json!({})),
        None => Err(HandlerError::invalid_params(format!(
            "invalid log level {}",
            level.map_or_else(|| "(none)".to_owned(), |l| format!("`{}`", truncated(l)))
        ))),
    }
}
