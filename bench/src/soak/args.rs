//! The flags of `hourglass-bench soak`: the server, how long and how hard
//! to soak, the hostile traffic's rates and sizes, the timeouts, and what to
//! check of the server.

use std::time::Duration;

use crate::duration::parse_duration;

/// Flags of `hourglass-bench soak`.
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// Server address (host:port).
    #[arg(long, default_value = "127.0.0.1:4242")]
    pub addr: String,

    /// How long to soak.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Steady ingest rate, points per second over all writers.
    #[arg(long, default_value_t = 20_000.0)]
    pub rate: f64,

    /// Hosts of the soak workload (cpu workload, metrics `soak.cpu.*`).
    #[arg(long, default_value_t = 20)]
    pub hosts: u32,

    /// Telnet writers (acknowledged with `help` after each batch).
    #[arg(long, default_value_t = 2)]
    pub telnet_writers: u32,

    /// `/api/put` writers.
    #[arg(long, default_value_t = 2)]
    pub http_writers: u32,

    /// Points per batch.
    #[arg(long, default_value_t = 500)]
    pub batch: usize,

    /// An ordinary query this often.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub query_every: Duration,

    /// An oversized query this often.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub oversized_every: Duration,

    /// Series of `soak.wide` (one point each) the oversized query spans.
    #[arg(long, default_value_t = 3000)]
    pub wide_series: u32,

    /// A bad input this often (cycling through every kind).
    #[arg(long, default_value = "250ms", value_parser = parse_duration)]
    pub bad_every: Duration,

    /// Idle connections held from the start.
    #[arg(long, default_value_t = 50)]
    pub idle: u32,

    /// Stalled connections in the storm (half a stalled line, half a stalled HTTP body).
    #[arg(long, default_value_t = 200)]
    pub stalled: u32,

    /// Slow-body attackers in the storm: each declares a 64 MiB `/api/put`
    /// body, trickles it a byte at a time and reconnects when cut off.
    #[arg(long, default_value_t = 8)]
    pub slow_bodies: u32,

    /// How often a slow-body attacker sends a byte.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub trickle_every: Duration,

    /// Fail when a slow body holds its connection longer than this.
    #[arg(long, value_parser = parse_duration)]
    pub slow_body_max_hold: Option<Duration>,

    /// A fresh-client probe this often during the storm.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub probe_every: Duration,

    /// Timeout of every wait (acknowledgements, answers, connects).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Timeout of a query.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub query_timeout: Duration,

    /// Server process id: sample its RSS (and check it is alive at the end).
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Fail when the server's RSS passes this many MiB.
    #[arg(long)]
    pub max_rss_mb: Option<u64>,

    /// Do not fail because of errors (unexpected answers); still report them.
    #[arg(long)]
    pub allow_errors: bool,

    /// Seed of the value generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// No progress display.
    #[arg(long)]
    pub no_progress: bool,
}
