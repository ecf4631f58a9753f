//! A range scan of one table file ([`TableReader::range`]).

use bytes::Bytes;

use super::format::Entry;
use super::reader::TableReader;
use crate::storage::Result;
use crate::storage::embedded::cache::BlockCache;

/// Streams the entries of one file in a row range, one block at a time,
/// parsing entries in place: those before `start` (a point lookup usually
/// skips most of a block, and a bloom false positive all of it) cost no
/// allocation.
pub struct RangeIter<'a> {
    table: &'a TableReader,
    cache: Option<&'a BlockCache>,
    /// The next block to load.
    block: usize,
    /// The block being read, its number and the read position.
    current: Option<(Bytes, usize, usize)>,
    /// The row of the last parsed entry (rows are prefix-compressed).
    row: Vec<u8>,
    start: Vec<u8>,
    end: Vec<u8>,
    done: bool,
    /// Rows (without the table byte) to keep.
    filter: Option<&'a crate::storage::KeyFilter<'a>>,
    /// The last row the filter judged, and its verdict (a row's cells are
    /// consecutive entries).
    filtered: Option<(Vec<u8>, bool)>,
}

impl TableReader {
    /// Entries with `start <= row < end` (`end` empty = unbounded), in order.
    pub fn range<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        cache: Option<&'a BlockCache>,
    ) -> RangeIter<'a> {
        self.range_filtered(start, end, cache, None)
    }

    /// [`TableReader::range`] of the entries whose row (internal key, table
    /// byte first) `filter` accepts; refused entries are never copied.
    pub fn range_filtered<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        cache: Option<&'a BlockCache>,
        filter: Option<&'a crate::storage::KeyFilter<'a>>,
    ) -> RangeIter<'a> {
        RangeIter {
            table: self,
            cache,
            block: self.first_block_for(start),
            current: None,
            row: Vec::new(),
            start: start.to_vec(),
            end: end.to_vec(),
            done: false,
            filter,
            filtered: None,
        }
    }
}

impl std::fmt::Debug for RangeIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeIter")
            .field("block", &self.block)
            .field("filtered", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let Some((data, i, pos)) = &mut self.current else {
                if self.block >= self.table.block_count() {
                    self.done = true;
                    return None;
                }
                let i = self.block;
                self.block += 1;
                match self.table.block(i, self.cache) {
                    Ok(data) => {
                        self.row.clear();
                        self.current = Some((data, i, 0));
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                continue;
            };
            if *pos >= data.len() {
                self.current = None;
                continue;
            }
            let raw = match self.table.parse_entry(*i, data, pos, &mut self.row) {
                Ok(raw) => raw,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if self.row.as_slice() < self.start.as_slice() {
                continue;
            }
            if !self.end.is_empty() && self.row.as_slice() >= self.end.as_slice() {
                self.done = true;
                return None;
            }
            if let Some(f) = self.filter {
                let keep = match &self.filtered {
                    Some((r, keep)) if *r == self.row => *keep,
                    _ => {
                        let keep = f(self.row.get(1..).unwrap_or_default());
                        self.filtered = Some((self.row.clone(), keep));
                        keep
                    }
                };
                if !keep {
                    continue;
                }
            }
            return Some(Ok(raw.materialize(&self.row, data)));
        }
    }
}
