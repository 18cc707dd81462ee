//! Fuzz target `dispatch`: see `wymcp_tests::fuzz::chain` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::chain::check_dispatch(data) {
        panic!("invariant broken: {violation}");
    }
});
