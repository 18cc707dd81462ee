//! The [`Server`]: everything the stages read, built once at start-up.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::future::Future;

use crate::auth::{AuthConfig, AuthConfigError, AuthSetup, Authenticator, DpopReplay, Principal};
use crate::ledger::{Caller, Grouping, Kind, Ledger, Share};
use crate::mrtr::{KeyError, Sealer, SealingKey};
use crate::origin::{OriginError, OriginPolicy};
use crate::protocol::headers::HeaderParam;
use crate::protocol::revision::Revision;
use crate::protocol::schema::{SchemaError, Schemas};
use crate::surface::{
    AnswerRelay, CachePolicy, CacheScope, Catalog, Change, ChangeBus, ChangeRelay, Completer,
    CompletionRequest, Completions, Context, HandlerError, Handlers, Icon, LegacyRequests,
    ListenLimits, Prompt, Resource, ResourceTemplate, Skill, Surface, SurfaceBuilder, SurfaceError,
    TaskLimits, Tool, boxed_completion,
};
use crate::tasks::TaskStore;

/// Ceilings and timeouts of the parse step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest body accepted, in bytes, inclusive. Default 8,000,000.
    pub body_bytes: usize,
    /// The longest query string accepted, in bytes, inclusive. Default 1,000,000.
    pub query_bytes: usize,
    /// How long a body read may stall before the request is answered 408.
    /// Default 15,000 ms.
    pub read_timeout: Duration,
    /// How long a whole body read may take, however steadily it trickles in,
    /// before the request is answered 408. Default 60 s.
    pub body_deadline: Duration,
    /// How many body bytes all requests together may hold, from their read
    /// until the last thing holding them ends (the parsed message, a
    /// streamed answer's handler); a request that would go over is answered
    /// 503 with `Retry-After`, before its body is read when it declares its
    /// length. Default 256 MiB. The [`ledger`](crate::ledger)'s
    /// [`Kind::Bodies`](crate::ledger::Kind::Bodies) cap.
    pub bodies_in_flight: usize,
    /// How many of those bytes one caller may hold (bodies are counted by
    /// the client's address: they are read before their credentials); more
    /// is answered 429 with `Retry-After`. Default 32 MiB.
    pub bodies_per_caller: usize,
    /// Calls to the authorization server (token introspection) in flight
    /// at once; one more is answered 503 with `Retry-After`. Default 64.
    pub auth_calls: usize,
    /// Of those, how many one client address may cause; more is answered
    /// 429 with `Retry-After`. Default 8.
    pub auth_calls_per_caller: usize,
    /// DPoP proofs remembered against replay (each for its `iat` window,
    /// 10 minutes by default); one more is answered 503 with
    /// `Retry-After`. Default 200,000 (some 30 MB). The
    /// [`ledger`](crate::ledger)'s
    /// [`Kind::DpopProofs`](crate::ledger::Kind::DpopProofs) cap.
    pub dpop_proofs: usize,
    /// Of those, how many one client address may have made; more is
    /// answered 429 with `Retry-After`. Default 4,096 (about 7 requests a
    /// second sustained over the window).
    pub dpop_proofs_per_caller: usize,
    /// Bytes of progress and log notifications one request's handler may
    /// have queued for a client that has not read them; beyond it a
    /// progress notification replaces the one queued and a log message is
    /// dropped (the handler's `progress()`/`log()` answer `false`). Default
    /// 1 MiB.
    pub notification_bytes_per_request: usize,
    /// Of the bytes queued so, what one caller's requests may hold
    /// together; beyond it as above. Default 8 MiB. The
    /// [`ledger`](crate::ledger)'s
    /// [`Kind::Notifications`](crate::ledger::Kind::Notifications) share.
    pub notification_bytes_per_caller: usize,
    /// What all requests may hold together; beyond it as above. Default
    /// 64 MiB.
    pub notification_bytes: usize,
    /// TLS handshakes in progress at once ([`serve`](crate::serve()) with
    /// [`Tls`](crate::serve::Tls)); a connection over it is closed as soon
    /// as accepted. Default 1,024. The [`ledger`](crate::ledger)'s
    /// [`Kind::Handshakes`](crate::ledger::Kind::Handshakes) cap.
    pub handshakes: usize,
    /// Of those, how many one peer address may hold. Default 16.
    pub handshakes_per_caller: usize,
    /// How client addresses group into callers for every per-caller share
    /// of the ledger (default: an IPv4 address, an IPv6 /64).
    pub grouping: Grouping,
    /// How many JSON values (each scalar, array and object) one body may
    /// hold; more is 413 (-32600), refused while parsing, before the tree is
    /// built whole. Bounds what a body costs once parsed, authenticated or
    /// not. Default 250,000.
    pub json_values: usize,
    /// The longest string id a request may carry, in bytes, inclusive: a
    /// longer id is not a request id wymcp echoes (classification tags the
    /// message an unidentified request; Validate refuses it with a `null`
    /// id). Default 1,024.
    pub id_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 8_000_000,
            query_bytes: 1_000_000,
            read_timeout: Duration::from_millis(15_000),
            body_deadline: Duration::from_secs(60),
            bodies_in_flight: 256 * 1024 * 1024,
            bodies_per_caller: 32 * 1024 * 1024,
            auth_calls: 64,
            auth_calls_per_caller: 8,
            dpop_proofs: 200_000,
            dpop_proofs_per_caller: 4096,
            notification_bytes_per_request: crate::surface::DEFAULT_NOTIFICATION_BYTES_PER_REQUEST,
            notification_bytes_per_caller: 8 * 1024 * 1024,
            notification_bytes: 64 * 1024 * 1024,
            handshakes: 1024,
            handshakes_per_caller: 16,
            grouping: Grouping::default(),
            json_values: 250_000,
            id_bytes: crate::protocol::jsonrpc::DEFAULT_MAX_ID_BYTES,
        }
    }
}

/// An MCP server: configuration and registries, shared by every request.
#[derive(Debug)]
pub struct Server {
    pub(crate) endpoint: String,
    pub(crate) limits: Limits,
    pub(crate) schemas: Arc<Schemas>,
    pub(crate) auth: Option<AuthSetup>,
    pub(crate) header_params: HashMap<String, Vec<HeaderParam>>,
    pub(crate) surface: Surface,
    pub(crate) origin: OriginPolicy,
    /// The instruments it records through (`metrics` feature).
    #[cfg(feature = "metrics")]
    pub(crate) metrics: crate::metrics::Instruments,
}

impl Server {
    /// Starts building a server.
    #[must_use]
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The path of the MCP endpoint, `/mcp` by default.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The parse step's ceilings and read timeout.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The count of what callers hold: bodies, listen streams, waiting
    /// requests, running tasks, calls to the authorization server, queued
    /// notifications (see
    /// [`ledger`](crate::ledger)). A stage of the application's takes its
    /// places here too.
    #[must_use]
    pub fn ledger(&self) -> &Ledger {
        &self.surface.ledger
    }

    /// Who the ledger counts a request against: `principal`'s subject when
    /// there is one, else `addr` grouped by [`Limits::grouping`], else
    /// [`Caller::unknown`].
    #[must_use]
    pub fn caller_of(
        &self,
        principal: Option<&Principal>,
        addr: Option<std::net::IpAddr>,
    ) -> Caller {
        Caller::of(
            principal.map(|p| p.subject.as_str()),
            addr,
            self.limits.grouping,
        )
    }

    /// The revisions this server serves, oldest first.
    #[must_use]
    pub fn revisions(&self) -> &[Revision] {
        &self.surface.revisions
    }

    /// The sealer of MRTR `requestState` (see [`mrtr`](crate::mrtr)).
    #[must_use]
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.surface.sealer
    }

    /// The MCP JSON Schemas, one validator per client method and revision,
    /// each compiled on its first use; shared by every server of the
    /// process.
    #[must_use]
    pub(crate) fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// The auth configuration, when the server was built with an
    /// authenticator.
    #[must_use]
    pub fn auth_config(&self) -> Option<&AuthConfig> {
        self.auth.as_ref().map(|a| &a.config)
    }

    /// The `x-mcp-header` annotations of the tool named `tool`: the
    /// `Mcp-Param-{Name}` rows `HeaderBinding` checks on its `tools/call`;
    /// empty for a tool without any, or no such tool.
    #[must_use]
    pub fn header_params(&self, tool: &str) -> &[HeaderParam] {
        self.header_params.get(tool).map_or(&[], Vec::as_slice)
    }

    /// The application's value of type `T`, as given to
    /// [`ServerBuilder::state`]: what a handler reads with
    /// [`Context::state`], for a stage to read too.
    ///
    /// ```
    /// struct Quota(u32);
    ///
    /// let server = wymcp::Server::builder().state(Quota(10)).build().unwrap();
    /// assert_eq!(server.state::<Quota>().map(|q| q.0), Some(10));
    /// assert!(server.state::<String>().is_none());
    /// ```
    #[must_use]
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.surface.shared.get::<Arc<T>>().map(AsRef::as_ref)
    }

    /// The application's value of type `T` as an `Arc`, for a future that
    /// outlives the exchange (see [`state`](Self::state)).
    #[must_use]
    pub fn state_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.surface.shared.get::<Arc<T>>().cloned()
    }

    /// Whether `host` (a `Host` header's value, or the request target's
    /// authority) names a host this server answers to, for a request that
    /// arrived on `bound` ([`BoundTo`](crate::BoundTo), else
    /// [`bound_to`](Self::bound_to)): the rule `OriginCheck` applies.
    #[must_use]
    pub fn allows_host(&self, host: &[u8], bound: Option<SocketAddr>) -> bool {
        self.origin.allows_host(host, bound)
    }

    /// Whether an `Origin` header's value names an origin this server
    /// allows: the rule `OriginCheck` applies.
    #[must_use]
    pub fn allows_origin(&self, origin: &[u8]) -> bool {
        self.origin.allows_origin(origin)
    }

    /// The address given to [`ServerBuilder::bound_to`], if any.
    #[must_use]
    pub fn bound_to(&self) -> Option<SocketAddr> {
        self.origin.bound_to
    }

    /// Holds `message`, of `kind`, to `revision`'s official JSON Schema: the
    /// rule `Validate` applies (a refusal names the failing pointer).
    pub fn check_message(
        &self,
        revision: Revision,
        kind: crate::protocol::jsonrpc::MessageKind,
        message: &serde_json::Value,
    ) -> Result<(), crate::protocol::error::RpcError> {
        crate::protocol::validation::check(&self.schemas, revision, kind, message)
    }

    /// The bus every `subscriptions/listen` stream hears.
    #[must_use]
    pub(crate) fn changes(&self) -> &ChangeBus {
        &self.surface.changes
    }

    /// Tells open listen streams that asked for it that the tool list changed.
    pub fn notify_tools_changed(&self) {
        self.changes().publish(Change::ToolsListChanged);
    }

    /// Tells open listen streams that asked for it that the prompt list changed.
    pub fn notify_prompts_changed(&self) {
        self.changes().publish(Change::PromptsListChanged);
    }

    /// Tells open listen streams that asked for it that the resource list changed.
    pub fn notify_resources_changed(&self) {
        self.changes().publish(Change::ResourcesListChanged);
    }

    /// Tells open listen streams watching `uri` that the resource changed.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.changes().publish(Change::ResourceUpdated(uri.into()));
    }

    /// Ends every open listen stream cleanly (the `complete` result, then the
    /// end of the stream), and every 2025 GET stream (its end, no result):
    /// call it before a graceful shutdown waits for open connections.
    /// Returns how many streams were told.
    pub fn close_subscriptions(&self) -> usize {
        self.changes().close_all()
    }

    /// How many task handlers run on this replica.
    #[must_use]
    pub fn running_tasks(&self) -> usize {
        self.surface.tasks.running()
    }

    /// How many `subscriptions/listen` streams are open.
    #[must_use]
    pub fn listen_streams(&self) -> usize {
        self.ledger().held(Kind::ListenStreams)
    }

    /// The tools, prompts and resources served, changeable at run time.
    #[must_use]
    pub fn catalog(&self) -> &Catalog {
        &self.surface.catalog
    }
}

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    endpoint: String,
    limits: Limits,
    revisions: Vec<Revision>,
    /// Every sealing key given, the one that seals last.
    sealing_keys: Vec<SealingKey>,
    /// Keys that only unseal.
    accepted_keys: Vec<SealingKey>,
    request_state_ttl: Option<Duration>,
    auth: Option<AuthSetup>,
    surface: SurfaceBuilder,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    bound_to: Option<SocketAddr>,
    relay: Option<Arc<dyn ChangeRelay>>,
    dpop_replay: Option<Arc<dyn DpopReplay>>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            endpoint: "/mcp".to_owned(),
            limits: Limits::default(),
            revisions: vec![Revision::V2025_11_25, Revision::V2026_07_28],
            sealing_keys: Vec::new(),
            accepted_keys: Vec::new(),
            request_state_ttl: None,
            auth: None,
            surface: SurfaceBuilder::default(),
            allowed_origins: None,
            allowed_hosts: None,
            bound_to: None,
            dpop_replay: None,
            relay: None,
        }
    }
}

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The endpoint path does not start with `/`.
    #[error("the endpoint path `{0}` must start with `/`")]
    Endpoint(String),
    /// No revision is served.
    #[error("a server must serve at least one protocol revision")]
    NoRevision,
    /// The embedded MCP schema of a served revision could not be read (a
    /// bug in wymcp). Only the file's index is read at build; each method's
    /// validator is compiled on its first use, and one that does not
    /// compile answers its messages as an internal error (500/-32603).
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The auth configuration is inconsistent.
    #[error("auth: {0}")]
    Auth(#[from] AuthConfigError),
    /// A tool, prompt or resource could not be registered.
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    /// A handler is a `&self` method of a state type the server was not
    /// given (`ServerBuilder::state`).
    #[error(
        "{item} is a method of `{state}`, which the server was not given: add \
         `.state(…)` with a `{state}` to the builder"
    )]
    MissingState {
        /// The state type's name.
        state: &'static str,
        /// The item (`tool \`add_note\``).
        item: &'static str,
    },
    /// Two completion handlers for one key (a prompt's argument or a
    /// template's variable), across the [`Completer`]s given.
    #[error("two completion handlers for the {0}: give each key one")]
    RepeatedCompletion(String),
    /// An allowed origin or host cannot be parsed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// No sealing key was given and the operating system gave no randomness
    /// to draw one: wymcp never falls back to a weaker source.
    #[error(transparent)]
    SealingKey(#[from] KeyError),
}

impl ServerBuilder {
    /// The path of the MCP endpoint (default `/mcp`).
    #[must_use]
    pub fn endpoint(mut self, path: impl Into<String>) -> Self {
        self.endpoint = path.into();
        self
    }

    /// The parse step's ceilings and read timeout.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The largest body accepted, in bytes (default 8,000,000).
    #[must_use]
    pub fn body_ceiling(mut self, bytes: usize) -> Self {
        self.limits.body_bytes = bytes;
        self
    }

    /// The longest query string accepted, in bytes (default 1,000,000).
    #[must_use]
    pub fn query_ceiling(mut self, bytes: usize) -> Self {
        self.limits.query_bytes = bytes;
        self
    }

    /// How long a body read may stall before a 408 (default 15 s).
    #[must_use]
    pub fn read_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.limits.read_timeout = timeout;
        self
    }

    /// The revisions served (default 2025-11-25 and 2026-07-28).
    #[must_use]
    pub fn revisions(mut self, revisions: impl IntoIterator<Item = Revision>) -> Self {
        self.revisions = revisions.into_iter().collect();
        self.revisions.sort_unstable();
        self.revisions.dedup();
        self
    }

    /// The key that seals MRTR `requestState` from now on. A key set earlier
    /// stays accepted for unsealing, so rotating is calling this again with
    /// the new key. Without any, a random key is drawn per process.
    #[must_use]
    pub fn sealing_key(mut self, key: SealingKey) -> Self {
        self.sealing_keys.push(key);
        self
    }

    /// A key that still unseals `requestState` but never seals (a retired key).
    #[must_use]
    pub fn accept_sealing_key(mut self, key: SealingKey) -> Self {
        self.accepted_keys.push(key);
        self
    }

    /// How long a sealed `requestState` stays valid (default 10 minutes).
    #[must_use]
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = Some(ttl);
        self
    }

    /// Requires every request to be authenticated by `authenticator`, and
    /// presents the server as the protected resource `config` describes
    /// (challenges, RFC 9728 metadata). See [`crate::auth`].
    #[must_use]
    pub fn auth(mut self, authenticator: impl Authenticator, config: AuthConfig) -> Self {
        self.auth = Some(AuthSetup::new(authenticator, config));
        self
    }

    /// Where DPoP proofs' `jti`s are shared between replicas, so that a
    /// proof replayed to another replica is refused
    /// (`wymcp::redis::RedisDpopReplay`, feature `redis`). Without it each
    /// replica remembers the proofs it saw; with it, too (a replay to the
    /// same replica is refused without asking the store). See
    /// [`AuthConfig::dpop`](crate::auth::AuthConfig::dpop).
    #[must_use]
    pub fn dpop_replay(mut self, replay: impl DpopReplay) -> Self {
        self.dpop_replay = Some(Arc::new(replay));
        self
    }

    /// The origins whose pages may call this server: a present `Origin` header
    /// must name one (`scheme://host[:port]`), or the request is refused 403.
    /// Default: loopback origins only (`http(s)://localhost|127.0.0.1|[::1]`,
    /// any port). See [`OriginCheck`](crate::stages::OriginCheck).
    #[must_use]
    pub fn allowed_origins<I>(mut self, origins: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// The names this server answers to: the `Host` header must name one
    /// (`host`, any port, or `host:port`), or the request is refused 403.
    /// Default: `localhost`, `127.0.0.1` and `[::1]` when bound to loopback,
    /// any host otherwise. See [`OriginCheck`](crate::stages::OriginCheck).
    #[must_use]
    pub fn allowed_hosts<I>(mut self, hosts: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The address the server is served on, for a server not served with
    /// [`wymcp::serve`](crate::serve()) (which tells the chain itself). It
    /// decides only whether the default `Host` policy is the loopback one;
    /// a server that knows no address is taken to be loopback-bound.
    #[must_use]
    pub fn bound_to(mut self, addr: SocketAddr) -> Self {
        self.bound_to = Some(addr);
        self
    }

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

    /// Shares `value` with every handler: a handler reaches it with
    /// [`Context::state`] by its type, without cloning it into each
    /// closure. One value per type; a second of the same type replaces the
    /// first.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::sync::RwLock;
    /// use wymcp::{Context, Server, Tool, ToolResult};
    ///
    /// struct Store(RwLock<HashMap<u64, String>>);
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Get { id: u64 }
    ///
    /// let server = Server::builder()
    ///     .state(Store(RwLock::new(HashMap::from([(1, "milk".to_owned())]))))
    ///     .tool(Tool::new("get_note").handler(|args: Get, cx: Context| async move {
    ///         let store = cx.state::<Store>().0.read().unwrap();
    ///         Ok(ToolResult::text(store.get(&args.id).cloned().unwrap_or_default()))
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.surface.state.insert(Arc::new(value));
        self
    }

    /// What the server does, for people (`serverInfo.description`).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.surface.info.description = Some(description.into());
        self
    }

    /// An icon a client may show for the server (`serverInfo.icons`).
    ///
    /// ```
    /// use wymcp::{Icon, Server};
    ///
    /// let server = Server::builder()
    ///     .info("notes", "1.0.0")
    ///     .title("Notes")
    ///     .icon(Icon::new("https://example.com/notes.svg").mime_type("image/svg+xml").sizes(["any"]))
    ///     .website_url("https://example.com/notes")
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.surface.info.icons.push(icon);
        self
    }

    /// The server's website (`serverInfo.websiteUrl`).
    #[must_use]
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.surface.info.website_url = Some(url.into());
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

    /// Registers tools: the `tools()` of a `#[wymcp::tools]` impl, or any
    /// list of them.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.surface.tools.extend(tools);
        self
    }

    /// Registers everything a `#[wymcp::handlers]` impl declares (its
    /// `handlers()`: tools, resources, resource templates, prompts and
    /// completions), or any [`Handlers`] gathered by hand. The same as
    /// `.tools(..)`, `.resources(..)`, `.resource_templates(..)`,
    /// `.prompts(..)` and `.completer(..)` one by one; the state its `&self`
    /// methods take is still given with [`state`](Self::state).
    #[must_use]
    pub fn handlers(self, handlers: Handlers) -> Self {
        let Handlers {
            tools,
            resources,
            templates,
            prompts,
            completer,
        } = handlers;
        self.tools(tools)
            .resources(resources)
            .resource_templates(templates)
            .prompts(prompts)
            .completer(completer)
    }

    /// Registers a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.surface.prompts.push(prompt);
        self
    }

    /// Registers prompts: the `prompts()` of a `#[wymcp::tools]` impl, or
    /// any list of them.
    #[must_use]
    pub fn prompts(mut self, prompts: impl IntoIterator<Item = Prompt>) -> Self {
        self.surface.prompts.extend(prompts);
        self
    }

    /// Registers resources: the `resources()` of a `#[wymcp::tools]` impl,
    /// or any list of them.
    #[must_use]
    pub fn resources(mut self, resources: impl IntoIterator<Item = Resource>) -> Self {
        self.surface.resources.extend(resources);
        self
    }

    /// Registers a resource.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.surface.resources.push(resource);
        self
    }

    /// Registers resource templates: the `resource_templates()` of a
    /// `#[wymcp::tools]` impl, or any list of them.
    #[must_use]
    pub fn resource_templates(
        mut self,
        templates: impl IntoIterator<Item = ResourceTemplate>,
    ) -> Self {
        self.surface.templates.extend(templates);
        self
    }

    /// Registers a resource template.
    #[must_use]
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.surface.templates.push(template);
        self
    }

    /// Serves a skill (the Skills extension, SEP-2640), checked when the
    /// server is built: the server declares `io.modelcontextprotocol/skills`
    /// on 2026-07-28 and the `resources` capability, answers `skills/list`
    /// and `skills/get`, and serves each file of the skill as a resource
    /// at `skill://<skill-path>/<file-path>`.
    #[must_use]
    pub fn skill(mut self, skill: Skill) -> Self {
        self.surface.skills.push(skill);
        self
    }

    /// Serves every skill of the directory at `path`, read when the server
    /// is built: each directory at its root is a skill, named by the
    /// directory, with a `SKILL.md` whose front matter names it the same,
    /// and the files below it. What is read is bounded ([`MAX_SKILLS`],
    /// [`MAX_SKILL_FILES`], [`MAX_SKILL_BYTES`], [`MAX_SKILLS_BYTES`],
    /// [`MAX_SKILL_DEPTH`]); a rule broken is a [`BuildError::Surface`]
    /// holding a [`SkillError`](crate::SkillError) naming the file.
    ///
    /// [`MAX_SKILLS`]: crate::MAX_SKILLS
    /// [`MAX_SKILL_FILES`]: crate::MAX_SKILL_FILES
    /// [`MAX_SKILL_BYTES`]: crate::MAX_SKILL_BYTES
    /// [`MAX_SKILLS_BYTES`]: crate::MAX_SKILLS_BYTES
    /// [`MAX_SKILL_DEPTH`]: crate::MAX_SKILL_DEPTH
    #[must_use]
    pub fn skills_dir(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.surface.skill_dirs.push(path.into());
        self
    }

    /// Whether `resources/directory/read` is served (`directoryRead` in the
    /// extension's settings) for a server that serves skills (default
    /// `true`). Without it the method is -32601.
    #[must_use]
    pub fn skills_directory_read(mut self, on: bool) -> Self {
        self.surface.no_directory_read = !on;
        self
    }

    /// The limits of `subscriptions/listen` streams: how many are open per
    /// server and per caller, what one may watch, how long one lives (see
    /// [`ListenLimits`] for each default).
    ///
    /// ```
    /// use wymcp::ListenLimits;
    /// let server = wymcp::Server::builder()
    ///     .listen_limits(ListenLimits::default().max_streams_per_caller(2))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn listen_limits(mut self, limits: ListenLimits) -> Self {
        self.surface.listen_limits = limits;
        self
    }

    /// The limits of a 2025 call's mid-call requests to its client
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list` sent on
    /// the call's stream): how long a call waits for an answer, how many
    /// requests wait at once, how many rounds a call may make, how long the
    /// `Mcp-Session-Id` given at `initialize` opens (docs/limits.md).
    #[must_use]
    pub fn legacy_requests(mut self, limits: LegacyRequests) -> Self {
        self.surface.legacy_requests = limits;
        self
    }

    /// What carries a 2025 client's answer to a mid-call request from the
    /// replica it reached to the one whose call waits for it (default:
    /// none, this process alone). Started when the server is built. See
    /// [`AnswerRelay`]; `wymcp::redis::RedisAnswers` (feature `redis`) is
    /// the Redis one.
    #[must_use]
    pub fn answer_relay(mut self, relay: impl AnswerRelay) -> Self {
        self.surface.answer_relay = Some(Arc::new(relay));
        self
    }

    /// The backend of the change bus: what carries this replica's catalog
    /// changes and resource updates to the other replicas' listen streams,
    /// and theirs to this one's (default: none, this process alone). Started
    /// when the server is built, so build inside the Tokio runtime. See
    /// [`ChangeRelay`]; `wymcp::redis::RedisBus` (feature `redis`) is the
    /// Redis one.
    #[must_use]
    pub fn change_relay(mut self, relay: impl ChangeRelay) -> Self {
        self.relay = Some(Arc::new(relay));
        self
    }

    /// Where tasks of the tasks extension are kept (default: this process's
    /// memory, [`MemoryTaskStore`](crate::tasks::MemoryTaskStore)); setting
    /// one also advertises the extension with no task-capable tool
    /// registered at start-up. Replicas that share a store (the Redis one,
    /// `wymcp::redis::RedisTaskStore`) serve each other's tasks.
    ///
    /// ```
    /// use wymcp::tasks::MemoryTaskStore;
    /// let server = wymcp::Server::builder()
    ///     .task_store(MemoryTaskStore::new(100))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.surface.task_store = Some(Arc::new(store));
        self
    }

    /// The settings of tasks: how long one lives, its lease and heartbeat,
    /// how many run at once, how large one may be (see [`TaskLimits`] for
    /// each default).
    ///
    /// ```
    /// use std::time::Duration;
    /// use wymcp::TaskLimits;
    /// let server = wymcp::Server::builder()
    ///     .task_limits(TaskLimits::default().ttl(Duration::from_secs(600)))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.surface.task_limits = limits;
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

    /// Lists every tool, prompt, resource and template to every caller,
    /// including the ones it lacks the scopes to use (calling one is still
    /// answered `403`). By default each caller is listed only what it may
    /// use, so a read-only token is never offered a write tool.
    ///
    /// ```
    /// use wymcp::auth::{AuthConfig, StaticTokens};
    ///
    /// let server = wymcp::Server::builder()
    ///     .auth(StaticTokens::new(), AuthConfig::new())
    ///     .list_all()
    ///     .build()?;
    /// # let _ = server;
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn list_all(mut self) -> Self {
        self.surface.list_all = true;
        self
    }

    /// Turns the server's notifications off: it advertises neither
    /// `listChanged` nor `resources.subscribe`, and `subscriptions/listen`
    /// is not served (404/-32601).
    ///
    /// By default a 2026-07-28 server advertises `listChanged` on each list
    /// capability it has and `subscribe` on resources, and serves
    /// `subscriptions/listen`: the catalog can change at run time (a handler
    /// reaches it through [`Context::catalog`]) and a handler can announce
    /// an update ([`Context::resource_updated`]), so the server always has
    /// something to deliver. Turn them off for a server whose catalog and
    /// resources never change, so clients hold no stream open for nothing.
    /// A 2025 client is offered the same, on its standalone GET stream: with
    /// notifications off it is given no session token at `initialize`
    /// unless it declares something the server may ask it, so it has no
    /// `DELETE` to send either.
    ///
    /// ```
    /// let fixed = wymcp::Server::builder().without_notifications().build()?;
    /// # let _ = fixed;
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn without_notifications(mut self) -> Self {
        self.surface.quiet = true;
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
        self.surface.completion = Some(boxed_completion(handler));
        self
    }

    /// Serves `completion/complete` for the keys of `completer` (a prompt's
    /// argument, a resource template's variable), each with its handler;
    /// the [`completion`](Self::completion) handler, if any, answers the
    /// others. May be called more than once: the tables add up, and a key
    /// given twice is a `build()` error ([`BuildError::RepeatedCompletion`]).
    #[must_use]
    pub fn completer(mut self, completer: Completer) -> Self {
        let table = std::mem::take(&mut self.surface.completer);
        self.surface.completer = table.merge(completer);
        self
    }

    /// Builds the server, checking the configuration.
    pub fn build(mut self) -> Result<Server, BuildError> {
        if !self.endpoint.starts_with('/') {
            return Err(BuildError::Endpoint(self.endpoint));
        }
        if self.revisions.is_empty() {
            return Err(BuildError::NoRevision);
        }
        if let Some(auth) = &mut self.auth {
            auth.check()?;
            auth.replay = self.dpop_replay.take();
        }
        // The served revisions' schema files are indexed here (a file
        // whose definitions cannot be found is a BuildError); their
        // validators are compiled a method at a time, on first use.
        let schemas = Schemas::shared();
        schemas.check(&self.revisions)?;
        let mut keys = self.sealing_keys.into_iter();
        let mut sealer = match keys.next() {
            Some(first) => keys.fold(Sealer::new(first), Sealer::rotate),
            None => Sealer::random()?,
        };
        for key in self.accepted_keys {
            sealer = sealer.accept(key);
        }
        if let Some(ttl) = self.request_state_ttl {
            sealer = sealer.ttl(ttl);
        }
        let bus = match self.relay {
            Some(relay) => ChangeBus::relayed(relay),
            None => ChangeBus::new(),
        };
        let needs = (self.surface.tools.iter().map(|i| i.about.method_of))
            .chain(self.surface.prompts.iter().map(|i| i.about.method_of))
            .chain(self.surface.resources.iter().map(|i| i.about.method_of))
            .chain(self.surface.templates.iter().map(|i| i.about.method_of))
            .chain(self.surface.completer.needs().map(Some));
        for need in needs.flatten() {
            if !(need.given)(&self.surface.state) {
                return Err(BuildError::MissingState {
                    state: need.state,
                    item: need.item,
                });
            }
        }
        if let Some(key) = self.surface.completer.repeated() {
            return Err(BuildError::RepeatedCompletion(key));
        }
        let authenticates = self.auth.is_some();
        let limits = self.limits;
        let surface_shares = self.surface.shares();
        let ledger = Ledger::new(|kind| match kind {
            Kind::Bodies => Share {
                per_caller: limits.bodies_per_caller,
                global: limits.bodies_in_flight,
                retry_after: Duration::from_secs(1),
            },
            Kind::AuthCalls => Share {
                per_caller: limits.auth_calls_per_caller,
                global: limits.auth_calls,
                retry_after: Duration::from_secs(1),
            },
            Kind::DpopProofs => Share {
                per_caller: limits.dpop_proofs_per_caller,
                global: limits.dpop_proofs,
                retry_after: Duration::from_secs(1),
            },
            Kind::Notifications => Share {
                per_caller: limits.notification_bytes_per_caller,
                global: limits.notification_bytes,
                retry_after: Duration::from_secs(1),
            },
            Kind::Handshakes => Share {
                per_caller: limits.handshakes_per_caller,
                global: limits.handshakes,
                retry_after: Duration::from_secs(1),
            },
            other => surface_shares(other),
        });
        let surface = self.surface.build(
            self.revisions,
            sealer,
            bus,
            ledger,
            authenticates,
            limits.notification_bytes_per_request,
        )?;
        let header_params = surface.header_params().collect();
        let origin = OriginPolicy::new(self.allowed_origins, self.allowed_hosts, self.bound_to)?;
        #[cfg(feature = "metrics")]
        let metrics = crate::metrics::Instruments::new(&surface.ledger);
        Ok(Server {
            #[cfg(feature = "metrics")]
            metrics,
            endpoint: self.endpoint,
            limits: self.limits,
            schemas,
            auth: self.auth,
            header_params,
            surface,
            origin,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mrtr::seal::{Binding, UnsealError};

    fn binding() -> Binding {
        Binding::new(
            "alice",
            "tools/call",
            Some(&json!({"name": "t", "arguments": {"a": 1}})),
        )
    }

    #[test]
    fn builder_configures_keys_rotation_and_lifetime() {
        let k1 = || SealingKey::new("k1", vec![7u8; 32]).unwrap();
        let old = Server::builder().sealing_key(k1()).build().unwrap();
        let sealed = old.sealer().seal(&binding(), b"s");
        let rotated = Server::builder()
            .sealing_key(k1())
            .sealing_key(SealingKey::new("k2", vec![8u8; 32]).unwrap())
            .request_state_ttl(Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(rotated.sealer().unseal(&binding(), &sealed).unwrap(), b"s");
        assert_eq!(rotated.sealer().lifetime(), Duration::from_secs(5));
        assert_eq!(
            old.sealer()
                .unseal(&binding(), &rotated.sealer().seal(&binding(), b"")),
            Err(UnsealError::UnknownKey)
        );
        let accepting = Server::builder().accept_sealing_key(k1()).build().unwrap();
        assert_eq!(
            accepting.sealer().unseal(&binding(), &sealed).unwrap(),
            b"s"
        );
        // Two processes without configured keys do not share states.
        let a = Server::builder().build().unwrap();
        let b = Server::builder().build().unwrap();
        let from_a = a.sealer().seal(&binding(), b"");
        assert!(a.sealer().unseal(&binding(), &from_a).is_ok());
        assert!(b.sealer().unseal(&binding(), &from_a).is_err());
    }
}
