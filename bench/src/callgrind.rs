//! Counting a server's user-space instructions with callgrind, for
//! `wymcp-bench hotpath --instructions` (bench/src/hotpath.rs): the server
//! runs under `valgrind --tool=callgrind`, the harness zeroes its counters
//! (`callgrind_control -z PID`) after a warm-up, sends the measured
//! requests, dumps (`callgrind_control -d PID`) and reads the dump's totals.
//! Instruction counts do not move with the machine's load, which timings
//! do; they count only what the server runs in user space (no kernel, no
//! waiting).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::runner::Error;

/// The programs it needs, as found on `PATH`.
pub const PROGRAMS: [&str; 2] = ["valgrind", "callgrind_control"];

/// Whether `valgrind` and `callgrind_control` run; the error names what is
/// missing.
pub fn available() -> Result<(), Error> {
    for program in PROGRAMS {
        let ran = Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if ran.is_err() {
            return Err(Error::Harness(format!(
                "--instructions needs `{program}` on PATH (Debian: apt-get install valgrind)"
            )));
        }
    }
    Ok(())
}

/// The words that go before a server's command line to run it under
/// callgrind, its dumps written as `DIR/callgrind.out.PID.N`.
#[must_use]
pub fn prefix(dir: &Path) -> Vec<String> {
    vec![
        "valgrind".to_owned(),
        "-q".to_owned(),
        "--tool=callgrind".to_owned(),
        format!(
            "--callgrind-out-file={}",
            dir.join("callgrind.out.%p").display()
        ),
    ]
}

/// One server running under callgrind: its pid, where its dumps go, and
/// how many it has made.
#[derive(Debug)]
pub struct Counter {
    pid: u32,
    dir: PathBuf,
    dumps: u32,
}

impl Counter {
    /// The server `pid`, started with [`prefix`]`(dir)`.
    #[must_use]
    pub fn new(pid: u32, dir: &Path) -> Counter {
        Counter {
            pid,
            dir: dir.to_owned(),
            dumps: 0,
        }
    }

    /// Zeroes the counters (`callgrind_control -z`).
    pub fn zero(&self) -> Result<(), Error> {
        control(self.pid, "-z")
    }

    /// Dumps (`callgrind_control -d`) and returns the instructions (Ir)
    /// counted since the last zero or dump.
    pub fn dump(&mut self) -> Result<u64, Error> {
        control(self.pid, "-d")?;
        self.dumps += 1;
        let path = self
            .dir
            .join(format!("callgrind.out.{}.{}", self.pid, self.dumps));
        // The dump is written by the server's process; `callgrind_control`
        // returns once it is asked for. Wait for its totals line.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = std::fs::read_to_string(&path)
                && let Some(total) = totals(&text)
            {
                let _ = std::fs::remove_file(&path);
                return Ok(total);
            }
            if Instant::now() > deadline {
                return Err(Error::Harness(format!(
                    "no callgrind totals in {} after 60 s",
                    path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn control(pid: u32, flag: &str) -> Result<(), Error> {
    let output = Command::new("callgrind_control")
        .arg(flag)
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(crate::runner::io("running callgrind_control"))?;
    let said = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && said.contains("OK") {
        Ok(())
    } else {
        Err(Error::Harness(format!(
            "callgrind_control {flag} {pid} failed ({}): {}{}",
            output.status,
            said.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// The instructions (the `Ir` event) of a callgrind dump: its `totals:`
/// line (the last one, written at the end of the dump), else its
/// `summary:` line; the column of `Ir` in its `events:` line (the first
/// when there is no `events:` line). `None` when there is neither or the
/// number does not parse.
#[must_use]
pub fn totals(dump: &str) -> Option<u64> {
    let mut column = 0;
    let mut summary = None;
    let mut total = None;
    for line in dump.lines() {
        if let Some(events) = line.strip_prefix("events:") {
            column = events.split_whitespace().position(|e| e == "Ir")?;
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(rest);
        } else if let Some(rest) = line.strip_prefix("totals:") {
            total = Some(rest);
        }
    }
    total
        .or(summary)?
        .split_whitespace()
        .nth(column)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump as callgrind writes it, trimmed to its shape.
    const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.22.0
pid: 4242
cmd:  target/release/examples/everything --bind 127.0.0.1:0
part: 1

desc: I1 cache: 
desc: Timerange: Basic block 123 - 456
desc: Trigger: Program termination

positions: line
events: Ir
summary: 1400540000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) memcpy
0 120

totals: 1400540000
";

    #[test]
    fn reads_the_totals_of_a_dump() {
        assert_eq!(totals(DUMP), Some(1_400_540_000));
    }

    #[test]
    fn prefers_totals_and_reads_the_ir_column() {
        let dump = "events: Dr Ir Dw\nsummary: 1 2 3\nfn=(1) f\n0 1 2 3\ntotals: 10 20 30\n";
        assert_eq!(totals(dump), Some(20));
        let no_totals = "events: Ir\nsummary: 77\n";
        assert_eq!(totals(no_totals), Some(77));
    }

    #[test]
    fn a_dump_without_numbers_has_no_totals() {
        assert_eq!(totals(""), None);
        assert_eq!(totals("events: Ir\nfn=(1) f\n"), None);
        assert_eq!(totals("events: Dr\ntotals: 5\n"), None);
        assert_eq!(totals("events: Ir\ntotals: lots\n"), None);
    }
}
