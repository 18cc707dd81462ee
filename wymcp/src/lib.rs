#![doc = include_str!("../README.md")]
// `deny`, not `forbid`: `memory` holds the crate's one `unsafe` block (a
// measured benchmark needs it; see that module), allowed there alone.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

// Lets the default chain, declared with `#[pipeline]` in this crate, name `::wymcp`.
#[allow(unused_extern_crates)]
extern crate self as wymcp;

// The layers, bottom up (ARCHITECTURE.md; `tests/it/layers.rs` holds them):
// the vocabulary,
pub mod ledger;
mod outage;
mod protocol;
// the parts, each knowing the vocabulary only (the surface composes them),
pub mod auth;
pub mod mrtr;
mod origin;
mod sse;
mod surface;
pub mod tasks;
mod trace;
// the server,
mod server;
// the contract the macro's generated code calls,
mod body;
mod exchange;
mod reply;
mod stage;
// the stages, one file each,
pub mod stages;
// the router, the default chain, and serving it (over HTTP, over stdio).
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
pub mod chain;
pub mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "redis")]
pub mod redis;
mod router;
pub mod serve;
pub mod stdio;
#[cfg(feature = "telemetry")]
pub mod telemetry;
// What an application's tests drive a server with.
pub mod testing;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

/// The guide (`docs/guide.md`), whose code blocks are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide.md")]
pub struct Guide;

pub use axum;
pub use wymcp_macros::{body_bound, handlers, pipeline, tool, tools, wire_check};

pub use exchange::{BodyError, Exchange};
pub use origin::{BoundTo, ClientAddr, IpNet, IpNetError, OriginError};
pub use protocol::error::{ErrorCode, RpcError};
pub use protocol::headers::{HeaderParam, HeaderParamType};
pub use protocol::jsonrpc::MessageKind;
pub use protocol::revision::{Era, Revision};
pub use protocol::schema::SchemaError;
pub use reply::{Flow, Rejection, Response};
pub use serve::{ServeConfig, serve, serve_with};
pub use server::{BuildError, Limits, Server, ServerBuilder};
pub use stage::{Role, Stage, StageInfo, StageKind};
pub use surface::{
    Annotations, AnswerFeed, AnswerRelay, BoxFuture, CacheScope, Catalog, Change, ChangeFeed,
    ChangeRelay, Completer, CompletionRef, CompletionRequest, Completions, Content, Context,
    DEFAULT_PAGE_SIZE, Emitter, HandlerError, Handlers, Icon, IconTheme, Item, LEGACY_LOG_LEVEL,
    LegacyRequests, ListenLimits, LogLevel, MAX_COMPATIBILITY_CHARS, MAX_COMPLETION_VALUES,
    MAX_DESCRIPTION_CHARS, MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_KEYS, MAX_SKILL_BYTES,
    MAX_SKILL_DEPTH, MAX_SKILL_FILES, MAX_SKILLS, MAX_SKILLS_BYTES, NoArgs, Prompt, PromptArgs,
    PromptArgument, PromptKind, PromptMessage, PromptResult, PromptRole, Resource,
    ResourceContents, ResourceKind, ResourceTemplate, ServerInfo, Skill, SkillError, Structured,
    SurfaceError, TaskLimits, TaskSupport, TemplateKind, TemplateVars, Tool, ToolKind, ToolOutput,
    ToolResult,
};
