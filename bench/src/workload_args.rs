//! The workload flags `ingest` and `query` share (`--workload`, `--hosts`,
//! `--metrics`, `--interval`, `--duration`, `--start`, ...) and their
//! validation into a [`WorkloadSpec`]: defaults resolved per workload kind,
//! a relative `--start` aligned down to the interval.

use std::time::Duration;

use clap::Args;

use crate::duration::{millis, parse_duration};
use crate::error::BenchError;
use crate::workload::{EXTRA_TAGS, Kind, WorkloadSpec};

/// The workload's shape, shared by `ingest` and `query`.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Workload to generate.
    #[arg(long, value_enum, default_value_t = Kind::Cpu)]
    pub workload: Kind,

    /// Simulated hosts [default: 100; high-cardinality: 100000].
    #[arg(long)]
    pub hosts: Option<u32>,

    /// Metrics per host (cpu and high-cardinality: at most 10).
    #[arg(long, default_value_t = 10)]
    pub metrics: u32,

    /// devops: tags per host besides `host` (rack, region, datacenter, ...; max 9).
    #[arg(long, default_value_t = 2)]
    pub tags_per_host: u32,

    /// Time between points of a series (e.g. 10s, 1m, 250ms).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub interval: Duration,

    /// Time range covered by the data (e.g. 1h, 1d) [default: 1h; high-cardinality: 2m].
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// First timestamp: unix seconds, `now` or `now-<duration>` (aligned down to
    /// the interval) [default: now - duration].
    #[arg(long, value_parser = parse_start)]
    pub start: Option<Start>,

    /// Seed of the value generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// high-cardinality: a host's `pod` tag rotates every N intervals (0 = never).
    #[arg(long, default_value_t = 6)]
    pub churn: u32,

    /// Prepended to every metric name.
    #[arg(long, default_value = "")]
    pub prefix: String,
}

/// `--start`: absolute, or relative to the time the run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Unix seconds.
    At(i64),
    /// Now minus this many milliseconds.
    Ago(u64),
}

/// Parses `1700000000`, `now`, `now-1h`.
pub fn parse_start(text: &str) -> Result<Start, String> {
    let text = text.trim();
    if text == "now" {
        return Ok(Start::Ago(0));
    }
    if let Some(ago) = text.strip_prefix("now-") {
        return parse_duration(ago).map(|d| Start::Ago(d.as_millis() as u64));
    }
    text.parse::<i64>()
        .map(Start::At)
        .map_err(|_| format!("invalid start `{text}`: use unix seconds, `now` or `now-<duration>`"))
}

/// Validates the workload flags and resolves defaults; `now_ms` is the current time.
pub fn workload_spec(args: &WorkloadArgs, now_ms: i64) -> Result<WorkloadSpec, BenchError> {
    let bad = |msg: String| Err(BenchError::Config(msg));
    let kind = args.workload;
    let hosts = args.hosts.unwrap_or(kind.default_hosts());
    if hosts == 0 {
        return bad("--hosts must be at least 1".into());
    }
    if args.metrics == 0 {
        return bad("--metrics must be at least 1".into());
    }
    if let Some(max) = kind.max_metrics()
        && args.metrics > max
    {
        return bad(format!(
            "--metrics must be at most {max} for the {} workload",
            kind.name()
        ));
    }
    if args.tags_per_host as usize > EXTRA_TAGS.len() {
        return bad(format!(
            "--tags-per-host must be at most {} (tags besides `host`)",
            EXTRA_TAGS.len()
        ));
    }
    let default_duration = match kind {
        Kind::HighCardinality => Duration::from_secs(120),
        _ => Duration::from_secs(3600),
    };
    let interval_ms = millis(args.interval)?;
    let duration_ms = millis(args.duration.unwrap_or(default_duration))?;
    if interval_ms == 0 {
        return bad("--interval must be at least 1ms".into());
    }
    if duration_ms < interval_ms {
        return bad("--duration must be at least --interval".into());
    }
    let steps = (duration_ms / interval_ms) as u64;
    let align = |ms: i64| ms.div_euclid(interval_ms) * interval_ms;
    let start_ms = match args.start {
        Some(Start::At(secs)) if secs < 0 => return bad("--start must not be negative".into()),
        Some(Start::At(secs)) => secs
            .checked_mul(1000)
            .ok_or_else(|| BenchError::Config("--start is too large".into()))?,
        Some(Start::Ago(ms)) => align(now_ms - ms as i64),
        None => align(now_ms - duration_ms),
    };
    if start_ms <= 0 {
        return bad("the data would start before 1970; pass --start".into());
    }
    Ok(WorkloadSpec {
        kind,
        hosts,
        metrics: args.metrics,
        tags_per_host: args.tags_per_host,
        start_ms,
        interval_ms,
        steps,
        seed: args.seed,
        churn: args.churn,
        prefix: args.prefix.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts() {
        assert_eq!(parse_start("1700000000"), Ok(Start::At(1_700_000_000)));
        assert_eq!(parse_start("now"), Ok(Start::Ago(0)));
        assert_eq!(parse_start("now-1h"), Ok(Start::Ago(3_600_000)));
        assert!(parse_start("yesterday").is_err());
    }
}
