//! Fuzz target `header_value`: see `wymcp_tests::fuzz::header_value` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::header_value::check_header_value(data) {
        panic!("invariant broken: {violation}");
    }
});
