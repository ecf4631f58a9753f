//! Self-monitoring: Prometheus metrics served at `/metrics`, also rendered
//! as OpenTSDB-style `/api/stats` and telnet `stats` lines.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    pub points_written: IntCounter,
    /// Points accepted, by the protocol that brought them.
    pub points_received: IntCounterVec,
    pub points_rejected: IntCounterVec,
    /// Requests and connections refused by access control, by reason
    /// (`none`: no token, `invalid`, `scope`).
    pub auth_refused: IntCounterVec,
    pub telnet_lines: IntCounter,
    pub telnet_errors_dropped: IntCounter,
    /// InfluxDB string fields skipped (not numbers).
    pub influx_string_fields: IntCounter,
    /// Prometheus remote-write samples and entries not stored, by reason.
    pub prom_skipped: IntCounterVec,
    pub connections: IntCounterVec,
    pub connections_open: IntGauge,
    pub http_requests: IntCounterVec,
    pub head_points: IntGauge,
    pub head_series: IntGauge,
    pub head_bytes: IntGauge,
    pub wal_bytes: IntGauge,
    pub checkpoints: IntCounter,
    pub compactions: IntCounter,
    pub deletes: IntCounter,
    pub series_stopped: IntCounter,
    pub series_evicted: IntCounter,
    pub series_created: IntCounter,
    pub registry_bytes: IntGauge,
    pub prom_write_buffer_bytes: IntGauge,
    pub flushes: IntCounter,
    pub flushed_rows: IntCounter,
    pub rollup_values: IntCounter,
    pub rollup_reads: IntCounter,
    pub query_seconds: Histogram,
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    let c = IntCounter::new(name, help).unwrap_or_else(|_| unreachable_metric(name));
    let _ = r.register(Box::new(c.clone()));
    c
}

fn counter_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|_| unreachable_metric(name));
    let _ = r.register(Box::new(c.clone()));
    c
}

fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    let g = IntGauge::new(name, help).unwrap_or_else(|_| unreachable_metric(name));
    let _ = r.register(Box::new(g.clone()));
    g
}

/// Metric names and help texts are constants, validated by the tests; a
/// failure here is a programming error caught before release.
#[allow(clippy::panic)]
fn unreachable_metric(name: &str) -> ! {
    panic!("invalid metric definition {name}")
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let r = Registry::new();
        let query_seconds = Histogram::with_opts(
            HistogramOpts::new("hourglass_query_seconds", "Latency of /api/query requests")
                .buckets(vec![0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0]),
        )
        .unwrap_or_else(|_| unreachable_metric("hourglass_query_seconds"));
        let _ = r.register(Box::new(query_seconds.clone()));
        Self {
            points_written: counter(
                &r,
                "hourglass_points_written_total",
                "Data points accepted into the write-ahead log",
            ),
            points_received: counter_vec(
                &r,
                "hourglass_points_received_total",
                "Data points accepted, by protocol (telnet, put, influx, prometheus, import, rollup)",
                &["protocol"],
            ),
            points_rejected: counter_vec(
                &r,
                "hourglass_points_rejected_total",
                "Data points rejected, by reason",
                &["reason"],
            ),
            auth_refused: counter_vec(
                &r,
                "hourglass_auth_refused_total",
                "Requests and line-protocol commands refused by access control, by reason",
                &["reason"],
            ),
            telnet_lines: counter(
                &r,
                "hourglass_telnet_lines_total",
                "Line-protocol lines received",
            ),
            telnet_errors_dropped: counter(
                &r,
                "hourglass_telnet_error_lines_dropped_total",
                "Error lines dropped because the client did not read them",
            ),
            influx_string_fields: counter(
                &r,
                "hourglass_influx_string_fields_skipped_total",
                "InfluxDB line-protocol string fields skipped (only numbers are stored)",
            ),
            prom_skipped: counter_vec(
                &r,
                "hourglass_prom_write_skipped_total",
                "Prometheus remote-write entries not stored, by reason (exemplar, histogram, metadata)",
                &["reason"],
            ),
            connections: counter_vec(
                &r,
                "hourglass_connections_total",
                "Connections accepted by protocol (http, telnet; tls, then https or telnet_tls), or refused (rejected: max_connections, rejected_address: max_connections_per_address, plain_refused: plain text where TLS is required)",
                &["type"],
            ),
            connections_open: gauge(&r, "hourglass_connections_open", "Open connections"),
            http_requests: counter_vec(
                &r,
                "hourglass_http_requests_total",
                "HTTP requests by endpoint and status",
                &["endpoint", "status"],
            ),
            head_points: gauge(
                &r,
                "hourglass_head_points",
                "Points held in the in-memory series head",
            ),
            head_series: gauge(&r, "hourglass_series", "Series known to this process"),
            head_bytes: gauge(
                &r,
                "hourglass_head_bytes",
                "Heap bytes of the compressed points held in the series head",
            ),
            checkpoints: counter(
                &r,
                "hourglass_head_checkpoints_total",
                "Head checkpoints written",
            ),
            deletes: counter(&r, "hourglass_deletes_total", "Point deletes applied"),
            series_created: counter(
                &r,
                "hourglass_series_created_total",
                "Series registered in memory (new, or back after leaving it)",
            ),
            series_stopped: counter(
                &r,
                "hourglass_series_stopped_total",
                "Series written out and forgotten: silent for head.idle_flush_secs, or every point in a closed hour",
            ),
            series_evicted: counter(
                &r,
                "hourglass_series_evicted_total",
                "Series written out and forgotten early, the longest silent first, because more than head.max_series were in memory",
            ),
            registry_bytes: gauge(
                &r,
                "hourglass_series_registry_bytes",
                "Bytes the series registry holds (entries, keys, lookup tables; not the points)",
            ),
            prom_write_buffer_bytes: gauge(
                &r,
                "hourglass_prom_write_buffer_bytes",
                &format!(
                    "Bytes of decoded remote-write bodies the server's threads keep for their next body (at most {} MiB in all)",
                    hourglass_ingest::prom::REUSED_BUFFERS_TOTAL >> 20
                ),
            ),
            compactions: counter(
                &r,
                "hourglass_compactions_total",
                "Compaction jobs (merges, retention drops) completed",
            ),
            wal_bytes: gauge(
                &r,
                "hourglass_wal_bytes",
                "Bytes in live write-ahead log segments",
            ),
            flushes: counter(&r, "hourglass_flushes_total", "Head flushes to storage"),
            flushed_rows: counter(
                &r,
                "hourglass_flushed_rows_total",
                "Hour rows written to storage",
            ),
            rollup_values: counter(
                &r,
                "hourglass_rollup_hours_total",
                "Stored hours whose rollup tier values were computed",
            ),
            rollup_reads: counter(
                &r,
                "hourglass_rollup_values_read_total",
                "Rollup tier values read by queries",
            ),
            query_seconds,
            registry: r,
        }
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_metrics_register_and_render() {
        let m = super::Metrics::new();
        m.points_written.inc();
        m.points_rejected.with_label_values(&["invalid"]).inc();
        let text = m.render();
        assert!(text.contains("hourglass_points_written_total 1"));
        assert!(text.contains("hourglass_points_rejected_total{reason=\"invalid\"} 1"));
    }
}
