//! The rollup tiers' part of a fetch: a tier's values for the intervals of
//! a segment go to the series' bucket sinks (one value read each), and the
//! annotations of the data rows in that stretch come from the rows the
//! notes index names.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hourglass_query::exec::SourceError;

use super::source_error::storage_source_err;
use super::{Scan, Slot, TAKE_BATCH, TAKE_ROWS, collect_notes, enter_series};
use crate::codec::native::TierRow;
use crate::engine::Engine;
use crate::engine::rollup::{self, Tier};
use crate::storage::{KeyRange, Table};

impl Engine {
    /// Feeds the values of `tier` for intervals in `[lo_ms, hi_ms)` to the
    /// series' sinks (one value read each), and collects the annotations of
    /// the data rows in that stretch, which the notes index names.
    pub(super) fn scan_tier(
        &self,
        scan: &Scan<'_>,
        tier: &Tier,
        lo_ms: i64,
        hi_ms: i64,
        slots: &[Mutex<Slot>],
    ) -> Result<(), SourceError> {
        let layout = *self.layout();
        let secs = |ms: i64| u32::try_from(ms.div_euclid(1000)).unwrap_or(u32::MAX);
        let (lo, hi) = (secs(lo_ms), secs(hi_ms));
        let ranges: Vec<KeyRange> = (0..slots.len() as u32)
            .map(|b| tier.scan_range(&layout, b, scan.metric, lo, hi))
            .collect();
        let filter = |row: &[u8]| {
            row.get(2..)
                .and_then(|r| layout.parse_row_key(r))
                .is_some_and(|p| scan.pf.matches(&layout, p.tags))
        };
        let interval_ms = tier.interval_ms();
        let read = AtomicU64::new(0);
        self.store
            .scan_ranges(Table::Rollup, &ranges, &filter, &|i, row, cells| {
                let Some((data_row, parts)) = row
                    .get(2..)
                    .and_then(|r| Some((r, layout.parse_row_key(r)?)))
                else {
                    return Ok(true);
                };
                let mut slot = slots[i]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let (local, _, key, (uncharged, rows)) = &mut *slot;
                enter_series(local, key, &layout, data_row, parts.tags, scan, |_| {});
                let Some(sink) = local.get_mut(key.as_slice()).and_then(|f| f.sink.as_mut()) else {
                    return Err(crate::storage::StorageError::Damaged(
                        "internal error: a rollup tier read without a pushdown".into(),
                    ));
                };
                let mut n = 0;
                let column = rollup::row_column();
                for c in cells.iter().filter(|c| c.column == column) {
                    let tier_row = TierRow::decode(&c.value).map_err(|e| {
                        crate::storage::StorageError::Corrupt {
                            path: std::path::PathBuf::from("<rollup row>"),
                            offset: None,
                            reason: format!("row {row:02X?}: {e}"),
                        }
                    })?;
                    for (index, value) in &tier_row.values {
                        let Some(t) = tier.interval_start(parts.base_time, *index) else {
                            continue;
                        };
                        let t_ms = i64::from(t) * 1000;
                        if t_ms < lo_ms || t_ms >= hi_ms {
                            continue;
                        }
                        sink.push_span(t_ms, interval_ms, &value.partial, scan.budget)
                            .map_err(|q| crate::storage::StorageError::Damaged(q.to_string()))?;
                        n += 1;
                    }
                }
                read.fetch_add(n as u64, Ordering::Relaxed);
                *uncharged += n;
                *rows += 1;
                if *uncharged < TAKE_BATCH && *rows < TAKE_ROWS {
                    return Ok(true);
                }
                *rows = 0;
                Ok(scan.take(std::mem::take(uncharged)))
            })
            .map_err(|e| storage_source_err(&e))?;
        self.metrics
            .rollup_reads
            .inc_by(read.load(Ordering::Relaxed));
        if !self.tiers.may_have_notes() {
            return Ok(());
        }
        self.scan_tier_notes(scan, lo, hi, slots)
    }

    /// The annotations of the data rows in `[lo, hi)` (seconds) that the
    /// notes index names: a tier answered for their points, but a row's
    /// notes still come with the series.
    fn scan_tier_notes(
        &self,
        scan: &Scan<'_>,
        lo: u32,
        hi: u32,
        slots: &[Mutex<Slot>],
    ) -> Result<(), SourceError> {
        let layout = *self.layout();
        let mut rows: Vec<(usize, Vec<u8>)> = Vec::new();
        for b in 0..slots.len() as u32 {
            let key = |base: u32| rollup::notes_key(&layout.scan_key(b, scan.metric, base));
            self.store
                .scan(Table::Rollup, &key(lo), &key(hi), &mut |row, _| {
                    if let Some(data_row) = row.get(2..)
                        && layout
                            .parse_row_key(data_row)
                            .is_some_and(|p| scan.pf.matches(&layout, p.tags))
                    {
                        rows.push((b as usize, data_row.to_vec()));
                    }
                    Ok(true)
                })
                .map_err(|e| storage_source_err(&e))?;
        }
        if rows.is_empty() {
            return Ok(());
        }
        // The rows are read whole: charged as a row each.
        scan.take(rows.len());
        let keys: Vec<Vec<u8>> = rows.iter().map(|(_, k)| k.clone()).collect();
        let cells = self
            .store
            .get_rows(Table::Data, &keys)
            .map_err(|e| storage_source_err(&e))?;
        for ((b, row), cells) in rows.iter().zip(cells) {
            let Some(parts) = layout.parse_row_key(row) else {
                continue;
            };
            let mut slot = slots[*b]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (local, _, key, _) = &mut *slot;
            enter_series(local, key, &layout, row, parts.tags, scan, |_| {});
            if let Some(found) = local.get_mut(key.as_slice()) {
                collect_notes(&layout, row, &cells, scan, &mut found.notes);
            }
        }
        Ok(())
    }
}
