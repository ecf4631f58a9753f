//! Run reports: the human summary and the `--json` object.
//!
//! MB figures are decimal megabytes (10^6 bytes) of `put` line payload; the
//! trailing `version` command is not counted.

use std::io::{self, Write};

use serde::Serialize;

use crate::error::BenchError;
use crate::protocol::Protocol;
use crate::runner::{MAX_ERROR_SAMPLES, RunResult};
use crate::workload::TsUnit;

/// The resolved configuration of an ingest run, echoed in the report.
#[derive(Debug, Clone, Serialize)]
pub struct IngestConfig {
    pub protocol: Protocol,
    pub addr: String,
    pub hosts: u32,
    pub metrics: u32,
    pub tags_per_host: u32,
    pub series: u64,
    pub interval: String,
    pub interval_ms: u64,
    pub duration: String,
    pub duration_ms: u64,
    /// First timestamp, unix seconds.
    pub start: i64,
    pub start_ms: i64,
    pub steps: u64,
    pub total_points: u64,
    pub timestamp_unit: TsUnit,
    /// Connections actually used (at most `hosts`).
    pub connections: u32,
    pub connections_requested: u32,
    pub batch_lines: usize,
    pub seed: u64,
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
    pub error_lines: u64,
}

/// The outcome of an ingest run.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    pub config: IngestConfig,
    pub points: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub points_per_sec: f64,
    pub mb_sent: f64,
    pub mb_per_sec: f64,
    pub error_lines: u64,
    pub first_errors: Vec<String>,
    pub server_version: Option<String>,
    pub per_connection: Vec<ConnReport>,
}

fn rate(n: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { n / seconds } else { 0.0 }
}

impl IngestReport {
    pub fn new(config: IngestConfig, run: &RunResult) -> Self {
        let points = run.connections.iter().map(|c| c.points).sum();
        let bytes = run.connections.iter().map(|c| c.bytes).sum();
        let error_lines = run.connections.iter().map(|c| c.error_lines).sum();
        let first_errors = run
            .connections
            .iter()
            .flat_map(|c| c.first_errors.iter().cloned())
            .take(MAX_ERROR_SAMPLES)
            .collect();
        let server_version = run
            .connections
            .iter()
            .find_map(|c| c.server_version.clone());
        let per_connection = run
            .connections
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
                    error_lines: c.error_lines,
                }
            })
            .collect();
        let seconds = run.elapsed.as_secs_f64();
        let mb_sent = bytes as f64 / 1e6;
        IngestReport {
            config,
            points,
            bytes,
            seconds,
            points_per_sec: rate(points as f64, seconds),
            mb_sent,
            mb_per_sec: rate(mb_sent, seconds),
            error_lines,
            first_errors,
            server_version,
            per_connection,
        }
    }

    /// Writes the human-readable summary.
    pub fn write_human(&self, out: &mut impl Write) -> io::Result<()> {
        let c = &self.config;
        writeln!(
            out,
            "hourglass-bench ingest: {} to {}",
            c.protocol.name(),
            c.addr
        )?;
        writeln!(
            out,
            "  workload      {} hosts x {} metrics = {} series; {} steps of {} from {} ({})",
            c.hosts, c.metrics, c.series, c.steps, c.interval, c.start, c.duration
        )?;
        writeln!(
            out,
            "  connections   {} (batches of {} lines)",
            c.connections, c.batch_lines
        )?;
        writeln!(out, "  points sent   {}", self.points)?;
        writeln!(out, "  seconds       {:.3}", self.seconds)?;
        writeln!(out, "  points/s      {:.0}", self.points_per_sec)?;
        writeln!(
            out,
            "  MB sent       {:.2} ({:.2} MB/s)",
            self.mb_sent, self.mb_per_sec
        )?;
        writeln!(out, "  error lines   {}", self.error_lines)?;
        for line in &self.first_errors {
            writeln!(out, "    {line}")?;
        }
        if let Some(v) = &self.server_version {
            writeln!(out, "  server        {v}")?;
        }
        Ok(())
    }

    /// Writes the report as one JSON object followed by a newline.
    pub fn write_json(&self, out: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        writeln!(out)
    }

    /// Prints the report to stdout in the requested form.
    pub fn print(&self, json: bool) -> Result<(), BenchError> {
        let mut out = io::stdout().lock();
        let written = if json {
            self.write_json(&mut out)
        } else {
            self.write_human(&mut out)
        };
        written
            .and_then(|()| out.flush())
            .map_err(|e| BenchError::io("writing report to stdout", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, plan};
    use crate::runner::ConnResult;
    use clap::Parser;
    use std::time::Duration;

    #[test]
    fn json_has_fields_and_config() {
        let Command::Ingest(args) = Cli::try_parse_from(["b", "ingest", "--start", "1000"])
            .expect("parse")
            .command;
        let config = plan(&args, 0).expect("valid").config;
        let run = RunResult {
            connections: vec![ConnResult {
                id: 0,
                hosts: 100,
                points: 360_000,
                bytes: 30_000_000,
                elapsed: Duration::from_secs(2),
                error_lines: 1,
                first_errors: vec!["put: bad".into()],
                server_version: Some("hourglass 0.1.0".into()),
            }],
            elapsed: Duration::from_secs(2),
        };
        let report = IngestReport::new(config, &run);
        let mut out = Vec::new();
        report.write_json(&mut out).expect("json");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid json");
        assert_eq!(v["points"], 360_000);
        assert_eq!(v["points_per_sec"], 180_000.0);
        assert_eq!(v["mb_sent"], 30.0);
        assert_eq!(v["error_lines"], 1);
        assert_eq!(v["first_errors"][0], "put: bad");
        assert_eq!(v["config"]["hosts"], 100);
        assert_eq!(v["config"]["protocol"], "telnet");
        assert_eq!(v["config"]["start"], 1000);
        let mut human = Vec::new();
        report.write_human(&mut human).expect("human");
        let human = String::from_utf8(human).expect("utf8");
        assert!(human.contains("points/s      180000"), "{human}");
    }
}
