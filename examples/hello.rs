//! A server with one tool: `cargo run -p wymcp-examples --example hello -- --bind 127.0.0.1:3000`.

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
        match (arg.as_str(), args.next()) {
            ("--bind", Some(addr)) => bind = addr,
            _ => return Err(format!("usage: hello [--bind ADDR]; got `{arg}`").into()),
        }
    }
    let server = Server::builder()
        .info("hello", "0.1.0")
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
    wymcp::serve(listener, chain::post::router(server)).await?;
    Ok(())
}
