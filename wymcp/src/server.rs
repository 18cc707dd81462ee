//! The [`Server`]: everything the stages read, built once at start-up.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{AuthConfig, AuthSetup, Authenticator};
use crate::headers::HeaderParam;
use crate::listen::{Change, ChangeBus};
use crate::memory::{DEFAULT_RELEASE_AFTER, MemoryRelease};
use crate::mrtr::{Sealer, SealingKey};
use crate::revision::Revision;
use crate::schema::{SchemaError, Schemas};
use crate::stages::OriginPolicy;

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 8_000_000,
            query_bytes: 1_000_000,
            read_timeout: Duration::from_millis(15_000),
        }
    }
}

/// An MCP server: configuration and registries, shared by every request.
#[derive(Debug)]
pub struct Server {
    pub(crate) endpoint: String,
    pub(crate) limits: Limits,
    pub(crate) revisions: Vec<Revision>,
    pub(crate) sealer: Arc<Sealer>,
    pub(crate) schemas: Arc<Schemas>,
    pub(crate) auth: Option<AuthSetup>,
    pub(crate) header_params: HashMap<String, Vec<HeaderParam>>,
    pub(crate) changes: ChangeBus,
    pub(crate) surface: crate::surface::Surface,
    pub(crate) origin: OriginPolicy,
    pub(crate) memory: Arc<MemoryRelease>,
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

    /// The revisions this server serves, oldest first.
    #[must_use]
    pub fn revisions(&self) -> &[Revision] {
        &self.revisions
    }

    /// The sealer of MRTR `requestState` (see [`mrtr`](crate::mrtr)).
    #[must_use]
    pub fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    /// The compiled MCP JSON Schemas, one validator per client method and
    /// revision; compiled once per process and shared by every server.
    #[must_use]
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// The auth configuration, when the server was built with an
    /// authenticator.
    #[must_use]
    pub fn auth_config(&self) -> Option<&AuthConfig> {
        self.auth.as_ref().map(|a| &a.config)
    }

    /// The `x-mcp-header` annotations of the tool named `tool`: the
    /// `Mcp-Param-{Name}` rows `HeaderBinding` checks on its `tools/call`.
    #[must_use]
    pub fn header_params(&self, tool: &str) -> &[HeaderParam] {
        self.header_params.get(tool).map_or(&[], Vec::as_slice)
    }

    /// The bus every `subscriptions/listen` stream hears (see [`listen`](crate::listen)).
    #[must_use]
    pub fn changes(&self) -> &ChangeBus {
        &self.changes
    }

    /// Tells open listen streams that asked for it that the tool list changed.
    pub fn notify_tools_changed(&self) {
        self.changes.publish(Change::ToolsListChanged);
    }

    /// Tells open listen streams that asked for it that the prompt list changed.
    pub fn notify_prompts_changed(&self) {
        self.changes.publish(Change::PromptsListChanged);
    }

    /// Tells open listen streams that asked for it that the resource list changed.
    pub fn notify_resources_changed(&self) {
        self.changes.publish(Change::ResourcesListChanged);
    }

    /// Tells open listen streams watching `uri` that the resource changed.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.changes.publish(Change::ResourceUpdated(uri.into()));
    }

    /// Ends every open listen stream cleanly (the `complete` result, then the
    /// end of the stream): call it before a graceful shutdown waits for open
    /// connections.
    pub fn close_subscriptions(&self) {
        self.changes.close_all();
    }

    /// After how many request-body bytes the server releases free memory
    /// once it is quiet; `None` when it never does (see
    /// [`ServerBuilder::release_memory_after`]).
    #[must_use]
    pub fn release_memory_after(&self) -> Option<u64> {
        self.memory.threshold()
    }

    /// How many times this server has released free memory to the kernel
    /// (see [`ServerBuilder::release_memory_after`]).
    #[must_use]
    pub fn memory_releases(&self) -> u64 {
        self.memory.releases()
    }

    /// The tools, prompts and resources served, changeable at run time.
    #[must_use]
    pub fn catalog(&self) -> &crate::surface::Catalog {
        &self.surface.catalog
    }
}

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    endpoint: String,
    limits: Limits,
    revisions: Vec<Revision>,
    sealer: Option<Sealer>,
    request_state_ttl: Option<Duration>,
    auth: Option<AuthSetup>,
    header_params: HashMap<String, Vec<HeaderParam>>,
    pub(crate) surface: crate::surface::SurfaceBuilder,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    bound_to: Option<SocketAddr>,
    release_memory_after: Option<u64>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            endpoint: "/mcp".to_owned(),
            limits: Limits::default(),
            revisions: vec![Revision::V2025_11_25, Revision::V2026_07_28],
            sealer: None,
            request_state_ttl: None,
            auth: None,
            header_params: HashMap::new(),
            surface: crate::surface::SurfaceBuilder::default(),
            allowed_origins: None,
            allowed_hosts: None,
            bound_to: None,
            release_memory_after: Some(DEFAULT_RELEASE_AFTER),
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
    /// The embedded MCP schemas did not compile (a bug in wymcp).
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The auth configuration is inconsistent.
    #[error("auth: {0}")]
    Auth(String),
    /// A tool, prompt or resource could not be registered.
    #[error(transparent)]
    Surface(crate::surface::SurfaceError),
    /// An allowed origin is not of the form `scheme://host[:port]`.
    #[error("the allowed origin `{0}` is not of the form `scheme://host[:port]`")]
    Origin(String),
    /// An allowed host is not of the form `host[:port]`.
    #[error("the allowed host `{0}` is not of the form `host[:port]`")]
    Host(String),
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
        self.sealer = Some(match self.sealer.take() {
            Some(sealer) => sealer.rotate(key),
            None => Sealer::new(key),
        });
        self
    }

    /// A key that still unseals `requestState` but never seals (a retired key).
    #[must_use]
    pub fn accept_sealing_key(mut self, key: SealingKey) -> Self {
        let sealer = self.sealer.take().unwrap_or_default();
        self.sealer = Some(sealer.accept(key));
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

    /// Declares the `x-mcp-header` annotations of the tool `tool`. Called by
    /// the tool registry when it registers a tool; not for direct use.
    #[doc(hidden)]
    #[must_use]
    pub fn header_params(mut self, tool: impl Into<String>, params: Vec<HeaderParam>) -> Self {
        self.header_params.insert(tool.into(), params);
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

    /// When the server gives free memory back to the kernel: once it has read
    /// `Some(bytes)` of request bodies since it last did, and then no request
    /// is in flight and no body byte arrives for
    /// [`QUIET`](crate::memory::QUIET) (250 ms). `None` turns it off. Default:
    /// [`DEFAULT_RELEASE_AFTER`], 64 MiB.
    ///
    /// With glibc's malloc a server that served large bodies concurrently
    /// otherwise keeps tens of MiB of freed memory resident for good; the
    /// release (glibc's `malloc_trim`, on tokio's blocking pool) returns it.
    /// It is a no-op off Linux with glibc. Turn it off when another
    /// allocator is the global one, or when a steady stream of large bodies
    /// with pauses makes re-faulting the released memory cost more than the
    /// memory is worth. See [`memory`](crate::memory) and the deployment
    /// guide's "Memory and the allocator".
    ///
    /// ```
    /// // Release after 256 MiB of bodies instead of 64 MiB.
    /// let server = wymcp::Server::builder()
    ///     .release_memory_after(Some(256 * 1024 * 1024))
    ///     .build()?;
    /// assert_eq!(server.release_memory_after(), Some(256 * 1024 * 1024));
    ///
    /// // Never release.
    /// let server = wymcp::Server::builder().release_memory_after(None).build()?;
    /// assert_eq!(server.memory_releases(), 0);
    /// # Ok::<(), wymcp::BuildError>(())
    /// ```
    #[must_use]
    pub fn release_memory_after(mut self, bytes: Option<u64>) -> Self {
        self.release_memory_after = bytes;
        self
    }

    /// Builds the server, checking the configuration.
    pub fn build(self) -> Result<Server, BuildError> {
        if !self.endpoint.starts_with('/') {
            return Err(BuildError::Endpoint(self.endpoint));
        }
        if self.revisions.is_empty() {
            return Err(BuildError::NoRevision);
        }
        if let Some(auth) = &self.auth {
            auth.check()?;
        }
        let changes = ChangeBus::new();
        let surface = self.surface.build(changes.clone())?;
        let mut header_params = self.header_params;
        header_params.extend(surface.header_params());
        let origin = OriginPolicy::new(self.allowed_origins, self.allowed_hosts, self.bound_to)?;
        Ok(Server {
            endpoint: self.endpoint,
            limits: self.limits,
            revisions: self.revisions,
            sealer: Arc::new({
                let sealer = self.sealer.unwrap_or_default();
                match self.request_state_ttl {
                    Some(ttl) => sealer.ttl(ttl),
                    None => sealer,
                }
            }),
            schemas: Schemas::shared()?,
            auth: self.auth,
            header_params,
            changes,
            surface,
            origin,
            memory: Arc::new(MemoryRelease::new(self.release_memory_after)),
        })
    }
}
