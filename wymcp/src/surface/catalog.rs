//! The [`Catalog`]: the tools, prompts, resources and resource templates a
//! server offers, changeable at run time.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::bus::{Change, ChangeBus};
use super::context::Context;
use super::error::SurfaceError;
use super::item::About;
use super::notify::Emitter;
use super::prompt::Prompt;
use super::resource::{RegisteredTemplate, Resource, ResourceTemplate, TemplateVars};
use super::tool::{Registered, Tool};
use crate::mrtr::Inputs;
use crate::protocol::meta;
use crate::protocol::revision::Era;

#[derive(Debug, Default)]
struct Registries {
    tools: Vec<Arc<Registered>>,
    prompts: Vec<Arc<Prompt>>,
    resources: Vec<Arc<Resource>>,
    templates: Vec<Arc<RegisteredTemplate>>,
}

/// The tools, prompts, resources and resource templates a server offers,
/// shared by the server and every handler (through
/// [`Context::catalog`](super::Context::catalog)), changeable at run time. Each change is published
/// on the server's change bus, so open `subscriptions/listen` streams
/// hear it.
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<RwLock<Registries>>,
    changes: ChangeBus,
    /// The server's state, which an item added at run time whose handler
    /// is a `&self` method needs (none: a catalog of no server, unchecked).
    state: Option<Arc<http::Extensions>>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new(ChangeBus::new(), None)
    }
}

impl Catalog {
    /// An empty catalog announcing its changes on `changes`, whose items'
    /// methods need `state`.
    pub(crate) fn new(changes: ChangeBus, state: Option<Arc<http::Extensions>>) -> Self {
        Catalog {
            inner: Arc::default(),
            changes,
            state,
        }
    }

    /// Refuses an item whose handler is a `&self` method of a state type
    /// the server was not given, as `ServerBuilder::build` does, instead
    /// of the first call panicking.
    fn check_state(&self, about: &About) -> Result<(), SurfaceError> {
        match (&self.state, about.method_of) {
            (Some(state), Some(need)) if !(need.given)(state) => Err(SurfaceError::MissingState {
                state: need.state,
                item: need.item,
            }),
            _ => Ok(()),
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

    /// Sends an application message (a [`Change::Application`]) on the
    /// bus: heard by every [`subscribe`](Self::subscribe)r of this replica
    /// and, through the server's relay, of every other.
    pub fn broadcast(&self, topic: impl Into<String>, body: impl Into<String>) {
        self.announce(Change::Application {
            topic: topic.into(),
            body: body.into(),
        });
    }

    /// This catalog, whose changes through the view returned are not
    /// announced: for applying here a change another replica already
    /// announced to everyone (its `list_changed` reached this replica's
    /// streams through the relay).
    #[must_use]
    pub fn unannounced(&self) -> Catalog {
        Catalog {
            inner: Arc::clone(&self.inner),
            changes: ChangeBus::silent(),
            state: self.state.clone(),
        }
    }

    /// Announces that the content of the resource at `uri` changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.announce(Change::ResourceUpdated(uri.into()));
    }

    /// Announces that the tool list changed (what a tool's handler does
    /// when it changed what [`tools/list`] answers by other means than the
    /// catalog, which announces its own changes).
    ///
    /// [`tools/list`]: https://modelcontextprotocol.io/specification/2026-07-28/server/tools
    pub fn tools_changed(&self) {
        self.announce(Change::ToolsListChanged);
    }

    /// Announces that the prompt list changed.
    pub fn prompts_changed(&self) {
        self.announce(Change::PromptsListChanged);
    }

    /// Announces that the resource list changed.
    pub fn resources_changed(&self) {
        self.announce(Change::ResourcesListChanged);
    }

    /// Adds a tool, checking it as the builder does. A tool with
    /// `x-mcp-header` annotations must be registered with the builder, where
    /// `HeaderBinding`'s table is made; added later it is refused.
    pub fn add_tool(&self, tool: Tool) -> Result<(), SurfaceError> {
        self.check_state(&tool.about)?;
        let registered = Arc::new(tool.register()?);
        if !registered.header_params.is_empty() {
            return Err(SurfaceError::HeaderParamsAtRunTime(
                registered.name().to_owned(),
            ));
        }
        self.insert_tool(registered)
    }

    pub(crate) fn insert_tool(&self, registered: Arc<Registered>) -> Result<(), SurfaceError> {
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
        self.check_state(&prompt.about)?;
        prompt
            .about
            .scopes
            .check(&format!("prompt `{}`", prompt.kind.name))?;
        {
            let mut registries = self.write();
            if registries
                .prompts
                .iter()
                .any(|p| p.kind.name == prompt.kind.name)
            {
                return Err(SurfaceError::Duplicate {
                    kind: "prompt",
                    name: prompt.kind.name,
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
            registries.prompts.retain(|p| p.kind.name != name);
            registries.prompts.len() != before
        };
        if removed {
            self.announce(Change::PromptsListChanged);
        }
        removed
    }

    /// Adds a resource.
    pub fn add_resource(&self, resource: Resource) -> Result<(), SurfaceError> {
        self.check_state(&resource.about)?;
        resource
            .about
            .scopes
            .check(&format!("resource `{}`", resource.kind.uri))?;
        {
            let mut registries = self.write();
            if registries
                .resources
                .iter()
                .any(|r| r.kind.uri == resource.kind.uri)
            {
                return Err(SurfaceError::Duplicate {
                    kind: "resource",
                    name: resource.kind.uri,
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
            registries.resources.retain(|r| r.kind.uri != uri);
            registries.resources.len() != before
        };
        if removed {
            self.announce(Change::ResourcesListChanged);
        }
        removed
    }

    /// Adds a resource template.
    pub fn add_resource_template(&self, template: ResourceTemplate) -> Result<(), SurfaceError> {
        self.check_state(&template.about)?;
        let registered = Arc::new(template.register()?);
        {
            let mut registries = self.write();
            if registries
                .templates
                .iter()
                .any(|t| t.template.kind.uri_template == registered.template.kind.uri_template)
            {
                return Err(SurfaceError::Duplicate {
                    kind: "resource template",
                    name: registered.template.kind.uri_template.clone(),
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

    /// The names of the prompts, in listing order.
    #[must_use]
    pub fn prompt_names(&self) -> Vec<String> {
        self.read()
            .prompts
            .iter()
            .map(|p| p.kind.name.clone())
            .collect()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<Registered>> {
        self.read().tools.iter().find(|t| t.name() == name).cloned()
    }

    pub(crate) fn tools(&self) -> Vec<Arc<Registered>> {
        self.read().tools.clone()
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<Arc<Prompt>> {
        self.read()
            .prompts
            .iter()
            .find(|p| p.kind.name == name)
            .cloned()
    }

    pub(crate) fn prompts(&self) -> Vec<Arc<Prompt>> {
        self.read().prompts.clone()
    }

    pub(crate) fn resources(&self) -> Vec<Arc<Resource>> {
        self.read().resources.clone()
    }

    pub(crate) fn templates(&self) -> Vec<Arc<RegisteredTemplate>> {
        self.read().templates.clone()
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<Arc<Resource>> {
        self.read()
            .resources
            .iter()
            .find(|r| r.kind.uri == uri)
            .cloned()
    }

    /// The template whose URI template is `uri_template`.
    pub(crate) fn template(&self, uri_template: &str) -> Option<Arc<RegisteredTemplate>> {
        self.read()
            .templates
            .iter()
            .find(|t| t.template.kind.uri_template == uri_template)
            .cloned()
    }

    pub(crate) fn template_for(
        &self,
        uri: &str,
    ) -> Option<(Arc<RegisteredTemplate>, TemplateVars)> {
        self.read()
            .templates
            .iter()
            .find_map(|t| t.matches(uri).map(|vars| (t.clone(), vars)))
    }
}

/// The catalog as a handler reaches it. Written here rather than beside
/// [`Context`]: the catalog holds the handlers, which take a context, so
/// the context holds its catalog as a shared value of the server's rather
/// than by name, and only this file, which knows both, reads it back.
impl Context {
    /// The tools, prompts and resources of the server, changeable at run time.
    #[must_use]
    pub fn catalog(&self) -> &Catalog {
        static NONE: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        // Every context a server makes shares its catalog; one made without
        // (none is) would see an empty catalog of its own.
        self.shared::<Catalog>()
            .unwrap_or_else(|| NONE.get_or_init(Catalog::default))
    }

    /// Announces that the tool list changed, to every open
    /// `subscriptions/listen` stream that asked for it.
    ///
    /// ```
    /// use wymcp::{Context, NoArgs, Tool, ToolResult};
    ///
    /// let tool = Tool::new("enable_admin").handler(|_: NoArgs, cx: Context| async move {
    ///     // …the tools offered depend on a flag this call just set…
    ///     cx.tools_changed();
    ///     Ok(ToolResult::text("admin tools enabled"))
    /// });
    /// # let _ = tool;
    /// ```
    pub fn tools_changed(&self) {
        self.catalog().tools_changed();
    }

    /// Announces that the prompt list changed.
    pub fn prompts_changed(&self) {
        self.catalog().prompts_changed();
    }

    /// Announces that the resource list changed.
    pub fn resources_changed(&self) {
        self.catalog().resources_changed();
    }

    /// Announces that the resource at `uri` changed, to every open
    /// `subscriptions/listen` stream subscribed to it.
    ///
    /// ```
    /// use wymcp::{Context, Tool, ToolResult};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Edit { id: u64, text: String }
    ///
    /// let tool = Tool::new("edit_note").handler(|edit: Edit, cx: Context| async move {
    ///     // …store edit.text…
    ///     cx.resource_updated(format!("notes://{}", edit.id));
    ///     Ok(ToolResult::text("saved"))
    /// });
    /// # let _ = tool;
    /// ```
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.catalog().resource_updated(uri);
    }

    /// A context for a unit test of a handler: 2026 era, no principal, an
    /// empty catalog of its own, the given `_meta` (client capabilities, log
    /// level, progress token) read as a request's; its notifications go
    /// nowhere.
    #[must_use]
    pub fn for_test(meta: Value) -> Self {
        let params = json!({"_meta": meta.clone()});
        let capabilities = meta
            .get(meta::CLIENT_CAPABILITIES)
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut shared = http::Extensions::new();
        shared.insert(Catalog::default());
        Context::new(
            Arc::new(shared),
            "tools/call",
            Era::Modern,
            meta,
            None,
            Inputs::declared(capabilities),
            // The request's emitter, its notifications dropped.
            Emitter::for_params(Some(&params)).0,
        )
    }
}
