//! The server surface: what a client reaches once a request has passed the
//! chain — tools, resources and resource templates, prompts, completion,
//! `subscriptions/listen`, `server/discover` and the 2025 legacy methods —
//! and the handler API those are written against.
//!
//! The surface answers a transport-free call ([`call`]): it never sees an
//! exchange, HTTP parts or a socket. The HTTP chain's
//! [`Dispatch`](crate::stages::Dispatch) hands it one; another transport
//! can hand it the same.
//!
//! A handler is an `async` closure taking its (typed) arguments and a
//! [`Context`]; it answers with a result type ([`ToolResult`],
//! [`PromptResult`], a list of [`ResourceContents`]) or a [`HandlerError`].
//! The surface turns both into the answer of the request's era: on
//! 2026-07-28 every result carries `resultType` and
//! `_meta["io.modelcontextprotocol/serverInfo"]`, and list, read and
//! discover results carry `ttlMs`/`cacheScope`; a 2025 client gets plain
//! 2025 results.
//!
//! Registries live in a [`Catalog`], shared by the server and every
//! handler's context, so tools, prompts and resources can be added and
//! removed at run time; each change is announced to `subscriptions/listen`
//! streams.
//!
//! The files, from the bottom up: `error`, `content`, `notify`, `finish`,
//! `bus` (the change bus), `listen` (the stream that hears it) and
//! `context` know nothing of the others but each other's vocabulary;
//! `call` is the transport-free call; `item` is what every registered item
//! has (and its setters, once); `tool`, `resource`,
//! `prompt` and `completion` define what they register and how a call of
//! theirs is answered; `handlers` bundles them, as a `#[wymcp::handlers]`
//! impl declares them; `skills` (the Skills extension: skills checked at
//! build, their files resources, `skills/list`, `skills/get`,
//! `resources/directory/read`); `catalog` holds them; `methods` is the method table
//! and the [`Surface`] a server holds.

mod bus;
pub(crate) mod call;
mod catalog;
mod completion;
mod content;
mod context;
mod discover;
mod error;
mod finish;
mod handlers;
mod item;
mod legacy;
mod listen;
mod methods;
pub(crate) mod mid_call;
mod notify;
mod pagination;
mod prompt;
mod resource;
mod scopes;
mod skills;
mod strings;
mod task;
mod tool;

pub(crate) use bus::ChangeBus;
pub use bus::{Change, ChangeFeed, ChangeRelay};
pub use catalog::Catalog;
pub use completion::{
    Completer, CompletionRef, CompletionRequest, Completions, MAX_COMPLETION_VALUES,
};
pub use content::{Annotations, Content, Icon, IconTheme, PromptRole, ResourceContents};
pub use context::{BoxFuture, Context, HandlerError};
pub use error::{SkillError, SurfaceError};
pub(crate) use finish::CachePolicy;
pub use finish::{CacheScope, ServerInfo};
pub use handlers::Handlers;
pub use item::Item;
pub(crate) use item::MethodOf;
pub use listen::ListenLimits;
pub(crate) use listen::ListenStream;
pub use methods::DEFAULT_PAGE_SIZE;
pub(crate) use methods::{Surface, SurfaceBuilder};
pub use mid_call::{AnswerFeed, AnswerRelay, LegacyRequests};
pub(crate) use notify::DEFAULT_NOTIFICATION_BYTES_PER_REQUEST;
#[cfg(test)]
pub(crate) use notify::Notifications;
pub use notify::{Emitter, LEGACY_LOG_LEVEL, LogLevel};
pub use prompt::{Prompt, PromptArgs, PromptArgument, PromptKind, PromptMessage, PromptResult};
pub use resource::{Resource, ResourceKind, ResourceTemplate, TemplateKind, TemplateVars};
pub use skills::{
    MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_KEYS,
    MAX_SKILL_BYTES, MAX_SKILL_DEPTH, MAX_SKILL_FILES, MAX_SKILLS, MAX_SKILLS_BYTES, Skill,
};
pub use task::TaskLimits;
#[cfg(test)]
pub(crate) use tool::UNCHECKED;
pub use tool::{NoArgs, Structured, TaskSupport, Tool, ToolKind, ToolOutput, ToolResult};

pub(crate) use completion::boxed as boxed_completion;
pub(crate) use legacy::negotiate;
