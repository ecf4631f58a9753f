//! The write path: meta-table writes through the store log and the
//! memtable; data rows written as one table file per time window; new
//! files published with one manifest write; the memtable written out as a
//! meta table file.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;

use super::compaction;
use super::file_set::{file_data, log_path, table_path, tmp_path};
use super::keys::internal_row;
use super::manifest;
use super::memtable::{MemTable, mem_entry};
use super::store::{EmbeddedStore, State};
use super::store_log::{LOG_BUFFER, LOG_MAGIC, LOG_VERSION, Op, encode_log_batch, into_op};
use super::table::{self, Entry, FileKind, TableReader, WriteOptions, io_err};
use crate::logfile::{self, LogWriter};
use crate::storage::{DataBuilder, Durability, Result, StorageError, Table};

impl EmbeddedStore {
    pub(super) fn write_options(
        &self,
        kind: FileKind,
        window: (u64, u64),
        level: usize,
    ) -> WriteOptions {
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
            rows_hint: 0,
        }
    }

    /// Writes a table file as `N.sst.tmp` and opens it. Not live until
    /// [`EmbeddedStore::publish`] names it.
    pub(super) fn write_file(
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

    pub(super) fn next_number(st: &mut State) -> u64 {
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
    pub(super) fn publish(
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

    /// Writes the memtable out if `mem_bytes` (its size after a write) is
    /// past `storage.memtable_bytes`. Called without the state lock. Should
    /// another thread be writing one out already, the memtable grows on
    /// until four times the limit; past that, writers wait for it.
    ///
    /// The caller's write is applied before this runs. Should the write-out
    /// fail, the live log is fsynced before the error is returned: a write
    /// reported failed is then durable (or the store poisoned), as when the
    /// write-out ran under the lock, so a caller that does not note a
    /// failed write as unsynced (UID assignment) loses nothing.
    pub(super) fn write_out_if_full(&self, mem_bytes: usize) -> Result<()> {
        let limit = self.opts.memtable_bytes;
        if mem_bytes <= limit {
            return Ok(());
        }
        let written = if mem_bytes <= limit.saturating_mul(4) {
            match self.flush_lock.try_lock() {
                Ok(guard) => self.write_out_locked(guard, false),
                Err(std::sync::TryLockError::WouldBlock) => Ok(()),
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    self.write_out_locked(p.into_inner(), false)
                }
            }
        } else {
            self.write_out_memtable(false)
        };
        if written.is_err() {
            // A failed fsync poisons the store; the write-out's error is
            // the one to report either way.
            let _ = Self::sync_log(&mut self.lock());
        }
        written
    }

    /// Writes the memtable out as a meta file: one left by a failed
    /// write-out first; then, if `force` or it is past the limit, the
    /// current one.
    pub(super) fn write_out_memtable(&self, force: bool) -> Result<()> {
        let guard = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.write_out_locked(guard, force)
    }

    /// The memtable is set aside as `imm` under the state lock and written
    /// without it, so UID lookups and writes go on meanwhile (a full
    /// memtable is some 8 MiB to sort, compress and fsync). Its writes stay
    /// in the live store log until the file is published; then that log's
    /// later writes (those in `mem`) are copied into a new log, which is
    /// fsynced and named in the same manifest write as the file. A crash at
    /// any point leaves either the old manifest and log, or the new ones.
    fn write_out_locked(
        &self,
        _flushing: std::sync::MutexGuard<'_, ()>,
        force: bool,
    ) -> Result<()> {
        loop {
            let (imm, number, left_over) = {
                let mut st = self.lock();
                if st.poisoned {
                    return Err(StorageError::Poisoned);
                }
                let left_over = st.imm.is_some();
                if !left_over {
                    if st.mem.is_empty() || (!force && st.mem_bytes <= self.opts.memtable_bytes) {
                        return Ok(());
                    }
                    let full = std::mem::take(&mut st.mem);
                    st.imm = Some(Arc::new(full));
                    st.imm_bytes = std::mem::take(&mut st.mem_bytes);
                }
                let imm = st.imm.clone().unwrap_or_default();
                (imm, Self::next_number(&mut st), left_over)
            };
            let mut opts = self.write_options(FileKind::Meta, (0, 0), 0);
            opts.rows_hint = imm.len() as u64;
            let written = self.write_file(number, imm.iter().map(mem_entry).map(Ok), &opts)?;
            self.publish_memtable(&mut self.lock(), written)?;
            if !(force && left_over) {
                return Ok(());
            }
        }
    }

    /// Sets the memtable aside as a write-out does, without writing it: the
    /// state of a write-out in flight, or of one that failed.
    #[cfg(test)]
    pub(super) fn set_memtable_aside(&self) {
        let mut st = self.lock();
        if st.imm.is_none() && !st.mem.is_empty() {
            let full = std::mem::take(&mut st.mem);
            st.imm = Some(Arc::new(full));
            st.imm_bytes = std::mem::take(&mut st.mem_bytes);
        }
    }

    /// Publishes the written-out memtable `file` with a new store log that
    /// holds the writes made since it was set aside (state lock held).
    fn publish_memtable(&self, st: &mut State, file: Arc<TableReader>) -> Result<()> {
        let new_log_number = Self::next_number(st);
        let new_log_path = log_path(&self.dir, new_log_number);
        let new_log = self.start_log(&new_log_path, &st.mem);
        let new_log = match new_log {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_file(&new_log_path);
                let _ = std::fs::remove_file(file.path());
                return Err(e);
            }
        };
        self.publish(st, vec![file], &HashSet::new(), Some(new_log_number))?;
        let old = std::mem::replace(&mut st.log, new_log);
        let _ = std::fs::remove_file(old.path());
        st.imm = None;
        st.imm_bytes = 0;
        Ok(())
    }

    /// A new store log holding `mem`'s entries (one batch per sequence
    /// number, so replay gives each its own), fsynced.
    fn start_log(&self, path: &std::path::Path, mem: &MemTable) -> Result<LogWriter> {
        let mut log = LogWriter::create(path, LOG_MAGIC, LOG_VERSION)?.buffered(LOG_BUFFER);
        let mut by_seq: BTreeMap<u64, Vec<Op>> = BTreeMap::new();
        for ((row, col), (seq, value)) in mem {
            by_seq
                .entry(*seq)
                .or_default()
                .push((row.clone(), col.clone(), value.clone()));
        }
        for (seq, ops) in by_seq {
            log.append(&encode_log_batch(seq, &ops)?)?;
        }
        Self::fsync_log(&mut log)?;
        Ok(log)
    }

    /// Applies meta-table `ops` through the log and the memtable (state
    /// lock held); the memtable's size after them, for
    /// [`EmbeddedStore::write_out_if_full`] once the lock is released.
    pub(super) fn apply_logged(
        &self,
        st: &mut State,
        ops: Vec<Op>,
        durability: Durability,
    ) -> Result<usize> {
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
        Ok(st.mem_bytes)
    }

    pub(super) fn fsync_log(log: &mut LogWriter) -> std::result::Result<(), logfile::LogError> {
        crate::failpoint::check("store_log_fsync").map_err(|source| logfile::LogError::Io {
            path: log.path().to_path_buf(),
            source,
        })?;
        log.sync()
    }

    /// fsyncs the store log; a failure poisons the store (no retry after a
    /// failed fsync).
    pub(super) fn sync_log(st: &mut State) -> Result<()> {
        if st.poisoned {
            return Err(StorageError::Poisoned);
        }
        let r = Self::fsync_log(&mut st.log);
        if r.is_err() {
            st.poisoned = true;
        }
        Ok(r?)
    }

    /// A batch of data rows: one new file per time window it touches,
    /// published together.
    pub(super) fn write_window_files(&self, build: &mut DataBuilder<'_>) -> Result<()> {
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
            let mut opts = self.write_options(FileKind::Data, window, 0);
            opts.rows_hint = entries.len() as u64;
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
        let windows: Vec<u64> = added
            .iter()
            .map(|t| compaction::policy::large_window_start(t.meta.window_start, self.opts.windows))
            .collect();
        self.publish(&mut st, added, &HashSet::new(), None)?;
        let now = std::time::Instant::now();
        for window in windows {
            st.last_data_write.insert(window, now);
        }
        Ok(())
    }

    pub(super) fn increment_counter(
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
        let mem_bytes = self.apply_logged(
            &mut st,
            vec![(
                irow,
                column.to_vec(),
                Some(Bytes::copy_from_slice(&next.to_be_bytes())),
            )],
            durability,
        )?;
        drop(st);
        self.write_out_if_full(mem_bytes)?;
        Ok(next)
    }

    pub(super) fn put_if(
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
        let mem_bytes = self.apply_logged(
            &mut st,
            vec![(irow, column.to_vec(), Some(Bytes::from(value)))],
            durability,
        )?;
        drop(st);
        self.write_out_if_full(mem_bytes)?;
        Ok(true)
    }
}
