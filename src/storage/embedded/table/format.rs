//! The pieces of the table-file format that its writer and reader share:
//! the constants, the kinds of file, an entry, a block's handle in the
//! index, and the errors that name the file and offset.

use std::path::Path;

use bytes::Bytes;

use crate::storage::StorageError;

pub const MAGIC: &[u8; 8] = b"HGTABLE2";
pub const FORMAT_VERSION: u32 = 2;
pub(super) const FOOTER_LEN: usize = 32;
pub(super) const BLOCK_TARGET: usize = 32 << 10;
/// The largest decompressed block a reader accepts. Blocks are cut at
/// [`BLOCK_TARGET`], so only a single huge entry makes a larger one, and
/// every write path bounds its requests far below this; a larger length is
/// damage, refused before it becomes an allocation.
pub(super) const MAX_BLOCK_RAW: u32 = 256 << 20;

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
pub(super) struct BlockHandle {
    pub(super) offset: u64,
    pub(super) len: u32,
    /// Uncompressed length: decompression allocates exactly this, so one
    /// huge entry (a dense packed row) never overflows a fixed guess.
    pub(super) raw_len: u32,
    pub(super) checksum: u64,
    pub(super) last_row: Vec<u8>,
}
