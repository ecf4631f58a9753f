//! Command-line interface: flag definitions, duration parsing, and turning
//! flags into a validated [`Plan`] (workload shape + transport options + the
//! config echoed in reports).

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::error::BenchError;
use crate::protocol::Protocol;
use crate::report::IngestConfig;
use crate::runner::RunOptions;
use crate::workload::{EXTRA_TAGS, TsUnit, WorkloadSpec};

/// Load generator for hourglass and other OpenTSDB-compatible servers.
#[derive(Debug, Parser)]
#[command(name = "hourglass-bench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a TSBS-style devops workload and measure ingest throughput.
    Ingest(IngestArgs),
}

#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// Server address (host:port).
    #[arg(long, default_value = "127.0.0.1:4242")]
    pub addr: String,

    /// Wire protocol.
    #[arg(long, value_enum, default_value_t = Protocol::Telnet)]
    pub protocol: Protocol,

    /// Number of simulated hosts.
    #[arg(long, default_value_t = 100)]
    pub hosts: u32,

    /// Metrics per host (series = hosts x metrics).
    #[arg(long, default_value_t = 10)]
    pub metrics: u32,

    /// Tags per host in addition to `host` (rack, region, datacenter, ...; max 9).
    #[arg(long, default_value_t = 2)]
    pub tags_per_host: u32,

    /// Time between points of a series (e.g. 10s, 1m, 250ms).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub interval: Duration,

    /// Time range covered by the data (e.g. 1h, 1d, 90m).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub duration: Duration,

    /// First timestamp, unix seconds [default: now - duration, aligned to the interval].
    #[arg(long)]
    pub start: Option<i64>,

    /// Seed of the value generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Parallel connections; hosts are split between them (capped at --hosts).
    #[arg(long, default_value_t = 4)]
    pub connections: u32,

    /// Lines per write.
    #[arg(long, default_value_t = 1000)]
    pub batch_lines: usize,

    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// After the last line, wait this long for the server's `version` reply.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub reply_timeout: Duration,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// Print the first N generated lines (0 = all) to stdout instead of connecting.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
    pub dry_run: Option<u64>,
}

/// Parses `10s`, `1h30m`, `250ms`, `2d`, `1w`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".to_string());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total_ms: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("invalid duration `{text}`: expected a number"));
        }
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid duration `{text}`: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            other => {
                return Err(format!(
                    "invalid duration `{text}`: unknown unit `{other}` (use ms, s, m, h, d, w)"
                ));
            }
        };
        rest = &rest[unit_len..];
        total_ms = n
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or_else(|| format!("invalid duration `{text}`: too large"))?;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Formats milliseconds compactly (`1h30m`, `10s`, `250ms`).
pub fn format_ms(mut ms: u64) -> String {
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    if ms > 0 {
        out.push_str(&format!("{ms}ms"));
    }
    out
}

/// A validated ingest run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: WorkloadSpec,
    pub opts: RunOptions,
    pub config: IngestConfig,
}

fn millis(d: Duration) -> Result<i64, BenchError> {
    i64::try_from(d.as_millis()).map_err(|_| BenchError::Config(format!("{d:?} is too long")))
}

/// Validates the flags and resolves defaults; `now_ms` is the current time.
pub fn plan(args: &IngestArgs, now_ms: i64) -> Result<Plan, BenchError> {
    let bad = |msg: String| Err(BenchError::Config(msg));
    if args.hosts == 0 {
        return bad("--hosts must be at least 1".into());
    }
    if args.metrics == 0 {
        return bad("--metrics must be at least 1".into());
    }
    if args.tags_per_host as usize > EXTRA_TAGS.len() {
        return bad(format!(
            "--tags-per-host must be at most {} (tags besides `host`)",
            EXTRA_TAGS.len()
        ));
    }
    if args.connections == 0 {
        return bad("--connections must be at least 1".into());
    }
    if args.batch_lines == 0 {
        return bad("--batch-lines must be at least 1".into());
    }
    let interval_ms = millis(args.interval)?;
    let duration_ms = millis(args.duration)?;
    if interval_ms == 0 {
        return bad("--interval must be at least 1ms".into());
    }
    if duration_ms < interval_ms {
        return bad("--duration must be at least --interval".into());
    }
    let steps = (duration_ms / interval_ms) as u64;
    let start_ms = match args.start {
        Some(secs) if secs < 0 => return bad("--start must not be negative".into()),
        Some(secs) => secs
            .checked_mul(1000)
            .ok_or_else(|| BenchError::Config("--start is too large".into()))?,
        None => (now_ms - duration_ms).div_euclid(interval_ms) * interval_ms,
    };
    if start_ms < 0 {
        return bad("--duration reaches back before 1970; pass --start".into());
    }
    let spec = WorkloadSpec {
        hosts: args.hosts,
        metrics: args.metrics,
        tags_per_host: args.tags_per_host,
        start_ms,
        interval_ms,
        steps,
        seed: args.seed,
    };
    let connections = args.connections.min(args.hosts);
    let opts = RunOptions {
        addr: args.addr.clone(),
        connections,
        batch_lines: args.batch_lines,
        connect_timeout: args.connect_timeout,
        reply_timeout: args.reply_timeout,
    };
    let series = u64::from(args.hosts) * u64::from(args.metrics);
    let config = IngestConfig {
        protocol: args.protocol,
        addr: args.addr.clone(),
        hosts: args.hosts,
        metrics: args.metrics,
        tags_per_host: args.tags_per_host,
        series,
        interval: format_ms(interval_ms as u64),
        interval_ms: interval_ms as u64,
        duration: format_ms(duration_ms as u64),
        duration_ms: duration_ms as u64,
        start: start_ms.div_euclid(1000),
        start_ms,
        steps,
        total_points: series * steps,
        timestamp_unit: TsUnit::for_range(start_ms, interval_ms),
        connections,
        connections_requested: args.connections,
        batch_lines: args.batch_lines,
        seed: args.seed,
        connect_timeout_ms: args.connect_timeout.as_millis() as u64,
        reply_timeout_ms: args.reply_timeout.as_millis() as u64,
    };
    Ok(Plan { spec, opts, config })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> IngestArgs {
        let mut argv = vec!["hourglass-bench", "ingest"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("flags parse").command {
            Command::Ingest(a) => a,
        }
    }

    #[test]
    fn durations() {
        let ms = |s: &str| parse_duration(s).map(|d| d.as_millis());
        assert_eq!(ms("10s"), Ok(10_000));
        assert_eq!(ms("10"), Ok(10_000));
        assert_eq!(ms("1h30m"), Ok(5_400_000));
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("2d"), Ok(172_800_000));
        assert!(ms("").is_err());
        assert!(ms("5x").is_err());
        assert!(ms("s").is_err());
        assert_eq!(format_ms(5_400_000), "1h30m");
        assert_eq!(format_ms(250), "250ms");
        assert_eq!(format_ms(10_000), "10s");
    }

    #[test]
    fn defaults_and_alignment() {
        let p = plan(&args(&[]), 1_700_000_003_456).expect("valid");
        assert_eq!(p.spec.steps, 360);
        assert_eq!(p.config.total_points, 100 * 10 * 360);
        assert_eq!(p.spec.start_ms % 10_000, 0);
        assert!(p.spec.start_ms <= 1_700_000_003_456 - 3_600_000);
        assert_eq!(p.opts.connections, 4);
        assert_eq!(p.config.timestamp_unit, TsUnit::Seconds);
    }

    #[test]
    fn explicit_flags() {
        let a = args(&[
            "--hosts",
            "3",
            "--metrics",
            "2",
            "--interval",
            "1m",
            "--duration",
            "1h",
            "--start",
            "1000",
            "--connections",
            "8",
            "--dry-run",
        ]);
        assert_eq!(a.dry_run, Some(20));
        let p = plan(&a, 0).expect("valid");
        assert_eq!(p.spec.start_ms, 1_000_000);
        assert_eq!(p.spec.steps, 60);
        assert_eq!(p.opts.connections, 3);
        assert_eq!(args(&["--dry-run", "5"]).dry_run, Some(5));
    }

    #[test]
    fn rejects_bad_flags() {
        for bad in [
            &["--hosts", "0"][..],
            &["--metrics", "0"],
            &["--interval", "1h", "--duration", "1m"],
            &["--tags-per-host", "10"],
            &["--batch-lines", "0"],
            &["--start=-5"],
        ] {
            assert!(plan(&args(bad), 1_700_000_000_000).is_err(), "{bad:?}");
        }
    }
}
