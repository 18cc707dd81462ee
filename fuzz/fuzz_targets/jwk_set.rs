//! Fuzz target `jwk_set`: see `wymcp_tests::fuzz::jwk_set` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::jwk_set::check_jwk_set(data) {
        panic!("invariant broken: {violation}");
    }
});
