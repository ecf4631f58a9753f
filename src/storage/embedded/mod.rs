//! The embedded storage engine: a small LSM tree in the data directory.
//!
//! * Small durable writes (UID assignments, counters) go to the store log
//!   and an in-memory table (memtable); the memtable is written out as a
//!   table file when it grows or at a checkpoint.
//! * Bulk writes (packed hour rows from the series head) become a table file
//!   directly, so data is written once, not log-then-table.
//! * The manifest lists the live table files, the live log and the key
//!   layout; it is replaced crash-safely (write temp, fsync, rename, fsync
//!   directory). Files not in the manifest are leftovers of an interrupted
//!   publish and are deleted on open.
//! * Every entry carries a sequence number; a read merges the memtable and
//!   the files and keeps, per cell, the entry with the highest sequence.
//!
//! Compaction and retention come later; formats are in `docs/format/`.

mod merge;
pub mod sst;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use xxhash_rust::xxh3::xxh3_64;

use self::merge::MergeIter;
use self::sst::{Entry, TableReader};
use super::{Cell, Durability, Mutation, Result, RowVisitor, StorageError, Store, Table};
use crate::codec::KeyLayout;
use crate::fb::{self, ManifestData, SchemaData, SstFileData};
use crate::logfile::{self, LogWriter, varint};

const LOG_MAGIC: &[u8; 8] = b"HGSTLOG1";
const LOG_VERSION: u32 = 1;
const MANIFEST_MAGIC: &[u8; 8] = b"HGMANIF1";
const MANIFEST_VERSION: u32 = 1;
const MANIFEST: &str = "MANIFEST";

/// Memtable: (internal row, column) → (sequence, value or tombstone).
type MemTable = BTreeMap<(Vec<u8>, Vec<u8>), (u64, Option<Vec<u8>>)>;

#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    pub dir: PathBuf,
    pub layout: KeyLayout,
    /// The memtable is written to a table file past this many bytes.
    pub memtable_bytes: usize,
    /// Table files are merged when there are more than this many.
    pub max_tables: usize,
}

/// Size-tiered merge policy: with more than `max_tables` files, merge the
/// smallest ones — at least four, and enough to get back under the limit.
/// Merging files of similar size keeps the number of files logarithmic in
/// the data and the times each byte is rewritten small. Pure, so it is
/// tested on its own. `tables` = (file number, size).
pub fn choose_merge(tables: &[(u64, u64)], max_tables: usize) -> Option<Vec<u64>> {
    if tables.len() <= max_tables.max(2) {
        return None;
    }
    let mut by_size: Vec<(u64, u64)> = tables.to_vec();
    by_size.sort_by_key(|&(n, size)| (size, n));
    let take = (tables.len() - max_tables + 1).max(4).min(tables.len());
    Some(by_size[..take].iter().map(|&(n, _)| n).collect())
}

#[derive(Debug)]
struct State {
    mem: MemTable,
    mem_bytes: usize,
    log: LogWriter,
    manifest: ManifestData,
    tables: Arc<Vec<Arc<TableReader>>>,
    seq: u64,
    poisoned: bool,
}

/// The default storage backend.
#[derive(Debug)]
pub struct EmbeddedStore {
    dir: PathBuf,
    memtable_bytes: usize,
    max_tables: usize,
    state: Mutex<State>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    }
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

fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("log-{number:08}.log"))
}

fn read_manifest(dir: &Path) -> Result<Option<ManifestData>> {
    let path = dir.join(MANIFEST);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StorageError::Io { path, source: e }),
    };
    let bad = |reason: &str| StorageError::Corrupt {
        path: path.clone(),
        reason: reason.to_string(),
    };
    if bytes.len() < 24 || &bytes[..8] != MANIFEST_MAGIC {
        return Err(bad("bad magic"));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != MANIFEST_VERSION {
        return Err(bad("unsupported manifest version"));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[16..24]);
    let len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let body = bytes.get(24..24 + len).ok_or_else(|| bad("truncated"))?;
    if xxh3_64(body) != u64::from_le_bytes(sum) {
        return Err(bad("checksum mismatch"));
    }
    fb::decode_manifest(body)
        .map(Some)
        .map_err(|e| bad(&e.to_string()))
}

/// Replaces the manifest crash-safely.
fn write_manifest(dir: &Path, m: &ManifestData) -> Result<()> {
    let body = fb::encode_manifest(m);
    let mut bytes = Vec::with_capacity(body.len() + 24);
    bytes.extend_from_slice(MANIFEST_MAGIC);
    bytes.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&xxh3_64(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    let tmp = dir.join("MANIFEST.tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(&bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    let dst = dir.join(MANIFEST);
    std::fs::rename(&tmp, &dst).map_err(io_err(&dst))?;
    logfile::sync_dir(dir)?;
    Ok(())
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
type Op = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

fn into_op(m: Mutation) -> Op {
    match m {
        Mutation::Put {
            table,
            row,
            column,
            value,
        } => (internal_row(table, &row), column, Some(value)),
        Mutation::Delete { table, row, column } => (internal_row(table, &row), column, None),
    }
}

fn decode_log_batch(payload: &[u8], path: &Path) -> Result<(u64, Vec<Op>)> {
    let bad = || StorageError::Corrupt {
        path: path.to_path_buf(),
        reason: "malformed log record".into(),
    };
    let mut r = varint::Reader::new(payload);
    let seq = r.u64_le().ok_or_else(bad)?;
    let mut ops = Vec::new();
    while !r.is_empty() {
        let tomb = r.u8().ok_or_else(bad)? == 1;
        let row = r.bytes().ok_or_else(bad)?.to_vec();
        let col = r.bytes().ok_or_else(bad)?.to_vec();
        let value = if tomb {
            None
        } else {
            Some(r.bytes().ok_or_else(bad)?.to_vec())
        };
        ops.push((row, col, value));
    }
    Ok((seq, ops))
}

/// A memtable key and its versioned value, as iterated.
type MemItem<'a> = (&'a (Vec<u8>, Vec<u8>), &'a (u64, Option<Vec<u8>>));

/// A memtable item as a table-file entry.
fn mem_entry(((row, col), (seq, value)): MemItem<'_>) -> Entry {
    Entry {
        row: row.clone(),
        col: col.clone(),
        seq: *seq,
        value: value.clone(),
    }
}

impl EmbeddedStore {
    /// Opens (or creates) the store in `opts.dir`.
    pub fn open(opts: EmbeddedOptions) -> Result<Self> {
        let dir = opts.dir.clone();
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let schema = schema_of(&opts.layout);
        let manifest = match read_manifest(&dir)? {
            Some(m) => {
                if m.schema != schema {
                    return Err(StorageError::SchemaMismatch {
                        path: dir.clone(),
                        found: format!("{:?}", m.schema),
                        configured: format!("{schema:?}"),
                    });
                }
                m
            }
            None => {
                let m = ManifestData {
                    format_version: MANIFEST_VERSION,
                    generation: 1,
                    last_seq: 0,
                    next_file_number: 2,
                    log_number: 1,
                    schema,
                    files: Vec::new(),
                };
                // A stale log-1 can only come from an interrupted first open.
                let _ = std::fs::remove_file(log_path(&dir, 1));
                LogWriter::create(&log_path(&dir, 1), LOG_MAGIC, LOG_VERSION)?;
                write_manifest(&dir, &m)?;
                m
            }
        };

        let mut tables = Vec::with_capacity(manifest.files.len());
        let mut seq = manifest.last_seq;
        for f in &manifest.files {
            let t = TableReader::open(&table_path(&dir, f.number), f.number)?;
            seq = seq.max(t.meta.seq);
            tables.push(Arc::new(t));
        }
        // Newest first: reads consult files in this order.
        tables.sort_by_key(|t| Reverse(t.meta.seq));

        let mut mem = MemTable::new();
        let mut mem_bytes = 0;
        let lpath = log_path(&dir, manifest.log_number);
        let rec = logfile::read_log(&lpath, LOG_MAGIC, LOG_VERSION, |payload| -> Result<()> {
            let (s, ops) = decode_log_batch(payload, &lpath)?;
            seq = seq.max(s);
            for (row, col, value) in ops {
                mem_bytes += row.len() + col.len() + value.as_ref().map_or(0, Vec::len) + 48;
                mem.insert((row, col), (s, value));
            }
            Ok(())
        })?;
        if rec.torn_bytes > 0 {
            tracing::warn!(log = %lpath.display(), bytes = rec.torn_bytes, "dropped the torn tail of the store log");
        }
        let log = if rec.valid_len == 0 {
            let _ = std::fs::remove_file(&lpath);
            LogWriter::create(&lpath, LOG_MAGIC, LOG_VERSION)?
        } else {
            LogWriter::reopen(&lpath, rec.valid_len)?
        };

        Self::remove_orphans(&dir, &manifest);
        Ok(Self {
            dir,
            memtable_bytes: opts.memtable_bytes,
            max_tables: opts.max_tables,
            state: Mutex::new(State {
                mem,
                mem_bytes,
                log,
                manifest,
                tables: Arc::new(tables),
                seq,
                poisoned: false,
            }),
        })
    }

    fn remove_orphans(dir: &Path, m: &ManifestData) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for ent in rd.flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            let live = if let Some(n) = name.strip_suffix(".sst") {
                n.parse::<u64>()
                    .is_ok_and(|n| m.files.iter().any(|f| f.number == n))
            } else if let Some(n) = name
                .strip_prefix("log-")
                .and_then(|n| n.strip_suffix(".log"))
            {
                n.parse::<u64>() == Ok(m.log_number)
            } else {
                true
            };
            if !live || name.ends_with(".tmp") {
                tracing::info!(file = %name, "removing a file not listed in the manifest");
                let _ = std::fs::remove_file(ent.path());
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated
        // in a way reads care about: every update installs whole values.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes entries (sorted, unique) to a new table file and publishes it.
    /// Called with the state lock held; `State::seq` must already cover them.
    ///
    /// Everything before the manifest write only creates files the manifest
    /// does not name (removed on the next open), so a failure there leaves
    /// the store consistent. A failure writing the manifest leaves its state
    /// unknown: the store is poisoned.
    fn publish_table(&self, st: &mut State, entries: &[Entry], new_log: Option<u64>) -> Result<()> {
        let number = st.manifest.next_file_number;
        // Burn the number even if this fails: a number is never reused.
        st.manifest.next_file_number += 1;
        let (meta, reader) = self.write_new_table(number, entries.iter().cloned().map(Ok))?;
        let mut manifest = st.manifest.clone();
        manifest.files.push(SstFileData {
            number,
            seq: meta.seq,
            size: reader.size,
            min_key: meta.min_key.clone(),
            max_key: meta.max_key.clone(),
        });
        manifest.generation += 1;
        manifest.last_seq = st.seq;
        if let Some(l) = new_log {
            manifest.log_number = l;
        }
        // The rename is made durable by the directory fsync in
        // write_manifest; until the manifest names the file it is an orphan.
        if let Err(e) = write_manifest(&self.dir, &manifest) {
            st.poisoned = true;
            return Err(e);
        }
        let mut tables: Vec<Arc<TableReader>> = st.tables.iter().cloned().collect();
        tables.push(reader);
        tables.sort_by_key(|t| Reverse(t.meta.seq));
        st.tables = Arc::new(tables);
        st.manifest = manifest;
        Ok(())
    }

    /// Writes a table file under its final name (via a temp file) and opens
    /// it, so a file that gets published is always readable. On failure
    /// nothing is left behind; on success the file is not live until a
    /// manifest names it.
    fn write_new_table(
        &self,
        number: u64,
        entries: impl Iterator<Item = Result<Entry>>,
    ) -> Result<(fb::SstMetaData, Arc<TableReader>)> {
        let tmp = self.dir.join(format!("{number:08}.sst.tmp"));
        let path = table_path(&self.dir, number);
        let written = sst::write_table_from(&tmp, entries).and_then(|meta| {
            std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
            Ok((meta, Arc::new(TableReader::open(&path, number)?)))
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&path);
        }
        written
    }

    /// Writes the memtable to a table file and starts a new log.
    fn flush_memtable(&self, st: &mut State) -> Result<()> {
        if st.mem.is_empty() {
            return Ok(());
        }
        let new_log_number = st.manifest.next_file_number;
        st.manifest.next_file_number += 1;
        let new_log_path = log_path(&self.dir, new_log_number);
        let new_log = match LogWriter::create(&new_log_path, LOG_MAGIC, LOG_VERSION) {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_file(&new_log_path);
                return Err(e.into());
            }
        };
        let entries: Vec<Entry> = st.mem.iter().map(mem_entry).collect();
        if let Err(e) = self.publish_table(st, &entries, Some(new_log_number)) {
            let _ = std::fs::remove_file(&new_log_path);
            return Err(e);
        }
        let old = std::mem::replace(&mut st.log, new_log);
        let _ = std::fs::remove_file(old.path());
        st.mem.clear();
        st.mem_bytes = 0;
        Ok(())
    }

    /// Applies `ops` through the log and the memtable (state lock held).
    fn apply_logged(&self, st: &mut State, ops: Vec<Op>, durability: Durability) -> Result<()> {
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        let seq = st.seq + 1;
        let framed = encode_log_batch(seq, &ops)?;
        let res = st.log.append(&framed).and_then(|()| match durability {
            Durability::Sync => st.log.sync(),
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
            st.mem_bytes += row.len() + col.len() + value.as_ref().map_or(0, Vec::len) + 48;
            st.mem.insert((row, col), (seq, value));
        }
        if st.mem_bytes > self.memtable_bytes {
            Self::sync_log(st)?;
            self.flush_memtable(st)?;
        }
        Ok(())
    }

    /// fsyncs the store log; a failure poisons the store (no retry after a
    /// failed fsync).
    fn sync_log(st: &mut State) -> Result<()> {
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        let r = st.log.sync();
        if r.is_err() {
            st.poisoned = true;
        }
        Ok(r?)
    }

    /// Current value of one cell (state lock held).
    fn read_cell(st: &State, irow: &[u8], col: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut best: Option<(u64, Option<Vec<u8>>)> =
            st.mem.get(&(irow.to_vec(), col.to_vec())).cloned();
        let mut end = irow.to_vec();
        end.push(0);
        for t in st.tables.iter() {
            if best.as_ref().is_some_and(|(s, _)| *s >= t.meta.seq) {
                break; // files are newest first; nothing older can win
            }
            if !t.overlaps(irow, &end) {
                continue;
            }
            for e in t.range(irow, &end) {
                let e = e?;
                if e.col.as_slice() == col && best.as_ref().is_none_or(|(s, _)| e.seq > *s) {
                    best = Some((e.seq, e.value));
                }
            }
        }
        Ok(best.and_then(|(_, v)| v))
    }

    /// Merged, newest-wins entries of a range, grouped into rows.
    fn scan_internal(&self, start: &[u8], end: &[u8], visit: &mut RowVisitor<'_>) -> Result<()> {
        let (mem_entries, tables) = {
            let st = self.lock();
            let lo = (start.to_vec(), Vec::new());
            let mem_entries: Vec<Entry> = st
                .mem
                .range(lo..)
                .take_while(|((row, _), _)| end.is_empty() || row.as_slice() < end)
                .map(mem_entry)
                .collect();
            (mem_entries, Arc::clone(&st.tables))
        };
        let mut sources: Vec<merge::Source<'_>> = Vec::new();
        sources.push(Box::new(mem_entries.into_iter().map(Ok)));
        for t in tables.iter().filter(|t| t.overlaps(start, end)) {
            sources.push(Box::new(t.range(start, end)));
        }
        let mut cur_row: Option<Vec<u8>> = None;
        let mut cells: Vec<Cell> = Vec::new();
        for e in MergeIter::new(sources) {
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

    /// Merges table files when there are too many (see [`choose_merge`]).
    /// Every entry keeps its sequence number, so any subset of files can be
    /// merged: reads pick the newest version of a cell wherever it lives.
    /// Tombstones are dropped only when every file is merged and the
    /// memtable holds no older version of the cell. Returns whether it
    /// merged.
    pub fn compact(&self) -> Result<bool> {
        let (inputs, all, mem_keys) = {
            let st = self.lock();
            if st.poisoned {
                return Err(StorageError::Poisoned);
            }
            let sizes: Vec<(u64, u64)> = st.tables.iter().map(|t| (t.number, t.size)).collect();
            let Some(chosen) = choose_merge(&sizes, self.max_tables) else {
                return Ok(false);
            };
            let inputs: Vec<Arc<TableReader>> = st
                .tables
                .iter()
                .filter(|t| chosen.contains(&t.number))
                .cloned()
                .collect();
            let all = inputs.len() == st.tables.len();
            let mem_keys: HashSet<(Vec<u8>, Vec<u8>)> = if all {
                st.mem.keys().cloned().collect()
            } else {
                HashSet::new()
            };
            (inputs, all, mem_keys)
        };
        let number = {
            let mut st = self.lock();
            let n = st.manifest.next_file_number;
            st.manifest.next_file_number += 1;
            n
        };
        let sources: Vec<merge::Source<'_>> = inputs
            .iter()
            .map(|t| Box::new(t.range(&[], &[])) as merge::Source<'_>)
            .collect();
        let merged = MergeIter::new(sources).filter(|e| match e {
            Ok(e) if e.value.is_none() && all => mem_keys.contains(&(e.row.clone(), e.col.clone())),
            _ => true,
        });
        let (meta, reader) = self.write_new_table(number, merged)?;
        let path = reader.path().to_path_buf();
        let gone: HashSet<u64> = inputs.iter().map(|t| t.number).collect();
        {
            let mut st = self.lock();
            let mut manifest = st.manifest.clone();
            manifest.files.retain(|f| !gone.contains(&f.number));
            if meta.entry_count > 0 {
                manifest.files.push(SstFileData {
                    number,
                    seq: meta.seq,
                    size: reader.size,
                    min_key: meta.min_key,
                    max_key: meta.max_key,
                });
            }
            manifest.generation += 1;
            if let Err(e) = write_manifest(&self.dir, &manifest) {
                st.poisoned = true;
                return Err(e);
            }
            let mut tables: Vec<Arc<TableReader>> = st
                .tables
                .iter()
                .filter(|t| !gone.contains(&t.number))
                .cloned()
                .collect();
            if meta.entry_count > 0 {
                tables.push(reader);
            }
            tables.sort_by_key(|t| Reverse(t.meta.seq));
            st.tables = Arc::new(tables);
            st.manifest = manifest;
        }
        // Readers still holding the old files keep them open; unlinking is
        // safe.
        for t in &inputs {
            let _ = std::fs::remove_file(t.path());
        }
        if meta.entry_count == 0 {
            let _ = std::fs::remove_file(&path);
        }
        Ok(true)
    }

    /// Number of live table files (for stats and tests).
    pub fn table_count(&self) -> usize {
        self.lock().tables.len()
    }
}

impl Store for EmbeddedStore {
    fn get_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>> {
        let start = internal_row(table, row);
        let mut end = start.clone();
        end.push(0);
        let mut out = Vec::new();
        self.scan_internal(&start, &end, &mut |_, cells| {
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
        let ops: Vec<Op> = batch.into_iter().map(into_op).collect();
        let mut st = self.lock();
        self.apply_logged(&mut st, ops, durability)
    }

    fn bulk_write(&self, batch: Vec<Mutation>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut st = self.lock();
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        st.seq += 1;
        let seq = st.seq;
        let mut entries: Vec<Entry> = batch
            .into_iter()
            .map(|m| {
                let (row, col, value) = into_op(m);
                Entry {
                    row,
                    col,
                    seq,
                    value,
                }
            })
            .collect();
        // Sort by cell, keeping the last mutation of a cell in the batch.
        entries.reverse();
        entries.sort_by(|a, b| (&a.row, &a.col).cmp(&(&b.row, &b.col)));
        entries.dedup_by(|a, b| a.row == b.row && a.col == b.col);
        // A failure before the manifest write leaves the store as it was
        // (the caller may retry); publish_table poisons when it does not.
        self.publish_table(&mut st, &entries, None)
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
        let cur = match Self::read_cell(&st, &irow, column)? {
            None => 0,
            Some(v) => i64::from_be_bytes(v.as_slice().try_into().map_err(|_| {
                StorageError::NotACounter {
                    what: format!("row {row:02X?} column {column:02X?}"),
                }
            })?),
        };
        let next = cur.wrapping_add(delta);
        self.apply_logged(
            &mut st,
            vec![(irow, column.to_vec(), Some(next.to_be_bytes().to_vec()))],
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
        let cur = Self::read_cell(&st, &irow, column)?;
        if cur.as_deref() != expected {
            return Ok(false);
        }
        self.apply_logged(
            &mut st,
            vec![(irow, column.to_vec(), Some(value))],
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

    fn maintain(&self) -> Result<()> {
        // A few rounds at most per call: the flush thread comes back soon.
        for _ in 0..4 {
            if !self.compact()? {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
