#![doc = include_str!("../../README.md")]
// `deny`, not `forbid`: `memory` holds the crate's one `unsafe` block (a
// measured benchmark needs it; see that module), allowed there alone.
#![deny(unsafe_code)]

// Lets the default chain, declared with `#[pipeline]` in this crate, name `::wymcp`.
#[allow(unused_extern_crates)]
extern crate self as wymcp;

pub use axum;

pub mod auth;
pub mod chain;
pub mod exchange;
pub mod headers;
pub mod listen;
pub mod memory;
pub mod mrtr;
pub mod response;
pub mod revision;
pub mod schema;
pub mod serve;
pub mod server;
pub mod stage;
pub mod stages;
pub mod stream;
pub mod surface;

mod router;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use exchange::{Exchange, MessageKind, Principal};
pub use response::{Rejection, Response};
pub use revision::{Era, Revision};
pub use serve::{ServeConfig, serve, serve_with};
pub use server::{BuildError, Limits, Server, ServerBuilder};
pub use stage::{Flow, Role, Stage, StageInfo, StageKind};
pub use surface::{
    Catalog, Content, Context, HandlerError, Prompt, PromptResult, Resource, ResourceContents,
    ResourceTemplate, Tool, ToolResult,
};
pub use wymcp_macros::{body_bound, pipeline, wire_check};
