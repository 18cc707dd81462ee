//! The chains the in-process tests send requests through: wymcp's default
//! chain, and three harness chains declared here, each once.
//!
//! * [`probe`](fn@probe): the default chain with one body-bound stage added
//!   right before Validate, which answers `200` with a probe document
//!   (`kind`, `era`, `revision`, `principal`): so "the wire checks let it
//!   through" is observable whatever Validate and Dispatch would then say,
//!   and every stage runs under its default-chain name.
//! * [`validated`](fn@validated): the same stages without the probe, so the
//!   real Validate and Dispatch answer.
//! * [`dispatch`](fn@dispatch): Dispatch as the chain hands it a message,
//!   but before Validate: the parse step and classification run (so the era
//!   is the headers' and the body's bytes are kept, as the chain keeps
//!   them), then Dispatch answers whatever the message is. What the surface
//!   answers, for messages Validate would let through and for the ones it
//!   would not.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::axum::Router;
use wymcp::{Era, Exchange, Flow, MessageKind, Server};

use super::{Reply, Req, answered, send};

/// The default chain's router around `server`.
pub fn chain(server: impl Into<Arc<Server>>) -> Router {
    wymcp::chain::post::router(server)
}

/// Sends `req` through the probe chain of `server`.
pub async fn probe(server: &Arc<Server>, req: Req) -> Reply {
    send(&probe::router(server.clone()), req).await
}

/// Sends `req` through the wire checks, then the real Validate and
/// Dispatch.
pub async fn validated(server: &Arc<Server>, req: Req) -> Reply {
    send(&validated::router(server.clone()), req).await
}

/// The router of [`validated`](fn@validated), for a test that records more
/// than the rejection events (a part's own log lines) around its answer.
pub fn validated_router(server: Arc<Server>) -> Router {
    validated::router(server)
}

/// Sends `req` to Dispatch as the chain hands it over, Validate left out.
pub async fn dispatch(server: &Server, req: Req) -> Reply {
    answered(unvalidated::handle(server, req.build())).await
}

/// A [`wymcp::testing::Client`] of `server` whose requests reach Dispatch
/// as [`dispatch`](fn@dispatch)'s do (no Validate): what the surface
/// answers, through the client an application's tests use.
pub fn surface(server: impl Into<Arc<Server>>) -> wymcp::testing::Client {
    wymcp::testing::Client::over(unvalidated::router(server.into()))
}

/// Asserts that `failure` is a JSON-RPC error of this status and code, the
/// request's id echoed; answers its `data`.
#[track_caller]
pub fn assert_failure(failure: &wymcp::testing::Failure, status: StatusCode, code: i64) -> Value {
    assert_eq!(
        (failure.status, failure.code),
        (status, Some(code)),
        "{failure}"
    );
    let exchange = &failure.exchange;
    assert_eq!(
        exchange.response().map(|r| &r["id"]),
        Some(&exchange.request["id"])
    );
    failure.data.clone().unwrap_or(Value::Null)
}

/// Answers `200` with what the stages before it established.
fn answer_probe(ex: &Exchange<'_>) -> Flow {
    let kind = match ex.kind() {
        Some(MessageKind::Request) => "request",
        Some(MessageKind::UnidentifiedRequest) => "unidentified_request",
        Some(MessageKind::Notification) => "notification",
        Some(MessageKind::Unknown) => "unknown",
        None => "none",
    };
    let era = match ex.era() {
        Era::Modern => "modern",
        Era::Legacy => "legacy",
    };
    Flow::Answer(wymcp_tests::json_response(
        StatusCode::OK,
        serde_json::to_vec(&json!({
            "probe": true,
            "kind": kind,
            "era": era,
            "revision": ex.revision().map(wymcp::Revision::as_str),
            "principal": ex.principal().map(|p| &p.subject),
        }))
        .unwrap(),
    ))
}

#[wymcp::pipeline]
mod probe {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;

    #[wire_check]
    pub type Auth = stages::Auth;

    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;

    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;

    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;

    #[body_bound(reason = "the probe: answers with what the wire checks established")]
    pub async fn probe(ex: &mut Exchange<'_>) -> Flow {
        super::answer_probe(ex)
    }

    pub type Validate = stages::Validate;

    pub type Dispatch = stages::Dispatch;
}

#[wymcp::pipeline]
mod validated {
    use wymcp::stages;
    use wymcp::{Exchange, Flow};

    #[wire_check]
    pub type OriginCheck = stages::OriginCheck;

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the message kind and the era")]
    pub type Classify = stages::Classify;

    #[wire_check]
    pub type Auth = stages::Auth;

    #[wire_check]
    pub type SingletonHeaders = stages::SingletonHeaders;

    #[wire_check]
    pub type ProtocolFields = stages::ProtocolFields;

    #[wire_check]
    pub type HeaderBinding = stages::HeaderBinding;

    pub type Validate = stages::Validate;

    pub type Dispatch = stages::Dispatch;
}

#[wymcp::pipeline]
mod unvalidated {
    use wymcp::stages;
    use wymcp::{Exchange, Flow, Stage};

    #[body_bound(reason = "the parse step is what reads the body")]
    pub async fn parse_body(ex: &mut Exchange<'_>) -> Flow {
        stages::parse_body(ex).await
    }

    #[body_bound(reason = "tags the kind and the era")]
    pub type Classify = stages::Classify;

    #[body_bound(reason = "a test harness: Dispatch on what classification left")]
    pub async fn dispatch(ex: &mut Exchange<'_>) -> Flow {
        <stages::Dispatch as Stage>::run(ex).await
    }

    /// Never reached: Dispatch answers first.
    pub type Validate = stages::Validate;
}
