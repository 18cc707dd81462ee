//! The axum router around a chain's `handle`: POST on the endpoint runs the
//! chain, every other verb there is answered 405, and the RFC 9728
//! protected-resource metadata is served when auth names a resource.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use bytes::Bytes;
use http::StatusCode;

use crate::reply::{Response, json_response, method_not_allowed};
use crate::server::Server;
use crate::trace;

/// The request type a chain's `handle` takes.
pub(crate) type Request = http::Request<axum::body::Body>;

pub(crate) fn build<F, Fut>(server: Arc<Server>, handle: F) -> Router
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let endpoint = server.endpoint().to_owned();
    let metadata = metadata(&server);
    let post = axum::routing::post(move |mut request: Request| {
        // The slot classification opens the request span in (see `trace`).
        let slot = trace::SpanSlot::default();
        request.extensions_mut().insert(slot.clone());
        let started = Instant::now();
        let answer = handle(server.clone(), request);
        async move {
            let response = answer.await;
            if let Some(span) = slot.0.get() {
                trace::finished(span, response.status(), started);
            }
            response
        }
    })
    .fallback(|| async { method_not_allowed() });
    Router::new().route(&endpoint, post).merge(metadata)
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
