//! Writing a table file: entries in order into zstd blocks, the bloom
//! filters, the index, the metadata and the footer, then fsync. Streaming:
//! a merge of large files needs only a block of memory (plus 8 bytes of
//! bloom hash per row).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use bytes::Bytes;

use super::format::{
    BLOCK_TARGET, BlockHandle, CellStats, Entry, FOOTER_LEN, FORMAT_VERSION, FileKind, MAGIC,
    corrupt, io_err,
};
use crate::checksum;
use crate::codec::KeyLayout;
use crate::codec::varint;
use crate::fb::{self, BlockRef, TableMetaData};
use crate::storage::embedded::bloom;
use crate::storage::{Result, StorageError};

/// How to write a table file.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    pub kind: FileKind,
    pub window_start: u64,
    pub window_end: u64,
    /// Length of the row prefix the prefix bloom filter indexes (0 = none).
    pub prefix_len: usize,
    pub bloom_bits_per_key: usize,
    pub zstd_level: i32,
    pub retention_applied: Vec<u64>,
    /// Key layout, for the data-file statistics (hours, UIDs).
    pub layout: KeyLayout,
    pub cell_stats: Option<CellStats>,
    /// Most rows the file can hold, when the writer knows (a merge's
    /// inputs, a flush's entries; 0 if not): the bloom hashes are reserved
    /// at once rather than grown by doubling, whose copies a large merge
    /// would otherwise hold twice over while it runs.
    pub rows_hint: u64,
}

/// Most bloom hashes reserved from a hint (128 MiB): a larger file grows
/// its list as it goes.
const MAX_RESERVED_HASHES: u64 = 1 << 24;

/// Running statistics of a file being written.
#[derive(Debug, Default)]
struct Stats {
    min_seq: Option<u64>,
    max_seq: u64,
    entries: u64,
    rows: u64,
    min_hour: Option<u64>,
    max_hour: u64,
    points: u64,
    codecs: Vec<u8>,
    max_uids: [u64; 3],
    row_hashes: Vec<u64>,
    prefix_hashes: Vec<u64>,
}

impl Stats {
    fn row(&mut self, row: &[u8], opts: &WriteOptions) {
        self.rows += 1;
        self.row_hashes.push(bloom::key_hash(row));
        if opts.prefix_len > 0 && row.len() >= opts.prefix_len {
            let h = bloom::key_hash(&row[..opts.prefix_len]);
            // Rows arrive sorted, so equal prefixes are adjacent.
            if self.prefix_hashes.last() != Some(&h) {
                self.prefix_hashes.push(h);
            }
        }
        if opts.kind == FileKind::Data
            && row.first() == Some(&(crate::storage::Table::Data as u8))
            && let Some(parts) = opts.layout.parse_row_key(&row[1..])
        {
            let hour = u64::from(parts.base_time);
            self.min_hour = Some(self.min_hour.map_or(hour, |m| m.min(hour)));
            self.max_hour = self.max_hour.max(hour);
            let uid = crate::codec::rowkey::uid_from_bytes;
            self.max_uids[0] = self.max_uids[0].max(uid(parts.metric));
            for (k, v) in opts.layout.tag_pairs(parts.tags) {
                self.max_uids[1] = self.max_uids[1].max(uid(k));
                self.max_uids[2] = self.max_uids[2].max(uid(v));
            }
        }
    }

    fn entry(&mut self, e: &Entry, opts: &WriteOptions) {
        self.entries += 1;
        self.min_seq = Some(self.min_seq.map_or(e.seq, |m| m.min(e.seq)));
        self.max_seq = self.max_seq.max(e.seq);
        if let (Some(stats), Some(v)) = (opts.cell_stats, &e.value)
            && let Some((codec, n)) = stats(&e.col, v)
        {
            self.points += n;
            if !self.codecs.contains(&codec) {
                self.codecs.push(codec);
            }
        }
    }
}

/// Writes entries, which must arrive sorted by `(row, col)` with no
/// duplicates, to `path` and fsyncs it. Nothing is published: the caller
/// renames the finished file into place and records it in the manifest.
/// Streaming: a merge of large files needs only a block of memory (plus the
/// bloom hashes, 8 bytes per row).
pub fn write_table(
    path: &Path,
    entries: impl Iterator<Item = Result<Entry>>,
    opts: &WriteOptions,
) -> Result<TableMetaData> {
    let file = File::create(path).map_err(io_err(path))?;
    let mut out = BufWriter::with_capacity(256 << 10, file);
    let mut offset = 0u64;
    let mut index: Vec<BlockHandle> = Vec::new();
    let mut block = Vec::with_capacity(BLOCK_TARGET + 4096);
    let mut stats = Stats {
        row_hashes: Vec::with_capacity(opts.rows_hint.min(MAX_RESERVED_HASHES) as usize),
        ..Stats::default()
    };

    let mut flush_block = |block: &mut Vec<u8>,
                           last_row: &[u8],
                           out: &mut BufWriter<File>,
                           offset: &mut u64|
     -> Result<()> {
        let raw_len =
            u32::try_from(block.len()).map_err(|_| corrupt(path, None, "block over 4 GiB"))?;
        let compressed =
            super::block_zstd::compress(block, opts.zstd_level).map_err(io_err(path))?;
        out.write_all(&compressed).map_err(io_err(path))?;
        index.push(BlockHandle {
            offset: *offset,
            len: u32::try_from(compressed.len())
                .map_err(|_| corrupt(path, None, "block over 4 GiB"))?,
            raw_len,
            checksum: checksum::of(&compressed),
            last_row: last_row.to_vec(),
        });
        *offset += compressed.len() as u64;
        block.clear();
        Ok(())
    };

    let mut prev_row: Vec<u8> = Vec::new();
    let mut prev_col: Vec<u8> = Vec::new();
    let mut first_row: Option<Vec<u8>> = None;
    let mut have_prev = false;
    let mut enc = Vec::new();
    for e in entries {
        let e = e?;
        if have_prev
            && (e.row.as_slice(), e.col.as_slice()) <= (prev_row.as_slice(), prev_col.as_slice())
        {
            return Err(corrupt(path, None, "entries out of order while writing"));
        }
        let new_row = !have_prev || e.row != prev_row;
        if new_row {
            stats.row(&e.row, opts);
        }
        stats.entry(&e, opts);
        if first_row.is_none() {
            first_row = Some(e.row.clone());
        }
        // Close the block before an entry would take it past the target; an
        // entry larger than the target gets a block of its own. A row's
        // entries may span blocks.
        let entry_len = e.row.len() + e.col.len() + e.value.as_ref().map_or(0, Bytes::len) + 16;
        if have_prev && !block.is_empty() && block.len() + entry_len > BLOCK_TARGET {
            flush_block(&mut block, &prev_row, &mut out, &mut offset)?;
        }
        let shared = if block.is_empty() {
            0
        } else {
            common_prefix(&prev_row, &e.row)
        };
        enc.clear();
        varint::put(&mut enc, shared as u64);
        varint::put_bytes(&mut enc, &e.row[shared..]);
        varint::put_bytes(&mut enc, &e.col);
        varint::put(&mut enc, e.seq);
        match &e.value {
            Some(v) => {
                enc.push(0);
                varint::put_bytes(&mut enc, v);
            }
            None => enc.push(1),
        }
        block.extend_from_slice(&enc);
        prev_row.clear();
        prev_row.extend_from_slice(&e.row);
        prev_col.clear();
        prev_col.extend_from_slice(&e.col);
        have_prev = true;
    }
    if !block.is_empty() {
        flush_block(&mut block, &prev_row, &mut out, &mut offset)?;
    }

    let bloom_offset = offset;
    let mut bloom_bytes = Vec::new();
    bloom::build(&stats.row_hashes, opts.bloom_bits_per_key, &mut bloom_bytes);
    bloom::build(
        &stats.prefix_hashes,
        opts.bloom_bits_per_key,
        &mut bloom_bytes,
    );
    out.write_all(&bloom_bytes).map_err(io_err(path))?;
    offset += bloom_bytes.len() as u64;

    let mut idx = Vec::with_capacity(index.len() * 48);
    varint::put(&mut idx, index.len() as u64);
    for h in &index {
        idx.extend_from_slice(&h.offset.to_le_bytes());
        idx.extend_from_slice(&h.len.to_le_bytes());
        idx.extend_from_slice(&h.raw_len.to_le_bytes());
        idx.extend_from_slice(&h.checksum.to_le_bytes());
        varint::put_bytes(&mut idx, &h.last_row);
    }
    out.write_all(&idx).map_err(io_err(path))?;
    let max_uids = if opts.kind == FileKind::Data {
        stats.max_uids.to_vec()
    } else {
        Vec::new()
    };
    let meta = TableMetaData {
        format_version: FORMAT_VERSION,
        kind: opts.kind as u8,
        min_seq: stats.min_seq.unwrap_or(0),
        max_seq: stats.max_seq,
        entry_count: stats.entries,
        row_count: stats.rows,
        block_count: index.len() as u32,
        min_key: first_row.unwrap_or_default(),
        max_key: if have_prev { prev_row } else { Vec::new() },
        index: BlockRef {
            offset,
            len: idx.len() as u64,
            checksum: checksum::of(&idx),
        },
        bloom: BlockRef {
            offset: bloom_offset,
            len: bloom_bytes.len() as u64,
            checksum: checksum::of(&bloom_bytes),
        },
        prefix_len: opts.prefix_len as u32,
        window_start: opts.window_start,
        window_end: opts.window_end,
        min_hour: stats.min_hour.unwrap_or(0),
        max_hour: stats.max_hour,
        point_count: stats.points,
        codecs: stats.codecs,
        max_uids,
        retention_applied: opts.retention_applied.clone(),
        created_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    };
    let meta_offset = offset + idx.len() as u64;
    let meta_bytes = fb::encode_table_meta(&meta);
    out.write_all(&meta_bytes).map_err(io_err(path))?;
    let mut footer = [0u8; FOOTER_LEN];
    footer[..8].copy_from_slice(&meta_offset.to_le_bytes());
    footer[8..12].copy_from_slice(&(meta_bytes.len() as u32).to_le_bytes());
    footer[12..16].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    footer[16..24].copy_from_slice(&checksum::of(&meta_bytes).to_le_bytes());
    footer[24..32].copy_from_slice(MAGIC);
    out.write_all(&footer).map_err(io_err(path))?;
    let file = out.into_inner().map_err(|e| StorageError::Io {
        path: path.to_path_buf(),
        source: e.into_error(),
    })?;
    crate::failpoint::check("table_fsync").map_err(io_err(path))?;
    file.sync_all().map_err(io_err(path))?;
    Ok(meta)
}

pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
