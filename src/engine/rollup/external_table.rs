//! [`ExternalTable`]: where the rollups of one interval written from
//! outside live — OpenTSDB 2.4's rollup table of that interval, with its
//! row span (`codec::rollup_cell`). On the embedded store its rows are in
//! the rollup table under `FF FD ‖ interval hours`; a shared store maps
//! that prefix to OpenTSDB's table (`tsdb-rollup-1h`).

use crate::codec::KeyLayout;
use crate::codec::rollup_cell::{MAX_INDEX, RowSpan, external_row_prefix};
use crate::storage::KeyRange;

/// One configured interval of external rollups.
#[derive(Debug, Clone)]
pub struct ExternalTable {
    /// The interval, seconds (a whole number of hours).
    pub interval: u32,
    pub span: RowSpan,
    /// How long values are read and kept, seconds (`None` = forever): the
    /// tier's of the same interval.
    pub ttl: Option<u64>,
}

impl ExternalTable {
    /// The rows' prefix in the rollup table: [`EXTERNAL_ROW_PREFIX`] and
    /// the interval in hours.
    pub fn prefix(&self) -> [u8; 4] {
        external_row_prefix(self.interval)
    }

    pub fn interval_ms(&self) -> i64 {
        i64::from(self.interval) * 1000
    }

    /// `prefix ‖ key` (a data row key or a part of one).
    pub fn key(&self, data_key: &[u8]) -> Vec<u8> {
        let mut k = self.prefix().to_vec();
        k.extend_from_slice(data_key);
        k
    }

    /// The row holding `series_key`'s value at `t` and the value's index
    /// in it, as OpenTSDB places it: the row span's start as base time, the
    /// index `(t − base) / interval`.
    pub fn cell_of(&self, layout: &KeyLayout, series_key: &[u8], t: u32) -> (Vec<u8>, u32) {
        let base = self.span.base(t);
        let index = ((t - base) / self.interval.max(1)).min(MAX_INDEX - 1);
        (self.key(&layout.row_key(series_key, base)), index)
    }

    /// The start (seconds) of the interval at `index` of a row based at
    /// `base`; `None` past the row's span.
    pub fn interval_start(&self, base: u32, index: u32) -> Option<u32> {
        let t = base.checked_add(index.checked_mul(self.interval)?)?;
        let end = self.span.next(base).unwrap_or(u32::MAX);
        (t < end).then_some(t)
    }

    /// The rows of one salt bucket of `metric` whose spans meet `[lo, hi)`
    /// (seconds).
    pub fn scan_range(
        &self,
        layout: &KeyLayout,
        bucket: u32,
        metric: u64,
        lo: u32,
        hi: u32,
    ) -> KeyRange {
        let key = |base: u32| self.key(&layout.scan_key(bucket, metric, base));
        let end = self
            .span
            .next(self.span.base(hi.saturating_sub(1)))
            .map_or_else(|| crate::storage::prefix_end(&key(u32::MAX)), key);
        KeyRange {
            start: key(self.span.base(lo)),
            end,
        }
    }

    /// The rows of the series under one `(salt, metric)` prefix whose spans
    /// meet `[lo, hi]` (seconds).
    pub fn prefix_range(&self, series_prefix: &[u8], lo: u32, hi: u32) -> KeyRange {
        let key = |base: u32| {
            let mut k = self.key(series_prefix);
            k.extend_from_slice(&base.to_be_bytes());
            k
        };
        let end = self
            .span
            .next(self.span.base(hi))
            .map_or_else(|| crate::storage::prefix_end(&self.key(series_prefix)), key);
        KeyRange {
            start: key(self.span.base(lo)),
            end,
        }
    }

    /// The first interval start (seconds, a multiple of the interval)
    /// still read at `now` by the TTL.
    pub fn horizon(&self, now: i64) -> i64 {
        super::ttl_horizon(self.ttl, self.interval, now)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_placed_as_opentsdb_places_them() {
        let layout = KeyLayout::default();
        let hourly = ExternalTable {
            interval: 3600,
            span: RowSpan::Secs(86_400),
            ttl: None,
        };
        let series = layout.series_key(1, &[(1, 1)]);
        let t = 1_700_006_400 + 5 * 3600 + 59;
        let (row, index) = hourly.cell_of(&layout, &series, t);
        assert_eq!(&row[..4], &[0xFF, 0xFD, 0, 1]);
        assert_eq!(index, 5);
        let base = layout.parse_row_key(&row[4..]).unwrap().base_time;
        assert_eq!(base, 1_700_006_400);
        assert_eq!(hourly.interval_start(base, 5), Some(base + 5 * 3600));
        assert_eq!(hourly.interval_start(base, 24), None);
        let daily = ExternalTable {
            interval: 86_400,
            span: RowSpan::Year,
            ttl: Some(86_400),
        };
        let (row, index) = daily.cell_of(&layout, &series, 1_709_208_000);
        assert_eq!(&row[..4], &[0xFF, 0xFD, 0, 24]);
        // 2024-02-29 is day 59 of 2024.
        assert_eq!(index, 59);
        assert_eq!(daily.horizon(10 * 86_400), 9 * 86_400);
        assert_eq!(daily.horizon(10 * 86_400 + 5), 10 * 86_400);
        let r = daily.scan_range(&layout, 0, 1, 0, u32::MAX);
        assert!(r.start < r.end);
    }
}
