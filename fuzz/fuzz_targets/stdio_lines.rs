//! Fuzz target `stdio_lines`: see `wymcp_tests::fuzz::stdio_lines` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::stdio_lines::check_stdio_lines(data) {
        panic!("invariant broken: {violation}");
    }
});
