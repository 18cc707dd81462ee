//! Serving a chain's router over TCP.
//!
//! [`serve()`] is [`axum::serve`](axum::serve()) with one addition: it tells the chain the
//! address the listener is bound to, so [`OriginCheck`](crate::stages::OriginCheck)
//! knows whether the server is loopback-bound without being told twice.
//! Each connection speaks HTTP/1.1 or HTTP/2: a client that opens with the
//! HTTP/2 preface (prior knowledge, "h2c") gets HTTP/2, any other HTTP/1.1.
//!
//! A server served some other way (TLS, a Unix socket, a custom accept loop)
//! layers [`BoundTo`] onto its router itself, or names its address with
//! [`ServerBuilder::bound_to`](crate::ServerBuilder::bound_to).

use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

/// The address the server's listener is bound to, as the serving entry tells
/// the chain through a request extension.
///
/// Add it with `router.layer(axum::Extension(BoundTo(addr)))` when serving
/// without [`serve()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTo(pub SocketAddr);

/// Serves `router` on `listener`: HTTP/1.1, and HTTP/2 with prior knowledge.
///
/// The returned future runs until the listener fails; chain
/// `.with_graceful_shutdown(signal)` to stop it.
///
/// ```no_run
/// # async fn run(router: wymcp::axum::Router) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// wymcp::serve(listener, router).await
/// # }
/// ```
pub fn serve(
    listener: TcpListener,
    router: Router,
) -> axum::serve::Serve<TcpListener, Router, Router> {
    let router = match listener.local_addr() {
        Ok(addr) => router.layer(axum::Extension(BoundTo(addr))),
        // Not knowing the address, the origin check falls back to the
        // builder's `bound_to`, or fails closed.
        Err(_) => router,
    };
    axum::serve(listener, router)
}
