//! The storage engine above the backend: resolves series to UIDs and row
//! keys, logs points in the write-ahead log, holds open hours in the
//! compressed series head, flushes closed hours to the store as native
//! cells, checkpoints the head, and reads head and store together.
//!
//! * [`head`] — the series registry and the open hours (compressed chunks).
//! * [`wal`] — the write-ahead log (segments, group commit, record schema).
//! * [`flush`] — closed hours (and, under memory pressure, the oldest
//!   ones) → one native cell per row → the store.
//! * [`checkpoint`] — head snapshots that let old WAL segments go.
//! * [`read`] — queries: one scan per salt bucket, merged with the head.
//! * [`open`] — opening the backend, the UID table, and on the embedded
//!   backend the data directory, the head checkpoint and the WAL replay.
//! * [`shared`] — the write path and the packing of rows on a shared store
//!   (Cloud Bigtable), where the store, not a local log, makes a point
//!   durable.
//! * [`index`] — the series index (one `Meta` row per TSUID) behind
//!   `/api/search/lookup`, kept crash-safe relative to the WAL.
//! * [`annotations`] — notes in data rows, as OpenTSDB stores them.
//! * [`last`] — the newest point of a series (`/api/query/last`) by point
//!   reads of hour rows.
//! * [`delete`] — point deletes (WAL record, head, store tombstones).
//! * [`retention`] — TTLs per metric.
//! * [`compactor`] — how the store's compaction merges a row's cells.
//! * [`clock`] — wall-clock time, replaceable in tests.
//!
//! Write path: [`Engine::write`] resolves each point's series (a cache hit
//! is one hash lookup on the series text; a miss fetches or assigns UIDs
//! and fsyncs new assignments), then, under the head lock, appends one WAL
//! frame for the whole batch and inserts the points into the head.
//! [`Engine::write_durable`] also waits until the frame is durable under
//! the fsync policy: that is the acknowledgement.
//!
//! A point is never written to a table file before its hour has closed
//! (`head.flush_grace_secs` after the hour ends) unless the head passes its
//! memory bound; a point that arrives for an hour already flushed becomes a
//! second cell of the row, merged by compaction.

mod annotations;
pub mod checkpoint;
pub mod clock;
mod compactor;
mod delete;
mod flush;
pub mod head;
mod index;
mod last;
mod open;
mod read;
pub mod retention;
mod shared;
pub mod wal;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use hourglass_ingest::{Point, Value};
use quick_cache::sync::Cache;

pub use self::annotations::AnnotationError;
pub use self::clock::{Clock, SystemClock};
use self::head::{Head, Take};
pub use self::index::IndexError;
pub use self::last::LastError;
use self::retention::Retention;
use self::wal::{FrameBuilder, Wal, WalError};
use crate::codec::{KeyLayout, StoredValue};
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
    #[error("data directory {path} is in use by another hourglass process")]
    Locked { path: PathBuf },
    #[error("cannot use data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Damaged(String),
}

/// Why one point of a batch was not written.
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    #[error(transparent)]
    Uid(#[from] UidError),
    #[error("bad timestamp={0}: after 2106-02-07T06:28:15Z, the latest time a row key can hold")]
    Timestamp(u64),
}

/// One internal statistic: name (without the `tsd.` prefix), value, tags.
pub type Stat = (String, i64, Vec<(&'static str, String)>);

/// Outcome of [`Engine::write`].
#[derive(Debug, Default)]
pub struct WriteReceipt {
    /// WAL position to await before acknowledging (0 = nothing written).
    pub lsn: u64,
    pub accepted: usize,
    /// Index in the batch and reason, for points that were not written.
    pub errors: Vec<(usize, PointError)>,
}

/// Settings the engine reads at run time.
#[derive(Debug, Clone)]
struct Settings {
    flush_grace_secs: i64,
    flush_interval: Duration,
    compaction_interval: Duration,
    checkpoint_bytes: u64,
    head_max_bytes: usize,
    max_series: usize,
}

fn stored(v: Value) -> StoredValue {
    match v {
        Value::Int(i) => StoredValue::Int(i),
        Value::Float(f) => StoredValue::Float(f),
        Value::Double(d) => StoredValue::Double(d),
    }
}

/// Writes the canonical text of a point's series (metric and tags sorted by
/// key) into `buf`.
fn series_text(p: &Point<'_>, buf: &mut String, order: &mut Vec<usize>) {
    buf.clear();
    order.clear();
    order.extend(0..p.tags.len());
    order.sort_unstable_by(|&a, &b| p.tags[a].0.cmp(&p.tags[b].0));
    buf.push_str(&p.metric);
    for &i in order.iter() {
        buf.push('\0');
        buf.push_str(&p.tags[i].0);
        buf.push('=');
        buf.push_str(&p.tags[i].1);
    }
}

/// Largest raw timestamp whose base hour fits a row key.
const MAX_RAW_TS_MS: u64 = 4_294_967_295_999;

fn ts_fits(raw: u64) -> bool {
    raw <= MAX_RAW_TS_MS
}

/// Where the embedded backend's acknowledged points are durable before
/// their hour is flushed: the write-ahead log, with the head checkpoints
/// that let old segments go, in the locked data directory.
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
    /// Series text → (series id, generation): the write path's cache.
    series_cache: Cache<Box<str>, (u32, u32)>,
    flush_lock: Mutex<()>,
    retention: Arc<Retention>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    wake: (Mutex<bool>, Condvar),
    checkpoint_requested: AtomicBool,
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

    /// Logs and buffers a batch of validated points. Blocking (UID I/O, a
    /// full WAL buffer): call from a blocking context. The points are
    /// durable once the WAL reaches the returned LSN
    /// ([`Engine::write_durable`] waits for it).
    pub fn write(&self, points: &[Point<'_>]) -> Result<WriteReceipt, EngineError> {
        let mut receipt = WriteReceipt::default();
        if points.is_empty() {
            return Ok(receipt);
        }
        let mut text = String::with_capacity(128);
        let mut order = Vec::new();
        // Phase 1: series cache lookups (no engine lock).
        let mut ids: Vec<Option<(u32, u32)>> = Vec::with_capacity(points.len());
        let mut misses: Vec<usize> = Vec::new();
        for (i, p) in points.iter().enumerate() {
            if !ts_fits(p.timestamp.0) {
                receipt
                    .errors
                    .push((i, PointError::Timestamp(p.timestamp.0)));
                ids.push(None);
                continue;
            }
            series_text(p, &mut text, &mut order);
            let hit = self.series_cache.get(text.as_str());
            if hit.is_none() {
                misses.push(i);
            }
            ids.push(hit);
        }
        // Phase 2: resolve misses without the lock (may do storage I/O).
        let mut resolved: Vec<(usize, Arc<[u8]>, u64)> = Vec::new();
        for &i in &misses {
            match self.resolve(&points[i]) {
                Ok((key, metric)) => resolved.push((i, key, metric)),
                Err(e) => {
                    self.metrics
                        .points_rejected
                        .with_label_values(&["unknown_name"])
                        .inc();
                    receipt.errors.push((i, e.into()));
                }
            }
        }
        if !resolved.is_empty() {
            // Series the head does not know get their index rows before
            // their WAL frame exists (see `index` for the crash argument).
            let fresh: Vec<&[u8]> = {
                let head = self.head();
                resolved
                    .iter()
                    .filter(|(_, key, _)| head.id_of(key).is_none())
                    .map(|(_, key, _)| &key[..])
                    .collect()
            };
            self.index_series(fresh)?;
            // New UIDs must be durable before any logged point refers to them.
            self.uids.sync_if_needed().map_err(EngineError::Uid)?;
        }
        // Phase 3: register, log, buffer — under the head lock, so the head
        // and the WAL see writes in the same order.
        let mut head = self.head();
        let hard_limit = self.settings.head_max_bytes.saturating_mul(2);
        if head.bytes >= hard_limit {
            let bytes = head.bytes;
            drop(head);
            self.wake_flusher();
            return Err(EngineError::Overloaded {
                bytes,
                limit: hard_limit,
            });
        }
        // Cache hits whose slot was reused since: resolve by key instead.
        let mut stale = Vec::new();
        for (i, slot) in ids.iter_mut().enumerate() {
            if let Some((id, generation)) = *slot
                && !head.is_current(id, generation)
            {
                *slot = None;
                stale.push(i);
            }
        }
        if !stale.is_empty() {
            drop(head);
            for i in stale {
                match self.resolve(&points[i]) {
                    Ok((key, metric)) => resolved.push((i, key, metric)),
                    Err(e) => receipt.errors.push((i, e.into())),
                }
            }
            head = self.head();
        }
        for (i, key, metric) in resolved {
            let (id, generation) = head.register(key, metric);
            series_text(&points[i], &mut text, &mut order);
            self.series_cache
                .insert(text.clone().into_boxed_str(), (id, generation));
            ids[i] = Some((id, generation));
        }
        let head_bytes = match &self.log {
            Some(log) => {
                let epoch = log.wal.epoch();
                let mut frame = FrameBuilder::new();
                for (i, p) in points.iter().enumerate() {
                    let Some((id, _)) = ids[i] else { continue };
                    let Some(e) = head.entry_mut(id) else {
                        continue;
                    };
                    if e.wal_epoch != epoch {
                        frame.series(id, &e.key);
                        e.wal_epoch = epoch;
                    }
                    frame.point(id, p.timestamp.0, stored(p.value));
                }
                if frame.is_empty() {
                    return Ok(receipt);
                }
                receipt.lsn = log.wal.append(frame)?;
                for (i, p) in points.iter().enumerate() {
                    if let Some((id, _)) = ids[i] {
                        head.insert(id, p.timestamp.0, stored(p.value));
                        receipt.accepted += 1;
                    }
                }
                self.note_head(&mut head)
            }
            None => {
                let keys: Vec<Option<Arc<[u8]>>> = ids
                    .iter()
                    .map(|id| {
                        id.and_then(|(id, _)| head.entry(id))
                            .map(|e| Arc::clone(&e.key))
                    })
                    .collect();
                // The store round trip runs without the head lock.
                drop(head);
                receipt.accepted = self.write_shared(points, &ids, &keys)?;
                if receipt.accepted == 0 {
                    return Ok(receipt);
                }
                self.note_head(&mut self.head())
            }
        };
        self.metrics.points_written.inc_by(receipt.accepted as u64);
        let wal_bytes = self.wal_bytes();
        self.metrics.wal_bytes.set(wal_bytes as i64);
        if head_bytes > self.settings.head_max_bytes || wal_bytes > self.settings.checkpoint_bytes {
            self.wake_flusher();
        }
        Ok(receipt)
    }

    /// Updates the head gauges and evicts idle series past the bound;
    /// returns the head's bytes.
    fn note_head(&self, head: &mut Head) -> usize {
        self.metrics.head_points.set(head.points as i64);
        self.metrics.head_series.set(head.series_count() as i64);
        self.metrics.head_bytes.set(head.bytes as i64);
        if head.series_count() > self.settings.max_series {
            head.evict(self.settings.max_series);
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

    /// Writes a batch and waits until it is durable under the fsync policy:
    /// the acknowledgement of a write. Call from a multi-threaded runtime.
    pub async fn write_durable(&self, points: &[Point<'_>]) -> Result<WriteReceipt, EngineError> {
        let receipt = tokio::task::block_in_place(|| self.write(points))?;
        self.wait_durable(receipt.lsn).await?;
        Ok(receipt)
    }

    /// UIDs and series key of a point (assigning UIDs if allowed).
    fn resolve(&self, p: &Point<'_>) -> Result<(Arc<[u8]>, u64), UidError> {
        let metric = self.uids.get_or_create(UidKind::Metric, &p.metric)?;
        let mut tags = Vec::with_capacity(p.tags.len());
        for (k, v) in &p.tags {
            tags.push((
                self.uids.get_or_create(UidKind::TagK, k)?,
                self.uids.get_or_create(UidKind::TagV, v)?,
            ));
        }
        tags.sort_unstable();
        Ok((Arc::from(self.layout.series_key(metric, &tags)), metric))
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
        // the WAL replay brought back) go out right away.
        loop {
            if let Err(e) = self.maintain_head() {
                tracing::error!(error = %e, "head flush failed; the points stay in memory and in the log and will be retried");
            }
            if !self.idle(self.settings.flush_interval) {
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
        self.flush_closed()?;
        let (bytes, series) = {
            let h = self.head();
            (h.bytes, h.series_count())
        };
        if bytes > self.settings.head_max_bytes {
            let target = bytes - self.settings.head_max_bytes * 4 / 5;
            self.flush(Take::Bytes(target))?;
        }
        if series > self.settings.max_series {
            self.head().evict(self.settings.max_series);
        }
        if self.checkpoint_requested.swap(false, Ordering::AcqRel)
            || self.wal_bytes() > self.settings.checkpoint_bytes
        {
            self.checkpoint()?;
        }
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
        let (segment, lsn) = log.wal.rotate();
        log.wal.wait_durable_blocking(lsn, segment)?;
        let (snapshot, points) = {
            let head = self.head();
            checkpoint::snapshot(&head)
        };
        let now = self.clock.now_ms().max(0) as u64;
        checkpoint::write(&log.head_dir, segment, &snapshot, points, now)?;
        // Index rows of the series defined in the segments about to go were
        // written buffered: make them durable first.
        self.store.sync()?;
        log.wal.remove_before(segment)?;
        for (n, old) in checkpoint::list(&log.head_dir)? {
            if n < segment {
                let _ = std::fs::remove_file(old);
            }
        }
        self.metrics.checkpoints.inc();
        self.metrics.wal_bytes.set(log.wal.total_bytes() as i64);
        Ok(())
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
        self.series_cache.clear();
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
