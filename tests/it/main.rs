//! wymcp's integration tests, as one binary (cargo builds and links one
//! instead of one per file): a module per area, and [`support`], what the
//! in-process tests share. Run one area with
//! `cargo test -p wymcp-tests --test it hostile::`.
//!
//! The raw-socket tests (`hostile`, `origin`, `parse_step`, `stalled`,
//! `shutdown`, `memory`, `soak`, part of `streaming` and `listen`) speak to
//! a real server through `wymcp_tests::wire`; the rest send requests through
//! a router in-process (`jwt` and `introspection` with an authorization
//! server of their own on loopback). The tests of what the surface answers
//! (`handlers`, `tools`, `resources`, `prompts`, `listen`, `mrtr`, `tool_macro`,
//! `notes`) go through
//! `wymcp::testing`, as an application's tests do; the tests of the chain's
//! stages keep the request builder, whose headers they take apart.

#![allow(clippy::unwrap_used)]

// The macro's own passes (everything but the `proc_macro` entry in its
// `lib.rs`), compiled in by path, so `order` can snapshot what `#[pipeline]`
// makes of the default chain. At the crate root because they name one
// another `crate::ast`, `crate::ctxt`, … The macro's own expansion
// snapshots are in `wymcp-macros/src/expansion.rs`.
#[path = "../../wymcp-macros/src/ast.rs"]
mod ast;
#[path = "../../wymcp-macros/src/attr.rs"]
mod attr;
#[path = "../../wymcp-macros/src/check.rs"]
mod check;
#[path = "../../wymcp-macros/src/ctxt.rs"]
mod ctxt;
#[path = "../../wymcp-macros/src/expand.rs"]
mod expand;

mod support;

mod auth;
mod classify;
mod deviations;
mod dispatch;
mod dpop;
mod fuzz_corpus;
mod handlers;
mod hardening;
mod headers;
mod hostile;
mod introspection;
mod jwt;
mod layers;
mod ledger;
mod legacy;
mod legacy_stream;
mod listen;
mod memory;
mod mid_call;
mod mrtr;
mod notes;
mod order;
mod origin;
mod parse_step;
mod pipeline;
mod prompts;
mod properties;
mod quota;
mod redis;
mod resources;
mod security_doc;
mod shutdown;
mod skills;
mod soak;
mod stalled;
mod stdio;
mod streaming;
mod tasks;
mod telemetry;
mod testing;
mod tls;
mod tool_macro;
mod tools;
mod ui;
mod user_stages;
mod validate;
