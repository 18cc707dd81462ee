//! Every `_meta` key wymcp reads or writes, once.

// Public for the fuzz targets (`wymcp::fuzzing`), crate-private otherwise.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

/// The revision a 2026-07-28 request speaks (`params._meta`).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The capabilities a 2026-07-28 client declares on each request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The least severe log level a 2026-07-28 request wants sent.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The server's identity, on every 2026-07-28 result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The listen request's id, on every message of its stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The token progress notifications are sent under.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// The tasks extension's identifier (SEP-2663): a key of
/// `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The Skills extension's identifier (SEP-2640), a key of
/// `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
