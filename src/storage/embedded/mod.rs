//! The embedded storage engine: a time-partitioned LSM tree in the data
//! directory (`<data_dir>/store`).
//!
//! * **Data rows** (the `tsdb` table) are written in bulk by the engine's
//!   flush ([`Store::write_data`]): each write becomes one table file per
//!   time window it touches (2 h windows by default), published together.
//!   Files carry their window, so a query opens only the windows (and,
//!   through the block index and bloom filters, only the blocks) it needs.
//!   Compaction merges the files of a window and, once a day has closed,
//!   the day's windows into one file; retention drops whole windows. The
//!   policy is pure ([`compaction`]); the worker ([`EmbeddedStore::maintain`])
//!   never holds the write path's locks while doing I/O.
//! * **Meta rows** (the UID table) are small durable writes: they go to the
//!   store log and an in-memory table (memtable), written out as a meta
//!   table file when it grows; meta files are merged size-tiered.
//! * The manifest lists the live files, the live log and the key layout
//!   (manifest.rs). A new table file is written as `N.sst.tmp`, fsynced,
//!   named by a new manifest, then renamed to `N.sst`. On open, a listed
//!   `.tmp` is renamed, an unlisted `.tmp` was never published and is
//!   removed, files a compaction replaced (`obsolete`) are removed, and any
//!   other unexpected file is moved to `lost+found/`, never deleted.
//! * Damage is never repaired silently: a damaged or missing manifest, a
//!   missing table file or a corrupt store log stops `open` with an error
//!   naming the file and offset, unless `repair` is set, in which case the
//!   documented repair runs and every byte it discards is moved to
//!   `lost+found/`.
//!
//! Every entry carries a sequence number; reads merge the sources and keep,
//! per cell, the entry with the highest one. Formats are in `docs/format/`.

mod bloom;
mod cache;
mod check;
pub mod compaction;
pub mod manifest;
mod merge;
mod open;
mod salvage;
pub mod table;
mod worker;

pub use check::{Checked, check};
pub use open::move_aside;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;

use self::cache::BlockCache;
use self::compaction::RetentionView;
use self::merge::MergeIter;
use self::table::{CellStats, Entry, FileKind, TableReader, WriteOptions, io_err};
use super::{
    Cell, DataBuilder, Durability, Mutation, Result, RowCompactor, RowVisitor, StorageError, Store,
    StoreStats, Table,
};
use crate::codec::KeyLayout;
use crate::codec::varint;
use crate::fb::{ManifestData, SchemaData, TableFileData};
use crate::logfile::{self, LogWriter};

pub const LOG_MAGIC: &[u8; 8] = b"HGSTLOG2";
pub const LOG_VERSION: u32 = 2;
/// Store-log bytes kept in memory between writes: small UID assignments
/// cost one write system call per batch instead of three per name. They
/// are written and fsynced by `Store::sync`, before anything durable uses
/// them (see `Durability::Buffered`).
const LOG_BUFFER: usize = 64 << 10;
pub const LOST_AND_FOUND: &str = "lost+found";

/// Memtable: (internal row, column) → (sequence, value or tombstone).
type MemTable = BTreeMap<(Vec<u8>, Vec<u8>), (u64, Option<Bytes>)>;

#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    pub dir: PathBuf,
    pub layout: KeyLayout,
    /// The memtable is written to a meta table file past this many bytes.
    pub memtable_bytes: usize,
    /// Meta table files are merged (size-tiered) beyond this many.
    pub max_meta_files: usize,
    /// Small and large data windows, in seconds.
    pub windows: [u64; 2],
    /// Seconds after a window ends before it counts as closed.
    pub settle_secs: u64,
    /// An open window is merged anyway at this many files.
    pub max_files_per_window: usize,
    pub block_cache_bytes: u64,
    pub bloom_bits_per_key: usize,
    /// zstd level of files written by flushes and by compactions.
    pub zstd_levels: [i32; 2],
    pub retention: RetentionView,
    /// Run the documented repairs instead of refusing to open.
    pub repair: bool,
    /// Counts the points of a data cell (file statistics).
    pub cell_stats: Option<CellStats>,
}

impl EmbeddedOptions {
    /// Defaults for tests and tools: 2 h / 1 day windows, small caches.
    pub fn new(dir: PathBuf, layout: KeyLayout) -> Self {
        Self {
            dir,
            layout,
            memtable_bytes: 8 << 20,
            max_meta_files: 8,
            windows: [7200, 86_400],
            settle_secs: 3600,
            max_files_per_window: 8,
            block_cache_bytes: 8 << 20,
            bloom_bits_per_key: 10,
            zstd_levels: [1, 3],
            retention: RetentionView {
                ttls: Vec::new(),
                forever: true,
            },
            repair: false,
            cell_stats: None,
        }
    }
}

/// The live files: meta files newest first, data files by window.
#[derive(Debug, Default)]
struct Files {
    meta: Vec<Arc<TableReader>>,
    data: Vec<Arc<TableReader>>,
}

impl Files {
    fn with(&self, added: &[Arc<TableReader>], removed: &HashSet<u64>) -> Self {
        let mut meta: Vec<Arc<TableReader>> = Vec::new();
        let mut data: Vec<Arc<TableReader>> = Vec::new();
        for t in self.meta.iter().chain(&self.data).chain(added) {
            if removed.contains(&t.number) {
                continue;
            }
            match t.kind() {
                FileKind::Meta => meta.push(Arc::clone(t)),
                FileKind::Data => data.push(Arc::clone(t)),
            }
        }
        meta.sort_by_key(|t| Reverse(t.meta.max_seq));
        data.sort_by_key(|t| (t.meta.window_start, t.meta.max_seq));
        Self { meta, data }
    }

    fn all(&self) -> impl Iterator<Item = &Arc<TableReader>> {
        self.meta.iter().chain(&self.data)
    }
}

#[derive(Debug)]
struct State {
    mem: MemTable,
    mem_bytes: usize,
    log: LogWriter,
    manifest: ManifestData,
    files: Arc<Files>,
    seq: u64,
    poisoned: bool,
}

/// The default storage backend.
#[derive(Debug)]
pub struct EmbeddedStore {
    dir: PathBuf,
    opts: EmbeddedOptions,
    state: Mutex<State>,
    /// Serialises data writes and the start of compactions, so that a
    /// compaction's snapshot of a window always holds every write with a
    /// lower sequence number.
    data_lock: Mutex<()>,
    /// One compaction at a time.
    compact_lock: Mutex<()>,
    cache: BlockCache,
    compactor: OnceLock<Arc<dyn RowCompactor>>,
    compactions: AtomicU64,
    /// What open recovered on its own.
    notes: Vec<String>,
}

fn internal_row(table: Table, row: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + 1);
    k.push(table as u8);
    k.extend_from_slice(row);
    k
}

/// Internal bounds of a scan of `table` over `[start, end)`.
fn internal_bounds(table: Table, start: &[u8], end: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let s = internal_row(table, start);
    let e = if end.is_empty() {
        vec![table as u8 + 1]
    } else {
        internal_row(table, end)
    };
    (s, e)
}

fn schema_of(layout: &KeyLayout) -> SchemaData {
    SchemaData {
        salt_width: layout.salt_width as u32,
        salt_buckets: layout.salt_buckets,
        metric_width: layout.metric_width as u32,
        tagk_width: layout.tagk_width as u32,
        tagv_width: layout.tagv_width as u32,
    }
}

fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:08}.sst"))
}

fn tmp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:08}.sst.tmp"))
}

fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("log-{number:08}.log"))
}

fn encode_log_batch(seq: u64, batch: &[Op]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let pos = logfile::begin_frame(&mut buf);
    buf.extend_from_slice(&seq.to_le_bytes());
    for (row, col, value) in batch {
        buf.push(u8::from(value.is_none()));
        varint::put_bytes(&mut buf, row);
        varint::put_bytes(&mut buf, col);
        if let Some(v) = value {
            varint::put_bytes(&mut buf, v);
        }
    }
    logfile::finish_frame(&mut buf, pos)?;
    Ok(buf)
}

/// One cell change: internal row, column, value (`None` = delete).
pub type Op = (Vec<u8>, Vec<u8>, Option<Bytes>);

fn into_op(m: Mutation) -> (Table, Op) {
    match m {
        Mutation::Put {
            table,
            row,
            column,
            value,
        } => (
            table,
            (internal_row(table, &row), column, Some(Bytes::from(value))),
        ),
        Mutation::Delete { table, row, column } => {
            (table, (internal_row(table, &row), column, None))
        }
    }
}

/// Decodes one store-log frame payload: its sequence number and changes;
/// `None` if it is malformed (the caller names the file and offset).
pub fn decode_log_batch(payload: &[u8]) -> Option<(u64, Vec<Op>)> {
    let mut r = varint::Reader::new(payload);
    let seq = r.u64_le()?;
    let mut ops = Vec::new();
    while !r.is_empty() {
        let tomb = match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let row = r.bytes()?.to_vec();
        let col = r.bytes()?.to_vec();
        let value = if tomb {
            None
        } else {
            Some(Bytes::copy_from_slice(r.bytes()?))
        };
        ops.push((row, col, value));
    }
    Some((seq, ops))
}

/// A memtable item as a table-file entry.
type MemItem<'a> = (&'a (Vec<u8>, Vec<u8>), &'a (u64, Option<Bytes>));

fn mem_entry(((row, col), (seq, value)): MemItem<'_>) -> Entry {
    Entry {
        row: row.clone(),
        col: col.clone(),
        seq: *seq,
        value: value.clone(),
    }
}

fn file_data(t: &TableReader) -> TableFileData {
    TableFileData {
        number: t.number,
        kind: t.meta.kind,
        min_seq: t.meta.min_seq,
        max_seq: t.meta.max_seq,
        size: t.size,
        window_start: t.meta.window_start,
        window_end: t.meta.window_end,
        point_count: t.meta.point_count,
    }
}

impl EmbeddedStore {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn files(&self) -> Arc<Files> {
        Arc::clone(&self.lock().files)
    }

    fn write_options(&self, kind: FileKind, window: (u64, u64), level: usize) -> WriteOptions {
        let l = &self.opts.layout;
        WriteOptions {
            kind,
            window_start: window.0,
            window_end: window.1,
            prefix_len: match kind {
                FileKind::Data => 1 + l.salt_width + l.metric_width,
                FileKind::Meta => 0,
            },
            bloom_bits_per_key: self.opts.bloom_bits_per_key,
            zstd_level: self.opts.zstd_levels[level.min(1)],
            retention_applied: Vec::new(),
            layout: *l,
            cell_stats: self.opts.cell_stats,
        }
    }

    /// Writes a table file as `N.sst.tmp` and opens it. Not live until
    /// [`EmbeddedStore::publish`] names it.
    fn write_file(
        &self,
        number: u64,
        entries: impl Iterator<Item = Result<Entry>>,
        opts: &WriteOptions,
    ) -> Result<Arc<TableReader>> {
        let tmp = tmp_path(&self.dir, number);
        let written =
            table::write_table(&tmp, entries, opts).and_then(|_| TableReader::open(&tmp, number));
        match written {
            Ok(t) => Ok(Arc::new(t)),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    fn next_number(st: &mut State) -> u64 {
        // Burned even if the write fails: a number is never reused.
        let n = st.manifest.next_file_number;
        st.manifest.next_file_number += 1;
        n
    }

    /// Publishes new files (written as `.tmp`) and retires others with one
    /// manifest write, then renames the new files into place. A failure
    /// before the manifest write leaves the store as it was (the new files
    /// are removed); a failure of the manifest write or of a rename leaves
    /// the on-disk state uncertain, so the store is poisoned.
    fn publish(
        &self,
        st: &mut State,
        added: Vec<Arc<TableReader>>,
        removed: &HashSet<u64>,
        new_log: Option<u64>,
    ) -> Result<()> {
        let mut m = st.manifest.clone();
        m.files.retain(|f| !removed.contains(&f.number));
        m.files.extend(added.iter().map(|t| file_data(t)));
        // Forget obsolete files that are gone; record the new ones.
        m.obsolete.retain(|&n| table_path(&self.dir, n).exists());
        m.obsolete.extend(removed.iter().copied());
        m.generation += 1;
        m.last_seq = st.seq;
        if let Some(l) = new_log {
            m.log_number = l;
        }
        if let Err(e) = manifest::write(&self.dir, &m) {
            st.poisoned = true;
            return Err(e);
        }
        for t in &added {
            let dst = table_path(&self.dir, t.number);
            if let Err(e) = std::fs::rename(t.path(), &dst) {
                st.poisoned = true;
                return Err(io_err(&dst)(e));
            }
        }
        if !added.is_empty()
            && let Err(e) = logfile::sync_dir(&self.dir)
        {
            st.poisoned = true;
            return Err(e.into());
        }
        // Reopen under the final names, so later errors name the right file.
        let mut reopened = Vec::with_capacity(added.len());
        for t in added {
            let dst = table_path(&self.dir, t.number);
            match TableReader::open(&dst, t.number) {
                Ok(r) => reopened.push(Arc::new(r)),
                Err(e) => {
                    st.poisoned = true;
                    return Err(e);
                }
            }
        }
        st.files = Arc::new(st.files.with(&reopened, removed));
        st.manifest = m;
        Ok(())
    }

    /// Writes the memtable to a meta file and starts a new log.
    fn flush_memtable(&self, st: &mut State) -> Result<()> {
        if st.mem.is_empty() {
            return Ok(());
        }
        let new_log_number = Self::next_number(st);
        let new_log_path = log_path(&self.dir, new_log_number);
        let new_log = match LogWriter::create(&new_log_path, LOG_MAGIC, LOG_VERSION) {
            Ok(l) => l.buffered(LOG_BUFFER),
            Err(e) => {
                let _ = std::fs::remove_file(&new_log_path);
                return Err(e.into());
            }
        };
        let number = Self::next_number(st);
        let opts = self.write_options(FileKind::Meta, (0, 0), 0);
        let written = self.write_file(number, st.mem.iter().map(mem_entry).map(Ok), &opts);
        let t = match written {
            Ok(t) => t,
            Err(e) => {
                let _ = std::fs::remove_file(&new_log_path);
                return Err(e);
            }
        };
        self.publish(st, vec![t], &HashSet::new(), Some(new_log_number))?;
        let old = std::mem::replace(&mut st.log, new_log);
        let _ = std::fs::remove_file(old.path());
        st.mem.clear();
        st.mem_bytes = 0;
        Ok(())
    }

    /// Applies meta-table `ops` through the log and the memtable (state
    /// lock held).
    fn apply_logged(&self, st: &mut State, ops: Vec<Op>, durability: Durability) -> Result<()> {
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        let seq = st.seq + 1;
        let framed = encode_log_batch(seq, &ops)?;
        let res = st.log.append(&framed).and_then(|()| match durability {
            Durability::Sync => Self::fsync_log(&mut st.log),
            Durability::Buffered => Ok(()),
        });
        if let Err(e) = res {
            // After a failed write or fsync the file's state is unknown
            // (fsyncgate); refuse further writes rather than pretend.
            st.poisoned = true;
            return Err(e.into());
        }
        st.seq = seq;
        for (row, col, value) in ops {
            st.mem_bytes += row.len() + col.len() + value.as_ref().map_or(0, Bytes::len) + 48;
            st.mem.insert((row, col), (seq, value));
        }
        if st.mem_bytes > self.opts.memtable_bytes {
            Self::sync_log(st)?;
            self.flush_memtable(st)?;
        }
        Ok(())
    }

    fn fsync_log(log: &mut LogWriter) -> std::result::Result<(), logfile::LogError> {
        crate::failpoint::check("store_log_fsync").map_err(|source| logfile::LogError::Io {
            path: log.path().to_path_buf(),
            source,
        })?;
        log.sync()
    }

    /// fsyncs the store log; a failure poisons the store (no retry after a
    /// failed fsync).
    fn sync_log(st: &mut State) -> Result<()> {
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        let r = Self::fsync_log(&mut st.log);
        if r.is_err() {
            st.poisoned = true;
        }
        Ok(r?)
    }

    /// Current value of one meta cell (state lock held).
    fn read_meta_cell(&self, st: &State, irow: &[u8], col: &[u8]) -> Result<Option<Bytes>> {
        let mut best: Option<(u64, Option<Bytes>)> =
            st.mem.get(&(irow.to_vec(), col.to_vec())).cloned();
        let mut end = irow.to_vec();
        end.push(0);
        let h = bloom::key_hash(irow);
        for t in &st.files.meta {
            if best.as_ref().is_some_and(|(s, _)| *s >= t.meta.max_seq) {
                break; // files are newest first; nothing older can win
            }
            if !t.overlaps(irow, &end) || !t.may_contain_row(h) {
                continue;
            }
            for e in t.range(irow, &end, Some(&self.cache)) {
                let e = e?;
                if e.col.as_slice() == col && best.as_ref().is_none_or(|(s, _)| e.seq > *s) {
                    best = Some((e.seq, e.value));
                }
            }
        }
        Ok(best.and_then(|(_, v)| v))
    }

    /// The data files a read of internal rows `[start, end)` must consult:
    /// windows overlapping the base hours of the range (when the bounds name
    /// them) and files whose prefix filter admits the range's metric.
    fn data_sources<'a>(
        &self,
        files: &'a Files,
        start: &[u8],
        end: &[u8],
    ) -> Vec<&'a Arc<TableReader>> {
        let l = &self.opts.layout;
        let prefix = 1 + l.salt_width + l.metric_width;
        let hour = |k: &[u8]| -> Option<u64> {
            let b: [u8; 4] = k.get(prefix..prefix + 4)?.try_into().ok()?;
            Some(u64::from(u32::from_be_bytes(b)))
        };
        let same_prefix =
            start.len() >= prefix && end.len() >= prefix && start[..prefix] == end[..prefix];
        let hours = if same_prefix {
            hour(start).zip(hour(end))
        } else {
            None
        };
        files
            .data
            .iter()
            .filter(|t| t.overlaps(start, end))
            .filter(|t| {
                hours.is_none_or(|(lo, hi)| {
                    t.meta.window_start < hi.max(lo + 1) && lo < t.meta.window_end
                })
            })
            .filter(|t| !same_prefix || t.may_contain_prefix(&start[..prefix]))
            .collect()
    }

    /// Merged, newest-wins entries of a range, grouped into rows; rows
    /// `filter` refuses (key without the table byte) are skipped unread.
    ///
    /// `by_window` (the engine's salt-bucket ranges, whose keys are row
    /// keys): data rows of one (salt, metric) range are ordered by base hour
    /// first, so files of disjoint windows hold consecutive key ranges: they
    /// are read one after the other, and only files whose windows overlap
    /// (a late write next to a window's merged file, a small window inside
    /// a merged day) are merged.
    fn scan_internal(
        &self,
        start: &[u8],
        end: &[u8],
        filter: Option<&crate::storage::KeyFilter<'_>>,
        by_window: bool,
        visit: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let table = start.first().copied().unwrap_or(0);
        let (mem_entries, files) = {
            let st = self.lock();
            let lo = (start.to_vec(), Vec::new());
            let mem_entries: Vec<Entry> = st
                .mem
                .range(lo..)
                .take_while(|((row, _), _)| end.is_empty() || row.as_slice() < end)
                .filter(|((row, _), _)| filter.is_none_or(|f| f(row.get(1..).unwrap_or_default())))
                .map(mem_entry)
                .collect();
            (mem_entries, Arc::clone(&st.files))
        };
        if table == Table::Data as u8 {
            let l = &self.opts.layout;
            let prefix = 1 + l.salt_width + l.metric_width;
            let one_series_range =
                start.len() >= prefix && end.len() >= prefix && start[..prefix] == end[..prefix];
            let mut sources = self.data_sources(&files, start, end);
            if by_window && one_series_range && mem_entries.is_empty() {
                sources.sort_by_key(|t| (t.meta.window_start, t.number));
                let mut i = 0;
                while i < sources.len() {
                    // Files whose windows overlap (a late write's small window
                    // inside a merged day) are merged; disjoint ones chained.
                    let mut window_end = sources[i].meta.window_end;
                    let mut n = 1;
                    while let Some(t) = sources.get(i + n)
                        && t.meta.window_start < window_end
                    {
                        window_end = window_end.max(t.meta.window_end);
                        n += 1;
                    }
                    let window = &sources[i..i + n];
                    let go_on = if let [only] = window {
                        group_rows(
                            only.range_filtered(start, end, Some(&self.cache), filter),
                            visit,
                        )?
                    } else {
                        let merged: Vec<merge::Source<'_>> = window
                            .iter()
                            .map(|t| {
                                Box::new(t.range_filtered(start, end, Some(&self.cache), filter))
                                    as merge::Source<'_>
                            })
                            .collect();
                        group_rows(MergeIter::new(merged), visit)?
                    };
                    if !go_on {
                        return Ok(());
                    }
                    i += n;
                }
                return Ok(());
            }
            let mut merged: Vec<merge::Source<'_>> = Vec::new();
            if !mem_entries.is_empty() {
                merged.push(Box::new(mem_entries.into_iter().map(Ok)));
            }
            for t in sources {
                merged.push(Box::new(t.range_filtered(
                    start,
                    end,
                    Some(&self.cache),
                    filter,
                )));
            }
            group_rows(MergeIter::new(merged), visit)?;
            return Ok(());
        }
        let mut merged: Vec<merge::Source<'_>> = Vec::new();
        if !mem_entries.is_empty() {
            merged.push(Box::new(mem_entries.into_iter().map(Ok)));
        }
        for t in files.meta.iter().filter(|t| t.overlaps(start, end)) {
            merged.push(Box::new(t.range_filtered(
                start,
                end,
                Some(&self.cache),
                filter,
            )));
        }
        group_rows(MergeIter::new(merged), visit)?;
        Ok(())
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

/// Groups a sorted entry stream into rows for a visitor; false once the
/// visitor asked to stop.
fn group_rows(
    entries: impl Iterator<Item = Result<Entry>>,
    visit: &mut RowVisitor<'_>,
) -> Result<bool> {
    let mut cur_row: Option<Vec<u8>> = None;
    let mut cells: Vec<Cell> = Vec::new();
    for e in entries {
        let e = e?;
        if cur_row.as_ref().is_some_and(|r| *r != e.row) {
            let r = cur_row.take().unwrap_or_default();
            if !cells.is_empty() && !visit(&r[1..], std::mem::take(&mut cells))? {
                return Ok(false);
            }
        }
        if cur_row.is_none() {
            cur_row = Some(e.row);
        }
        if let Some(v) = e.value {
            cells.push(Cell {
                column: e.col,
                value: v,
            });
        }
    }
    if let Some(r) = cur_row
        && !cells.is_empty()
    {
        return visit(&r[1..], cells);
    }
    Ok(true)
}

impl Store for EmbeddedStore {
    fn backend_name(&self) -> &'static str {
        "embedded"
    }

    fn get_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>> {
        let start = internal_row(table, row);
        let mut end = start.clone();
        end.push(0);
        let h = bloom::key_hash(&start);
        let (mem_entries, files) = {
            let st = self.lock();
            let lo = (start.clone(), Vec::new());
            let mem_entries: Vec<Entry> = st
                .mem
                .range(lo..)
                .take_while(|((r, _), _)| *r == start)
                .map(mem_entry)
                .collect();
            (mem_entries, Arc::clone(&st.files))
        };
        let mut sources: Vec<merge::Source<'_>> = Vec::new();
        if !mem_entries.is_empty() {
            sources.push(Box::new(mem_entries.into_iter().map(Ok)));
        }
        let candidates: Vec<&Arc<TableReader>> = if table == Table::Data {
            let hour = self
                .opts
                .layout
                .parse_row_key(row)
                .map(|p| u64::from(p.base_time));
            files
                .data
                .iter()
                .filter(|t| hour.is_none_or(|h| t.meta.window_start <= h && h < t.meta.window_end))
                .collect()
        } else {
            files.meta.iter().collect()
        };
        for t in candidates {
            if t.overlaps(&start, &end) && t.may_contain_row(h) {
                sources.push(Box::new(t.range(&start, &end, Some(&self.cache))));
            }
        }
        let mut out = Vec::new();
        group_rows(MergeIter::new(sources), &mut |_, cells| {
            out = cells;
            Ok(false)
        })?;
        Ok(out)
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
            let mut st = self.lock();
            return self.apply_logged(&mut st, ops, durability);
        }
        // Data rows live in window files: a small data write is a small
        // file (compaction folds it in).
        let mut batch = Some(batch);
        self.write_data(&mut |_| Ok(batch.take().unwrap_or_default()))
    }

    fn write_data(&self, build: &mut DataBuilder<'_>) -> Result<()> {
        let _data = self
            .data_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let seq = {
            let mut st = self.lock();
            if st.poisoned {
                return Err(StorageError::Poisoned);
            }
            st.seq += 1;
            st.seq
        };
        let batch = build(seq)?;
        if batch.is_empty() {
            return Ok(());
        }
        // Group by window; within a window, sort by cell keeping the last
        // mutation of a cell.
        let layout = self.opts.layout;
        let small = self.opts.windows[0];
        let mut by_window: BTreeMap<(u64, u64), Vec<Entry>> = BTreeMap::new();
        for m in batch {
            let (table, (row, col, value)) = into_op(m);
            if table != Table::Data {
                return Err(StorageError::Damaged(format!(
                    "internal error: a {table:?} mutation was sent to write_data"
                )));
            }
            let hour = layout
                .parse_row_key(&row[1..])
                .map_or(0, |p| u64::from(p.base_time));
            by_window
                .entry(compaction::window_of(hour, small))
                .or_default()
                .push(Entry {
                    row,
                    col,
                    seq,
                    value,
                });
        }
        let mut added = Vec::new();
        let cleanup = |added: &[Arc<TableReader>]| {
            for t in added {
                let _ = std::fs::remove_file(t.path());
            }
        };
        for (window, mut entries) in by_window {
            entries.reverse();
            entries.sort_by(|a, b| (&a.row, &a.col).cmp(&(&b.row, &b.col)));
            entries.dedup_by(|a, b| a.row == b.row && a.col == b.col);
            let number = Self::next_number(&mut self.lock());
            let opts = self.write_options(FileKind::Data, window, 0);
            match self.write_file(number, entries.into_iter().map(Ok), &opts) {
                Ok(t) => added.push(t),
                Err(e) => {
                    // Nothing was published: the store is unchanged and the
                    // caller may retry.
                    cleanup(&added);
                    return Err(e);
                }
            }
        }
        let mut st = self.lock();
        if st.poisoned {
            cleanup(&added);
            return Err(StorageError::Poisoned);
        }
        self.publish(&mut st, added, &HashSet::new(), None)
    }

    fn increment(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        delta: i64,
        durability: Durability,
    ) -> Result<i64> {
        let irow = internal_row(table, row);
        let mut st = self.lock();
        let cur = match self.read_meta_cell(&st, &irow, column)? {
            None => 0,
            Some(v) => i64::from_be_bytes(v.as_ref().try_into().map_err(|_| {
                StorageError::NotACounter {
                    what: format!("row {row:02X?} column {column:02X?}"),
                }
            })?),
        };
        let next = cur.wrapping_add(delta);
        self.apply_logged(
            &mut st,
            vec![(
                irow,
                column.to_vec(),
                Some(Bytes::copy_from_slice(&next.to_be_bytes())),
            )],
            durability,
        )?;
        Ok(next)
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
        let irow = internal_row(table, row);
        let mut st = self.lock();
        let cur = self.read_meta_cell(&st, &irow, column)?;
        if cur.as_deref() != expected {
            return Ok(false);
        }
        self.apply_logged(
            &mut st,
            vec![(irow, column.to_vec(), Some(Bytes::from(value)))],
            durability,
        )?;
        Ok(true)
    }

    fn sync(&self) -> Result<()> {
        Self::sync_log(&mut self.lock())
    }

    fn checkpoint(&self) -> Result<()> {
        let mut st = self.lock();
        Self::sync_log(&mut st)?;
        self.flush_memtable(&mut st)
    }

    fn maintain(&self, now_secs: u64, force: bool) -> Result<bool> {
        self.compact_once(now_secs, force)
    }

    fn maintenance_due(&self) -> bool {
        // Every meta file is one more place a UID lookup must search.
        self.lock().files.meta.len() > self.opts.max_meta_files
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
            memtable_bytes: st.mem_bytes as u64,
        }
    }

    fn drop_caches(&self) {
        self.cache.clear();
    }

    fn recovery_notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

#[cfg(test)]
mod tests;
