//! The resource server's tests (issue 13), in a binary of their own until
//! they are folded into `it/main.rs` (which declares `checks_support`
//! itself: drop the `#[path]` line then).

#[path = "../tests/checks_support/mod.rs"]
mod checks_support;

mod introspection;
mod jwt;
