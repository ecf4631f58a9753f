//! k-way merge of sorted entry streams: yields every cell once, in `(row,
//! column)` order, in its newest version (highest sequence number),
//! tombstones included. Used by reads and by compaction.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bytes::Bytes;

use super::table::Entry;
use crate::storage::Result;

/// A sorted stream of entries.
pub type Source<'a> = Box<dyn Iterator<Item = Result<Entry>> + 'a>;

type HeapItem = Reverse<(Vec<u8>, Vec<u8>, Reverse<u64>, usize, Option<Bytes>)>;

pub struct MergeIter<'a> {
    sources: Vec<Source<'a>>,
    heap: BinaryHeap<HeapItem>,
    last: Option<(Vec<u8>, Vec<u8>)>,
    primed: bool,
    done: bool,
}

impl std::fmt::Debug for MergeIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeIter")
            .field("sources", &self.sources.len())
            .finish()
    }
}

impl<'a> MergeIter<'a> {
    pub fn new(sources: Vec<Source<'a>>) -> Self {
        Self {
            sources,
            heap: BinaryHeap::new(),
            last: None,
            primed: false,
            done: false,
        }
    }

    fn refill(&mut self, i: usize) -> Result<()> {
        if let Some(e) = self.sources[i].next() {
            let e = e?;
            self.heap
                .push(Reverse((e.row, e.col, Reverse(e.seq), i, e.value)));
        }
        Ok(())
    }
}

impl Iterator for MergeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.refill(i) {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        while let Some(Reverse((row, col, Reverse(seq), i, value))) = self.heap.pop() {
            if let Err(e) = self.refill(i) {
                self.done = true;
                return Some(Err(e));
            }
            // Older versions of a cell come right after its newest one.
            if self
                .last
                .as_ref()
                .is_some_and(|(r, c)| *r == row && *c == col)
            {
                continue;
            }
            self.last = Some((row.clone(), col.clone()));
            return Some(Ok(Entry {
                row,
                col,
                seq,
                value,
            }));
        }
        self.done = true;
        None
    }
}
