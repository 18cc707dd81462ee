//! Fuzz target `sealed_id`: see `wymcp_tests::fuzz::sealed_id` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::sealed_id::check_sealed_id(data) {
        panic!("invariant broken: {violation}");
    }
});
