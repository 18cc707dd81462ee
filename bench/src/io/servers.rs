//! The three servers of the I/O workload (`wymcp-bench io-serve`), each
//! doing the same I/O with the same clients ([`Backends`]), each on a
//! multi-threaded tokio runtime (as the public benchmark's Rust server;
//! pinned to one core, it has one worker):
//!
//! * **wymcp**: the tools as `#[wymcp::tools]` methods of the state holding
//!   the clients, the default chain, `wymcp::serve`;
//! * **rmcp** 3.11: stateless, JSON responses, as the benchmark's Rust
//!   server (`#[tool_router]` on the same state);
//! * **floor**: bare axum answering the same JSON-RPC by hand:
//!   `initialize`, a notification (`202`), `tools/list`, `tools/call`.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::backends::{Backends, CartArgs, CheckoutArgs, SearchArgs, TOOLS};
use crate::payload::ENDPOINT;

/// Which server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoServer {
    /// Bare axum, the JSON-RPC by hand.
    Floor,
    /// wymcp's default chain.
    Wymcp,
    /// rmcp 3.11, stateless, JSON responses.
    Rmcp,
}

impl IoServer {
    /// All three, in the order a round runs them.
    pub const ALL: [IoServer; 3] = [IoServer::Floor, IoServer::Wymcp, IoServer::Rmcp];

    /// The name on the command line and in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            IoServer::Floor => "floor",
            IoServer::Wymcp => "wymcp",
            IoServer::Rmcp => "rmcp",
        }
    }
}

impl FromStr for IoServer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IoServer::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown server `{s}` (floor, wymcp or rmcp)"))
    }
}

/// Serves `kind` on `addr`, its tools using the API service at `api` and
/// Redis at `redis`; prints `listening on ADDR` once bound.
///
/// # Errors
/// When the runtime, Redis or the listener fails.
pub fn serve(kind: IoServer, addr: SocketAddr, api: &str, redis: &str) -> Result<(), String> {
    match kind {
        IoServer::Wymcp => serve_wymcp(addr, api, redis),
        IoServer::Rmcp => serve_rmcp(addr, api, redis),
        IoServer::Floor => serve_floor(addr, api, redis),
    }
}

/// [`serve`] for wymcp alone: a binary calling only this one (`io-serve-wymcp`)
/// links none of the other servers' code, as each server of the public
/// benchmark is its own program.
///
/// # Errors
/// As [`serve`]'s.
pub fn serve_wymcp(addr: SocketAddr, api: &str, redis: &str) -> Result<(), String> {
    serving(addr, api, redis, |listener, backends| async move {
        let router = wymcp::chain::post::router(wymcp_server(backends)?);
        wymcp::serve(listener, router)
            .await
            .map_err(|e| e.to_string())
    })
}

/// [`serve`] for rmcp alone (`io-serve-rmcp`).
///
/// # Errors
/// As [`serve`]'s.
pub fn serve_rmcp(addr: SocketAddr, api: &str, redis: &str) -> Result<(), String> {
    serving(addr, api, redis, |listener, backends| async move {
        axum::serve(listener, rmcp(backends))
            .await
            .map_err(|e| e.to_string())
    })
}

/// [`serve`] for the floor alone (`io-serve-floor`).
///
/// # Errors
/// As [`serve`]'s.
pub fn serve_floor(addr: SocketAddr, api: &str, redis: &str) -> Result<(), String> {
    serving(addr, api, redis, |listener, backends| async move {
        axum::serve(listener, floor(backends))
            .await
            .map_err(|e| e.to_string())
    })
}

/// The `main` of a one-server binary (`io-serve-wymcp`, `io-serve-rmcp`,
/// `io-serve-floor`, named `name`): its arguments, `--api URL --redis URL
/// [--addr ADDR]` as `wymcp-bench io-serve` takes them, served by `serve`
/// (only the server it names is linked); a failure is printed and the
/// process exits with status 2.
pub fn main_one(name: &str, serve: fn(SocketAddr, &str, &str) -> Result<(), String>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = serve_one(&args, serve) {
        eprintln!("{name}: {e}");
        std::process::exit(2);
    }
}

fn serve_one(
    args: &[String],
    serve: fn(SocketAddr, &str, &str) -> Result<(), String>,
) -> Result<(), String> {
    const USAGE: &str = "usage: --api http://HOST:PORT --redis redis://HOST:PORT/ [--addr ADDR]";
    let (mut addr, mut api, mut redis) = (SocketAddr::from(([127, 0, 0, 1], 0)), None, None);
    let mut words = args.iter();
    while let Some(flag) = words.next() {
        let value = words.next().ok_or(USAGE)?;
        match flag.as_str() {
            "--addr" => addr = value.parse().map_err(|e| format!("--addr {value}: {e}"))?,
            "--api" => api = Some(value.as_str()),
            "--redis" => redis = Some(value.as_str()),
            _ => return Err(USAGE.to_owned()),
        }
    }
    serve(addr, api.ok_or(USAGE)?, redis.ok_or(USAGE)?)
}

/// The runtime, the backends and the listener every server starts with;
/// `listening on ADDR` is printed before `run` serves.
fn serving<F, Fut>(addr: SocketAddr, api: &str, redis: &str, run: F) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener, Backends) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let backends = Backends::connect(api, redis).await?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on {local}");
        run(listener, backends).await
    })
}

// ---------------------------------------------------------------- wymcp

/// The state of wymcp's tools: the clients.
#[derive(Debug)]
pub struct IoTools(Backends);

fn answered(result: Result<String, String>) -> Result<wymcp::ToolResult, wymcp::HandlerError> {
    result
        .map(wymcp::ToolResult::text)
        .map_err(wymcp::HandlerError::execution)
}

#[wymcp::tools]
impl IoTools {
    /// Search products by category and price range, merged with popularity data
    #[tool]
    async fn search_products(
        &self,
        #[args] args: SearchArgs,
    ) -> Result<wymcp::ToolResult, wymcp::HandlerError> {
        answered(self.0.search_products(args).await)
    }

    /// Get user cart details with recent order history
    #[tool]
    async fn get_user_cart(
        &self,
        #[args] args: CartArgs,
    ) -> Result<wymcp::ToolResult, wymcp::HandlerError> {
        answered(self.0.get_user_cart(args).await)
    }

    /// Process checkout: calculate total, update rate limit, record history
    #[tool]
    async fn checkout(
        &self,
        #[args] args: CheckoutArgs,
    ) -> Result<wymcp::ToolResult, wymcp::HandlerError> {
        answered(self.0.checkout(args).await)
    }
}

/// wymcp's server of the three tools, configured as the public benchmark's
/// servers are: tools whose list never changes, nothing announced
/// (`without_notifications`, as rmcp's `enable_tools()` advertises no
/// `listChanged`). A default wymcp server announces changes, so it gives
/// every 2025 client a session token at `initialize`, and the benchmark's
/// client then sends a `DELETE` per session (BENCHMARKS.md says what k6
/// makes of that).
///
/// # Errors
/// When it does not build.
pub fn wymcp_server(backends: Backends) -> Result<wymcp::Server, String> {
    wymcp::Server::builder()
        .info("wymcp-bench-io", env!("CARGO_PKG_VERSION"))
        .state(IoTools(backends))
        .tools(IoTools::tools())
        .without_notifications()
        .build()
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------- rmcp

mod peer {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
    use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};

    use super::{Backends, CartArgs, CheckoutArgs, SearchArgs};

    /// The three tools, written the way rmcp's documentation writes tools.
    #[derive(Debug, Clone)]
    pub(super) struct Peer {
        io: Backends,
        tool_router: ToolRouter<Self>,
    }

    impl Peer {
        pub(super) fn new(io: Backends) -> Self {
            Peer {
                io,
                tool_router: Self::tool_router(),
            }
        }
    }

    #[allow(clippy::unnecessary_wraps)]
    fn answered(result: Result<String, String>) -> Result<CallToolResult, ErrorData> {
        Ok(match result {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        })
    }

    #[tool_router]
    impl Peer {
        #[tool(
            description = "Search products by category and price range, merged with popularity data"
        )]
        async fn search_products(
            &self,
            Parameters(args): Parameters<SearchArgs>,
        ) -> Result<CallToolResult, ErrorData> {
            answered(self.io.search_products(args).await)
        }

        #[tool(description = "Get user cart details with recent order history")]
        async fn get_user_cart(
            &self,
            Parameters(args): Parameters<CartArgs>,
        ) -> Result<CallToolResult, ErrorData> {
            answered(self.io.get_user_cart(args).await)
        }

        #[tool(
            description = "Process checkout: calculate total, update rate limit, record history"
        )]
        async fn checkout(
            &self,
            Parameters(args): Parameters<CheckoutArgs>,
        ) -> Result<CallToolResult, ErrorData> {
            answered(self.io.checkout(args).await)
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Peer {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }
}

/// rmcp 3.11, stateless, JSON responses, the three tools.
pub fn rmcp(backends: Backends) -> Router {
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*"]);
    let peer = peer::Peer::new(backends);
    let service = StreamableHttpService::new(
        move || Ok(peer.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new().nest_service(ENDPOINT, service)
}

// ---------------------------------------------------------------- the floor

/// What the floor holds: the clients and its fixed answers' parts.
#[derive(Debug)]
struct Floor {
    io: Backends,
    /// `tools/list`'s result.
    tools: Value,
}

/// The floor: bare axum, the JSON-RPC by hand, the same I/O.
pub fn floor(io: Backends) -> Router {
    let schemas = [
        schemars::schema_for!(SearchArgs),
        schemars::schema_for!(CartArgs),
        schemars::schema_for!(CheckoutArgs),
    ];
    let tools: Vec<Value> = TOOLS
        .iter()
        .zip(schemas)
        .map(|((name, description), schema)| {
            json!({"name": name, "description": description, "inputSchema": schema})
        })
        .collect();
    let floor = Arc::new(Floor {
        io,
        tools: json!({ "tools": tools }),
    });
    Router::new()
        .route(ENDPOINT, axum::routing::post(floor_handler))
        .with_state(floor)
}

fn reply(id: &Value, result: Result<Value, (i64, &str)>) -> Response {
    let body = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn floor_handler(State(floor): State<Arc<Floor>>, body: Bytes) -> Response {
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "parse error").into_response();
    };
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = message.get("id").cloned() else {
        // A notification (notifications/initialized): accepted.
        return StatusCode::ACCEPTED.into_response();
    };
    match method {
        "initialize" => reply(
            &id,
            Ok(json!({
                "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": env!("CARGO_PKG_VERSION")},
            })),
        ),
        "tools/list" => reply(&id, Ok(floor.tools.clone())),
        "tools/call" => {
            let params = message["params"].take();
            let name = params["name"].as_str().unwrap_or("").to_owned();
            let arguments = match params.get("arguments") {
                Some(arguments) => arguments.clone(),
                None => json!({}),
            };
            let (text, is_error) = match floor.io.call(&name, arguments).await {
                Ok(text) => (text, false),
                Err(message) => (message, true),
            };
            reply(
                &id,
                Ok(json!({"content": [{"type": "text", "text": text}], "isError": is_error})),
            )
        }
        _ => reply(&id, Err((-32601, "method not found"))),
    }
}
