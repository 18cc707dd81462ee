//! Fuzz target `request_state`: see `wymcp_tests::fuzz::request_state` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::request_state::check_request_state(data) {
        panic!("invariant broken: {violation}");
    }
});
