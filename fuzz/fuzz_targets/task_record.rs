//! Fuzz target `task_record`: see `wymcp_tests::fuzz::task_record` for the input and
//! the invariants it checks, and FUZZING.md for how to run it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = wymcp_tests::fuzz::task_record::check_task_record(data) {
        panic!("invariant broken: {violation}");
    }
});
