//! A stage of your own: a per-tenant quota of tool calls, declared in a
//! chain of the server's own with `#[wymcp::pipeline]`, between Auth (which
//! names the tenant) and Validate.
//!
//! `cargo run -p wymcp-examples --example quota`, then call tools with
//! `Authorization: Bearer acme-token` or `globex-token` (development
//! tokens): each tenant may make 5 `tools/call` a minute, and the sixth is
//! `429` with `Retry-After`. The `usage` tool tells a tenant what it has
//! left. `tests/it/quota.rs` drives it with `wymcp::testing`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::axum::http::{HeaderValue, StatusCode, header};
use wymcp::{Context, ErrorCode, Exchange, Flow, Rejection, Server, Stage, ToolResult};

/// How many `tools/call` each tenant may make in each window: the server's
/// state, read by the stage and by the `usage` tool.
#[derive(Debug)]
pub struct Quotas {
    limit: u32,
    window: Duration,
    used: Mutex<HashMap<String, Window>>,
}

/// One tenant's current window: when it started and the calls made in it.
#[derive(Debug)]
struct Window {
    start: Instant,
    calls: u32,
}

/// The most tenants whose windows are remembered: past it, the ones whose
/// window is over are forgotten first, so the map cannot grow without
/// bound however many subjects the authenticator names.
const MAX_TENANTS: usize = 10_000;

impl Quotas {
    /// `limit` calls per tenant in each `window`.
    #[must_use]
    pub fn new(limit: u32, window: Duration) -> Self {
        Quotas {
            limit,
            window,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one call of `tenant`'s quota: the calls left after it, or how
    /// long until its window ends when none is left.
    fn take(&self, tenant: &str, now: Instant) -> Result<u32, Duration> {
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if used.len() >= MAX_TENANTS && !used.contains_key(tenant) {
            used.retain(|_, w| now.duration_since(w.start) < self.window);
            if used.len() >= MAX_TENANTS {
                // Every remembered tenant is mid-window: refuse the new one
                // rather than forget a window that is still counting.
                return Err(self.window);
            }
        }
        let window = used.entry(tenant.to_owned()).or_insert(Window {
            start: now,
            calls: 0,
        });
        if now.duration_since(window.start) >= self.window {
            *window = Window {
                start: now,
                calls: 0,
            };
        }
        if window.calls >= self.limit {
            return Err(self.window.saturating_sub(now.duration_since(window.start)));
        }
        window.calls += 1;
        Ok(self.limit - window.calls)
    }

    /// The calls `tenant` has left in its current window.
    fn left(&self, tenant: &str, now: Instant) -> u32 {
        let used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match used.get(tenant) {
            Some(w) if now.duration_since(w.start) < self.window => {
                self.limit.saturating_sub(w.calls)
            }
            _ => self.limit,
        }
    }
}

/// The tenant of a request: the authenticated principal's subject.
fn tenant(principal: Option<&Principal>) -> &str {
    principal.map_or("anonymous", |p| p.subject.as_str())
}

/// Refuses a tenant's `tools/call` past its quota: `429`, `-32600`, with
/// `Retry-After` in whole seconds. Reads the server's [`Quotas`] (a server
/// built without them has no quota) and the principal Auth established.
#[derive(Debug)]
pub struct TenantQuota;

impl Stage for TenantQuota {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        if ex.method() != Some("tools/call") {
            return Flow::Continue;
        }
        let Some(quotas) = ex.server().state::<Quotas>() else {
            return Flow::Continue;
        };
        match quotas.take(tenant(ex.principal()), Instant::now()) {
            Ok(_left) => Flow::Continue,
            Err(wait) => {
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                ex.reject(
                    Rejection::new(
                        StatusCode::TOO_MANY_REQUESTS,
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "this tenant made its {} tool calls of the window; try again later",
                            quotas.limit
                        ),
                    )
                    .data(serde_json::json!({ "limit": "tenant_quota", "ceiling": quotas.limit }))
                    .header(header::RETRY_AFTER, HeaderValue::from(seconds.max(1))),
                )
            }
        }
    }
}

/// The server's chain: the default one, with the quota before Validate.
#[wymcp::pipeline]
pub mod post {
    use wymcp::{Exchange, Flow, stages};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;
    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }
    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;
    #[wire_check]
    pub type Auth = stages::Auth;
    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;
    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;
    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;
    /// Last before Validate, so a request a wire check refuses costs no
    /// quota, and a malformed call does.
    #[body_bound(
        reason = "counts a tenant's tools/call: reads the method, once Auth has named the tenant"
    )]
    pub type TenantQuota = super::TenantQuota;
    pub type Validate = stages::Validate;
    pub type Dispatch = stages::Dispatch;
}

/// The server's tools; `usage` reads the same state the stage does.
#[derive(Debug)]
pub struct Tools;

#[wymcp::tools]
impl Tools {
    /// Says hello.
    #[tool]
    async fn greet(
        &self,
        /** Who to greet. */
        name: String,
    ) -> ToolResult {
        ToolResult::text(format!("Hello, {name}!"))
    }

    /// How many tool calls this tenant has left in the current window
    /// (this call counted).
    #[tool(read_only)]
    async fn usage(&self, cx: Context) -> ToolResult {
        let left = cx
            .state::<Quotas>()
            .left(tenant(cx.principal()), Instant::now());
        ToolResult::text(format!("{left} calls left"))
    }
}

/// The server: two tenants' tokens, `limit` calls per tenant a minute.
pub fn server(limit: u32) -> Result<Server, wymcp::BuildError> {
    let tokens = StaticTokens::new()
        .token("acme-token", Principal::new("acme", ["tools"]))
        .token("globex-token", Principal::new("globex", ["tools"]));
    Server::builder()
        .info("quota", "1.0.0")
        .auth(tokens, AuthConfig::new())
        .state(Tools)
        .state(Quotas::new(limit, Duration::from_secs(60)))
        .tools(Tools::tools())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!(
        "listening on http://{}/mcp (development tokens: acme-token, globex-token; 5 tool calls a minute each)",
        listener.local_addr()?
    );
    wymcp::serve(listener, post::router(server(5)?)).await?;
    Ok(())
}
