//! The default POST chain: every stage a POST passes through, in the one order
//! that makes each stage's precondition true.
//!
//! Why this order:
//!
//! * **OriginCheck** comes first, before anything is parsed: nothing has
//!   looked at `Origin` or `Host` yet, and a request from a disallowed origin
//!   must not get as far as having its body read.
//! * **The parse step** and **Classify** come next, between the origin check
//!   and the remaining wire checks. They are body-bound: they read the body
//!   so that the wire checks after them know the message kind and the era,
//!   and so that their rejections can carry the body's id under the
//!   rejection-id rule.
//! * **Auth** is the first wire check to read that classification (its 401
//!   echoes a request's id).
//! * **SingletonHeaders** proves there is at most one `MCP-Protocol-Version`
//!   (and one of each other singleton header) before anything reads them.
//! * **ProtocolFields** then proves `_meta` is well formed and the body's
//!   protocol version is a string naming a served revision, so
//!   **HeaderBinding** has a known-good body value to compare the headers
//!   with, and a malformed `_meta` meets its own -32602 first.
//! * **Validate** runs last before dispatch, so every wire check and
//!   body-bound stage answers first; past it the body is trusted.
//! * **Dispatch** sends the message to its handler.
//!
//! The order is not derived, it is written here by hand, and
//! `#[pipeline]` holds it to the invariant at compile time: every stage
//! before `Validate` is a wire check or declares why it reads the body, and
//! no wire check sits after `Validate`. [`post::CHAIN`] is the table of it.
//!
//! POST runs the whole chain. A GET (a 2025 client's standalone stream,
//! served when the server announces changes) runs its wire checks only,
//! in this order, through [`post::handle_get`]: it has no body, so the
//! parse step, Classify, Validate and Dispatch never see it. Every other
//! verb is answered 405 by [`post::router`] and runs nothing here.

/// The default chain. [`post::router`] serves it; [`post::handle`] runs one
/// request through it.
#[wymcp_macros::pipeline]
pub mod post {
    use crate::exchange::Exchange;
    use crate::reply::Flow;
    use crate::stages;

    /// Origin and Host, before anything is parsed.
    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    /// The parse step.
    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    /// Classification: the message kind and the era.
    #[body_bound(
        reason = "tags the message kind from method and id, and the era (2026-07-28 or legacy 2025) from the protocol-version header and _meta"
    )]
    pub type Classify = stages::Classify;

    /// Authentication.
    #[wire_check]
    pub type Auth = stages::Auth;

    /// Singleton-header cardinality.
    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;

    /// Protocol-fields enforcement.
    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;

    /// Header binding.
    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;

    /// Schema validation: past it, the body is trusted (a 2025 client's
    /// JSON-RPC response is held to the response envelope).
    pub type Validate = stages::Validate;

    /// Method → its handler; a 2025 client's response → the call waiting
    /// for it.
    pub type Dispatch = stages::Dispatch;
}
