//! Internals the fuzz targets (and the project's own tests of the same
//! functions) reach, behind the non-default `fuzzing` feature. Not a public
//! API: it may change in any release.

pub use crate::mrtr::{Binding, Sealer, UnsealError, params_digest};
pub use crate::protocol::headers::{
    Base64Error, HeaderParam, HeaderParamType, HeaderValueError, MCP_METHOD, MCP_NAME,
    MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION, base64_decode, base64_encode, decoded_text,
    encode_value, plain_text, trim_ows,
};
pub use crate::protocol::jsonrpc::{classify, is_request_id};
pub use crate::protocol::meta;
pub use crate::protocol::revision::era_of;

/// The `x-mcp-header` rows `HeaderBinding` checks for the tool `tool`.
#[must_use]
pub fn header_params<'s>(server: &'s crate::Server, tool: &str) -> &'s [HeaderParam] {
    server.header_params(tool)
}

/// The sealer of a server's MRTR `requestState`.
#[must_use]
pub fn sealer(server: &crate::Server) -> &Sealer {
    server.sealer()
}

/// Sets an exchange's facts as the stages before the one under test would
/// leave them, whatever its request says: for the project's tests and
/// benchmarks of one stage in isolation. A chain's stages establish them
/// by their rules (see [`Exchange`](crate::Exchange)).
pub fn set_facts(
    ex: &mut crate::Exchange<'_>,
    bytes: bytes::Bytes,
    message: Option<serde_json::Value>,
    kind: Option<crate::MessageKind>,
    era: crate::Era,
    revision: Option<crate::Revision>,
) {
    ex.set_facts(bytes, message, kind, era, revision);
}
