//! The per-request protocol fields of 2026-07-28:
//! `params._meta["io.modelcontextprotocol/protocolVersion"]` and
//! `params._meta["io.modelcontextprotocol/clientCapabilities"]`, read and
//! judged without the transport that carried them.
//!
//! Every transport enforces the same two rules, and refuses with the same
//! errors:
//!
//! * [`read_fields`]: `_meta` is well formed (`params` and `_meta` objects,
//!   the version a string, the capabilities an object) and, on a request,
//!   carries both keys; else `-32602` with `data.field`. A notification's
//!   `_meta` requires nothing, but what it carries must be well formed.
//! * [`judge`]: the version names a revision served on the 2026 wire; else
//!   `-32022` with `data.supported` (the served 2026-era revisions, the list
//!   `server/discover` answers) and `data.requested` (the version as sent).
//!   A served 2025 revision is reached through `initialize`, never named in
//!   `_meta`, so a 2026-shaped message naming one is refused too.
//!
//! Over HTTP, `ProtocolFields` judges the version only where the
//! `MCP-Protocol-Version` header agrees with it (a disagreement is header
//! binding's `-32020`); over stdio there is no header, and every version is
//! judged.

use serde_json::{Map, Value, json};

use super::error::{ErrorCode, RpcError};
use super::meta::{CLIENT_CAPABILITIES, PROTOCOL_VERSION};
use super::revision::{Era, Revision};

/// Reads `params._meta`: the version string, if any, or the `-32602` of
/// what is wrong. `required` is true for a request (both keys must be
/// there), false for a notification.
pub(crate) fn read_fields(message: &Value, required: bool) -> Result<Option<&str>, RpcError> {
    problem(message, required).map_err(|problem| {
        RpcError::invalid_params(problem).data(json!({ "field": "params._meta" }))
    })
}

fn problem(message: &Value, required: bool) -> Result<Option<&str>, String> {
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
    let version = match meta.get(PROTOCOL_VERSION) {
        None if !required => None,
        None => return Err(format!("missing `_meta[\"{PROTOCOL_VERSION}\"]`")),
        Some(Value::String(v)) => Some(v.as_str()),
        Some(_) => {
            return Err(format!(
                "malformed `_meta[\"{PROTOCOL_VERSION}\"]`: not a string"
            ));
        }
    };
    match meta.get(CLIENT_CAPABILITIES) {
        None if required => return Err(format!("missing `_meta[\"{CLIENT_CAPABILITIES}\"]`")),
        None | Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(format!(
                "malformed `_meta[\"{CLIENT_CAPABILITIES}\"]`: not an object"
            ));
        }
    }
    Ok(version)
}

/// The served 2026-era revision `version` names, or the `-32022` listing
/// the ones a request may name (`served` is every revision the server
/// serves; only its 2026-era ones count).
pub(crate) fn judge(version: &str, served: &[Revision]) -> Result<Revision, RpcError> {
    let modern = || served.iter().copied().filter(|r| r.era() == Era::Modern);
    if let Some(revision) = Revision::parse(version).filter(|r| modern().any(|m| m == *r)) {
        return Ok(revision);
    }
    let supported: Vec<&str> = modern().map(Revision::as_str).collect();
    Err(RpcError::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version: this server serves {}",
            supported.join(", ")
        ),
    )
    .data(json!({ "supported": supported, "requested": version })))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const V: &str = PROTOCOL_VERSION;
    const C: &str = CLIENT_CAPABILITIES;

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

    #[test]
    fn a_malformed_field_is_invalid_params_naming_meta() {
        let error = read_fields(&json!({"params":{"_meta":[]}}), true).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(error.data, Some(json!({"field": "params._meta"})));
    }

    #[test]
    fn only_a_served_2026_revision_is_judged_served() {
        let served = [Revision::V2025_11_25, Revision::V2026_07_28];
        assert_eq!(judge("2026-07-28", &served), Ok(Revision::V2026_07_28));
        for refused in ["2025-11-25", "v999.0.0", "2026-07-28 ", ""] {
            let error = judge(refused, &served).unwrap_err();
            assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
            assert_eq!(
                error.data,
                Some(json!({"supported": ["2026-07-28"], "requested": refused}))
            );
        }
        let error = judge("2026-07-28", &[Revision::V2025_11_25]).unwrap_err();
        assert_eq!(error.data.unwrap()["supported"], json!([]));
    }
}
