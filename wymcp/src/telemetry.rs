//! Logging in one call (`telemetry` feature): a `tracing-subscriber` with
//! an env filter (`RUST_LOG`, `info` when unset or unreadable) writing
//! compact text or JSON lines.
//!
//! ```no_run
//! // Text, or JSON when WYMCP_LOG_FORMAT=json; to stderr.
//! wymcp::telemetry::init(wymcp::telemetry::Format::from_env())?;
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! ## The request line
//!
//! Each request through the router is logged once, when its response is
//! made, at `info` under the target `wymcp::request`: who called (the
//! principal's subject, else the client's address), the method, what it
//! named (the tool or prompt, or the resource URI read), the HTTP status
//! and the milliseconds taken. Every client string on it is cut at 200
//! characters and escaped, so a 100 kB tool name makes a line of a few
//! hundred bytes:
//!
//! ```text
//! 2026-12-04T19:50:01.123456Z  INFO wymcp::request: request answered caller=alice method=tools/call target=add_note status=200 duration_ms=0.84
//! ```
//!
//! or, as JSON:
//!
//! ```text
//! {"timestamp":"2026-12-04T19:50:01.123456Z","level":"INFO","fields":{"message":"request answered","caller":"alice","method":"tools/call","target":"add_note","status":200,"duration_ms":0.84},"target":"wymcp::request"}
//! ```
//!
//! The event sits in the request span (`mcp.request`, with the OpenTelemetry
//! semantic conventions' fields, for an exporter such as
//! `tracing-opentelemetry`); this formatter leaves that span's field list
//! out of the request line, and prints the spans of every other event as
//! the compact (or JSON) format does.
//!
//! ## Targets
//!
//! | target | what | levels (an example) |
//! |---|---|---|
//! | `wymcp::request` | the request line | `info` (`request answered`) |
//! | `wymcp::rejection` | each rejection: stage, status, JSON-RPC code, bounded message | `info` (`request rejected`) |
//! | `wymcp::auth` | the authorization server's outages (JWKS, metadata, introspection): one line when it begins, one when it ends | `warn` (`… unreachable: tokens that need it are refused (401) until it answers`), `info` (`… reachable again`), `debug` |
//! | `wymcp::redis` | the Redis backends: outages, messages dropped, misuse | `error` (`RedisBus started outside a Tokio runtime: it relays nothing`), `warn` (`Redis is unavailable; …`), `info` (`Redis is reachable again`), `debug` |
//! | `wymcp::tasks` | the task store's outages, a record that does not parse, a lease lost | `error`, `warn` (`the task store is unavailable; …`), `info`, `debug` |
//! | `wymcp::handler` | a handler that panicked; a URI a template's type refused | `error` (`a handler panicked; answered -32603`), `debug` |
//! | `wymcp::serve` | the accept loop and connections: shutdown, drain, accept errors, timeouts | `warn` (`drain timeout: dropping the connections left`), `info` (`draining`), `debug` (`idle timeout`) |
//! | `wymcp::stdio` | the stdio transport | `error`, `warn`, `debug` |
//! | `wymcp::listen`, `wymcp::legacy`, `wymcp::stream` | listen and 2025 GET streams the server ended (evicted, behind, expired), relayed answers lost, a client gone | `warn` (`an answer could not be relayed`), `debug` (`a listen stream fell behind`) |
//! | `wymcp::ledger`, `wymcp::notify`, `wymcp::mrtr`, `wymcp::parse_body` | what the server shed: places given way, notifications dropped, `requestState` refused, bodies stalled | `debug` |
//! | `wymcp::memory` | memory released to the kernel | `debug` |
//! | `wymcp::metrics` | a metrics collection that failed | `warn` |
//!
//! `RUST_LOG=info` shows the request lines, the rejections and every
//! outage; `RUST_LOG=info,wymcp::request=warn` keeps the outages and drops
//! the per-request lines; `RUST_LOG=wymcp=debug` adds what the server shed.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, MakeWriter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::{SubscriberInitExt as _, TryInitError};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Format {
    /// One line of text per event (`tracing-subscriber`'s compact format).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl Format {
    /// `Json` when `WYMCP_LOG_FORMAT` is `json`, else `Text`.
    #[must_use]
    pub fn from_env() -> Self {
        match std::env::var("WYMCP_LOG_FORMAT") {
            Ok(value) if value.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Text,
        }
    }
}

/// The filter [`init`] uses: `RUST_LOG`, else `info`.
#[must_use]
pub fn env_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Installs the global subscriber: [`env_filter`], `format`, to stderr
/// (stdout stays free for a stdio transport's protocol). Fails if a global
/// subscriber is set already.
pub fn init(format: Format) -> Result<(), TryInitError> {
    init_with(format, env_filter())
}

/// [`init`] with a filter of the caller's (for example a default other
/// than `info` when `RUST_LOG` is unset).
pub fn init_with(format: Format, filter: EnvFilter) -> Result<(), TryInitError> {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    build(format, filter, std::io::stderr, ansi).try_init()
}

/// The subscriber [`init`] installs, with any filter and writer (and no
/// ANSI colours): to install it another way, or to capture its lines in a
/// test.
pub fn subscriber<W>(
    format: Format,
    filter: EnvFilter,
    writer: W,
) -> impl Subscriber + for<'a> LookupSpan<'a> + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    build(format, filter, writer, false)
}

fn build<W>(
    format: Format,
    filter: EnvFilter,
    writer: W,
    ansi: bool,
) -> impl Subscriber + for<'a> LookupSpan<'a> + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let registry = tracing_subscriber::registry().with(filter);
    let (text, json) = match format {
        Format::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(ansi)
                    .event_format(Lines::text()),
            ),
            None,
        ),
        Format::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(false)
                    .fmt_fields(JsonFields::new())
                    .event_format(Lines::json()),
            ),
        ),
    };
    registry.with(text).with(json)
}

/// The event format: the request line without its span's fields, every
/// other event as `tracing-subscriber` formats it.
#[derive(Debug)]
struct Lines {
    json: bool,
    text: format::Format<format::Compact>,
    all_json: format::Format<format::Json>,
    request_json: format::Format<format::Json>,
}

impl Lines {
    fn text() -> Self {
        Lines {
            json: false,
            ..Lines::json()
        }
    }

    fn json() -> Self {
        Lines {
            json: true,
            text: format::format().compact(),
            all_json: format::format().json(),
            request_json: format::format()
                .json()
                .with_current_span(false)
                .with_span_list(false),
        }
    }
}

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let request = event.metadata().target() == "wymcp::request";
        match (self.json, request) {
            (true, true) => self.request_json.format_event(ctx, writer, event),
            (true, false) => self.all_json.format_event(ctx, writer, event),
            (false, false) => self.text.format_event(ctx, writer, event),
            (false, true) => {
                SystemTime.format_time(&mut writer)?;
                write!(
                    writer,
                    " {:>5} {}: ",
                    event.metadata().level(),
                    event.metadata().target()
                )?;
                ctx.format_fields(writer.by_ref(), event)?;
                writeln!(writer)
            }
        }
    }
}
