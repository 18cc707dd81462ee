//! A real `redis-server` for one test: started on a free loopback port with
//! nothing persisted, killed (and startable again on the same port, for the
//! outage tests) by the test, stopped when dropped.
//!
//! When no `redis-server` can be started, [`RedisServer::start`] says so
//! loudly and gives `None` (the test returns), unless
//! `WYMCP_REQUIRE_REDIS=1` (set by `scripts/test`, which installs it):
//! then it panics, so CI never passes a Redis test by skipping it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` of a test's own.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl RedisServer {
    /// Starts one, or `None` (after a loud message) when none can be.
    pub fn start() -> Option<RedisServer> {
        let mut server = RedisServer {
            port: free_port(),
            child: None,
        };
        match server.spawn() {
            Ok(()) => Some(server),
            Err(why) => {
                assert!(
                    std::env::var("WYMCP_REQUIRE_REDIS").as_deref() != Ok("1"),
                    "WYMCP_REQUIRE_REDIS=1 but redis-server cannot be started: {why}"
                );
                eprintln!(
                    "\n!!!!!!!! SKIPPED: this Redis test needs redis-server ({why}); \
                     scripts/test installs it (apt-get install redis-server) !!!!!!!!\n"
                );
                None
            }
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawning redis-server: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.cli(&["PING"]).is_some_and(|out| out.trim() == "PONG") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("redis-server did not answer PING within 10 s".into())
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Runs `redis-cli` against it; its output, when it ran.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// How many subscribers `channel` has.
    pub fn subscribers(&self, channel: &str) -> usize {
        self.cli(&["PUBSUB", "NUMSUB", channel])
            .and_then(|out| out.lines().nth(1).and_then(|n| n.trim().parse().ok()))
            .unwrap_or(0)
    }

    /// Waits until `channel` has `n` subscribers.
    pub async fn await_subscribers(&self, channel: &str, n: usize) {
        for _ in 0..500 {
            if self.subscribers(channel) >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{channel} never had {n} subscribers");
    }

    /// Kills it with SIGKILL (an outage); [`restart`](Self::restart) brings
    /// it back on the same port, empty.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.spawn().expect("redis-server restarts");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
