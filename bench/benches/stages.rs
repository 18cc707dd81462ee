//! Criterion micro-benchmarks of the per-request work of each stage of
//! wymcp's default chain, so a regression points at its stage.
//!
//! Each benchmark builds an [`Exchange`] for the benchmark's small
//! `tools/call` (the same bytes and headers the load test sends), brings it to
//! the stage under test by running the stages before it (untimed), and times
//! that one stage's `run`. The parse step's product (`bytes`, `message`) is
//! set directly, so the stages after it are timed without HTTP and JSON
//! parsing; `parse_body` and `serde_json` parsing have benchmarks of their own.
//!
//! Run: `cargo bench -p wymcp-bench --bench stages` (add `-- --quick` for a
//! fast pass; `-- STAGE` to run one).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use wymcp::Server;
use wymcp::axum::body::Body;
use wymcp::stages;
use wymcp::{Exchange, Flow, Stage};
use wymcp_bench::payload::{self, Request};

/// The stages after the parse step, in the chain's order.
const AFTER_PARSE: [&str; 7] = [
    "Classify",
    "Auth",
    "SingletonHeaders",
    "ProtocolFields",
    "HeaderBinding",
    "Validate",
    "Dispatch",
];

/// Polls a stage's future to its end; stages after the parse step do no I/O,
/// so one poll finishes them.
fn finish<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a stage after the parse step waited on I/O"),
    }
}

async fn run_named(name: &str, ex: &mut Exchange<'_>) -> Flow {
    match name {
        "Classify" => stages::Classify::run(ex).await,
        "Auth" => stages::Auth::run(ex).await,
        "SingletonHeaders" => stages::SingletonHeaders::run(ex).await,
        "ProtocolFields" => stages::ProtocolFields::run(ex).await,
        "HeaderBinding" => stages::HeaderBinding::run(ex).await,
        "Validate" => stages::Validate::run(ex).await,
        "Dispatch" => stages::Dispatch::run(ex).await,
        other => panic!("no stage {other}"),
    }
}

fn http_request(request: &Request) -> http::Request<Body> {
    let mut builder = http::Request::builder()
        .method(http::Method::POST)
        .uri(payload::ENDPOINT)
        .header(http::header::HOST, "127.0.0.1:8080");
    for (name, value) in &request.headers {
        builder = builder.header(*name, value);
    }
    builder
        .body(Body::from(request.body.clone()))
        .expect("a valid request")
}

/// An exchange as the parse step leaves it: body read and parsed.
fn parsed<'a>(server: &'a Server, request: &Request) -> Exchange<'a> {
    let mut ex = Exchange::new(server, http_request(request));
    wymcp::fuzzing::set_facts(
        &mut ex,
        bytes::Bytes::from(request.body.clone()),
        Some(serde_json::from_slice(&request.body).expect("the body parses")),
        None,
        wymcp::Era::Modern,
        None,
    );
    ex
}

/// An exchange brought to `stage`: parsed, then every stage before it run.
fn at_stage<'a>(server: &'a Server, request: &Request, stage: &str) -> Exchange<'a> {
    let mut ex = parsed(server, request);
    for before in AFTER_PARSE.iter().take_while(|s| **s != stage) {
        if let Flow::Answer(response) = finish(run_named(before, &mut ex)) {
            panic!(
                "{before} answered {} before {stage} could be measured",
                response.status()
            );
        }
    }
    ex
}

fn server() -> Server {
    wymcp_bench::servers::wymcp_server()
}

fn bench_stages(c: &mut Criterion) {
    let server = server();
    for (size, request) in [
        ("small", payload::small_call()),
        ("1mb", payload::echo_call_sized(payload::LARGE_CALL_BYTES)),
    ] {
        let mut group = c.benchmark_group(format!("stage/{size}"));
        for name in AFTER_PARSE {
            group.bench_function(name, |b| {
                b.iter_batched(
                    || at_stage(&server, &request, name),
                    |mut ex| {
                        let flow = finish(run_named(name, &mut ex));
                        black_box(flow);
                        ex
                    },
                    BatchSize::LargeInput,
                );
            });
        }
        group.finish();
    }
}

/// The chain's own work: every stage after the parse step, on a parsed
/// exchange (the ≤ 3 µs target).
fn bench_chain(c: &mut Criterion) {
    let server = server();
    let request = payload::small_call();
    // What is timed must be the served path, not a rejection.
    let mut ex = parsed(&server, &request);
    let answered = finish(async {
        for name in AFTER_PARSE {
            if let Flow::Answer(response) = run_named(name, &mut ex).await {
                let status = response.status();
                let body = wymcp::axum::body::to_bytes(response.into_body(), usize::MAX).await;
                return Some((name, status, body.unwrap_or_default()));
            }
        }
        None
    });
    match answered {
        Some((_, http::StatusCode::OK, _)) => {}
        other => panic!("the small call is not served: {other:?}"),
    }
    c.bench_function("chain/after_parse", |b| {
        b.iter_batched(
            || parsed(&server, &request),
            |mut ex| {
                let flow = finish(async {
                    for name in AFTER_PARSE {
                        if let Flow::Answer(response) = run_named(name, &mut ex).await {
                            return Flow::Answer(response);
                        }
                    }
                    Flow::Continue
                });
                black_box(flow);
                ex
            },
            BatchSize::SmallInput,
        );
    });
}

/// The parse step on the small call's body, and serde_json alone on the same
/// bytes for reference.
fn bench_parse(c: &mut Criterion) {
    let server = server();
    let request = payload::small_call();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _context = runtime.enter();
    c.bench_function("parse/parse_body", |b| {
        b.iter_batched(
            || Exchange::new(&server, http_request(&request)),
            |mut ex| {
                let flow = finish(stages::parse_body(&mut ex));
                black_box(flow);
                ex
            },
            BatchSize::SmallInput,
        );
    });
    c.bench_function("parse/serde_json_value", |b| {
        b.iter(|| {
            black_box(serde_json::from_slice::<serde_json::Value>(black_box(
                &request.body,
            )))
        });
    });
}

/// Pieces of Dispatch's per-request work on the served path, timed alone so
/// PERF-FINDINGS.md can say what each costs: the deep copy of `params` it
/// makes (three times per `tools/call`), and the MRTR params digest it
/// computes for every request.
fn bench_dispatch_parts(c: &mut Criterion) {
    for (size, request) in [
        ("small", payload::small_call()),
        ("1mb", payload::echo_call_sized(payload::LARGE_CALL_BYTES)),
    ] {
        let message: serde_json::Value =
            serde_json::from_slice(&request.body).expect("the body parses");
        let params = message.get("params").expect("params").clone();
        let mut group = c.benchmark_group(format!("dispatch_parts/{size}"));
        group.bench_function("params_clone", |b| {
            b.iter(|| black_box(black_box(&params).clone()));
        });
        group.bench_function("params_digest", |b| {
            b.iter(|| black_box(wymcp::fuzzing::params_digest(Some(black_box(&params)))));
        });
        group.finish();
    }
}

criterion_group!(
    benches,
    bench_stages,
    bench_chain,
    bench_parse,
    bench_dispatch_parts
);
criterion_main!(benches);
