//! Command-line interface: flag definitions, duration and time parsing, and
//! turning ingest flags into a validated [`Plan`] (workload shape + transport
//! options + the config echoed in reports). The `query` and `soak` flags are
//! defined here too and validated by their modules.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::duration::{format_ms, millis, parse_duration};
use crate::error::BenchError;
use crate::protocol::influx::Precision;
use crate::protocol::{EncodeOptions, Protocol};
use crate::report::IngestConfig;
use crate::runner::payload::PregenMode;
use crate::runner::{HttpTarget, RunOptions, TcpAck};
use crate::workload::{EXTRA_TAGS, Kind, TsUnit, WorkloadSpec};

/// Load generator and measuring instrument for hourglass and other
/// OpenTSDB-compatible servers (and, for comparison, VictoriaMetrics,
/// InfluxDB and Prometheus).
#[derive(Debug, Parser)]
#[command(name = "hourglass-bench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a deterministic workload and measure ingest throughput.
    Ingest(IngestArgs),
    /// Time the reference queries over an ingested cpu workload and check every answer.
    Query(crate::query::QueryArgs),
    /// Mixed ingest, queries, bad input and stalled connections for a while; check nothing acknowledged was lost.
    Soak(crate::soak::SoakArgs),
    /// Create many new series through /api/put; check a batch costs as much at the end as at the start.
    Series(crate::series::SeriesArgs),
}

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

#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,

    /// Server address (host:port).
    #[arg(long, default_value = "127.0.0.1:4242")]
    pub addr: String,

    /// Wire protocol.
    #[arg(long, value_enum, default_value_t = Protocol::Telnet)]
    pub protocol: Protocol,

    /// Parallel connections; hosts are split between them (capped at --hosts).
    #[arg(long, default_value_t = 2)]
    pub connections: u32,

    /// Points per write (TCP) or per request (HTTP) [default: telnet 1000,
    /// http-put 5000, influx 10000, prom-write 50000].
    #[arg(long, alias = "batch-lines")]
    pub batch: Option<usize>,

    /// gzip HTTP bodies (http-put, influx-http, influx-v2).
    #[arg(long)]
    pub gzip: bool,

    /// Timestamp precision of Influx lines.
    #[arg(long, value_enum, default_value_t = Precision::Ns)]
    pub precision: Precision,

    /// Influx database (1.x `db=`) or bucket (2.x `bucket=`).
    #[arg(long, default_value = "bench")]
    pub db: String,

    /// Influx 2.x organisation (`org=`).
    #[arg(long)]
    pub org: Option<String>,

    /// Influx 2.x token (sent as `Authorization: Token <token>`).
    #[arg(long)]
    pub token: Option<String>,

    /// Create the Influx database first (`POST /query` `CREATE DATABASE`), as Telegraf does.
    #[arg(long)]
    pub create_db: bool,

    /// Override the HTTP path (and query string) of the protocol.
    #[arg(long)]
    pub path: Option<String>,

    /// How TCP connections learn that everything was processed.
    #[arg(long, value_enum, default_value_t = TcpAck::Version)]
    pub tcp_ack: TcpAck,

    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// TCP: wait this long for the acknowledgement after the last line; HTTP: per request.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub reply_timeout: Duration,

    /// Send at most N points (the first N in time order).
    #[arg(long)]
    pub points: Option<u64>,

    /// Rate limit, points per second over all connections.
    #[arg(long)]
    pub rate: Option<f64>,

    /// Stop sending after this much wall-clock time (then wait for the acknowledgements).
    #[arg(long, value_parser = parse_duration)]
    pub max_time: Option<Duration>,

    /// Keep connections within this much data time of each other [default:
    /// 30m for prom-write, as Prometheus refuses samples older than its head
    /// window; off otherwise]. `0s` turns it off.
    #[arg(long, value_parser = parse_duration)]
    pub max_skew: Option<Duration>,

    /// Pre-generate every payload before the clock starts.
    #[arg(long, value_enum, default_value_t = PregenMode::Auto)]
    pub pregen: PregenMode,

    /// With --pregen auto: pre-generate when the payloads fit in this many MB.
    #[arg(long, default_value_t = 4096)]
    pub pregen_max_mb: u64,

    /// Server process id: report its peak RSS and CPU time per point.
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Server data directory: report its bytes (and bytes per point) after the run.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,

    /// Wait this long after the run before measuring the data directory and RSS.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub settle: Duration,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,

    /// Print the first N payloads' text (0 = all) to stdout instead of connecting.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
    pub dry_run: Option<u64>,
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

/// A validated ingest run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: WorkloadSpec,
    pub opts: RunOptions,
    pub config: IngestConfig,
}

/// The HTTP request shape of `protocol`.
fn http_target(args: &IngestArgs) -> Option<HttpTarget> {
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    let mut headers = Vec::new();
    let default_path = match args.protocol {
        Protocol::Telnet | Protocol::InfluxTcp | Protocol::MixedTcp => return None,
        Protocol::HttpPut => {
            headers.push(s("content-type", "application/json"));
            "/api/put".to_string()
        }
        Protocol::InfluxHttp => {
            headers.push(s("content-type", "text/plain; charset=utf-8"));
            crate::http::with_query(
                "/write",
                &[("db", &args.db), ("precision", args.precision.param())],
            )
        }
        Protocol::InfluxV2 => {
            headers.push(s("content-type", "text/plain; charset=utf-8"));
            if let Some(token) = &args.token {
                headers.push(s("authorization", &format!("Token {token}")));
            }
            let mut params = vec![("bucket", args.db.as_str())];
            if let Some(org) = &args.org {
                params.push(("org", org));
            }
            params.push(("precision", args.precision.param()));
            crate::http::with_query("/api/v2/write", &params)
        }
        Protocol::PromWrite => {
            for (k, v) in crate::protocol::prom::HEADERS {
                headers.push(s(k, v));
            }
            headers.push(s("user-agent", "hourglass-bench"));
            "/api/v1/write".to_string()
        }
    };
    if args.gzip
        && matches!(
            args.protocol,
            Protocol::HttpPut | Protocol::InfluxHttp | Protocol::InfluxV2
        )
    {
        headers.push(s("content-encoding", "gzip"));
    }
    Some(HttpTarget {
        path: args.path.clone().unwrap_or(default_path),
        headers,
    })
}

/// Validates the ingest flags and resolves defaults; `now_ms` is the current time.
pub fn plan(args: &IngestArgs, now_ms: i64) -> Result<Plan, BenchError> {
    let bad = |msg: String| Err(BenchError::Config(msg));
    let spec = workload_spec(&args.workload, now_ms)?;
    if args.connections == 0 {
        return bad("--connections must be at least 1".into());
    }
    let batch = args.batch.unwrap_or(args.protocol.default_batch());
    if batch == 0 {
        return bad("--batch must be at least 1".into());
    }
    if let Some(rate) = args.rate
        && !(rate > 0.0 && rate.is_finite())
    {
        return bad("--rate must be a positive number of points per second".into());
    }
    let unit = TsUnit::for_range(spec.start_ms, spec.interval_ms);
    let influx = matches!(
        args.protocol,
        Protocol::InfluxTcp | Protocol::MixedTcp | Protocol::InfluxHttp | Protocol::InfluxV2
    );
    if influx && args.precision == Precision::S && unit == TsUnit::Milliseconds {
        return bad("--precision s cannot carry millisecond timestamps; use ms or finer".into());
    }
    if args.gzip
        && !matches!(
            args.protocol,
            Protocol::HttpPut | Protocol::InfluxHttp | Protocol::InfluxV2
        )
    {
        return bad(format!("--gzip does not apply to {}", args.protocol.name()));
    }
    let max_skew_ms = match args.max_skew {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(millis(d)?),
        None if args.protocol == Protocol::PromWrite => Some(30 * 60 * 1000),
        None => None,
    };
    let connections = args.connections.min(spec.hosts);
    let opts = RunOptions {
        addr: args.addr.clone(),
        protocol: args.protocol,
        connections,
        batch,
        encode: EncodeOptions {
            gzip: args.gzip,
            precision: args.precision,
        },
        connect_timeout: args.connect_timeout,
        reply_timeout: args.reply_timeout,
        tcp_ack: args.tcp_ack,
        http: http_target(args),
        points: args.points,
        rate: args.rate,
        max_time: args.max_time,
        max_skew_ms,
        pregen: args.pregen,
        pregen_max_bytes: args.pregen_max_mb.saturating_mul(1_000_000),
        progress: !args.no_progress && !args.json,
    };
    let series = u64::from(spec.hosts) * u64::from(spec.metrics);
    let total = spec.steps * series;
    let config = IngestConfig {
        workload: spec.kind,
        protocol: args.protocol,
        addr: args.addr.clone(),
        hosts: spec.hosts,
        metrics: spec.metrics,
        tags_per_host: spec.tags_per_host,
        series,
        distinct_series: 0,
        interval: format_ms(spec.interval_ms as u64),
        interval_ms: spec.interval_ms as u64,
        duration: format_ms(spec.steps * spec.interval_ms as u64),
        duration_ms: spec.steps * spec.interval_ms as u64,
        start: spec.start_ms.div_euclid(1000),
        start_ms: spec.start_ms,
        steps: spec.steps,
        total_points: args.points.map_or(total, |p| p.min(total)),
        timestamp_unit: unit,
        connections,
        connections_requested: args.connections,
        batch,
        gzip: args.gzip,
        precision: influx.then_some(args.precision),
        http_path: opts.http.as_ref().map(|h| h.path.clone()),
        tcp_ack: args.protocol.is_tcp().then_some(args.tcp_ack),
        rate: args.rate,
        max_time_ms: args.max_time.map(|d| d.as_millis() as u64),
        max_skew_ms,
        seed: spec.seed,
        churn: (spec.kind == Kind::HighCardinality).then_some(spec.churn),
        prefix: spec.prefix.clone(),
        connect_timeout_ms: args.connect_timeout.as_millis() as u64,
        reply_timeout_ms: args.reply_timeout.as_millis() as u64,
    };
    Ok(Plan { spec, opts, config })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn args(extra: &[&str]) -> IngestArgs {
        let mut argv = vec!["hourglass-bench", "ingest"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("flags parse").command {
            Command::Ingest(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn starts() {
        assert_eq!(parse_start("1700000000"), Ok(Start::At(1_700_000_000)));
        assert_eq!(parse_start("now"), Ok(Start::Ago(0)));
        assert_eq!(parse_start("now-1h"), Ok(Start::Ago(3_600_000)));
        assert!(parse_start("yesterday").is_err());
        let p = plan(&args(&["--start", "now-1h"]), 1_700_000_003_456).expect("valid");
        assert_eq!(p.spec.start_ms, 1_699_996_400_000);
    }

    #[test]
    fn defaults_and_alignment() {
        let p = plan(&args(&[]), 1_700_000_003_456).expect("valid");
        assert_eq!(p.spec.kind, Kind::Cpu);
        assert_eq!(p.spec.steps, 360);
        assert_eq!(p.config.total_points, 100 * 10 * 360);
        assert_eq!(p.spec.start_ms % 10_000, 0);
        assert!(p.spec.start_ms <= 1_700_000_003_456 - 3_600_000);
        assert_eq!(p.opts.connections, 2);
        assert_eq!(p.opts.batch, 1000);
        assert_eq!(p.config.timestamp_unit, TsUnit::Seconds);
        assert!(p.opts.http.is_none());
        let hc = plan(
            &args(&["--workload", "high-cardinality"]),
            1_700_000_000_000,
        )
        .expect("valid");
        assert_eq!(hc.spec.hosts, 100_000);
        assert_eq!(hc.spec.steps, 12);
    }

    #[test]
    fn explicit_flags() {
        let a = args(&[
            "--workload",
            "devops",
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
    fn http_targets() {
        let p = plan(
            &args(&["--protocol", "influx-http", "--precision", "ms", "--gzip"]),
            1_700_000_000_000,
        )
        .expect("valid");
        let h = p.opts.http.expect("http");
        assert_eq!(h.path, "/write?db=bench&precision=ms");
        assert!(
            h.headers
                .contains(&("content-encoding".into(), "gzip".into()))
        );
        let p = plan(&args(&["--protocol", "prom-write"]), 1_700_000_000_000).expect("valid");
        assert_eq!(p.opts.batch, 50_000);
        assert_eq!(p.opts.max_skew_ms, Some(1_800_000));
        assert_eq!(p.opts.http.expect("http").path, "/api/v1/write");
        let p = plan(
            &args(&["--protocol", "influx-v2", "--org", "o", "--token", "t"]),
            1_700_000_000_000,
        )
        .expect("valid");
        let h = p.opts.http.expect("http");
        assert_eq!(h.path, "/api/v2/write?bucket=bench&org=o&precision=ns");
        assert!(
            h.headers
                .contains(&("authorization".into(), "Token t".into()))
        );
    }

    #[test]
    fn rejects_bad_flags() {
        for bad in [
            &["--hosts", "0"][..],
            &["--metrics", "0"],
            &["--metrics", "11"],
            &["--interval", "1h", "--duration", "1m"],
            &["--workload", "devops", "--tags-per-host", "10"],
            &["--batch", "0"],
            &["--start=-5"],
            &["--rate", "0"],
            &["--gzip"],
            &[
                "--protocol",
                "influx-http",
                "--precision",
                "s",
                "--interval",
                "500ms",
            ],
        ] {
            assert!(plan(&args(bad), 1_700_000_000_000).is_err(), "{bad:?}");
        }
    }
}
