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
//! What a run is told is in [`options`], what a connection task gets and
//! gives back in [`connection`], the optional pacing for soak-style runs in
//! [`pacing`].

pub mod connection;
pub mod http;
pub mod options;
pub mod pacing;
pub mod payload;
pub mod tcp;

pub use connection::{ConnResult, MAX_ERROR_SAMPLES};
pub use options::{HttpTarget, RunOptions, TcpAck};
pub use pacing::Pacer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use self::connection::ConnCtx;
use self::pacing::Lockstep;
use self::payload::{PregenMode, Production, Share, Source, pregenerate};
use crate::error::BenchError;
use crate::http::HttpClient;
use crate::net::connect_stream;
use crate::workload::{Workload, partition_hosts};

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
    let sources: Vec<Source> = if prep.pregenerated {
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

    let ctx = |id: usize, start: Instant| ConnCtx {
        id,
        hosts: shares[id].hosts.len(),
        start,
        pacer: Pacer::new(start, per_conn_rate, opts.max_time),
        lockstep: lockstep.clone(),
        progress: progress.clone(),
        opts: Arc::clone(&opts),
    };
    let result = if opts.protocol.is_tcp() {
        let mut streams = Vec::with_capacity(shares.len());
        for _ in &shares {
            streams.push(connect_stream(&opts.addr, opts.connect_timeout).await?);
        }
        drive(streams, sources, ctx, tcp::run_connection).await
    } else {
        let mut clients = Vec::with_capacity(shares.len());
        for _ in &shares {
            clients.push(HttpClient::connect(&opts.addr, opts.connect_timeout).await?);
        }
        drive(clients, sources, ctx, http::run_connection).await
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

/// Starts the clock, then every connection on its payloads, and waits for
/// them all; connections are opened beforehand so that connecting is not
/// timed.
async fn drive<C, F>(
    conns: Vec<C>,
    sources: Vec<Source>,
    ctx: impl Fn(usize, Instant) -> ConnCtx,
    run: impl Fn(ConnCtx, C, Source) -> F,
) -> Result<Vec<ConnResult>, BenchError>
where
    F: Future<Output = Result<ConnResult, BenchError>> + Send + 'static,
{
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (id, (conn, source)) in conns.into_iter().zip(sources).enumerate() {
        tasks.spawn(run(ctx(id, start), conn, source));
    }
    join_all(tasks).await
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
