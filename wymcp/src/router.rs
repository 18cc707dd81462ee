//! The axum router around a chain's `handle`.

use std::future::Future;
use std::sync::Arc;

use axum::Router;

use crate::__private::Request;
use crate::response::{Response, method_not_allowed};
use crate::server::Server;

pub(crate) fn build<F, Fut>(server: Arc<Server>, handle: F) -> Router
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let endpoint = server.endpoint().to_owned();
    let metadata = crate::auth::metadata_router(&server);
    let post = axum::routing::post(move |request: Request| handle(server.clone(), request))
        .fallback(|| async { method_not_allowed() });
    Router::new().route(&endpoint, post).merge(metadata)
}
