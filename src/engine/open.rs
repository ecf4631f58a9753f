//! Opening the engine: the backend the configuration names, the UID table
//! on it, and, on the embedded backend, the data directory's lock, the
//! newest head checkpoint and the write-ahead log after it (replayed into
//! the head). A shared backend keeps nothing on this node's disk: its head
//! starts empty.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::head::Head;
use super::pending::PendingPoint;
use super::retention::Retention;
use super::wal::record::UNRESOLVED;
use super::wal::{Event, Wal, WalOptions};
use super::{
    Clock, Engine, EngineError, LocalLog, Settings, SystemClock, checkpoint, metric_of,
    row_compactor,
};
use crate::codec::KeyLayout;
use crate::config::{Backend, Config};
use crate::metrics::Metrics;
use crate::storage::Store;
use crate::uid::{UidError, Uids};

/// A delete the WAL replayed: series keys, start and end (ms).
type ReplayedDelete = (Vec<Vec<u8>>, i64, i64);

/// Points applied per sorted batch during WAL replay (24 bytes each).
const REPLAY_BATCH: usize = 1 << 18;

impl Engine {
    /// Opens the configured backend with the system clock.
    pub fn open(cfg: &Config, metrics: Metrics) -> Result<Arc<Self>, EngineError> {
        Self::open_with(cfg, metrics, Arc::new(SystemClock))
    }

    /// Opens the configured backend and the UID table on it; on the
    /// embedded backend also the data directory (locked against a second
    /// process), the newest head checkpoint and the write-ahead log after
    /// it.
    pub fn open_with(
        cfg: &Config,
        metrics: Metrics,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, EngineError> {
        let data_dir = cfg.storage.data_dir.clone();
        // The lock comes first: nothing in the directory is touched by a
        // second process.
        let lock_file = match cfg.storage.backend {
            Backend::Embedded => Some(lock_data_dir(&data_dir)?),
            Backend::Bigtable => None,
        };
        let layout = cfg.layout();
        let retention = Arc::new(Retention::from_config(&cfg.retention)?);
        let repair = cfg.storage.repair;
        let store = crate::storage::open(cfg, retention.view())?;
        tracing::info!(backend = store.backend_name(), "storage opened");
        let uids = Arc::new(Uids::new(
            Arc::clone(&store),
            &layout,
            [
                cfg.uid.auto_create_metrics,
                cfg.uid.auto_create_tagks,
                cfg.uid.auto_create_tagvs,
            ],
            cfg.uid.cache_entries,
        ));
        store.set_row_compactor(Arc::new(row_compactor::Compactor::new(
            layout,
            Arc::clone(&retention),
            Arc::clone(&uids),
        )));
        let mut head = Head::with_seed(crate::hashing::random_seed());
        // Deletes the WAL replays, redone on the store once the engine is up.
        let mut deletes: Vec<ReplayedDelete> = Vec::new();
        let log = match lock_file {
            Some(lock_file) if !store.shared() => Some(Self::open_local(
                cfg,
                &data_dir,
                &store,
                &layout,
                &mut head,
                lock_file,
                &mut deletes,
            )?),
            _ => {
                // Every acknowledged point is in the shared store already;
                // tables written before the index existed (or by OpenTSDB)
                // are indexed once.
                Self::reindex(&store, &layout, std::iter::empty())?;
                None
            }
        };
        // UIDs are never handed out twice: the counters must be at least the
        // highest UID any row refers to.
        let mut referenced = store.referenced_uids();
        for (r, h) in referenced.iter_mut().zip(head.referenced_uids(&layout)) {
            *r = (*r).max(h);
        }
        uids.ensure_counters(referenced, repair)
            .map_err(|e| match e {
                UidError::Damaged(m) => {
                    let notes = store.recovery_notes();
                    if notes.is_empty() {
                        EngineError::Damaged(m)
                    } else {
                        EngineError::Damaged(format!("{m}. Note: {}", notes.join("; ")))
                    }
                }
                other => EngineError::Uid(other),
            })?;
        metrics.head_points.set(head.points as i64);
        metrics.head_series.set(head.series_count() as i64);
        // Rollup tiers are the embedded store's: a shared store's rows are
        // written by every node, which no single flush sees. Rollups written
        // from outside are kept on every store.
        let mut tiers = super::rollup::Tiers::from_config(&cfg.rollup, log.is_some())?;
        if log.is_none() {
            // OpenTSDB's rollup tables on a shared store may not exist
            // (`create_tables = false`): such an interval takes no rollups
            // rather than failing every downsampled query.
            tiers.externals.retain(|t| {
                let start = t.key(&[]);
                let end = crate::storage::prefix_end(&start);
                match store.scan(crate::storage::Table::Rollup, &start, &end, &mut |_, _| Ok(false)) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(interval_secs = t.interval, error = %e, "the rollup table of this interval cannot be read: rollups written from outside are off for it (docs/deploy-bigtable.md)");
                        false
                    }
                }
            });
        }
        let fresh = log.is_some() && store.stats().data_files == 0;
        let engine = Arc::new(Self {
            layout,
            data_dir,
            store,
            uids,
            log,
            head: Mutex::new(head),
            series_digest: crate::hashing::TextDigest::random(),
            flush_lock: Mutex::new(()),
            fresh_uids: Mutex::default(),
            retention,
            tiers,
            clock,
            settings: Settings {
                flush_grace_secs: cfg.head.flush_grace_secs as i64,
                flush_interval: Duration::from_secs(cfg.head.flush_interval_secs),
                compaction_interval: Duration::from_secs(cfg.storage.compaction_interval_secs),
                checkpoint_bytes: cfg.wal.checkpoint_bytes,
                head_max_bytes: cfg.head.max_bytes.max(1),
                max_series: cfg.head.max_series.max(1),
                idle_flush_secs: u32::try_from(cfg.head.idle_flush_secs).unwrap_or(u32::MAX),
            },
            wake: (Mutex::new(false), Condvar::new()),
            checkpoint_requested: AtomicBool::new(false),
            series_pressure: AtomicBool::new(false),
            closed_look: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            metrics,
        });
        if let Some(log) = &engine.log {
            log.wal
                .set_hook(Box::new(super::write::ApplyDurable(Arc::downgrade(
                    &engine,
                ))));
            log.wal
                .set_before_write(Box::new(super::write::SyncNewUids(Arc::downgrade(
                    &engine.uids,
                ))));
            engine.load_tier_state(fresh)?;
            for (keys, start_ms, end_ms) in deletes {
                engine.delete_stored(&keys, start_ms, end_ms)?;
            }
        }
        Ok(engine)
    }

    /// The embedded backend's own log: loads the newest head checkpoint,
    /// replays the WAL after it into `head`, and re-indexes the series the
    /// replay brought back.
    fn open_local(
        cfg: &Config,
        data_dir: &Path,
        store: &Arc<dyn Store>,
        layout: &KeyLayout,
        head: &mut Head,
        lock_file: File,
        deletes: &mut Vec<ReplayedDelete>,
    ) -> Result<LocalLog, EngineError> {
        let layout = *layout;
        let repair = cfg.storage.repair;
        let head_dir = data_dir.join("head");
        // The head: the newest checkpoint, then the WAL after it.
        let replay_from = Self::load_checkpoint(&head_dir, head, repair)?;
        let mut replayed = 0usize;
        // Points are applied in batches sorted by series
        // (`Head::insert_batch`); a delete applies the batch first, so it
        // sees every earlier point.
        let mut batch: Vec<PendingPoint> = Vec::with_capacity(REPLAY_BATCH);
        let apply = |head: &mut Head, batch: &mut Vec<PendingPoint>| {
            head.insert_batch(batch);
            batch.clear();
        };
        // Head slots of the series the replay touched (ids are stable: no
        // eviction during replay).
        let mut seen: Vec<bool> = Vec::new();
        let wal = Wal::open(
            &data_dir.join("wal"),
            &WalOptions {
                policy: cfg.wal.fsync,
                interval: Duration::from_millis(cfg.wal.fsync_interval_ms),
                max_pending: cfg.wal.max_pending_bytes,
                repair,
            },
            replay_from,
            &mut |event| match event {
                Event::Point {
                    series_key,
                    resolved,
                    raw_ts,
                    value,
                } => {
                    // Nothing is evicted during replay, so a resolved id
                    // stays valid for the rest of the segment.
                    let id = match resolved.get() {
                        UNRESOLVED => {
                            let id = match head.id_of(series_key) {
                                Some(id) => id,
                                None => {
                                    head.register(
                                        Arc::from(series_key),
                                        metric_of(&layout, series_key),
                                    )
                                    .0
                                }
                            };
                            resolved.set(id);
                            if seen.len() <= id as usize {
                                seen.resize(id as usize + 1, false);
                            }
                            seen[id as usize] = true;
                            id
                        }
                        id => id,
                    };
                    batch.push((id, raw_ts, value));
                    if batch.len() == REPLAY_BATCH {
                        apply(head, &mut batch);
                    }
                    replayed += 1;
                }
                Event::Delete {
                    series_key,
                    start_ms,
                    end_ms,
                } => {
                    apply(head, &mut batch);
                    head.delete(series_key, start_ms, end_ms);
                    deletes.push((vec![series_key.to_vec()], start_ms, end_ms));
                }
            },
        )?;
        apply(head, &mut batch);
        // Series the replay brought back may have lost their buffered index
        // rows with the process (a series only in the checkpoint had its
        // WAL segments removed after a store sync: its row is durable); old
        // data directories get indexed once.
        Self::reindex(
            store,
            &layout,
            seen.iter()
                .enumerate()
                .filter(|(_, s)| **s)
                .filter_map(|(id, _)| head.entry(id as u32).map(|e| Arc::clone(&e.key))),
        )?;
        if replayed > 0 {
            tracing::info!(
                points = replayed,
                series = head.series_count(),
                "replayed the write-ahead log"
            );
        }
        Ok(LocalLog {
            wal,
            head_dir,
            _lock_file: lock_file,
        })
    }

    /// Loads the newest readable head checkpoint; returns the WAL segment
    /// replay starts from (0 = all).
    fn load_checkpoint(dir: &Path, head: &mut Head, repair: bool) -> Result<u64, EngineError> {
        let files = checkpoint::list(dir)?;
        let _ = std::fs::remove_file(dir.join("ckpt.tmp"));
        for (i, (segment, file)) in files.iter().enumerate() {
            let mut fresh = Head::with_seed(head.seed());
            let res = checkpoint::read(file, &mut |key, metric, base, cell, ooo| {
                fresh
                    .load_hour(key, metric, base, cell, ooo)
                    .map_err(|e| e.to_string())
            });
            match res {
                Ok(loaded) => {
                    tracing::info!(
                        segment,
                        series = loaded.series,
                        points = loaded.points,
                        "loaded the head checkpoint"
                    );
                    *head = fresh;
                    // Older checkpoints are superseded.
                    for (_, old) in &files[i + 1..] {
                        let _ = std::fs::remove_file(old);
                    }
                    return Ok(*segment);
                }
                Err(e) if repair => {
                    let moved =
                        crate::storage::embedded::move_aside(dir.parent().unwrap_or(dir), file)
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|m| format!("(could not move it: {m})"));
                    tracing::error!(error = %e, moved, "repair: damaged head checkpoint moved aside; points only it held are lost, trying an older one");
                }
                Err(e) => {
                    return Err(EngineError::Damaged(format!(
                        "{e}. The head checkpoint holds acknowledged points whose WAL segments are gone; refusing to start without it. Set `storage.repair = true` to move it aside and go on with what the WAL still holds"
                    )));
                }
            }
        }
        Ok(0)
    }
}

/// Creates the data directory if need be and locks it, so that two
/// servers never share one.
fn lock_data_dir(data_dir: &Path) -> Result<File, EngineError> {
    let dd_err = |source| EngineError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(data_dir).map_err(dd_err)?;
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join("LOCK"))
        .map_err(dd_err)?;
    match lock_file.try_lock() {
        Ok(()) => Ok(lock_file),
        Err(std::fs::TryLockError::WouldBlock) => Err(EngineError::Locked {
            path: PathBuf::from(data_dir),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(dd_err(e)),
    }
}
