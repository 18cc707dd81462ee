//! The instruments a server records through (`metrics` feature), built
//! once when the server is built, from the global meter provider's `wymcp`
//! meter: install the provider (for example
//! [`Prometheus::install`](super::Prometheus::install)) before building the
//! server, or its instruments are the no-op API's.
//!
//! What each request costs once its response is made: a few relaxed reads
//! of its [`Slot`](crate::trace::Slot), one histogram record with four
//! attributes (static strings, and the registered tool's name shared, not
//! copied; an error code is formatted only for an error), and one counter
//! add for a rejection. With no provider installed, each record is a call
//! of the no-op instrument. The gauges read the ledger only when a reader
//! collects.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableGauge};
use opentelemetry::{InstrumentationScope, KeyValue, Value};

use crate::ledger::{Kind, Ledger};
use crate::trace::{ErrorType, OTHER, Slot};

/// The MCP semantic conventions' recommended bucket boundaries for
/// `mcp.server.operation.duration`, in seconds.
pub const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// A server's instruments.
pub(crate) struct Instruments {
    duration: Histogram<f64>,
    rejections: Counter<u64>,
    /// Kept so their callbacks stay registered as long as the server.
    _gauges: [ObservableGauge<u64>; 4],
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instruments").finish_non_exhaustive()
    }
}

impl Instruments {
    /// The instruments of a server whose ledger is `ledger`, from the
    /// global meter provider.
    pub(crate) fn new(ledger: &Ledger) -> Self {
        let scope = InstrumentationScope::builder("wymcp")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Self::with_meter(&opentelemetry::global::meter_with_scope(scope), ledger)
    }

    fn with_meter(meter: &Meter, ledger: &Ledger) -> Self {
        let duration = meter
            .f64_histogram("mcp.server.operation.duration")
            .with_unit("s")
            .with_description(
                "MCP request or notification duration as observed on the receiver \
                 from the time it was received until the result or ack is sent",
            )
            .with_boundaries(DURATION_BOUNDARIES.to_vec())
            .build();
        let rejections = meter
            .u64_counter("wymcp.rejections")
            .with_unit("{rejection}")
            .with_description("Requests answered by the one rejection sender, by stage")
            .build();
        let held = {
            let ledger = ledger.clone();
            meter
                .u64_observable_gauge("wymcp.ledger.held")
                .with_description("What all callers hold of each ledger kind now")
                .with_callback(move |observer| {
                    for kind in Kind::ALL {
                        observer.observe(
                            as_u64(ledger.held(kind)),
                            &[KeyValue::new("wymcp.ledger.kind", kind.name())],
                        );
                    }
                })
                .build()
        };
        let cap = {
            let ledger = ledger.clone();
            meter
                .u64_observable_gauge("wymcp.ledger.cap")
                .with_description("Each ledger kind's global cap")
                .with_callback(move |observer| {
                    for kind in Kind::ALL {
                        observer.observe(
                            as_u64(ledger.share(kind).global),
                            &[KeyValue::new("wymcp.ledger.kind", kind.name())],
                        );
                    }
                })
                .build()
        };
        let streams = {
            let ledger = ledger.clone();
            meter
                .u64_observable_gauge("wymcp.listen.streams")
                .with_unit("{stream}")
                .with_description(
                    "Open listen streams: 2026 subscriptions/listen and 2025 GET streams",
                )
                .with_callback(move |observer| {
                    for (kind, era) in
                        [(Kind::ListenStreams, "2026"), (Kind::LegacyStreams, "2025")]
                    {
                        observer.observe(
                            as_u64(ledger.held(kind)),
                            &[KeyValue::new("wymcp.era", era)],
                        );
                    }
                })
                .build()
        };
        let tasks = {
            let ledger = ledger.clone();
            meter
                .u64_observable_gauge("wymcp.tasks")
                .with_unit("{task}")
                .with_description("Tasks of this replica: running handlers, and records stored")
                .with_callback(move |observer| {
                    for (kind, state) in [
                        (Kind::RunningTasks, "running"),
                        (Kind::StoredTasks, "stored"),
                    ] {
                        observer.observe(
                            as_u64(ledger.held(kind)),
                            &[KeyValue::new("wymcp.task.state", state)],
                        );
                    }
                })
                .build()
        };
        Instruments {
            duration,
            rejections,
            _gauges: [held, cap, streams, tasks],
        }
    }

    /// Records a request once its response is made: its duration (for a
    /// classified message) and its rejection (if one answered it).
    pub(crate) fn finished(&self, slot: &Slot, status: StatusCode, elapsed: Duration) {
        if let Some(stage) = slot.rejected() {
            self.rejections.add(
                1,
                &[
                    KeyValue::new("wymcp.stage", stage),
                    KeyValue::new("http.response.status_code", i64::from(status.as_u16())),
                ],
            );
        }
        let Some(method) = slot.method() else {
            return;
        };
        let error = match slot.error() {
            Some(ErrorType::Code(code)) => Some(Value::from(code.to_string())),
            Some(ErrorType::Tool) => Some(Value::from("tool_error")),
            None => None,
        };
        let tool = (method == "tools/call").then(|| match slot.tool() {
            Some(tool) => Value::from(Arc::clone(tool)),
            None => Value::from(OTHER),
        });
        let method = KeyValue::new("mcp.method.name", method);
        let tool = tool.map(|tool| KeyValue::new("gen_ai.tool.name", tool));
        let error = error.map(|error| KeyValue::new("error.type", error));
        let seconds = elapsed.as_secs_f64();
        // On the stack: no Vec on the path every request takes.
        match (tool, error) {
            (None, None) => self.duration.record(seconds, &[method]),
            (Some(tool), None) => self.duration.record(seconds, &[method, tool]),
            (None, Some(error)) => self.duration.record(seconds, &[method, error]),
            (Some(tool), Some(error)) => {
                self.duration.record(seconds, &[method, tool, error]);
            }
        }
    }
}

fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
