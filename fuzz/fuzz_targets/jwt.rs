//! Fuzz target `jwt`: see `wymcp_tests::fuzz::jwt` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::jwt::check_jwt(data) {
        panic!("invariant broken: {violation}");
    }
});
