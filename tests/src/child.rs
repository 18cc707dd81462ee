//! `examples/everything` as a child process: built with cargo when asked
//! for, started on a free loopback port, signalled, and killed when dropped.
//!
//! Helpers panic on what a test should not meet; they are for tests only.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running `examples/everything`.
#[derive(Debug)]
pub struct Everything {
    child: std::process::Child,
    addr: SocketAddr,
    /// Where `--metrics` serves `/metrics`, when asked for.
    metrics: Option<SocketAddr>,
    panics: Arc<AtomicUsize>,
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The path of `examples/everything`: `WYMCP_EVERYTHING_BIN` when set
/// (`scripts/test` builds it first and sets it); else the one `cargo build`
/// left next to this test binary (`examples/everything`) when it is newer
/// than the sources it is built from; else one built now with `cargo build`
/// (which, outside a workspace build, may recompile dependencies with other
/// features: slow, once). The `examples/everything-HASH` that `cargo test
/// --all-targets` leaves is never taken: it is built with the libtest harness,
/// which refuses `--bind`.
pub fn everything_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WYMCP_EVERYTHING_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> → target/<profile>/examples/
    let examples = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>")
        .join("examples");
    if let Some(built) = newest_build(&examples)
        && modified(&built) >= newest_source()
    {
        return built;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "wymcp-examples",
            "--example",
            "everything",
        ])
        .current_dir(workspace())
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building examples/everything failed");
    examples.join("everything")
}

fn modified(path: &std::path::Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// The `everything` executable `cargo build` left in `dir`, if any.
fn newest_build(dir: &std::path::Path) -> Option<PathBuf> {
    let path = dir.join("everything");
    path.is_file().then_some(path)
}

/// The newest modification time of the example's and the library's sources.
fn newest_source() -> std::time::SystemTime {
    fn walk(dir: &std::path::Path, newest: &mut std::time::SystemTime) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, newest);
            } else {
                *newest = (*newest).max(modified(&path));
            }
        }
    }
    let root = workspace();
    let mut newest = modified(&root.join("examples/everything.rs"));
    for dir in ["wymcp/src", "wymcp-macros/src"] {
        walk(&root.join(dir), &mut newest);
    }
    newest
}

impl Everything {
    /// Starts `everything --bind 127.0.0.1:0` with `args` and `env`, and
    /// waits for the address it prints.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(everything_binary())
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start examples/everything");
        let stdout = child.stdout.take().expect("its stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .expect("a first line")
            .expect("a readable first line");
        let addr = first
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("`listening on http://ADDR/mcp`, got {first:?}"));
        // With --metrics, the next line names the metrics listener.
        let metrics = args.contains(&"--metrics").then(|| {
            let line = lines
                .next()
                .expect("the metrics line")
                .expect("a readable metrics line");
            line.strip_prefix("metrics on http://")
                .and_then(|rest| rest.strip_suffix("/metrics"))
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("`metrics on http://ADDR/metrics`, got {line:?}"))
        });
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        // Forward stderr, counting panics.
        let panics = Arc::new(AtomicUsize::new(0));
        let stderr = child.stderr.take().expect("its stderr");
        let counter = panics.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("panicked at") {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                eprintln!("[everything] {line}");
            }
        });
        Everything {
            child,
            addr,
            metrics,
            panics,
        }
    }

    /// The address served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where `/metrics` is served (started with `--metrics`).
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics.expect("started with --metrics")
    }

    /// How many panics the process reported on stderr so far.
    pub fn panics(&self) -> usize {
        self.panics.load(Ordering::Relaxed)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits up to `wait` for the process to exit.
    pub fn exited_within(&mut self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// This process's resident set size in bytes (`VmRSS`).
    pub fn rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
