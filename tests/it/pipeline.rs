//! The code `#[pipeline]` generates, run: `CHAIN`'s rows, the order in which
//! `handle` calls the stages and where it stops, and the router's answer to
//! every verb but POST. The stages here are small recording stages of the
//! test's own; wymcp's real stages are tested where they are defined.

use std::cell::{Cell, RefCell};

use axum::body::Body;
use http::{Method, StatusCode, header};
use wymcp::{Exchange, Flow, Role, Server, Stage, StageInfo};

use crate::support::{Req, answered, send};

thread_local! {
    /// The stages that ran, by declared name, on this test's thread.
    static RAN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    /// The declared name of the stage that answers; every other continues.
    static ANSWER_AT: Cell<&'static str> = const { Cell::new("") };
}

fn ran() -> Vec<&'static str> {
    RAN.with_borrow(Clone::clone)
}

/// Records that it ran under the name it was declared with, then answers
/// 418 if it is the stage `ANSWER_AT` names, or continues.
fn record(ex: &Exchange<'_>) -> Flow {
    let name = ex.stage();
    RAN.with_borrow_mut(|ran| ran.push(name));
    if ANSWER_AT.get() == name {
        let mut response = wymcp::Response::new(Body::from(name));
        *response.status_mut() = StatusCode::IM_A_TEAPOT;
        Flow::Answer(response)
    } else {
        Flow::Continue
    }
}

/// A stage type that records itself.
#[derive(Debug)]
pub struct Recorder;

impl Stage for Recorder {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        record(ex)
    }
}

#[wymcp::pipeline]
mod recorded {
    use wymcp::{Exchange, Flow};

    pub const FIRST_LINE: u32 = line!() + 2;
    #[wire_check]
    pub type First = super::Recorder;

    #[body_bound(reason = "reads the body for the test")]
    pub async fn second(ex: &mut Exchange<'_>) -> Flow {
        super::record(ex)
    }

    #[body_bound(reason = "a type stage may be body-bound too")]
    pub type Third = super::Recorder;

    #[wire_check]
    pub async fn fourth(ex: &mut Exchange<'_>) -> Flow {
        super::record(ex)
    }

    pub const VALIDATE_LINE: u32 = line!() + 1;
    pub type Validate = wymcp::stages::Validate;

    pub type Fifth = super::Recorder;
}

fn server() -> Server {
    Server::builder()
        .build()
        .expect("the default server builds")
}

/// A POST of a `ping` to `/mcp`.
fn ping() -> Req {
    Req::raw(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
}

#[test]
fn chain_lists_the_stages_in_declared_order_with_roles_and_reasons() {
    let rows: Vec<(&str, Role)> = recorded::CHAIN.iter().map(|s| (s.name, s.role)).collect();
    assert_eq!(
        rows,
        [
            ("First", Role::WireCheck),
            (
                "second",
                Role::BodyBound {
                    reason: "reads the body for the test"
                }
            ),
            (
                "Third",
                Role::BodyBound {
                    reason: "a type stage may be body-bound too"
                }
            ),
            ("fourth", Role::WireCheck),
            ("Validate", Role::Validate),
            ("Fifth", Role::After),
        ]
    );
    assert_eq!(
        recorded::CHAIN[1].reason(),
        Some("reads the body for the test")
    );
    assert_eq!(recorded::CHAIN[0].reason(), None);
}

#[test]
fn chain_rows_carry_the_line_each_stage_is_declared_on() {
    assert_eq!(recorded::CHAIN[0].line, recorded::FIRST_LINE);
    assert_eq!(recorded::CHAIN[4].line, recorded::VALIDATE_LINE);
    let lines: Vec<u32> = recorded::CHAIN.iter().map(|s| s.line).collect();
    assert!(
        lines.is_sorted_by(|a, b| a < b),
        "lines not increasing: {lines:?}"
    );
}

#[test]
fn the_default_chain_is_the_documented_order() {
    let chain: &[StageInfo] = wymcp::chain::post::CHAIN;
    let rows: Vec<(&str, Role)> = chain.iter().map(|s| (s.name, s.role)).collect();
    let body_bound = |reason| Role::BodyBound { reason };
    assert_eq!(
        rows,
        [
            ("OriginCheck", Role::WireCheck),
            (
                "parse_body",
                body_bound("the parse step is what reads the body")
            ),
            (
                "Classify",
                body_bound(
                    "tags the message kind from method and id, and the era (2026-07-28 or legacy 2025) from the protocol-version header and _meta"
                )
            ),
            ("Auth", Role::WireCheck),
            ("SingletonHeaders", Role::WireCheck),
            ("ProtocolFields", Role::WireCheck),
            ("HeaderBinding", Role::WireCheck),
            ("Validate", Role::Validate),
            ("Dispatch", Role::After),
        ]
    );
}

/// Runs one POST through `recorded::handle` with `answer_at` answering;
/// returns the status and the stages that ran.
async fn run_answering_at(answer_at: &'static str) -> (StatusCode, Vec<&'static str>) {
    RAN.with_borrow_mut(Vec::clear);
    ANSWER_AT.set(answer_at);
    let server = server();
    let reply = answered(recorded::handle(&server, ping().build())).await;
    (reply.status, ran())
}

#[tokio::test]
async fn handle_runs_the_stages_in_order_and_stops_at_the_first_that_answers() {
    assert_eq!(
        run_answering_at("First").await,
        (StatusCode::IM_A_TEAPOT, vec!["First"])
    );
    assert_eq!(
        run_answering_at("second").await,
        (StatusCode::IM_A_TEAPOT, vec!["First", "second"])
    );
    assert_eq!(
        run_answering_at("Third").await,
        (StatusCode::IM_A_TEAPOT, vec!["First", "second", "Third"])
    );
    assert_eq!(
        run_answering_at("fourth").await,
        (
            StatusCode::IM_A_TEAPOT,
            vec!["First", "second", "Third", "fourth"]
        )
    );
}

#[tokio::test]
async fn the_router_runs_the_chain_for_post_on_the_endpoint() {
    RAN.with_borrow_mut(Vec::clear);
    ANSWER_AT.set("First");
    let reply = send(&recorded::router(server()), ping()).await;
    assert_eq!(reply.status, StatusCode::IM_A_TEAPOT);
    assert_eq!(ran(), ["First"]);
}

#[tokio::test]
async fn the_router_answers_every_other_verb_405_allow_post_and_runs_no_stage() {
    let brew = Method::from_bytes(b"BREW").expect("a valid extension method");
    for method in [
        Method::GET,
        Method::HEAD,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        brew,
    ] {
        RAN.with_borrow_mut(Vec::clear);
        // Were any stage to run, the first would answer 418.
        ANSWER_AT.set("First");
        let reply = send(
            &recorded::router(server()),
            Req::new(method.clone(), "/mcp"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(
            reply
                .headers
                .get_all(header::ALLOW)
                .iter()
                .collect::<Vec<_>>(),
            ["POST"],
            "{method}"
        );
        assert!(ran().is_empty(), "{method} ran {:?}", ran());
    }
}

/// A server that announces list changes, so its router serves the 2025 GET
/// stream.
fn announcing() -> Server {
    Server::builder()
        .tool(
            wymcp::Tool::new("t")
                .handler(|_: wymcp::NoArgs, _| async { Ok(wymcp::ToolResult::text("ok")) }),
        )
        .build()
        .expect("the server builds")
}

/// Rule (issue 27 §1): a GET runs the chain's wire checks, and only them,
/// in declared order (a user's own included: one that refuses refuses the
/// GET), then what the stream answers; body-bound stages, Validate and
/// what follows never run for it.
#[tokio::test]
async fn a_get_runs_the_wire_checks_only_in_order() {
    let get = || Req::get("/mcp").header("Accept", "text/event-stream");
    RAN.with_borrow_mut(Vec::clear);
    ANSWER_AT.set("fourth");
    let reply = send(&recorded::router(announcing()), get()).await;
    assert_eq!(reply.status, StatusCode::IM_A_TEAPOT);
    assert_eq!(ran(), ["First", "fourth"]);
    RAN.with_borrow_mut(Vec::clear);
    ANSWER_AT.set("");
    let reply = send(&recorded::router(announcing()), get()).await;
    assert_eq!(ran(), ["First", "fourth"]);
    // Past the wire checks: no session token.
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["id"], serde_json::Value::Null);
    assert_eq!(reply.body["error"]["code"], -32600);
}
