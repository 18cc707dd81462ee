//! Streaming over a real socket: a client that closes the SSE stream cancels
//! the handler (SH §Cancellation: closing the stream is cancellation).
//! Then, in-process through the default chain: what streams, and when.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use wymcp::LogLevel;
use wymcp::{Context, Server, Tool, ToolResult};

use crate::support::{Req, chain, send};

/// Signals when the handler future is dropped, i.e. cancelled.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Serves the default chain with one tool whose handler emits progress
/// `emits` times, then waits forever holding a drop signal. Returns the
/// address and the signal.
async fn serve(emits: usize) -> (std::net::SocketAddr, oneshot::Receiver<()>) {
    let (tx, rx) = oneshot::channel();
    let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
    let tool = wymcp::Tool::new("slow").raw_handler(move |_args: Value, cx: wymcp::Context| {
        let tx = tx.clone();
        async move {
            let _signal = DropSignal(tx.lock().unwrap().take());
            for i in 0..emits {
                #[allow(clippy::cast_precision_loss)]
                cx.progress(i as f64, None, None);
            }
            std::future::pending::<()>().await;
            Ok(wymcp::ToolResult::text("never"))
        }
    });
    let server = std::sync::Arc::new(wymcp::Server::builder().tool(tool).build().unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = wymcp::chain::post::router(server);
    tokio::spawn(async move { wymcp::axum::serve(listener, app).await.unwrap() });
    (addr, rx)
}

/// A `tools/call` of the slow tool with this `_meta` (the protocol fields
/// added).
fn slow_call(extra_meta: &Value) -> String {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Value::Object(meta), Value::Object(extra)) = (&mut meta, extra_meta) {
        meta.extend(extra.clone());
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "slow", "arguments": {}, "_meta": meta}})
    .to_string()
}

async fn post_raw(addr: std::net::SocketAddr, body: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    socket
}

/// Reads until `needle` has arrived; returns everything read.
async fn read_until(socket: &mut TcpStream, needle: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .expect("the server answered in time")
            .unwrap();
        assert!(n > 0, "connection closed before {needle:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn closing_the_sse_stream_cancels_the_handler() {
    let (addr, mut cancelled) = serve(1).await;
    let mut socket = post_raw(addr, &slow_call(&json!({"progressToken": "tok"}))).await;
    let head = read_until(&mut socket, "\n\n").await;
    let lower = head.to_ascii_lowercase();
    assert!(lower.starts_with("http/1.1 200"), "{head}");
    assert!(lower.contains("content-type: text/event-stream"), "{head}");
    assert!(lower.contains("x-accel-buffering: no"), "{head}");
    assert!(head.contains(r#""progressToken":"tok""#), "{head}");
    // The handler is still running while the client listens.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(cancelled.try_recv().is_err(), "cancelled too early");
    drop(socket);
    tokio::time::timeout(Duration::from_secs(5), cancelled)
        .await
        .expect("the handler was cancelled when the client closed the stream")
        .unwrap();
}

#[tokio::test]
async fn closing_before_anything_was_emitted_cancels_the_handler_too() {
    let (addr, mut cancelled) = serve(0).await;
    let socket = post_raw(addr, &slow_call(&json!({}))).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(cancelled.try_recv().is_err(), "cancelled too early");
    drop(socket);
    tokio::time::timeout(Duration::from_secs(5), cancelled)
        .await
        .expect("the handler was cancelled when the client went away")
        .unwrap();
}

// ---------------------------------------------------------------------------
// Through the default chain: progress only with a progressToken, log messages
// only with a logLevel and at or above it, SSE only when something is sent.
// ---------------------------------------------------------------------------

fn logging_chain() -> wymcp::axum::Router {
    let progress = Tool::new("progress").raw_handler(|_args: Value, cx: Context| async move {
        for step in [0.0, 50.0, 100.0] {
            cx.progress(step, Some(100.0), None);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(ToolResult::text("done"))
    });
    let logs = Tool::new("logs").raw_handler(|_args: Value, cx: Context| async move {
        cx.log(LogLevel::Debug, json!("debug"));
        cx.log(LogLevel::Info, json!("info"));
        cx.log(LogLevel::Error, json!("error"));
        Ok(ToolResult::text("logged"))
    });
    chain(
        Server::builder()
            .tool(progress)
            .tool(logs)
            .logging()
            .build()
            .unwrap(),
    )
}

/// A `tools/call` of `tool` with these extra `_meta` keys.
fn call(id: &Value, tool: &str, extra_meta: &Value) -> Req {
    Req::modern(id.clone(), "tools/call")
        .params(json!({"name": tool, "arguments": {}}))
        .meta(extra_meta.clone())
}

#[tokio::test]
async fn progress_streams_only_with_a_progress_token() {
    let app = logging_chain();
    let id = json!("p1");
    let reply = send(
        &app,
        call(&id, "progress", &json!({"progressToken": "tok"})),
    )
    .await;
    let events = reply.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (event, step) in events.iter().zip([0, 50, 100]) {
        assert_eq!(event["method"], "notifications/progress");
        assert!(event.get("id").is_none());
        assert_eq!(event["params"]["progressToken"], "tok");
        assert_eq!(event["params"]["progress"], step);
        assert_eq!(event["params"]["total"], 100);
    }
    assert_eq!(events[3]["id"], id);
    assert_eq!(events[3]["result"]["content"][0]["text"], "done");

    // No token: no notification, a plain JSON answer.
    let id = json!("p2");
    let reply = send(&app, call(&id, "progress", &json!({}))).await;
    assert_eq!(reply.ok(&id)["content"][0]["text"], "done");
}

#[tokio::test]
async fn logs_stream_only_with_a_log_level_and_at_or_above_it() {
    let app = logging_chain();
    let id = json!(1);
    let level = json!({"io.modelcontextprotocol/logLevel": "info"});
    let reply = send(&app, call(&id, "logs", &level)).await;
    let events = reply.events();
    let logged: Vec<(&Value, &Value)> = events[..events.len() - 1]
        .iter()
        .map(|e| {
            assert_eq!(e["method"], "notifications/message");
            (&e["params"]["level"], &e["params"]["data"])
        })
        .collect();
    assert_eq!(
        logged,
        [
            (&json!("info"), &json!("info")),
            (&json!("error"), &json!("error"))
        ]
    );
    assert_eq!(events.last().unwrap()["id"], id);

    // No logLevel: no log message at all, a plain JSON answer.
    let id = json!(2);
    let reply = send(&app, call(&id, "logs", &json!({}))).await;
    assert_eq!(reply.ok(&id)["content"][0]["text"], "logged");
}

/// Through the chain, over a real socket: a client that closes a tool's SSE
/// stream cancels the tool's handler.
#[tokio::test]
async fn closing_a_tool_call_stream_cancels_the_tool() {
    let (tx, cancelled) = oneshot::channel();
    let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
    let hang = Tool::new("hang").raw_handler(move |_args: Value, cx: Context| {
        let signal = DropSignal(tx.lock().unwrap().take());
        async move {
            let _signal = signal;
            cx.progress(1.0, None, Some("started"));
            std::future::pending::<()>().await;
            Ok(ToolResult::text("never"))
        }
    });
    let app = chain(Server::builder().tool(hang).build().unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let body = call(&json!(1), "hang", &json!({"progressToken": 1}))
        .message()
        .to_string();
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: hang\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let seen = read_until(&mut socket, "started").await;
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{seen}"
    );
    let mut cancelled = cancelled;
    assert!(cancelled.try_recv().is_err(), "cancelled too early");
    drop(socket);
    tokio::time::timeout(Duration::from_secs(5), cancelled)
        .await
        .expect("the tool was cancelled when the client closed the stream")
        .unwrap();
}
