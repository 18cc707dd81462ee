//! Compile-fail and compile-pass cases of `#[pipeline]` and of `#[tool]` /
//! `#[tools]` (`ui/*/tool*.rs`): every rule of each, with the error it
//! gives (`ui/fail/*.stderr`, reviewed), and the shapes each accepts
//! (`ui/pass`).
//!
//! Regenerate with `TRYBUILD=overwrite cargo test -p wymcp-tests --test it ui::`,
//! then read every changed `.stderr` before committing it.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
