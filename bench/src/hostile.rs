//! The hostile soak: `examples/everything` under attack, one scenario per
//! kind of the ledger (`wymcp::ledger::Kind`), while a well-behaved client
//! on another address keeps calling a tool.
//!
//! Each scenario starts its own server, `--group-ipv4 24`: every address of
//! `127.0.0.0/24` is one caller of the ledger, as an IPv6 /64 is by default
//! (on loopback there is no /64 beyond `::1`, and every `127.0.0.0/8`
//! address is loopback on Linux). The attackers come from `127.0.0.2` to
//! `127.0.0.254` (the quick tasks from `127.0.1.0/24`), a new address for
//! each connection (so no per-peer connection limit stops them first); the
//! well-behaved client from `127.1.0.1`, another /24. The scenarios ([`SCENARIOS`]), one row each:
//!
//! * **bodies** — big bodies held one byte short, bodies trickled a byte at
//!   a time, oversize bodies (a declared 8,000,001 bytes; 7.9 MB of
//!   `[0,0,…]`), and idle HTTP/2 connections that only `PING`;
//! * **listen streams** — a listen flood, lagging listeners watching 256
//!   URIs that never read, and a publisher changing the tool list as fast as
//!   it can;
//! * **waits** — 2025 clients whose `tools/call` asks them a question
//!   mid-call (an elicitation) they never answer;
//! * **tasks** — task-augmented calls of a tool that works for ten minutes
//!   (running tasks), and many quick ones that leave stored records;
//! * **auth calls** — opaque tokens nobody issued, each introspected at an
//!   authorization server the soak starts itself, which answers them after
//!   two seconds (the client's own token at once);
//! * **notifications** — calls of a tool reporting progress as fast as it
//!   can, to a client that never reads;
//! * **TLS handshakes** — served over TLS (`--tls-cert`, the certificates
//!   of scripts/test-certs.sh), connections that never send a ClientHello
//!   and ones that send half of one, held until the server closes them
//!   (`--tls-handshake-timeout-ms 2000`); the client speaks TLS too;
//! * **several subjects** — with `--static-token`s, the listen, waits and
//!   tasks attacks as eight principals, the client a ninth;
//! * **DPoP proofs** — `--dpop required` behind the soak's authorization
//!   server, which binds the attackers' token and the client's to two keys
//!   (`cnf.jkt`): valid proofs, each with a fresh `jti`, as fast as they are
//!   answered, filling the attackers' share of the replay cache, while the
//!   client, its own token and key, keeps calling.
//!
//! The well-behaved client calls `test_simple_text` on one kept-alive
//! connection, first alone (its unloaded latency), then beside the
//! attackers. A scenario fails when that client meets any answer but `200`
//! (a 5xx above all) or a lost connection, when the server dies or logs a
//! panic, or when its peak RSS passes [`RSS_BOUND_KIB`]. Latency never fails
//! it: it is reported, loaded against unloaded.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::procfs::Memory;

/// The most resident memory a scenario's server may reach: the ledger's
/// global body budget (`Limits::bodies_in_flight`, 256 MiB, the largest cap
/// of bytes a caller can make the server hold) and a 128 MiB margin for
/// everything else (the runtime, the catalog, the other kinds' places,
/// the allocator's slack). BENCHMARKS.md's hostile soak section states it.
pub const RSS_BOUND_KIB: u64 = (256 + 128) * 1024;

/// How a scenario's server authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Auth {
    /// No auth: callers are addresses, grouped by /24.
    None,
    /// `--static-token`s: the client one principal, the attackers
    /// [`ATTACKER_SUBJECTS`] others.
    Subjects,
    /// `--introspection-url` at the soak's own authorization server.
    Introspection,
    /// `--introspection-url` as [`Auth::Introspection`], and `--dpop
    /// required`: the attackers' token and the client's each bound to a
    /// key of their own ([`DPOP_ATTACKER`], [`DPOP_CLIENT`]).
    Dpop,
}

/// One attack: what a worker does, connection after connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attack {
    /// Bodies declared 1,000,000 bytes, sent but for the last byte, held.
    HeldBodies,
    /// A declared body sent one byte at a time.
    TrickledBodies,
    /// A declared 8,000,001 bytes; 7.9 MB of `[0,0,…]`.
    OversizeBodies,
    /// HTTP/2 connections that open no stream and `PING` every 300 ms.
    Http2Pingers,
    /// Listen streams, one per connection, held.
    ListenFlood,
    /// 2025 standalone GET streams, one per connection (each after its own
    /// `initialize` for a token), held.
    GetFlood,
    /// Listen streams watching 256 URIs that never read.
    LaggingListeners,
    /// `test_trigger_tool_change` as fast as it is answered.
    Publisher,
    /// 2025 calls asking an elicitation, never answered.
    UnansweredElicitations,
    /// Task-augmented calls of `slow_compute` for 600 s.
    SlowTasks,
    /// Task-augmented calls of `slow_compute` for 0 s: stored records.
    QuickTasks,
    /// Calls with a token nobody issued, a new one each.
    UnknownTokens,
    /// Calls of `test_progress_flood` (50,000 notifications), never read.
    ProgressFlood,
    /// TLS: connections that send nothing, held.
    SilentConnections,
    /// TLS: connections that send half a ClientHello, held.
    HalfHellos,
    /// Calls with the attackers' DPoP-bound token, each with a valid proof
    /// of a fresh `jti`, on kept-alive connections, as fast as answered.
    DpopProofs,
}

impl Attack {
    /// Its name in the report.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Attack::HeldBodies => "held bodies",
            Attack::TrickledBodies => "trickled bodies",
            Attack::OversizeBodies => "oversize bodies",
            Attack::Http2Pingers => "idle HTTP/2 pingers",
            Attack::ListenFlood => "listen flood",
            Attack::GetFlood => "GET stream flood (2025)",
            Attack::LaggingListeners => "lagging listeners",
            Attack::Publisher => "publisher",
            Attack::UnansweredElicitations => "unanswered elicitations (2025)",
            Attack::SlowTasks => "slow tasks (running)",
            Attack::QuickTasks => "quick tasks (stored)",
            Attack::UnknownTokens => "unknown tokens (introspected)",
            Attack::ProgressFlood => "progress to a reader that never reads",
            Attack::SilentConnections => "TLS connections that never say hello",
            Attack::HalfHellos => "TLS connections with half a ClientHello",
            Attack::DpopProofs => "fresh DPoP proofs (remembered)",
        }
    }

    /// The third byte of its addresses, `127.0.<group>.0/24`: one caller
    /// without auth. The quick tasks come from a /24 of their own, so the
    /// slow tasks' running places do not stop them leaving stored records.
    fn group(self) -> u8 {
        match self {
            Attack::QuickTasks => 1,
            _ => 0,
        }
    }

    /// How many workers run it at once.
    fn workers(self) -> usize {
        match self {
            Attack::UnknownTokens | Attack::SilentConnections | Attack::HalfHellos => 16,
            Attack::DpopProofs
            | Attack::QuickTasks
            | Attack::UnansweredElicitations
            | Attack::ListenFlood
            | Attack::GetFlood => 4,
            Attack::Publisher => 1,
            _ => 2,
        }
    }
}

/// One scenario: the ledger kinds whose places it takes, how the server
/// authenticates, and the attacks. Adding a kind is adding a row to
/// [`SCENARIOS`] (and an [`Attack`] if none takes its places yet).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Scenario {
    /// Its name (`--only` picks by it).
    pub name: &'static str,
    /// The ledger kinds (`Kind::name`) it takes places of.
    pub kinds: &'static [&'static str],
    /// How the server authenticates.
    pub auth: Auth,
    /// What the attackers do.
    #[serde(skip)]
    pub attacks: &'static [Attack],
}

/// The scenarios, run in this order.
impl Scenario {
    /// Whether its server speaks TLS (the handshake scenario).
    #[must_use]
    pub fn tls(&self) -> bool {
        self.kinds.contains(&"handshakes")
    }
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "bodies",
        kinds: &["bodies"],
        auth: Auth::None,
        attacks: &[
            Attack::HeldBodies,
            Attack::TrickledBodies,
            Attack::OversizeBodies,
            Attack::Http2Pingers,
        ],
    },
    Scenario {
        name: "listen streams",
        kinds: &["listen_streams"],
        auth: Auth::None,
        attacks: &[
            Attack::ListenFlood,
            Attack::LaggingListeners,
            Attack::Publisher,
        ],
    },
    Scenario {
        name: "GET streams",
        kinds: &["legacy_streams"],
        auth: Auth::None,
        attacks: &[Attack::GetFlood, Attack::Publisher],
    },
    Scenario {
        name: "waits",
        kinds: &["waits"],
        auth: Auth::None,
        attacks: &[Attack::UnansweredElicitations],
    },
    Scenario {
        name: "tasks",
        kinds: &["running_tasks", "stored_tasks"],
        auth: Auth::None,
        attacks: &[Attack::SlowTasks, Attack::QuickTasks],
    },
    Scenario {
        name: "auth calls",
        kinds: &["auth_calls"],
        auth: Auth::Introspection,
        attacks: &[Attack::UnknownTokens],
    },
    Scenario {
        name: "notifications",
        kinds: &["notifications"],
        auth: Auth::None,
        attacks: &[Attack::ProgressFlood],
    },
    Scenario {
        name: "TLS handshakes",
        kinds: &["handshakes"],
        auth: Auth::None,
        attacks: &[Attack::SilentConnections, Attack::HalfHellos],
    },
    Scenario {
        name: "several subjects",
        kinds: &["listen_streams", "waits", "running_tasks"],
        auth: Auth::Subjects,
        attacks: &[
            Attack::ListenFlood,
            Attack::UnansweredElicitations,
            Attack::SlowTasks,
        ],
    },
    Scenario {
        name: "DPoP proofs",
        kinds: &["dpop_proofs"],
        auth: Auth::Dpop,
        attacks: &[Attack::DpopProofs],
    },
];

/// How many principals attack in [`Auth::Subjects`].
pub const ATTACKER_SUBJECTS: usize = 8;

/// The well-behaved client's Bearer token (its own principal, or the one
/// the soak's authorization server vouches for).
const CLIENT_TOKEN: &str = "wymcp-bench-hostile-client";

/// The resource the soak's authorization server vouches the client's
/// token for.
const AUDIENCE: &str = "http://127.0.0.1/mcp";

/// How long the soak's authorization server takes to answer a token that is
/// not the client's.
const SLOW_ANSWER: Duration = Duration::from_secs(2);

/// A DPoP key of the soak and the opaque token its authorization server
/// binds to it (`cnf.jkt`). The keys are TEST keys, P-256, generated once
/// for this file (`openssl ecparam -name prime256v1 -genkey -noout |
/// openssl pkcs8 -topk8 -nocrypt -outform DER | base64`) and used nowhere
/// else: they protect nothing.
#[derive(Debug)]
pub struct DpopKey {
    /// The bound token.
    token: &'static str,
    /// The private key, PKCS #8 DER in base64.
    pkcs8: &'static str,
    /// The public point's x, base64url.
    x: &'static str,
    /// The public point's y, base64url.
    y: &'static str,
}

/// The well-behaved client's DPoP key and token.
pub const DPOP_CLIENT: DpopKey = DpopKey {
    token: "wymcp-bench-hostile-dpop-client",
    pkcs8: "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjp23R10dMWZVgiByb8OG8p9aIJU7/XviSe6PgtXWwWShRANCAATpC9Q4d3cU2pnmTZ7xhDCIfN/H3R/48Az5Y/t0gnoQUee/8vxSsX3JNNgCp9MgJAmPQnh3Q+DKXHannysrBxOF",
    x: "6QvUOHd3FNqZ5k2e8YQwiHzfx90f-PAM-WP7dIJ6EFE",
    y: "57_y_FKxfck02AKn0yAkCY9CeHdD4MpcdqefKysHE4U",
};

/// The attackers' DPoP key and token (one token, one key: every proof is
/// valid; only the `jti`s differ).
pub const DPOP_ATTACKER: DpopKey = DpopKey {
    token: "wymcp-bench-hostile-dpop-attacker",
    pkcs8: "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/b2mRUH1mx3ZahJQjDiws0LIwxsALI6EPZADjwhqEjqhRANCAAQNkPQMS8WTxRooKAnJD2ogi03CF2aB2tR/tQTQ8hKzIHoHMN5ttJoPXtVUCKb6CHwUdai3SptW9GsSAi9zydLv",
    x: "DZD0DEvFk8UaKCgJyQ9qIItNwhdmgdrUf7UE0PISsyA",
    y: "egcw3m20mg9e1VQIpvoIfBR1qLdKm1b0axICL3PJ0u8",
};

/// The `jti` of the next proof, every key together.
static NEXT_JTI: AtomicU64 = AtomicU64::new(0);

impl DpopKey {
    /// The public key as a proof's header carries it.
    fn jwk(&self) -> serde_json::Value {
        serde_json::json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y})
    }

    /// Its RFC 7638 thumbprint: the `cnf.jkt` its token is bound to.
    fn jkt(&self) -> String {
        use base64::Engine as _;
        use sha2::Digest as _;
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.x, self.y
        );
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(canonical.as_bytes()))
    }

    /// The header lines of a `POST` to the soak's resource with this key's
    /// token and a fresh proof (a new `jti`, `iat` now). Without a proof
    /// if signing fails (the server then refuses it, and that is counted).
    fn lines(&self) -> String {
        use base64::Engine as _;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        use sha2::Digest as _;
        let mut lines = format!("Authorization: DPoP {}\r\n", self.token);
        let Ok(der) = STANDARD.decode(self.pkcs8) else {
            return lines;
        };
        let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()});
        let iat = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let claims = serde_json::json!({
            "htm": "POST",
            "htu": AUDIENCE,
            "iat": iat,
            "jti": format!("{}-{}", std::process::id(), NEXT_JTI.fetch_add(1, Ordering::Relaxed)),
            "ath": URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(self.token.as_bytes())),
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        if let Ok(signature) =
            jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::ES256)
        {
            let _ = write!(lines, "DPoP: {input}.{signature}\r\n");
        }
        lines
    }
}

/// How the well-behaved client authenticates.
#[derive(Debug, Clone, Copy)]
enum ClientAuth {
    None,
    /// `Authorization: Bearer` with this token.
    Bearer(&'static str),
    /// Its DPoP-bound token, a fresh proof each call.
    Dpop(&'static DpopKey),
}

impl ClientAuth {
    fn of(auth: Auth) -> ClientAuth {
        match auth {
            Auth::None => ClientAuth::None,
            Auth::Subjects | Auth::Introspection => ClientAuth::Bearer(CLIENT_TOKEN),
            Auth::Dpop => ClientAuth::Dpop(&DPOP_CLIENT),
        }
    }

    /// The header lines of one call.
    fn lines(self) -> String {
        match self {
            ClientAuth::None => String::new(),
            ClientAuth::Bearer(token) => bearer(Some(token)),
            ClientAuth::Dpop(key) => key.lines(),
        }
    }
}

/// What the soak runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `examples/everything` binary.
    pub server: PathBuf,
    /// How long the attacks last, all scenarios together (each gets an
    /// equal part, at least [`MIN_ATTACK`]).
    pub duration: Duration,
    /// How long the client is measured alone first, in each scenario
    /// (default: a third of its attack, 1 to 5 s).
    pub unloaded: Option<Duration>,
    /// The scenarios to run, by name (default: all).
    pub only: Option<Vec<String>>,
}

/// The shortest attack a scenario gets.
pub const MIN_ATTACK: Duration = Duration::from_secs(3);

impl Options {
    /// The scenarios chosen, or why a name is unknown.
    pub fn scenarios(&self) -> Result<Vec<Scenario>, String> {
        let Some(only) = &self.only else {
            return Ok(SCENARIOS.to_vec());
        };
        only.iter()
            .map(|name| {
                SCENARIOS
                    .iter()
                    .find(|s| s.name == name.as_str())
                    .copied()
                    .ok_or_else(|| {
                        let names: Vec<_> = SCENARIOS.iter().map(|s| s.name).collect();
                        format!("no scenario `{name}` (there are {names:?})")
                    })
            })
            .collect()
    }

    /// Each scenario's attack and unloaded time, for `scenarios` of them.
    #[must_use]
    pub fn times(&self, scenarios: usize) -> (Duration, Duration) {
        let n = u32::try_from(scenarios.max(1)).unwrap_or(u32::MAX);
        let attack = (self.duration / n).max(MIN_ATTACK);
        let unloaded = self
            .unloaded
            .unwrap_or_else(|| (attack / 3).clamp(Duration::from_secs(1), Duration::from_secs(5)));
        (attack, unloaded)
    }
}

/// What the soak saw, scenario by scenario.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The bound each scenario's peak RSS is held to, in KiB.
    pub rss_bound_kib: u64,
    /// The scenarios, in the order run.
    pub scenarios: Vec<ScenarioReport>,
}

/// What one scenario saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub name: String,
    /// The ledger kinds it attacks.
    pub kinds: Vec<String>,
    /// The client's calls, alone.
    pub unloaded: Latencies,
    /// The client's calls, beside the attackers.
    pub loaded: Latencies,
    /// Answers the client met other than `200`, by status (`closed`: no
    /// answer, the connection lost or refused).
    pub client_failures: BTreeMap<String, u64>,
    /// What the attackers met, by attack and outcome (a status, with what
    /// its body or stream said when that tells the refusals apart; `held`:
    /// a connection opened and held; `closed`: closed or refused).
    pub attacks: BTreeMap<String, BTreeMap<String, u64>>,
    /// The server's resident memory at start, in KiB.
    pub rss_start_kib: u64,
    /// The server's peak resident memory, in KiB.
    pub rss_peak_kib: u64,
    /// The server's resident memory at the end, in KiB.
    pub rss_end_kib: u64,
    /// Whether the server was still running at the end.
    pub server_alive: bool,
    /// Panic lines in the server's log.
    pub panics: u64,
}

/// Latencies of the client's calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latencies {
    /// Calls answered.
    pub calls: u64,
    /// Median, in microseconds.
    pub p50_us: u64,
    /// 99th percentile, in microseconds.
    pub p99_us: u64,
}

impl Latencies {
    fn of(mut samples: Vec<Duration>) -> Latencies {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return 0;
            }
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((samples.len() - 1) as f64 * q).round() as usize;
            u64::try_from(samples[i].as_micros()).unwrap_or(u64::MAX)
        };
        Latencies {
            calls: samples.len() as u64,
            p50_us: at(0.50),
            p99_us: at(0.99),
        }
    }
}

impl ScenarioReport {
    /// Why the scenario failed, if it did (`bound_kib`: the RSS bound).
    pub fn verdict(&self, bound_kib: u64) -> Result<(), String> {
        let name = &self.name;
        if !self.server_alive {
            return Err(format!("{name}: the server died"));
        }
        if self.panics > 0 {
            return Err(format!("{name}: the server logged {} panics", self.panics));
        }
        if !self.client_failures.is_empty() {
            return Err(format!(
                "{name}: the well-behaved client met {:?}",
                self.client_failures
            ));
        }
        if self.loaded.calls == 0 {
            return Err(format!(
                "{name}: the well-behaved client was never served under attack"
            ));
        }
        if self.rss_peak_kib > bound_kib {
            return Err(format!(
                "{name}: the server's peak RSS, {} KiB, is over the bound, {bound_kib} KiB",
                self.rss_peak_kib
            ));
        }
        Ok(())
    }
}

impl Report {
    /// Why the soak failed, if it did: every failing scenario.
    pub fn verdict(&self) -> Result<(), String> {
        if self.scenarios.is_empty() {
            return Err("no scenario ran".into());
        }
        let failures: Vec<String> = self
            .scenarios
            .iter()
            .filter_map(|s| s.verdict(self.rss_bound_kib).err())
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }

    /// The report as Markdown.
    #[must_use]
    pub fn markdown(&self) -> String {
        let ratio = |a: u64, b: u64| {
            if b == 0 {
                "—".to_owned()
            } else {
                #[allow(clippy::cast_precision_loss)]
                let r = a as f64 / b as f64;
                format!("{r:.2}×")
            }
        };
        let mut out = String::new();
        out.push_str(
            "| scenario | ledger kinds | client calls alone / attacked | p99 alone | p99 attacked | ratio | client failures | server RSS start / peak / end | alive | panics |\n\
             |---|---|---:|---:|---:|---:|---|---:|---|---:|\n",
        );
        for s in &self.scenarios {
            let _ = writeln!(
                out,
                "| {} | {} | {} / {} | {} µs | {} µs | {} | {} | {} / {} / {} KiB | {} | {} |",
                s.name,
                s.kinds.join(", "),
                s.unloaded.calls,
                s.loaded.calls,
                s.unloaded.p99_us,
                s.loaded.p99_us,
                ratio(s.loaded.p99_us, s.unloaded.p99_us),
                if s.client_failures.is_empty() {
                    "none".to_owned()
                } else {
                    format!("{:?}", s.client_failures)
                },
                s.rss_start_kib,
                s.rss_peak_kib,
                s.rss_end_kib,
                if s.server_alive { "yes" } else { "**no**" },
                s.panics
            );
        }
        let _ = write!(
            out,
            "\nThe RSS bound: {} KiB (the body budget, 256 MiB, and a 128 MiB margin).\n\n\
             | scenario | attack | what the attackers met (outcome: count) |\n|---|---|---|\n",
            self.rss_bound_kib
        );
        for s in &self.scenarios {
            for (attack, counts) in &s.attacks {
                let counts: Vec<String> = counts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                let _ = writeln!(out, "| {} | {attack} | {} |", s.name, counts.join(", "));
            }
        }
        out
    }
}

/// Counts of outcomes, shared by an attack's workers.
#[derive(Debug, Default)]
struct Counts(std::sync::Mutex<BTreeMap<String, u64>>);

impl Counts {
    fn add(&self, outcome: impl Into<String>) {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry(outcome.into()).or_insert(0) += 1;
    }

    fn status(&self, status: u16) {
        if status == 0 {
            self.add("closed");
        } else {
            self.add(status.to_string());
        }
    }

    fn take(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A 2026 request's bytes; `extra` is more header lines, `capabilities`
/// the client's, `meta` more `_meta`.
fn request(
    id: u64,
    method: &str,
    mut params: serde_json::Value,
    extra: &str,
    capabilities: serde_json::Value,
) -> Vec<u8> {
    let meta = params
        .get_mut("_meta")
        .map_or_else(|| serde_json::json!({}), serde_json::Value::take);
    params["_meta"] = meta;
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = MODERN.into();
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    let name = params
        .get("name")
        .and_then(serde_json::Value::as_str)
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
         Mcp-Method: {method}\r\n{name}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A 2025 request's bytes (no `MCP-Protocol-Version` on `initialize`).
fn legacy_request(id: u64, method: &str, params: &serde_json::Value, extra: &str) -> Vec<u8> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string();
    let version = if method == "initialize" {
        String::new()
    } else {
        format!("MCP-Protocol-Version: {LEGACY}\r\n")
    };
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{version}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn bearer(token: Option<&str>) -> String {
    token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"))
}

async fn connect(server: SocketAddr, from: IpAddr) -> std::io::Result<TcpStream> {
    connect_with(server, from, None).await
}

/// A connection from `from`; with `window`, its receive buffer that small
/// (a reader that never reads then stops the server's writes at once,
/// rather than after the kernel's buffers, megabytes on loopback, fill).
async fn connect_with(
    server: SocketAddr,
    from: IpAddr,
    window: Option<u32>,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if let Some(window) = window {
        socket.set_recv_buffer_size(window)?;
    }
    socket.bind(SocketAddr::new(from, 0))?;
    let stream = socket.connect(server).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A response's head: its status and its header lines.
struct Head {
    status: u16,
    text: String,
}

impl Head {
    /// The value of header `name` (lowercase), as sent.
    fn header(&self, name: &str) -> Option<&str> {
        self.text.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.eq_ignore_ascii_case(name).then_some(value.trim())
        })
    }
}

/// Reads a response's head off `buf`/`stream` (the bytes after it stay in
/// `buf`); `None` when the connection ended first.
async fn head(stream: &mut (impl tokio::io::AsyncRead + Unpin), buf: &mut Vec<u8>) -> Option<Head> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let status = text
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            return Some(Head { status, text });
        }
        if read_more(stream, buf).await == 0 {
            return None;
        }
    }
}

/// Reads one response with a `Content-Length` body: its head and body
/// (`None` when the connection ended first).
async fn response(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> Option<(Head, Vec<u8>)> {
    let head = head(stream, buf).await?;
    let len: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < len {
        if read_more(stream, buf).await == 0 {
            return None;
        }
    }
    let body = buf.drain(..len).collect();
    Some((head, body))
}

/// A status and what a JSON-RPC error in `body` names (its code and
/// `data.limit`), as an outcome label.
fn outcome(head: &Head, body: &[u8]) -> String {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let error = &json["error"];
    if error.is_null() {
        if json["result"]["resultType"] == "task" {
            return format!("{} task", head.status);
        }
        return head.status.to_string();
    }
    let mut label = format!("{} {}", head.status, error["code"]);
    if let Some(limit) = error["data"]["limit"].as_str() {
        let _ = write!(label, " {limit}");
    }
    label
}

async fn read_more(stream: &mut (impl tokio::io::AsyncRead + Unpin), buf: &mut Vec<u8>) -> usize {
    let mut chunk = vec![0u8; 16 * 1024];
    match tokio::time::timeout(Duration::from_secs(30), stream.read(&mut chunk)).await {
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            n
        }
        _ => 0,
    }
}

/// The first status line's code of whatever comes back, or `0`.
async fn status_of(stream: &mut TcpStream) -> u16 {
    let mut buf = Vec::new();
    head(stream, &mut buf).await.map_or(0, |h| h.status)
}

/// The client: calls until `stop`, each call's latency kept; failures
/// counted.
async fn client(
    server: SocketAddr,
    auth: ClientAuth,
    stop: Arc<AtomicBool>,
    failures: Arc<Counts>,
    tls: Option<tokio_rustls::TlsConnector>,
) -> Vec<Duration> {
    let mut samples = Vec::new();
    let mut conn: Option<(ClientStream, Vec<u8>)> = None;
    while !stop.load(Ordering::Relaxed) {
        // A fresh proof each call under DPoP; the same bytes otherwise.
        let call = request(
            1,
            "tools/call",
            serde_json::json!({"name": "test_simple_text", "arguments": {}}),
            &auth.lines(),
            serde_json::json!({}),
        );
        if conn.is_none() {
            if let Ok(stream) = client_connect(server, tls.as_ref()).await {
                conn = Some((stream, Vec::new()));
            } else {
                failures.add("closed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        }
        let Some((stream, buf)) = conn.as_mut() else {
            continue;
        };
        let started = Instant::now();
        let answer = match stream.write_all(&call).await {
            Ok(()) => response(stream, buf).await,
            Err(_) => None,
        };
        match answer {
            Some((head, _)) if head.status == 200 => samples.push(started.elapsed()),
            Some((head, body)) => {
                failures.add(outcome(&head, &body));
                conn = None;
            }
            None => {
                failures.add("closed");
                conn = None;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    samples
}

/// The well-behaved client's address: `127.1.0.1`, outside the attackers'
/// /24.
const CLIENT_ADDR: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 1, 0, 1));

/// Runs the soak: every scenario of `options`, one after the other.
pub fn run(options: &Options) -> Result<Report, String> {
    let scenarios = options.scenarios()?;
    let (attack, unloaded) = options.times(scenarios.len());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut report = Report {
        rss_bound_kib: RSS_BOUND_KIB,
        scenarios: Vec::new(),
    };
    for scenario in scenarios {
        println!(
            "== {}: {unloaded:?} alone, {attack:?} under attack ({})",
            scenario.name,
            scenario
                .attacks
                .iter()
                .map(|a| a.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        report.scenarios.push(run_scenario(
            &runtime, options, &scenario, attack, unloaded,
        )?);
    }
    Ok(report)
}

fn run_scenario(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    scenario: &Scenario,
    attack: Duration,
    unloaded: Duration,
) -> Result<ScenarioReport, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut args: Vec<String> = vec![
        "--bind".into(),
        "127.0.0.1:0".into(),
        "--group-ipv4".into(),
        "24".into(),
    ];
    let mut authorization_server = None;
    let tls = scenario.tls().then(test_certs).transpose()?;
    if let Some(dir) = &tls {
        args.extend([
            "--tls-cert".into(),
            dir.join("server.pem").display().to_string(),
            "--tls-key".into(),
            dir.join("server.key").display().to_string(),
            "--tls-handshake-timeout-ms".into(),
            "2000".into(),
        ]);
    }
    match scenario.auth {
        Auth::None => {}
        Auth::Subjects => {
            args.extend(["--static-token".into(), CLIENT_TOKEN.into()]);
            for i in 0..ATTACKER_SUBJECTS {
                args.extend(["--static-token".into(), attacker_token(i)]);
            }
        }
        Auth::Introspection | Auth::Dpop => {
            let listener = runtime
                .block_on(TcpListener::bind("127.0.0.1:0"))
                .map_err(|e| e.to_string())?;
            let at = listener.local_addr().map_err(|e| e.to_string())?;
            authorization_server = Some(runtime.spawn(authorization(listener)));
            args.extend([
                "--introspection-url".into(),
                format!("http://{at}/introspect"),
                "--client-id".into(),
                "bench".into(),
                "--client-secret".into(),
                "bench".into(),
                "--audience".into(),
                AUDIENCE.into(),
            ]);
            if scenario.auth == Auth::Dpop {
                args.extend(["--dpop".into(), "required".into()]);
            }
        }
    }
    let log = std::env::temp_dir().join(format!(
        "wymcp-hostile-{}-{}.log",
        std::process::id(),
        scenario.name.replace(' ', "-")
    ));
    let mut child = Command::new(&options.server)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", options.server.display()))?;
    let addr = listening_addr(&mut child);
    let mut report = match addr {
        Ok(addr) => {
            let connector = match &tls {
                Some(dir) => Some(tls_connector(dir)?),
                None => None,
            };
            runtime.block_on(soak(
                addr,
                child.id(),
                scenario,
                attack,
                unloaded,
                stop,
                connector,
            ))
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    report.server_alive = matches!(child.try_wait(), Ok(None));
    let _ = child.kill();
    let _ = child.wait();
    if let Some(task) = authorization_server {
        task.abort();
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    report.panics = text.lines().filter(|l| l.contains("panicked")).count() as u64;
    if let Some(at) = text.find("panicked") {
        // The first panic, for whoever reads the failure (bounded).
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let excerpt: String = text[start..].chars().take(2_000).collect();
        eprintln!("== {}: the server's first panic:\n{excerpt}", scenario.name);
    }
    let _ = std::fs::remove_file(&log);
    Ok(report)
}

/// The `i`-th attacking principal's token.
fn attacker_token(i: usize) -> String {
    format!("wymcp-bench-hostile-attacker-{i}")
}

/// The soak's authorization server: answers an introspection of the
/// client's token at once (active, for [`AUDIENCE`]), and of a DPoP token
/// of [`DPOP_CLIENT`] or [`DPOP_ATTACKER`] (active, bound to its key by
/// `cnf.jkt`), any other after [`SLOW_ANSWER`] (inactive). Each
/// connection, one request.
async fn authorization(listener: TcpListener) {
    while let Ok((mut stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let Some(head) = head(&mut stream, &mut buf).await else {
                return;
            };
            let len: usize = head
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
                .min(64 * 1024);
            while buf.len() < len {
                if read_more(&mut stream, &mut buf).await == 0 {
                    return;
                }
            }
            let form = String::from_utf8_lossy(&buf[..len]).into_owned();
            let token = form
                .split('&')
                .find_map(|pair| pair.strip_prefix("token="))
                .unwrap_or_default();
            let exp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                + 3600;
            let bound = [&DPOP_CLIENT, &DPOP_ATTACKER]
                .into_iter()
                .find(|key| key.token == token);
            let answer = if token == CLIENT_TOKEN {
                serde_json::json!({"active": true, "sub": "client", "aud": AUDIENCE, "exp": exp})
            } else if let Some(key) = bound {
                serde_json::json!({"active": true, "sub": key.token, "aud": AUDIENCE, "exp": exp,
                    "token_type": "DPoP", "cnf": {"jkt": key.jkt()}})
            } else {
                tokio::time::sleep(SLOW_ANSWER).await;
                serde_json::json!({"active": false})
            }
            .to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        });
    }
}

/// The address the server's first line names; the rest of its stdout is
/// read (and dropped) on a thread of its own, so a later line (`auth: …`)
/// never meets a closed pipe.
fn listening_addr(child: &mut Child) -> Result<SocketAddr, String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout);
    let mut line = String::new();
    lines.read_line(&mut line).map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        let mut sink = String::new();
        while lines.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let line = line.trim();
    line.strip_prefix("listening on http://")
        .or_else(|| line.strip_prefix("listening on https://"))
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("the server said `{line}`"))
}

/// What an attack's workers share.
struct Target {
    server: SocketAddr,
    auth: Auth,
    stop: Arc<AtomicBool>,
    /// The next attacker address, token and request id.
    next: AtomicU64,
    /// Calls of the progress flood held, all workers together.
    floods: AtomicUsize,
    /// Calls answered `200`, the DPoP attack's workers together.
    accepted: AtomicU64,
    /// Whether a DPoP attacker was refused yet (its share met).
    refused: AtomicBool,
}

impl Target {
    fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// A new attacker address of `127.0.<group>.0/24`: `.2` to `.254`.
    fn from(&self, group: u8) -> IpAddr {
        let n = self.next() % 253;
        IpAddr::from([127, 0, group, u8::try_from(n + 2).unwrap_or(254)])
    }

    /// An attacker's `Authorization` header line, if the server
    /// authenticates: one of the attacking principals, or a token nobody
    /// issued, a new one each time.
    fn bearer(&self) -> String {
        match self.auth {
            Auth::None => String::new(),
            #[allow(clippy::cast_possible_truncation)]
            Auth::Subjects => bearer(Some(&attacker_token(
                (self.next() % ATTACKER_SUBJECTS as u64) as usize,
            ))),
            Auth::Introspection => bearer(Some(&format!("unknown-{}", self.next()))),
            Auth::Dpop => DPOP_ATTACKER.lines(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

async fn soak(
    addr: SocketAddr,
    pid: u32,
    scenario: &Scenario,
    attack: Duration,
    unloaded: Duration,
    stop: Arc<AtomicBool>,
    tls: Option<tokio_rustls::TlsConnector>,
) -> ScenarioReport {
    let mut report = ScenarioReport {
        name: scenario.name.to_owned(),
        kinds: scenario.kinds.iter().map(|&k| k.to_owned()).collect(),
        rss_start_kib: Memory::read(pid).map_or(0, |m| m.rss_kib),
        ..ScenarioReport::default()
    };
    let _ = Memory::reset_peak(pid);
    let token = ClientAuth::of(scenario.auth);
    let failures = Arc::new(Counts::default());
    // Alone.
    let alone_stop = Arc::new(AtomicBool::new(false));
    let alone = tokio::spawn(client(
        addr,
        token,
        alone_stop.clone(),
        failures.clone(),
        tls.clone(),
    ));
    tokio::time::sleep(unloaded).await;
    alone_stop.store(true, Ordering::Relaxed);
    report.unloaded = Latencies::of(alone.await.unwrap_or_default());
    // Beside the attackers.
    let target = Arc::new(Target {
        server: addr,
        auth: scenario.auth,
        stop: stop.clone(),
        next: AtomicU64::new(0),
        floods: AtomicUsize::new(0),
        accepted: AtomicU64::new(0),
        refused: AtomicBool::new(false),
    });
    let attacks: Vec<(Attack, Arc<Counts>)> = scenario
        .attacks
        .iter()
        .map(|&a| (a, Arc::new(Counts::default())))
        .collect();
    let mut tasks = Vec::new();
    for (attack, counts) in &attacks {
        for _ in 0..attack.workers() {
            tasks.push(tokio::spawn(run_attack(
                *attack,
                target.clone(),
                counts.clone(),
            )));
        }
    }
    let sampler_stop = stop.clone();
    let peak = Arc::new(AtomicU64::new(0));
    let sampler_peak = peak.clone();
    let sampler = tokio::spawn(async move {
        while !sampler_stop.load(Ordering::Relaxed) {
            if let Ok(m) = Memory::read(pid) {
                sampler_peak.fetch_max(m.peak_kib.max(m.rss_kib), Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    // Let the attacks take hold, then measure the client beside them.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client_stop = Arc::new(AtomicBool::new(false));
    let beside = tokio::spawn(client(
        addr,
        token,
        client_stop.clone(),
        failures.clone(),
        tls.clone(),
    ));
    tokio::time::sleep(attack).await;
    client_stop.store(true, Ordering::Relaxed);
    report.loaded = Latencies::of(beside.await.unwrap_or_default());
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.abort();
    }
    let _ = sampler.await;
    report.client_failures = failures.take();
    for (attack, counts) in &attacks {
        report
            .attacks
            .insert(attack.name().to_owned(), counts.take());
    }
    let end = Memory::read(pid).unwrap_or_default();
    report.rss_end_kib = end.rss_kib;
    report.rss_peak_kib = peak.load(Ordering::Relaxed).max(end.peak_kib);
    report
}

/// One worker of `attack`, until the target's stop.
#[allow(clippy::too_many_lines)] // one arm per attack
async fn run_attack(attack: Attack, target: Arc<Target>, counts: Arc<Counts>) {
    let mut held: Vec<TcpStream> = Vec::new();
    while !target.stopped() {
        let id = target.next();
        let window = matches!(attack, Attack::LaggingListeners | Attack::ProgressFlood)
            .then_some(NEVER_READ_WINDOW);
        let Ok(mut stream) = connect_with(target.server, target.from(attack.group()), window).await
        else {
            counts.add("closed");
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let auth = target.bearer();
        match attack {
            Attack::ListenFlood => {
                let listen = request(
                    id,
                    "subscriptions/listen",
                    serde_json::json!({"notifications": {"toolsListChanged": true}}),
                    &auth,
                    serde_json::json!({}),
                );
                let _ = stream.write_all(&listen).await;
                let mut buf = Vec::new();
                match head(&mut stream, &mut buf).await {
                    Some(h) if h.status == 200 => {
                        counts.add("200 held");
                        held.push(stream);
                    }
                    Some(h) => {
                        let body = response_body(&mut stream, &h, buf).await;
                        counts.add(outcome(&h, &body));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    None => counts.add("closed"),
                }
            }
            Attack::LaggingListeners => {
                let uris: Vec<String> = (0..256).map(|i| format!("test://lag/{i}")).collect();
                let listen = request(
                    id,
                    "subscriptions/listen",
                    serde_json::json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": uris}}),
                    &auth,
                    serde_json::json!({}),
                );
                let _ = stream.write_all(&listen).await;
                // Never read: the stream falls behind.
                counts.add("held");
                held.push(stream);
                if held.len() >= 8 {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            Attack::Publisher => {
                let mut buf = Vec::new();
                let change = request(
                    id,
                    "tools/call",
                    serde_json::json!({"name": "test_trigger_tool_change", "arguments": {}}),
                    &auth,
                    serde_json::json!({}),
                );
                for _ in 0..100 {
                    if target.stopped() || stream.write_all(&change).await.is_err() {
                        break;
                    }
                    let Some((h, body)) = response(&mut stream, &mut buf).await else {
                        counts.add("closed");
                        break;
                    };
                    counts.add(outcome(&h, &body));
                }
            }
            Attack::HeldBodies => {
                let opening = format!(
                    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{auth}Content-Length: 1000000\r\n\r\n["
                );
                let mut bytes = opening.into_bytes();
                bytes.extend(b" ".repeat(1_000_000 - 2));
                let written =
                    tokio::time::timeout(Duration::from_secs(2), stream.write_all(&bytes)).await;
                // A refusal comes back at once; a body being read does not.
                let mut buf = Vec::new();
                let answer =
                    tokio::time::timeout(Duration::from_millis(100), head(&mut stream, &mut buf))
                        .await;
                match (written, answer) {
                    (_, Ok(Some(h))) => {
                        let body = response_body(&mut stream, &h, buf).await;
                        counts.add(outcome(&h, &body));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    (Ok(Ok(())), Err(_)) => {
                        counts.add("held");
                        held.push(stream);
                    }
                    _ => counts.add("closed"),
                }
                if held.len() >= 64 {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            Attack::TrickledBodies => {
                let opening = format!(
                    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{auth}Content-Length: 100000\r\n\r\n{{"
                );
                let _ = stream.write_all(opening.as_bytes()).await;
                held.push(stream);
                counts.add("held");
                let mut alive = Vec::new();
                for mut conn in held.drain(..) {
                    if conn.write_all(b" ").await.is_ok() {
                        alive.push(conn);
                    } else {
                        counts.add("closed");
                    }
                }
                held = alive;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Attack::Http2Pingers => {
                let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
                hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
                let _ = stream.write_all(&hello).await;
                counts.add("held");
                held.push(stream);
                let ping = [0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
                let mut alive = Vec::new();
                for mut conn in held.drain(..) {
                    if conn.write_all(&ping).await.is_ok() {
                        alive.push(conn);
                    } else {
                        counts.add("closed");
                    }
                }
                held = alive;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Attack::OversizeBodies => {
                // A declared length over the ceiling, then a body of many
                // tiny values.
                let over = format!(
                    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{auth}Content-Length: 8000001\r\n\r\n"
                );
                let _ = stream.write_all(over.as_bytes()).await;
                counts.status(status_of(&mut stream).await);
                if let Ok(mut stream) = connect(target.server, target.from(attack.group())).await {
                    let mut body = b"[".to_vec();
                    body.extend(b"0,".repeat(3_950_000));
                    body.extend(b"0]");
                    let framing = format!(
                        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(framing.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    counts.status(status_of(&mut stream).await);
                }
            }
            Attack::GetFlood => {
                if let Some(stream) = get_stream(stream, id, &auth, &counts).await {
                    held.push(stream);
                } else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Attack::UnansweredElicitations => {
                if let Some(stream) = elicit(stream, id, &auth, &counts).await {
                    held.push(stream);
                } else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Attack::SlowTasks | Attack::QuickTasks => {
                let seconds = if attack == Attack::SlowTasks { 600 } else { 0 };
                let mut buf = Vec::new();
                for n in 0..100u64 {
                    let call = request(
                        id * 1000 + n,
                        "tools/call",
                        serde_json::json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": "hostile"}}),
                        &auth,
                        serde_json::json!({"extensions": {TASKS_EXTENSION: {}}}),
                    );
                    if target.stopped() || stream.write_all(&call).await.is_err() {
                        break;
                    }
                    let Some((h, body)) = response(&mut stream, &mut buf).await else {
                        counts.add("closed");
                        break;
                    };
                    counts.add(outcome(&h, &body));
                    if attack == Attack::SlowTasks {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            Attack::UnknownTokens => {
                let call = request(
                    id,
                    "tools/call",
                    serde_json::json!({"name": "test_simple_text", "arguments": {}}),
                    &auth,
                    serde_json::json!({}),
                );
                let mut buf = Vec::new();
                let answer = match stream.write_all(&call).await {
                    Ok(()) => response(&mut stream, &mut buf).await,
                    Err(_) => None,
                };
                match answer {
                    Some((h, body)) => counts.add(outcome(&h, &body)),
                    None => counts.add("closed"),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Attack::SilentConnections | Attack::HalfHellos => {
                if attack == Attack::HalfHellos {
                    // A handshake record announcing 512 bytes, 3 of them sent.
                    let _ = stream
                        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01])
                        .await;
                }
                counts.add("held");
                held.push(stream);
                // Bounded: the oldest let go (the server closed most anyway).
                if held.len() > MAX_HELD_HANDSHAKES {
                    held.remove(0);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Attack::DpopProofs => dpop_proofs(&mut stream, id, &target, &counts).await,
            Attack::ProgressFlood => {
                if target.floods.load(Ordering::Relaxed) >= MAX_FLOODS {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                let call = request(
                    id,
                    "tools/call",
                    serde_json::json!({"name": "test_progress_flood", "arguments": {"count": 50_000}, "_meta": {"progressToken": id}}),
                    &auth,
                    serde_json::json!({}),
                );
                let _ = stream.write_all(&call).await;
                let mut buf = Vec::new();
                match head(&mut stream, &mut buf).await {
                    Some(h) if h.status == 200 => {
                        // Never read again.
                        counts.add("200 held");
                        target.floods.fetch_add(1, Ordering::Relaxed);
                        held.push(stream);
                    }
                    Some(h) => {
                        let body = response_body(&mut stream, &h, buf).await;
                        counts.add(outcome(&h, &body));
                    }
                    None => counts.add("closed"),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The most connections one handshake worker holds open at once.
const MAX_HELD_HANDSHAKES: usize = 256;

/// A connection of the well-behaved client: TCP, or TLS over it.
enum ClientStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl tokio::io::AsyncRead for ClientStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            ClientStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for ClientStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            ClientStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            ClientStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            ClientStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The well-behaved client's connection, over TLS when `tls` is given.
async fn client_connect(
    server: SocketAddr,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> std::io::Result<ClientStream> {
    let stream = connect(server, CLIENT_ADDR).await?;
    let Some(tls) = tls else {
        return Ok(ClientStream::Plain(stream));
    };
    let name = rustls::pki_types::ServerName::IpAddress(server.ip().into());
    let stream = tokio::time::timeout(Duration::from_secs(10), tls.connect(name, stream))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    Ok(ClientStream::Tls(Box::new(stream)))
}

/// The test certificates of scripts/test-certs.sh, made in a directory of
/// this run's.
fn test_certs() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("wymcp-hostile-certs-{}", std::process::id()));
    if dir.join("server.pem").exists() {
        return Ok(dir);
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test-certs.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .status()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !status.success() {
        return Err("scripts/test-certs.sh failed (it needs openssl)".into());
    }
    Ok(dir)
}

/// A TLS client trusting the test CA of `dir`, HTTP/1.1 by ALPN.
fn tls_connector(dir: &std::path::Path) -> Result<tokio_rustls::TlsConnector, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(dir.join("ca.pem")).map_err(|e| e.to_string())? {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Up to 100 calls on `stream` with the attackers' DPoP token, each with
/// a fresh valid proof, each counted by status, code and what the
/// challenge or `data.limit` said; the first refusal after acceptances is
/// also counted as where the attackers met their share.
async fn dpop_proofs(stream: &mut TcpStream, id: u64, target: &Target, counts: &Counts) {
    let mut buf = Vec::new();
    for n in 0..100u64 {
        let call = request(
            id * 1000 + n,
            "tools/call",
            serde_json::json!({"name": "test_simple_text", "arguments": {}}),
            &target.bearer(),
            serde_json::json!({}),
        );
        if target.stopped() || stream.write_all(&call).await.is_err() {
            break;
        }
        let Some((h, body)) = response(stream, &mut buf).await else {
            counts.add("closed");
            break;
        };
        let mut label = outcome(&h, &body);
        if let Some(challenge) = h.header("www-authenticate") {
            let error = challenge
                .split("error=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("");
            let scheme = challenge.split(' ').next().unwrap_or("");
            let _ = write!(label, " {scheme} {error}");
        }
        if let Some(after) = h.header("retry-after") {
            let _ = write!(label, " Retry-After: {after}");
        }
        if h.status == 200 {
            target.accepted.fetch_add(1, Ordering::Relaxed);
        } else if !target.refused.swap(true, Ordering::Relaxed) {
            counts.add(format!(
                "first refusal after {} accepted: {label}",
                target.accepted.load(Ordering::Relaxed)
            ));
        }
        counts.add(label);
        if h.status != 200 {
            // Refused: let the window's places expire a little.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The receive buffer of a connection that never reads.
const NEVER_READ_WINDOW: u32 = 4096;

/// The most progress-flood calls held at once: enough to show an
/// unbounded notification queue (50,000 notifications each), few enough
/// not to take a loaded machine's memory.
const MAX_FLOODS: usize = 64;

/// The body after `head`, when it has a length (an SSE answer's first
/// bytes otherwise).
async fn response_body(stream: &mut TcpStream, head: &Head, mut buf: Vec<u8>) -> Vec<u8> {
    let Some(len) = head
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    else {
        return buf;
    };
    while buf.len() < len {
        if read_more(stream, &mut buf).await == 0 {
            break;
        }
    }
    buf.truncate(len);
    buf
}

/// A 2025 client that declared elicitation calls a tool that asks it one,
/// on `stream`: returns the stream when the question came (never answered:
/// its place waits), else counts what came instead.
/// A 2025 client's `initialize` on `stream` declaring `capabilities`: the
/// session token it was given, or `None` (counted) when none was.
async fn initialized(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    id: u64,
    auth: &str,
    capabilities: serde_json::Value,
    counts: &Counts,
) -> Option<String> {
    let initialize = legacy_request(
        id,
        "initialize",
        &serde_json::json!({"protocolVersion": LEGACY, "capabilities": capabilities,
            "clientInfo": {"name": "hostile", "version": "1"}}),
        auth,
    );
    if stream.write_all(&initialize).await.is_err() {
        counts.add("closed");
        return None;
    }
    let Some((h, body)) = response(stream, buf).await else {
        counts.add("closed");
        return None;
    };
    let session = h.header("mcp-session-id").map(str::to_owned);
    if session.is_none() {
        counts.add(format!("initialize {}", outcome(&h, &body)));
    }
    session
}

/// A 2025 client's `initialize` on `stream`, then a GET with its token
/// on the same connection: the connection, if the GET stream opened.
async fn get_stream(
    mut stream: TcpStream,
    id: u64,
    auth: &str,
    counts: &Counts,
) -> Option<TcpStream> {
    let mut buf = Vec::new();
    let session = initialized(
        &mut stream,
        &mut buf,
        id,
        auth,
        serde_json::json!({}),
        counts,
    )
    .await?;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\
         MCP-Protocol-Version: {LEGACY}\r\n{auth}Mcp-Session-Id: {session}\r\n\r\n"
    );
    if stream.write_all(get.as_bytes()).await.is_err() {
        counts.add("closed");
        return None;
    }
    match head(&mut stream, &mut buf).await {
        Some(h) if h.status == 200 => {
            counts.add("200 held");
            Some(stream)
        }
        Some(h) => {
            let body = response_body(&mut stream, &h, buf).await;
            counts.add(outcome(&h, &body));
            None
        }
        None => {
            counts.add("closed");
            None
        }
    }
}

async fn elicit(mut stream: TcpStream, id: u64, auth: &str, counts: &Counts) -> Option<TcpStream> {
    let mut buf = Vec::new();
    let capabilities = serde_json::json!({"elicitation": {}});
    let session = initialized(&mut stream, &mut buf, id, auth, capabilities, counts).await?;
    let call = legacy_request(
        id + 1,
        "tools/call",
        &serde_json::json!({"name": "test_streaming_elicitation", "arguments": {}}),
        &format!("{auth}Mcp-Session-Id: {session}\r\n"),
    );
    if stream.write_all(&call).await.is_err() {
        counts.add("closed");
        return None;
    }
    let Some(h) = head(&mut stream, &mut buf).await else {
        counts.add("closed");
        return None;
    };
    if h.status != 200 || h.header("content-type") != Some("text/event-stream") {
        let body = response_body(&mut stream, &h, buf).await;
        counts.add(outcome(&h, &body));
        return None;
    }
    // The stream's first event: the question, or the call's refusal.
    while !buf.windows(2).any(|w| w == b"\n\n") {
        if read_more(&mut stream, &mut buf).await == 0 {
            counts.add("200 closed");
            return None;
        }
    }
    let text = String::from_utf8_lossy(&buf);
    if text.contains("elicitation/create") {
        counts.add("200 asked (waiting)");
        return Some(stream);
    }
    let limit = text
        .split("\"limit\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("?");
    counts.add(format!("200 stream error {limit}"));
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn clean(name: &str) -> ScenarioReport {
        ScenarioReport {
            name: name.into(),
            loaded: Latencies {
                calls: 10,
                p50_us: 1,
                p99_us: 2,
            },
            server_alive: true,
            rss_peak_kib: 100_000,
            ..ScenarioReport::default()
        }
    }

    /// Every ledger kind the brief names has a scenario taking its places.
    #[test]
    fn every_ledger_kind_has_a_scenario() {
        for kind in wymcp::ledger::Kind::ALL {
            assert!(
                SCENARIOS.iter().any(|s| s.kinds.contains(&kind.name())),
                "no hostile scenario for {}",
                kind.name()
            );
        }
    }

    #[test]
    fn a_5xx_a_lost_connection_a_panic_or_rss_over_the_bound_fails_but_latency_never_does() {
        let report = |s: ScenarioReport| Report {
            rss_bound_kib: RSS_BOUND_KIB,
            scenarios: vec![clean("a"), s],
        };
        let mut slow = clean("slow");
        slow.loaded.p99_us = 10_000_000;
        slow.unloaded.p99_us = 1;
        assert_eq!(report(slow).verdict(), Ok(()));
        let mut failed = clean("5xx");
        failed.client_failures.insert("503 -32603".into(), 1);
        assert!(
            report(failed)
                .verdict()
                .unwrap_err()
                .contains("5xx: the well-behaved client met")
        );
        let mut lost = clean("lost");
        lost.client_failures.insert("closed".into(), 1);
        assert!(report(lost).verdict().is_err());
        let mut panicked = clean("panic");
        panicked.panics = 1;
        assert!(report(panicked).verdict().is_err());
        let mut fat = clean("fat");
        fat.rss_peak_kib = RSS_BOUND_KIB + 1;
        assert!(
            report(fat)
                .verdict()
                .unwrap_err()
                .contains("over the bound")
        );
        let mut starved = clean("starved");
        starved.loaded.calls = 0;
        assert!(report(starved).verdict().is_err());
    }

    #[test]
    fn the_attack_time_is_shared_among_the_scenarios() {
        let options = Options {
            server: PathBuf::new(),
            duration: Duration::from_secs(15),
            unloaded: None,
            only: None,
        };
        let (attack, unloaded) = options.times(SCENARIOS.len());
        assert_eq!(attack, MIN_ATTACK);
        assert_eq!(unloaded, Duration::from_secs(1));
        let long = Options {
            duration: Duration::from_secs(700),
            ..options.clone()
        };
        assert_eq!(
            long.times(7),
            (Duration::from_secs(100), Duration::from_secs(5))
        );
        let one = Options {
            only: Some(vec!["waits".into()]),
            ..options
        };
        assert_eq!(one.scenarios().unwrap()[0].name, "waits");
    }

    #[test]
    fn attackers_share_a_slash_24_the_client_is_outside_it() {
        let target = Target {
            server: SocketAddr::from(([127, 0, 0, 1], 1)),
            auth: Auth::None,
            stop: Arc::new(AtomicBool::new(false)),
            next: AtomicU64::new(0),
            floods: AtomicUsize::new(0),
            accepted: AtomicU64::new(0),
            refused: AtomicBool::new(false),
        };
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..600 {
            let IpAddr::V4(a) = target.from(0) else {
                panic!("IPv4")
            };
            assert_eq!(a.octets()[..3], [127, 0, 0]);
            assert!(a.octets()[3] >= 2);
            seen.insert(a);
        }
        assert!(seen.len() > 200);
        let IpAddr::V4(client) = CLIENT_ADDR else {
            panic!("IPv4")
        };
        assert_ne!(client.octets()[..3], [127, 0, 0]);
    }
}
