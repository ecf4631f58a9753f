//! The read path: rows and ranges from the memtable and the table files
//! that may hold them (by window, key range and bloom filter), merged newest
//! first and grouped into rows.

use std::sync::Arc;

use bytes::Bytes;

use super::bloom;
use super::file_set::FileSet;
use super::keys::internal_row;
use super::memtable::{MemTable, mem_entry};
use super::merge_iter::{self, MergeIter};
use super::store::{EmbeddedStore, State};
use super::table::{Entry, TableReader};
use crate::storage::{Cell, Result, RowVisitor, Table};

impl EmbeddedStore {
    /// Current value of one meta cell (state lock held).
    pub(super) fn read_meta_cell(
        &self,
        st: &State,
        irow: &[u8],
        col: &[u8],
    ) -> Result<Option<Bytes>> {
        let key = (irow.to_vec(), col.to_vec());
        // `mem`'s versions are newer than `imm`'s, which are newer than
        // every file's.
        let mut best: Option<(u64, Option<Bytes>)> = st
            .mem
            .get(&key)
            .or_else(|| st.imm.as_ref().and_then(|imm| imm.get(&key)))
            .cloned();
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
    pub(super) fn data_sources<'a>(
        &self,
        files: &'a FileSet,
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
    pub(super) fn scan_internal(
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
            (mem_range(&st, start, end, filter), Arc::clone(&st.files))
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
                        let merged: Vec<merge_iter::Source<'_>> = window
                            .iter()
                            .map(|t| {
                                Box::new(t.range_filtered(start, end, Some(&self.cache), filter))
                                    as merge_iter::Source<'_>
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
            let mut merged = mem_sources(mem_entries);
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
        let mut merged = mem_sources(mem_entries);
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

    /// False only when no cell of the row exists: not in the memtable, and
    /// every file that could hold it (by window and key range) says no by
    /// its bloom filter. Reads no block.
    pub(super) fn row_may_exist(&self, table: Table, row: &[u8]) -> bool {
        let start = internal_row(table, row);
        let mut end = start.clone();
        end.push(0);
        let h = bloom::key_hash(&start);
        let files = {
            let st = self.lock();
            let lo = (start.clone(), Vec::new());
            let has_row = |mem: &MemTable| {
                mem.range(lo.clone()..)
                    .next()
                    .is_some_and(|((r, _), _)| *r == start)
            };
            if has_row(&st.mem) || st.imm.as_deref().is_some_and(has_row) {
                return true;
            }
            Arc::clone(&st.files)
        };
        let hour = (table == Table::Data)
            .then(|| {
                self.opts
                    .layout
                    .parse_row_key(row)
                    .map(|p| u64::from(p.base_time))
            })
            .flatten();
        let candidates: &[Arc<TableReader>] = if table == Table::Data {
            &files.data
        } else {
            &files.meta
        };
        candidates.iter().any(|t| {
            hour.is_none_or(|hr| t.meta.window_start <= hr && hr < t.meta.window_end)
                && t.overlaps(&start, &end)
                && t.may_contain_row(h)
        })
    }

    /// One row: the memtable and the files that may hold it (by window
    /// and bloom filter), merged.
    pub(super) fn read_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>> {
        let start = internal_row(table, row);
        let mut end = start.clone();
        end.push(0);
        let h = bloom::key_hash(&start);
        let (mem_entries, files) = {
            let st = self.lock();
            (mem_range(&st, &start, &end, None), Arc::clone(&st.files))
        };
        let mut sources = mem_sources(mem_entries);
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

/// The entries of internal rows `[start, end)` (an empty `end`: to the
/// table's end) that `filter` admits, from the memtable and from one being
/// written out: one list each, the empty ones left out.
fn mem_range(
    st: &State,
    start: &[u8],
    end: &[u8],
    filter: Option<&crate::storage::KeyFilter<'_>>,
) -> Vec<Vec<Entry>> {
    let lo = (start.to_vec(), Vec::new());
    std::iter::once(&st.mem)
        .chain(st.imm.as_deref())
        .map(|mem| {
            mem.range(lo.clone()..)
                .take_while(|((row, _), _)| end.is_empty() || row.as_slice() < end)
                .filter(|((row, _), _)| filter.is_none_or(|f| f(row.get(1..).unwrap_or_default())))
                .map(mem_entry)
                .collect::<Vec<Entry>>()
        })
        .filter(|entries| !entries.is_empty())
        .collect()
}

/// The memtables' entries as merge sources.
fn mem_sources<'a>(lists: Vec<Vec<Entry>>) -> Vec<merge_iter::Source<'a>> {
    lists
        .into_iter()
        .map(|entries| Box::new(entries.into_iter().map(Ok)) as merge_iter::Source<'a>)
        .collect()
}
