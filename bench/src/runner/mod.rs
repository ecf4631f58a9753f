//! Sending generated load to a server and measuring it.
//!
//! A run partitions the workload's hosts across connections (each series is
//! written by exactly one connection, in time order), prepares the payloads
//! ([`payload`]), opens every connection (a failure aborts the run before
//! anything is sent), then starts the clock and drives all connections
//! concurrently. The clock of a connection stops only when the server has
//! acknowledged everything it sent: the `version` round trip (or the server's
//! close) on TCP ([`tcp`]), the responses on HTTP ([`http`]).
//!
//! Optional pacing for soak-style runs: a rate limit, a wall-clock limit, and
//! a bound on how far apart in data time the connections may drift
//! ([`Lockstep`], needed by Prometheus, which refuses samples older than its
//! head's window).

pub mod http;
pub mod payload;
pub mod tcp;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use self::payload::{PregenMode, Production, Share, Source, pregenerate};
use crate::error::BenchError;
use crate::net::connect;
use crate::protocol::{EncodeOptions, Protocol};
use crate::workload::{Workload, partition_hosts};

/// How many server error replies each connection keeps verbatim.
pub const MAX_ERROR_SAMPLES: usize = 5;

/// How a TCP connection learns that the server processed everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpAck {
    /// Send `version` and wait for the reply (OpenTSDB, hourglass).
    Version,
    /// Half-close and wait for the server to close (servers without `version`,
    /// e.g. VictoriaMetrics's OpenTSDB listener).
    Close,
}

/// The HTTP request shape of an HTTP protocol.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// Path and query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
}

/// Transport settings of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub addr: String,
    pub protocol: Protocol,
    pub connections: u32,
    /// Points per payload.
    pub batch: usize,
    pub encode: EncodeOptions,
    pub connect_timeout: Duration,
    /// TCP: how long to wait for the acknowledgement; HTTP: per request.
    pub reply_timeout: Duration,
    pub tcp_ack: TcpAck,
    pub http: Option<HttpTarget>,
    /// Send at most this many points (in global generation order).
    pub points: Option<u64>,
    /// Total points per second (spread evenly over connections).
    pub rate: Option<f64>,
    /// Stop sending after this long.
    pub max_time: Option<Duration>,
    /// Keep connections within this much data time of each other.
    pub max_skew_ms: Option<i64>,
    pub pregen: PregenMode,
    pub pregen_max_bytes: u64,
    pub progress: bool,
}

/// What one connection did.
#[derive(Debug, Clone, Default)]
pub struct ConnResult {
    pub id: usize,
    pub hosts: usize,
    /// Points sent and acknowledged (HTTP: in 2xx responses).
    pub points: u64,
    /// Points in requests the server refused (HTTP non-2xx).
    pub points_refused: u64,
    pub bytes: u64,
    /// From the common start until the server confirmed the last point.
    pub elapsed: Duration,
    /// TCP: error lines; HTTP: non-2xx responses.
    pub errors: u64,
    pub first_errors: Vec<String>,
    pub server_version: Option<String>,
    /// HTTP: requests and their statuses.
    pub requests: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub reconnects: u64,
    /// Time spent waiting for the generator (streaming only).
    pub generator_wait: Duration,
}

/// How payloads were prepared.
#[derive(Debug, Clone, Default)]
pub struct PrepInfo {
    pub pregenerated: bool,
    pub seconds: f64,
    /// Bytes of pre-generated payloads (0 when streaming).
    pub bytes: u64,
    /// The estimate that decided (bytes).
    pub estimated_bytes: u64,
}

/// What a whole run did.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Per connection, ordered by id.
    pub connections: Vec<ConnResult>,
    /// From the common start until the last connection finished.
    pub elapsed: Duration,
    pub prep: PrepInfo,
    /// Stopped by `--max-time` before the workload was exhausted.
    pub stopped_early: bool,
}

/// Per-connection pacing: rate limit and deadline. Kept on tokio's clock
/// (not `std::time`) so that tests can run it on a paused clock.
#[derive(Debug, Clone)]
pub struct Pacer {
    start: tokio::time::Instant,
    /// Points per second for this connection.
    rate: Option<f64>,
    deadline: Option<tokio::time::Instant>,
}

impl Pacer {
    pub fn new(start: Instant, rate: Option<f64>, max_time: Option<Duration>) -> Self {
        let start = tokio::time::Instant::from_std(start);
        Pacer {
            start,
            rate,
            deadline: max_time.map(|d| start + d),
        }
    }

    /// Waits until `sent` points are allowed by the rate; false once the
    /// deadline has passed (stop sending).
    pub async fn admit(&self, sent: u64) -> bool {
        if let Some(rate) = self.rate {
            let due = self.start + Duration::from_secs_f64(sent as f64 / rate);
            if let Some(deadline) = self.deadline
                && due >= deadline
            {
                tokio::time::sleep_until(deadline).await;
                return false;
            }
            tokio::time::sleep_until(due).await;
        }
        self.deadline
            .is_none_or(|d| tokio::time::Instant::now() < d)
    }
}

/// Keeps connections within `skew_ms` of data time of each other.
#[derive(Debug)]
pub struct Lockstep {
    progress: Vec<AtomicI64>,
    skew_ms: i64,
}

impl Lockstep {
    pub fn new(connections: usize, skew_ms: i64) -> Self {
        Lockstep {
            progress: (0..connections).map(|_| AtomicI64::new(i64::MIN)).collect(),
            skew_ms,
        }
    }

    /// Records that connection `me` is about to send data from `ts_ms` and
    /// waits while that is more than the skew ahead of the slowest one. The
    /// slowest connection never waits, so this cannot deadlock.
    pub async fn wait(&self, me: usize, ts_ms: i64) {
        self.progress[me].store(ts_ms, Ordering::SeqCst);
        loop {
            let min = self
                .progress
                .iter()
                .map(|p| p.load(Ordering::SeqCst))
                // A connection that has not sent yet holds nobody back.
                .filter(|&p| p != i64::MIN)
                .min()
                .unwrap_or(i64::MAX);
            if ts_ms <= min.saturating_add(self.skew_ms) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Connection `me` has nothing more to send.
    pub fn done(&self, me: usize) {
        self.progress[me].store(i64::MAX, Ordering::SeqCst);
    }
}

/// What every connection task shares.
#[derive(Debug, Clone)]
pub struct ConnCtx {
    pub id: usize,
    pub hosts: usize,
    pub start: Instant,
    pub pacer: Pacer,
    pub lockstep: Option<Arc<Lockstep>>,
    pub progress: ProgressBar,
    pub opts: Arc<RunOptions>,
}

/// Sends the workload to the server and measures it.
pub async fn run_ingest(
    workload: Arc<Workload>,
    opts: &RunOptions,
) -> Result<RunResult, BenchError> {
    let total = opts.points.unwrap_or(u64::MAX).min(workload.total_points());
    let shares: Vec<Share> = partition_hosts(workload.spec.hosts, opts.connections)
        .into_iter()
        .map(|hosts| Share {
            points: workload.share_of_first(&hosts, total),
            hosts,
        })
        .collect();
    let production = Arc::new(Production {
        workload: Arc::clone(&workload),
        protocol: opts.protocol,
        encode: opts.encode,
        batch: opts.batch,
    });

    let mut prep = PrepInfo::default();
    let prep_start = Instant::now();
    prep.estimated_bytes = production.estimate_bytes(&shares);
    prep.pregenerated = match opts.pregen {
        PregenMode::On => true,
        PregenMode::Off => false,
        PregenMode::Auto => prep.estimated_bytes <= opts.pregen_max_bytes,
    };
    let mut sources: Vec<Source> = if prep.pregenerated {
        let bar = crate::progress::spinner(opts.progress, "pre-generating payloads");
        let sets = tokio::task::block_in_place(|| pregenerate(&production, &shares));
        bar.finish_and_clear();
        prep.bytes = sets.iter().flatten().map(|p| p.body.len() as u64).sum();
        sets.into_iter()
            .map(|s| Source::Pregen(s.into_iter()))
            .collect()
    } else {
        shares
            .iter()
            .map(|s| Source::stream(Arc::clone(&production), s.clone()))
            .collect()
    };
    prep.seconds = prep_start.elapsed().as_secs_f64();

    let opts = Arc::new(opts.clone());
    let progress = crate::progress::bar(opts.progress, total, "points");
    let lockstep = opts
        .max_skew_ms
        .map(|skew| Arc::new(Lockstep::new(shares.len(), skew)));
    let per_conn_rate = opts.rate.map(|r| r / shares.len() as f64);

    let result = if opts.protocol.is_tcp() {
        let mut streams = Vec::with_capacity(shares.len());
        for _ in &shares {
            streams.push(connect(&opts.addr, opts.connect_timeout).await?);
        }
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (id, (stream, source)) in streams.into_iter().zip(sources.drain(..)).enumerate() {
            let ctx = ConnCtx {
                id,
                hosts: shares[id].hosts.len(),
                start,
                pacer: Pacer::new(start, per_conn_rate, opts.max_time),
                lockstep: lockstep.clone(),
                progress: progress.clone(),
                opts: Arc::clone(&opts),
            };
            tasks.spawn(tcp::run_connection(ctx, stream, source));
        }
        join_all(tasks).await
    } else {
        let mut clients = Vec::with_capacity(shares.len());
        for _ in &shares {
            clients.push(crate::http::HttpClient::connect(&opts.addr, opts.connect_timeout).await?);
        }
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (id, (client, source)) in clients.into_iter().zip(sources.drain(..)).enumerate() {
            let ctx = ConnCtx {
                id,
                hosts: shares[id].hosts.len(),
                start,
                pacer: Pacer::new(start, per_conn_rate, opts.max_time),
                lockstep: lockstep.clone(),
                progress: progress.clone(),
                opts: Arc::clone(&opts),
            };
            tasks.spawn(http::run_connection(ctx, client, source));
        }
        join_all(tasks).await
    };
    progress.finish_and_clear();
    let connections = result?;
    let elapsed = connections
        .iter()
        .map(|c| c.elapsed)
        .max()
        .unwrap_or_default();
    let sent: u64 = connections
        .iter()
        .map(|c| c.points + c.points_refused)
        .sum();
    Ok(RunResult {
        connections,
        elapsed,
        prep,
        stopped_early: sent < total,
    })
}

/// Waits for every connection; the first failure aborts the others (the
/// JoinSet is dropped on return).
async fn join_all(
    mut tasks: tokio::task::JoinSet<Result<ConnResult, BenchError>>,
) -> Result<Vec<ConnResult>, BenchError> {
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let result =
            joined.map_err(|e| BenchError::Protocol(format!("connection task failed: {e}")))??;
        out.push(result);
    }
    out.sort_by_key(|c| c.id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn pacer_limits_rate_and_stops_at_deadline() {
        let start = tokio::time::Instant::now();
        let pacer = Pacer::new(start.into_std(), Some(1000.0), Some(Duration::from_secs(2)));
        assert!(pacer.admit(0).await);
        assert!(pacer.admit(1000).await);
        assert!(start.elapsed() >= Duration::from_secs(1));
        assert!(!pacer.admit(5000).await);
        let free = Pacer::new(Instant::now(), None, None);
        assert!(free.admit(u64::MAX).await);
    }

    #[tokio::test(start_paused = true)]
    async fn lockstep_holds_the_fastest_back() {
        let l = Arc::new(Lockstep::new(2, 100));
        l.wait(0, 0).await;
        l.wait(1, 50).await;
        let ahead = {
            let l = Arc::clone(&l);
            tokio::spawn(async move { l.wait(1, 500).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!ahead.is_finished());
        l.wait(0, 450).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(ahead.is_finished());
        l.done(0);
        l.wait(1, 10_000).await;
    }
}
