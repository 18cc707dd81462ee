//! `ProtocolFields` (wire check): enforces the per-request protocol fields
//! of 2026-07-28, `params._meta["io.modelcontextprotocol/protocolVersion"]`
//! and `params._meta["io.modelcontextprotocol/clientCapabilities"]`, and
//! judges whether the version named is served. Sets
//! [`Exchange::revision`].
//!
//! **Why here.** After the singleton-header check, which guarantees at most
//! one `MCP-Protocol-Version` header to read; before header binding, so that
//! binding's protocol-version row compares against a body value known to be
//! a string, and a malformed `_meta` meets its own `-32602` first.
//!
//! **What it reads.** Modern-era requests and notifications only: legacy
//! (2025) messages carry no protocol fields, and an unidentified request or
//! an unknown body gives it nothing to read (Validate answers those).
//!
//! **What it answers.**
//!
//! * `400`, `-32602` when `_meta` is malformed (`params` or `_meta` not an
//!   object, the version not a string, the capabilities not an object) or,
//!   on a request, when a required key is missing. A notification's `_meta`
//!   requires nothing, but what it carries must be well-formed.
//! * `400`, `-32022` with `data.supported` and `data.requested` (the
//!   body's version, as sent) when the version is a string the server does
//!   not serve on the 2026 wire. `supported` lists the served 2026-era
//!   revisions, the ones a request may name in `_meta`, the same list
//!   `server/discover` answers with (the conformance suite holds the two
//!   together); a served 2025 revision is reached through `initialize`, so
//!   a 2026-shaped message naming one is refused too.
//!
//! **The one refinement of the seed.** When the `MCP-Protocol-Version`
//! header and the body's version disagree, the request is a header mismatch
//! (`-32020`, header binding's answer) whatever either names: this stage
//! judges support only for a version the header agrees with, or where there
//! is no header row to bind (a notification sent without the header). A
//! request without the header is likewise left to header binding, whose
//! missing-header row answers it. The official conformance suite requires
//! this order: header `2026-07-28` with body `v999.0.0` is `400`/`-32020`;
//! header and body both `v999.0.0` is `400`/`-32022`.

use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::headers::{MCP_PROTOCOL_VERSION, plain_text};
use crate::protocol::jsonrpc::MessageKind;
use crate::protocol::revision::{Era, Revision};
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::Stage;

use crate::protocol::meta::CLIENT_CAPABILITIES as CLIENT_CAPABILITIES_KEY;
use crate::protocol::meta::PROTOCOL_VERSION as PROTOCOL_VERSION_KEY;

/// Enforces the per-request protocol fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProtocolFields;

impl Stage for ProtocolFields {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        if ex.era != Era::Modern {
            return Flow::Continue;
        }
        let Some(kind @ (MessageKind::Request | MessageKind::Notification)) = ex.kind else {
            return Flow::Continue;
        };
        let Some(message) = ex.message.as_ref() else {
            return Flow::Continue;
        };
        let version = match read_fields(message, kind == MessageKind::Request) {
            Ok(version) => version,
            Err(problem) => {
                return ex.reject(
                    Rejection::new(StatusCode::BAD_REQUEST, ErrorCode::INVALID_PARAMS, problem)
                        .data(json!({ "field": "params._meta" })),
                );
            }
        };
        let Some(version) = version else {
            return Flow::Continue;
        };
        let header = ex.parts.headers.get(MCP_PROTOCOL_VERSION);
        let judge = match header {
            Some(value) => plain_text(value) == Ok(version),
            None => kind == MessageKind::Notification,
        };
        if !judge {
            // The header disagrees (or a request lacks it): header binding's.
            return Flow::Continue;
        }
        let server = ex.server();
        // The revisions a request may name in `_meta`: the served 2026 ones
        // (a 2025 revision is reached through `initialize`, never named
        // there); the same list `server/discover` answers.
        let supported: Vec<Revision> = server
            .revisions()
            .iter()
            .copied()
            .filter(|r| r.era() == Era::Modern)
            .collect();
        if let Some(revision) = Revision::parse(version).filter(|r| supported.contains(r)) {
            ex.revision = Some(revision);
            return Flow::Continue;
        }
        let supported: Vec<&str> = supported.iter().map(|r| r.as_str()).collect();
        let data = json!({ "supported": supported, "requested": version });
        ex.reject(
            Rejection::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                format!(
                    "unsupported protocol version: this server serves {}",
                    supported.join(", ")
                ),
            )
            .data(data),
        )
    }
}

/// Reads `params._meta`: the version string, if any, or what is wrong.
fn read_fields(message: &Value, required: bool) -> Result<Option<&str>, String> {
    let meta = match message.get("params") {
        None | Some(Value::Null) if !required => return Ok(None),
        None | Some(Value::Null) => {
            return Err("missing `params._meta`: a request carries its protocol fields".into());
        }
        Some(Value::Object(params)) => params.get("_meta"),
        Some(_) => return Err("malformed `params`: not an object".into()),
    };
    let meta: &Map<String, Value> = match meta {
        None if !required => return Ok(None),
        None => return Err("missing `params._meta`: a request carries its protocol fields".into()),
        Some(Value::Object(meta)) => meta,
        Some(_) => return Err("malformed `params._meta`: not an object".into()),
    };
    let version = match meta.get(PROTOCOL_VERSION_KEY) {
        None if !required => None,
        None => return Err(format!("missing `_meta[\"{PROTOCOL_VERSION_KEY}\"]`")),
        Some(Value::String(v)) => Some(v.as_str()),
        Some(_) => {
            return Err(format!(
                "malformed `_meta[\"{PROTOCOL_VERSION_KEY}\"]`: not a string"
            ));
        }
    };
    match meta.get(CLIENT_CAPABILITIES_KEY) {
        None if required => return Err(format!("missing `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]`")),
        None | Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(format!(
                "malformed `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]`: not an object"
            ));
        }
    }
    Ok(version)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const V: &str = PROTOCOL_VERSION_KEY;
    const C: &str = CLIENT_CAPABILITIES_KEY;

    #[test]
    fn a_request_needs_both_keys() {
        let ok = json!({"params":{"_meta":{V:"2026-07-28", C:{}}}});
        assert_eq!(read_fields(&ok, true), Ok(Some("2026-07-28")));
        for bad in [
            json!({}),
            json!({"params":null}),
            json!({"params":[]}),
            json!({"params":{}}),
            json!({"params":{"_meta":[]}}),
            json!({"params":{"_meta":{C:{}}}}),
            json!({"params":{"_meta":{V:1, C:{}}}}),
            json!({"params":{"_meta":{V:"2026-07-28"}}}),
            json!({"params":{"_meta":{V:"2026-07-28", C:true}}}),
        ] {
            assert!(read_fields(&bad, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_notification_needs_nothing_but_well_formed_fields() {
        for ok in [
            json!({}),
            json!({"params":{}}),
            json!({"params":{"_meta":{}}}),
            json!({"params":{"_meta":{C:{}}}}),
        ] {
            assert_eq!(read_fields(&ok, false), Ok(None), "{ok}");
        }
        assert_eq!(
            read_fields(&json!({"params":{"_meta":{V:"x"}}}), false),
            Ok(Some("x"))
        );
        for bad in [
            json!({"params":5}),
            json!({"params":{"_meta":"x"}}),
            json!({"params":{"_meta":{V:null}}}),
            json!({"params":{"_meta":{C:[]}}}),
        ] {
            assert!(read_fields(&bad, false).is_err(), "{bad}");
        }
    }
}
