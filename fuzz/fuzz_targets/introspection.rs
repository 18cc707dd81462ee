//! Fuzz target `introspection`: see `wymcp_tests::fuzz::introspection` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::introspection::check_introspection(data) {
        panic!("invariant broken: {violation}");
    }
});
