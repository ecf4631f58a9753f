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

mod block_zstd;
mod format;
mod range_iter;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use format::{CellStats, Entry, FORMAT_VERSION, FileKind, MAGIC};
pub(crate) use format::{corrupt, io_err};
pub use range_iter::RangeIter;
pub use reader::TableReader;
pub use writer::{WriteOptions, write_table};
