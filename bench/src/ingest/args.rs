//! The flags of `hourglass-bench ingest`: the workload, the server and its
//! protocol, batching and transport, pacing, pre-generation, and what to
//! measure of the server.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::duration::parse_duration;
use crate::protocol::Protocol;
use crate::protocol::influx::Precision;
use crate::runner::TcpAck;
use crate::runner::payload::PregenMode;
use crate::workload_args::WorkloadArgs;

/// Flags of `hourglass-bench ingest`.
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

    /// Access token: `Authorization: Bearer <token>` on HTTP (`Token
    /// <token>` on InfluxDB 2.x's endpoint), `auth <token>` as the first
    /// line of a TCP connection (hourglass with `[auth] enabled`).
    #[arg(long)]
    pub token: Option<String>,

    /// Speak TLS (HTTPS, and the line protocol over TLS) to a server with
    /// `[server.tls]`, trusting the PEM certificates of this file.
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,

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

    /// After the run, read every point back and compare it with what was
    /// sent (exit 4 if any is missing or wrong). Needs a run whose every
    /// point was acknowledged: no `--points` or `--max-time`.
    #[arg(long, conflicts_with_all = ["points", "max_time", "dry_run"])]
    pub verify: bool,

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
