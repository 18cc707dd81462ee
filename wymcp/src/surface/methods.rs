//! The [`Surface`]: what a server answers once a message is trusted, as a
//! transport-free [`Call`] in and an [`Answer`] out. The method table is
//! here ([`Route`]); each method's answer lives beside what it answers
//! (`tool::call`, `resource::read`, `prompt::get`, `completion::complete`,
//! `discover`, `legacy`, `listen`).
//!
//! In the request's era: on 2026-07-28 `server/discover`, `tools/*`,
//! `resources/*`, `prompts/*`, `completion/complete`,
//! `subscriptions/listen`, and the extensions' methods when the server
//! serves them (`tasks/*`; `skills/list`, `skills/get` and
//! `resources/directory/read`, the last behind `directoryRead`); a method removed in 2026 (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, …), an unknown one, or one
//! gated behind a capability the server does not advertise is -32601. On
//! the 2025 legacy path `initialize`, `ping`, `logging/setLevel`,
//! `resources/subscribe`/`unsubscribe` (carried to the session's GET
//! streams, see [`listen`](super::listen)), and the same tools,
//! resources, prompts and completion, answered as 2025 results (no
//! `resultType`, no caching hint; resource not found is -32002). A
//! notification is accepted and answers nothing.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::bus::{Change, ChangeBus};
use super::call::{Answer, Call, Env, Outcome, Session};
use super::catalog::Catalog;
use super::completion::{self, Completer, CompletionFn};
use super::context::HandlerError;
use super::error::SurfaceError;
use super::finish::{CachePolicy, Finishing, ServerInfo};
use super::listen::{Filter, Listen, ListenLimits, Permits, Support};
use super::mid_call::{self, AnswerRelay, Delivery, LegacyRequests, Peer, Refused};
use super::prompt::{self, Prompt};
use super::resource::{self, RegisteredTemplate, Resource, ResourceTemplate, Target};
use super::scopes::Scopes;
use super::skills::{Skill, Skills};
use super::task::{TaskLimits, Tasks};
use super::tool::{self, Registered, TaskSupport, Tool};
use super::{discover, legacy, pagination};
use crate::ledger::{Caller, Kind, Ledger, Refusal, Share};
use crate::mrtr::Sealer;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::headers::HeaderParam;
use crate::protocol::jsonrpc::{self, MessageKind};
use crate::protocol::meta::{SKILLS_EXTENSION, TASKS_EXTENSION};
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
    /// The Skills extension (`capabilities.extensions`).
    pub skills: bool,
    /// Its `directoryRead` setting: `resources/directory/read` is served.
    pub directory_read: bool,
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
    /// Completion handlers by key, tried before `completion`.
    pub completer: Completer,
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
    /// The count of what callers hold.
    pub ledger: Ledger,
    /// The most bytes of notifications one request may queue.
    pub notification_bytes: usize,
    /// The skills served (the Skills extension).
    pub skills: Skills,
    /// The `InitializeResult` of each 2025 revision served, rendered when
    /// the server is built (nothing in it depends on the request).
    pub initialize_results: Vec<(Revision, Box<RawValue>)>,
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface")
            .field("finishing", &self.finishing)
            .field("instructions", &self.instructions)
            .field("page_size", &self.page_size)
            .field("catalog", &self.catalog)
            .field("completion", &self.completion.is_some())
            .field("completer", &self.completer)
            .field("advertised", &self.advertised)
            .field("revisions", &self.revisions)
            .field("sealer", &self.sealer)
            .finish_non_exhaustive()
    }
}

impl Surface {
    /// The `InitializeResult` of each 2025 revision served, rendered.
    fn render_initialize_results(&self) -> Vec<(Revision, Box<RawValue>)> {
        let legacy = self
            .revisions
            .iter()
            .copied()
            .filter(|r| r.era() == Era::Legacy);
        legacy
            .map(|revision| {
                let result = legacy::initialize_result(
                    revision,
                    self.capabilities(Era::Legacy),
                    self.instructions.as_deref(),
                    &self.finishing,
                );
                // A `Value` always serialises.
                let raw = serde_json::value::to_raw_value(&result)
                    .unwrap_or_else(|_| unreachable!("a Value serialises"));
                (revision, raw)
            })
            .collect()
    }

    /// The rendered `InitializeResult` of `revision`, when it is a 2025
    /// revision served.
    fn initialized(&self, revision: Revision) -> Option<&RawValue> {
        self.initialize_results
            .iter()
            .find(|(r, _)| *r == revision)
            .map(|(_, raw)| &**raw)
    }

    /// The server's capabilities, as `server/discover` and `initialize`
    /// report them.
    pub(crate) fn capabilities(&self, era: Era) -> Value {
        let a = self.advertised;
        let mut caps = Map::new();
        // Both eras have a stream to deliver them on: 2026's
        // `subscriptions/listen`, 2025's standalone GET stream.
        let (list_changed, subscribe) = (a.list_changed, a.subscribe);
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
        // Both extensions are defined against 2026-07-28: a 2025 client is
        // offered neither (it reads a skill's files as ordinary resources).
        let mut extensions = Map::new();
        if a.tasks {
            extensions.insert(TASKS_EXTENSION.into(), json!({}));
        }
        if a.skills {
            let settings = if a.directory_read {
                json!({"directoryRead": true})
            } else {
                json!({})
            };
            extensions.insert(SKILLS_EXTENSION.into(), settings);
        }
        if era == Era::Modern && !extensions.is_empty() {
            caps.insert("extensions".into(), Value::Object(extensions));
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
    /// Completion handlers by key, before the fallback `completion`.
    pub(crate) completer: Completer,
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
    /// Skills given in code.
    pub(crate) skills: Vec<Skill>,
    /// Skills directories, read when the server is built.
    pub(crate) skill_dirs: Vec<std::path::PathBuf>,
    /// No `directoryRead`: `resources/directory/read` is not served.
    pub(crate) no_directory_read: bool,
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
                .find(|p| !p.about.scopes.is_empty())
                .map(|p| format!("prompt `{}`", p.kind.name))
        };
        let resource = || {
            self.resources
                .iter()
                .find(|r| !r.about.scopes.is_empty())
                .map(|r| format!("resource `{}`", r.kind.uri))
        };
        let template = || {
            self.templates
                .iter()
                .find(|t| !t.about.scopes.is_empty())
                .map(|t| format!("resource template `{}`", t.kind.uri_template))
        };
        tool.or_else(prompt).or_else(resource).or_else(template)
    }

    /// The ledger shares of the kinds the surface's settings give: listen
    /// streams ([`ListenLimits`]), waiting requests ([`LegacyRequests`]),
    /// running tasks ([`TaskLimits`]); the ledger's default for the others.
    pub(crate) fn shares(&self) -> impl Fn(Kind) -> Share + use<> {
        let (listen, waits, running, stored) = (
            self.listen_limits.share(),
            self.legacy_requests.share(),
            self.task_limits.share(),
            self.task_limits.stored_share(),
        );
        move |kind| match kind {
            Kind::ListenStreams | Kind::LegacyStreams => listen,
            Kind::Waits => waits,
            Kind::RunningTasks => running,
            Kind::StoredTasks => stored,
            other => Ledger::default().share(other),
        }
    }

    /// The surface, serving `revisions`, sealing with `sealer`, announcing
    /// its catalog's changes on `changes`, taking what callers hold from
    /// `ledger`; `authenticates` is whether the server has an authenticator
    /// (an item with scopes needs one).
    pub(crate) fn build(
        self,
        revisions: Vec<Revision>,
        sealer: Sealer,
        changes: ChangeBus,
        ledger: Ledger,
        authenticates: bool,
        notification_bytes: usize,
    ) -> Result<Surface, SurfaceError> {
        let page_size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page_size == 0 {
            return Err(SurfaceError::PageSize);
        }
        if !authenticates && let Some(item) = self.first_scoped() {
            return Err(SurfaceError::ScopesWithoutAuth(item));
        }
        let serves_skills = !self.skills.is_empty() || !self.skill_dirs.is_empty();
        let (skills, skill_files) = Skills::build(self.skills, &self.skill_dirs)?;
        let advertised = Advertised {
            tools: self.force.tools || !self.tools.is_empty(),
            prompts: self.force.prompts || !self.prompts.is_empty(),
            resources: self.force.resources
                || serves_skills
                || !self.resources.is_empty()
                || !self.templates.is_empty(),
            completions: self.completion.is_some() || !self.completer.is_empty(),
            logging: self.logging,
            list_changed: !self.quiet,
            subscribe: !self.quiet,
            tasks: self.task_store.is_some() || self.tools.iter().any(Tool::supports_tasks),
            skills: serves_skills,
            directory_read: serves_skills && !self.no_directory_read,
        };
        let tasks = Arc::new(Tasks::new(
            self.task_store,
            self.task_limits,
            ledger.clone(),
        ));
        let catalog = Catalog::new(changes.clone(), Some(Arc::new(self.state.clone())));
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
        for file in skill_files {
            catalog.add_resource(file)?;
        }
        let mut shared = self.state;
        shared.insert(catalog.clone());
        let sealer = Arc::new(sealer);
        let peer = Peer::new(
            self.legacy_requests,
            Arc::clone(&sealer),
            self.answer_relay,
            ledger.clone(),
        );
        let mut surface = Surface {
            finishing: Arc::new(Finishing::new(&self.info, self.cache)),
            instructions: self.instructions,
            page_size,
            catalog,
            completion: self.completion,
            completer: self.completer,
            advertised,
            revisions,
            sealer,
            peer,
            changes,
            shared: Arc::new(shared),
            listen_limits: self.listen_limits,
            list_all: self.list_all,
            tasks,
            ledger,
            notification_bytes,
            skills,
            initialize_results: Vec::new(),
        };
        surface.initialize_results = surface.render_initialize_results();
        Ok(surface)
    }
}

/// Which era a method is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eras {
    /// 2026-07-28 only.
    Modern,
    /// The 2025 legacy path only.
    Legacy,
    /// Both.
    Both,
}

impl Eras {
    fn has(self, era: Era) -> bool {
        match self {
            Eras::Both => true,
            Eras::Modern => era == Era::Modern,
            Eras::Legacy => era == Era::Legacy,
        }
    }
}

/// The answer of one method: the surface, the call, and what the call's
/// answer needs of the server and of its client.
type Method = fn(&Surface, Call<'_>, Env<'_>) -> Answer;

/// One row of the method table: a method, the eras it is served in,
/// whether this server serves it (a capability it advertises), and its
/// answer.
struct Route {
    method: &'static str,
    eras: Eras,
    served: fn(Advertised) -> bool,
    answer: Method,
}

/// A row of [`ROUTES`].
const fn row(
    method: &'static str,
    eras: Eras,
    served: fn(Advertised) -> bool,
    answer: Method,
) -> Route {
    Route {
        method,
        eras,
        served,
        answer,
    }
}

/// Every method the surface answers (see the [module docs](self)).
/// Adding a method is its function and its row here.
#[rustfmt::skip] // one row a line, as a table reads
const ROUTES: &[Route] = &[
    row("server/discover", Eras::Modern, always, discover),
    row("subscriptions/listen", Eras::Modern, listens, listen),
    row("initialize", Eras::Legacy, always, initialize),
    row("ping", Eras::Legacy, always, empty),
    row("logging/setLevel", Eras::Legacy, always, set_level),
    // Carried to the session's GET streams (see `subscription`).
    row("resources/subscribe", Eras::Legacy, resources, subscribe),
    row("resources/unsubscribe", Eras::Legacy, resources, unsubscribe),
    row("tools/list", Eras::Both, tools, list::<Registered>),
    row("tools/call", Eras::Both, tools, tools_call),
    row("resources/list", Eras::Both, resources, list::<Resource>),
    row("resources/templates/list", Eras::Both, resources, list::<RegisteredTemplate>),
    row("resources/read", Eras::Both, resources, resources_read),
    row("prompts/list", Eras::Both, prompts, list::<Prompt>),
    row("prompts/get", Eras::Both, prompts, prompts_get),
    row("completion/complete", Eras::Both, completions, complete),
    row("tasks/get", Eras::Modern, tasks, tasks_get),
    row("tasks/update", Eras::Modern, tasks, tasks_update),
    row("tasks/cancel", Eras::Modern, tasks, tasks_cancel),
    row("skills/list", Eras::Modern, skills, skills_list),
    row("skills/get", Eras::Modern, skills, skills_get),
    row("resources/directory/read", Eras::Modern, directory_read, directory_read_answer),
];

/// The row of `method` in `era`, when the server serves it.
fn route(method: &str, era: Era, a: Advertised) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.method == method && r.eras.has(era) && (r.served)(a))
}

fn always(_: Advertised) -> bool {
    true
}

fn listens(a: Advertised) -> bool {
    a.listen() != Support::default()
}

fn tools(a: Advertised) -> bool {
    a.tools
}

fn resources(a: Advertised) -> bool {
    a.resources
}

fn prompts(a: Advertised) -> bool {
    a.prompts
}

fn completions(a: Advertised) -> bool {
    a.completions
}

fn tasks(a: Advertised) -> bool {
    a.tasks
}

fn skills(a: Advertised) -> bool {
    a.skills
}

fn directory_read(a: Advertised) -> bool {
    a.directory_read
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

/// The answer of a method answered at once: its result, or its error.
fn immediate(s: &Surface, call: &Call<'_>, result: Result<Value, HandlerError>) -> Answer {
    match result {
        Ok(result) => Answer::done(Outcome::Result(call.reply(&s.finishing).result(&result))),
        Err(error) => error
            .into_rpc(call.era, call.method.unwrap_or_default())
            .into(),
    }
}

/// `server/discover`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn discover(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    let result = discover::result(
        &s.revisions,
        s.capabilities(Era::Modern),
        s.instructions.as_deref(),
        &s.finishing,
    );
    immediate(s, &call, Ok(result))
}

/// A 2025 `initialize`: a client that declared something the server may
/// ask mid-call carries it in a session token, minted here.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn initialize(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    let params = call.params.as_ref();
    let chosen = legacy::negotiate(&s.revisions, params);
    let Some((revision, result)) = chosen.and_then(|r| s.initialized(r).map(|raw| (r, raw))) else {
        return immediate(s, &call, Err(legacy::unserved(&s.revisions, params)));
    };
    let outcome = Outcome::Result(call.reply(&s.finishing).result(&result));
    let askable = mid_call::askable(params.and_then(|p| p.get("capabilities")));
    let session = match askable {
        Some(askable) => Session::Issued(s.peer.mint_session(call.subject(), revision, &askable)),
        // A client that may open the GET stream needs a token to name it.
        None if listens(s.advertised) => {
            Session::Issued(s.peer.mint_session(call.subject(), revision, &json!({})))
        }
        None => Session::Unchanged,
    };
    Answer::Done(outcome, session)
}

/// A 2025 `resources/subscribe` (`on`) or `resources/unsubscribe`: the URI
/// bounded as a listen stream's, the resource (or template) it names
/// permitted to the caller as `resources/read` is, then published on the
/// bus for the session's GET streams on every replica, and `{}`. Nothing
/// is stored: a subscription reaches the streams open now, and a stream
/// opened later starts with none (see [`listen`](super::listen)). A
/// request without a session token naming a stream is acknowledged and
/// reaches nothing.
fn subscription(s: &Surface, call: &Call<'_>, on: bool) -> Answer {
    let uri = text(call.params.as_ref(), "uri");
    let max = s.listen_limits.max_uri_bytes;
    if uri.len() > max {
        return RpcError::invalid_params(format!(
            "the URI is {} bytes long; the limit is {max}",
            uri.len()
        ))
        .data(json!({"limit": "max_uri_bytes", "max": max}))
        .into();
    }
    if on {
        let what = || format!("resource `{}`", truncated(uri));
        if let Err(refused) = reach(call, what, target_of(&s.catalog, uri), target_scopes) {
            return refused;
        }
    }
    let nonce = call
        .session
        .and_then(|token| s.peer.open_stream(call.subject(), token).ok());
    if let Some(session) = nonce {
        s.changes.publish(Change::Subscription {
            session,
            uri: uri.to_owned(),
            on,
        });
    }
    immediate(s, call, Ok(json!({})))
}

/// `resources/subscribe` of a 2025 client.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn subscribe(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    subscription(s, &call, true)
}

/// `resources/unsubscribe` of a 2025 client.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn unsubscribe(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    subscription(s, &call, false)
}

/// What a URI names in `catalog`: the resource at it, else a template it
/// matches (with its variables), else nothing.
fn target_of(catalog: &Catalog, uri: &str) -> Option<Target> {
    match catalog.resource(uri) {
        Some(found) => Some(Target::Resource(found)),
        None => catalog
            .template_for(uri)
            .map(|(template, vars)| Target::Template(template, vars)),
    }
}

/// What a resource target requires of a caller.
fn target_scopes(target: &Target) -> &Scopes {
    match target {
        Target::Resource(resource) => &resource.about.scopes,
        Target::Template(template, _) => &template.template.about.scopes,
    }
}

/// `ping` of a 2025 client: `{}`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn empty(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    immediate(s, &call, Ok(json!({})))
}

/// `logging/setLevel`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn set_level(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    immediate(s, &call, legacy::set_level(call.params.as_ref()))
}

/// What a list method lists: the key of its result, the catalog's items,
/// what each requires of a caller, and its listing.
trait Listed: Sized {
    /// The member of the result holding the page.
    const KEY: &'static str;
    /// The catalog's items, in order.
    fn items(catalog: &Catalog) -> Vec<Arc<Self>>;
    /// What a caller must hold to see it.
    fn scopes(&self) -> &Scopes;
    /// Its entry on a page.
    fn listing(&self) -> impl Serialize + '_;
}

impl Listed for Registered {
    const KEY: &'static str = "tools";
    fn items(catalog: &Catalog) -> Vec<Arc<Self>> {
        catalog.tools()
    }
    fn scopes(&self) -> &Scopes {
        &self.scopes
    }
    // Each definition was serialised at registration; the page copies
    // those bytes.
    fn listing(&self) -> impl Serialize + '_ {
        &*self.definition
    }
}

impl Listed for Resource {
    const KEY: &'static str = "resources";
    fn items(catalog: &Catalog) -> Vec<Arc<Self>> {
        catalog.resources()
    }
    fn scopes(&self) -> &Scopes {
        &self.about.scopes
    }
    fn listing(&self) -> impl Serialize + '_ {
        Resource::listing(self)
    }
}

impl Listed for RegisteredTemplate {
    const KEY: &'static str = "resourceTemplates";
    fn items(catalog: &Catalog) -> Vec<Arc<Self>> {
        catalog.templates()
    }
    fn scopes(&self) -> &Scopes {
        &self.template.about.scopes
    }
    fn listing(&self) -> impl Serialize + '_ {
        RegisteredTemplate::listing(self)
    }
}

impl Listed for Prompt {
    const KEY: &'static str = "prompts";
    fn items(catalog: &Catalog) -> Vec<Arc<Self>> {
        catalog.prompts()
    }
    fn scopes(&self) -> &Scopes {
        &self.about.scopes
    }
    fn listing(&self) -> impl Serialize + '_ {
        Prompt::listing(self)
    }
}

/// A list method: one page of the items the caller may see, serialised
/// from the catalog's own values straight into the answer.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn list<T: Listed>(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    let items = T::items(&s.catalog);
    let listings: Vec<_> = items
        .iter()
        .filter(|item| s.list_all || item.scopes().permit(call.principal))
        .map(|item| item.listing())
        .collect();
    match pagination::page(&listings, call.params.as_ref(), s.page_size) {
        Ok((page, next)) => Answer::done(Outcome::Result(
            call.reply(&s.finishing)
                .result(&s.finishing.list(call.era, T::KEY, page, next)),
        )),
        Err(error) => error
            .into_rpc(call.era, call.method.unwrap_or_default())
            .into(),
    }
}

/// The item a call names, `found` in the catalog (`None`: it has none of
/// that name), once its scopes permit the caller; else the answer that
/// refuses the call, naming `what` it asked for.
fn reach<T>(
    call: &Call<'_>,
    what: impl FnOnce() -> String,
    found: Option<T>,
    scopes: fn(&T) -> &Scopes,
) -> Result<Option<T>, Answer> {
    if let Some(item) = &found
        && !scopes(item).permit(call.principal)
    {
        return Err(Answer::Forbidden {
            what: what(),
            scopes: scopes(item).to_vec(),
        });
    }
    Ok(found)
}

/// The -32602 of a call naming a `kind` of item (`tool`, `prompt`) the
/// catalog has none of by `name`.
fn unknown(call: &Call<'_>, kind: &str, name: &str) -> Answer {
    HandlerError::InvalidParams {
        message: format!("unknown {kind} `{}`", truncated(name)),
        data: Some(json!({"name": truncated(name)})),
    }
    .into_rpc(call.era, call.method.unwrap_or_default())
    .into()
}

/// `tools/call`: the tool run on its request, or as a task.
fn tools_call(s: &Surface, call: Call<'_>, env: Env<'_>) -> Answer {
    let name = text(call.params.as_ref(), "name");
    let what = || format!("tool `{}`", truncated(name));
    match reach(&call, what, s.catalog.tool(name), |t| &t.scopes) {
        Err(refused) => refused,
        Ok(None) => unknown(&call, "tool", name),
        Ok(Some(found)) if found.task_support != TaskSupport::Forbidden => {
            s.tasks.call(found, call, env)
        }
        Ok(Some(found)) => tool::call(found, call, env),
    }
}

/// `resources/read`: a resource of that URI, else a template it matches.
/// A URI naming neither is resource not found, answered by
/// [`resource::read`] once the call is readied.
fn resources_read(s: &Surface, call: Call<'_>, env: Env<'_>) -> Answer {
    let uri = text(call.params.as_ref(), "uri").to_owned();
    let target = target_of(&s.catalog, &uri);
    let what = || format!("resource `{}`", truncated(&uri));
    match reach(&call, what, target, target_scopes) {
        Err(refused) => refused,
        Ok(target) => resource::read(target, uri, call, env),
    }
}

/// `prompts/get`.
fn prompts_get(s: &Surface, call: Call<'_>, env: Env<'_>) -> Answer {
    let name = text(call.params.as_ref(), "name");
    let what = || format!("prompt `{}`", truncated(name));
    match reach(&call, what, s.catalog.prompt(name), |p| &p.about.scopes) {
        Err(refused) => refused,
        Ok(None) => unknown(&call, "prompt", name),
        Ok(Some(found)) => prompt::get(&found, call, env),
    }
}

/// `completion/complete`, with the server's completer and its fallback
/// handler; method not found when the server has neither.
fn complete(s: &Surface, call: Call<'_>, env: Env<'_>) -> Answer {
    if s.completion.is_none() && s.completer.is_empty() {
        return method_not_found(call.method.unwrap_or_default()).into();
    }
    completion::complete(&s.completer, s.completion.as_ref(), &s.catalog, call, env)
}

/// `subscriptions/listen`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn listen(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    s.listen(&call)
}

/// `skills/list`: one page of the skills' entries, cacheable as every
/// list is.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn skills_list(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    match pagination::page(s.skills.entries(), call.params.as_ref(), s.page_size) {
        Ok((page, next)) => Answer::done(Outcome::Result(
            call.reply(&s.finishing)
                .result(&s.finishing.list(call.era, "skills", page, next)),
        )),
        Err(error) => error
            .into_rpc(call.era, call.method.unwrap_or_default())
            .into(),
    }
}

/// `skills/get`: one skill's entry, cacheable as `resources/read` is; a
/// URI naming no skill served is -32602.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn skills_get(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    match s.skills.get(call.params.as_ref()) {
        Ok(result) => Answer::done(Outcome::Result(
            call.reply(&s.finishing).finished(result, true),
        )),
        Err(error) => error
            .into_rpc(call.era, call.method.unwrap_or_default())
            .into(),
    }
}

/// `resources/directory/read`: one page of a directory's direct children;
/// a URI naming no directory is -32602. Not a cacheable result.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn directory_read_answer(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    let page = s
        .skills
        .directory(call.params.as_ref())
        .and_then(|children| pagination::page(children, call.params.as_ref(), s.page_size));
    match page {
        Ok((page, next)) => {
            let mut result = Map::new();
            result.insert("resources".into(), Value::Array(page.to_vec()));
            if let Some(next) = next {
                result.insert("nextCursor".into(), Value::String(next));
            }
            Answer::done(Outcome::Result(
                call.reply(&s.finishing)
                    .finished(Value::Object(result), false),
            ))
        }
        Err(error) => error
            .into_rpc(call.era, call.method.unwrap_or_default())
            .into(),
    }
}

/// `tasks/get`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn tasks_get(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    s.tasks.get(&call, &s.finishing)
}

/// `tasks/update`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn tasks_update(s: &Surface, call: Call<'_>, env: Env<'_>) -> Answer {
    s.tasks.update(&call, env)
}

/// `tasks/cancel`.
#[allow(clippy::needless_pass_by_value)] // every row's answer takes the call by value
fn tasks_cancel(s: &Surface, call: Call<'_>, _: Env<'_>) -> Answer {
    s.tasks.cancel(&call, &s.finishing)
}

impl Surface {
    /// Answers one trusted message (see the [module docs](self)): its
    /// session token opened, then the method's row of [`ROUTES`] answers.
    pub(crate) fn answer(&self, call: Call<'_>) -> Answer {
        // What a 2025 client declared, from its session token: the token
        // opens, or the client must initialize again.
        let declared = match call.session {
            Some(token) if call.era == Era::Legacy && call.method != Some("initialize") => {
                match self.peer.open_session(call.subject(), token) {
                    Ok(declared) => Some(declared),
                    Err(refused) => {
                        return Answer::Done(Outcome::Error(refused.rpc_error()), Session::Refused);
                    }
                }
            }
            _ => None,
        };
        match call.kind {
            MessageKind::Notification => return Answer::Accepted,
            MessageKind::Request => {}
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
        let Some(route) = route(method, call.era, self.advertised) else {
            return method_not_found(method).into();
        };
        let env = Env {
            finishing: &self.finishing,
            sealer: &self.sealer,
            shared: &self.shared,
            peer: &self.peer,
            declared: declared.as_ref(),
            ledger: &self.ledger,
            notification_bytes: self.notification_bytes,
        };
        (route.answer)(self, call, env)
    }

    /// Delivers a 2025 client's message that is no call: its JSON-RPC
    /// response to a request a call of this server sent mid-call (Validate
    /// held it to the response envelope), from `caller` (whose principal
    /// is `subject`), carrying the session token `session`. Handed to the waiting call,
    /// here or through the [`AnswerRelay`], else refused: a token that
    /// does not open, or a message that is no response, first.
    pub(crate) fn deliver(
        &self,
        message: Option<Value>,
        subject: &str,
        caller: &Caller,
        session: Option<&str>,
    ) -> Delivery {
        let refused = |refused| Delivery(Box::pin(std::future::ready(Err(refused))));
        if let Some(token) = session
            && let Err(refused_session) = self.peer.open_session(subject, token)
        {
            return refused(refused_session);
        }
        match message {
            Some(response) if jsonrpc::is_response(&response) => {
                self.peer.deliver(response, caller)
            }
            _ => refused(Refused::Unknown),
        }
    }

    /// The answer to a call the ledger refused: 429 for the caller's share,
    /// 503 for the global cap, with the kind's `Retry-After`.
    pub(crate) fn busy(&self, refusal: Refusal) -> Answer {
        Answer::Busy {
            error: self.ledger.error(refusal),
            refusal,
            retry_after: self.ledger.share(refusal.kind()).retry_after,
        }
    }

    /// Whether a 2025 client's GET on the endpoint opens a stream: the
    /// server serves a 2025 revision and advertises something a stream
    /// delivers (`listChanged` or `subscribe`).
    pub(crate) fn serves_legacy_stream(&self) -> bool {
        listens(self.advertised) && self.revisions.iter().any(|r| r.era() == Era::Legacy)
    }

    /// The 2025 GET stream of the session token `token`, for `principal`
    /// counted as `caller` (see [`listen`](super::listen)): every list
    /// change the server announces, and `resources/updated` for what the
    /// session subscribes to while it is open. `behind`: the client resumes
    /// (`Last-Event-ID`) and is told conservatively at once. A token that
    /// does not open, or names no stream, is refused as a POST's is; a
    /// caller over its share, or a server at its cap, is busy.
    pub(crate) fn legacy_stream(
        &self,
        principal: Option<&crate::auth::Principal>,
        caller: &Caller,
        token: &str,
        behind: bool,
    ) -> Answer {
        let subject = principal.map_or("", |p| p.subject.as_str());
        let nonce = match self.peer.open_stream(subject, token) {
            Ok(nonce) => nonce,
            Err(refused) => {
                return Answer::Done(Outcome::Error(refused.rpc_error()), Session::Refused);
            }
        };
        let place = match self.ledger.take_evictable(Kind::LegacyStreams, caller, 1) {
            Ok(place) => place,
            Err(refusal) => return self.busy(refusal),
        };
        let stream = Listen::session(&nonce, &self.listen_limits)
            .permits(self.permits(principal))
            .support(self.advertised.listen())
            .held_by(principal)
            .behind(behind)
            .open(&self.changes, place);
        Answer::Listen(Box::new(stream))
    }

    /// Whether `principal` may be told that a URI changed: updates are
    /// filtered by the caller's scopes as lists are (a watched URI covers
    /// what lies beneath it, which nobody checked when it was asked for);
    /// a URI naming no resource or template is told.
    fn permits(&self, principal: Option<&crate::auth::Principal>) -> Permits {
        let (catalog, holder, list_all) = (self.catalog.clone(), principal.cloned(), self.list_all);
        Permits::new(move |uri| {
            list_all
                || target_of(&catalog, uri)
                    .is_none_or(|target| target_scopes(&target).permit(holder.as_ref()))
        })
    }

    /// `subscriptions/listen`: the stream of the catalog's changes the
    /// client's filter asked for (see [`listen`](super::listen)).
    fn listen(&self, call: &Call<'_>) -> Answer {
        let limits = &self.listen_limits;
        let filter = match Filter::from_params(call.params.as_ref(), limits) {
            Ok(filter) => filter,
            Err(error) => return error.into(),
        };
        let place = match self
            .ledger
            .take_evictable(Kind::ListenStreams, call.caller(), 1)
        {
            Ok(place) => place,
            Err(refusal) => return self.busy(refusal),
        };
        let stream = Listen::new(call.id.clone(), filter)
            .permits(self.permits(call.principal))
            .support(self.advertised.listen())
            .lifetime(limits.max_lifetime)
            .held_by(call.principal)
            .server_info(self.finishing.clone())
            .open(&self.changes, place);
        Answer::Listen(Box::new(stream))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;

    use super::*;
    use crate::protocol::revision::Era;

    /// Every method each era serves, as the module docs list them.
    const MODERN: &[&str] = &[
        "server/discover",
        "subscriptions/listen",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "skills/list",
        "skills/get",
        "resources/directory/read",
    ];
    const LEGACY: &[&str] = &[
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    ];

    /// A server that advertises everything.
    const ALL: Advertised = Advertised {
        tools: true,
        prompts: true,
        resources: true,
        completions: true,
        logging: true,
        list_changed: true,
        subscribe: true,
        tasks: true,
        skills: true,
        directory_read: true,
    };

    /// Rule: the method table has exactly one row for each method of each
    /// era, and none for a method an era does not serve.
    #[test]
    fn every_method_of_each_era_has_exactly_one_row() {
        for (era, methods) in [(Era::Modern, MODERN), (Era::Legacy, LEGACY)] {
            for method in methods {
                let rows = ROUTES
                    .iter()
                    .filter(|r| r.method == *method && r.eras.has(era))
                    .count();
                assert_eq!(rows, 1, "{era:?} `{method}`");
                assert!(route(method, era, ALL).is_some(), "{era:?} `{method}`");
            }
            for row in ROUTES.iter().filter(|r| r.eras.has(era)) {
                assert!(
                    methods.contains(&row.method),
                    "{era:?} serves `{}`, which it should not",
                    row.method
                );
            }
        }
    }

    /// Rule: a method gated behind a capability is routed only when the
    /// server advertises it.
    #[test]
    fn a_gated_method_needs_its_capability() {
        let none = Advertised::default();
        assert!(route("tools/call", Era::Modern, none).is_none());
        assert!(route("tasks/get", Era::Modern, none).is_none());
        assert!(route("skills/list", Era::Modern, none).is_none());
        let skills_only = Advertised {
            skills: true,
            ..none
        };
        assert!(route("skills/get", Era::Modern, skills_only).is_some());
        assert!(route("resources/directory/read", Era::Modern, skills_only).is_none());
        assert!(route("skills/list", Era::Legacy, ALL).is_none());
        assert!(route("subscriptions/listen", Era::Modern, none).is_none());
        assert!(route("resources/subscribe", Era::Legacy, none).is_none());
        assert!(route("server/discover", Era::Modern, none).is_some());
        assert!(route("ping", Era::Legacy, none).is_some());
    }

    fn request(era: Era, method: &str) -> Call<'_> {
        Call {
            kind: MessageKind::Request,
            era,
            revision: None,
            id: json!(7),
            method: Some(method),
            params: Some(json!({})),
            principal: None,
            caller: Caller::unknown(),
            raw: Bytes::new(),
            span: tracing::Span::none(),
            slot: None,
            session: None,
        }
    }

    /// A surface with nothing registered, serving every revision.
    fn surface() -> Surface {
        SurfaceBuilder::default()
            .build(
                Revision::ALL.to_vec(),
                Sealer::random().unwrap(),
                ChangeBus::new(),
                Ledger::default(),
                false,
                crate::surface::notify::DEFAULT_NOTIFICATION_BYTES_PER_REQUEST,
            )
            .unwrap()
    }

    fn error_of(answer: Answer) -> RpcError {
        match answer {
            Answer::Done(Outcome::Error(error), Session::Unchanged) => error,
            other => panic!("not an error: {other:?}"),
        }
    }

    /// Rule: a method the table has no row for in the request's era is
    /// -32601 naming it: unknown, removed in 2026, or 2026-only.
    #[test]
    fn an_unrouted_method_is_method_not_found() {
        let surface = surface();
        for (era, method) in [
            (Era::Modern, "no/such"),
            (Era::Modern, "initialize"),
            (Era::Modern, "ping"),
            (Era::Legacy, "server/discover"),
            (Era::Legacy, "tasks/get"),
            // No tool registered: tools are not advertised.
            (Era::Modern, "tools/call"),
        ] {
            let error = error_of(surface.answer(request(era, method)));
            assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{era:?} {method}");
            assert_eq!(error.data, Some(json!({"method": method})));
        }
        let answer = surface.answer(request(Era::Modern, "server/discover"));
        assert!(matches!(answer, Answer::Done(Outcome::Result(_), _)));
    }

    /// Rule: a 2025 request whose session token does not open is refused
    /// as a done answer saying so, whatever it asks.
    #[test]
    fn a_session_token_that_does_not_open_is_refused() {
        let mut call = request(Era::Legacy, "ping");
        call.session = Some("forged");
        match surface().answer(call) {
            Answer::Done(Outcome::Error(error), Session::Refused) => {
                assert_eq!(error.data, Some(json!({"reason": "session"})));
            }
            other => panic!("not refused: {other:?}"),
        }
    }
}
