//! The server surface: what a client reaches once a request has passed the
//! chain — tools, resources and resource templates, prompts, completion,
//! `server/discover` and the 2025 legacy methods — and the handler API those
//! are written against.
//!
//! A handler is an `async` closure taking its (typed) arguments and a
//! [`Context`]; it answers with a result type ([`ToolResult`],
//! [`PromptResult`], a list of [`ResourceContents`]) or a [`HandlerError`].
//! [`Dispatch`](crate::stages::Dispatch) turns both into the wire answer of
//! the request's era: on 2026-07-28 every result carries `resultType` and
//! `_meta["io.modelcontextprotocol/serverInfo"]`, and list, read and discover
//! results carry `ttlMs`/`cacheScope`; a 2025 client gets plain 2025 results.
//!
//! Registries live in a [`Catalog`], shared by the server and every handler's
//! context, so tools, prompts and resources can be added and removed at run
//! time; each change is announced to `subscriptions/listen` streams.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

pub use crate::listen::Change;
use crate::listen::ChangeBus;

use crate::revision::Era;
use crate::server::{BuildError, ServerBuilder};

mod completion;
mod content;
mod context;
pub(crate) mod discover;
pub(crate) mod legacy;
pub(crate) mod pagination;
mod prompt;
mod resource;
mod tool;

pub use crate::stream::LogLevel;
pub use completion::{CompletionRef, CompletionRequest, Completions};
pub use content::{Content, ResourceContents};
pub use context::{CLIENT_CAPABILITIES_KEY, Context, HandlerError};
pub use prompt::{Prompt, PromptArgument, PromptMessage, PromptResult, Role};
pub use resource::{Resource, ResourceTemplate, TemplateVars};
pub(crate) use tool::WireToolResult;
pub use tool::{NoArgs, Tool, ToolResult};

use crate::headers::HeaderParam;

pub(crate) use completion::CompletionFn;
pub(crate) use resource::Reader;

/// A boxed, sendable future, as handlers return them once registered.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The `_meta` key of the server's identity on every 2026 result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Who the server says it is: `Implementation` in the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// The implementation's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Default for ServerInfo {
    fn default() -> Self {
        ServerInfo {
            name: "wymcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
        }
    }
}

/// Who may reuse a cached result: `cacheScope` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheScope {
    /// Any client or intermediary may reuse it across authorization contexts.
    Public,
    /// Reused only within the same authorization context (the default).
    #[default]
    Private,
}

impl CacheScope {
    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// The caching hint put on discover, list and read results (`ttlMs`,
/// `cacheScope`). The default, `ttlMs: 0` and `private`, tells a client the
/// result is stale at once: right for a catalog that can change at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CachePolicy {
    /// How long, in milliseconds, a client may reuse the result.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

/// Why a tool, resource, prompt or the server's surface could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SurfaceError {
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
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
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
    /// The page size is zero.
    #[error("the page size must be at least 1")]
    PageSize,
}

#[derive(Debug, Default)]
struct Registries {
    tools: Vec<Arc<tool::Registered>>,
    prompts: Vec<Arc<Prompt>>,
    resources: Vec<Arc<Resource>>,
    templates: Vec<Arc<resource::RegisteredTemplate>>,
}

/// The tools, prompts, resources and resource templates a server offers,
/// shared by the server and every handler (through
/// [`Context::catalog`]), changeable at run time. Each change is published
/// on the server's [`ChangeBus`], so open `subscriptions/listen` streams
/// hear it.
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<RwLock<Registries>>,
    changes: ChangeBus,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new(ChangeBus::new())
    }
}

impl Catalog {
    /// An empty catalog announcing its changes on `changes`.
    pub(crate) fn new(changes: ChangeBus) -> Self {
        Catalog {
            inner: Arc::default(),
            changes,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Registries> {
        // A panicking writer leaves only whole `Vec` pushes or removals behind.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Registries> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn announce(&self, change: Change) {
        // No listener is not an error: nobody listens.
        self.changes.publish(change);
    }

    /// Receives every later change of the catalog.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Announces that the content of the resource at `uri` changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.announce(Change::ResourceUpdated(uri.into()));
    }

    /// Adds a tool, checking it as the builder does. A tool with
    /// `x-mcp-header` annotations must be registered with the builder, where
    /// `HeaderBinding`'s table is made; added later it is refused.
    pub fn add_tool(&self, tool: Tool) -> Result<(), SurfaceError> {
        let registered = Arc::new(tool.register()?);
        if !registered.header_params.is_empty() {
            return Err(SurfaceError::HeaderParamsAtRunTime(
                registered.name().to_owned(),
            ));
        }
        self.insert_tool(registered)
    }

    fn insert_tool(&self, registered: Arc<tool::Registered>) -> Result<(), SurfaceError> {
        {
            let mut registries = self.write();
            if registries
                .tools
                .iter()
                .any(|t| t.name() == registered.name())
            {
                return Err(SurfaceError::Duplicate {
                    kind: "tool",
                    name: registered.name().to_owned(),
                });
            }
            registries.tools.push(registered);
        }
        self.announce(Change::ToolsListChanged);
        Ok(())
    }

    /// Removes the tool named `name`; whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = {
            let mut registries = self.write();
            let before = registries.tools.len();
            registries.tools.retain(|t| t.name() != name);
            registries.tools.len() != before
        };
        if removed {
            self.announce(Change::ToolsListChanged);
        }
        removed
    }

    /// Adds a prompt.
    pub fn add_prompt(&self, prompt: Prompt) -> Result<(), SurfaceError> {
        {
            let mut registries = self.write();
            if registries.prompts.iter().any(|p| p.name == prompt.name) {
                return Err(SurfaceError::Duplicate {
                    kind: "prompt",
                    name: prompt.name,
                });
            }
            registries.prompts.push(Arc::new(prompt));
        }
        self.announce(Change::PromptsListChanged);
        Ok(())
    }

    /// Removes the prompt named `name`; whether there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = {
            let mut registries = self.write();
            let before = registries.prompts.len();
            registries.prompts.retain(|p| p.name != name);
            registries.prompts.len() != before
        };
        if removed {
            self.announce(Change::PromptsListChanged);
        }
        removed
    }

    /// Adds a resource.
    pub fn add_resource(&self, resource: Resource) -> Result<(), SurfaceError> {
        {
            let mut registries = self.write();
            if registries.resources.iter().any(|r| r.uri == resource.uri) {
                return Err(SurfaceError::Duplicate {
                    kind: "resource",
                    name: resource.uri,
                });
            }
            registries.resources.push(Arc::new(resource));
        }
        self.announce(Change::ResourcesListChanged);
        Ok(())
    }

    /// Removes the resource at `uri`; whether there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = {
            let mut registries = self.write();
            let before = registries.resources.len();
            registries.resources.retain(|r| r.uri != uri);
            registries.resources.len() != before
        };
        if removed {
            self.announce(Change::ResourcesListChanged);
        }
        removed
    }

    /// Adds a resource template.
    pub fn add_resource_template(&self, template: ResourceTemplate) -> Result<(), SurfaceError> {
        let registered = Arc::new(template.register()?);
        {
            let mut registries = self.write();
            if registries
                .templates
                .iter()
                .any(|t| t.template.uri_template == registered.template.uri_template)
            {
                return Err(SurfaceError::Duplicate {
                    kind: "resource template",
                    name: registered.template.uri_template.clone(),
                });
            }
            registries.templates.push(registered);
        }
        self.announce(Change::ResourcesListChanged);
        Ok(())
    }

    /// The names of the tools, in listing order.
    #[must_use]
    pub fn tool_names(&self) -> Vec<String> {
        self.read()
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<tool::Registered>> {
        self.read().tools.iter().find(|t| t.name() == name).cloned()
    }

    pub(crate) fn tools(&self) -> Vec<Arc<tool::Registered>> {
        self.read().tools.clone()
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<Arc<Prompt>> {
        self.read().prompts.iter().find(|p| p.name == name).cloned()
    }

    pub(crate) fn prompts(&self) -> Vec<Arc<Prompt>> {
        self.read().prompts.clone()
    }

    pub(crate) fn resources(&self) -> Vec<Arc<Resource>> {
        self.read().resources.clone()
    }

    pub(crate) fn templates(&self) -> Vec<Arc<resource::RegisteredTemplate>> {
        self.read().templates.clone()
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<Arc<Resource>> {
        self.read().resources.iter().find(|r| r.uri == uri).cloned()
    }

    pub(crate) fn template_for(
        &self,
        uri: &str,
    ) -> Option<(Arc<resource::RegisteredTemplate>, TemplateVars)> {
        self.read()
            .templates
            .iter()
            .find_map(|t| t.matches(uri).map(|vars| (t.clone(), vars)))
    }
}

/// Which capabilities the server advertises, decided at build time: a
/// method gated behind a capability the server does not advertise is
/// answered 404/-32601.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Advertised {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    pub completions: bool,
    pub logging: bool,
    pub list_changed: bool,
    pub subscribe: bool,
}

/// Everything of the server's surface, held by [`Server`](crate::Server).
pub(crate) struct Surface {
    /// What completes every result, the server's identity with it: built
    /// once, shared by handler futures.
    pub finishing: Arc<Finishing>,
    pub instructions: Option<String>,
    pub cache: CachePolicy,
    pub page_size: usize,
    pub catalog: Catalog,
    pub completion: Option<Arc<CompletionFn>>,
    pub advertised: Advertised,
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface")
            .field("finishing", &self.finishing)
            .field("instructions", &self.instructions)
            .field("cache", &self.cache)
            .field("page_size", &self.page_size)
            .field("catalog", &self.catalog)
            .field("completion", &self.completion.is_some())
            .field("advertised", &self.advertised)
            .finish()
    }
}

impl Surface {
    /// The server's capabilities, as `server/discover` and `initialize`
    /// report them.
    pub(crate) fn capabilities(&self, era: Era) -> Value {
        let a = self.advertised;
        let mut caps = Map::new();
        let list_changed = |on: bool| {
            if on {
                json!({"listChanged": true})
            } else {
                json!({})
            }
        };
        if a.tools {
            caps.insert("tools".into(), list_changed(a.list_changed));
        }
        if a.prompts {
            caps.insert("prompts".into(), list_changed(a.list_changed));
        }
        if a.resources {
            let mut resources = Map::new();
            if a.list_changed {
                resources.insert("listChanged".into(), Value::Bool(true));
            }
            if a.subscribe {
                resources.insert("subscribe".into(), Value::Bool(true));
            }
            caps.insert("resources".into(), Value::Object(resources));
        }
        if a.completions {
            caps.insert("completions".into(), json!({}));
        }
        // 2025 clients set a level with `logging/setLevel`, which the legacy
        // path always answers; 2026 clients ask per request.
        if a.logging || era == Era::Legacy {
            caps.insert("logging".into(), json!({}));
        }
        Value::Object(caps)
    }

    /// The `x-mcp-header` table of the tools registered at start-up, for
    /// `HeaderBinding`.
    pub(crate) fn header_params(&self) -> impl Iterator<Item = (String, Vec<HeaderParam>)> {
        self.catalog
            .tools()
            .into_iter()
            .filter(|t| !t.header_params.is_empty())
            .map(|t| (t.name().to_owned(), t.header_params.to_vec()))
    }

    /// Completes a result for the wire; see [`Finishing::finish`].
    pub(crate) fn finish(&self, era: Era, result: Value, cacheable: bool) -> Value {
        self.finishing.finish(era, result, cacheable)
    }
}

/// What a result needs to be completed for the wire: the server's identity,
/// serialised once when the server is built (not once per result), and its
/// caching hint.
#[derive(Debug)]
pub(crate) struct Finishing {
    info: Value,
    cache: CachePolicy,
}

impl Finishing {
    fn new(info: &ServerInfo, cache: CachePolicy) -> Self {
        Finishing {
            // A struct of strings always serialises.
            info: serde_json::to_value(info).unwrap_or(Value::Null),
            cache,
        }
    }

    /// Completes a result for the wire: on 2026-07-28, `resultType` (unless
    /// the handler set one), the server's identity in `_meta`, and the
    /// caching hint when `cacheable`; a 2025 result is left as it is.
    pub(crate) fn finish(&self, era: Era, result: Value, cacheable: bool) -> Value {
        let mut object = match result {
            Value::Object(object) => object,
            other => {
                let mut object = Map::new();
                object.insert("value".into(), other);
                object
            }
        };
        if era == Era::Legacy {
            return Value::Object(object);
        }
        object
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_KEY.into(), self.info.clone());
        }
        if cacheable {
            object.insert("ttlMs".into(), Value::from(self.cache.ttl_ms));
            object.insert("cacheScope".into(), Value::from(self.cache.scope.as_str()));
        }
        Value::Object(object)
    }

    /// The server's identity as it appears in results.
    pub(crate) fn info(&self) -> &Value {
        &self.info
    }

    /// One page of a list, completed as [`finish`](Self::finish) completes a
    /// cacheable result, ready to serialise.
    pub(crate) fn list<'a, T>(
        &'a self,
        era: Era,
        key: &'static str,
        items: &'a [T],
        next: Option<String>,
    ) -> WireList<'a, T> {
        WireList {
            key,
            items,
            next,
            finishing: (era == Era::Modern).then_some(self),
        }
    }

    /// A tool result completed as [`finish`](Self::finish) completes one,
    /// ready to serialise (a tool result sets neither `resultType` nor
    /// `_meta`, and is never cacheable).
    pub(crate) fn tool<'a>(&'a self, era: Era, result: &'a ToolResult) -> WireToolResult<'a> {
        let modern = era == Era::Modern;
        WireToolResult {
            content: &result.content,
            structured_content: result.structured_content.as_ref(),
            is_error: result.is_error,
            result_type: modern.then_some("complete"),
            meta: modern.then_some(ServerMeta(&self.info)),
        }
    }
}

/// One page of a list result (`tools/list`, `resources/list`, …) as it goes
/// on the wire: the items under `key`, `nextCursor` when there is more, and
/// on 2026-07-28 what [`Finishing::finish`] adds to a cacheable result.
pub(crate) struct WireList<'a, T> {
    key: &'static str,
    items: &'a [T],
    next: Option<String>,
    /// `None` for a 2025 result, which is left as it is.
    finishing: Option<&'a Finishing>,
}

impl<T: Serialize> Serialize for WireList<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        if let Some(finishing) = self.finishing {
            map.serialize_entry("resultType", "complete")?;
            map.serialize_entry("_meta", &ServerMeta(&finishing.info))?;
            map.serialize_entry("ttlMs", &finishing.cache.ttl_ms)?;
            map.serialize_entry("cacheScope", finishing.cache.scope.as_str())?;
        }
        map.end()
    }
}

/// `_meta` holding only the server's identity.
pub(crate) struct ServerMeta<'a>(&'a Value);

impl Serialize for ServerMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(SERVER_INFO_KEY, self.0)?;
        map.end()
    }
}

/// What the builder collects for the surface.
#[derive(Default)]
pub(crate) struct SurfaceBuilder {
    info: ServerInfo,
    instructions: Option<String>,
    cache: CachePolicy,
    page_size: Option<usize>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    completion: Option<Arc<CompletionFn>>,
    list_changed: bool,
    subscribe: bool,
    logging: bool,
    force: Advertised,
}

impl std::fmt::Debug for SurfaceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SurfaceBuilder")
            .field("info", &self.info)
            .field("tools", &self.tools.len())
            .field("prompts", &self.prompts.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .finish_non_exhaustive()
    }
}

/// The default number of items on one page of a list result.
pub const DEFAULT_PAGE_SIZE: usize = 100;

impl SurfaceBuilder {
    pub(crate) fn build(self, changes: ChangeBus) -> Result<Surface, SurfaceError> {
        let page_size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page_size == 0 {
            return Err(SurfaceError::PageSize);
        }
        let advertised = Advertised {
            tools: self.force.tools || !self.tools.is_empty(),
            prompts: self.force.prompts || !self.prompts.is_empty(),
            resources: self.force.resources
                || !self.resources.is_empty()
                || !self.templates.is_empty(),
            completions: self.completion.is_some(),
            logging: self.logging,
            list_changed: self.list_changed,
            subscribe: self.subscribe,
        };
        let catalog = Catalog::new(changes);
        for tool in self.tools {
            catalog.insert_tool(Arc::new(tool.register()?))?;
        }
        for prompt in self.prompts {
            catalog.add_prompt(prompt)?;
        }
        for resource in self.resources {
            catalog.add_resource(resource)?;
        }
        for template in self.templates {
            catalog.add_resource_template(template)?;
        }
        Ok(Surface {
            finishing: Arc::new(Finishing::new(&self.info, self.cache)),
            instructions: self.instructions,
            cache: self.cache,
            page_size,
            catalog,
            completion: self.completion,
            advertised,
        })
    }
}

/// The surface half of the builder: identity, registries, caching, paging.
impl ServerBuilder {
    /// The server's name and version, sent as
    /// `_meta["io.modelcontextprotocol/serverInfo"]` and in `initialize`.
    #[must_use]
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.surface.info.name = name.into();
        self.surface.info.version = version.into();
        self
    }

    /// A display title for the server.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.surface.info.title = Some(title.into());
        self
    }

    /// Natural-language guidance for the client's model (`instructions`).
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.surface.instructions = Some(instructions.into());
        self
    }

    /// The caching hint of discover, list and read results (default
    /// `ttlMs: 0`, `private`).
    #[must_use]
    pub fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.surface.cache = CachePolicy { ttl_ms, scope };
        self
    }

    /// How many items one page of a list result holds (default 100).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.surface.page_size = Some(size);
        self
    }

    /// Registers a tool. Its `x-mcp-header` annotations are checked when
    /// the server is built.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.surface.tools.push(tool);
        self
    }

    /// Registers a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.surface.prompts.push(prompt);
        self
    }

    /// Registers a resource.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.surface.resources.push(resource);
        self
    }

    /// Registers a resource template.
    #[must_use]
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.surface.templates.push(template);
        self
    }

    /// Advertises the tools capability even with no tool registered at
    /// start-up (tools added later through the [`Catalog`]).
    #[must_use]
    pub fn tools_capability(mut self) -> Self {
        self.surface.force.tools = true;
        self
    }

    /// Advertises the prompts capability even with no prompt at start-up.
    #[must_use]
    pub fn prompts_capability(mut self) -> Self {
        self.surface.force.prompts = true;
        self
    }

    /// Advertises the resources capability even with no resource at start-up.
    #[must_use]
    pub fn resources_capability(mut self) -> Self {
        self.surface.force.resources = true;
        self
    }

    /// Advertises `listChanged` on tools, prompts and resources: the catalog
    /// announces its changes on `subscriptions/listen` streams.
    #[must_use]
    pub fn list_changed(mut self) -> Self {
        self.surface.list_changed = true;
        self
    }

    /// Advertises `resources.subscribe`: resource updates are announced on
    /// `subscriptions/listen` streams (2025 clients' `resources/subscribe`
    /// is acknowledged, but a stateless server has no stream to deliver on).
    #[must_use]
    pub fn resource_subscriptions(mut self) -> Self {
        self.surface.subscribe = true;
        self
    }

    /// Advertises the `logging` capability to 2026 clients: handlers send
    /// log messages when a request asks for them.
    #[must_use]
    pub fn logging(mut self) -> Self {
        self.surface.logging = true;
        self
    }

    /// Serves `completion/complete` with `handler` (and advertises
    /// `completions`).
    #[must_use]
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CompletionRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
    {
        self.surface.completion = Some(completion::boxed(handler));
        self
    }
}

impl From<SurfaceError> for BuildError {
    fn from(error: SurfaceError) -> Self {
        BuildError::Surface(error)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The tool result serialised straight onto the wire is the result the
    /// general finish makes of it, in both eras.
    #[test]
    fn a_wire_tool_result_is_the_finished_one() {
        let info = ServerInfo {
            title: Some("T".into()),
            ..ServerInfo::default()
        };
        let finishing = Finishing::new(
            &info,
            CachePolicy {
                ttl_ms: 5,
                scope: CacheScope::Public,
            },
        );
        let mut structured = ToolResult::text("s");
        structured.structured_content = Some(json!({"n": 1, "s": "\u{1F600}\"\\"}));
        let results = [
            ToolResult::text("hello"),
            ToolResult::error("boom"),
            ToolResult::new([]),
            structured,
        ];
        for era in [Era::Modern, Era::Legacy] {
            for result in &results {
                let wire = serde_json::to_value(finishing.tool(era, result)).unwrap();
                let finished = finishing.finish(era, serde_json::to_value(result).unwrap(), false);
                assert_eq!(wire, finished, "{era:?} {result:?}");
            }
        }
    }

    /// A list page serialised straight onto the wire is the cacheable result
    /// the general finish makes of it, in both eras, with and without a
    /// next cursor.
    #[test]
    fn a_wire_list_is_the_finished_one() {
        let finishing = Finishing::new(
            &ServerInfo::default(),
            CachePolicy {
                ttl_ms: 60_000,
                scope: CacheScope::Public,
            },
        );
        let items = [json!({"name": "a"}), json!({"name": "b", "x": [1, 2]})];
        for era in [Era::Modern, Era::Legacy] {
            for next in [None, Some("p1.2".to_owned())] {
                let wire = serde_json::to_value(finishing.list(era, "tools", &items, next.clone()))
                    .unwrap();
                let mut plain = Map::new();
                plain.insert("tools".into(), Value::Array(items.to_vec()));
                if let Some(next) = &next {
                    plain.insert("nextCursor".into(), json!(next));
                }
                let finished = finishing.finish(era, Value::Object(plain), true);
                assert_eq!(wire, finished, "{era:?} {next:?}");
            }
        }
    }
}
