//! The entry points: stdin and stdout, or any pair of byte streams.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::config::StdioConfig;
use super::{connection, stdin};
use crate::server::Server;

/// Serves `server` on this process's stdin and stdout with the default
/// [`StdioConfig`], until stdin ends.
///
/// See the [module docs](super) for an example.
pub async fn serve(server: impl Into<Arc<Server>>) -> io::Result<()> {
    serve_with(server, StdioConfig::default()).await
}

/// Serves `server` on this process's stdin and stdout with the limits of
/// `config`, until stdin ends.
///
/// ```no_run
/// # async fn run(server: wymcp::Server) -> std::io::Result<()> {
/// use std::time::Duration;
/// use wymcp::stdio::StdioConfig;
///
/// let config = StdioConfig::default().drain_timeout(Duration::from_secs(2));
/// wymcp::stdio::serve_with(server, config).await
/// # }
/// ```
pub async fn serve_with(server: impl Into<Arc<Server>>, config: StdioConfig) -> io::Result<()> {
    let input = stdin::stdin()?;
    connection::run(server.into(), input, tokio::io::stdout(), config).await
}

/// Serves `server` on `reader` and `writer`, framed as stdio frames it (one
/// message a line), until `reader` ends: the transport over any pair of
/// byte streams, and the way to drive it in a test.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
/// use wymcp::stdio::StdioConfig;
///
/// let server = wymcp::Server::builder().build()?;
/// let (client, transport) = tokio::io::duplex(64 * 1024);
/// let (reader, writer) = tokio::io::split(transport);
/// let serving = tokio::spawn(wymcp::stdio::serve_io(server, reader, writer, StdioConfig::default()));
///
/// let (from_server, mut to_server) = tokio::io::split(client);
/// to_server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await?;
/// to_server.shutdown().await?;
/// let mut answer = String::new();
/// BufReader::new(from_server).read_line(&mut answer).await?;
/// assert_eq!(answer, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
/// serving.await??;
/// # Ok(())
/// # }
/// ```
pub async fn serve_io<R, W>(
    server: impl Into<Arc<Server>>,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connection::run(server.into(), reader, writer, config).await
}
