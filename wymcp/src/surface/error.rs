//! Why a tool, resource, prompt or the server's surface could not be
//! registered.

/// Why a tool, resource, prompt or the server's surface could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SurfaceError {
    /// An item added at run time (through the [`Catalog`](super::Catalog))
    /// is a `&self` method of a state type the server was not given.
    #[error(
        "{item} is a method of `{state}`, which the server was not given: add \
         `.state(…)` with a `{state}` to the builder"
    )]
    MissingState {
        /// The state type's name.
        state: &'static str,
        /// The item (`tool 'add_note'`).
        item: &'static str,
    },
    /// A tool's `x-mcp-header` annotation breaks a rule of the spec.
    #[error("tool `{tool}`: property `{property}`: invalid `x-mcp-header`: {reason}")]
    HeaderAnnotation {
        /// The tool's name.
        tool: String,
        /// The annotated property, as a path from the schema root (`a.b`).
        property: String,
        /// The rule broken.
        reason: String,
    },
    /// A schema given for a tool is not a usable JSON Schema.
    #[error("tool `{tool}`: {which} is not a valid JSON Schema: {reason}")]
    Schema {
        /// The tool's name.
        tool: String,
        /// `inputSchema`, `outputSchema`, or `definition` (the tool's
        /// listing, which could not be serialised).
        which: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
    /// A tool's name breaks the spec's rule: 1 to 128 characters, each an
    /// ASCII letter, digit, `_`, `-` or `.`.
    #[error("tool `{name}`: {reason}")]
    ToolName {
        /// The name, escaped.
        name: String,
        /// The rule broken.
        reason: String,
    },
    /// A scope an item requires is not an RFC 6749 scope token.
    #[error("{item}: the scope `{scope}` is not an RFC 6749 scope token")]
    Scope {
        /// The item (`tool \`name\``, …).
        item: String,
        /// The scope, escaped.
        scope: String,
    },
    /// An item requires scopes but the server authenticates no one, so no
    /// caller could ever use it.
    #[error(
        "{0} requires scopes, but the server has no authenticator: give it one with `ServerBuilder::auth`"
    )]
    ScopesWithoutAuth(String),
    /// A tool was registered without a handler.
    #[error("tool `{0}` has no handler")]
    NoHandler(String),
    /// Two items of one kind share a name (or a URI).
    #[error("{kind} `{name}` is registered twice")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The shared name or URI.
        name: String,
    },
    /// A resource template's URI template cannot be parsed.
    #[error("resource template `{template}`: {reason}")]
    UriTemplate {
        /// The template.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A tool with `x-mcp-header` annotations was added after start-up.
    #[error(
        "tool `{0}` has `x-mcp-header` annotations: register it with the builder, not at run time"
    )]
    HeaderParamsAtRunTime(String),
    /// A skill breaks a rule of the Skills extension or of the Agent
    /// Skills specification, or its files could not be read.
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// The page size is zero.
    #[error("the page size must be at least 1")]
    PageSize,
}

/// Why a skill cannot be served: the file (its path on disk, or its
/// `skill://` URI for a skill given in code) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("skill file `{file}`: {rule}")]
#[non_exhaustive]
pub struct SkillError {
    /// The file or directory.
    pub file: String,
    /// The rule broken.
    pub rule: String,
}

impl SkillError {
    pub(crate) fn new(file: impl Into<String>, rule: impl Into<String>) -> Self {
        SkillError {
            file: file.into(),
            rule: rule.into(),
        }
    }
}
