//! The axum router around a chain's `handle`.

use std::future::Future;
use std::sync::Arc;

use axum::Router;

use crate::__private::Request;
use crate::memory::InFlight;
use crate::response::{Response, method_not_allowed};
use crate::server::Server;

pub(crate) fn build<F, Fut>(server: Arc<Server>, handle: F) -> Router
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let endpoint = server.endpoint().to_owned();
    let metadata = crate::auth::metadata_router(&server);
    let post = axum::routing::post(move |request: Request| {
        // Counted in flight until answered or dropped, for the idle memory
        // release (see `crate::memory`).
        let in_flight = InFlight::begin(&server.memory);
        let answer = handle(server.clone(), request);
        async move {
            let response = answer.await;
            drop(in_flight);
            response
        }
    })
    .fallback(|| async { method_not_allowed() });
    Router::new().route(&endpoint, post).merge(metadata)
}
