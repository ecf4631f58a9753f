//! The engine on a shared store (Cloud Bigtable): several nodes write the
//! same tables, so a point is acknowledged only once the store has it, and
//! no node owns a row.
//!
//! * Writes: each batch becomes one OpenTSDB cell per point (qualifier =
//!   offset and flags, §1.4–§1.5), written before the answer; the head
//!   then keeps the points as a cache of recent data and as the list of
//!   rows this node should pack.
//! * Packing: when a row's hour closes (or the head must shrink), the row
//!   is read and rewritten as packed cells in one row mutation that deletes
//!   exactly the cells it read ([`crate::codec::pack`]), so points written
//!   meanwhile by another node survive.
//! * Deletes: the same rewrite, keeping the points outside the range.

use std::sync::Arc;

use super::{Engine, EngineError};
use crate::codec::StoredValue;
use crate::codec::cell::{DecodedPoint, encode_packed_cell};
use crate::codec::pack::{Rewrite, repack};
use crate::codec::rowkey::split_timestamp;
use crate::storage::{Durability, Mutation, StorageError, Table, family};

/// Rows read and rewritten per store call while packing.
const PACK_BATCH: usize = 512;

/// The cell of one point, as OpenTSDB writes it: `(row, column, value)`.
fn point_put(engine: &Engine, series_key: &[u8], raw_ts: u64, value: StoredValue) -> Mutation {
    let (base, offset_ms, ms) = split_timestamp(raw_ts);
    let (q, v) = encode_packed_cell(&[DecodedPoint {
        offset_ms,
        ms,
        value,
    }]);
    let mut column = Vec::with_capacity(q.len() + 1);
    column.push(family::DATA);
    column.extend_from_slice(&q);
    Mutation::Put {
        table: Table::Data,
        row: engine.layout.row_key(series_key, base),
        column,
        value: v,
    }
}

/// Mutations per store write when packing a whole table.
const PACK_WRITE_MUTATIONS: usize = 20_000;

/// A row's rewrite as mutations of that row (the store applies a row's
/// mutations atomically: the packed cells appear as the cells they replace
/// disappear).
fn push_rewrite(muts: &mut Vec<Mutation>, row: &[u8], r: Rewrite) {
    for (column, value) in r.puts {
        muts.push(Mutation::Put {
            table: Table::Data,
            row: row.to_vec(),
            column,
            value,
        });
    }
    for column in r.deletes {
        muts.push(Mutation::Delete {
            table: Table::Data,
            row: row.to_vec(),
            column,
        });
    }
}

impl Engine {
    /// Writes points (series key, raw timestamp, value) to the store, then
    /// caches them in the head under their series `at` (slot, generation)
    /// if still current. Returns the points written. Blocking: one store
    /// round trip.
    pub(super) fn write_shared(
        &self,
        cells: &[(Arc<[u8]>, u64, StoredValue)],
        at: &[(u32, u32)],
    ) -> Result<usize, EngineError> {
        let muts: Vec<Mutation> = cells
            .iter()
            .map(|(key, ts, value)| point_put(self, key, *ts, *value))
            .collect();
        let n = muts.len();
        if n == 0 {
            return Ok(0);
        }
        self.store.write(muts, Durability::Sync)?;
        let mut head = self.head();
        for ((_, ts, value), &(id, generation)) in cells.iter().zip(at) {
            if head.is_current(id, generation) {
                head.insert(id, *ts, *value);
            }
        }
        Ok(n)
    }

    /// Packs every stored row of a closed hour that holds more than one
    /// OpenTSDB cell, whoever wrote it (rows a node left unpacked when it
    /// stopped for good, or rows OpenTSDB wrote): `hourglass compact` on a
    /// shared store. Streams the table once; returns the rows rewritten.
    pub fn pack_stored_rows(&self) -> Result<usize, EngineError> {
        if self.log.is_some() {
            // The embedded store merges rows in its own compaction.
            return Ok(0);
        }
        let closed_before = self.now_secs() - 3600 - self.settings.flush_grace_secs;
        let layout = self.layout;
        let mut rows = 0usize;
        let mut muts: Vec<Mutation> = Vec::new();
        self.store.scan(Table::Data, &[], &[], &mut |row, cells| {
            let Some(parts) = layout.parse_row_key(row) else {
                return Ok(true);
            };
            if i64::from(parts.base_time) > closed_before {
                return Ok(true);
            }
            let rewrite = repack(&cells, |_| true).map_err(|e| StorageError::Corrupt {
                path: std::path::PathBuf::from("<data row>"),
                offset: None,
                reason: format!("row {row:02X?}: {e}"),
            })?;
            if let Some(r) = rewrite {
                rows += 1;
                push_rewrite(&mut muts, row, r);
                if muts.len() >= PACK_WRITE_MUTATIONS {
                    self.store
                        .write(std::mem::take(&mut muts), Durability::Sync)?;
                }
            }
            Ok(true)
        })?;
        if !muts.is_empty() {
            self.store.write(muts, Durability::Sync)?;
        }
        Ok(rows)
    }

    /// Rewrites rows so that each holds its points in packed cells, keeping
    /// the points `keep(base_hour, offset_ms)` accepts. Returns the rows
    /// rewritten.
    pub(super) fn repack_rows(
        &self,
        rows: &[(Vec<u8>, u32)],
        keep: &dyn Fn(u32, u32) -> bool,
    ) -> Result<usize, EngineError> {
        let mut rewritten = 0;
        for chunk in rows.chunks(PACK_BATCH) {
            let keys: Vec<Vec<u8>> = chunk.iter().map(|(k, _)| k.clone()).collect();
            let cells = self.store.get_rows(Table::Data, &keys)?;
            let mut muts = Vec::new();
            for ((row, base), cells) in chunk.iter().zip(cells) {
                let rewrite = repack(&cells, |off| keep(*base, off)).map_err(|e| {
                    EngineError::Damaged(format!("row {row:02X?} cannot be packed: {e}"))
                })?;
                let Some(r) = rewrite else { continue };
                rewritten += 1;
                push_rewrite(&mut muts, row, r);
            }
            if !muts.is_empty() {
                self.store.write(muts, Durability::Sync)?;
            }
        }
        Ok(rewritten)
    }
}
