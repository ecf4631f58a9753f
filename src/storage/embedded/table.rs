//! Immutable sorted table files, format v2 (drawn in
//! `docs/format/table-file.md`).
//!
//! ```text
//! file   := data_block* bloom_block index_block meta footer
//! data   := zstd( entry* )
//! entry  := shared varint | suffix bytes | col bytes | seq varint | kind u8 | [value bytes]
//! bloom  := row_filter prefix_filter                     (bloom.rs)
//! index  := count varint | (offset u64 | len u32 | raw_len u32 | xxh3 u64 | last_row bytes)*
//! meta   := FlatBuffer TableMeta (kind, window, seq range, counts, key range,
//!           block handles, max UIDs, codecs, retention applied)
//! footer := meta_offset u64 | meta_len u32 | version u32 | xxh3(meta) u64 | magic "HGTABLE2"
//! ```
//! Row keys are prefix-compressed against the previous entry of the same
//! block (`shared` bytes reused, `suffix` appended), which keeps decoded
//! blocks small in the block cache. Every block is checksummed over its
//! on-disk bytes and verified before it is decompressed. A file describes
//! itself completely (kind, window, sequence range), so a lost manifest can
//! be rebuilt from the files.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::checksum;
use bytes::Bytes;

use super::bloom::{self, Bloom};
use super::cache::BlockCache;
use crate::codec::KeyLayout;
use crate::codec::varint;
use crate::fb::{self, TableMetaData};
use crate::storage::{Result, StorageError};

pub const MAGIC: &[u8; 8] = b"HGTABLE2";
pub const FORMAT_VERSION: u32 = 2;
const FOOTER_LEN: usize = 32;
const BLOCK_TARGET: usize = 32 << 10;
/// The largest decompressed block a reader accepts. Blocks are cut at
/// [`BLOCK_TARGET`], so only a single huge entry makes a larger one, and
/// every write path bounds its requests far below this; a larger length is
/// damage, refused before it becomes an allocation.
const MAX_BLOCK_RAW: u32 = 256 << 20;

/// What a table file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FileKind {
    /// Small logged writes (UID table and other meta tables), size-tiered.
    Meta = 0,
    /// Data rows of one time window.
    Data = 1,
}

impl FileKind {
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(FileKind::Meta),
            1 => Some(FileKind::Data),
            _ => None,
        }
    }
}

/// One versioned entry: `value == None` is a tombstone. `row` is the
/// internal row key (table byte ‖ row key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub row: Vec<u8>,
    pub col: Vec<u8>,
    pub seq: u64,
    pub value: Option<Bytes>,
}

/// Counts the points of a data cell: `(codec id, points)`; `None` for a
/// cell that holds no points (annotations, tombstones). Supplied by the
/// engine, which owns the cell formats.
pub type CellStats = fn(col: &[u8], value: &[u8]) -> Option<(u8, u64)>;

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
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn corrupt(path: &Path, offset: Option<u64>, reason: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

#[derive(Debug, Clone)]
struct BlockHandle {
    offset: u64,
    len: u32,
    /// Uncompressed length: decompression allocates exactly this, so one
    /// huge entry (a dense packed row) never overflows a fixed guess.
    raw_len: u32,
    checksum: u64,
    last_row: Vec<u8>,
}

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
    let mut stats = Stats::default();

    let mut flush_block = |block: &mut Vec<u8>,
                           last_row: &[u8],
                           out: &mut BufWriter<File>,
                           offset: &mut u64|
     -> Result<()> {
        let raw_len =
            u32::try_from(block.len()).map_err(|_| corrupt(path, None, "block over 4 GiB"))?;
        let compressed = zstd::bulk::compress(block, opts.zstd_level).map_err(io_err(path))?;
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
        index_offset: offset,
        index_len: idx.len() as u64,
        index_checksum: checksum::of(&idx),
        bloom_offset,
        bloom_len: bloom_bytes.len() as u64,
        bloom_checksum: checksum::of(&bloom_bytes),
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

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// An open table file.
#[derive(Debug)]
pub struct TableReader {
    file: File,
    path: PathBuf,
    pub number: u64,
    pub meta: TableMetaData,
    pub size: u64,
    index: Vec<BlockHandle>,
    row_bloom: Bloom,
    prefix_bloom: Bloom,
}

impl TableReader {
    /// Opens a file: reads and verifies the footer, metadata, bloom filters
    /// and index (not the data blocks; see [`TableReader::verify`]).
    pub fn open(path: &Path, number: u64) -> Result<Self> {
        Self::open_with(path, number, false)
    }

    /// Opens a file whose bloom filters may be damaged, to salvage its
    /// blocks (the filters are derived data: the new file gets new ones);
    /// a damaged filter then answers "maybe".
    pub fn open_for_salvage(path: &Path, number: u64) -> Result<Self> {
        Self::open_with(path, number, true)
    }

    fn open_with(path: &Path, number: u64, tolerate_filters: bool) -> Result<Self> {
        let file = File::open(path).map_err(io_err(path))?;
        let size = file.metadata().map_err(io_err(path))?.len();
        if size < FOOTER_LEN as u64 {
            return Err(corrupt(path, Some(0), "shorter than the footer"));
        }
        let footer_at = size - FOOTER_LEN as u64;
        let mut footer = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut footer, footer_at)
            .map_err(io_err(path))?;
        if &footer[24..32] != MAGIC {
            if &footer[24..32] == b"HGTABLE1" {
                return Err(corrupt(
                    path,
                    Some(footer_at),
                    "table format v1 is no longer supported (written by the walking skeleton)",
                ));
            }
            return Err(corrupt(path, Some(footer_at + 24), "bad magic"));
        }
        let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let le32 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        let version = le32(&footer[12..16]);
        if version != FORMAT_VERSION {
            return Err(corrupt(
                path,
                Some(footer_at + 12),
                format!("unsupported format version {version}"),
            ));
        }
        let meta_offset = le64(&footer[0..8]);
        let meta_len = u64::from(le32(&footer[8..12]));
        if meta_offset
            .checked_add(meta_len)
            .is_none_or(|end| end > footer_at)
        {
            return Err(corrupt(path, Some(footer_at), "metadata out of range"));
        }
        let meta_bytes = read_at(&file, path, meta_offset, meta_len)?;
        if !checksum::matches(&meta_bytes, le64(&footer[16..24])) {
            return Err(corrupt(
                path,
                Some(meta_offset),
                "metadata checksum mismatch",
            ));
        }
        let meta = fb::decode_table_meta(&meta_bytes)
            .map_err(|e| corrupt(path, Some(meta_offset), e.to_string()))?;
        let in_range = |off: u64, len: u64| off.checked_add(len).is_some_and(|e| e <= meta_offset);
        if !in_range(meta.index_offset, meta.index_len)
            || !in_range(meta.bloom_offset, meta.bloom_len)
        {
            return Err(corrupt(
                path,
                Some(meta_offset),
                "index or bloom filter out of range",
            ));
        }
        if FileKind::from_u8(meta.kind).is_none() {
            return Err(corrupt(path, Some(meta_offset), "unknown file kind"));
        }
        let bloom_bytes = read_at(&file, path, meta.bloom_offset, meta.bloom_len)?;
        let filters = if checksum::matches(&bloom_bytes, meta.bloom_checksum) {
            Bloom::parse(&bloom_bytes).and_then(|(rows, used)| {
                Bloom::parse(&bloom_bytes[used..]).map(|(prefixes, _)| (rows, prefixes))
            })
        } else {
            None
        };
        let (row_bloom, prefix_bloom) = match filters {
            Some(f) => f,
            None if tolerate_filters => (Bloom::default(), Bloom::default()),
            None => {
                return Err(corrupt(
                    path,
                    Some(meta.bloom_offset),
                    "bloom filter block damaged (checksum mismatch or malformed)",
                ));
            }
        };
        let idx = read_at(&file, path, meta.index_offset, meta.index_len)?;
        if !checksum::matches(&idx, meta.index_checksum) {
            return Err(corrupt(
                path,
                Some(meta.index_offset),
                "index checksum mismatch",
            ));
        }
        let mut r = varint::Reader::new(&idx);
        let bad = || corrupt(path, Some(meta.index_offset), "malformed index");
        let count = r.varint().ok_or_else(bad)?;
        let mut index = Vec::with_capacity(count.min(idx.len() as u64 / 24) as usize);
        for _ in 0..count {
            let offset = r.u64_le().ok_or_else(bad)?;
            let len = r.u32_le().ok_or_else(bad)?;
            let raw_len = r.u32_le().ok_or_else(bad)?;
            let checksum = r.u64_le().ok_or_else(bad)?;
            let last_row = r.bytes().ok_or_else(bad)?.to_vec();
            if offset
                .checked_add(u64::from(len))
                .is_none_or(|e| e > meta.bloom_offset)
            {
                return Err(bad());
            }
            index.push(BlockHandle {
                offset,
                len,
                raw_len,
                checksum,
                last_row,
            });
        }
        if !r.is_empty() || index.len() as u32 != meta.block_count {
            return Err(bad());
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
            number,
            meta,
            size,
            index,
            row_bloom,
            prefix_bloom,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> FileKind {
        FileKind::from_u8(self.meta.kind).unwrap_or(FileKind::Meta)
    }

    /// Memory held by the open file (index and bloom filters).
    pub fn heap_bytes(&self) -> usize {
        self.index
            .iter()
            .map(|h| h.last_row.len() + 48)
            .sum::<usize>()
            + self.row_bloom.heap_bytes()
            + self.prefix_bloom.heap_bytes()
    }

    /// True if some row of the file may fall in `[start, end)` (`end` empty =
    /// unbounded).
    pub fn overlaps(&self, start: &[u8], end: &[u8]) -> bool {
        self.meta.entry_count > 0
            && self.meta.max_key.as_slice() >= start
            && (end.is_empty() || self.meta.min_key.as_slice() < end)
    }

    /// False if the file certainly holds no entry of this row.
    pub fn may_contain_row(&self, row_hash: u64) -> bool {
        self.row_bloom.may_contain(row_hash)
    }

    /// False if the file certainly holds no row starting with this prefix
    /// (only meaningful for prefixes of exactly `meta.prefix_len` bytes).
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        self.meta.prefix_len as usize != prefix.len()
            || self.prefix_bloom.may_contain(bloom::key_hash(prefix))
    }

    /// Reads, verifies and decompresses one block (through the cache).
    fn block(&self, i: usize, cache: Option<&BlockCache>) -> Result<Bytes> {
        if let Some(b) = cache.and_then(|c| c.get(self.number, i as u32)) {
            return Ok(b);
        }
        let h = &self.index[i];
        let buf = read_at(&self.file, &self.path, h.offset, u64::from(h.len))?;
        if !checksum::matches(&buf, h.checksum) {
            return Err(corrupt(
                &self.path,
                Some(h.offset),
                format!("block {i} checksum mismatch"),
            ));
        }
        if h.raw_len > MAX_BLOCK_RAW {
            return Err(corrupt(
                &self.path,
                Some(h.offset),
                format!("block {i}: implausible length {}", h.raw_len),
            ));
        }
        let raw = zstd::bulk::decompress(&buf, h.raw_len as usize)
            .map_err(|e| corrupt(&self.path, Some(h.offset), format!("block {i}: {e}")))?;
        if raw.len() != h.raw_len as usize {
            return Err(corrupt(
                &self.path,
                Some(h.offset),
                format!("block {i}: length mismatch"),
            ));
        }
        let raw = Bytes::from(raw);
        if let Some(c) = cache {
            c.insert(self.number, i as u32, raw.clone());
        }
        Ok(raw)
    }

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
        let first = self
            .index
            .partition_point(|h| h.last_row.as_slice() < start);
        RangeIter {
            table: self,
            cache,
            block: first,
            current: None,
            row: Vec::new(),
            start: start.to_vec(),
            end: end.to_vec(),
            done: false,
            filter,
            filtered: None,
        }
    }

    /// Every entry of every block that reads back intact, in order; a
    /// damaged block is skipped and its error pushed to `damaged` (the
    /// repair of a file whose blocks do not all read back: `salvage.rs`).
    pub fn intact_entries<'a>(
        &'a self,
        damaged: &'a std::cell::RefCell<Vec<StorageError>>,
    ) -> impl Iterator<Item = Entry> + 'a {
        let mut prev: Option<(Vec<u8>, Vec<u8>)> = None;
        (0..self.index.len())
            .flat_map(move |i| {
                match self
                    .block(i, None)
                    .and_then(|data| self.decode_block(i, &data))
                {
                    Ok(entries) => entries,
                    Err(e) => {
                        damaged.borrow_mut().push(e);
                        Vec::new()
                    }
                }
            })
            // A block that passes its checksum yet breaks the order was
            // written wrong; what breaks it is left out, not guessed at.
            .filter(move |e| {
                let ordered = prev.as_ref().is_none_or(|(r, c)| {
                    (e.row.as_slice(), e.col.as_slice()) > (r.as_slice(), c.as_slice())
                });
                if ordered {
                    prev = Some((e.row.clone(), e.col.clone()));
                }
                ordered
            })
    }

    /// Reads and decodes every block, checking checksums and entry order
    /// (`hourglass fsck`).
    pub fn verify(&self) -> Result<u64> {
        let mut n = 0u64;
        let mut prev: Option<(Vec<u8>, Vec<u8>)> = None;
        for i in 0..self.index.len() {
            let data = self.block(i, None)?;
            let entries = self.decode_block(i, &data)?;
            // Range scans seek by the index's last rows and queries prune
            // files by the key range: both must describe the blocks.
            let h = &self.index[i];
            if entries.last().map(|e| e.row.as_slice()) != Some(h.last_row.as_slice()) {
                return Err(corrupt(
                    &self.path,
                    Some(h.offset),
                    format!("block {i}: the index names a different last row"),
                ));
            }
            if i == 0 && entries.first().map(|e| e.row.as_slice()) != Some(&self.meta.min_key) {
                return Err(corrupt(
                    &self.path,
                    None,
                    "the metadata's first row is wrong",
                ));
            }
            if i + 1 == self.index.len() && h.last_row != self.meta.max_key {
                return Err(corrupt(
                    &self.path,
                    None,
                    "the metadata's last row is wrong",
                ));
            }
            for e in entries {
                if let Some((r, c)) = &prev
                    && (e.row.as_slice(), e.col.as_slice()) <= (r.as_slice(), c.as_slice())
                {
                    return Err(corrupt(
                        &self.path,
                        Some(self.index[i].offset),
                        format!("block {i}: entries out of order"),
                    ));
                }
                prev = Some((e.row, e.col));
                n += 1;
            }
        }
        if n != self.meta.entry_count {
            return Err(corrupt(
                &self.path,
                None,
                format!(
                    "{n} entries found, the metadata says {}",
                    self.meta.entry_count
                ),
            ));
        }
        Ok(n)
    }

    fn decode_block(&self, i: usize, data: &Bytes) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut row = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            let e = self.parse_entry(i, data, &mut pos, &mut row)?;
            out.push(e.materialize(&row, data));
        }
        Ok(out)
    }

    /// Parses the entry at `pos` of block `i`: rebuilds its row in `row`
    /// (prefix compression) and returns where its column and value are,
    /// without allocating.
    fn parse_entry(
        &self,
        i: usize,
        data: &[u8],
        pos: &mut usize,
        row: &mut Vec<u8>,
    ) -> Result<RawEntry> {
        let bad = || {
            corrupt(
                &self.path,
                Some(self.index[i].offset),
                format!("block {i}: malformed entry"),
            )
        };
        let mut r = varint::Reader::at(data, *pos);
        let shared = usize::try_from(r.varint().ok_or_else(bad)?).map_err(|_| bad())?;
        if shared > row.len() {
            return Err(bad());
        }
        row.truncate(shared);
        row.extend_from_slice(r.bytes().ok_or_else(bad)?);
        let col_len = usize::try_from(r.varint().ok_or_else(bad)?).map_err(|_| bad())?;
        let col_at = r.position();
        r.take(col_len).ok_or_else(bad)?;
        let seq = r.varint().ok_or_else(bad)?;
        let value = match r.u8().ok_or_else(bad)? {
            0 => {
                let len = usize::try_from(r.varint().ok_or_else(bad)?).map_err(|_| bad())?;
                let at = r.position();
                r.take(len).ok_or_else(bad)?;
                Some(at..at + len)
            }
            1 => None,
            _ => return Err(bad()),
        };
        *pos = r.position();
        Ok(RawEntry {
            col: col_at..col_at + col_len,
            seq,
            value,
        })
    }
}

/// An entry parsed in place: its column and value as ranges of the block.
struct RawEntry {
    col: std::ops::Range<usize>,
    seq: u64,
    value: Option<std::ops::Range<usize>>,
}

impl RawEntry {
    fn materialize(self, row: &[u8], data: &Bytes) -> Entry {
        Entry {
            row: row.to_vec(),
            col: data[self.col].to_vec(),
            seq: self.seq,
            value: self.value.map(|v| data.slice(v)),
        }
    }
}

fn read_at(file: &File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| corrupt(path, Some(offset), "length too large"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset).map_err(io_err(path))?;
    Ok(buf)
}

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
                if self.block >= self.table.index.len() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(row: &[u8], col: &[u8], seq: u64, v: Option<&[u8]>) -> Entry {
        Entry {
            row: row.to_vec(),
            col: col.to_vec(),
            seq,
            value: v.map(Bytes::copy_from_slice),
        }
    }

    fn opts() -> WriteOptions {
        WriteOptions {
            kind: FileKind::Meta,
            window_start: 0,
            window_end: 0,
            prefix_len: 2,
            bloom_bits_per_key: 10,
            zstd_level: 1,
            retention_applied: Vec::new(),
            layout: KeyLayout::default(),
            cell_stats: None,
        }
    }

    fn write(path: &Path, entries: &[Entry]) -> TableMetaData {
        write_table(path, entries.iter().cloned().map(Ok), &opts()).unwrap()
    }

    #[test]
    fn write_read_ranges_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.sst");
        let entries: Vec<Entry> = (0u32..20_000)
            .map(|i| {
                entry(
                    &i.to_be_bytes(),
                    b"tq",
                    u64::from(i),
                    if i % 7 == 0 {
                        None
                    } else {
                        Some(&[1, 2, 3, 4, 5, 6, 7, 8])
                    },
                )
            })
            .collect();
        let meta = write(&path, &entries);
        assert!(meta.block_count > 1);
        assert_eq!((meta.min_seq, meta.max_seq), (0, 19_999));
        let cache = BlockCache::new(1 << 20);
        let t = TableReader::open(&path, 1).unwrap();
        assert_eq!(t.meta.entry_count, 20_000);
        assert_eq!(t.meta.row_count, 20_000);
        for c in [None, Some(&cache), Some(&cache)] {
            let all: Vec<Entry> = t.range(&[], &[], c).collect::<Result<_>>().unwrap();
            assert_eq!(all, entries);
        }
        let part: Vec<Entry> = t
            .range(&5000u32.to_be_bytes(), &5010u32.to_be_bytes(), Some(&cache))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(part, entries[5000..5010]);
        assert!(t.overlaps(&[0, 0], &[0, 1]));
        assert!(!t.overlaps(&[0, 1, 0, 0], &[]));
        assert!(t.may_contain_row(bloom::key_hash(&77u32.to_be_bytes())));
        assert!(t.may_contain_prefix(&[0, 0]));
        assert_eq!(t.verify().unwrap(), 20_000);
    }

    #[test]
    fn bloom_filters_skip_absent_rows_and_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.sst");
        let entries: Vec<Entry> = (0u16..1000)
            .map(|i| entry(&[7, 7, (i >> 8) as u8, i as u8], b"c", 1, Some(b"v")))
            .collect();
        write(&path, &entries);
        let t = TableReader::open(&path, 1).unwrap();
        let absent = (0u16..1000)
            .filter(|i| !t.may_contain_row(bloom::key_hash(&[8, 8, (i >> 8) as u8, *i as u8])))
            .count();
        assert!(absent > 950, "{absent}");
        assert!(t.may_contain_prefix(&[7, 7]));
        assert!(!t.may_contain_prefix(&[9, 9]) || !t.may_contain_prefix(&[9, 8]));
    }

    #[test]
    fn an_entry_larger_than_a_block_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3.sst");
        let big = vec![7u8; 3 << 20];
        let entries = vec![
            entry(b"a", b"t", 1, Some(b"small")),
            entry(b"b", b"t", 1, Some(&big)),
            entry(b"c", b"t", 1, Some(b"small")),
        ];
        write(&path, &entries);
        let t = TableReader::open(&path, 3).unwrap();
        let all: Vec<Entry> = t.range(&[], &[], None).collect::<Result<_>>().unwrap();
        assert_eq!(all, entries);
        let one: Vec<Entry> = t.range(b"b", b"c", None).collect::<Result<_>>().unwrap();
        assert_eq!(one[0].value.as_ref().map(Bytes::len), Some(3 << 20));
    }

    #[test]
    fn unsorted_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("4.sst");
        let entries = [
            entry(b"b", b"t", 1, Some(b"x")),
            entry(b"a", b"t", 1, Some(b"x")),
        ];
        assert!(write_table(&path, entries.iter().cloned().map(Ok), &opts()).is_err());
    }

    #[test]
    fn corruption_is_detected_with_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2.sst");
        let entries: Vec<Entry> = (0u32..100)
            .map(|i| entry(&i.to_be_bytes(), b"c", 1, Some(b"v")))
            .collect();
        write(&path, &entries);
        let good = std::fs::read(&path).unwrap();
        let mut bytes = good.clone();
        bytes[3] ^= 0xFF; // inside the first data block
        std::fs::write(&path, &bytes).unwrap();
        let t = TableReader::open(&path, 2).unwrap();
        let err = t.range(&[], &[], None).find_map(|r| r.err()).unwrap();
        assert!(
            matches!(
                &err,
                StorageError::Corrupt {
                    offset: Some(0),
                    ..
                }
            ),
            "{err}"
        );
        assert!(t.verify().is_err());
        // Every single-byte flip outside the data block is caught on open.
        let data_end = t.index[0].len as usize;
        for i in data_end..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x55;
            std::fs::write(&path, &b).unwrap();
            match TableReader::open(&path, 2) {
                Err(StorageError::Corrupt { .. }) => {}
                Ok(t) => assert!(t.verify().is_err(), "flip at {i} not detected"),
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        // Every truncation is caught.
        for cut in 0..good.len() {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(TableReader::open(&path, 2).is_err(), "cut at {cut}");
        }
    }
}
