//! Rollups written from outside (`engine::rollup::external`) in a fetch:
//! each series' buckets that its values fill, merged under the buckets of
//! its stored points (a bucket with any stored point keeps the raw answer).
//!
//! A bucket takes the values of the coarsest configured interval that
//! divides the downsample interval and holds any value in it (OpenTSDB's choice of
//! rollup table, falling back to finer ones per bucket); the downsample
//! aggregator decides which values: `sum`/`zimsum` the sums, `count` the
//! counts, `min`/`mimmin` the minimums, `max`/`mimmax` the maximums, `avg`
//! the sums over the counts. Other aggregators read none.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use hourglass_query::Aggregator;
use hourglass_query::downsample::{BucketSink, Pushdown};
use hourglass_query::exec::{FetchRequest, Num, SourceError};

use super::{Points, Scan, storage_source_err};
use crate::codec::rollup_cell::decode_rollup_cell;
use crate::engine::Engine;
use crate::engine::rollup::external::aggregation_id;
use crate::storage::Table;

/// Buckets (start ms, value) per series key, in time order.
pub(super) type ExternalBuckets = HashMap<Vec<u8>, Vec<(i64, Num)>>;

/// One bucket's external values so far, from one table.
#[derive(Default, Clone, Copy)]
struct Bucket {
    sum: Option<f64>,
    count: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
}

impl Bucket {
    fn add(&mut self, aggregator: u8, v: f64) {
        let fold = |slot: &mut Option<f64>, f: fn(f64, f64) -> f64| {
            *slot = Some(slot.map_or(v, |old| f(old, v)));
        };
        match aggregator {
            SUM => fold(&mut self.sum, |a, b| a + b),
            COUNT => fold(&mut self.count, |a, b| a + b),
            MIN => fold(&mut self.min, f64::min),
            MAX => fold(&mut self.max, f64::max),
            _ => {}
        }
    }

    fn value(&self, agg: Aggregator) -> Option<f64> {
        match agg {
            Aggregator::Sum | Aggregator::Zimsum => self.sum,
            Aggregator::Count => self.count,
            Aggregator::Min | Aggregator::Mimmin => self.min,
            Aggregator::Max | Aggregator::Mimmax => self.max,
            Aggregator::Avg => match (self.sum, self.count) {
                (Some(s), Some(c)) if c > 0.0 => Some(s / c),
                _ => None,
            },
            _ => None,
        }
    }
}

const SUM: u8 = 0;
const COUNT: u8 = 1;
const MIN: u8 = 2;
const MAX: u8 = 3;

/// The stored aggregators a downsample aggregator reads, if any.
fn wanted(agg: Aggregator) -> &'static [u8] {
    match agg {
        Aggregator::Sum | Aggregator::Zimsum => &[SUM],
        Aggregator::Count => &[COUNT],
        Aggregator::Min | Aggregator::Mimmin => &[MIN],
        Aggregator::Max | Aggregator::Mimmax => &[MAX],
        Aggregator::Avg => &[SUM, COUNT],
        _ => &[],
    }
}

impl Engine {
    /// The buckets external values give each series of the fetch, within
    /// the pushdown's window (whole buckets from the scan start, before its
    /// end) and each tier's TTL. Each value read is charged as a point.
    pub(super) fn external_buckets(
        &self,
        scan: &Scan<'_>,
        p: Pushdown,
    ) -> Result<ExternalBuckets, SourceError> {
        let mut out = ExternalBuckets::new();
        let wanted = wanted(p.aggregator);
        if wanted.is_empty() || !self.tiers.may_have_external() || p.interval_ms <= 0 {
            return Ok(out);
        }
        debug_assert!(
            [("sum", SUM), ("count", COUNT), ("min", MIN), ("max", MAX)]
                .iter()
                .all(|(n, id)| aggregation_id(n) == Some(*id))
        );
        let layout = *self.layout();
        let seek = scan.start_ms.saturating_add(p.interval_ms - 1);
        let seek = seek - seek.rem_euclid(p.interval_ms);
        let now = self.now_secs();
        let buckets_of_salt = if layout.salt_width == 0 {
            1
        } else {
            layout.salt_buckets
        };
        // Every usable table's rows, one range per table and salt bucket,
        // read at once (in parallel; on a shared store, one stream each).
        let secs = |ms: i64| u32::try_from(ms.div_euclid(1000).max(0)).unwrap_or(u32::MAX);
        let mut ranges = Vec::new();
        let mut range_table = Vec::new();
        for (i, table) in self.tiers.externals.iter().enumerate() {
            let lo_ms = seek.max(table.horizon(now).saturating_mul(1000));
            if p.interval_ms % table.interval_ms() != 0 || lo_ms >= scan.end_ms {
                continue;
            }
            let (lo, hi) = (secs(lo_ms), secs(scan.end_ms.saturating_add(999)));
            for bucket in 0..buckets_of_salt {
                ranges.push(table.scan_range(&layout, bucket, scan.metric, lo, hi.max(lo + 1)));
                range_table.push((i, lo_ms));
            }
        }
        if ranges.is_empty() {
            return Ok(out);
        }
        // Per range: series key → bucket start → values (a series' rows
        // of one table are in one range, in time order).
        type Found = HashMap<Vec<u8>, BTreeMap<i64, Bucket>>;
        let per_range: Vec<Mutex<Found>> = ranges.iter().map(|_| Mutex::default()).collect();
        let filter = |row: &[u8]| {
            row.get(4..)
                .and_then(|r| layout.parse_row_key(r))
                .is_some_and(|parts| scan.pf.matches(&layout, parts.tags))
        };
        self.store
            .scan_ranges(Table::Rollup, &ranges, &filter, &|i, row, cells| {
                let (Some(data_row), Some(&(t_index, lo_ms))) = (row.get(4..), range_table.get(i))
                else {
                    return Ok(true);
                };
                let (Some(parts), Some(table)) = (
                    layout.parse_row_key(data_row),
                    self.tiers.externals.get(t_index),
                ) else {
                    return Ok(true);
                };
                let mut key = data_row[..layout.prefix_width()].to_vec();
                key.extend_from_slice(parts.tags);
                let mut found = per_range[i]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let series = found.entry(key).or_default();
                let mut read = 0;
                for c in cells {
                    let Some(cell) = c
                        .column
                        .get(1..)
                        .and_then(|q| decode_rollup_cell(q, &c.value))
                    else {
                        continue;
                    };
                    let Some(t) = table.interval_start(parts.base_time, cell.index) else {
                        continue;
                    };
                    let t_ms = i64::from(t) * 1000;
                    if !wanted.contains(&cell.aggregator) || t_ms < lo_ms || t_ms >= scan.end_ms {
                        continue;
                    }
                    series
                        .entry(t_ms - t_ms.rem_euclid(p.interval_ms))
                        .or_default()
                        .add(cell.aggregator, cell.value.as_f64());
                    read += 1;
                }
                Ok(read == 0 || scan.take(read))
            })
            .map_err(|e| storage_source_err(&e))?;
        // A bucket takes the coarsest table with a value in it.
        let mut found: HashMap<Vec<u8>, BTreeMap<i64, (usize, Bucket)>> = HashMap::new();
        for (i, range) in per_range.into_iter().enumerate() {
            let t_index = range_table[i].0;
            let range = range
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (key, buckets) in range {
                let series = found.entry(key).or_default();
                for (start, b) in buckets {
                    let slot = series.entry(start).or_insert((t_index, b));
                    if slot.0 < t_index {
                        *slot = (t_index, b);
                    }
                }
            }
        }
        for (key, buckets) in found {
            let values: Vec<(i64, Num)> = buckets
                .into_iter()
                .filter_map(|(t, (_, b))| Some((t, Num::Float(b.value(p.aggregator)?))))
                .collect();
            if !values.is_empty() {
                out.insert(key, values);
            }
        }
        Ok(out)
    }
}

impl Engine {
    /// `stored` (a series' buckets from its points) with its external
    /// buckets of the instants it has none at, in time order.
    pub(super) fn with_external(
        stored: Vec<(i64, Num)>,
        external: Option<Vec<(i64, Num)>>,
    ) -> Vec<(i64, Num)> {
        match external {
            Some(ext) => merge_external(stored, ext),
            None => stored,
        }
    }

    /// The pushdown's buckets of a series' points (kept as points: it has
    /// points in memory only) merged with its external buckets.
    pub(super) fn bucket_with_external(
        req: &FetchRequest<'_>,
        pts: Points,
        external: Vec<(i64, Num)>,
    ) -> Result<Vec<(i64, Num)>, SourceError> {
        let sink_err = |e: hourglass_query::QueryError| SourceError::Storage(e.to_string());
        let p = req.downsample.ok_or_else(|| {
            SourceError::Storage("internal error: external rollups without a pushdown".into())
        })?;
        let mut sink = BucketSink::new(p, req.scan_start_ms, req.scan_end_ms);
        for (ts, v) in pts {
            sink.push(ts, v.as_f64(), req.budget).map_err(sink_err)?;
        }
        let buckets = sink.finish(req.budget).map_err(sink_err)?;
        Ok(merge_external(buckets, external))
    }
}

/// `stored` with the `external` buckets of the instants it has none at,
/// in time order.
fn merge_external(stored: Vec<(i64, Num)>, external: Vec<(i64, Num)>) -> Vec<(i64, Num)> {
    if external.is_empty() {
        return stored;
    }
    let mut out = Vec::with_capacity(stored.len() + external.len());
    let mut ext = external.into_iter().peekable();
    for (t, v) in stored {
        while let Some(e) = ext.next_if(|e| e.0 < t) {
            out.push(e);
        }
        ext.next_if(|e| e.0 == t);
        out.push((t, v));
    }
    out.extend(ext);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_buckets_win() {
        let f = Num::Float;
        let stored = vec![(10, f(1.0)), (30, f(3.0))];
        let ext = vec![(0, f(9.0)), (10, f(9.0)), (20, f(9.0)), (40, f(9.0))];
        let merged: Vec<(i64, f64)> = merge_external(stored, ext)
            .into_iter()
            .map(|(t, v)| (t, v.as_f64()))
            .collect();
        assert_eq!(
            merged,
            vec![(0, 9.0), (10, 1.0), (20, 9.0), (30, 3.0), (40, 9.0)]
        );
    }

    #[test]
    fn buckets_fold_as_the_aggregators_do() {
        let mut b = Bucket::default();
        for (agg, v) in [
            (SUM, 1.5),
            (SUM, 2.5),
            (COUNT, 2.0),
            (COUNT, 3.0),
            (MIN, 4.0),
            (MIN, 1.0),
        ] {
            b.add(agg, v);
        }
        assert_eq!(b.value(Aggregator::Sum), Some(4.0));
        assert_eq!(b.value(Aggregator::Count), Some(5.0));
        assert_eq!(b.value(Aggregator::Avg), Some(0.8));
        assert_eq!(b.value(Aggregator::Mimmin), Some(1.0));
        assert_eq!(b.value(Aggregator::Max), None);
        assert_eq!(b.value(Aggregator::Dev), None);
    }
}
