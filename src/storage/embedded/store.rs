//! The embedded store: its state under one lock (the memtable, the store
//! log, the manifest, the live files), and the [`Store`] trait over it. The
//! read path is `read.rs`, the write path `write.rs`, compaction
//! `compaction/`, opening and recovery `open.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::cache::BlockCache;
use super::file_set::FileSet;
use super::keys::internal_bounds;
use super::memtable::MemTable;
use super::options::EmbeddedOptions;
use super::store_log::{Op, into_op};
use crate::fb::ManifestData;
use crate::logfile::LogWriter;
use crate::storage::{
    Cell, DataBuilder, Durability, Mutation, Result, RowCompactor, RowVisitor, StorageError, Store,
    StoreStats, Table,
};

#[derive(Debug)]
pub(super) struct State {
    pub(super) mem: MemTable,
    pub(super) mem_bytes: usize,
    /// A full memtable being written out as a meta file, outside the state
    /// lock (or left by a write-out that failed, until the next one). Its
    /// writes are still in the live store log; reads look here after
    /// `mem`, whose versions are all newer.
    pub(super) imm: Option<Arc<MemTable>>,
    /// `mem_bytes` of `imm` when it was set aside.
    pub(super) imm_bytes: usize,
    pub(super) log: LogWriter,
    pub(super) manifest: ManifestData,
    pub(super) files: Arc<FileSet>,
    pub(super) seq: u64,
    pub(super) poisoned: bool,
    /// When each large window (by its start) last took a data file, since
    /// open; entries older than [`super::compaction::policy::QUIET`] are
    /// pruned by the compaction worker (the policy's
    /// [`super::compaction::policy::Policy::busy`]).
    pub(super) last_data_write: std::collections::HashMap<u64, std::time::Instant>,
}

/// The default storage backend.
#[derive(Debug)]
pub struct EmbeddedStore {
    pub(super) dir: PathBuf,
    pub(super) opts: EmbeddedOptions,
    pub(super) state: Mutex<State>,
    /// Serialises data writes and the start of compactions, so that a
    /// compaction's snapshot of a window always holds every write with a
    /// lower sequence number.
    pub(super) data_lock: Mutex<()>,
    /// One compaction at a time.
    pub(super) compact_lock: Mutex<()>,
    /// One memtable write-out at a time (held while the file is written,
    /// without the state lock).
    pub(super) flush_lock: Mutex<()>,
    pub(super) cache: BlockCache,
    pub(super) compactor: OnceLock<Arc<dyn RowCompactor>>,
    pub(super) compactions: AtomicU64,
    /// What open recovered on its own.
    pub(super) notes: Vec<String>,
    /// The store log bytes known durable: (log number, length). Also the
    /// lock of `Store::sync`'s fsync: one at a time, and a caller whose
    /// bytes an fsync in flight covered finds them durable without its own.
    pub(super) synced: Mutex<(u64, u64)>,
}

impl EmbeddedStore {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn files(&self) -> Arc<FileSet> {
        Arc::clone(&self.lock().files)
    }

    /// Number of live table files (for stats and tests).
    pub fn table_count(&self) -> usize {
        let f = self.files();
        f.meta.len() + f.data.len()
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Verifies every block of every live file and returns the number of
    /// entries read (fsck).
    pub fn verify_files(&self) -> Vec<(PathBuf, std::result::Result<u64, StorageError>)> {
        self.files()
            .all()
            .map(|t| (t.path().to_path_buf(), t.verify()))
            .collect()
    }
}

impl Store for EmbeddedStore {
    fn backend_name(&self) -> &'static str {
        "embedded"
    }

    fn get_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>> {
        self.read_row(table, row)
    }

    fn row_may_exist(&self, table: Table, row: &[u8]) -> Result<bool> {
        Ok(EmbeddedStore::row_may_exist(self, table, row))
    }

    fn scan(
        &self,
        table: Table,
        start: &[u8],
        end: &[u8],
        visit: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let (s, e) = internal_bounds(table, start, end);
        self.scan_internal(&s, &e, None, false, visit)
    }

    fn scan_filtered(
        &self,
        table: Table,
        start: &[u8],
        end: &[u8],
        filter: &crate::storage::KeyFilter<'_>,
        visit: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let (s, e) = internal_bounds(table, start, end);
        self.scan_internal(&s, &e, Some(filter), false, visit)
    }

    /// The engine's salt-bucket scans: row keys only, read window by window.
    fn scan_ranges(
        &self,
        table: Table,
        ranges: &[crate::storage::KeyRange],
        filter: &crate::storage::KeyFilter<'_>,
        visit: &crate::storage::RangeVisitor<'_>,
    ) -> Result<()> {
        crate::storage::scan_ranges_with(ranges, visit, &|r, v| {
            let (s, e) = internal_bounds(table, &r.start, &r.end);
            self.scan_internal(&s, &e, Some(filter), true, v)
        })
    }

    fn write(&self, batch: Vec<Mutation>, durability: Durability) -> Result<()> {
        if batch.iter().all(|m| m.table() != Table::Data) {
            let ops: Vec<Op> = batch.into_iter().map(|m| into_op(m).1).collect();
            let mem_bytes = self.apply_logged(&mut self.lock(), ops, durability)?;
            return self.write_out_if_full(mem_bytes);
        }
        // Data rows live in window files: a small data write is a small
        // file (compaction folds it in).
        let mut batch = Some(batch);
        self.write_data(&mut |_| Ok(batch.take().unwrap_or_default()))
    }

    fn write_data(&self, build: &mut DataBuilder<'_>) -> Result<()> {
        self.write_window_files(build)
    }

    fn increment(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        delta: i64,
        durability: Durability,
    ) -> Result<i64> {
        self.increment_counter(table, row, column, delta, durability)
    }

    fn check_and_put(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        expected: Option<&[u8]>,
        value: Vec<u8>,
        durability: Durability,
    ) -> Result<bool> {
        self.put_if(table, row, column, expected, value, durability)
    }

    /// Makes every store-log write made so far durable. The buffered frames
    /// are written under the state lock; the fsync runs outside it, so UID
    /// lookups, index writes and reads do not wait for the disk (under
    /// series churn every request assigns a name and syncs).
    fn sync(&self) -> Result<()> {
        let (number, len, file, path) = {
            let mut st = self.lock();
            if st.poisoned {
                return Err(StorageError::Poisoned);
            }
            if let Err(e) = st.log.flush() {
                st.poisoned = true;
                return Err(e.into());
            }
            let handle = st.log.sync_handle();
            let path = st.log.path().to_path_buf();
            (st.manifest.log_number, st.log.len(), handle, path)
        };
        let mut synced = self
            .synced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A later log: this one's writes went to a meta file, synced,
        // before it was replaced.
        if synced.0 > number || (synced.0 == number && synced.1 >= len) {
            return Ok(());
        }
        let result = file.and_then(|f| {
            crate::failpoint::check("store_log_fsync")
                .and_then(|()| f.sync_data())
                .map_err(|source| crate::logfile::LogError::Io { path, source })
        });
        if let Err(e) = result {
            // No retry after a failed fsync (the pages' state is unknown).
            self.lock().poisoned = true;
            return Err(e.into());
        }
        *synced = (number, len);
        Ok(())
    }

    fn checkpoint(&self) -> Result<()> {
        Self::sync_log(&mut self.lock())?;
        self.write_out_memtable(true)
    }

    fn maintain(&self, now_secs: u64, force: bool) -> Result<bool> {
        self.compact_once(now_secs, force)
    }

    fn maintenance_due(&self) -> bool {
        // Every meta file is one more place a UID lookup must search (those
        // at the tier cap are left as they are: `choose_meta_merge`).
        let st = self.lock();
        let merging = st
            .files
            .meta
            .iter()
            .filter(|t| t.size < self.opts.max_tier_bytes)
            .count();
        merging > self.opts.max_meta_files
    }

    fn set_row_compactor(&self, compactor: Arc<dyn RowCompactor>) {
        let _ = self.compactor.set(compactor);
    }

    fn referenced_uids(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        for t in &self.files().data {
            for (o, &u) in out.iter_mut().zip(&t.meta.max_uids) {
                *o = (*o).max(u);
            }
        }
        out
    }

    fn stats(&self) -> StoreStats {
        let st = self.lock();
        let f = &st.files;
        StoreStats {
            data_files: f.data.len() as u64,
            meta_files: f.meta.len() as u64,
            data_bytes: f.data.iter().map(|t| t.size).sum(),
            meta_bytes: f.meta.iter().map(|t| t.size).sum(),
            points: f.data.iter().map(|t| t.meta.point_count).sum(),
            block_cache_bytes: self.cache.used_bytes(),
            block_cache_budget: self.cache.budget(),
            compactions: self.compactions.load(Ordering::Relaxed),
            memtable_bytes: (st.mem_bytes + st.imm_bytes) as u64,
        }
    }

    fn drop_caches(&self) {
        self.cache.clear();
    }

    fn recovery_notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn snapshot(&self, dest: &Path) -> Result<crate::storage::copy::CopyStats> {
        self.snapshot_into(dest)
    }
}
