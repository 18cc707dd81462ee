//! Streaming over a real socket: a client that closes the SSE stream cancels
//! the handler (SH §Cancellation: closing the stream is cancellation).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use wymcp::axum::{self, Router, routing::post};
use wymcp::stream::{self, Emitter};

/// Signals when the handler future is dropped, i.e. cancelled.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Serves one route whose handler emits progress `emits` times, then waits
/// forever holding a drop signal. Returns the address and the signal.
async fn serve(emits: usize) -> (std::net::SocketAddr, oneshot::Receiver<()>) {
    let (tx, rx) = oneshot::channel();
    let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
    let app = Router::new().route(
        "/mcp",
        post(move |body: String| {
            let tx = tx.clone();
            async move {
                let params: Value = serde_json::from_str(&body).unwrap();
                let (emitter, notifications) = Emitter::for_params(Some(&params));
                stream::respond(notifications, async move {
                    let _signal = DropSignal(tx.lock().unwrap().take());
                    for i in 0..emits {
                        #[allow(clippy::cast_precision_loss)]
                        emitter.progress(i as f64, None, None);
                    }
                    std::future::pending::<()>().await;
                    wymcp::response::result(&json!(1), &json!({"resultType": "complete"}))
                })
                .await
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, rx)
}

async fn post_raw(addr: std::net::SocketAddr, body: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
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
    let mut socket = post_raw(addr, r#"{"_meta":{"progressToken":"tok"}}"#).await;
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
    let socket = post_raw(addr, r#"{"_meta":{}}"#).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(cancelled.try_recv().is_err(), "cancelled too early");
    drop(socket);
    tokio::time::timeout(Duration::from_secs(5), cancelled)
        .await
        .expect("the handler was cancelled when the client went away")
        .unwrap();
}
