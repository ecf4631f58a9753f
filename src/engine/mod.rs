//! The storage engine above the backend: resolves series to UIDs and row
//! keys, logs points in the write-ahead log, buffers them in the series
//! head, packs closed hour rows into cells and writes them to the store,
//! and reads head and store together for queries.
//!
//! Write path: `Engine::write` resolves each point's series (a cache hit is
//! a hash lookup on the series text; a miss fetches or assigns UIDs and
//! fsyncs new assignments), then, under the head lock, appends one WAL frame
//! for the whole batch and inserts the points into the head. The caller
//! awaits `Wal::wait_durable(lsn)` before acknowledging.
//!
//! Flush: a background thread packs rows whose hour closed more than
//! `flush_grace_secs` ago. When the WAL or the head grows past its bound
//! (and at shutdown) it checkpoints: rotates the WAL and writes *every* row
//! out, then deletes the old segments. Rows being written stay visible to
//! queries ("frozen") until the store has them. A row that already has
//! cells in the store is read, merged (newest point wins) and rewritten as
//! one packed cell; only the columns read are deleted.

mod read;
pub mod wal;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hourglass_ingest::{Point, Value};

use self::wal::{FrameBuilder, Wal, WalError};
use crate::codec::cell::{decode_cell, encode_packed_cell, merge_points};
use crate::codec::rowkey::split_timestamp;
use crate::codec::{DecodedPoint, KeyLayout, StoredValue};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::storage::embedded::{EmbeddedOptions, EmbeddedStore};
use crate::storage::{Mutation, StorageError, Store, Table, column, family};
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
    #[error(
        "Please throttle writes: {points} points are waiting to be written to storage (limit {limit})"
    )]
    Overloaded { points: usize, limit: usize },
    #[error("data directory {path} is in use by another hourglass process")]
    Locked { path: PathBuf },
    #[error("cannot use data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why one point of a batch was not written.
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    #[error(transparent)]
    Uid(#[from] UidError),
}

/// One internal statistic: name (without the `tsd.` prefix), value, tags.
pub type Stat = (String, i64, Vec<(&'static str, String)>);

/// A series resolved outside the lock: batch index, series text, series
/// key, metric UID.
type Resolved = (usize, Box<str>, Arc<[u8]>, u64);

/// Outcome of [`Engine::write`].
#[derive(Debug, Default)]
pub struct WriteReceipt {
    /// WAL position to await before acknowledging (0 = nothing written).
    pub lsn: u64,
    pub accepted: usize,
    /// Index in the batch and reason, for points that were not written.
    pub errors: Vec<(usize, PointError)>,
}

#[derive(Debug)]
struct SeriesEntry {
    key: Arc<[u8]>,
    wal_epoch: u64,
}

/// Rows of points per series: series id → base hour → points in arrival
/// order (the last point of an offset wins).
type Rows = HashMap<u32, (Arc<[u8]>, BTreeMap<u32, Vec<DecodedPoint>>)>;

#[derive(Debug, Default)]
struct State {
    by_text: HashMap<Box<str>, u32>,
    by_key: HashMap<Arc<[u8]>, u32>,
    series: Vec<SeriesEntry>,
    by_metric: HashMap<u64, Vec<u32>>,
    head: Rows,
    head_points: usize,
    /// Rows being written to the store, oldest first; visible to reads.
    frozen: Vec<Arc<Rows>>,
}

impl State {
    fn register(&mut self, key: Arc<[u8]>, metric: u64) -> u32 {
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let id = self.series.len() as u32;
        self.series.push(SeriesEntry {
            key: Arc::clone(&key),
            wal_epoch: 0,
        });
        self.by_key.insert(key, id);
        self.by_metric.entry(metric).or_default().push(id);
        id
    }

    fn insert(&mut self, id: u32, raw_ts: u64, value: StoredValue) {
        let (base, offset_ms, ms) = split_timestamp(raw_ts);
        let key = Arc::clone(&self.series[id as usize].key);
        let rows = &mut self
            .head
            .entry(id)
            .or_insert_with(|| (key, BTreeMap::new()))
            .1;
        rows.entry(base).or_default().push(DecodedPoint {
            offset_ms,
            ms,
            value,
        });
        self.head_points += 1;
    }
}

fn stored(v: Value) -> StoredValue {
    match v {
        Value::Int(i) => StoredValue::Int(i),
        Value::Float(f) => StoredValue::Float(f),
        Value::Double(d) => StoredValue::Double(d),
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Writes the canonical text of a point's series (metric and tags sorted by
/// key) into `buf`.
fn series_text(p: &Point<'_>, buf: &mut String, tags: &mut Vec<(usize, usize)>) {
    buf.clear();
    tags.clear();
    tags.extend((0..p.tags.len()).map(|i| (i, i)));
    tags.sort_unstable_by(|a, b| p.tags[a.0].0.cmp(&p.tags[b.0].0));
    buf.push_str(&p.metric);
    for &(i, _) in tags.iter() {
        buf.push('\0');
        buf.push_str(&p.tags[i].0);
        buf.push('=');
        buf.push_str(&p.tags[i].1);
    }
}

#[derive(Debug)]
pub struct Engine {
    layout: KeyLayout,
    data_dir: PathBuf,
    store: Arc<dyn Store>,
    uids: Uids,
    wal: Arc<Wal>,
    state: Mutex<State>,
    flush_lock: Mutex<()>,
    flush_grace_secs: i64,
    flush_interval: Duration,
    checkpoint_bytes: u64,
    max_points: usize,
    query_max_points: usize,
    wake: (Mutex<bool>, Condvar),
    checkpoint_requested: AtomicBool,
    shutting_down: AtomicBool,
    metrics: Metrics,
    _lock_file: std::fs::File,
}

impl Engine {
    /// Opens the data directory: the store, the UID tables, and the WAL,
    /// whose points are replayed into the head.
    pub fn open(cfg: &Config, metrics: Metrics) -> Result<Arc<Self>, EngineError> {
        let data_dir = cfg.storage.data_dir.clone();
        let dd_err = |source| EngineError::DataDir {
            path: data_dir.clone(),
            source,
        };
        std::fs::create_dir_all(&data_dir).map_err(dd_err)?;
        let lock_path = data_dir.join("LOCK");
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(dd_err)?;
        match lock_file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(EngineError::Locked { path: data_dir });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(dd_err(e)),
        }
        let layout = cfg.layout();
        let mut eopts = EmbeddedOptions::new(data_dir.join("store"), layout);
        eopts.memtable_bytes = cfg.storage.memtable_bytes;
        eopts.max_meta_files = cfg.storage.max_tables;
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(eopts)?);
        let uids = Uids::new(
            Arc::clone(&store),
            &layout,
            [
                cfg.uid.auto_create_metrics,
                cfg.uid.auto_create_tagks,
                cfg.uid.auto_create_tagvs,
            ],
        );

        let mut state = State::default();
        let mut replayed = 0usize;
        let wal = Wal::open(
            &data_dir.join("wal"),
            cfg.wal.fsync,
            Duration::from_millis(cfg.wal.fsync_interval_ms.max(1)),
            cfg.wal.max_pending_bytes.max(1 << 16),
            |p| {
                let id = match state.by_key.get(p.series_key) {
                    Some(&id) => id,
                    None => {
                        let metric = layout
                            .parse_row_key(&layout.row_key(p.series_key, 0))
                            .map_or(0, |parts| {
                                crate::codec::rowkey::uid_from_bytes(parts.metric)
                            });
                        state.register(Arc::from(p.series_key), metric)
                    }
                };
                state.insert(id, p.raw_ts, p.value);
                replayed += 1;
            },
        )?;
        if replayed > 0 {
            tracing::info!(
                points = replayed,
                series = state.series.len(),
                "replayed the write-ahead log"
            );
        }
        metrics.head_points.set(state.head_points as i64);
        metrics.head_series.set(state.series.len() as i64);
        let engine = Arc::new(Self {
            layout,
            data_dir,
            store,
            uids,
            wal,
            state: Mutex::new(state),
            flush_lock: Mutex::new(()),
            flush_grace_secs: cfg.head.flush_grace_secs as i64,
            flush_interval: Duration::from_secs(cfg.head.flush_interval_secs),
            checkpoint_bytes: cfg.wal.checkpoint_bytes,
            max_points: cfg.head.max_points,
            query_max_points: cfg.query.max_points,
            wake: (Mutex::new(false), Condvar::new()),
            checkpoint_requested: AtomicBool::new(replayed > 0),
            shutting_down: AtomicBool::new(false),
            metrics,
            _lock_file: lock_file,
        });
        Ok(engine)
    }

    /// Starts the background flush thread.
    pub fn start_background(self: &Arc<Self>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("hourglass-flush".into())
            .spawn(move || me.flush_loop())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
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

    pub fn wal(&self) -> &Arc<Wal> {
        &self.wal
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub fn series_count(&self) -> usize {
        self.lock().series.len()
    }

    /// Logs and buffers a batch of validated points. Blocking (UID I/O, a
    /// full WAL buffer): call from a blocking context.
    pub fn write(&self, points: &[Point<'_>]) -> Result<WriteReceipt, EngineError> {
        let mut receipt = WriteReceipt::default();
        if points.is_empty() {
            return Ok(receipt);
        }
        let mut text = String::with_capacity(128);
        let mut order = Vec::new();
        // Phase 1: cache lookups under the lock.
        let mut ids: Vec<Option<u32>> = Vec::with_capacity(points.len());
        let mut misses = Vec::new();
        {
            let st = self.lock();
            for (i, p) in points.iter().enumerate() {
                series_text(p, &mut text, &mut order);
                let id = st.by_text.get(text.as_str()).copied();
                if id.is_none() {
                    misses.push(i);
                }
                ids.push(id);
            }
        }
        // Phase 2: resolve misses without the lock (may do storage I/O).
        let mut resolved: Vec<Resolved> = Vec::new();
        for &i in &misses {
            let p = &points[i];
            match self.resolve(p) {
                Ok((key, metric)) => {
                    series_text(p, &mut text, &mut order);
                    resolved.push((i, text.clone().into_boxed_str(), key, metric));
                }
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
            // New UIDs must be durable before any logged point refers to them.
            self.uids.sync_if_needed().map_err(EngineError::Uid)?;
        }
        // Phase 3: register, log, buffer.
        let mut st = self.lock();
        // Past twice the checkpoint trigger the flush is not keeping up
        // (or storage is failing): refuse rather than grow without bound.
        let hard_limit = self.max_points.saturating_mul(2);
        if st.head_points >= hard_limit {
            let points = st.head_points;
            drop(st);
            self.request_checkpoint();
            return Err(EngineError::Overloaded {
                points,
                limit: hard_limit,
            });
        }
        for (i, t, key, metric) in resolved {
            let id = st.register(key, metric);
            st.by_text.insert(t, id);
            ids[i] = Some(id);
        }
        let epoch = self.wal.epoch();
        let mut frame = FrameBuilder::new();
        for (i, p) in points.iter().enumerate() {
            let Some(id) = ids[i] else { continue };
            let s = &mut st.series[id as usize];
            if s.wal_epoch != epoch {
                frame.series(id, &s.key);
                s.wal_epoch = epoch;
            }
            frame.point(id, p.timestamp.0, stored(p.value));
        }
        if frame.is_empty() {
            return Ok(receipt);
        }
        receipt.lsn = self.wal.append(frame)?;
        for (i, p) in points.iter().enumerate() {
            if let Some(id) = ids[i] {
                st.insert(id, p.timestamp.0, stored(p.value));
                receipt.accepted += 1;
            }
        }
        let head_points = st.head_points;
        self.metrics.head_points.set(head_points as i64);
        self.metrics.head_series.set(st.series.len() as i64);
        drop(st);
        self.metrics.points_written.inc_by(receipt.accepted as u64);
        if head_points > self.max_points || self.wal.total_bytes() > self.checkpoint_bytes {
            self.request_checkpoint();
        }
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

    pub fn request_checkpoint(&self) {
        self.checkpoint_requested.store(true, Ordering::Release);
        let (m, cv) = &self.wake;
        *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        cv.notify_one();
    }

    fn flush_loop(self: Arc<Self>) {
        loop {
            {
                let (m, cv) = &self.wake;
                let mut woken = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if !*woken {
                    woken = cv
                        .wait_timeout(woken, self.flush_interval)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
                *woken = false;
            }
            if self.shutting_down.load(Ordering::Acquire) {
                return;
            }
            let all = self.checkpoint_requested.swap(false, Ordering::AcqRel)
                || self.wal.total_bytes() > self.checkpoint_bytes
                || self.lock().head_points > self.max_points;
            if let Err(e) = self.flush(all) {
                tracing::error!(error = %e, "head flush failed; the points stay in memory and in the log and will be retried");
            }
            if let Err(e) = self.store.maintain(now_secs() as u64, false) {
                tracing::error!(error = %e, "merging table files failed");
            }
        }
    }

    /// Packs closed rows (or every row, with `all`, which also checkpoints
    /// the WAL) and writes them to the store.
    pub fn flush(&self, all: bool) -> Result<(), EngineError> {
        let _guard = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let cutoff = now_secs() - 3600 - self.flush_grace_secs;
        let (frozen, rotation) = {
            let mut st = self.lock();
            let mut frozen: Rows = HashMap::new();
            let mut moved = 0usize;
            st.head.retain(|&id, (key, rows)| {
                let taken = if all {
                    std::mem::take(rows)
                } else {
                    let keep =
                        rows.split_off(&u32::try_from(cutoff.max(-1) + 1).unwrap_or(u32::MAX));
                    std::mem::replace(rows, keep)
                };
                if !taken.is_empty() {
                    moved += taken.values().map(Vec::len).sum::<usize>();
                    frozen.insert(id, (Arc::clone(key), taken));
                }
                !rows.is_empty()
            });
            st.head_points -= moved;
            self.metrics.head_points.set(st.head_points as i64);
            let rotation = all.then(|| self.wal.rotate());
            if frozen.is_empty() && rotation.is_none() {
                return Ok(());
            }
            let frozen = Arc::new(frozen);
            st.frozen.push(Arc::clone(&frozen));
            (frozen, rotation)
        };
        let result = (|| -> Result<usize, EngineError> {
            if let Some((segment, lsn)) = rotation {
                self.wal.wait_durable_blocking(lsn, segment)?;
            }
            self.write_rows(&frozen)
        })();
        {
            let mut st = self.lock();
            st.frozen.retain(|f| !Arc::ptr_eq(f, &frozen));
            if result.is_err() {
                // Put the rows back in front of anything newer.
                for (id, (key, rows)) in frozen.iter() {
                    let entry = st
                        .head
                        .entry(*id)
                        .or_insert_with(|| (Arc::clone(key), BTreeMap::new()));
                    let mut n = 0;
                    for (base, pts) in rows {
                        let slot = entry.1.entry(*base).or_default();
                        let mut merged = pts.clone();
                        merged.append(slot);
                        n += pts.len();
                        *slot = merged;
                    }
                    st.head_points += n;
                }
            }
        }
        let rows = result?;
        if let Some((segment, _)) = rotation {
            self.wal.remove_before(segment)?;
        }
        self.metrics.flushes.inc();
        self.metrics.flushed_rows.inc_by(rows as u64);
        self.metrics.wal_bytes.set(self.wal.total_bytes() as i64);
        Ok(())
    }

    /// Merges frozen rows with what the store holds and writes them.
    fn write_rows(&self, rows: &Rows) -> Result<usize, EngineError> {
        let mut muts = Vec::new();
        let mut count = 0;
        let mut old = Vec::new();
        for (key, by_base) in rows.values() {
            for (&base, pts) in by_base {
                let row_key = self.layout.row_key(key, base);
                let existing = self.store.get_row(Table::Data, &row_key)?;
                old.clear();
                let mut keep_cells = Vec::new();
                for c in &existing {
                    if c.column.first() != Some(&family::DATA) {
                        continue;
                    }
                    if let Err(e) = decode_cell(&c.column[1..], &c.value, &mut old) {
                        // Leave a cell we cannot read untouched rather than
                        // destroy it.
                        tracing::error!(error = %e, row = ?row_key, "undecodable cell left in place");
                        keep_cells.push(c.column.clone());
                    }
                }
                let merged = merge_points(&merge_points(&old, &[]), pts);
                let (q, v) = encode_packed_cell(&merged);
                let new_col = column(family::DATA, &q);
                for c in existing {
                    if c.column != new_col
                        && c.column.first() == Some(&family::DATA)
                        && !keep_cells.contains(&c.column)
                    {
                        muts.push(Mutation::Delete {
                            table: Table::Data,
                            row: row_key.clone(),
                            column: c.column,
                        });
                    }
                }
                muts.push(Mutation::Put {
                    table: Table::Data,
                    row: row_key,
                    column: new_col,
                    value: v,
                });
                count += 1;
            }
        }
        let mut muts = Some(muts);
        self.store
            .write_data(&mut |_seq| Ok(muts.take().unwrap_or_default()))?;
        Ok(count)
    }

    /// Checkpoints everything and stops the background thread. The engine
    /// must not be written to afterwards.
    pub fn shutdown(&self) -> Result<(), EngineError> {
        self.shutting_down.store(true, Ordering::Release);
        {
            let (m, cv) = &self.wake;
            *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
            cv.notify_all();
        }
        let res = self.flush(true);
        self.store.checkpoint()?;
        self.wal.close();
        res
    }

    /// Internal counters for `/api/stats` and telnet `stats`.
    pub fn stats(&self) -> Vec<Stat> {
        let st = self.lock();
        let mut out = vec![
            (
                "datapoints.added".to_string(),
                self.metrics.points_written.get() as i64,
                vec![],
            ),
            ("head.points".to_string(), st.head_points as i64, vec![]),
            ("series".to_string(), st.series.len() as i64, vec![]),
            (
                "wal.bytes".to_string(),
                self.wal.total_bytes() as i64,
                vec![],
            ),
            (
                "flushes".to_string(),
                self.metrics.flushes.get() as i64,
                vec![],
            ),
        ];
        drop(st);
        for kind in UidKind::ALL {
            let used = self.uids.ids_used(kind).unwrap_or(0) as i64;
            let max = KeyLayout::max_uid(self.uids.width(kind)) as i64;
            out.push((
                "uid.ids-used".into(),
                used,
                vec![("kind", kind.as_str().into())],
            ));
            out.push((
                "uid.ids-available".into(),
                max.saturating_sub(used),
                vec![("kind", kind.as_str().into())],
            ));
            out.push((
                "uid.cache-size".into(),
                self.uids.cache_size(kind) as i64,
                vec![("kind", kind.as_str().into())],
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
