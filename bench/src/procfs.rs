//! What the harness reads about a server process from `/proc`: CPU time and
//! page faults (`/proc/<pid>/stat`), resident memory (`/proc/<pid>/status`),
//! and the peak-RSS reset (`/proc/<pid>/clear_refs`).

use std::io;
use std::time::Duration;

/// A snapshot of a process's counters from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// User plus system CPU time of all the process's threads, in clock ticks.
    pub cpu_ticks: u64,
    /// Minor page faults (a page mapped without I/O).
    pub minor_faults: u64,
    /// Major page faults (a page read from disk).
    pub major_faults: u64,
}

impl Stat {
    /// Reads the counters of `pid`.
    pub fn read(pid: u32) -> io::Result<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        Stat::parse(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected /proc/{pid}/stat: {text}"),
            )
        })
    }

    /// Parses the text of a `/proc/<pid>/stat` file (see proc(5)): fields
    /// after the command name, which is in parentheses and may itself hold
    /// spaces and parentheses, so the fields are counted after its last `)`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Stat> {
        let after = &text[text.rfind(')')? + 1..];
        // Fields numbered as in proc(5): 3 is the state, the first after `)`.
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        Some(Stat {
            minor_faults: field(10)?,
            major_faults: field(12)?,
            cpu_ticks: field(14)? + field(15)?,
        })
    }

    /// The counters accumulated from `before` to `self`.
    #[must_use]
    pub fn since(self, before: Stat) -> Stat {
        Stat {
            cpu_ticks: self.cpu_ticks.saturating_sub(before.cpu_ticks),
            minor_faults: self.minor_faults.saturating_sub(before.minor_faults),
            major_faults: self.major_faults.saturating_sub(before.major_faults),
        }
    }
}

/// The length of a clock tick (`getconf CLK_TCK`; 100 Hz on every Linux
/// this runs on, and the fallback if `getconf` is missing).
#[must_use]
pub fn clock_tick() -> Duration {
    let hz = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|hz| *hz > 0)
        .unwrap_or(100);
    Duration::from_nanos(1_000_000_000 / hz)
}

/// Resident memory of a process, from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Memory {
    /// Resident set size now (`VmRSS`).
    pub rss_kib: u64,
    /// Peak resident set size since start or the last reset (`VmHWM`).
    pub peak_kib: u64,
}

impl Memory {
    /// Reads the memory of `pid`.
    pub fn read(pid: u32) -> io::Result<Memory> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        Ok(Memory::parse(&text))
    }

    /// Parses the text of a `/proc/<pid>/status` file.
    #[must_use]
    pub fn parse(text: &str) -> Memory {
        let kib = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        Memory {
            rss_kib: kib("VmRSS:"),
            peak_kib: kib("VmHWM:"),
        }
    }

    /// Resets the peak (`VmHWM`) to the current RSS: writes `5` to
    /// `/proc/<pid>/clear_refs` (proc(5)).
    pub fn reset_peak(pid: u32) -> io::Result<()> {
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
    }
}

/// The load averages of the machine (`/proc/loadavg`): 1, 5 and 15 minutes.
#[must_use]
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

/// The CPU model name, from `/proc/cpuinfo`.
#[must_use]
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let text = "4242 (a (b) c) S 1 2 3 4 5 6 71 8 93 10 1500 250 0 0 20 0 1 0 9 10 11\n";
        let stat = Stat::parse(text).expect("parses");
        assert_eq!(
            stat,
            Stat {
                cpu_ticks: 1750,
                minor_faults: 71,
                major_faults: 93
            }
        );
    }

    #[test]
    fn the_process_itself_can_be_read() {
        let pid = std::process::id();
        let stat = Stat::read(pid).expect("own stat");
        let memory = Memory::read(pid).expect("own status");
        assert!(memory.rss_kib > 0 && memory.peak_kib >= memory.rss_kib);
        assert!(stat.minor_faults > 0);
    }

    #[test]
    fn status_values_are_kib() {
        let memory = Memory::parse("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n");
        assert_eq!(
            memory,
            Memory {
                rss_kib: 1024,
                peak_kib: 2048
            }
        );
    }
}
