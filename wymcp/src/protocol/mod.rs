//! The protocol's vocabulary, knowing no server: JSON-RPC messages and their
//! ids, the message kinds, error codes, every `_meta` key, the standard
//! header values, the revisions and their schemas, and how ids are minted
//! and the time read.
//!
//! Everything above this layer (the parts, the server, the stages) speaks
//! these words; nothing here knows who speaks them.

pub(crate) mod error;
pub(crate) mod fields;
pub(crate) mod headers;
pub(crate) mod ids;
pub(crate) mod json;
pub(crate) mod jsonrpc;
#[cfg(feature = "fuzzing")]
pub mod meta;
#[cfg(not(feature = "fuzzing"))]
pub(crate) mod meta;
pub(crate) mod net;
pub(crate) mod revision;
pub(crate) mod schema;
pub(crate) mod subset;
pub(crate) mod text;
pub(crate) mod validation;
