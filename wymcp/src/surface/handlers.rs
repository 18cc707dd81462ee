//! `Handlers`: everything one `#[wymcp::handlers]` impl declares (tools,
//! resources, resource templates, prompts, completions), registered at once
//! with `ServerBuilder::handlers`.

use super::completion::Completer;
use super::prompt::Prompt;
use super::resource::{Resource, ResourceTemplate};
use super::tool::Tool;

/// Every item a `#[wymcp::handlers]` impl declares: what its generated
/// `handlers()` answers, for [`ServerBuilder::handlers`](crate::ServerBuilder::handlers).
/// Built by hand too, to gather items of several impls.
///
/// ```
/// use wymcp::{Handlers, Server, Tool};
///
/// let handlers = Handlers::new().tools([Tool::new("ping")]);
/// let server = Server::builder().handlers(handlers).build();
/// ```
#[derive(Debug, Default)]
#[must_use]
pub struct Handlers {
    pub(crate) tools: Vec<Tool>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) completer: Completer,
}

impl Handlers {
    /// None.
    pub fn new() -> Self {
        Handlers::default()
    }

    /// With these tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// With these resources.
    pub fn resources(mut self, resources: impl IntoIterator<Item = Resource>) -> Self {
        self.resources.extend(resources);
        self
    }

    /// With these resource templates.
    pub fn resource_templates(
        mut self,
        templates: impl IntoIterator<Item = ResourceTemplate>,
    ) -> Self {
        self.templates.extend(templates);
        self
    }

    /// With these prompts.
    pub fn prompts(mut self, prompts: impl IntoIterator<Item = Prompt>) -> Self {
        self.prompts.extend(prompts);
        self
    }

    /// With these completion handlers (added to those it has).
    pub fn completer(mut self, completer: Completer) -> Self {
        self.completer = std::mem::take(&mut self.completer).merge(completer);
        self
    }

    /// With everything `other` has too.
    pub fn merge(self, other: Handlers) -> Self {
        self.tools(other.tools)
            .resources(other.resources)
            .resource_templates(other.templates)
            .prompts(other.prompts)
            .completer(other.completer)
    }
}
