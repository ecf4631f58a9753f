//! The embedded storage engine: a time-partitioned LSM tree in the data
//! directory (`<data_dir>/store`).
//!
//! * **Data rows** (the `tsdb` table) are written in bulk by the engine's
//!   flush ([`crate::storage::Store::write_data`]): each write becomes one table file per
//!   time window it touches (2 h windows by default), published together.
//!   Files carry their window, so a query opens only the windows (and,
//!   through the block index and bloom filters, only the blocks) it needs.
//!   Compaction merges the files of a window and, once a day has closed,
//!   the day's windows into one file; retention drops whole windows. The
//!   policy is pure ([`compaction::policy`]); the worker never holds the
//!   write path's locks while doing I/O.
//! * **Meta rows** (the UID table) are small durable writes: they go to the
//!   store log and an in-memory table (memtable), written out as a meta
//!   table file when it grows; meta files are merged size-tiered.
//! * The manifest lists the live files, the live log and the key layout
//!   (manifest.rs). A new table file is written as `N.sst.tmp`, fsynced,
//!   named by a new manifest, then renamed to `N.sst`. On open, a listed
//!   `.tmp` is renamed, an unlisted `.tmp` was never published and is
//!   removed, files a compaction replaced (`obsolete`) are removed, and any
//!   other unexpected file is moved to `lost+found/`, never deleted.
//! * Damage is never repaired silently: a damaged or missing manifest, a
//!   missing table file or a corrupt store log stops `open` with an error
//!   naming the file and offset, unless `repair` is set, in which case the
//!   documented repair runs and every byte it discards is moved to
//!   `lost+found/`.
//!
//! Every entry carries a sequence number; reads merge the sources and keep,
//! per cell, the entry with the highest one. Formats are in `docs/format/`.
//!
//! One file per structure:
//! * `store` — [`EmbeddedStore`]: its state under one lock, and the `Store` trait.
//! * `options` — [`EmbeddedOptions`].
//! * `open` — opening, recovery and the documented repairs; `salvage` — a damaged table file's intact blocks.
//! * `read` — the read path (memtable and files merged, grouped into rows).
//! * `write` — the write path (store log and memtable, window files, publishing).
//! * `snapshot` — a consistent copy of the store while writes go on.
//! * `store_log` — the store log's batches; `memtable` — the meta tables' recent writes.
//! * `file_set` — the live files and the directory's file names; `keys` — internal row keys.
//! * `manifest` — the manifest file; `table` — table files (format, writer, reader, range scans).
//! * `merge_iter` — the k-way merge of sorted entry streams; `bloom`, `cache` — filters and the block cache.
//! * `compaction` — the compaction policy and its worker; `check` — fsck's read-only check.

mod bloom;
mod cache;
mod check;
pub mod compaction;
mod file_set;
mod keys;
pub mod manifest;
mod memtable;
mod merge_iter;
mod open;
mod options;
mod read;
mod salvage;
mod snapshot;
mod store;
mod store_log;
pub mod table;
mod write;

pub use check::{Checked, check};
pub use open::move_aside;
pub use options::EmbeddedOptions;
pub use store::EmbeddedStore;
pub use store_log::{LOG_MAGIC, LOG_VERSION, Op, decode_log_batch};

/// Where repairs put what they set aside, in the store directory.
pub const LOST_AND_FOUND: &str = "lost+found";

#[cfg(test)]
mod tests;
