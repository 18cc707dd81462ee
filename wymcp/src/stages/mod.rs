//! The stages of wymcp's default POST chain, one file each, named as in the
//! chain. See [`chain::post`](crate::chain::post) for their order and why.
//!
//! Each is an adapter between the [`Exchange`](crate::Exchange) and the
//! part that owns its rule; no stage imports another.

mod auth;
mod classify;
mod dispatch;
mod header_binding;
mod origin_check;
mod parse_body;
mod protocol_fields;
mod singleton_headers;
mod validate;

pub use auth::Auth;
pub use classify::Classify;
pub use dispatch::Dispatch;
pub(crate) use dispatch::respond;
pub use header_binding::HeaderBinding;
pub use origin_check::OriginCheck;
pub use parse_body::parse_body;
pub use protocol_fields::ProtocolFields;
pub use singleton_headers::SingletonHeaders;
pub use validate::Validate;
