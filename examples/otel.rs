//! wymcp's request spans exported to an OpenTelemetry collector over OTLP
//! (HTTP/protobuf), with `tracing-opentelemetry`: one server span per
//! request, named `{method} {tool}` (`tools/call greet`), carrying the MCP
//! semantic-convention attributes wymcp records (`mcp.method.name`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`,
//! `error.type`, …), its stages as child spans.
//!
//! ```text
//! cargo run -p wymcp-examples --features otel --example otel -- --bind 127.0.0.1:3000
//! ```
//!
//! The collector is `OTEL_EXPORTER_OTLP_ENDPOINT` (default
//! `http://localhost:4318`; spans go to `/v1/traces`). Stop the server with
//! Ctrl-C: the spans still buffered are sent before it exits. OpenTelemetry
//! is this example's dependency, never wymcp's: wymcp only emits `tracing`
//! spans, which any subscriber can read.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use wymcp::{Server, Tool, ToolResult, chain};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut bind = "127.0.0.1:3000".to_owned();
    while let Some(arg) = args.next() {
        match (arg.as_str(), &mut args) {
            ("--bind", args) => bind = args.next().ok_or("--bind needs an address")?,
            _ => return Err(format!("usage: otel [--bind ADDR]; got `{arg}`").into()),
        }
    }

    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .unwrap_or_else(|_| "http://localhost:4318".to_owned());
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
        .build()?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("wymcp-otel-example")
                .build(),
        )
        .build();
    tracing_subscriber::registry()
        // Requests at info (wymcp's request spans and their events), the
        // stages' own spans at debug.
        .with(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,wymcp=debug".into()),
        )
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("wymcp")))
        .init();

    let server = Server::builder()
        .info("otel", "0.1.0")
        .tool(
            Tool::new("greet")
                .description("Says hello")
                .handler(|args: Greet, _cx| async move {
                    Ok(ToolResult::text(format!("Hello, {}!", args.name)))
                }),
        )
        .build()?;
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // Serves until Ctrl-C (or SIGTERM), then drains.
    wymcp::serve(listener, chain::post::router(server)).await?;
    // What is still batched goes out before the process ends.
    provider.shutdown()?;
    Ok(())
}
