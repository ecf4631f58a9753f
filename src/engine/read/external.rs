//! Rollups written from outside (`engine::rollup::external`) in a fetch:
//! each series' buckets that its values fill, merged under the buckets of
//! its stored points (a bucket with any stored point keeps the raw answer).
//!
//! A bucket takes the values of the coarsest configured interval that
//! divides the downsample interval and answers it (OpenTSDB's choice of
//! rollup table, falling back to finer ones per bucket); the downsample
//! aggregator decides which values: `sum`/`zimsum` the sums, `count` the
//! counts, `min`/`mimmin` the minimums, `max`/`mimmax` the maximums, `avg`
//! the sums over the counts. Other aggregators read none.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use hourglass_query::Aggregator;
use hourglass_query::downsample::{BucketSink, Pushdown};
use hourglass_query::exec::{FetchRequest, Num, SourceError};

use super::source_error::storage_source_err;
use super::{Points, Scan};
use crate::codec::rollup_cell::decode_rollup_cell;
use crate::engine::Engine;
use crate::storage::Table;

/// Buckets (start ms, value) per series key, in time order.
pub(super) type ExternalBuckets = HashMap<Vec<u8>, Vec<(i64, Num)>>;

/// The aggregators whose stored values queries read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sum,
    Count,
    Min,
    Max,
}

impl Kind {
    fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "sum" => Kind::Sum,
            "count" => Kind::Count,
            "min" => Kind::Min,
            "max" => Kind::Max,
            _ => return None,
        })
    }
}

/// One bucket's external values so far, from one table.
#[derive(Default, Clone, Copy)]
struct Bucket {
    sum: Option<f64>,
    count: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
}

impl Bucket {
    fn add(&mut self, kind: Kind, v: f64) {
        let fold = |slot: &mut Option<f64>, f: fn(f64, f64) -> f64| {
            *slot = Some(slot.map_or(v, |old| f(old, v)));
        };
        match kind {
            Kind::Sum => fold(&mut self.sum, |a, b| a + b),
            Kind::Count => fold(&mut self.count, |a, b| a + b),
            Kind::Min => fold(&mut self.min, f64::min),
            Kind::Max => fold(&mut self.max, f64::max),
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

/// The stored aggregators a downsample aggregator reads, if any.
fn wanted(agg: Aggregator) -> &'static [Kind] {
    match agg {
        Aggregator::Sum | Aggregator::Zimsum => &[Kind::Sum],
        Aggregator::Count => &[Kind::Count],
        Aggregator::Min | Aggregator::Mimmin => &[Kind::Min],
        Aggregator::Max | Aggregator::Mimmax => &[Kind::Max],
        Aggregator::Avg => &[Kind::Sum, Kind::Count],
        _ => &[],
    }
}

impl Engine {
    /// The buckets external values give each series of the fetch, within
    /// the pushdown's window (whole buckets from the scan start, before its
    /// end) and each table's TTL. Each value read is charged as a point.
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
        // The configured ids of the aggregators wanted.
        let mut kinds: [Option<Kind>; 256] = [None; 256];
        for (name, id) in &self.tiers.aggregation_ids {
            if let Some(k) = Kind::of(name).filter(|k| wanted.contains(k)) {
                kinds[usize::from(*id)] = Some(k);
            }
        }
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
        let mut ranges = Vec::new();
        let mut range_table = Vec::new();
        for (i, table) in self.tiers.externals.iter().enumerate() {
            let lo_ms = seek.max(table.horizon(now).saturating_mul(1000));
            if p.interval_ms % table.interval_ms() != 0 || lo_ms >= scan.end_ms {
                continue;
            }
            let (lo, hi) = (secs(lo_ms), secs(scan.end_ms.saturating_add(999)));
            for bucket in 0..buckets_of_salt {
                ranges.push(table.scan_range(
                    &layout,
                    bucket,
                    scan.metric,
                    lo,
                    hi.max(lo.saturating_add(1)),
                ));
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
                let mut values = Vec::new();
                for c in cells {
                    let Some(cell) = c
                        .column
                        .get(1..)
                        .and_then(|q| decode_rollup_cell(q, &c.value))
                    else {
                        continue;
                    };
                    let (Some(kind), Some(t)) = (
                        kinds[usize::from(cell.aggregator)],
                        table.interval_start(parts.base_time, cell.index),
                    ) else {
                        continue;
                    };
                    let t_ms = i64::from(t) * 1000;
                    if t_ms >= lo_ms && t_ms < scan.end_ms {
                        values.push((t_ms - t_ms.rem_euclid(p.interval_ms), kind, cell.value));
                    }
                }
                if values.is_empty() {
                    return Ok(true);
                }
                let mut key = data_row[..layout.prefix_width()].to_vec();
                key.extend_from_slice(parts.tags);
                let read = values.len();
                let mut found = per_range[i]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let series = found.entry(key).or_default();
                for (start, kind, value) in values {
                    series.entry(start).or_default().add(kind, value.as_f64());
                }
                Ok(scan.take(read))
            })
            .map_err(|e| storage_source_err(&e))?;
        // A bucket takes the coarsest table that answers it.
        let mut found: HashMap<Vec<u8>, BTreeMap<i64, (usize, f64)>> = HashMap::new();
        for (i, range) in per_range.into_iter().enumerate() {
            let t_index = range_table[i].0;
            let range = range
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (key, buckets) in range {
                let series = found.entry(key).or_default();
                for (start, b) in buckets {
                    let Some(v) = b.value(p.aggregator) else {
                        continue;
                    };
                    let slot = series.entry(start).or_insert((t_index, v));
                    if slot.0 < t_index {
                        *slot = (t_index, v);
                    }
                }
            }
        }
        for (key, buckets) in found {
            let values: Vec<(i64, Num)> = buckets
                .into_iter()
                .map(|(t, (_, v))| (t, Num::Float(v)))
                .collect();
            if !values.is_empty() {
                out.insert(key, values);
            }
        }
        Ok(out)
    }
}

/// Whole seconds of a time in ms, as a row key holds them.
fn secs(ms: i64) -> u32 {
    u32::try_from(ms.div_euclid(1000).max(0)).unwrap_or(u32::MAX)
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
            (Kind::Sum, 1.5),
            (Kind::Sum, 2.5),
            (Kind::Count, 2.0),
            (Kind::Count, 3.0),
            (Kind::Min, 4.0),
            (Kind::Min, 1.0),
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
