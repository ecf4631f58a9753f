//! The ingest report: the resolved configuration echoed back, what the
//! server acknowledged and refused, rates, the generator's share of the
//! time, per-connection figures and the server's measurements, as the human
//! summary and the `--json` object.
//!
//! MB figures are decimal megabytes (10^6 bytes) of payload as sent (after
//! gzip or snappy); protocol framing (HTTP headers, the trailing `version`)
//! is not counted.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;

use crate::protocol::Protocol;
use crate::protocol::influx::Precision;
use crate::report::{mib, rate};
use crate::runner::{MAX_ERROR_SAMPLES, RunResult, TcpAck};
use crate::soak::writers::Verification;
use crate::workload::{Kind, TsUnit};

/// Generator wait above this share of the run time makes it "generator-bound".
const GENERATOR_BOUND_SHARE: f64 = 0.05;

/// The resolved configuration of an ingest run, echoed in the report.
#[derive(Debug, Clone, Serialize)]
pub struct IngestConfig {
    pub workload: Kind,
    pub protocol: Protocol,
    pub addr: String,
    pub hosts: u32,
    pub metrics: u32,
    pub tags_per_host: u32,
    /// Series live at any time (hosts × metrics).
    pub series: u64,
    /// Distinct series over the run (with churn: more than `series`).
    pub distinct_series: u64,
    pub interval: String,
    pub interval_ms: u64,
    pub duration: String,
    pub duration_ms: u64,
    /// First timestamp, unix seconds.
    pub start: i64,
    pub start_ms: i64,
    pub steps: u64,
    /// Points the run sends (all of them, or `--points`).
    pub total_points: u64,
    pub timestamp_unit: TsUnit,
    /// Connections actually used (at most `hosts`).
    pub connections: u32,
    pub connections_requested: u32,
    /// Points per write or request.
    pub batch: usize,
    pub gzip: bool,
    pub precision: Option<Precision>,
    pub http_path: Option<String>,
    pub tcp_ack: Option<TcpAck>,
    pub rate: Option<f64>,
    pub max_time_ms: Option<u64>,
    pub max_skew_ms: Option<i64>,
    pub seed: u64,
    pub churn: Option<u32>,
    pub prefix: String,
    pub connect_timeout_ms: u64,
    pub reply_timeout_ms: u64,
}

/// Per-connection figures.
#[derive(Debug, Clone, Serialize)]
pub struct ConnReport {
    pub id: usize,
    pub hosts: usize,
    pub points: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub points_per_sec: f64,
    pub errors: u64,
    pub requests: u64,
    pub generator_wait_seconds: f64,
}

/// How the payloads were produced.
#[derive(Debug, Clone, Serialize)]
pub struct GeneratorReport {
    /// Generated before the clock started.
    pub pregenerated: bool,
    pub seconds: f64,
    pub payload_bytes: u64,
    /// Longest time a connection waited for its payloads (streaming only).
    pub wait_seconds: f64,
    /// The generator, not the server, limited the rate.
    pub bound: bool,
}

/// Server-side measurements (`--server-pid`, `--data-dir`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerReport {
    pub pid: Option<u32>,
    /// Peak resident memory since the server started (`VmHWM`).
    pub peak_rss_bytes: Option<u64>,
    /// Resident memory at the end (`VmRSS`).
    pub rss_bytes: Option<u64>,
    /// Server CPU time (user + system) during the run.
    pub cpu_seconds: Option<f64>,
    pub cpu_us_per_point: Option<f64>,
    pub data_dir: Option<PathBuf>,
    pub data_dir_bytes: Option<u64>,
    pub bytes_per_point: Option<f64>,
}

/// The outcome of an ingest run.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    pub config: IngestConfig,
    /// Points acknowledged by the server.
    pub points: u64,
    /// Points the server refused (HTTP non-2xx).
    pub points_refused: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub points_per_sec: f64,
    pub mb_sent: f64,
    pub mb_per_sec: f64,
    /// TCP error lines or HTTP non-2xx responses.
    pub errors: u64,
    pub first_errors: Vec<String>,
    pub requests: u64,
    /// HTTP status → responses.
    pub statuses: BTreeMap<u16, u64>,
    pub reconnects: u64,
    pub server_version: Option<String>,
    /// Stopped by `--max-time` before all points were sent.
    pub stopped_early: bool,
    pub generator: GeneratorReport,
    pub server: ServerReport,
    pub per_connection: Vec<ConnReport>,
    /// Every point read back (`--verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
}

impl IngestReport {
    pub fn new(config: IngestConfig, run: &RunResult, server: ServerReport) -> Self {
        let c = &run.connections;
        let points = c.iter().map(|c| c.points).sum();
        let bytes = c.iter().map(|c| c.bytes).sum();
        let mut statuses = BTreeMap::new();
        for conn in c {
            for (s, n) in &conn.statuses {
                *statuses.entry(*s).or_default() += n;
            }
        }
        let per_connection = c
            .iter()
            .map(|c| {
                let seconds = c.elapsed.as_secs_f64();
                ConnReport {
                    id: c.id,
                    hosts: c.hosts,
                    points: c.points,
                    bytes: c.bytes,
                    seconds,
                    points_per_sec: rate(c.points as f64, seconds),
                    errors: c.errors,
                    requests: c.requests,
                    generator_wait_seconds: c.generator_wait.as_secs_f64(),
                }
            })
            .collect();
        let seconds = run.elapsed.as_secs_f64();
        let wait = c
            .iter()
            .map(|c| c.generator_wait.as_secs_f64())
            .fold(0.0, f64::max);
        let mb_sent = bytes as f64 / 1e6;
        IngestReport {
            config,
            points,
            points_refused: c.iter().map(|c| c.points_refused).sum(),
            bytes,
            seconds,
            points_per_sec: rate(points as f64, seconds),
            mb_sent,
            mb_per_sec: rate(mb_sent, seconds),
            errors: c.iter().map(|c| c.errors).sum(),
            first_errors: c
                .iter()
                .flat_map(|c| c.first_errors.iter().cloned())
                .take(MAX_ERROR_SAMPLES)
                .collect(),
            requests: c.iter().map(|c| c.requests).sum(),
            statuses,
            reconnects: c.iter().map(|c| c.reconnects).sum(),
            server_version: c.iter().find_map(|c| c.server_version.clone()),
            stopped_early: run.stopped_early,
            generator: GeneratorReport {
                pregenerated: run.prep.pregenerated,
                seconds: run.prep.seconds,
                payload_bytes: run.prep.bytes,
                wait_seconds: wait,
                bound: seconds > 0.0 && wait / seconds > GENERATOR_BOUND_SHARE,
            },
            server,
            per_connection,
            verification: None,
        }
    }

    /// Writes the human-readable summary.
    pub fn write_human(&self, out: &mut impl Write) -> io::Result<()> {
        let c = &self.config;
        writeln!(
            out,
            "hourglass-bench ingest: {} workload, {} to {}",
            c.workload.name(),
            c.protocol.name(),
            c.addr
        )?;
        writeln!(
            out,
            "  workload      {} hosts x {} metrics = {} series; {} steps of {} from {} ({})",
            c.hosts, c.metrics, c.series, c.steps, c.interval, c.start, c.duration
        )?;
        if c.distinct_series > c.series {
            writeln!(
                out,
                "  churn         {} distinct series over the run",
                c.distinct_series
            )?;
        }
        writeln!(
            out,
            "  connections   {} (batches of {} points{})",
            c.connections,
            c.batch,
            if c.gzip { ", gzip" } else { "" }
        )?;
        writeln!(out, "  points acked  {}", self.points)?;
        if self.points_refused > 0 {
            writeln!(out, "  refused       {}", self.points_refused)?;
        }
        writeln!(out, "  seconds       {:.3}", self.seconds)?;
        writeln!(out, "  points/s      {:.0}", self.points_per_sec)?;
        writeln!(
            out,
            "  MB sent       {:.2} ({:.2} MB/s)",
            self.mb_sent, self.mb_per_sec
        )?;
        if self.requests > 0 {
            let statuses: Vec<String> = self
                .statuses
                .iter()
                .map(|(s, n)| format!("{s} x{n}"))
                .collect();
            writeln!(
                out,
                "  requests      {} ({})",
                self.requests,
                statuses.join(", ")
            )?;
        }
        writeln!(out, "  errors        {}", self.errors)?;
        for line in &self.first_errors {
            writeln!(out, "    {line}")?;
        }
        let g = &self.generator;
        if g.pregenerated {
            writeln!(
                out,
                "  generator     pre-generated {} in {:.2} s",
                mib(g.payload_bytes),
                g.seconds
            )?;
        } else {
            writeln!(
                out,
                "  generator     streaming; waited {:.2} s{}",
                g.wait_seconds,
                if g.bound {
                    " — GENERATOR-BOUND: the rate above is the generator's, not the server's"
                } else {
                    ""
                }
            )?;
        }
        if self.stopped_early {
            writeln!(
                out,
                "  stopped       at --max-time, before the whole workload"
            )?;
        }
        let s = &self.server;
        if let Some(peak) = s.peak_rss_bytes {
            writeln!(
                out,
                "  server RSS    peak {} (now {})",
                mib(peak),
                mib(s.rss_bytes.unwrap_or(0))
            )?;
        }
        if let (Some(cpu), Some(per)) = (s.cpu_seconds, s.cpu_us_per_point) {
            writeln!(out, "  server CPU    {cpu:.2} s ({per:.3} µs/point)")?;
        }
        if let (Some(bytes), Some(per)) = (s.data_dir_bytes, s.bytes_per_point) {
            writeln!(out, "  data dir      {} ({per:.2} bytes/point)", mib(bytes))?;
        }
        if let Some(v) = &self.server_version {
            writeln!(out, "  server        {v}")?;
        }
        if let Some(v) = &self.verification {
            writeln!(
                out,
                "  read back     {} of {} points found ({} missing or wrong, {} queries failed)",
                v.found_points, v.acked_points, v.missing_points, v.query_failures
            )?;
            for line in &v.first_missing {
                writeln!(out, "    {line}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::ingest::plan::plan;
    use crate::report::write_json;
    use crate::runner::{ConnResult, PrepInfo};
    use clap::Parser;
    use std::time::Duration;

    fn report(pregenerated: bool, wait: Duration) -> IngestReport {
        let Command::Ingest(args) = Cli::try_parse_from(["b", "ingest", "--start", "1000"])
            .expect("parse")
            .command
        else {
            panic!("ingest")
        };
        let config = plan(&args, 0).expect("valid").config;
        let run = RunResult {
            connections: vec![ConnResult {
                id: 0,
                hosts: 100,
                points: 360_000,
                bytes: 30_000_000,
                elapsed: Duration::from_secs(2),
                errors: 1,
                first_errors: vec!["put: bad".into()],
                server_version: Some("hourglass 0.1.0".into()),
                generator_wait: wait,
                ..ConnResult::default()
            }],
            elapsed: Duration::from_secs(2),
            prep: PrepInfo {
                pregenerated,
                seconds: 0.5,
                bytes: 30_000_000,
                estimated_bytes: 30_000_000,
            },
            stopped_early: false,
        };
        let server = ServerReport {
            pid: Some(42),
            peak_rss_bytes: Some(100 << 20),
            rss_bytes: Some(90 << 20),
            cpu_seconds: Some(0.36),
            cpu_us_per_point: Some(1.0),
            data_dir: Some("/tmp/x".into()),
            data_dir_bytes: Some(720_000),
            bytes_per_point: Some(2.0),
        };
        IngestReport::new(config, &run, server)
    }

    #[test]
    fn json_has_fields_and_config() {
        let report = report(true, Duration::ZERO);
        let mut out = Vec::new();
        write_json(&mut out, &report).expect("json");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid json");
        assert_eq!(v["points"], 360_000);
        assert_eq!(v["points_per_sec"], 180_000.0);
        assert_eq!(v["mb_sent"], 30.0);
        assert_eq!(v["errors"], 1);
        assert_eq!(v["first_errors"][0], "put: bad");
        assert_eq!(v["config"]["hosts"], 100);
        assert_eq!(v["config"]["protocol"], "telnet");
        assert_eq!(v["config"]["workload"], "cpu");
        assert_eq!(v["config"]["start"], 1000);
        assert_eq!(v["generator"]["pregenerated"], true);
        assert_eq!(v["generator"]["bound"], false);
        assert_eq!(v["server"]["peak_rss_bytes"], 100 << 20);
        assert_eq!(v["server"]["bytes_per_point"], 2.0);
        let mut human = Vec::new();
        report.write_human(&mut human).expect("human");
        let human = String::from_utf8(human).expect("utf8");
        assert!(human.contains("points/s      180000"), "{human}");
        assert!(human.contains("peak 100.0 MiB"), "{human}");
        assert!(human.contains("2.00 bytes/point"), "{human}");
    }

    #[test]
    fn generator_bound_is_reported() {
        let report = report(false, Duration::from_millis(500));
        assert!(report.generator.bound);
        let mut human = Vec::new();
        report.write_human(&mut human).expect("human");
        assert!(
            String::from_utf8(human)
                .expect("utf8")
                .contains("GENERATOR-BOUND")
        );
    }
}
