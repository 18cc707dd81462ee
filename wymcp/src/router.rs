//! The axum router around a chain's `handle` and `handle_get`: POST on the
//! endpoint runs the chain; GET, when the server serves a 2025 client's
//! standalone stream, runs the chain's wire checks and opens it
//! ([`open_stream`]); every other verb there is answered 405, and the RFC
//! 9728 protected-resource metadata is served when auth names a resource.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::headers::MCP_SESSION_ID;
use crate::protocol::revision::Era;
use crate::reply::{Rejection, Response, json_response, method_not_allowed};
use crate::server::Server;
use crate::trace;

/// The request type a chain's `handle` takes.
pub(crate) type Request = http::Request<axum::body::Body>;

pub(crate) fn build<F, Fut, G, GFut>(server: Arc<Server>, handle: F, handle_get: G) -> Router
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
    G: Fn(Arc<Server>, Request) -> GFut + Clone + Send + Sync + 'static,
    GFut: Future<Output = Response> + Send + 'static,
{
    let endpoint = server.endpoint().to_owned();
    let metadata = metadata(&server);
    let get = server.surface.serves_legacy_stream();
    let mut route = axum::routing::post(served(server.clone(), handle));
    if get {
        // axum would answer HEAD with the GET's handler: a stream no one
        // reads. HEAD stays 405, as every verb but the two.
        route = route
            .get(served(server, handle_get))
            .head(|| async { method_not_allowed(true) });
    }
    let route = route.fallback(move || async move { method_not_allowed(get) });
    Router::new().route(&endpoint, route).merge(metadata)
}

/// `handle` as an axum handler: the request span read back once the
/// response is made.
fn served<F, Fut>(
    server: Arc<Server>,
    handle: F,
) -> impl Fn(Request) -> std::pin::Pin<Box<dyn Future<Output = Response> + Send>>
+ Clone
+ Send
+ Sync
+ 'static
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    move |mut request: Request| {
        // The slot classification opens the request span in (see `trace`).
        let slot = trace::SpanSlot::default();
        request.extensions_mut().insert(slot.clone());
        let started = Instant::now();
        let answer = handle(server.clone(), request);
        #[cfg(feature = "metrics")]
        let server = server.clone();
        Box::pin(async move {
            let response = answer.await;
            let elapsed = trace::finished(&slot.0, response.status(), started);
            #[cfg(feature = "metrics")]
            server.metrics.finished(&slot.0, response.status(), elapsed);
            #[cfg(not(feature = "metrics"))]
            let _ = elapsed;
            response
        })
    }
}

/// What a GET on the endpoint answers once the chain's wire checks passed
/// it, in order: `405` (`Allow: POST`) when the server serves no stream or
/// the client speaks 2026-07-28 (which has none); `406` (-32600) when its
/// `Accept` takes no `text/event-stream` (`*/*` and `text/*` do); `400`
/// (-32600) without an `Mcp-Session-Id`; `404` (-32600) for a token that
/// does not open, as on POST; `429`/`503` with `Retry-After` over the
/// streams' share of the ledger; else `200` `text/event-stream`, the
/// stream (see the surface's `listen`). Every refusal's id is null.
pub(crate) async fn open_stream(ex: &mut Exchange<'_>) -> Response {
    let server = ex.server();
    if ex.era() == Era::Modern || !server.surface.serves_legacy_stream() {
        return method_not_allowed(false);
    }
    if !accepts_event_stream(ex.headers()) {
        return ex.rejection_response(Rejection::new(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::INVALID_REQUEST,
            "a GET on the endpoint opens an SSE stream: its Accept must take text/event-stream",
        ));
    }
    let Some(token) = ex.headers().get(MCP_SESSION_ID) else {
        return ex.rejection_response(Rejection::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "a GET stream needs the Mcp-Session-Id given at initialize",
        ));
    };
    // A value that is no text opens as no token does.
    let token = token.to_str().unwrap_or_default();
    let behind = ex.headers().contains_key("last-event-id");
    let caller = server.caller_of(ex.principal(), ex.client_addr());
    let answer = server
        .surface
        .legacy_stream(ex.principal(), &caller, token, behind);
    let dpop_scheme = server
        .auth_config()
        .is_some_and(|config| config.uses_dpop_scheme(ex.headers()));
    crate::stages::respond(
        answer,
        ex.rejector(),
        Era::Legacy,
        server.auth_config(),
        dpop_scheme,
        None,
    )
    .await
}

/// Whether an `Accept` header takes `text/event-stream` (itself, `text/*`
/// or `*/*`, with no `q=0`).
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|param| {
                param
                    .trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !refused
                && ["text/event-stream", "text/*", "*/*"]
                    .iter()
                    .any(|taken| media.eq_ignore_ascii_case(taken))
        })
}

/// The routes serving the RFC 9728 metadata document, when the server's
/// auth configuration has a resource identifier; an empty router otherwise.
fn metadata(server: &Server) -> Router {
    let Some(config) = server.auth_config() else {
        return Router::new();
    };
    let Some(doc) = config.metadata_document() else {
        return Router::new();
    };
    let body = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
    config
        .metadata_paths(server.endpoint())
        .into_iter()
        .fold(Router::new(), |router, path| {
            let body = body.clone();
            router.route(
                &path,
                axum::routing::get(move || {
                    let body = body.clone();
                    async move { json_response(StatusCode::OK, body.to_vec()) }
                }),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_takes_event_streams_and_their_wildcards() {
        let accepts = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(
                    header::ACCEPT,
                    value.parse().unwrap_or(http::HeaderValue::from_static("")),
                );
            }
            accepts_event_stream(&headers)
        };
        assert!(accepts(&["text/event-stream"]));
        assert!(accepts(&["application/json, Text/Event-Stream;q=0.5"]));
        assert!(accepts(&["*/*"]));
        assert!(accepts(&["text/*"]));
        assert!(accepts(&["application/json", "text/event-stream"]));
        assert!(!accepts(&[]));
        assert!(!accepts(&["application/json"]));
        assert!(!accepts(&["text/event-stream;q=0"]));
        assert!(!accepts(&["text/html"]));
    }
}
