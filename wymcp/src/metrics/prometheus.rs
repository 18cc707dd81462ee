//! The Prometheus text exposition format (version 0.0.4) of what the
//! OpenTelemetry metrics SDK collects, and [`Prometheus`], a meter
//! provider whose collection a `/metrics` handler renders.
//!
//! `opentelemetry-prometheus` has no release for opentelemetry 0.33, so
//! wymcp writes the format itself, by its rules: names sanitised (every
//! character outside `[a-zA-Z0-9_:]` becomes `_`, so
//! `mcp.server.operation.duration` is `mcp_server_operation_duration`),
//! the unit suffixed (`s` → `_seconds`, `By` → `_bytes`, `ms` →
//! `_milliseconds`, `1` → `_ratio`; annotations such as `{request}` add
//! nothing), a monotonic sum suffixed `_total` and typed `counter`, any
//! other sum or gauge typed `gauge`, a histogram as cumulative `_bucket`
//! series with an `le` label (`+Inf` last), `_sum` and `_count`; label
//! names sanitised as metric names are, label values escaped (`\`, `"`
//! and the line feed), `# HELP` text escaped (`\` and the line feed).
//! Exponential histograms are left out.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{
    AggregatedMetrics, Histogram, Metric, MetricData, ResourceMetrics,
};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

/// A meter provider whose metrics render as Prometheus text, for a
/// `/metrics` endpoint: [`render`](Self::render) collects and encodes.
///
/// ```no_run
/// let prometheus = wymcp::metrics::Prometheus::install();
/// // … build the server (its instruments come from the global provider) …
/// let text: String = prometheus.render(); // blocking: call it off the runtime
/// ```
#[derive(Debug, Clone)]
pub struct Prometheus {
    provider: SdkMeterProvider,
    text: Arc<Mutex<String>>,
}

impl Prometheus {
    /// A provider that keeps its collections as Prometheus text. It also
    /// collects on its own once an hour (the SDK's reader is periodic);
    /// [`render`](Self::render) collects on demand.
    #[must_use]
    pub fn new() -> Self {
        let text = Arc::new(Mutex::new(String::new()));
        let exporter = TextExporter {
            text: Arc::clone(&text),
        };
        let reader = PeriodicReader::builder(exporter)
            .with_interval(Duration::from_secs(3600))
            .build();
        let provider = SdkMeterProvider::builder().with_reader(reader).build();
        Prometheus { provider, text }
    }

    /// [`new`](Self::new), installed as the global meter provider, which a
    /// server built afterwards records through.
    #[must_use]
    pub fn install() -> Self {
        let prometheus = Self::new();
        opentelemetry::global::set_meter_provider(prometheus.provider.clone());
        prometheus
    }

    /// The meter provider, to install another way or to shut down.
    #[must_use]
    pub fn provider(&self) -> &SdkMeterProvider {
        &self.provider
    }

    /// Collects now and answers the Prometheus text of the collection.
    /// Blocks until the SDK's reader has collected: in an async handler,
    /// call it in `spawn_blocking`.
    #[must_use]
    pub fn render(&self) -> String {
        if let Err(error) = self.provider.force_flush() {
            tracing::warn!(target: "wymcp::metrics", %error, "metrics collection failed");
        }
        self.text
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Default for Prometheus {
    fn default() -> Self {
        Self::new()
    }
}

/// The exporter the periodic reader hands each collection to: encodes it
/// and keeps the text.
#[derive(Debug)]
struct TextExporter {
    text: Arc<Mutex<String>>,
}

impl PushMetricExporter for TextExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let text = encode(metrics);
        *self.text.lock().unwrap_or_else(PoisonError::into_inner) = text;
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        // Prometheus counters and histograms are cumulative.
        Temporality::Cumulative
    }
}

/// The Prometheus text of a collection.
#[must_use]
pub fn encode(metrics: &ResourceMetrics) -> String {
    let mut out = String::new();
    for scope in metrics.scope_metrics() {
        for metric in scope.metrics() {
            encode_metric(&mut out, metric);
        }
    }
    out
}

fn encode_metric(out: &mut String, metric: &Metric) {
    match metric.data() {
        AggregatedMetrics::F64(data) => encode_data(out, metric, data),
        AggregatedMetrics::U64(data) => encode_data(out, metric, data),
        AggregatedMetrics::I64(data) => encode_data(out, metric, data),
    }
}

/// A value as the format spells it.
trait Number: Copy {
    fn write(self, out: &mut String);
}

impl Number for f64 {
    fn write(self, out: &mut String) {
        if self.is_nan() {
            out.push_str("NaN");
        } else if self.is_infinite() {
            out.push_str(if self > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            let _ = write!(out, "{self}");
        }
    }
}

impl Number for u64 {
    fn write(self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Number for i64 {
    fn write(self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

fn encode_data<T: Number>(out: &mut String, metric: &Metric, data: &MetricData<T>) {
    let base = metric_name(metric.name(), metric.unit());
    match data {
        MetricData::Gauge(gauge) => {
            header(out, &base, metric.description(), "gauge");
            for point in gauge.data_points() {
                sample(out, &base, point.attributes(), None, point.value());
            }
        }
        MetricData::Sum(sum) => {
            let (name, kind) = if sum.is_monotonic() {
                (format!("{base}_total"), "counter")
            } else {
                (base, "gauge")
            };
            header(out, &name, metric.description(), kind);
            for point in sum.data_points() {
                sample(out, &name, point.attributes(), None, point.value());
            }
        }
        MetricData::Histogram(histogram) => encode_histogram(out, &base, metric, histogram),
        MetricData::ExponentialHistogram(_) => {}
    }
}

fn encode_histogram<T: Number>(
    out: &mut String,
    base: &str,
    metric: &Metric,
    histogram: &Histogram<T>,
) {
    header(out, base, metric.description(), "histogram");
    let bucket = format!("{base}_bucket");
    for point in histogram.data_points() {
        let mut cumulative = 0u64;
        let mut counts = point.bucket_counts();
        for bound in point.bounds() {
            cumulative += counts.next().unwrap_or(0);
            let mut le = String::new();
            bound.write(&mut le);
            sample(out, &bucket, point.attributes(), Some(&le), cumulative);
        }
        sample(
            out,
            &bucket,
            point.attributes(),
            Some("+Inf"),
            point.count(),
        );
        sample(
            out,
            &format!("{base}_sum"),
            point.attributes(),
            None,
            point.sum(),
        );
        sample(
            out,
            &format!("{base}_count"),
            point.attributes(),
            None,
            point.count(),
        );
    }
}

fn header(out: &mut String, name: &str, description: &str, kind: &str) {
    if !description.is_empty() {
        let _ = write!(out, "# HELP {name} ");
        for c in description.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample<'a, T: Number>(
    out: &mut String,
    name: &str,
    attributes: impl Iterator<Item = &'a KeyValue>,
    le: Option<&str>,
    value: T,
) {
    out.push_str(name);
    let mut first = true;
    let mut label = |out: &mut String, key: &str, value: &str| {
        out.push(if first { '{' } else { ',' });
        first = false;
        out.push_str(&sanitize(key));
        out.push_str("=\"");
        escape_label(out, value);
        out.push('"');
    };
    for attribute in attributes {
        label(out, attribute.key.as_str(), &attribute.value.as_str());
    }
    if let Some(le) = le {
        label(out, "le", le);
    }
    if !first {
        out.push('}');
    }
    out.push(' ');
    value.write(out);
    out.push('\n');
}

fn escape_label(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A name with every character outside `[a-zA-Z0-9_:]` made `_`, and a
/// leading digit prefixed with `_`.
fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            c
        } else {
            '_'
        }
    }));
    out
}

/// A metric's Prometheus name: sanitised, with its unit's suffix.
fn metric_name(name: &str, unit: &str) -> String {
    let mut out = sanitize(name);
    let suffix = match unit {
        "s" => "seconds",
        "ms" => "milliseconds",
        "By" => "bytes",
        "1" => "ratio",
        _ => "",
    };
    if !suffix.is_empty() && !out.ends_with(suffix) {
        out.push('_');
        out.push_str(suffix);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::metrics::MeterProvider as _;

    /// A provider, its meter, and the text of one collection after `record`.
    fn collected(record: impl FnOnce(&opentelemetry::metrics::Meter)) -> String {
        let prometheus = Prometheus::new();
        let meter = prometheus.provider().meter("test");
        record(&meter);
        let text = prometheus.render();
        let _ = prometheus.provider().shutdown();
        text
    }

    #[test]
    fn a_histogram_is_cumulative_buckets_a_sum_and_a_count() {
        let text = collected(|meter| {
            let histogram = meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("How long")
                .with_boundaries(vec![0.1, 1.0])
                .build();
            let attributes = [KeyValue::new("mcp.method.name", "tools/call")];
            histogram.record(0.05, &attributes);
            histogram.record(0.5, &attributes);
            histogram.record(5.0, &attributes);
        });
        let expected = "\
# HELP mcp_server_operation_duration_seconds How long
# TYPE mcp_server_operation_duration_seconds histogram
mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",le=\"0.1\"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",le=\"1\"} 2
mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",le=\"+Inf\"} 3
mcp_server_operation_duration_seconds_sum{mcp_method_name=\"tools/call\"} 5.55
mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"} 3
";
        assert_eq!(text, expected, "{text}");
    }

    #[test]
    fn a_counter_is_total_and_label_values_are_escaped() {
        let text = collected(|meter| {
            let counter = meter
                .u64_counter("wymcp.rejections")
                .with_unit("{rejection}")
                .build();
            counter.add(2, &[KeyValue::new("wymcp.stage", "a\"b\\c\nd")]);
        });
        assert_eq!(
            text,
            "# TYPE wymcp_rejections_total counter\n\
             wymcp_rejections_total{wymcp_stage=\"a\\\"b\\\\c\\nd\"} 2\n",
            "{text}"
        );
    }

    #[test]
    fn a_gauge_and_an_up_down_counter_are_gauges() {
        let text = collected(|meter| {
            let _gauge = meter
                .u64_observable_gauge("wymcp.ledger.held")
                .with_description("Held\nnow \\ here")
                .with_callback(|observer| {
                    observer.observe(3, &[KeyValue::new("wymcp.ledger.kind", "bodies")]);
                })
                .build();
            let updown = meter
                .i64_up_down_counter("queue.size")
                .with_unit("By")
                .build();
            updown.add(-4, &[]);
        });
        assert!(
            text.contains(
                "# HELP wymcp_ledger_held Held\\nnow \\\\ here\n\
                 # TYPE wymcp_ledger_held gauge\n\
                 wymcp_ledger_held{wymcp_ledger_kind=\"bodies\"} 3\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE queue_size_bytes gauge\nqueue_size_bytes -4\n"),
            "{text}"
        );
    }

    #[test]
    fn names_are_sanitised_and_suffixed_once() {
        assert_eq!(sanitize("9a.b-c:d_e"), "_9a_b_c:d_e");
        assert_eq!(metric_name("x.duration", "s"), "x_duration_seconds");
        assert_eq!(metric_name("x.duration.seconds", "s"), "x_duration_seconds");
        assert_eq!(metric_name("x.size", "By"), "x_size_bytes");
        assert_eq!(metric_name("x.count", "{call}"), "x_count");
    }
}
