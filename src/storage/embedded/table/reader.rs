//! Reading a table file: [`TableReader::open`] reads and verifies the
//! footer, metadata, bloom filters and index; blocks are read, verified
//! against their checksum and decompressed on demand (through the block
//! cache); [`TableReader::verify`] reads them all (fsck), and
//! [`TableReader::intact_entries`] what of them is intact (repair).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::format::{
    BlockHandle, Entry, FOOTER_LEN, FORMAT_VERSION, FileKind, MAGIC, MAX_BLOCK_RAW, corrupt, io_err,
};
use crate::checksum;
use crate::codec::varint;
use crate::fb::{self, BlockRef, TableMetaData};
use crate::storage::embedded::bloom::{self, Bloom};
use crate::storage::embedded::cache::BlockCache;
use crate::storage::{Result, StorageError};

/// An open table file.
#[derive(Debug)]
pub struct TableReader {
    file: File,
    path: PathBuf,
    pub number: u64,
    pub meta: TableMetaData,
    pub size: u64,
    pub(super) index: Vec<BlockHandle>,
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
        let in_range = |block: BlockRef| {
            block
                .offset
                .checked_add(block.len)
                .is_some_and(|e| e <= meta_offset)
        };
        if !in_range(meta.index) || !in_range(meta.bloom) {
            return Err(corrupt(
                path,
                Some(meta_offset),
                "index or bloom filter out of range",
            ));
        }
        if FileKind::from_u8(meta.kind).is_none() {
            return Err(corrupt(path, Some(meta_offset), "unknown file kind"));
        }
        let bloom_bytes = read_at(&file, path, meta.bloom.offset, meta.bloom.len)?;
        let filters = if checksum::matches(&bloom_bytes, meta.bloom.checksum) {
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
                    Some(meta.bloom.offset),
                    "bloom filter block damaged (checksum mismatch or malformed)",
                ));
            }
        };
        let idx = read_at(&file, path, meta.index.offset, meta.index.len)?;
        if !checksum::matches(&idx, meta.index.checksum) {
            return Err(corrupt(
                path,
                Some(meta.index.offset),
                "index checksum mismatch",
            ));
        }
        let mut r = varint::Reader::new(&idx);
        let bad = || corrupt(path, Some(meta.index.offset), "malformed index");
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
                .is_none_or(|e| e > meta.bloom.offset)
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

    /// The open file: its bytes stay readable after compaction unlinks the
    /// name (snapshots copy from it).
    pub fn file(&self) -> &File {
        &self.file
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
    pub(super) fn block(&self, i: usize, cache: Option<&BlockCache>) -> Result<Bytes> {
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
        let raw = super::block_zstd::decompress(&buf, h.raw_len as usize)
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

    /// Blocks in the file.
    pub(super) fn block_count(&self) -> usize {
        self.index.len()
    }

    /// The first block that may hold `row` or a later one.
    pub(super) fn first_block_for(&self, row: &[u8]) -> usize {
        self.index.partition_point(|h| h.last_row.as_slice() < row)
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
    pub(super) fn parse_entry(
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
pub(super) struct RawEntry {
    col: std::ops::Range<usize>,
    seq: u64,
    value: Option<std::ops::Range<usize>>,
}

impl RawEntry {
    pub(super) fn materialize(self, row: &[u8], data: &Bytes) -> Entry {
        Entry {
            row: row.to_vec(),
            col: data[self.col].to_vec(),
            seq: self.seq,
            value: self.value.map(|v| data.slice(v)),
        }
    }
}

pub(super) fn read_at(file: &File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| corrupt(path, Some(offset), "length too large"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset).map_err(io_err(path))?;
    Ok(buf)
}
