//! `Classify` (body-bound): tags every parsed message with its JSON-RPC kind
//! and its protocol era, and answers nothing.
//!
//! **Why here.** It sits right after the parse step and before every other
//! wire check, so their rejections know the kind, and through the
//! rejection-id rule, whether they may echo the body's id (auth's 401
//! included). It reads the body, hence body-bound.
//!
//! **The kind**, in clause order:
//!
//! | body | kind |
//! |---|---|
//! | a string `method` and an `id` that is a string or an integer serde_json holds as `i64`/`u64` | [`Request`](MessageKind::Request) |
//! | a string `method` and any other `id` (null, float, boolean, object, array, an integer beyond `u64`) | [`UnidentifiedRequest`](MessageKind::UnidentifiedRequest) |
//! | a string `method` and no `id` | [`Notification`](MessageKind::Notification) |
//! | anything else: a response (`id` beside `result` or `error`), an array, a scalar, no or a non-string `method` | [`Unknown`](MessageKind::Unknown) |
//!
//! The request test is looser than schema validity in everything but the id:
//! `"jsonrpc": "1.0"` with a string id is still a request and keeps its id
//! through Validate's rejection. An integer beyond `u64` could only be held
//! as a float and could not be echoed exactly, so it identifies nothing.
//!
//! **The era**: legacy (2025) iff the `MCP-Protocol-Version`
//! header names a 2025 revision, or there is no such header and the body has
//! no `params._meta["io.modelcontextprotocol/protocolVersion"]`; modern
//! otherwise. "Names a 2025 revision" means a date-shaped revision string
//! (`YYYY-MM-DD`, OWS stripped) before 2026: `2025-11-25`, `2025-06-18` and
//! the `2025-03-26` wymcp does not serve alike, so a 2025 client meets the
//! 2025 answer (a plain 400 for an unserved revision) rather than 2026's
//! `_meta` rules. One exception: an `initialize` without that `_meta` key
//! is the 2025 handshake whatever date-shaped revision its header names
//! (`2026-07-28` included: a dual-era client falling back from a
//! `server/discover` probe may leave it there), and header binding does not
//! hold that header to the revisions served. When the header is repeated
//! the first is read; the singleton-header check refuses the request anyway.
//!
//! The rules are [`Exchange::classify`]'s (the protocol's own, in
//! `protocol::jsonrpc` and `protocol::revision`); this stage runs them.

use crate::exchange::Exchange;
#[cfg(doc)]
use crate::protocol::jsonrpc::MessageKind;
use crate::reply::Flow;
use crate::stage::Stage;

/// Tags the message kind and era; answers nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify;

impl Stage for Classify {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        ex.classify();
        Flow::Continue
    }
}
