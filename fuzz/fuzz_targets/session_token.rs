//! Fuzz target `session_token`: see `wymcp_tests::fuzz::session_token` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::session_token::check_session_token(data) {
        panic!("invariant broken: {violation}");
    }
});
