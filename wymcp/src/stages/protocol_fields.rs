//! `ProtocolFields` (wire check): enforces the per-request protocol fields
//! of 2026-07-28, `params._meta["io.modelcontextprotocol/protocolVersion"]`
//! and `params._meta["io.modelcontextprotocol/clientCapabilities"]`, and
//! judges whether the version named is served, through
//! [`Exchange::judge_protocol_fields`], which establishes
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
//! Both rules, and their errors, are `protocol::fields`'s, which the stdio
//! transport enforces too; what this stage adds is HTTP's: the status, and
//! which version the header lets it judge.
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

use crate::exchange::Exchange;
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::Stage;

/// Enforces the per-request protocol fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProtocolFields;

impl Stage for ProtocolFields {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        match ex.judge_protocol_fields() {
            Ok(_) => Flow::Continue,
            Err(error) => ex.reject(Rejection::of(StatusCode::BAD_REQUEST, error)),
        }
    }
}
