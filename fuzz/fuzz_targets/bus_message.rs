//! Fuzz target `bus_message`: see `wymcp_tests::fuzz::bus_message` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::bus_message::check_bus_message(data) {
        panic!("invariant broken: {violation}");
    }
});
