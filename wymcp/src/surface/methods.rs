//! The [`Surface`]: what a server answers once a message is trusted, as a
//! transport-free [`Call`] in and an [`Answer`] out. The method table is
//! here ([`Route`]); each method's answer lives beside what it answers
//! (`tool::call`, `resource::read`, `prompt::get`, `completion::complete`,
//! `discover`, `legacy`, `listen`).
//!
//! In the request's era: on 2026-07-28 `server/discover`, `tools/*`,
//! `resources/*`, `prompts/*`, `completion/complete` and
//! `subscriptions/listen`; a method removed in 2026 (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, …), an unknown one, or one
//! gated behind a capability the server does not advertise is -32601. On
//! the 2025 legacy path `initialize`, `ping`, `logging/setLevel`,
//! `resources/subscribe`/`unsubscribe` (acknowledged), and the same tools,
//! resources, prompts and completion, answered as 2025 results (no
//! `resultType`, no caching hint; resource not found is -32002). A
//! notification is accepted and answers nothing.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::bus::ChangeBus;
use super::call::{Answer, Call, Env, Outcome};
use super::catalog::Catalog;
use super::completion::{self, CompletionFn};
use super::context::HandlerError;
use super::error::SurfaceError;
use super::finish::{CachePolicy, Finishing, ServerInfo};
use super::listen::{self, Filter, Listen, ListenLimits, Support};
use super::mid_call::{self, AnswerRelay, LegacyRequests, Peer, Refused};
use super::prompt::{self, Prompt};
use super::resource::{self, Resource, ResourceTemplate, Target};
use super::scopes::Scopes;
use super::task::{TaskLimits, Tasks};
use super::tool::{self, TaskSupport, Tool};
use super::{discover, legacy, pagination};
use crate::mrtr::Sealer;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::headers::HeaderParam;
use crate::protocol::jsonrpc::{self, MessageKind};
use crate::protocol::meta::{SERVER_INFO, TASKS_EXTENSION};
use crate::protocol::revision::{Era, Revision};
use crate::protocol::text::truncated;
use crate::tasks::TaskStore;

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
    /// The tasks extension (`capabilities.extensions`).
    pub tasks: bool,
}

/// Everything of the server's surface, held by [`Server`](crate::Server):
/// what answers a [`Call`].
pub(crate) struct Surface {
    /// What completes every result, the server's identity with it: built
    /// once, shared by handler futures.
    pub finishing: Arc<Finishing>,
    pub instructions: Option<String>,
    pub page_size: usize,
    pub catalog: Catalog,
    pub completion: Option<Arc<CompletionFn>>,
    pub advertised: Advertised,
    /// The revisions served, oldest first.
    pub revisions: Vec<Revision>,
    /// The sealer of MRTR `requestState`.
    pub sealer: Arc<Sealer>,
    /// The bus every listen stream hears.
    pub changes: ChangeBus,
    /// What every handler's context shares: the catalog.
    pub shared: Arc<http::Extensions>,
    /// The limits of listen streams.
    pub listen_limits: ListenLimits,
    /// Whether lists show every item to every caller, scopes or not.
    pub list_all: bool,
    /// The tasks extension's store and running handlers.
    pub tasks: Arc<Tasks>,
    /// The mid-call requests of 2025 calls.
    pub peer: Arc<Peer>,
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface")
            .field("finishing", &self.finishing)
            .field("instructions", &self.instructions)
            .field("page_size", &self.page_size)
            .field("catalog", &self.catalog)
            .field("completion", &self.completion.is_some())
            .field("advertised", &self.advertised)
            .field("revisions", &self.revisions)
            .field("sealer", &self.sealer)
            .finish_non_exhaustive()
    }
}

impl Surface {
    /// The server's capabilities, as `server/discover` and `initialize`
    /// report them.
    pub(crate) fn capabilities(&self, era: Era) -> Value {
        let a = self.advertised;
        let mut caps = Map::new();
        // A stateless 2025 exchange has no stream to deliver a notification
        // on: a 2025 client is offered neither.
        let (list_changed, subscribe) = match era {
            Era::Modern => (a.list_changed, a.subscribe),
            Era::Legacy => (false, false),
        };
        let list_changed_of = |on: bool| {
            if on {
                json!({"listChanged": true})
            } else {
                json!({})
            }
        };
        if a.tools {
            caps.insert("tools".into(), list_changed_of(list_changed));
        }
        if a.prompts {
            caps.insert("prompts".into(), list_changed_of(list_changed));
        }
        if a.resources {
            let mut resources = Map::new();
            if list_changed {
                resources.insert("listChanged".into(), Value::Bool(true));
            }
            if subscribe {
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
        if a.tasks && era == Era::Modern {
            caps.insert("extensions".into(), json!({TASKS_EXTENSION: {}}));
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
}

/// What the builder collects for the surface.
#[derive(Default)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct SurfaceBuilder {
    pub(crate) info: ServerInfo,
    pub(crate) instructions: Option<String>,
    pub(crate) cache: CachePolicy,
    pub(crate) page_size: Option<usize>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) completion: Option<Arc<CompletionFn>>,
    /// No `listChanged`, no `subscribe`, no `subscriptions/listen`.
    pub(crate) quiet: bool,
    pub(crate) logging: bool,
    pub(crate) force: Advertised,
    pub(crate) listen_limits: ListenLimits,
    pub(crate) list_all: bool,
    /// The application's values every handler reaches by type
    /// ([`Context::state`](super::Context::state)), each as an `Arc`.
    pub(crate) state: http::Extensions,
    pub(crate) task_store: Option<Arc<dyn TaskStore>>,
    pub(crate) task_limits: TaskLimits,
    pub(crate) legacy_requests: LegacyRequests,
    pub(crate) answer_relay: Option<Arc<dyn AnswerRelay>>,
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
    /// The first item that requires scopes, named.
    fn first_scoped(&self) -> Option<String> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.has_scopes())
            .map(|t| format!("tool `{}`", t.name()));
        let prompt = || {
            self.prompts
                .iter()
                .find(|p| !p.scopes.is_empty())
                .map(|p| format!("prompt `{}`", p.name))
        };
        let resource = || {
            self.resources
                .iter()
                .find(|r| !r.scopes.is_empty())
                .map(|r| format!("resource `{}`", r.uri))
        };
        let template = || {
            self.templates
                .iter()
                .find(|t| !t.scopes.is_empty())
                .map(|t| format!("resource template `{}`", t.uri_template))
        };
        tool.or_else(prompt).or_else(resource).or_else(template)
    }

    /// The surface, serving `revisions`, sealing with `sealer`, announcing
    /// its catalog's changes on `changes`; `authenticates` is whether the
    /// server has an authenticator (an item with scopes needs one).
    pub(crate) fn build(
        self,
        revisions: Vec<Revision>,
        sealer: Sealer,
        changes: ChangeBus,
        authenticates: bool,
    ) -> Result<Surface, SurfaceError> {
        let page_size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page_size == 0 {
            return Err(SurfaceError::PageSize);
        }
        if !authenticates && let Some(item) = self.first_scoped() {
            return Err(SurfaceError::ScopesWithoutAuth(item));
        }
        let advertised = Advertised {
            tools: self.force.tools || !self.tools.is_empty(),
            prompts: self.force.prompts || !self.prompts.is_empty(),
            resources: self.force.resources
                || !self.resources.is_empty()
                || !self.templates.is_empty(),
            completions: self.completion.is_some(),
            logging: self.logging,
            list_changed: !self.quiet,
            subscribe: !self.quiet,
            tasks: self.task_store.is_some() || self.tools.iter().any(Tool::supports_tasks),
        };
        let tasks = Arc::new(Tasks::new(self.task_store, self.task_limits));
        let catalog = Catalog::new(changes.clone());
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
        let mut shared = self.state;
        shared.insert(catalog.clone());
        let sealer = Arc::new(sealer);
        let peer = Peer::new(self.legacy_requests, Arc::clone(&sealer), self.answer_relay);
        Ok(Surface {
            finishing: Arc::new(Finishing::new(&self.info, self.cache)),
            instructions: self.instructions,
            page_size,
            catalog,
            completion: self.completion,
            advertised,
            revisions,
            sealer,
            peer,
            changes,
            shared: Arc::new(shared),
            listen_limits: self.listen_limits,
            list_all: self.list_all,
            tasks,
        })
    }
}

/// What answers a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Discover,
    Initialize,
    Empty,
    SetLevel,
    ToolsList,
    ToolsCall,
    ResourcesList,
    TemplatesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
    Complete,
    Listen,
    TasksGet,
    TasksUpdate,
    TasksCancel,
}

impl Route {
    /// The route of `method` in `era`, when the server serves it.
    fn of(method: &str, era: Era, a: Advertised) -> Option<Route> {
        let route = match (method, era) {
            ("server/discover", Era::Modern) => Route::Discover,
            ("subscriptions/listen", Era::Modern) if a.listen() != Support::default() => {
                Route::Listen
            }
            ("initialize", Era::Legacy) => Route::Initialize,
            ("ping", Era::Legacy) => Route::Empty,
            ("logging/setLevel", Era::Legacy) => Route::SetLevel,
            // Acknowledged (2025 servers answer `{}`), though never
            // advertised: nothing can be delivered to a 2025 client.
            ("resources/subscribe" | "resources/unsubscribe", Era::Legacy) if a.resources => {
                Route::Empty
            }
            ("tools/list", _) if a.tools => Route::ToolsList,
            ("tools/call", _) if a.tools => Route::ToolsCall,
            ("resources/list", _) if a.resources => Route::ResourcesList,
            ("resources/templates/list", _) if a.resources => Route::TemplatesList,
            ("resources/read", _) if a.resources => Route::ResourcesRead,
            ("prompts/list", _) if a.prompts => Route::PromptsList,
            ("prompts/get", _) if a.prompts => Route::PromptsGet,
            ("completion/complete", _) if a.completions => Route::Complete,
            ("tasks/get", Era::Modern) if a.tasks => Route::TasksGet,
            ("tasks/update", Era::Modern) if a.tasks => Route::TasksUpdate,
            ("tasks/cancel", Era::Modern) if a.tasks => Route::TasksCancel,
            _ => return None,
        };
        Some(route)
    }
}

impl Advertised {
    /// What a listen stream can deliver: the `listChanged` and `subscribe`
    /// capabilities the server advertises.
    fn listen(self) -> Support {
        Support {
            tools_list_changed: self.tools && self.list_changed,
            prompts_list_changed: self.prompts && self.list_changed,
            resources_list_changed: self.resources && self.list_changed,
            resource_subscriptions: self.resources && self.subscribe,
        }
    }
}

/// The answer to a call of an item whose `scopes` the caller lacks.
fn forbidden(what: String, scopes: &Scopes) -> Answer {
    Answer::Forbidden {
        what,
        scopes: scopes.to_vec(),
    }
}

/// The `-32601` of a method the server does not serve in the request's era.
fn method_not_found(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method `{}` not found", truncated(method)),
    )
    .data(json!({"method": truncated(method)}))
}

/// The string member `key` of the params, or `""`.
fn text<'p>(params: Option<&'p Value>, key: &str) -> &'p str {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Surface {
    /// Answers one trusted message (see the [module docs](self)).
    pub(crate) fn answer(&self, mut call: Call<'_>) -> Answer {
        if call.era == Era::Legacy && call.method != Some("initialize") {
            // A 2025 session token opens, or the client must initialize again.
            if let Some(token) = call.session {
                match self.peer.open_session(call.subject(), token) {
                    Ok(declared) => call.declared = Some(declared),
                    Err(refused) => return Answer::Refused(refused),
                }
            }
        }
        match call.kind {
            MessageKind::Notification => return Answer::Accepted,
            MessageKind::Request => {}
            // A 2025 client's answer to a request sent mid-call (Validate
            // held it to the response envelope).
            MessageKind::Unknown if call.era == Era::Legacy => {
                return match call.response.take() {
                    Some(response) if jsonrpc::is_response(&response) => {
                        Answer::Delivery(self.peer.deliver(response, call.subject()))
                    }
                    _ => Answer::Refused(Refused::Unknown),
                };
            }
            MessageKind::UnidentifiedRequest | MessageKind::Unknown => {
                return RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "the message is not a JSON-RPC request or notification",
                )
                .into();
            }
        }
        let Some(method) = call.method else {
            return RpcError::new(ErrorCode::INVALID_REQUEST, "the request has no method").into();
        };
        let Some(route) = Route::of(method, call.era, self.advertised) else {
            return method_not_found(method).into();
        };
        let env = Env {
            finishing: &self.finishing,
            sealer: &self.sealer,
            shared: &self.shared,
            peer: &self.peer,
        };
        let params = call.params.as_ref();
        let immediate = match route {
            Route::Discover => Ok(discover::result(
                &self.revisions,
                self.capabilities(Era::Modern),
                self.instructions.as_deref(),
                &self.finishing,
            )),
            Route::Initialize => {
                let result = legacy::initialize(
                    &self.revisions,
                    self.capabilities(Era::Legacy),
                    self.instructions.as_deref(),
                    &self.finishing,
                    params,
                );
                return match result {
                    Ok((result, revision)) => {
                        let outcome = Outcome::Result(call.reply(&self.finishing).result(&result));
                        // A client that declared something the server may ask
                        // mid-call carries it in a session token.
                        match mid_call::askable(params.and_then(|p| p.get("capabilities"))) {
                            Some(askable) => Answer::Session(
                                outcome,
                                self.peer.mint_session(call.subject(), revision, &askable),
                            ),
                            None => Answer::Done(outcome),
                        }
                    }
                    Err(error) => error.into_rpc(call.era, method).into(),
                };
            }
            Route::Empty => Ok(json!({})),
            Route::SetLevel => legacy::set_level(params),
            Route::ToolsList => {
                let tools = self.catalog.tools();
                // Each definition was serialised at registration; the
                // page copies those bytes.
                let definitions: Vec<&serde_json::value::RawValue> = tools
                    .iter()
                    .filter(|t| self.shows(&t.scopes, &call))
                    .map(|t| &*t.definition)
                    .collect();
                return self.listed(&call, "tools", &definitions);
            }
            Route::ResourcesList => {
                let resources = self.catalog.resources();
                let listings: Vec<Value> = resources
                    .iter()
                    .filter(|r| self.shows(&r.scopes, &call))
                    .map(|r| r.listing())
                    .collect();
                return self.listed(&call, "resources", &listings);
            }
            Route::TemplatesList => {
                let templates = self.catalog.templates();
                let listings: Vec<Value> = templates
                    .iter()
                    .filter(|t| self.shows(&t.template.scopes, &call))
                    .map(|t| t.listing())
                    .collect();
                return self.listed(&call, "resourceTemplates", &listings);
            }
            Route::PromptsList => {
                let prompts = self.catalog.prompts();
                let listings: Vec<Value> = prompts
                    .iter()
                    .filter(|p| self.shows(&p.scopes, &call))
                    .map(|p| p.listing())
                    .collect();
                return self.listed(&call, "prompts", &listings);
            }
            Route::ToolsCall => {
                let name = text(params, "name");
                return match self.catalog.tool(name) {
                    Some(found) if !found.scopes.permit(call.principal) => {
                        forbidden(format!("tool `{}`", truncated(name)), &found.scopes)
                    }
                    Some(found) if found.task_support != TaskSupport::Forbidden => {
                        self.tasks.call(found, call, env)
                    }
                    Some(found) => tool::call(found, call, env),
                    None => HandlerError::InvalidParams {
                        message: format!("unknown tool `{}`", truncated(name)),
                        data: Some(json!({"name": truncated(name)})),
                    }
                    .into_rpc(call.era, method)
                    .into(),
                };
            }
            Route::ResourcesRead => {
                let uri = text(params, "uri").to_owned();
                let target = match self.catalog.resource(&uri) {
                    Some(found) => Some(Target::Resource(found)),
                    None => self
                        .catalog
                        .template_for(&uri)
                        .map(|(template, vars)| Target::Template(template, vars)),
                };
                let scopes = match &target {
                    Some(Target::Resource(resource)) => Some(&resource.scopes),
                    Some(Target::Template(template, _)) => Some(&template.template.scopes),
                    None => None,
                };
                if let Some(scopes) = scopes
                    && !scopes.permit(call.principal)
                {
                    return forbidden(format!("resource `{}`", truncated(&uri)), scopes);
                }
                return resource::read(target, uri, call, env);
            }
            Route::PromptsGet => {
                let name = text(params, "name");
                return match self.catalog.prompt(name) {
                    Some(found) if !found.scopes.permit(call.principal) => {
                        forbidden(format!("prompt `{}`", truncated(name)), &found.scopes)
                    }
                    Some(found) => prompt::get(&found, call, env),
                    None => HandlerError::InvalidParams {
                        message: format!("unknown prompt `{}`", truncated(name)),
                        data: Some(json!({"name": truncated(name)})),
                    }
                    .into_rpc(call.era, method)
                    .into(),
                };
            }
            Route::Complete => {
                return match self.completion.clone() {
                    Some(handler) => completion::complete(handler, &self.catalog, call, env),
                    None => method_not_found(method).into(),
                };
            }
            Route::Listen => return self.listen(&call),
            Route::TasksGet => return self.tasks.get(&call, &self.finishing),
            Route::TasksUpdate => return self.tasks.update(&call, env),
            Route::TasksCancel => return self.tasks.cancel(&call, &self.finishing),
        };
        match immediate {
            Ok(result) => {
                Answer::Done(Outcome::Result(call.reply(&self.finishing).result(&result)))
            }
            Err(error) => error.into_rpc(call.era, method).into(),
        }
    }

    /// Whether a list shows an item requiring `scopes` to the caller of
    /// `call`: when the caller holds them, or when the server lists
    /// everything.
    fn shows(&self, scopes: &Scopes, call: &Call<'_>) -> bool {
        self.list_all || scopes.permit(call.principal)
    }

    /// One page of a list, serialised from the catalog's own values straight
    /// into the answer (no copy of the definitions).
    fn listed<T: Serialize>(&self, call: &Call<'_>, key: &'static str, items: &[T]) -> Answer {
        match pagination::page(items, call.params.as_ref(), self.page_size) {
            Ok((page, next)) => Answer::Done(Outcome::Result(
                call.reply(&self.finishing)
                    .result(&self.finishing.list(call.era, key, page, next)),
            )),
            Err(error) => error
                .into_rpc(call.era, call.method.unwrap_or_default())
                .into(),
        }
    }

    /// `subscriptions/listen`: the stream of the catalog's changes the
    /// client's filter asked for (see [`listen`](super::listen)).
    fn listen(&self, call: &Call<'_>) -> Answer {
        let limits = &self.listen_limits;
        let filter = match Filter::from_params(call.params.as_ref(), limits) {
            Ok(filter) => filter,
            Err(error) => return error.into(),
        };
        let slot = match self.changes.admit(&call.caller(), limits) {
            Ok(slot) => slot,
            Err(over) => {
                return Answer::Busy {
                    error: listen::busy(over, limits),
                    over,
                    retry_after: listen::RETRY_AFTER,
                };
            }
        };
        let stream = Listen::new(call.id.clone(), filter)
            .support(self.advertised.listen())
            .lifetime(limits.max_lifetime)
            .result_meta(SERVER_INFO, self.finishing.info().clone())
            .open(&self.changes, slot);
        Answer::Listen(Box::new(stream))
    }
}
