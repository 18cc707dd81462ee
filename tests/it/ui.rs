//! Compile-fail and compile-pass cases of `#[pipeline]`: every rule of the
//! chain's DSL, each with the error it gives (`ui/fail/*.stderr`, reviewed),
//! and the shapes of module it accepts (`ui/pass`).
//!
//! Regenerate with `TRYBUILD=overwrite cargo test -p wymcp-tests --test it ui::`,
//! then read every changed `.stderr` before committing it.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
