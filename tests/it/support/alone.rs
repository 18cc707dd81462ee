//! One test in a process of its own, for what the other tests of this
//! binary, running beside it, would disturb (the process's RSS).

use std::process::Command;

/// The variable that tells a child process which test it runs alone.
const ALONE: &str = "WYMCP_TEST_ALONE";

/// Runs `test` in a fresh process of this test binary with no other test
/// beside it, and asserts it ran and passed there. `name` is the test's
/// path in the binary (`stalled::a_thousand_…`); in the child, `alone`
/// just calls `test`.
pub fn alone(name: &str, test: impl FnOnce()) {
    if std::env::var(ALONE).as_deref() == Ok(name) {
        test();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, name)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stderr}");
    assert!(
        output.status.success(),
        "{name}, alone: {}\n{stdout}",
        output.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{name} did not run alone: {stdout}"
    );
}
