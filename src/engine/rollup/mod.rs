//! Rollup tiers: for every series and tier interval (1 h and 1 d by
//! default), the interval's aggregates — point count, valid count, min,
//! max, sum, first and last value, folded as the query layer folds a
//! downsample bucket — kept in the rollup table so that a year of history
//! reads thousands of values instead of hundreds of millions of points.
//!
//! * this module — the tiers the configuration asks for ([`Tiers`]) and
//!   where a tier value lives (row key, column).
//! * [`build`] — computing tier values: when a flush writes hours to the
//!   store, when a delete changes stored hours, and on demand
//!   (`hourglass rollup rebuild`).
//! * [`plan`] — which tier (or raw points) answers which part of a fetch.
//!
//! A tier row is the data row key of its series with the base time of
//! its span (a day for intervals under a day, 32 intervals otherwise),
//! prefixed by the tier's interval in hours (two bytes, so a tier's rows
//! stay where they are whatever other tiers are configured); one cell
//! holds the span's values by interval
//! ([`TierRow`](crate::codec::native::TierRow)), so a scan reads an entry
//! per row, not per interval. Byte diagram:
//! `docs/format/rollup-tier.md`. The same table holds the tiers' state
//! row and the notes index ([`NOTES_PREFIX`]).
//!
//! The 1 h tier is the base: its value for an hour is computed from the
//! stored row (one native cell's summary, or the merged cells' points),
//! and coarser tiers from the base tier's values, merged in time order, so
//! every tier value equals what the raw path folds to the bit.
//!
//! Which hours a tier covers: every hour flushed while the tier was
//! configured ("complete from", recorded per tier in the state row); a
//! data directory created with tiers is covered from the start, an older
//! one from the next interval after the upgrade, until `hourglass rollup
//! rebuild` fills in the past. Rollups live on the embedded store; on a
//! shared store (Bigtable) queries read raw points.
//!
//! * [`external`] — rollups computed elsewhere (`/api/rollup`, telnet
//!   `rollup`), kept beside the tiers ([`ExternalTable`]: OpenTSDB's rollup
//!   rows; on a shared store, OpenTSDB's rollup tables) and read where no
//!   point is stored.

pub mod build;
pub mod external;
mod external_table;
pub mod plan;

pub use external_table::ExternalTable;

use std::sync::atomic::{AtomicU32, Ordering};

use crate::codec::KeyLayout;
use crate::config::{ConfigError, RollupConfig};
use crate::storage::{KeyRange, column, family};

/// Seconds in an hour and a day.
const HOUR: u32 = 3600;
const DAY: u32 = 86_400;
/// Intervals in a row of a tier whose interval is a day or more.
const LONG_SPAN_INTERVALS: u32 = 32;

/// The column of a tier row's cell.
pub fn row_column() -> Vec<u8> {
    column(family::DATA, &[])
}

/// The row holding each tier's "complete from" hour (a key no tier row
/// has: tier prefixes are intervals in hours, never 0xFFFF).
pub(super) const STATE_ROW: &[u8] = &[0xFF, 0xFF];

/// The notes index: one empty cell per data row holding an annotation,
/// keyed by this prefix and the data row key, so that a query a tier
/// answers still finds the notes of the rows it did not read.
pub const NOTES_PREFIX: [u8; 2] = [0xFF, 0xFE];

/// The notes index row of a data row (or a data scan key).
pub fn notes_key(data_row: &[u8]) -> Vec<u8> {
    let mut k = NOTES_PREFIX.to_vec();
    k.extend_from_slice(data_row);
    k
}

/// Hours a rebuild computes, and rows a purge rewrites, between two
/// writes.
const REBUILD_BATCH: usize = 65_536;

/// One configured tier.
#[derive(Debug)]
pub struct Tier {
    /// The interval, seconds (a whole number of hours).
    pub interval: u32,
    /// A row's span, seconds: a day, or 32 intervals.
    pub span: u32,
    /// How long values are kept, seconds (`None` = forever).
    pub ttl: Option<u64>,
    /// Every interval starting at or after this (seconds) has its value,
    /// as far as the store holds points for it.
    complete_from: AtomicU32,
}

impl Tier {
    fn new(interval: u32, ttl: Option<u64>) -> Tier {
        let span = if interval < DAY {
            DAY
        } else {
            interval.saturating_mul(LONG_SPAN_INTERVALS)
        };
        Tier {
            interval,
            span,
            ttl,
            complete_from: AtomicU32::new(u32::MAX),
        }
    }

    /// The tier's row-key prefix: its interval in hours.
    pub fn id(&self) -> [u8; 2] {
        u16::try_from(self.interval / HOUR)
            .unwrap_or(u16::MAX)
            .to_be_bytes()
    }

    pub fn interval_ms(&self) -> i64 {
        i64::from(self.interval) * 1000
    }

    /// The span base of the row holding the interval that starts at `t`.
    pub fn span_base(&self, t: u32) -> u32 {
        t - t % self.span
    }

    /// The row holding `series_key`'s interval that starts at `t`, and the
    /// interval's index in it.
    pub fn cell_of(&self, layout: &KeyLayout, series_key: &[u8], t: u32) -> (Vec<u8>, u32) {
        let base = self.span_base(t);
        (
            self.row_key(layout, series_key, base),
            (t - base) / self.interval,
        )
    }

    pub fn row_key(&self, layout: &KeyLayout, series_key: &[u8], span_base: u32) -> Vec<u8> {
        let mut key = self.id().to_vec();
        key.extend_from_slice(&layout.row_key(series_key, span_base));
        key
    }

    /// The start (seconds) of the interval at `index` of a row based at
    /// `span_base`; `None` past the span.
    pub fn interval_start(&self, span_base: u32, index: u32) -> Option<u32> {
        (index < self.span / self.interval)
            .then(|| span_base.checked_add(index * self.interval))
            .flatten()
    }

    /// The rows of one salt bucket of `metric` whose spans meet
    /// `[lo, hi)` (seconds).
    pub fn scan_range(
        &self,
        layout: &KeyLayout,
        bucket: u32,
        metric: u64,
        lo: u32,
        hi: u32,
    ) -> KeyRange {
        let key = |base: u32| {
            let mut k = self.id().to_vec();
            k.extend_from_slice(&layout.scan_key(bucket, metric, base));
            k
        };
        let end = self
            .span_base(hi.saturating_sub(1))
            .checked_add(self.span)
            .map_or_else(|| crate::storage::prefix_end(&key(u32::MAX)), key);
        KeyRange {
            start: key(self.span_base(lo)),
            end,
        }
    }

    /// The first interval (seconds) whose value is complete.
    pub fn complete_from(&self) -> u32 {
        self.complete_from.load(Ordering::Acquire)
    }

    pub(super) fn set_complete_from(&self, t: u32) {
        self.complete_from.store(t, Ordering::Release);
    }

    /// The first interval start (seconds) still kept at `now` by the TTL.
    pub fn horizon(&self, now: i64) -> i64 {
        ttl_horizon(self.ttl, self.interval, now)
    }
}

/// The first interval start (seconds, a multiple of `interval`) a TTL of
/// `ttl` seconds (`None`: forever) still keeps at `now`.
pub fn ttl_horizon(ttl: Option<u64>, interval: u32, now: i64) -> i64 {
    match ttl {
        None => 0,
        Some(ttl) => {
            let h = now
                .saturating_sub(i64::try_from(ttl).unwrap_or(i64::MAX))
                .max(0);
            let i = i64::from(interval.max(1));
            (h + i - 1) / i * i
        }
    }
}

/// The configured tiers, finest (1 h) first; none when rollups are off.
#[derive(Debug, Default)]
pub struct Tiers {
    pub tiers: Vec<Tier>,
    /// When values past their TTL were last deleted (seconds).
    purged_at: std::sync::atomic::AtomicI64,
    /// The notes index may hold a row: until an annotation is written to a
    /// data row, a query a tier answers need not look for notes.
    pub(super) notes: std::sync::atomic::AtomicBool,
    /// Where rollups written from outside go, one table per configured
    /// interval, finest first ([`external`]; on every store).
    pub externals: Vec<ExternalTable>,
    /// The tables may hold external values: until one is written, a query
    /// need not look for them.
    pub(super) has_external: std::sync::atomic::AtomicBool,
    /// OpenTSDB's `aggregationIds` of the external values' cells.
    pub aggregation_ids: Vec<(String, u8)>,
}

impl Tiers {
    /// The configured tiers and external tables; `computed` false (a
    /// shared store) keeps the external tables only.
    pub fn from_config(cfg: &RollupConfig, computed: bool) -> Result<Tiers, ConfigError> {
        let specs = cfg.tiers()?;
        Ok(Tiers {
            tiers: specs
                .iter()
                .filter(|_| computed)
                .map(|t| Tier::new(t.interval, t.ttl))
                .collect(),
            externals: specs
                .iter()
                .map(|t| ExternalTable {
                    interval: t.interval,
                    span: t.row_span,
                    ttl: t.ttl,
                })
                .collect(),
            purged_at: std::sync::atomic::AtomicI64::new(i64::MIN),
            notes: std::sync::atomic::AtomicBool::new(true),
            has_external: std::sync::atomic::AtomicBool::new(true),
            aggregation_ids: cfg
                .aggregation_ids
                .iter()
                .map(|(n, id)| (n.clone(), *id))
                .collect(),
        })
    }

    /// The configured id of aggregator `name` (any case).
    pub fn aggregation_id(&self, name: &str) -> Option<u8> {
        self.aggregation_ids
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, id)| *id)
    }

    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty()
    }

    /// The base (1 h) tier.
    pub fn base(&self) -> Option<&Tier> {
        self.tiers.first()
    }

    /// False while the notes index is known to be empty.
    pub fn may_have_notes(&self) -> bool {
        self.notes.load(Ordering::Acquire)
    }

    /// An annotation was (or is about to be) indexed.
    pub fn note_indexed(&self) {
        self.notes.store(true, Ordering::Release);
    }

    /// False while the tables are known to hold no external value.
    pub fn may_have_external(&self) -> bool {
        !self.externals.is_empty() && self.has_external.load(Ordering::Acquire)
    }

    /// An external value is about to be written.
    pub fn external_written(&self) {
        self.has_external.store(true, Ordering::Release);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::config::RollupTierConfig;

    fn cfg(tiers: &[(&str, &str)]) -> RollupConfig {
        RollupConfig {
            enabled: true,
            tiers: tiers
                .iter()
                .map(|(i, t)| RollupTierConfig {
                    interval: i.to_string(),
                    ttl: t.to_string(),
                    row_span: None,
                    table: None,
                })
                .collect(),
            ..RollupConfig::default()
        }
    }

    #[test]
    fn tiers_are_checked() {
        let t = Tiers::from_config(&RollupConfig::default(), true).unwrap();
        assert_eq!(t.tiers.len(), 2);
        assert_eq!((t.tiers[0].interval, t.tiers[0].span), (HOUR, DAY));
        assert_eq!((t.tiers[1].interval, t.tiers[1].span), (DAY, 32 * DAY));
        assert_eq!(t.tiers[1].id(), [0, 24]);
        let t = Tiers::from_config(
            &cfg(&[("1h", "365d"), ("6h", "0"), ("1d", "0"), ("7d", "0")]),
            true,
        )
        .unwrap();
        assert_eq!(t.tiers[0].ttl, Some(365 * DAY as u64));
        for (bad, why) in [
            (vec![("1d", "0")], "first tier must be"),
            (vec![("1h", "0"), ("90m", "0")], "not a multiple"),
            (vec![("1h", "0"), ("5h", "0")], "divide a day"),
            (vec![("1h", "0"), ("36h", "0")], "divide a day"),
            (vec![("1h", "0"), ("1h", "0")], "not a multiple"),
            (vec![("1h", "1x")], "unknown unit"),
        ] {
            let e = Tiers::from_config(&cfg(&bad), true)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let off = RollupConfig {
            enabled: false,
            ..RollupConfig::default()
        };
        assert!(Tiers::from_config(&off, true).unwrap().is_empty());
        // A shared store keeps the external tables only.
        let shared = Tiers::from_config(&RollupConfig::default(), false).unwrap();
        assert!(shared.is_empty());
        assert_eq!(shared.externals.len(), 2);
        assert_eq!(
            shared.externals[1].span,
            crate::codec::rollup_cell::RowSpan::Year
        );
    }

    #[test]
    fn cells_and_ranges() {
        let layout = KeyLayout::default();
        let t = Tiers::from_config(&RollupConfig::default(), true).unwrap();
        let (hour, day) = (&t.tiers[0], &t.tiers[1]);
        let series = layout.series_key(1, &[(1, 1)]);
        let at = 1_700_006_400 + 5 * HOUR;
        let (row, index) = hour.cell_of(&layout, &series, at);
        assert_eq!(&row[..2], &[0, 1]);
        let base = layout.parse_row_key(&row[2..]).unwrap().base_time;
        assert_eq!(base, at - at % DAY);
        assert_eq!(hour.interval_start(base, index), Some(at));
        assert_eq!(hour.interval_start(base, 24), None);
        let (_, index) = day.cell_of(&layout, &series, at - at % DAY);
        assert_eq!(
            day.interval_start(day.span_base(at), index),
            Some(at - at % DAY)
        );
        let r = day.scan_range(&layout, 0, 1, 0, u32::MAX);
        assert!(r.start < r.end);
        assert_eq!(hour.horizon(10 * DAY as i64), 0);
    }
}
