//! The storage backend boundary: a sorted map of rows to cells in the
//! HBase/Bigtable model (tables, rows, column families, qualifiers), with
//! batched writes, streamed range scans (several ranges per call, run in
//! parallel by the backend), batched multi-row reads, atomic increment and
//! check-and-put.
//!
//! The contract is the one a remote store can keep: a write is atomic per
//! row only, every call may fail with a retryable [`StorageError::Unavailable`],
//! and every cell has one version (a rewrite replaces it). The engine above
//! it (UIDs, series head, packing) is the same for every backend; what
//! differs is where an acknowledged point is durable, which
//! [`Store::shared`] tells the engine.
//!
//! * [`embedded`] — the default: an LSM tree in the data directory.
//! * `bigtable` (cargo feature `bigtable`) — Cloud Bigtable, shared by
//!   several hourglass nodes.
//! * [`fanout`] — runs per-range work on the calling thread, then on helper
//!   threads once it lasts (the embedded store's parallel scans).
//! * [`copy`] — links and copies of a live store's files, for snapshots.
//! * [`open`] — the backend factory, chosen by `[storage] backend`.

#[cfg(feature = "bigtable")]
pub mod bigtable;
pub mod copy;
pub mod embedded;
pub mod fanout;
mod open;
pub mod retention;

pub use self::open::open;

use std::path::PathBuf;
use std::sync::Arc;

/// The tables hourglass uses (OpenTSDB's `tsdb`, `tsdb-uid` and
/// `tsdb-meta`, and its own rollup tiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Table {
    Data = 0,
    Uid = 1,
    /// The series index: one row per TSUID (`engine::index`).
    Meta = 2,
    /// Rollup tiers: per series and tier interval, the interval's
    /// aggregates (`engine::rollup`, `docs/format/rollup-tier.md`).
    Rollup = 3,
}

impl Table {
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Table::Data),
            1 => Some(Table::Uid),
            2 => Some(Table::Meta),
            3 => Some(Table::Rollup),
            _ => None,
        }
    }
}

pub use crate::codec::column::{Cell, column, family};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Put {
        table: Table,
        row: Vec<u8>,
        column: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        table: Table,
        row: Vec<u8>,
        column: Vec<u8>,
    },
}

impl Mutation {
    pub fn table(&self) -> Table {
        match self {
            Mutation::Put { table, .. } | Mutation::Delete { table, .. } => *table,
        }
    }
}

/// How durable a small write must be when the call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// On stable storage (fsync).
    Sync,
    /// Not durable until [`Store::sync`] is called: a process crash or power
    /// loss before it may lose the write (the embedded store keeps it in
    /// its log buffer). For writes nothing durable depends on until that
    /// sync (UID assignments, synced before a point using them is logged).
    Buffered,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    #[error("storage I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] crate::logfile::LogError),
    /// Damage found in a file: reads that need it fail (other data is
    /// still served) until `hourglass fsck --repair` runs.
    #[error("{path} is corrupt{}: {reason} (with the server stopped, `hourglass fsck` lists all damage and `hourglass fsck --repair` salvages the rest of the file, moving the original to lost+found/)", offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    Corrupt {
        path: PathBuf,
        offset: Option<u64>,
        reason: String,
    },
    /// The data directory is damaged in a way that cannot be repaired
    /// without losing or guessing data; the message says what to do.
    #[error("{0}")]
    Damaged(String),
    #[error(
        "the data directory {path} was created with a different key layout ({found}); configured: {configured}"
    )]
    SchemaMismatch {
        path: PathBuf,
        found: String,
        configured: String,
    },
    #[error("storage is poisoned after an earlier write or fsync failure; restart the server")]
    Poisoned,
    #[error("value in {what} is not an 8-byte counter")]
    NotACounter { what: String },
    /// A remote backend did not answer or refused the call. `retryable`:
    /// the same call may succeed later (timeouts, throttling, a node
    /// restarting); writes are idempotent, so retrying is safe.
    #[error("storage backend {backend} unavailable{}: {message}", if *retryable { " (retryable)" } else { "" })]
    Unavailable {
        backend: &'static str,
        message: String,
        retryable: bool,
    },
    /// The configuration or a request names something this build or backend
    /// cannot do; the message says what to use instead.
    #[error("{0}")]
    Unsupported(String),
}

impl StorageError {
    /// Whether the same call may succeed if retried later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StorageError::Unavailable {
                retryable: true,
                ..
            }
        )
    }
}

/// The smallest key above every key starting with `prefix`: the exclusive
/// end of a prefix scan (the prefix with its last byte below 0xFF
/// incremented; empty = unbounded).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    Vec::new()
}

/// Rows with `start <= key < end` of one table (an empty `end` = to the
/// end of the table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// A row visitor for scans: return `false` to stop early.
pub type RowVisitor<'a> = dyn FnMut(&[u8], Vec<Cell>) -> Result<bool> + 'a;

/// A predicate on row keys that a scan applies before it reads a row's
/// cells (a tag filter on raw key bytes): rows it refuses cost the store no
/// copy, and a remote store may evaluate it on its side.
pub type KeyFilter<'a> = dyn Fn(&[u8]) -> bool + Sync + 'a;

/// A row visitor for multi-range scans, called with the index of the range
/// the row belongs to, possibly from several threads at once (never for
/// the same range at once). Return `false` to stop every range.
pub type RangeVisitor<'a> = dyn Fn(usize, &[u8], Vec<Cell>) -> Result<bool> + Sync + 'a;

/// Builds the mutations of one data write, given the sequence number the
/// write will carry (the engine stamps it into cell qualifiers so that
/// later cells of a row win over earlier ones).
pub type DataBuilder<'a> = dyn FnMut(u64) -> Result<Vec<Mutation>> + 'a;

/// Runs `scan_one` over `ranges` on the calling thread, then on helper
/// threads once it lasts ([`fanout`]), handing rows to `visit` with their
/// range's index; the first error or `false` stops every range.
#[allow(clippy::type_complexity)]
pub fn scan_ranges_with(
    ranges: &[KeyRange],
    visit: &RangeVisitor<'_>,
    scan_one: &(dyn Fn(&KeyRange, &mut RowVisitor<'_>) -> Result<()> + Sync),
) -> Result<()> {
    let first_err: std::sync::Mutex<Option<StorageError>> = std::sync::Mutex::new(None);
    fanout::for_each_bucket(
        ranges.len(),
        fanout::FIRST_SLICE,
        fanout::helpers(ranges.len()),
        || (),
        |i, _| {
            let mut go_on = true;
            let res = scan_one(&ranges[i], &mut |row, cells| {
                go_on = visit(i, row, cells)?;
                Ok(go_on)
            });
            match res {
                Ok(()) => go_on,
                Err(e) => {
                    first_err
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(e);
                    false
                }
            }
        },
    );
    match first_err
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What a compaction tells the row compactor.
#[derive(Clone, Copy, Debug)]
pub struct CompactContext {
    /// Wall-clock time of the compaction, seconds since the epoch.
    pub now_secs: u64,
    /// The merge takes every file that may hold the row. A merge of a
    /// closed window's newest files only is not complete: older files may
    /// hold points a tombstone in it covers, so the tombstone must stay.
    pub complete: bool,
}

/// Merges the cells of one data row during a compaction (the engine owns
/// the cell formats): collapses several cells into one, applies point
/// tombstones and retention. Returns the cells to keep (empty = the row is
/// gone). Must be deterministic and must never lose a point that a read of
/// the input cells would return.
pub trait RowCompactor: Send + Sync + std::fmt::Debug {
    fn compact_row(
        &self,
        row: &[u8],
        cells: Vec<Cell>,
        ctx: &CompactContext,
    ) -> std::result::Result<Vec<Cell>, String>;
}

/// Counters for `/api/stats` and `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct StoreStats {
    pub data_files: u64,
    pub meta_files: u64,
    pub data_bytes: u64,
    pub meta_bytes: u64,
    pub points: u64,
    pub block_cache_bytes: u64,
    pub block_cache_budget: u64,
    pub compactions: u64,
    pub memtable_bytes: u64,
}

/// A sorted map of rows to cells.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Every cell of one row, ordered by column (empty if the row is absent).
    fn get_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>>;

    /// False only when the row certainly holds no cell; true when it may
    /// (a store without a cheap answer says true). Reads no data: the
    /// embedded store asks its bloom filters.
    fn row_may_exist(&self, _table: Table, _row: &[u8]) -> Result<bool> {
        Ok(true)
    }

    /// The cells of several rows in one call (one round trip on a remote
    /// store), in the order asked; an absent row has no cells.
    fn get_rows(&self, table: Table, rows: &[Vec<u8>]) -> Result<Vec<Vec<Cell>>> {
        rows.iter().map(|r| self.get_row(table, r)).collect()
    }

    /// Visits the rows with `start <= key < end` in key order, streamed (a
    /// remote store reads ahead a bounded number of rows). An empty `end`
    /// means "to the end of the table".
    fn scan(
        &self,
        table: Table,
        start: &[u8],
        end: &[u8],
        visit: &mut RowVisitor<'_>,
    ) -> Result<()>;

    /// [`Store::scan`] of the rows whose key `filter` accepts (checked
    /// before the row's cells are read).
    fn scan_filtered(
        &self,
        table: Table,
        start: &[u8],
        end: &[u8],
        filter: &KeyFilter<'_>,
        visit: &mut RowVisitor<'_>,
    ) -> Result<()> {
        self.scan(table, start, end, &mut |row, cells| {
            if filter(row) {
                visit(row, cells)
            } else {
                Ok(true)
            }
        })
    }

    /// Visits the rows of several ranges (one per salt bucket) that
    /// `filter` accepts, the ranges in parallel as the backend sees fit,
    /// each range's rows in key order. Stops every range once a visit
    /// returns `false` or fails.
    fn scan_ranges(
        &self,
        table: Table,
        ranges: &[KeyRange],
        filter: &KeyFilter<'_>,
        visit: &RangeVisitor<'_>,
    ) -> Result<()> {
        scan_ranges_with(ranges, visit, &|r, v| {
            self.scan_filtered(table, &r.start, &r.end, filter, v)
        })
    }

    /// Applies a batch. Each row's mutations are applied atomically and in
    /// order; different rows may be applied independently (Cloud
    /// Bigtable's `MutateRows`), so after an error some rows may have been
    /// written. Every mutation hourglass sends is idempotent: retrying the
    /// whole batch is safe.
    fn write(&self, batch: Vec<Mutation>, durability: Durability) -> Result<()>;

    /// Writes a batch of data rows (packed rows from the series head,
    /// tombstones) durably; `build` is called once with the write's
    /// sequence number. Writes are serialised: a later call gets a higher
    /// sequence number and becomes visible after an earlier one.
    fn write_data(&self, build: &mut DataBuilder<'_>) -> Result<()>;

    /// Adds `delta` to the 8-byte big-endian counter in the cell (absent =
    /// 0) and returns the new value.
    fn increment(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        delta: i64,
        durability: Durability,
    ) -> Result<i64>;

    /// Writes `value` only if the cell currently equals `expected` (`None`
    /// = absent). Returns whether it wrote.
    fn check_and_put(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        expected: Option<&[u8]>,
        value: Vec<u8>,
        durability: Durability,
    ) -> Result<bool>;

    /// Makes every earlier `Buffered` write durable.
    fn sync(&self) -> Result<()>;

    /// Persists in-memory state so the next open is fast. The store stays
    /// usable.
    fn checkpoint(&self) -> Result<()>;

    /// Background upkeep (compaction, retention): does at most one unit of
    /// work and says whether it did any. Never holds write-path locks while
    /// doing I/O.
    fn maintain(&self, _now_secs: u64, _force: bool) -> Result<bool> {
        Ok(false)
    }

    /// The row compactor used by [`Store::maintain`].
    fn set_row_compactor(&self, _compactor: Arc<dyn RowCompactor>) {}

    /// Whether background upkeep has urgent work (e.g. more small files
    /// than point lookups should search): the compaction thread checks it
    /// often and runs [`Store::maintain`] at once instead of waiting for its
    /// interval. Must be cheap.
    fn maintenance_due(&self) -> bool {
        false
    }

    /// Highest UID referenced by any stored data row, per kind (metric,
    /// tagk, tagv), if the backend tracks it.
    fn referenced_uids(&self) -> [u64; 3] {
        [0; 3]
    }

    fn stats(&self) -> StoreStats {
        StoreStats::default()
    }

    /// Drops read caches.
    fn drop_caches(&self) {}

    /// What `open` recovered on its own (e.g. a torn log tail truncated at
    /// an offset), so a later consistency error can point at it.
    fn recovery_notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Copies a consistent cut of the store into the new directory `dest`
    /// while writes go on: every write that returned before the call is in
    /// it, and `dest` opens as a store of its own. Only a store with local
    /// files can (a shared store has its own backups).
    fn snapshot(&self, dest: &std::path::Path) -> Result<copy::CopyStats> {
        Err(StorageError::Unsupported(format!(
            "the {} backend takes no snapshots (use its own backups); {} was not written",
            self.backend_name(),
            dest.display()
        )))
    }

    /// Whether other processes (hourglass nodes, OpenTSDB) write to this
    /// store too. A shared store is where an acknowledged point is durable
    /// (the engine writes every batch before acknowledging it and keeps no
    /// log of its own), its rows are rewritten only by deleting the cells
    /// that were read, and [`Store::write_data`]'s ordering is not offered.
    fn shared(&self) -> bool {
        false
    }

    /// A short name for logs and `/api/config` (`embedded`, `bigtable`).
    fn backend_name(&self) -> &'static str;
}
