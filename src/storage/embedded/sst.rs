//! Immutable sorted table files (format v1, drawn in
//! `docs/format/table-file.md`).
//!
//! ```text
//! file   := data_block* index_block meta footer
//! data   := zstd( entry* )         entry := row col seq kind [value]
//! index  := count (block_offset u64 | block_len u32 | xxh3 u64 | last_row | last_col)*
//! meta   := FlatBuffer SstMeta (seq, counts, key range, index handle)
//! footer := meta_offset u64 | meta_len u32 | version u32 | xxh3(meta) u64 | magic "HGTABLE1"
//! ```
//! All fixed-width integers are little-endian; `row`, `col` and `value` are
//! varint-length-prefixed byte strings; `row` is the internal key (table
//! byte ‖ row key). Every block is checksummed with xxh3-64 over its on-disk
//! bytes and verified on each read.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64;

use crate::fb::{self, SstMetaData};
use crate::logfile::varint;
use crate::storage::{Result, StorageError};

pub const MAGIC: &[u8; 8] = b"HGTABLE1";
pub const FORMAT_VERSION: u32 = 1;
const FOOTER_LEN: usize = 32;
const BLOCK_TARGET: usize = 32 << 10;
const ZSTD_LEVEL: i32 = 1;

/// One versioned entry: `value == None` is a tombstone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub row: Vec<u8>,
    pub col: Vec<u8>,
    pub seq: u64,
    pub value: Option<Vec<u8>>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
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
    last_col: Vec<u8>,
}

/// Writes entries, which must arrive sorted by `(row, col)` with no
/// duplicates, then publishes nothing: the caller renames the finished file
/// into place and records it in the manifest.
#[cfg(test)]
pub fn write_table(path: &Path, entries: &[Entry]) -> Result<SstMetaData> {
    write_table_from(path, entries.iter().cloned().map(Ok))
}

/// Streaming form of [`write_table`]: entries are written as they come, so a
/// merge of large files needs only a block of memory.
pub fn write_table_from(
    path: &Path,
    entries: impl Iterator<Item = Result<Entry>>,
) -> Result<SstMetaData> {
    let file = File::create(path).map_err(io_err(path))?;
    let mut out = BufWriter::with_capacity(256 << 10, file);
    let mut offset = 0u64;
    let mut index: Vec<BlockHandle> = Vec::new();
    let mut block = Vec::with_capacity(BLOCK_TARGET + 4096);
    let mut max_seq = 0u64;

    let mut flush_block = |block: &mut Vec<u8>,
                           last: &Entry,
                           out: &mut BufWriter<File>,
                           offset: &mut u64|
     -> Result<()> {
        let raw_len = u32::try_from(block.len()).map_err(|_| corrupt(path, "block over 4 GiB"))?;
        let compressed = zstd::bulk::compress(block, ZSTD_LEVEL).map_err(io_err(path))?;
        out.write_all(&compressed).map_err(io_err(path))?;
        index.push(BlockHandle {
            offset: *offset,
            len: u32::try_from(compressed.len()).map_err(|_| corrupt(path, "block over 4 GiB"))?,
            raw_len,
            checksum: xxh3_64(&compressed),
            last_row: last.row.clone(),
            last_col: last.col.clone(),
        });
        *offset += compressed.len() as u64;
        block.clear();
        Ok(())
    };

    let mut enc = Vec::new();
    let mut prev: Option<Entry> = None;
    let mut first_row: Option<Vec<u8>> = None;
    let mut count = 0u64;
    for e in entries {
        let e = e?;
        count += 1;
        if first_row.is_none() {
            first_row = Some(e.row.clone());
        }
        enc.clear();
        varint::put_bytes(&mut enc, &e.row);
        varint::put_bytes(&mut enc, &e.col);
        varint::put(&mut enc, e.seq);
        match &e.value {
            Some(v) => {
                enc.push(0);
                varint::put_bytes(&mut enc, v);
            }
            None => enc.push(1),
        }
        // Close the block before an entry would take it past the target; an
        // entry larger than the target gets a block of its own.
        if let Some(p) = &prev
            && !block.is_empty()
            && block.len() + enc.len() > BLOCK_TARGET
        {
            flush_block(&mut block, p, &mut out, &mut offset)?;
        }
        block.extend_from_slice(&enc);
        max_seq = max_seq.max(e.seq);
        prev = Some(e);
    }
    if let Some(p) = &prev
        && !block.is_empty()
    {
        flush_block(&mut block, p, &mut out, &mut offset)?;
    }

    let mut idx = Vec::with_capacity(index.len() * 48);
    varint::put(&mut idx, index.len() as u64);
    for h in &index {
        idx.extend_from_slice(&h.offset.to_le_bytes());
        idx.extend_from_slice(&h.len.to_le_bytes());
        idx.extend_from_slice(&h.raw_len.to_le_bytes());
        idx.extend_from_slice(&h.checksum.to_le_bytes());
        varint::put_bytes(&mut idx, &h.last_row);
        varint::put_bytes(&mut idx, &h.last_col);
    }
    out.write_all(&idx).map_err(io_err(path))?;
    let meta = SstMetaData {
        format_version: FORMAT_VERSION,
        seq: max_seq,
        entry_count: count,
        block_count: index.len() as u32,
        min_key: first_row.unwrap_or_default(),
        max_key: prev.map(|e| e.row).unwrap_or_default(),
        index_offset: offset,
        index_len: idx.len() as u64,
        index_checksum: xxh3_64(&idx),
        created_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    };
    let meta_offset = offset + idx.len() as u64;
    let meta_bytes = fb::encode_sst_meta(&meta);
    out.write_all(&meta_bytes).map_err(io_err(path))?;
    let mut footer = [0u8; FOOTER_LEN];
    footer[..8].copy_from_slice(&meta_offset.to_le_bytes());
    footer[8..12].copy_from_slice(&(meta_bytes.len() as u32).to_le_bytes());
    footer[12..16].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    footer[16..24].copy_from_slice(&xxh3_64(&meta_bytes).to_le_bytes());
    footer[24..32].copy_from_slice(MAGIC);
    out.write_all(&footer).map_err(io_err(path))?;
    let file = out.into_inner().map_err(|e| StorageError::Io {
        path: path.to_path_buf(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io_err(path))?;
    Ok(meta)
}

/// An open table file.
#[derive(Debug)]
pub struct TableReader {
    file: File,
    path: PathBuf,
    pub number: u64,
    pub meta: SstMetaData,
    pub size: u64,
    index: Vec<BlockHandle>,
}

impl TableReader {
    pub fn open(path: &Path, number: u64) -> Result<Self> {
        let file = File::open(path).map_err(io_err(path))?;
        let size = file.metadata().map_err(io_err(path))?.len();
        if size < FOOTER_LEN as u64 {
            return Err(corrupt(path, "shorter than the footer"));
        }
        let mut footer = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut footer, size - FOOTER_LEN as u64)
            .map_err(io_err(path))?;
        if &footer[24..32] != MAGIC {
            return Err(corrupt(path, "bad magic"));
        }
        let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let le32 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        let version = le32(&footer[12..16]);
        if version != FORMAT_VERSION {
            return Err(corrupt(
                path,
                format!("unsupported format version {version}"),
            ));
        }
        let meta_offset = le64(&footer[0..8]);
        let meta_len = u64::from(le32(&footer[8..12]));
        if meta_offset
            .checked_add(meta_len)
            .is_none_or(|end| end > size - FOOTER_LEN as u64)
        {
            return Err(corrupt(path, "metadata out of range"));
        }
        let mut meta_bytes = vec![0u8; meta_len as usize];
        file.read_exact_at(&mut meta_bytes, meta_offset)
            .map_err(io_err(path))?;
        if xxh3_64(&meta_bytes) != le64(&footer[16..24]) {
            return Err(corrupt(path, "metadata checksum mismatch"));
        }
        let meta = fb::decode_sst_meta(&meta_bytes).map_err(|e| corrupt(path, e.to_string()))?;
        if meta
            .index_offset
            .checked_add(meta.index_len)
            .is_none_or(|end| end > meta_offset)
        {
            return Err(corrupt(path, "index out of range"));
        }
        let mut idx = vec![0u8; meta.index_len as usize];
        file.read_exact_at(&mut idx, meta.index_offset)
            .map_err(io_err(path))?;
        if xxh3_64(&idx) != meta.index_checksum {
            return Err(corrupt(path, "index checksum mismatch"));
        }
        let mut r = varint::Reader::new(&idx);
        let bad = || corrupt(path, "malformed index");
        let count = r.varint().ok_or_else(bad)?;
        let mut index = Vec::with_capacity(count.min(1 << 20) as usize);
        for _ in 0..count {
            let offset = r.u64_le().ok_or_else(bad)?;
            let len = u32::from_le_bytes(r.take(4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
            let raw_len =
                u32::from_le_bytes(r.take(4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
            let checksum = r.u64_le().ok_or_else(bad)?;
            let last_row = r.bytes().ok_or_else(bad)?.to_vec();
            let last_col = r.bytes().ok_or_else(bad)?.to_vec();
            if offset + u64::from(len) > meta.index_offset {
                return Err(bad());
            }
            index.push(BlockHandle {
                offset,
                len,
                raw_len,
                checksum,
                last_row,
                last_col,
            });
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
            number,
            meta,
            size,
            index,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True if some row of the file may fall in `[start, end)` (`end` empty =
    /// unbounded).
    pub fn overlaps(&self, start: &[u8], end: &[u8]) -> bool {
        self.meta.entry_count > 0
            && self.meta.max_key.as_slice() >= start
            && (end.is_empty() || self.meta.min_key.as_slice() < end)
    }

    fn read_block(&self, i: usize) -> Result<Vec<u8>> {
        let h = &self.index[i];
        let mut buf = vec![0u8; h.len as usize];
        self.file
            .read_exact_at(&mut buf, h.offset)
            .map_err(io_err(&self.path))?;
        if xxh3_64(&buf) != h.checksum {
            return Err(corrupt(&self.path, format!("block {i} checksum mismatch")));
        }
        let raw = zstd::bulk::decompress(&buf, h.raw_len as usize)
            .map_err(|e| corrupt(&self.path, format!("block {i}: {e}")))?;
        if raw.len() != h.raw_len as usize {
            return Err(corrupt(&self.path, format!("block {i}: length mismatch")));
        }
        Ok(raw)
    }

    /// Entries with `start <= row < end` (`end` empty = unbounded), in order.
    pub fn range(&self, start: &[u8], end: &[u8]) -> RangeIter<'_> {
        let first = self
            .index
            .partition_point(|h| h.last_row.as_slice() < start);
        RangeIter {
            table: self,
            block: first,
            entries: Vec::new().into_iter(),
            start: start.to_vec(),
            end: end.to_vec(),
            done: false,
        }
    }

    fn decode_block(&self, data: &[u8]) -> Result<Vec<Entry>> {
        let mut r = varint::Reader::new(data);
        let mut out = Vec::new();
        let bad = || corrupt(&self.path, "malformed block entry");
        while !r.is_empty() {
            let row = r.bytes().ok_or_else(bad)?.to_vec();
            let col = r.bytes().ok_or_else(bad)?.to_vec();
            let seq = r.varint().ok_or_else(bad)?;
            let value = match r.u8().ok_or_else(bad)? {
                0 => Some(r.bytes().ok_or_else(bad)?.to_vec()),
                1 => None,
                _ => return Err(bad()),
            };
            out.push(Entry {
                row,
                col,
                seq,
                value,
            });
        }
        Ok(out)
    }
}

/// Streams the entries of one file in a row range, one block at a time.
#[derive(Debug)]
pub struct RangeIter<'a> {
    table: &'a TableReader,
    block: usize,
    entries: std::vec::IntoIter<Entry>,
    start: Vec<u8>,
    end: Vec<u8>,
    done: bool,
}

impl Iterator for RangeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(e) = self.entries.next() {
                if e.row.as_slice() < self.start.as_slice() {
                    continue;
                }
                if !self.end.is_empty() && e.row.as_slice() >= self.end.as_slice() {
                    self.done = true;
                    return None;
                }
                return Some(Ok(e));
            }
            if self.block >= self.table.index.len() {
                self.done = true;
                return None;
            }
            let decoded = self
                .table
                .read_block(self.block)
                .and_then(|data| self.table.decode_block(&data));
            self.block += 1;
            match decoded {
                Ok(entries) => self.entries = entries.into_iter(),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
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
            value: v.map(<[u8]>::to_vec),
        }
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
        let meta = write_table(&path, &entries).unwrap();
        assert!(meta.block_count > 1);
        let t = TableReader::open(&path, 1).unwrap();
        assert_eq!(t.meta.entry_count, 20_000);
        let all: Vec<Entry> = t.range(&[], &[]).collect::<Result<_>>().unwrap();
        assert_eq!(all, entries);
        let part: Vec<Entry> = t
            .range(&5000u32.to_be_bytes(), &5010u32.to_be_bytes())
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(part, entries[5000..5010]);
        assert!(t.overlaps(&[0, 0], &[0, 1]));
        assert!(!t.overlaps(&[0, 1, 0, 0], &[]));
    }

    #[test]
    fn an_entry_larger_than_a_block_reads_back() {
        // A dense packed row (a 100 Hz series for an hour) is one entry of
        // several MiB.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3.sst");
        let big = vec![7u8; 3 << 20];
        let entries = vec![
            entry(b"a", b"t", 1, Some(b"small")),
            entry(b"b", b"t", 1, Some(&big)),
            entry(b"c", b"t", 1, Some(b"small")),
        ];
        write_table(&path, &entries).unwrap();
        let t = TableReader::open(&path, 3).unwrap();
        let all: Vec<Entry> = t.range(&[], &[]).collect::<Result<_>>().unwrap();
        assert_eq!(all, entries);
        let one: Vec<Entry> = t.range(b"b", b"c").collect::<Result<_>>().unwrap();
        assert_eq!(one[0].value.as_ref().map(Vec::len), Some(3 << 20));
    }

    #[test]
    fn corruption_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2.sst");
        let entries: Vec<Entry> = (0u32..100)
            .map(|i| entry(&i.to_be_bytes(), b"c", 1, Some(b"v")))
            .collect();
        write_table(&path, &entries).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3] ^= 0xFF; // inside the first data block
        std::fs::write(&path, &bytes).unwrap();
        let t = TableReader::open(&path, 2).unwrap();
        assert!(t.range(&[], &[]).any(|r| r.is_err()));
        let n = bytes.len();
        bytes[n - 1] ^= 0xFF; // magic
        std::fs::write(&path, &bytes).unwrap();
        assert!(TableReader::open(&path, 2).is_err());
        std::fs::write(&path, b"short").unwrap();
        assert!(TableReader::open(&path, 2).is_err());
    }
}
