//! The compaction worker: runs the policy ([`super::policy`]) on a
//! snapshot of the file set and executes the job it picks — merging meta
//! files, merging the files of a window through the row compactor, or
//! dropping expired windows — without holding the write path's locks while
//! it reads or writes files.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::policy::{self, FileInfo, Job, Policy};
use crate::storage::embedded::merge_iter::{self, MergeIter};
use crate::storage::embedded::store::EmbeddedStore;
use crate::storage::embedded::table::{Entry, FileKind, TableReader};
use crate::storage::{Cell, CompactContext, Result, RowCompactor, StorageError};

impl EmbeddedStore {
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
            let mut st = self.lock();
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
                    max_seq: t.meta.max_seq,
                    window_start: t.meta.window_start,
                    window_end: t.meta.window_end,
                    retention_applied: t.meta.retention_applied.clone(),
                })
                .collect();
            let policy = Policy {
                windows: self.opts.windows,
                settle_secs: self.opts.settle_secs,
                max_files_per_window: self.opts.max_files_per_window,
                max_tier_bytes: self.opts.max_tier_bytes,
                min_tier_bytes: self.opts.min_tier_bytes,
                max_meta_files: self.opts.max_meta_files,
                retention: self.opts.retention.clone(),
                force,
                busy: {
                    st.last_data_write
                        .retain(|_, at| at.elapsed() < policy::QUIET);
                    st.last_data_write.keys().copied().collect()
                },
            };
            (
                policy::choose(&infos, now_secs, &policy),
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
    /// every meta file when neither memtable (the live one, or one being
    /// written out) holds a version of the cell.
    fn merge_meta(&self, inputs: Vec<Arc<TableReader>>) -> Result<()> {
        let (number, all, mem_keys) = {
            let mut st = self.lock();
            let all = inputs.len() == st.files.meta.len();
            let mem_keys: HashSet<(Vec<u8>, Vec<u8>)> = if all {
                st.mem
                    .keys()
                    .chain(st.imm.iter().flat_map(|imm| imm.keys()))
                    .cloned()
                    .collect()
            } else {
                HashSet::new()
            };
            (Self::next_number(&mut st), all, mem_keys)
        };
        let sources: Vec<merge_iter::Source<'_>> = inputs
            .iter()
            .map(|t| Box::new(t.range(&[], &[], None)) as merge_iter::Source<'_>)
            .collect();
        let merged = MergeIter::new(sources).filter(|e| match e {
            Ok(e) if e.value.is_none() && all => mem_keys.contains(&(e.row.clone(), e.col.clone())),
            _ => true,
        });
        let mut opts = self.write_options(FileKind::Meta, (0, 0), 1);
        opts.rows_hint = inputs.iter().map(|t| t.meta.row_count).sum();
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
        let (number, complete) = {
            let mut st = self.lock();
            // Files published after this are newer than every input: only
            // older ones left out make the merge partial.
            let taken: HashSet<u64> = inputs.iter().map(|t| t.number).collect();
            let complete = st.files.data.iter().all(|t| {
                taken.contains(&t.number)
                    || t.meta.window_end <= window.0
                    || window.1 <= t.meta.window_start
            });
            (Self::next_number(&mut st), complete)
        };
        let max_seq = inputs.iter().map(|t| t.meta.max_seq).max().unwrap_or(0);
        let sources: Vec<merge_iter::Source<'_>> = inputs
            .iter()
            .map(|t| Box::new(t.range(&[], &[], None)) as merge_iter::Source<'_>)
            .collect();
        let compactor = self.compactor.get().cloned();
        let ctx = CompactContext { now_secs, complete };
        let rows = RowMerge {
            inner: MergeIter::new(sources),
            pending: None,
            out: Vec::new().into_iter(),
            compactor,
            ctx,
            seq: max_seq,
            done: false,
        };
        // A partial merge (a tier of a window still taking files) is
        // rewritten again when the window is merged whole: the flushes'
        // faster zstd level, the compactions' one for the merge that stays.
        let mut opts = self.write_options(FileKind::Data, window, usize::from(complete));
        opts.retention_applied = ttls_applied;
        opts.rows_hint = inputs.iter().map(|t| t.meta.row_count).sum();
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
            let mut deletes = Vec::new();
            let complete = self.ctx.complete;
            let push = |e: Entry, cells: &mut Vec<Cell>, deletes: &mut Vec<Vec<u8>>| {
                match e.value {
                    Some(v) => cells.push(Cell {
                        column: e.col,
                        value: v,
                    }),
                    // A delete of a column: nothing older survives a merge
                    // of every file of the window, so it is dropped there;
                    // a tier merge keeps it for the older files' versions.
                    None if !complete => deletes.push(e.col),
                    None => {}
                }
            };
            push(first, &mut cells, &mut deletes);
            loop {
                match self.inner.next() {
                    Some(Ok(e)) if e.row == row => push(e, &mut cells, &mut deletes),
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
                .chain(deletes.into_iter().map(|col| Entry {
                    row: row.clone(),
                    col,
                    seq,
                    value: None,
                }))
                .collect();
            entries.sort_by(|a, b| a.col.cmp(&b.col));
            entries.dedup_by(|a, b| a.col == b.col);
            self.out = entries.into_iter();
        }
    }
}
