//! The three servers the benchmark compares, each an `axum::Router` serving
//! the same `echo` tool on [`crate::payload::ENDPOINT`]:
//!
//! * [`wymcp()`]: wymcp's default chain;
//! * [`floor`]: a bare axum handler that parses the body into a
//!   `serde_json::Value` and answers a fixed result, the floor of this HTTP
//!   stack;
//! * [`rmcp()`]: the official Rust SDK, stateless JSON mode.
//!
//! [`serve`] runs one of them on a current-thread tokio runtime, the flavour
//! all three are measured with.
//!
//! The hot-path scenarios' two floors live here too: [`floor_serving`]
//! (parse into a `Value`, serialise the answer) and [`floor_copy`] (copy
//! the answer's bytes).

use std::net::SocketAddr;
use std::str::FromStr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use http::{StatusCode, header};
use serde::Deserialize;

use crate::payload::{CEILING_CALL_BYTES, ENDPOINT};

/// The echo tool's arguments, the same for every server.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Echoed back as the one text content of the result.
    pub text: String,
    /// Accepted and ignored: it carries the bulk of the large bodies.
    #[serde(default)]
    pub attachment: Option<String>,
}

/// Which server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The bare-axum floor.
    Floor,
    /// wymcp's default chain.
    Wymcp,
    /// rmcp 3.11, stateless JSON mode.
    Rmcp,
}

impl Kind {
    /// All three, in the order a round of measurements runs them.
    pub const ALL: [Kind; 3] = [Kind::Floor, Kind::Wymcp, Kind::Rmcp];

    /// The name on the command line and in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Floor => "floor",
            Kind::Wymcp => "wymcp",
            Kind::Rmcp => "rmcp",
        }
    }

    /// The server's router.
    pub fn router(self) -> Router {
        match self {
            Kind::Floor => floor(),
            Kind::Wymcp => wymcp(),
            Kind::Rmcp => rmcp(),
        }
    }
}

impl FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| format!("unknown server `{s}` (floor, wymcp or rmcp)"))
    }
}

/// Serves `kind` on `addr` on a current-thread runtime, printing
/// `listening on ADDR` once bound; returns when the listener fails.
/// `release_memory_after` is the threshold of wymcp's idle memory release
/// layer (`None`: no layer; the other servers have none).
pub fn serve(
    kind: Kind,
    addr: SocketAddr,
    release_memory_after: Option<u64>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let router = match kind {
        Kind::Wymcp => wymcp_router(release_memory_after),
        Kind::Floor | Kind::Rmcp => kind.router(),
    };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        println!("listening on {}", listener.local_addr()?);
        axum::serve(listener, router).await
    })
}

// ---------------------------------------------------------------- the floor

/// The fixed answer of the floor.
const FLOOR_RESULT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}"#;

/// The floor: parse the body into a `Value`, answer a fixed result.
pub fn floor() -> Router {
    Router::new()
        .route(ENDPOINT, axum::routing::post(floor_handler))
        .layer(DefaultBodyLimit::max(CEILING_CALL_BYTES))
}

async fn floor_handler(body: Bytes) -> axum::response::Response {
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(value) => {
            std::hint::black_box(&value);
            (
                [(header::CONTENT_TYPE, "application/json")],
                Bytes::from_static(FLOOR_RESULT),
            )
                .into_response()
        }
        Err(_) => StatusCode::BAD_REQUEST.into_response(),
    }
}

/// The text `examples/everything`'s `test_simple_text` answers.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";

/// The floor of the hot-path scenarios (bench/src/hotpath.rs): parse the
/// body into a `Value`, then serialise `{"jsonrpc":"2.0","id":…,"result":…}`
/// with the request's id and `result`, which the harness takes from
/// wymcp's own answer to the same request, so the floor writes exactly the
/// bytes wymcp writes (the harness checks they are equal) and pays for
/// serialising them per request, as any server must. `result` is held as an
/// [`Ordered`] tree, keys in wymcp's order (a `Value` would sort them). No
/// check of any kind.
pub fn floor_serving(result: Ordered) -> Router {
    let result = std::sync::Arc::new(result);
    Router::new()
        .route(
            ENDPOINT,
            axum::routing::post(move |body: Bytes| {
                let result = result.clone();
                async move { floor_serving_handler(&body, &result) }
            }),
        )
        .layer(DefaultBodyLimit::max(CEILING_CALL_BYTES))
}

fn floor_serving_handler(body: &[u8], result: &Ordered) -> axum::response::Response {
    #[derive(serde::Serialize)]
    struct Envelope<'a> {
        jsonrpc: &'static str,
        id: &'a serde_json::Value,
        result: &'a Ordered,
    }
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = request.get("id").unwrap_or(&serde_json::Value::Null);
    match serde_json::to_vec(&Envelope {
        jsonrpc: "2.0",
        id,
        result,
    }) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The byte-copy floor of the hot-path scenarios (bench/src/hotpath.rs):
/// reads the body and answers `answer`, the exact bytes everything answered
/// to the harness's request (whose id is fixed), copied from a [`Bytes`]
/// per request. No JSON parse, no serialising, no check of any kind: what
/// the HTTP stack alone costs, below [`floor_serving`]'s parse and
/// serialise.
pub fn floor_copy(answer: Bytes) -> Router {
    Router::new()
        .route(
            ENDPOINT,
            axum::routing::post(move |body: Bytes| {
                std::hint::black_box(&body);
                let answer = answer.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], answer).into_response() }
            }),
        )
        .layer(DefaultBodyLimit::max(CEILING_CALL_BYTES))
}

/// A JSON tree that keeps its objects' keys in the order read (the
/// workspace's `serde_json::Value` sorts them): what the floor serialises.
#[derive(Debug, Clone, PartialEq)]
pub enum Ordered {
    /// null, a boolean, a number or a string.
    Scalar(serde_json::Value),
    /// An array.
    Array(Vec<Ordered>),
    /// An object, its members in order.
    Object(Vec<(String, Ordered)>),
}

impl serde::Serialize for Ordered {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Ordered::Scalar(value) => value.serialize(serializer),
            Ordered::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Ordered::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(serde_json::Value::Null))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry()? {
                    members.push((key, value));
                }
                Ok(Ordered::Object(members))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

// ---------------------------------------------------------------- wymcp

/// The wymcp server the benchmark measures: the echo tool registered the way
/// wymcp's documentation registers tools, default settings otherwise but
/// the body budget. The burst scenario holds [`BURST_CONNECTIONS`]
/// ceiling-sized bodies at once (about 490 MiB, and as much again for the
/// strings parsed from them, which the ledger counts with the bytes); the
/// default in-flight budget (256 MiB) sheds about half of them with 503 and
/// `Retry-After`, which is what it is for on a public endpoint but not what
/// the scenario measures: the memory of holding them all, beside the floor
/// and rmcp, which hold them all. And every request of a run comes from the
/// one load generator, one caller of the ledger, whose share of that budget
/// (32 MiB) would shed the large and burst scenarios with 429 as it would
/// one client of a public endpoint. Both are raised to fit them (the share
/// to the whole budget), and nothing else is changed.
///
/// [`BURST_CONNECTIONS`]: crate::payload::BURST_CONNECTIONS
#[must_use]
pub fn wymcp_server() -> wymcp::Server {
    let echo = wymcp::Tool::new("echo")
        .description("Echoes its text")
        .handler(|args: EchoArgs, _cx| async move { Ok(wymcp::ToolResult::text(args.text)) });
    let budget = 2 * (crate::payload::BURST_CONNECTIONS + 1) * crate::payload::CEILING_CALL_BYTES;
    let limits = wymcp::Limits {
        bodies_in_flight: budget,
        bodies_per_caller: budget,
        ..wymcp::Limits::default()
    };
    match wymcp::Server::builder().tool(echo).limits(limits).build() {
        Ok(server) => server,
        Err(error) => panic!("the benchmark's wymcp server builds: {error}"),
    }
}

/// wymcp's default chain, `wymcp::chain::post`, with the echo tool, and
/// its idle memory release layer after `release_memory_after` body bytes
/// (`None`: no layer).
pub fn wymcp_router(release_memory_after: Option<u64>) -> Router {
    let router = wymcp::chain::post::router(wymcp_server());
    match release_memory_after {
        Some(bytes) => router.layer(wymcp::memory::ReleaseMemory::after(bytes)),
        None => router,
    }
}

/// wymcp's default chain with the echo tool and the recommended idle memory
/// release.
pub fn wymcp() -> Router {
    wymcp_router(Some(wymcp::memory::DEFAULT_RELEASE_AFTER))
}

// ---------------------------------------------------------------- rmcp

mod peer {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    use super::EchoArgs;

    /// The echo tool, written the way rmcp's documentation writes tools.
    #[derive(Debug, Clone)]
    pub(super) struct Echo {
        tool_router: ToolRouter<Self>,
    }

    impl Echo {
        pub(super) fn new() -> Self {
            Echo {
                tool_router: Self::tool_router(),
            }
        }
    }

    #[tool_router]
    impl Echo {
        #[tool(description = "Echoes its text")]
        #[allow(clippy::unused_self)]
        fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
            args.text
        }

        /// `examples/everything`'s simple tool, for the hot-path scenarios
        /// (bench/src/hotpath.rs).
        #[tool(description = "Returns simple text")]
        #[allow(clippy::unused_self)]
        fn test_simple_text(&self) -> String {
            super::SIMPLE_TEXT.to_owned()
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }
}

/// rmcp 3.11 in stateless JSON mode, with the echo tool, the same body
/// ceiling as wymcp, and Origin validation on (loopback origins allowed), as
/// wymcp's default has it.
pub fn rmcp() -> Router {
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(CEILING_CALL_BYTES)
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*"]);
    let service = StreamableHttpService::new(
        || Ok(peer::Echo::new()),
        std::sync::Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new().nest_service(ENDPOINT, service)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn floor_copy_answers_its_bytes_without_reading_the_body_as_json() {
        let answer = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        for body in [&br#"{"jsonrpc":"2.0","id":7}"#[..], b"not json"] {
            let request = http::Request::post(ENDPOINT)
                .body(axum::body::Body::from(body))
                .expect("a request");
            let Ok(response) = floor_copy(Bytes::from_static(answer))
                .oneshot(request)
                .await;
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .map(http::HeaderValue::as_bytes),
                Some(&b"application/json"[..])
            );
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .expect("the body")
                .to_bytes();
            assert_eq!(&bytes[..], &answer[..]);
        }
    }
}
