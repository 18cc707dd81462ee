//! A server with one tool, over HTTP or stdio:
//! `cargo run -p wymcp-examples --example hello -- --bind 127.0.0.1:3000`, or
//! launched by a client as `hello --stdio`.

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
    let mut stdio = false;
    while let Some(arg) = args.next() {
        match (arg.as_str(), &mut args) {
            ("--stdio", _) => stdio = true,
            ("--bind", args) => bind = args.next().ok_or("--bind needs an address")?,
            _ => return Err(format!("usage: hello [--bind ADDR | --stdio]; got `{arg}`").into()),
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
    if stdio {
        // stdout carries the protocol; this example logs nothing.
        wymcp::stdio::serve(server).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    wymcp::serve(listener, chain::post::router(server)).await?;
    Ok(())
}
