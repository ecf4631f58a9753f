//! The storage engine above the backend: resolves series to UIDs and row
//! keys, logs points in the write-ahead log, holds open hours in the
//! compressed series head, flushes closed hours to the store as native
//! cells, checkpoints the head, and reads head and store together.
//!
//! * [`head`] — the series registry and the open hours (compressed chunks).
//! * `pending` — writes logged but not yet durable, in log order.
//! * [`wal`] — the write-ahead log (segments, group commit, record schema, publishing what is durable).
//! * [`flush`] — closed hours (and, under memory pressure, the oldest
//!   ones) → one native cell per row → the store.
//! * [`checkpoint`] — head snapshots that let old WAL segments go.
//! * [`read`] — queries: one scan per salt bucket, merged with the head.
//! * [`open`] — opening the backend, the UID table, and on the embedded
//!   backend the data directory, the head checkpoint and the WAL replay.
//! * [`write`] — the write path: series resolution (cache, UIDs, or a
//!   series the caller resolved before), the WAL frame, the head inserts.
//! * [`shared`] — the write path and the packing of rows on a shared store
//!   (Cloud Bigtable), where the store, not a local log, makes a point
//!   durable.
//! * [`index`] — the series index (one `Meta` row per TSUID) behind
//!   `/api/search/lookup`, kept crash-safe relative to the WAL.
//! * [`cardinality`] — series counts per metric, tag key and value, from the index.
//! * [`annotations`] — notes in data rows, as OpenTSDB stores them.
//! * [`last`] — the newest point of a series (`/api/query/last`) by point
//!   reads of hour rows.
//! * [`delete`] — point deletes (WAL record, head, store tombstones).
//! * [`retention`] — TTLs per metric.
//! * [`rollup`] — rollup tiers: computed as hours are flushed, read by
//!   downsampled queries in place of the points.
//! * [`row_compactor`] — how the store's compaction merges a row's cells.
//! * [`clock`] — wall-clock time, replaceable in tests.
//!
//! Write path: [`Engine::write`] resolves each point's series (a cache hit
//! is one hash lookup on the series text; a miss fetches or assigns UIDs
//! and fsyncs new assignments), then, under the head lock, appends one WAL
//! frame for the whole batch and queues its points (`pending`); the WAL's
//! publishing thread inserts them into the head once the frame is durable, before
//! it wakes the writer. [`Engine::wait_durable`] waits until then: that is
//! the acknowledgement, and a point is visible exactly when it is durable.
//!
//! A point is never written to a table file before its hour has closed
//! (`head.flush_grace_secs` after the hour ends) unless the head passes its
//! memory bound; a point that arrives for an hour already flushed becomes a
//! second cell of the row, merged by compaction.

mod annotations;
pub mod cardinality;
pub mod checkpoint;
pub mod clock;
mod delete;
mod flush;
mod fresh_uids;
pub mod head;
mod index;
mod last;
mod open;
mod pending;
mod read;
pub mod retention;
pub mod rollup;
mod row_compactor;
mod shared;
mod slot_index;
mod slots;
pub mod snapshot;
pub mod wal;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub use self::annotations::AnnotationError;
pub use self::clock::{Clock, SystemClock};
use self::head::{Head, Take};
pub use self::index::IndexError;
pub use self::last::LastError;
use self::retention::Retention;
use self::wal::{Wal, WalError};
pub use self::write::{Entry, SeriesRef, WriteReceipt};
use crate::codec::KeyLayout;
use crate::metrics::Metrics;
use crate::storage::{StorageError, Store};
use crate::uid::{UidError, UidKind, Uids};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Log(#[from] crate::logfile::LogError),
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Uid(UidError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(
        "Please throttle writes: the head holds {bytes} bytes of points waiting to be written to storage (limit {limit})"
    )]
    Overloaded { bytes: usize, limit: usize },
    /// A write naming series the head does not hold while it holds
    /// [`Engine::series_limit`] series: the flusher is behind writing the
    /// silent ones out (`head.max_series`).
    #[error(
        "Please throttle writes: the head holds {series} series, at its limit of {limit} (head.max_series and a quarter), while silent ones are written out"
    )]
    TooManySeries { series: usize, limit: usize },
    #[error("data directory {path} is in use by another hourglass process")]
    Locked { path: PathBuf },
    #[error("cannot use data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Damaged(String),
    #[error("no snapshot named {0}")]
    NoSuchSnapshot(String),
    #[error("{0:?} is not a file of the snapshot")]
    BadSnapshotPath(String),
}

/// Why one point of a batch was not written.
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    #[error(transparent)]
    Uid(#[from] UidError),
    #[error("bad timestamp={0}: after 2106-02-07T06:28:15Z, the latest time a row key can hold")]
    Timestamp(u64),
    /// A rollup value the configuration does not take (OpenTSDB's text).
    #[error("{0}")]
    Rollup(String),
    /// A rollup of an interval no table is configured for (OpenTSDB's
    /// `NoSuchRollupForIntervalException`).
    #[error("No rollups configured for the interval: {0}")]
    NoSuchRollup(String),
}

/// One internal statistic: name (without the `tsd.` prefix), value, tags.
pub type Stat = (String, i64, Vec<(&'static str, String)>);

/// Settings the engine reads at run time.
#[derive(Debug, Clone)]
struct Settings {
    flush_grace_secs: i64,
    flush_interval: Duration,
    compaction_interval: Duration,
    checkpoint_bytes: u64,
    head_max_bytes: usize,
    max_series: usize,
    idle_flush_secs: u32,
}

/// What one round of head upkeep does with closed hours.
#[derive(Debug, Clone, Copy)]
enum ClosedHours {
    /// Nothing (a wake between two looks: memory or series pressure, a
    /// checkpoint).
    Skip,
    /// Writes them all out.
    All,
    /// Writes them out, but the newest hour of a series still taking
    /// points waits ([`head::Take::Closed`]).
    DeferWritten,
}

#[derive(Debug)]
struct LocalLog {
    wal: Arc<Wal>,
    head_dir: PathBuf,
    _lock_file: std::fs::File,
}

#[derive(Debug)]
pub struct Engine {
    layout: KeyLayout,
    data_dir: PathBuf,
    store: Arc<dyn Store>,
    uids: Arc<Uids>,
    /// The embedded backend's log; `None` on a shared store, where every
    /// batch is written to the store before it is acknowledged and the
    /// head is a cache of recent points (and of the rows to pack).
    log: Option<LocalLog>,
    head: Mutex<Head>,
    /// Digests of series texts, by which the head finds the series a
    /// write names ([`Head::id_of_text`]).
    series_digest: crate::hashing::TextDigest,
    flush_lock: Mutex<()>,
    /// UIDs this process assigned lately (`fresh_uids`).
    fresh_uids: Mutex<fresh_uids::FreshUids>,
    retention: Arc<Retention>,
    /// Rollup tiers (none on a shared store or when `[rollup]` is off).
    tiers: rollup::Tiers,
    clock: Arc<dyn Clock>,
    settings: Settings,
    wake: (Mutex<bool>, Condvar),
    checkpoint_requested: AtomicBool,
    /// The flusher was woken because the registry passed
    /// `head.max_series`, and has not brought it back yet: writers wake it
    /// once, not on every batch.
    series_pressure: AtomicBool,
    /// The head opened [`head::CLOSED_ROWS_LOOK`] rows in closed hours
    /// since the flusher last looked for them: it looks at once.
    closed_look: AtomicBool,
    shutting_down: AtomicBool,
    metrics: Metrics,
}

impl Engine {
    /// Starts the background threads: flushing closed hours (and
    /// checkpoints), and compaction.
    pub fn start_background(self: &Arc<Self>) -> std::io::Result<Vec<std::thread::JoinHandle<()>>> {
        let me = Arc::clone(self);
        let flusher = std::thread::Builder::new()
            .name("hourglass-flush".into())
            .spawn(move || me.flush_loop())?;
        let me = Arc::clone(self);
        let compactor = std::thread::Builder::new()
            .name("hourglass-compact".into())
            .spawn(move || me.compaction_loop())?;
        Ok(vec![flusher, compactor])
    }

    fn fresh_uids(&self) -> MutexGuard<'_, fresh_uids::FreshUids> {
        self.fresh_uids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn head(&self) -> MutexGuard<'_, Head> {
        self.head
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn uids(&self) -> &Uids {
        &self.uids
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn series_count(&self) -> usize {
        self.head().series_count()
    }

    /// Head memory in bytes and points (for stats and tests).
    pub fn head_usage(&self) -> (usize, usize, usize) {
        let h = self.head();
        (h.bytes, h.points, h.hours)
    }

    fn now_secs(&self) -> i64 {
        self.clock.now_ms().div_euclid(1000)
    }

    /// Updates the head gauges and wakes the flusher once when the
    /// registry passes its bound (it writes out and forgets the longest
    /// silent series: `relieve_series_pressure`); returns the head's bytes.
    fn note_head(&self, head: &mut Head) -> usize {
        self.metrics.head_points.set(head.points as i64);
        self.metrics.head_series.set(head.series_count() as i64);
        self.metrics.head_bytes.set(head.bytes as i64);
        self.metrics
            .series_created
            .inc_by(head.created - head.created_counted);
        head.created_counted = head.created;
        if head.series_count() > self.settings.max_series
            && !self.series_pressure.swap(true, Ordering::AcqRel)
        {
            self.wake_flusher();
        }
        head.closed_before = self.closed_before();
        let interval = u32::try_from(self.settings.flush_interval.as_secs()).unwrap_or(u32::MAX);
        if head.closed_rows >= head::CLOSED_ROWS_LOOK
            && head.newest_secs >= head.looked_secs.saturating_add(interval)
            && !self.closed_look.swap(true, Ordering::AcqRel)
        {
            self.wake_flusher();
        }
        head.bytes
    }

    /// Bytes in the write-ahead log (0 on a shared store: it has none).
    fn wal_bytes(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.wal.total_bytes())
    }

    /// The write-ahead log, on the embedded backend.
    pub fn wal(&self) -> Option<&Arc<Wal>> {
        self.log.as_ref().map(|l| &l.wal)
    }

    /// Waits until a write's log position is durable under the fsync
    /// policy (at once on a shared store: its writes are durable when they
    /// return).
    pub async fn wait_durable(&self, lsn: u64) -> Result<(), EngineError> {
        if let (Some(log), true) = (&self.log, lsn > 0) {
            log.wal.wait_durable(lsn).await?;
        }
        Ok(())
    }

    fn wake_flusher(&self) {
        let (m, cv) = &self.wake;
        *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        cv.notify_all();
    }

    pub fn request_checkpoint(&self) {
        self.checkpoint_requested.store(true, Ordering::Release);
        self.wake_flusher();
    }

    /// Sleeps up to `d` or until woken; false once shutting down.
    fn idle(&self, d: Duration) -> bool {
        let (m, cv) = &self.wake;
        let mut woken = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*woken && !self.shutting_down.load(Ordering::Acquire) {
            woken = cv
                .wait_timeout(woken, d)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        *woken = false;
        !self.shutting_down.load(Ordering::Acquire)
    }

    fn flush_loop(self: Arc<Self>) {
        // Work first: hours that closed while the server was down (or that
        // the WAL replay brought back) go out right away. Closed hours are
        // looked for every `flush_interval`; a wake between (memory or
        // series pressure, a checkpoint) does only what it was woken for:
        // in a backfill every hour is closed, and writing out the live
        // series at every wake would give each row many cells. A backfill
        // that opened many rows in closed hours has them looked for once
        // the interval has passed in data time (`closed_look`): each look
        // writes out the series that took no point since the one before,
        // so series that stop leave memory as the backfill goes rather
        // than all at the interval.
        let mut closed_due = std::time::Instant::now();
        loop {
            let now = std::time::Instant::now();
            // Cleared by the look itself, under the head lock with the
            // count that set it (`flush_closed_with`): cleared here, a
            // writer could set it again from the count not yet reset, and
            // a second look right after the first would take every series
            // written before the first as stopped.
            let asked = self.closed_look.load(Ordering::Acquire);
            let closed = if now >= closed_due || asked {
                closed_due = now + self.settings.flush_interval;
                ClosedHours::DeferWritten
            } else {
                ClosedHours::Skip
            };
            if let Err(e) = self.maintain_head_with(closed) {
                tracing::error!(error = %e, "head flush failed; the points stay in memory and in the log and will be retried");
            }
            let wait = closed_due.saturating_duration_since(std::time::Instant::now());
            if !self.idle(wait) {
                return;
            }
        }
    }

    /// Compaction runs on its own thread, so a flush never waits for it.
    fn compaction_loop(self: Arc<Self>) {
        let step = Duration::from_millis(100);
        loop {
            if let Err(e) = self.compact(false) {
                tracing::error!(error = %e, "compaction failed; it will be retried");
            }
            if let Err(e) = self.purge_tiers(false) {
                tracing::error!(error = %e, "deleting rollup values past their TTL failed; it will be retried");
            }
            let mut slept = Duration::ZERO;
            while slept < self.settings.compaction_interval {
                if self.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                if self.store.maintenance_due() {
                    break;
                }
                std::thread::sleep(step);
                slept += step;
            }
        }
    }

    /// One round of head upkeep: closed hours, memory pressure, checkpoint.
    pub fn maintain_head(&self) -> Result<(), EngineError> {
        self.maintain_head_with(ClosedHours::All)
    }

    /// Sets the gauges kept out of the write path: once a flush round and
    /// at each `/metrics` scrape, not per write (the registry's bytes sum
    /// over the metrics).
    pub fn refresh_gauges(&self) {
        self.metrics
            .registry_bytes
            .set(self.head().registry_bytes() as i64);
    }

    /// [`Engine::maintain_head`], looking for closed hours as `closed`
    /// says.
    fn maintain_head_with(&self, closed: ClosedHours) -> Result<(), EngineError> {
        match closed {
            ClosedHours::Skip => {}
            ClosedHours::All => {
                self.flush_closed()?;
            }
            ClosedHours::DeferWritten => {
                self.flush_closed_with(true)?;
            }
        }
        let (bytes, series) = {
            let h = self.head();
            (h.bytes, h.series_count())
        };
        if bytes > self.settings.head_max_bytes {
            let target = bytes - self.settings.head_max_bytes * 4 / 5;
            self.flush(Take::Bytes(target))?;
        }
        if series > self.settings.max_series {
            self.relieve_series_pressure()?;
        }
        self.flush_idle()?;
        self.refresh_gauges();
        if self.checkpoint_requested.swap(false, Ordering::AcqRel)
            || self.wal_bytes() > self.settings.checkpoint_bytes
        {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Series the head may hold before writes naming new ones are refused
    /// (`EngineError::TooManySeries`): past `head.max_series` the flusher
    /// writes the silent ones out, and this holds memory to the bound when
    /// series arrive faster than it can (a backfill of churned series on
    /// a small machine).
    pub(super) fn series_limit(&self) -> usize {
        self.settings.max_series + self.settings.max_series / 4
    }

    /// `Some((series, limit))` while the head holds as many series as it
    /// may ([`Engine::series_limit`]), waking the flusher: a write naming
    /// a series the head does not hold is refused then, and a caller with
    /// a costly body to decode (remote write) refuses it before decoding
    /// rather than after.
    pub fn series_at_limit(&self) -> Option<(usize, usize)> {
        let series = self.head().series_count();
        let limit = self.series_limit();
        if series < limit {
            return None;
        }
        self.wake_flusher();
        Some((series, limit))
    }

    /// Brings the registry back to three quarters of `head.max_series`:
    /// series without points in memory are forgotten first (second-chance
    /// order), then the longest silent series (data time) are written out
    /// and forgotten, in flush pieces. Whatever the churn, memory for series
    /// stays bounded; a series written out early that comes back is
    /// resolved again, and its hour gets a second cell (merged by
    /// compaction).
    fn relieve_series_pressure(&self) -> Result<(), EngineError> {
        // Cleared first: a writer that passes the bound again while this
        // runs (or after it fails) wakes the flusher for another round.
        self.series_pressure.store(false, Ordering::Release);
        let target = self.settings.max_series - self.settings.max_series / 4;
        let before = {
            let mut head = self.head();
            head.evict(target);
            let excess = head.series_count().saturating_sub(target);
            head.idle_cutoff(excess)
        };
        if let Some(before) = before {
            let mut evicted = 0;
            self.flush_then(Take::Idle(before), |head| {
                evicted += head.evict_idle(before);
            })?;
            // Series that took a point between the flush and the eviction
            // stay; they are the newest anyway.
            evicted += self.head().evict_idle(before);
            self.metrics.series_evicted.inc_by(evicted as u64);
        }
        self.metrics
            .head_series
            .set(self.head().series_count() as i64);
        Ok(())
    }

    /// Writes out the open hours of series that have stopped (silent for
    /// `head.idle_flush_secs` of data time, measured against the newest
    /// point, or now if that is earlier: a point from the future does not
    /// stop everything), then forgets them.
    fn flush_idle(&self) -> Result<(), EngineError> {
        if self.settings.idle_flush_secs == 0 {
            return Ok(());
        }
        let now = u32::try_from(self.now_secs().max(0)).unwrap_or(u32::MAX);
        let frontier = self.head().newest_secs.min(now);
        let before = frontier.saturating_sub(self.settings.idle_flush_secs);
        if before == 0 {
            return Ok(());
        }
        if self.head().has_idle_hours(before) {
            self.flush(Take::Idle(before))?;
        }
        let mut head = self.head();
        let stopped = head.evict_idle(before);
        self.metrics.series_stopped.inc_by(stopped as u64);
        self.metrics.head_series.set(head.series_count() as i64);
        Ok(())
    }

    /// Runs compaction until there is nothing left to do (or shutdown).
    /// `force` merges open windows too (offline full compaction).
    pub fn compact(&self, force: bool) -> Result<usize, EngineError> {
        let mut jobs = 0;
        while !self.shutting_down.load(Ordering::Acquire) || force {
            if !self.store.maintain(self.now_secs().max(0) as u64, force)? {
                break;
            }
            jobs += 1;
            self.metrics.compactions.inc();
        }
        Ok(jobs)
    }

    /// Writes the head's open hours to a checkpoint and drops the WAL
    /// segments it covers (nothing to do on a shared store: it has no log).
    pub fn checkpoint(&self) -> Result<(), EngineError> {
        let Some(log) = &self.log else {
            return Ok(());
        };
        let _flush = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.checkpoint_locked(log).map(|_| ())
    }

    /// [`Engine::checkpoint`] with the flush lock held; returns the new
    /// checkpoint's segment and path.
    fn checkpoint_locked(&self, log: &LocalLog) -> Result<(u64, PathBuf), EngineError> {
        let (segment, lsn) = log.wal.rotate();
        log.wal.wait_durable_blocking(lsn, segment)?;
        // What the store holds buffered for the hours flushed from the
        // segments about to go (index rows of the series they define, the
        // rollup tier values of their hours) is made durable before the
        // checkpoint that lets them go: a start after it replays nothing
        // older.
        self.store.sync()?;
        let now = self.clock.now_ms().max(0) as u64;
        // The head is copied a piece at a time, its lock let go between
        // pieces: writers wait for one piece, not the whole head, and no
        // copy of the whole head is ever held. A piece may hold points
        // logged after the rotation: segment `segment` holds them too, and
        // replaying a point again is harmless.
        let mut next = Some(0usize);
        let path = checkpoint::write(&log.head_dir, segment, now, &mut || {
            let from = next?;
            let (piece, points, rest) = checkpoint::snapshot_from(&self.head(), from);
            next = rest;
            Some((piece, points))
        })?;
        log.wal.remove_before(segment)?;
        for (n, old) in checkpoint::list(&log.head_dir)? {
            if n < segment {
                let _ = std::fs::remove_file(old);
            }
        }
        self.metrics.checkpoints.inc();
        self.metrics.wal_bytes.set(log.wal.total_bytes() as i64);
        Ok((segment, path))
    }

    /// Stops the background work, flushes closed hours, checkpoints the
    /// head and the store. The engine must not be written to afterwards.
    pub fn shutdown(&self) -> Result<(), EngineError> {
        self.shutting_down.store(true, Ordering::Release);
        self.wake_flusher();
        let flushed = self.flush_closed().map(|_| ());
        let ckpt = self.checkpoint();
        let store = self.store.checkpoint();
        if let Some(wal) = self.wal() {
            wal.close();
        }
        flushed?;
        ckpt?;
        store?;
        Ok(())
    }

    /// Internal counters for `/api/stats` and telnet `stats`.
    pub fn stats(&self) -> Vec<Stat> {
        let (points, bytes, series, hours) = {
            let h = self.head();
            (h.points, h.bytes, h.series_count(), h.hours)
        };
        let s = self.store.stats();
        let mut out: Vec<Stat> = vec![
            (
                "datapoints.added".into(),
                self.metrics.points_written.get() as i64,
                vec![],
            ),
            ("head.points".into(), points as i64, vec![]),
            ("head.bytes".into(), bytes as i64, vec![]),
            ("head.hours".into(), hours as i64, vec![]),
            ("series".into(), series as i64, vec![]),
            ("wal.bytes".into(), self.wal_bytes() as i64, vec![]),
            ("flushes".into(), self.metrics.flushes.get() as i64, vec![]),
            (
                "storage.files".into(),
                s.data_files as i64,
                vec![("type", "data".into())],
            ),
            (
                "storage.files".into(),
                s.meta_files as i64,
                vec![("type", "meta".into())],
            ),
            (
                "storage.bytes".into(),
                s.data_bytes as i64,
                vec![("type", "data".into())],
            ),
            (
                "storage.bytes".into(),
                s.meta_bytes as i64,
                vec![("type", "meta".into())],
            ),
            ("storage.points".into(), s.points as i64, vec![]),
            ("storage.compactions".into(), s.compactions as i64, vec![]),
            (
                "block_cache.bytes".into(),
                s.block_cache_bytes as i64,
                vec![],
            ),
        ];
        for kind in UidKind::ALL {
            let used = self.uids.ids_used(kind).unwrap_or(0) as i64;
            let max = KeyLayout::max_uid(self.uids.width(kind)) as i64;
            let tag = || vec![("kind", kind.as_str().to_string())];
            out.push(("uid.ids-used".into(), used, tag()));
            out.push(("uid.ids-available".into(), max.saturating_sub(used), tag()));
            out.push((
                "uid.cache-size".into(),
                self.uids.cache_size(kind) as i64,
                tag(),
            ));
        }
        out
    }

    /// Forgets cached names, series and blocks (`dropcaches`).
    pub fn drop_caches(&self) {
        self.uids.drop_caches();
        self.head().drop_texts();
        self.store.drop_caches();
    }
}

/// The metric UID of a series key.
fn metric_of(layout: &KeyLayout, series_key: &[u8]) -> u64 {
    series_key
        .get(layout.salt_width..layout.prefix_width())
        .map_or(0, crate::codec::rowkey::uid_from_bytes)
}

#[cfg(test)]
mod tests;
