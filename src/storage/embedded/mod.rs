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
pub mod compaction;
pub(crate) mod manifest;
mod merge;
pub mod table;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;

use self::cache::BlockCache;
use self::compaction::{FileInfo, Job, Policy, RetentionView};
use self::merge::MergeIter;
use self::table::{CellStats, Entry, FileKind, TableReader, WriteOptions, io_err};
use super::{
    Cell, CompactContext, DataBuilder, Durability, Mutation, Result, RowCompactor, RowVisitor,
    StorageError, Store, StoreStats, Table,
};
use crate::codec::KeyLayout;
use crate::fb::{ManifestData, SchemaData, TableFileData};
use crate::logfile::{self, LogWriter, varint};

const LOG_MAGIC: &[u8; 8] = b"HGSTLOG2";
const LOG_VERSION: u32 = 2;
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

/// Moves a file into `<dir>/lost+found/`, never overwriting anything there.
pub fn move_aside(dir: &Path, file: &Path) -> Result<PathBuf> {
    let lost = dir.join(LOST_AND_FOUND);
    std::fs::create_dir_all(&lost).map_err(io_err(&lost))?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed".into());
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut dst = lost.join(format!("{name}.{stamp}"));
    let mut i = 0;
    while dst.exists() {
        i += 1;
        dst = lost.join(format!("{name}.{stamp}.{i}"));
    }
    std::fs::rename(file, &dst).map_err(io_err(file))?;
    logfile::sync_dir(&lost)?;
    logfile::sync_dir(dir)?;
    Ok(dst)
}

/// What the store directory holds, by file kind.
#[derive(Debug, Default)]
struct Listing {
    tables: HashSet<u64>,
    tmps: HashSet<u64>,
    logs: Vec<u64>,
}

fn list_dir(dir: &Path) -> Result<Listing> {
    let mut l = Listing::default();
    for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name.strip_suffix(".sst.tmp").and_then(|n| n.parse().ok()) {
            l.tmps.insert(n);
        } else if let Some(n) = name.strip_suffix(".sst").and_then(|n| n.parse().ok()) {
            l.tables.insert(n);
        } else if let Some(n) = name
            .strip_prefix("log-")
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse().ok())
        {
            l.logs.push(n);
        }
    }
    l.logs.sort_unstable();
    Ok(l)
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
type Op = (Vec<u8>, Vec<u8>, Option<Bytes>);

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

fn decode_log_batch(payload: &[u8]) -> Option<(u64, Vec<Op>)> {
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

/// Result of replaying the live store log.
struct Replayed {
    mem: MemTable,
    mem_bytes: usize,
    seq: u64,
    log: LogWriter,
    /// A torn tail cut off: (offset, bytes).
    torn: Option<(u64, u64)>,
}

impl EmbeddedStore {
    /// Opens (or creates) the store in `opts.dir`; see the module doc for
    /// what is checked and repaired.
    pub fn open(opts: EmbeddedOptions) -> Result<Self> {
        let dir = opts.dir.clone();
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let schema = schema_of(&opts.layout);
        let listing = list_dir(&dir)?;
        let read = match manifest::read(&dir) {
            Ok(m) => m,
            Err(e) if opts.repair => {
                tracing::error!(error = %e, "store manifest is damaged; repair: rebuilding it from the table files");
                move_aside(&dir, &dir.join(manifest::NAME))?;
                None
            }
            Err(e) => {
                return Err(StorageError::Damaged(format!(
                    "{e}; refusing to start. Set `storage.repair = true` (or run `hourglass fsck --repair`) to rebuild the manifest from the table files; the damaged manifest is then moved to {}/",
                    dir.join(LOST_AND_FOUND).display()
                )));
            }
        };
        let (mut manifest, rebuilt) = match read {
            Some(m) => {
                if m.schema != schema {
                    return Err(StorageError::SchemaMismatch {
                        path: dir.clone(),
                        found: format!("{:?}", m.schema),
                        configured: format!("{schema:?}"),
                    });
                }
                (m, false)
            }
            None if listing.tables.is_empty()
                && listing.tmps.is_empty()
                && listing.logs.is_empty() =>
            {
                let m = ManifestData {
                    format_version: manifest::VERSION,
                    generation: 1,
                    last_seq: 0,
                    next_file_number: 2,
                    log_number: 1,
                    schema,
                    files: Vec::new(),
                    obsolete: Vec::new(),
                };
                LogWriter::create(&log_path(&dir, 1), LOG_MAGIC, LOG_VERSION)?;
                manifest::write(&dir, &m)?;
                (m, false)
            }
            None if opts.repair => (Self::rebuild_manifest(&dir, &listing, schema)?, true),
            None => {
                return Err(StorageError::Damaged(format!(
                    "the store manifest {} is missing, but the directory holds {} table file(s) and {} log(s); refusing to start, since an empty store would hide that data. Set `storage.repair = true` (or run `hourglass fsck --repair`) to rebuild the manifest from the table files",
                    dir.join(manifest::NAME).display(),
                    listing.tables.len() + listing.tmps.len(),
                    listing.logs.len()
                )));
            }
        };
        let mut changed = rebuilt;

        // Listed files: finish interrupted renames, open, check.
        let mut readers: Vec<Arc<TableReader>> = Vec::new();
        let mut keep: Vec<TableFileData> = Vec::new();
        for f in &manifest.files {
            let path = table_path(&dir, f.number);
            if !listing.tables.contains(&f.number) {
                if listing.tmps.contains(&f.number) {
                    std::fs::rename(tmp_path(&dir, f.number), &path).map_err(io_err(&path))?;
                    logfile::sync_dir(&dir)?;
                } else if opts.repair {
                    tracing::error!(file = %path.display(), "repair: table file listed in the manifest is missing; its data is lost, removing it from the manifest");
                    changed = true;
                    continue;
                } else {
                    return Err(StorageError::Damaged(format!(
                        "table file {} is listed in the store manifest but missing; refusing to start without its data. Restore the file, or set `storage.repair = true` to drop it from the manifest (its data is then lost)",
                        path.display()
                    )));
                }
            }
            match TableReader::open(&path, f.number) {
                Ok(t) => {
                    readers.push(Arc::new(t));
                    keep.push(f.clone());
                }
                Err(e) if opts.repair => {
                    let moved = move_aside(&dir, &path)?;
                    tracing::error!(error = %e, moved = %moved.display(), "repair: unreadable table file moved aside and dropped from the manifest");
                    changed = true;
                }
                Err(e) => {
                    return Err(StorageError::Damaged(format!(
                        "{e}; refusing to start. Set `storage.repair = true` to move the file to {}/ and go on without it",
                        dir.join(LOST_AND_FOUND).display()
                    )));
                }
            }
        }
        manifest.files = keep;
        let listed: HashSet<u64> = manifest.files.iter().map(|f| f.number).collect();
        // Files a compaction replaced.
        let obsolete: HashSet<u64> = manifest.obsolete.iter().copied().collect();
        for &n in &listing.tables {
            let path = table_path(&dir, n);
            // (A repair above may already have moved it aside.)
            if listed.contains(&n) || !path.exists() {
                continue;
            }
            if obsolete.contains(&n) {
                std::fs::remove_file(&path).map_err(io_err(&path))?;
            } else {
                let moved = move_aside(&dir, &path)?;
                tracing::warn!(file = %path.display(), moved = %moved.display(), "table file not named by the manifest moved aside (not deleted)");
            }
        }
        if !manifest.obsolete.is_empty() {
            manifest.obsolete.clear();
            changed = true;
        }
        // A .tmp that no manifest names was never published.
        for &n in &listing.tmps {
            if !listed.contains(&n) {
                let p = tmp_path(&dir, n);
                std::fs::remove_file(&p).map_err(io_err(&p))?;
            }
        }

        // Logs: the live one is replayed; older ones were flushed into a
        // listed file; a newer one was created by an interrupted memtable
        // flush and holds nothing.
        for &n in &listing.logs {
            let p = log_path(&dir, n);
            if n < manifest.log_number {
                std::fs::remove_file(&p).map_err(io_err(&p))?;
            } else if n > manifest.log_number {
                let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                if len <= logfile::HEADER_LEN as u64 {
                    std::fs::remove_file(&p).map_err(io_err(&p))?;
                } else {
                    let moved = move_aside(&dir, &p)?;
                    tracing::warn!(file = %p.display(), moved = %moved.display(), "unexpected store log moved aside");
                }
            }
        }
        let replayed = Self::replay_log(&dir, manifest.log_number, opts.repair)?;
        let notes: Vec<String> = replayed
            .torn
            .map(|(offset, bytes)| {
                format!(
                    "the store log {} lost a torn tail of {bytes} bytes at offset {offset} when it was opened",
                    log_path(&dir, manifest.log_number).display()
                )
            })
            .into_iter()
            .collect();
        let mut seq = manifest.last_seq.max(replayed.seq);
        for t in &readers {
            seq = seq.max(t.meta.max_seq);
        }
        let files = Files::default().with(&readers, &HashSet::new());
        if changed {
            manifest.generation += 1;
            manifest.last_seq = seq;
            manifest::write(&dir, &manifest)?;
        }
        let cache = BlockCache::new(opts.block_cache_bytes);
        Ok(Self {
            dir,
            state: Mutex::new(State {
                mem: replayed.mem,
                mem_bytes: replayed.mem_bytes,
                log: replayed.log,
                manifest,
                files: Arc::new(files),
                seq,
                poisoned: false,
            }),
            opts,
            data_lock: Mutex::new(()),
            compact_lock: Mutex::new(()),
            cache,
            compactor: OnceLock::new(),
            compactions: AtomicU64::new(0),
            notes,
        })
    }

    /// Rebuilds a lost manifest from the table files and logs present.
    fn rebuild_manifest(dir: &Path, listing: &Listing, schema: SchemaData) -> Result<ManifestData> {
        let mut files = Vec::new();
        let mut max_number = 1;
        let mut last_seq = 0;
        for &n in listing.tables.iter().chain(&listing.tmps) {
            max_number = max_number.max(n);
        }
        for &n in &listing.tables {
            let path = table_path(dir, n);
            match TableReader::open(&path, n) {
                Ok(t) => {
                    last_seq = last_seq.max(t.meta.max_seq);
                    files.push(file_data(&t));
                }
                Err(e) => {
                    let moved = move_aside(dir, &path)?;
                    tracing::error!(error = %e, moved = %moved.display(), "repair: unreadable table file moved aside");
                }
            }
        }
        // An unpublished .tmp may be half-written or a duplicate of listed
        // data: keep its bytes, out of the way.
        for &n in &listing.tmps {
            move_aside(dir, &tmp_path(dir, n))?;
        }
        // Every log but the newest was flushed into a table file before the
        // next one started; replaying them again is harmless (entries keep
        // their sequence numbers), so fold them into the newest one.
        let log_number = match listing.logs.last() {
            Some(&n) => {
                for &old in &listing.logs[..listing.logs.len() - 1] {
                    move_aside(dir, &log_path(dir, old))?;
                }
                max_number = max_number.max(n);
                n
            }
            None => {
                max_number += 1;
                LogWriter::create(&log_path(dir, max_number), LOG_MAGIC, LOG_VERSION)?;
                max_number
            }
        };
        tracing::warn!(
            files = files.len(),
            "repair: rebuilt the store manifest from the table files"
        );
        Ok(ManifestData {
            format_version: manifest::VERSION,
            generation: 1,
            last_seq,
            next_file_number: max_number + 1,
            log_number,
            schema,
            files,
            obsolete: Vec::new(),
        })
    }

    fn replay_log(dir: &Path, number: u64, repair: bool) -> Result<Replayed> {
        let path = log_path(dir, number);
        let mut mem = MemTable::new();
        let mut mem_bytes = 0usize;
        let mut seq = 0u64;
        let mut apply =
            |offset: u64, payload: &[u8]| -> std::result::Result<(), logfile::LogError> {
                let (s, ops) = decode_log_batch(payload).ok_or(logfile::LogError::BadRecord {
                    path: path.clone(),
                    offset,
                    reason: "malformed store log batch",
                })?;
                seq = seq.max(s);
                for (row, col, value) in ops {
                    mem_bytes += row.len() + col.len() + value.as_ref().map_or(0, Bytes::len) + 48;
                    mem.insert((row, col), (s, value));
                }
                Ok(())
            };
        let fresh = |path: &Path| -> Result<Replayed> {
            Ok(Replayed {
                mem: MemTable::new(),
                mem_bytes: 0,
                seq: 0,
                log: LogWriter::create(path, LOG_MAGIC, LOG_VERSION)?,
                torn: None,
            })
        };
        let rec = match logfile::read_log(&path, LOG_MAGIC, LOG_VERSION, &mut apply) {
            Ok(r) => r,
            Err(
                logfile::LogError::Corrupt { offset, reason, .. }
                | logfile::LogError::BadRecord { offset, reason, .. },
            ) if repair => {
                let moved = logfile::cut_and_move_aside(&path, offset, &dir.join(LOST_AND_FOUND))?;
                tracing::error!(log = %path.display(), offset, reason, moved = %moved.display(), "repair: store log damaged; entries from the damage on were moved aside");
                logfile::Recovered {
                    valid_len: offset,
                    torn_bytes: 0,
                }
            }
            Err(logfile::LogError::BadHeader { .. }) if repair => {
                let moved = move_aside(dir, &path)?;
                tracing::error!(log = %path.display(), moved = %moved.display(), "repair: store log with a bad header moved aside");
                return fresh(&path);
            }
            Err(logfile::LogError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                if repair {
                    tracing::error!(log = %path.display(), "repair: the live store log is missing; starting a new one (its UID assignments are lost)");
                    return fresh(&path);
                }
                return Err(StorageError::Damaged(format!(
                    "the live store log {} is missing; it holds the latest UID assignments. Restore it, or set `storage.repair = true` to start a new one (those assignments are then lost)",
                    path.display()
                )));
            }
            Err(e) => {
                return Err(StorageError::Damaged(format!(
                    "{e}. Set `storage.repair = true` (or run `hourglass fsck --repair`) to keep the entries before the damage and move the rest to {}/",
                    dir.join(LOST_AND_FOUND).display()
                )));
            }
        };
        if rec.torn_bytes > 0 {
            tracing::warn!(log = %path.display(), bytes = rec.torn_bytes, "dropped a torn store log tail (a write that was never acknowledged)");
        }
        let log = if rec.valid_len < logfile::HEADER_LEN as u64 {
            // Created but its header never reached the disk.
            let _ = std::fs::remove_file(&path);
            LogWriter::create(&path, LOG_MAGIC, LOG_VERSION)?
        } else {
            LogWriter::reopen(&path, rec.valid_len)?
        };
        Ok(Replayed {
            mem,
            mem_bytes,
            seq,
            log,
            torn: (rec.torn_bytes > 0).then_some((rec.valid_len, rec.torn_bytes)),
        })
    }

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
            Ok(l) => l,
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

    /// Merged, newest-wins entries of a range, grouped into rows.
    fn scan_internal(&self, start: &[u8], end: &[u8], visit: &mut RowVisitor<'_>) -> Result<()> {
        let table = start.first().copied().unwrap_or(0);
        let (mem_entries, files) = {
            let st = self.lock();
            let lo = (start.to_vec(), Vec::new());
            let mem_entries: Vec<Entry> = st
                .mem
                .range(lo..)
                .take_while(|((row, _), _)| end.is_empty() || row.as_slice() < end)
                .map(mem_entry)
                .collect();
            (mem_entries, Arc::clone(&st.files))
        };
        let mut sources: Vec<merge::Source<'_>> = Vec::new();
        if !mem_entries.is_empty() {
            sources.push(Box::new(mem_entries.into_iter().map(Ok)));
        }
        if table == Table::Data as u8 {
            for t in self.data_sources(&files, start, end) {
                sources.push(Box::new(t.range(start, end, Some(&self.cache))));
            }
        } else {
            for t in files.meta.iter().filter(|t| t.overlaps(start, end)) {
                sources.push(Box::new(t.range(start, end, Some(&self.cache))));
            }
        }
        group_rows(MergeIter::new(sources), visit)
    }

    /// Executes one compaction job chosen by the policy, if any. Returns
    /// whether it did something.
    pub fn compact_once(&self, now_secs: u64, force: bool) -> Result<bool> {
        let _one = self
            .compact_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Snapshot under the data lock: no data write is half-published, so
        // a window's files are a prefix of its writes.
        let (job, files) = {
            let _data = self
                .data_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let st = self.lock();
            if st.poisoned {
                return Err(StorageError::Poisoned);
            }
            let infos: Vec<FileInfo> = st
                .files
                .all()
                .map(|t| FileInfo {
                    number: t.number,
                    kind: t.kind(),
                    size: t.size,
                    min_seq: t.meta.min_seq,
                    window_start: t.meta.window_start,
                    window_end: t.meta.window_end,
                    retention_applied: t.meta.retention_applied.clone(),
                })
                .collect();
            let policy = Policy {
                windows: self.opts.windows,
                settle_secs: self.opts.settle_secs,
                max_files_per_window: self.opts.max_files_per_window,
                max_meta_files: self.opts.max_meta_files,
                retention: self.opts.retention.clone(),
                force,
            };
            (
                compaction::choose(&infos, now_secs, &policy),
                Arc::clone(&st.files),
            )
        };
        let Some(job) = job else { return Ok(false) };
        let pick = |numbers: &[u64]| -> Vec<Arc<TableReader>> {
            files
                .all()
                .filter(|t| numbers.contains(&t.number))
                .cloned()
                .collect()
        };
        match job {
            Job::Drop { files: dead } => {
                let removed: HashSet<u64> = dead.iter().copied().collect();
                let mut st = self.lock();
                self.publish(&mut st, Vec::new(), &removed, None)?;
                drop(st);
                self.unlink(&pick(&dead));
                tracing::info!(files = dead.len(), "retention: dropped expired windows");
            }
            Job::MergeMeta { inputs } => {
                let inputs = pick(&inputs);
                self.merge_meta(inputs)?;
            }
            Job::MergeData {
                inputs,
                window,
                ttls_applied,
            } => {
                let inputs = pick(&inputs);
                self.merge_data(inputs, window, ttls_applied, now_secs)?;
            }
        }
        self.compactions.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    fn unlink(&self, files: &[Arc<TableReader>]) {
        // Readers still holding a file keep it open; unlinking is safe.
        for t in files {
            let _ = std::fs::remove_file(t.path());
        }
    }

    /// Merges meta files. Entries keep their sequence numbers, so any subset
    /// of files can be merged; tombstones are dropped only by a merge of
    /// every meta file when the memtable holds no older version of the cell.
    fn merge_meta(&self, inputs: Vec<Arc<TableReader>>) -> Result<()> {
        let (number, all, mem_keys) = {
            let mut st = self.lock();
            let all = inputs.len() == st.files.meta.len();
            let mem_keys: HashSet<(Vec<u8>, Vec<u8>)> = if all {
                st.mem.keys().cloned().collect()
            } else {
                HashSet::new()
            };
            (Self::next_number(&mut st), all, mem_keys)
        };
        let sources: Vec<merge::Source<'_>> = inputs
            .iter()
            .map(|t| Box::new(t.range(&[], &[], None)) as merge::Source<'_>)
            .collect();
        let merged = MergeIter::new(sources).filter(|e| match e {
            Ok(e) if e.value.is_none() && all => mem_keys.contains(&(e.row.clone(), e.col.clone())),
            _ => true,
        });
        let opts = self.write_options(FileKind::Meta, (0, 0), 1);
        let out = self.write_file(number, merged, &opts)?;
        self.finish_merge(inputs, out)
    }

    /// Merges data files of one window: rows are collapsed by the row
    /// compactor (one cell per row, tombstones and expired rows applied).
    fn merge_data(
        &self,
        inputs: Vec<Arc<TableReader>>,
        window: (u64, u64),
        ttls_applied: Vec<u64>,
        now_secs: u64,
    ) -> Result<()> {
        let number = Self::next_number(&mut self.lock());
        let max_seq = inputs.iter().map(|t| t.meta.max_seq).max().unwrap_or(0);
        let sources: Vec<merge::Source<'_>> = inputs
            .iter()
            .map(|t| Box::new(t.range(&[], &[], None)) as merge::Source<'_>)
            .collect();
        let compactor = self.compactor.get().cloned();
        let ctx = CompactContext { now_secs };
        let rows = RowMerge {
            inner: MergeIter::new(sources),
            pending: None,
            out: Vec::new().into_iter(),
            compactor,
            ctx,
            seq: max_seq,
            done: false,
        };
        let mut opts = self.write_options(FileKind::Data, window, 1);
        opts.retention_applied = ttls_applied;
        let out = self.write_file(number, rows, &opts)?;
        self.finish_merge(inputs, out)
    }

    fn finish_merge(&self, inputs: Vec<Arc<TableReader>>, out: Arc<TableReader>) -> Result<()> {
        let removed: HashSet<u64> = inputs.iter().map(|t| t.number).collect();
        let added = if out.meta.entry_count > 0 {
            vec![out]
        } else {
            let _ = std::fs::remove_file(out.path());
            Vec::new()
        };
        let mut st = self.lock();
        self.publish(&mut st, added, &removed, None)?;
        drop(st);
        self.unlink(&inputs);
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

/// Groups a merged entry stream into rows for a visitor.
fn group_rows(
    entries: impl Iterator<Item = Result<Entry>>,
    visit: &mut RowVisitor<'_>,
) -> Result<()> {
    let mut cur_row: Option<Vec<u8>> = None;
    let mut cells: Vec<Cell> = Vec::new();
    for e in entries {
        let e = e?;
        if cur_row.as_ref().is_some_and(|r| *r != e.row) {
            let r = cur_row.take().unwrap_or_default();
            if !cells.is_empty() && !visit(&r[1..], std::mem::take(&mut cells))? {
                return Ok(());
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
        visit(&r[1..], cells)?;
    }
    Ok(())
}

/// A merged data stream with each row passed through the row compactor;
/// yields the output entries (all stamped with the merge's sequence).
struct RowMerge<'a> {
    inner: MergeIter<'a>,
    /// First entry of the next row, read ahead.
    pending: Option<Entry>,
    out: std::vec::IntoIter<Entry>,
    compactor: Option<Arc<dyn RowCompactor>>,
    ctx: CompactContext,
    seq: u64,
    done: bool,
}

impl Iterator for RowMerge<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.out.next() {
                return Some(Ok(e));
            }
            if self.done {
                return None;
            }
            // Collect one row.
            let first = match self.pending.take() {
                Some(e) => e,
                None => match self.inner.next() {
                    Some(Ok(e)) => e,
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => {
                        self.done = true;
                        return None;
                    }
                },
            };
            let row = first.row.clone();
            let mut cells = Vec::new();
            let push = |e: Entry, cells: &mut Vec<Cell>| {
                // A delete of a column: nothing older survives a merge of
                // every file of the window, so it is simply dropped.
                if let Some(v) = e.value {
                    cells.push(Cell {
                        column: e.col,
                        value: v,
                    });
                }
            };
            push(first, &mut cells);
            loop {
                match self.inner.next() {
                    Some(Ok(e)) if e.row == row => push(e, &mut cells),
                    Some(Ok(e)) => {
                        self.pending = Some(e);
                        break;
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => break,
                }
            }
            let kept = match &self.compactor {
                Some(c) if row.len() > 1 => match c.compact_row(&row[1..], cells, &self.ctx) {
                    Ok(k) => k,
                    Err(reason) => {
                        self.done = true;
                        return Some(Err(StorageError::Corrupt {
                            path: PathBuf::from("<compaction>"),
                            offset: None,
                            reason: format!("row {row:02X?}: {reason}"),
                        }));
                    }
                },
                _ => cells,
            };
            let seq = self.seq;
            let mut entries: Vec<Entry> = kept
                .into_iter()
                .map(|c| Entry {
                    row: row.clone(),
                    col: c.column,
                    seq,
                    value: Some(c.value),
                })
                .collect();
            entries.sort_by(|a, b| a.col.cmp(&b.col));
            entries.dedup_by(|a, b| a.col == b.col);
            self.out = entries.into_iter();
        }
    }
}

impl Store for EmbeddedStore {
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
        self.scan_internal(&s, &e, visit)
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

/// What a read-only check of a store directory learned.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    /// UID counters (metric, tagk, tagv) as stored.
    pub counters: [u64; 3],
    /// Highest UIDs the data files refer to.
    pub referenced: [u64; 3],
    pub files: usize,
    pub entries: u64,
    pub points: u64,
}

/// Verifies a store directory without changing it (`hourglass fsck`): the
/// manifest, every block of every listed file, files nobody lists, and the
/// live store log.
pub fn check(dir: &Path, layout: &KeyLayout, report: &mut crate::tools::Report) -> Checked {
    use crate::tools::Severity::{Error, Info, Warning};
    let mut out = Checked::default();
    let listing = match list_dir(dir) {
        Ok(l) => l,
        Err(e) => {
            report.push(Error, dir, None, e.to_string());
            return out;
        }
    };
    let m = match manifest::read(dir) {
        Ok(Some(m)) => m,
        Ok(None) => {
            if !(listing.tables.is_empty() && listing.logs.is_empty()) {
                report.push(
                    Error,
                    dir.join(manifest::NAME),
                    None,
                    "missing, but table files or logs exist (repair rebuilds it from the files)",
                );
            }
            return out;
        }
        Err(e) => {
            let (offset, reason) = match &e {
                StorageError::Corrupt { offset, reason, .. } => (*offset, reason.clone()),
                other => (None, other.to_string()),
            };
            report.push(Error, dir.join(manifest::NAME), offset, reason);
            return out;
        }
    };
    if m.schema != schema_of(layout) {
        report.push(
            Error,
            dir.join(manifest::NAME),
            None,
            format!("key layout {:?} differs from the configured one", m.schema),
        );
    }
    // The counter row of the UID table, newest version wins.
    let counter_row = internal_row(Table::Uid, &[0]);
    let mut counters: [(u64, u64); 3] = [(0, 0); 3];
    let mut note_counter = |col: &[u8], seq: u64, value: Option<&[u8]>| {
        for (i, kind) in ["metrics", "tagk", "tagv"].iter().enumerate() {
            if col.first() == Some(&b'i') && &col[1..] == kind.as_bytes() && seq >= counters[i].0 {
                let v = value
                    .and_then(|v| <[u8; 8]>::try_from(v).ok())
                    .map_or(0, |b| i64::from_be_bytes(b).max(0) as u64);
                counters[i] = (seq, v);
            }
        }
    };
    let listed: HashSet<u64> = m.files.iter().map(|f| f.number).collect();
    for f in &m.files {
        let path = table_path(dir, f.number);
        if !path.exists() {
            if listing.tmps.contains(&f.number) {
                report.push(
                    Info,
                    tmp_path(dir, f.number),
                    None,
                    "listed but not yet renamed (finished on open)",
                );
            } else {
                report.push(Error, &path, None, "listed in the manifest but missing");
                continue;
            }
        }
        let path = if path.exists() {
            path
        } else {
            tmp_path(dir, f.number)
        };
        let t = match TableReader::open(&path, f.number) {
            Ok(t) => t,
            Err(e) => {
                let offset = match &e {
                    StorageError::Corrupt { offset, .. } => *offset,
                    _ => None,
                };
                report.push(Error, &path, offset, e.to_string());
                continue;
            }
        };
        match t.verify() {
            Ok(n) => out.entries += n,
            Err(e) => {
                let offset = match &e {
                    StorageError::Corrupt { offset, .. } => *offset,
                    _ => None,
                };
                report.push(Error, &path, offset, e.to_string());
                continue;
            }
        }
        if t.kind() == FileKind::Data {
            if t.meta.min_hour < t.meta.window_start
                || (t.meta.row_count > 0 && t.meta.max_hour >= t.meta.window_end)
            {
                report.push(
                    Error,
                    &path,
                    None,
                    format!(
                        "rows of hours {}..={} outside the file's window {}..{}",
                        t.meta.min_hour, t.meta.max_hour, t.meta.window_start, t.meta.window_end
                    ),
                );
            }
            for (o, &u) in out.referenced.iter_mut().zip(&t.meta.max_uids) {
                *o = (*o).max(u);
            }
            out.points += t.meta.point_count;
        } else {
            let mut end = counter_row.clone();
            end.push(0);
            for e in t.range(&counter_row, &end, None).flatten() {
                note_counter(&e.col, e.seq, e.value.as_deref());
            }
        }
        out.files += 1;
    }
    let obsolete: HashSet<u64> = m.obsolete.iter().copied().collect();
    for &n in &listing.tables {
        if !listed.contains(&n) {
            if obsolete.contains(&n) {
                report.push(
                    Info,
                    table_path(dir, n),
                    None,
                    "replaced by a compaction; removed on open",
                );
            } else {
                report.push(
                    Warning,
                    table_path(dir, n),
                    None,
                    "not named by the manifest; moved to lost+found/ on open",
                );
            }
        }
    }
    for &n in &listing.tmps {
        if !listed.contains(&n) {
            report.push(
                Info,
                tmp_path(dir, n),
                None,
                "an unpublished write; removed on open",
            );
        }
    }
    let log = log_path(dir, m.log_number);
    let read = logfile::read_log(&log, LOG_MAGIC, LOG_VERSION, |offset, payload| {
        let (seq, ops) = decode_log_batch(payload).ok_or(logfile::LogError::BadRecord {
            path: log.clone(),
            offset,
            reason: "malformed store log batch",
        })?;
        for (row, col, value) in &ops {
            if *row == counter_row {
                note_counter(col, seq, value.as_deref());
            }
        }
        Ok::<(), logfile::LogError>(())
    });
    match read {
        Ok(r) if r.torn_bytes > 0 => report.push(
            Info,
            &log,
            Some(r.valid_len),
            format!(
                "torn tail of {} bytes (an unacknowledged write; truncated on open)",
                r.torn_bytes
            ),
        ),
        Ok(_) => {}
        Err(e) => {
            let offset = match &e {
                logfile::LogError::Corrupt { offset, .. }
                | logfile::LogError::BadRecord { offset, .. } => Some(*offset),
                _ => None,
            };
            report.push(Error, &log, offset, e.to_string());
        }
    }
    for &n in &listing.logs {
        if n != m.log_number {
            report.push(
                Info,
                log_path(dir, n),
                None,
                "not the live store log; removed on open",
            );
        }
    }
    out.counters = [counters[0].1, counters[1].1, counters[2].1];
    report.checked.push(format!(
        "store: {} table files, {} entries, {} points",
        out.files, out.entries, out.points
    ));
    out
}

#[cfg(test)]
mod tests;
