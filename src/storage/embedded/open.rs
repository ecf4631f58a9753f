//! Opening the store: every file in the directory is accounted for
//! (manifest.md has the table), interrupted publishes are finished or rolled
//! back, the live store log is replayed, and damage stops the open with the
//! file and offset — or, with `repair`, runs the documented repair and sets
//! the damaged bytes aside in `lost+found/`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use super::cache::BlockCache;
use super::file_set::{FileSet, file_data, log_path, table_path, tmp_path};
use super::keys::schema_of;
use super::memtable::MemTable;
use super::options::EmbeddedOptions;
use super::salvage;
use super::store::{EmbeddedStore, State};
use super::store_log::{LOG_BUFFER, LOG_MAGIC, LOG_VERSION, decode_log_batch};
use super::table::{TableReader, io_err};
use super::{LOST_AND_FOUND, manifest};
use crate::fb::{ManifestData, SchemaData, TableFileData};
use crate::logfile::{self, LogWriter};
use crate::storage::{Result, StorageError};

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
pub(super) struct Listing {
    pub(super) tables: HashSet<u64>,
    pub(super) tmps: HashSet<u64>,
    pub(super) logs: Vec<u64>,
}
pub(super) fn list_dir(dir: &Path) -> Result<Listing> {
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
        // Repair: new files salvaged from damaged ones (published as `.tmp`
        // by the manifest write below, then renamed), and the originals,
        // moved aside once the manifest no longer names them.
        let mut salvaged: Vec<u64> = Vec::new();
        let mut retired: Vec<PathBuf> = Vec::new();
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
            let opened = match TableReader::open(&path, f.number) {
                Err(e) if opts.repair => TableReader::open_for_salvage(&path, f.number)
                    .map(|t| (t, true))
                    .map_err(|_| e),
                other => other.map(|t| (t, false)),
            };
            match opened {
                // A repair reads every block, not only what a start reads.
                Ok((t, filters_damaged))
                    if opts.repair && (filters_damaged || t.verify().is_err()) =>
                {
                    let number = manifest.next_file_number;
                    manifest.next_file_number += 1;
                    let s = salvage::salvage(&dir, &t, number, &opts)?;
                    let first = s.damage.first().map(ToString::to_string);
                    tracing::error!(
                        file = %path.display(),
                        damaged_blocks = s.damage.len(),
                        first = first.as_deref().unwrap_or(""),
                        entries_kept = s.entries_kept,
                        entries_lost = t.meta.entry_count.saturating_sub(s.entries_kept),
                        "repair: table file with damaged blocks salvaged into a new file; the original is moved to lost+found"
                    );
                    if let Some(new) = s.reader {
                        keep.push(file_data(&new));
                        readers.push(Arc::new(new));
                        salvaged.push(number);
                    }
                    retired.push(path);
                    changed = true;
                }
                Ok((t, _)) => {
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
            if listed.contains(&n) || !path.exists() || retired.contains(&path) {
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
        // listed file; a newer one was started by a memtable write-out cut
        // short before its manifest write: empty, or a copy of the live
        // log's last writes (those made while the memtable was written).
        // A copy is kept aside rather than deleted, should the live log be
        // the damaged one.
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
                    tracing::warn!(file = %p.display(), moved = %moved.display(), "a store log newer than the manifest's (a memtable write-out cut short; its writes are also in the live log) moved aside");
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
        if changed {
            manifest.generation += 1;
            manifest.last_seq = seq;
            manifest::write(&dir, &manifest)?;
        }
        for &n in &salvaged {
            let path = table_path(&dir, n);
            std::fs::rename(tmp_path(&dir, n), &path).map_err(io_err(&path))?;
            logfile::sync_dir(&dir)?;
            let reopened = Arc::new(TableReader::open(&path, n)?);
            if let Some(r) = readers.iter_mut().find(|r| r.number == n) {
                *r = reopened;
            }
        }
        for path in &retired {
            move_aside(&dir, path)?;
        }
        let files = FileSet::default().with(&readers, &HashSet::new());
        let cache = BlockCache::new(opts.block_cache_bytes);
        Ok(Self {
            dir,
            state: Mutex::new(State {
                mem: replayed.mem,
                mem_bytes: replayed.mem_bytes,
                imm: None,
                imm_bytes: 0,
                log: replayed.log,
                manifest,
                files: Arc::new(files),
                seq,
                poisoned: false,
                last_data_write: Default::default(),
            }),
            opts,
            data_lock: Mutex::new(()),
            compact_lock: Mutex::new(()),
            flush_lock: Mutex::new(()),
            cache,
            compactor: OnceLock::new(),
            compactions: AtomicU64::new(0),
            notes,
            synced: Mutex::new((0, 0)),
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
                log: LogWriter::create(path, LOG_MAGIC, LOG_VERSION)?.buffered(LOG_BUFFER),
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
            LogWriter::create(&path, LOG_MAGIC, LOG_VERSION)?.buffered(LOG_BUFFER)
        } else {
            LogWriter::reopen(&path, rec.valid_len)?.buffered(LOG_BUFFER)
        };
        Ok(Replayed {
            mem,
            mem_bytes,
            seq,
            log,
            torn: (rec.torn_bytes > 0).then_some((rec.valid_len, rec.torn_bytes)),
        })
    }
}
