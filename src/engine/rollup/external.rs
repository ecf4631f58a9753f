//! Rollups computed elsewhere: the values an external job writes through
//! OpenTSDB 2.4's `/api/rollup` or telnet `rollup` (a Spark job's hourly
//! sums, history brought over from OpenTSDB's rollup tables).
//!
//! * A **rolled-up value** (`1h-SUM`, or `1h-SUM:MAX` for a rolled-up
//!   pre-aggregate) is kept apart from the tiers hourglass computes, in
//!   OpenTSDB's rollup layout ([`ExternalTable`], `codec::rollup_cell`):
//!   row `FF FD ‖ interval hours ‖ data row key with the row span's base`
//!   in the embedded store's rollup table, or OpenTSDB's rollup table of
//!   the interval on a shared store, one cell per aggregator and interval.
//!   The interval must be a configured tier's; the aggregator one of
//!   `rollup.aggregation_ids` (OpenTSDB's `aggregationIds`). Written
//!   durably before the answer, as annotations are.
//! * A **raw pre-aggregate** (`SUM`) is a data point of its series with the
//!   `_aggregate` tag, written and acknowledged as a `put` is.
//!
//! Reading (`engine::read::external`): a downsampled query whose interval
//! is a multiple of a tier's, and whose aggregator is one these values
//! hold, takes them for a series' bucket only where the series has no
//! stored point in that bucket; where it has, the answer is the raw one.
//! Values past their tier's TTL are deleted with the tier's.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use hourglass_ingest::RollupPoint;

use super::{ExternalTable, REBUILD_BATCH};
use crate::codec::rollup_cell::{rollup_index, rollup_qualifier};
use crate::engine::{Engine, EngineError, PointError};
use crate::storage::{Durability, Mutation, Table, column, family};

/// What writing a batch of rollup points did.
#[derive(Debug, Default)]
pub struct RollupReceipt {
    /// WAL position of the pre-aggregates to await (0: none).
    pub lsn: u64,
    pub accepted: usize,
    /// Index in the batch and reason, for points not written.
    pub errors: Vec<(usize, PointError)>,
}

/// One rolled-up value, ready to be stored.
struct Placed {
    row: Vec<u8>,
    column: Vec<u8>,
    value: Vec<u8>,
    series: Arc<[u8]>,
}

fn refused(msg: impl Into<String>) -> PointError {
    PointError::Rollup(msg.into())
}

impl Engine {
    /// Writes a batch of checked rollup points (blocking): rolled-up values
    /// durably to the rollup table, pre-aggregates through the write path
    /// (durable once the WAL reaches the receipt's LSN).
    pub fn write_rollups(&self, points: &[RollupPoint<'_>]) -> Result<RollupReceipt, EngineError> {
        let mut receipt = RollupReceipt::default();
        let mut raw = Vec::new();
        let mut raw_index = Vec::new();
        let mut placed = Vec::new();
        for (i, rp) in points.iter().enumerate() {
            if !rp.spec.is_rolled_up() {
                raw.push(rp.point.clone());
                raw_index.push(i);
                continue;
            }
            match self.place_rollup(rp) {
                Ok(p) => placed.push(p),
                Err(e) => {
                    self.metrics
                        .points_rejected
                        .with_label_values(&["invalid"])
                        .inc();
                    receipt.errors.push((i, e));
                }
            }
        }
        if !placed.is_empty() {
            // The series index names them, as it names every written series.
            self.index_series(placed.iter().map(|p| &p.series[..]))?;
            self.uids.sync_if_needed().map_err(EngineError::Uid)?;
            self.tiers.external_written();
            receipt.accepted += placed.len();
            let muts = placed
                .into_iter()
                .map(|p| Mutation::Put {
                    table: Table::Rollup,
                    row: p.row,
                    column: p.column,
                    value: p.value,
                })
                .collect();
            self.store.write(muts, Durability::Sync)?;
        }
        if !raw.is_empty() {
            let written = self.write(&raw)?;
            receipt.lsn = written.lsn;
            receipt.accepted += written.accepted;
            receipt
                .errors
                .extend(written.errors.into_iter().map(|(i, e)| (raw_index[i], e)));
        }
        Ok(receipt)
    }

    /// Where a rolled-up value goes, with OpenTSDB's refusals
    /// (`TSDB.addAggregatePointInternal`, `RollupConfig`).
    fn place_rollup(&self, rp: &RollupPoint<'_>) -> Result<Placed, PointError> {
        if self.tiers.externals.is_empty() {
            return Err(refused("No rollup or aggregations were configured"));
        }
        let interval = rp.spec.interval.as_deref().unwrap_or_default();
        let table = self
            .external_table(interval)
            .ok_or_else(|| PointError::NoSuchRollup(interval.to_string()))?;
        let aggregator = rp.spec.aggregator.as_deref().unwrap_or_default();
        if aggregator.is_empty() {
            return Err(refused("Aggregator cannot be null or empty."));
        }
        let id = self
            .tiers
            .aggregation_id(aggregator)
            .ok_or_else(|| refused(format!("No ID found mapping to aggregator: {aggregator}")))?;
        let ts = rp.point.timestamp.0;
        let secs = u32::try_from(ts).map_err(|_| PointError::Timestamp(ts))?;
        let (series, _) = self.resolve(&rp.point)?;
        let (row, index) = table.cell_of(&self.layout, &series, secs);
        let value = rp.point.value;
        Ok(Placed {
            row,
            column: column(family::DATA, &rollup_qualifier(id, index, value.flags())),
            value: value.encode(),
            series,
        })
    }

    /// The configured external table of an interval text (`1h`, `60m`).
    fn external_table(&self, interval: &str) -> Option<&ExternalTable> {
        let secs = crate::config::parse_ttl(interval).ok().flatten()?;
        self.tiers
            .externals
            .iter()
            .find(|t| u64::from(t.interval) == secs)
    }

    /// Deletes the external values of `table` for intervals before
    /// `before` (seconds); returns how many. Callers hold the flush lock.
    pub(super) fn purge_external(
        &self,
        table: &ExternalTable,
        before: i64,
    ) -> Result<usize, EngineError> {
        let start = table.key(&[]);
        let end = crate::storage::prefix_end(&start);
        self.delete_cells(table, &start, &end, Durability::Buffered, &|_, t| {
            t.is_none_or(|t| i64::from(t) < before)
        })
    }

    /// Deletes the external values of `series_keys` (salt, metric, tags)
    /// for intervals starting in `[start_ms, end_ms]`: a delete of those
    /// series' points. Scans each table's rows of the series' metrics in
    /// that range.
    pub(in crate::engine) fn delete_external(
        &self,
        series_keys: &[Vec<u8>],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<(), EngineError> {
        if !self.tiers.may_have_external() || series_keys.is_empty() {
            return Ok(());
        }
        let secs = |ms: i64| u32::try_from(ms.div_euclid(1000).max(0)).unwrap_or(u32::MAX);
        let (lo, hi) = (secs(start_ms), secs(end_ms));
        // The series by salt and metric: one scan each.
        let mut by_prefix: BTreeMap<&[u8], HashSet<&[u8]>> = BTreeMap::new();
        for key in series_keys {
            let (prefix, tags) = key.split_at(self.layout.prefix_width().min(key.len()));
            by_prefix.entry(prefix).or_default().insert(tags);
        }
        for table in &self.tiers.externals {
            for (prefix, tags) in &by_prefix {
                let range = table.prefix_range(prefix, lo, hi);
                self.delete_cells(
                    table,
                    &range.start,
                    &range.end,
                    Durability::Sync,
                    &|row_tags, t| tags.contains(row_tags) && t.is_some_and(|t| t >= lo && t <= hi),
                )?;
            }
        }
        Ok(())
    }

    /// Deletes the cells of `table`'s rows in `[start, end)` that
    /// `doomed(row's tags, cell's interval start)` picks, a bounded batch
    /// at a time, the last one written with `durability`; returns how many.
    fn delete_cells(
        &self,
        table: &ExternalTable,
        start: &[u8],
        end: &[u8],
        durability: Durability,
        doomed: &dyn Fn(&[u8], Option<u32>) -> bool,
    ) -> Result<usize, EngineError> {
        let layout = self.layout;
        let mut muts = Vec::new();
        let mut failed = None;
        let mut deleted = 0;
        self.store
            .scan(Table::Rollup, start, end, &mut |key, cells| {
                let Some(parts) = key.get(4..).and_then(|r| layout.parse_row_key(r)) else {
                    return Ok(true);
                };
                for c in cells {
                    let t = c
                        .column
                        .get(1..)
                        .and_then(rollup_index)
                        .and_then(|index| table.interval_start(parts.base_time, index));
                    if doomed(parts.tags, t) {
                        muts.push(Mutation::Delete {
                            table: Table::Rollup,
                            row: key.to_vec(),
                            column: c.column.clone(),
                        });
                    }
                }
                if muts.len() >= REBUILD_BATCH {
                    deleted += muts.len();
                    if let Err(e) = self
                        .store
                        .write(std::mem::take(&mut muts), Durability::Buffered)
                    {
                        failed = Some(e);
                        return Ok(false);
                    }
                }
                Ok(true)
            })?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        deleted += muts.len();
        if !muts.is_empty() {
            self.store.write(muts, durability)?;
        } else if deleted > 0 && durability == Durability::Sync {
            self.store.sync()?;
        }
        Ok(deleted)
    }
}
