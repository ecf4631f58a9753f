//! The repair of a table file whose blocks do not all read back (a block
//! checksum mismatch, a block that does not decompress or decode, an index
//! or metadata that misdescribes the blocks): every intact block's entries
//! are written, with their sequence numbers, to a new file of the same kind
//! and window, which replaces the damaged one; the original is moved to
//! `lost+found/` untouched. Only the entries of the damaged blocks are lost
//! (a block holds at most 32 KiB before compression), never the whole file.
//! Publishing the new file and retiring the old one is `open.rs`'s, in the
//! same manifest write as its other repairs.

use std::cell::RefCell;
use std::path::Path;

use super::file_set::tmp_path;
use super::options::EmbeddedOptions;
use super::table::{self, FileKind, TableReader, WriteOptions};
use crate::storage::{Result, StorageError};

/// A salvaged file, written as `<number>.sst.tmp`.
#[derive(Debug)]
pub(super) struct Salvaged {
    /// The new file, opened under its `.tmp` name; `None` if no block of
    /// the original read back.
    pub reader: Option<TableReader>,
    /// What was wrong with each damaged block.
    pub damage: Vec<StorageError>,
    pub entries_kept: u64,
}

/// Writes the intact entries of `original` to a new file numbered
/// `number` in `dir`.
pub(super) fn salvage(
    dir: &Path,
    original: &TableReader,
    number: u64,
    opts: &EmbeddedOptions,
) -> Result<Salvaged> {
    let damage = RefCell::new(Vec::new());
    let meta = &original.meta;
    let write = WriteOptions {
        kind: FileKind::from_u8(meta.kind).unwrap_or(FileKind::Data),
        window_start: meta.window_start,
        window_end: meta.window_end,
        prefix_len: meta.prefix_len as usize,
        bloom_bits_per_key: opts.bloom_bits_per_key,
        zstd_level: opts.zstd_levels[1],
        retention_applied: meta.retention_applied.clone(),
        layout: opts.layout,
        cell_stats: opts.cell_stats,
        rows_hint: meta.row_count,
    };
    let mut kept = 0u64;
    let tmp = tmp_path(dir, number);
    let reader = {
        let mut entries = original
            .intact_entries(&damage)
            .inspect(|_| kept += 1)
            .peekable();
        if entries.peek().is_some() {
            let written = table::write_table(&tmp, entries.map(Ok), &write)
                .and_then(|_| TableReader::open(&tmp, number));
            match written {
                Ok(r) => Some(r),
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e);
                }
            }
        } else {
            None
        }
    };
    let mut damage = damage.into_inner();
    if damage.is_empty() {
        // Every block read back: the filters, the index or the metadata
        // misdescribed them.
        damage.push(
            original
                .verify()
                .err()
                .unwrap_or_else(|| StorageError::Damaged("bloom filter block damaged".into())),
        );
    }
    Ok(Salvaged {
        reader,
        damage,
        entries_kept: kept,
    })
}
