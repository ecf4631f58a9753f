//! What a line-protocol connection keeps between reads: its reply queue,
//! its cache of the series it wrote (`series_cache`: a repeated series
//! skips tag parsing and validation and reaches the engine already
//! resolved), the points of the current read, and the log positions of
//! written batches not yet durable.
//!
//! Points of a read are written as one batch, on a blocking thread (a new
//! series may need UID assignments and index rows: storage I/O); the
//! connection reads on while up to `server.telnet_batches_in_flight`
//! batches wait to be durable (the WAL's group commit then covers
//! several), and a command is answered only once every point before it is
//! durable: a client that sends `version` (or any command) after its puts
//! knows they survive a crash when the answer comes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::RollupPoint;

use super::replies::Replies;
use crate::engine::{EngineError, PointError};
use crate::server::Ctx;
use crate::server::limits::InflightGuard;
use crate::server::series_cache::SeriesCache;
use crate::server::write::{PointSink, Protocol, WriteBatch, Written};
use crate::uid::UidError;

/// The origin of a point in a line-protocol batch: an OpenTSDB `put`.
pub const FROM_PUT: u32 = 0;
/// The origin of a point in a line-protocol batch: an InfluxDB line.
pub const FROM_INFLUX: u32 = 1;
/// The origin of a point in a line-protocol batch: a `rollup` line of a raw
/// pre-aggregate (a point of its `_aggregate` series).
pub const FROM_ROLLUP: u32 = 2;

/// A batch is written once it holds this many points.
pub const BATCH_POINTS: usize = 8192;
/// ... or once it holds the lines of this many input bytes: the bound on
/// what a batch's named points (owned copies of their lines) hold beyond
/// the read buffer, which the in-flight memory bound charges.
pub const BATCH_INPUT_BYTES: usize = 256 << 10;

pub struct Session {
    pub replies: Replies,
    /// The series this connection has written (it travels with each batch
    /// to the blocking write and back).
    pub cache: SeriesCache,
    /// Points read and not yet written (owned: written on a blocking
    /// thread).
    pub batch: WriteBatch<'static>,
    /// `rollup` lines read and not yet written, checked.
    pub rollups: Vec<RollupPoint<'static>>,
    /// Input bytes whose lines the batch holds.
    batch_input: usize,
    /// The in-flight memory charges of the reads whose lines the batch
    /// holds (owned copies), returned once it is written.
    pub held: Vec<InflightGuard>,
    /// Log positions of written batches not known to be durable yet,
    /// oldest first.
    in_flight: VecDeque<u64>,
    max_in_flight: usize,
    /// Lines of the connection so far (InfluxDB errors name them).
    pub line_no: u64,
    /// The token the connection presented (`auth`), with access control on,
    /// and the token file's generation it was last checked against.
    pub caller: Option<crate::auth::Verified>,
    pub caller_checked: u64,
    /// `Ctx::names_epoch` when the series cache was last valid.
    pub names_epoch: u64,
}

impl Session {
    pub fn new(ctx: &Ctx, replies: Replies) -> Self {
        Self {
            replies,
            cache: SeriesCache::new(Arc::clone(&ctx.series_cache_budget), ctx.text_digest),
            batch: WriteBatch::new(Protocol::Telnet),
            rollups: Vec::new(),
            batch_input: 0,
            held: Vec::new(),
            in_flight: VecDeque::new(),
            max_in_flight: ctx.config.server.telnet_batches_in_flight.max(1),
            line_no: 0,
            caller: None,
            caller_checked: 0,
            names_epoch: ctx.names_epoch.load(std::sync::atomic::Ordering::Acquire),
        }
    }

    /// True if nothing read waits to be written (points or `rollup` lines).
    pub fn is_idle(&self) -> bool {
        self.batch.is_empty() && self.rollups.is_empty()
    }

    /// Writes the batch once it is full.
    pub async fn flush_if_full(&mut self, ctx: &Arc<Ctx>) {
        if self.batch.len() + self.rollups.len() >= BATCH_POINTS {
            self.flush(ctx).await;
        }
    }

    /// Counts `bytes` of input whose lines went to the batch; writes the
    /// batch once those are many.
    pub async fn took_input(&mut self, ctx: &Arc<Ctx>, bytes: usize) {
        self.batch_input += bytes;
        if self.batch_input >= BATCH_INPUT_BYTES {
            self.flush(ctx).await;
        }
    }

    /// Writes the batch (not waiting for it to be durable: see
    /// [`Session::settle`]); refusals become error lines.
    pub async fn flush(&mut self, ctx: &Arc<Ctx>) {
        self.batch_input = 0;
        // Returned when the batch has been written (the end of this call).
        let _held = std::mem::take(&mut self.held);
        if !self.rollups.is_empty() {
            self.flush_rollups(ctx).await;
        }
        if self.batch.is_empty() {
            return;
        }
        let all_influx = self.batch.origins().iter().all(|&o| o == FROM_INFLUX);
        // The line protocol has no way to say "retry later": while storage
        // is behind, hold the batch and stop reading, so TCP slows the
        // client down.
        let mut backoff = Duration::from_millis(10);
        let res = loop {
            match self.write(ctx).await {
                Err(EngineError::Overloaded { .. } | EngineError::TooManySeries { .. }) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                other => break other,
            }
        };
        match res {
            Ok(written) => self.written(ctx, written).await,
            Err(e) => {
                let word = if all_influx { "influx" } else { "put" };
                self.replies.error(format!("{word}: storage error: {e}"));
                self.batch = WriteBatch::new(Protocol::Telnet);
            }
        }
    }

    /// Writes the `rollup` lines read (on a blocking thread: rolled-up
    /// values are made durable in the rollup table before it returns);
    /// refusals become error lines, pre-aggregates wait in flight as puts.
    async fn flush_rollups(&mut self, ctx: &Arc<Ctx>) {
        let engine = Arc::clone(&ctx.engine);
        let rollups = std::mem::take(&mut self.rollups);
        let res = tokio::task::spawn_blocking(move || engine.write_rollups(&rollups))
            .await
            .unwrap_or_else(|e| Err(EngineError::Damaged(format!("write task failed: {e}"))));
        match res {
            Ok(receipt) => {
                Protocol::Rollup.count(&ctx.metrics, receipt.accepted);
                for (_, e) in &receipt.errors {
                    self.replies.error(refusal_line("rollup", e));
                }
                if receipt.lsn > 0 {
                    self.in_flight.push_back(receipt.lsn);
                    self.bound(ctx).await;
                }
            }
            Err(e) => self.replies.error(format!("rollup: storage error: {e}")),
        }
    }

    /// One write of the batch on a blocking thread, the cache going with it.
    async fn write(&mut self, ctx: &Arc<Ctx>) -> Result<Written, EngineError> {
        let engine = Arc::clone(&ctx.engine);
        let mut batch = std::mem::take(&mut self.batch);
        let fresh = SeriesCache::new(Arc::clone(&ctx.series_cache_budget), ctx.text_digest);
        let cache = std::mem::replace(&mut self.cache, fresh);
        let joined = tokio::task::spawn_blocking(move || {
            let res = batch.write(&engine, cache.refs());
            (batch, cache, res)
        })
        .await;
        match joined {
            Ok((batch, cache, res)) => {
                self.batch = batch;
                self.cache = cache;
                res
            }
            Err(e) => Err(EngineError::Damaged(format!("write task failed: {e}"))),
        }
    }

    async fn written(&mut self, ctx: &Arc<Ctx>, written: Written) {
        for refused in &written.errors {
            let e = &refused.error;
            let word = match refused.origin {
                FROM_INFLUX => "influx",
                FROM_ROLLUP => "rollup",
                _ => "put",
            };
            self.replies.error(refusal_line(word, e));
        }
        for (index, series) in written.refreshed {
            self.cache.refresh(index, series);
        }
        for (key, series) in written.new_series {
            self.cache.insert(key, series);
        }
        if written.lsn > 0 {
            self.in_flight.push_back(written.lsn);
            self.bound(ctx).await;
        }
    }

    /// Waits until every point written so far is durable (before a command
    /// is answered); a failure becomes an error line.
    pub async fn settle(&mut self, ctx: &Ctx) {
        let Some(&lsn) = self.in_flight.back() else {
            return;
        };
        self.in_flight.clear();
        if let Err(e) = ctx.engine.wait_durable(lsn).await {
            self.replies.error(format!("put: storage error: {e}"));
        }
    }

    /// Keeps at most `max_in_flight` batches waiting: waits for the oldest
    /// ones beyond that (the backpressure on a client that outruns fsync).
    async fn bound(&mut self, ctx: &Ctx) {
        while self.in_flight.len() > self.max_in_flight {
            let Some(lsn) = self.in_flight.pop_front() else {
                break;
            };
            if let Err(e) = ctx.engine.wait_durable(lsn).await {
                self.in_flight.clear();
                self.replies.error(format!("put: storage error: {e}"));
            }
        }
    }
}

/// The error line of a point the engine refused, after `word` (the
/// command: `put`, `rollup`, `influx`).
fn refusal_line(word: &str, e: &PointError) -> String {
    match e {
        PointError::Uid(u @ UidError::NoSuchName { .. }) => format!("{word}: unknown metric: {u}"),
        PointError::NoSuchRollup(_) => format!("{word}: No such rollup: {e}"),
        PointError::Uid(_) | PointError::Timestamp(_) | PointError::Rollup(_) => {
            format!("{word}: illegal argument: {e}")
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.replies.close();
    }
}
