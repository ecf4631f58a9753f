//! The memtable: the meta tables' writes since the last meta table file,
//! sorted by (internal row, column), newest version only.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::table::Entry;

/// Memtable: (internal row, column) → (sequence, value or tombstone).
pub(super) type MemTable = BTreeMap<(Vec<u8>, Vec<u8>), (u64, Option<Bytes>)>;

/// A memtable item as a table-file entry.
pub(super) type MemItem<'a> = (&'a (Vec<u8>, Vec<u8>), &'a (u64, Option<Bytes>));

pub(super) fn mem_entry(((row, col), (seq, value)): MemItem<'_>) -> Entry {
    Entry {
        row: row.clone(),
        col: col.clone(),
        seq: *seq,
        value: value.clone(),
    }
}
