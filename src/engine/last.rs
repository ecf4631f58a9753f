//! The newest point of a series (`/api/query/last`), found with point reads
//! of single hour rows, never a scan of data:
//!
//! * without `back_scan`, the series' newest hour is read: the newer of
//!   the one the head knows (`SeriesEntry::newest_base`, kept after the
//!   hour is flushed) and the one the series index records (written when a
//!   flush stores it, so it survives a restart: `engine::index`); with
//!   neither, the current hour, as OpenTSDB does without meta counters;
//! * with `back_scan = N`, the current hour and the N before it, newest
//!   first, as OpenTSDB scans: never a point older than that, even one the
//!   head holds;
//! * on a shared store (Bigtable), where other nodes write too, the hours
//!   above the newest one known are read from the current hour down (at
//!   most a day of them), the rows fetched in one batch;
//! * each hour merges the stored row, rows being flushed and the head's
//!   hour (newer sources win on an equal timestamp); the first hour with a
//!   point answers.
//!
//! Metric sub queries find their series in the series index (`index`):
//! every series of the metric that has all the given tags.

use std::collections::BTreeMap;

use hourglass_query::QueryBudget;
use hourglass_query::error::QueryError;
use hourglass_query::exec::Num;
use hourglass_query::lookup::LookupQuery;

use super::Engine;
use super::index::IndexError;
use crate::codec::{DecodedPoint, StoredValue};
use crate::storage::{StorageError, Table};
use crate::uid::{UidError, UidKind};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LastError {
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Uid(#[from] UidError),
    #[error("corrupt data row of series {series}: {reason}")]
    Corrupt { series: String, reason: String },
    #[error(transparent)]
    Budget(#[from] QueryError),
}

fn to_num(v: StoredValue) -> Num {
    match v {
        StoredValue::Int(i) => Num::Int(i),
        StoredValue::Float(f) => Num::Float(f64::from(f)),
        StoredValue::Double(d) => Num::Float(d),
    }
}

/// On a shared store, hours read above the newest one this node's head
/// knows (points other nodes wrote since).
const SHARED_CATCH_UP_HOURS: u32 = 24;

/// Keeps the point with the highest offset at or after `min_offset` (the
/// retention horizon); on an equal offset the later (newer) source wins.
/// A staleness marker is not a point.
fn newest(best: &mut Option<DecodedPoint>, pts: &[DecodedPoint], min_offset: i64) {
    if let Some(p) = pts
        .iter()
        .filter(|p| i64::from(p.offset_ms) >= min_offset && !p.value.is_stale_marker())
        .max_by_key(|p| p.offset_ms)
        && best.is_none_or(|b| p.offset_ms >= b.offset_ms)
    {
        *best = Some(*p);
    }
}

impl Engine {
    /// The TSUIDs of a metric that carry every tag in `tags` (exact
    /// values), from the series index.
    pub fn series_with_tags(
        &self,
        metric: &str,
        tags: &BTreeMap<String, String>,
        budget: &QueryBudget,
    ) -> Result<Vec<Vec<u8>>, IndexError> {
        let q = LookupQuery {
            metric: Some(metric.to_string()),
            tags: tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            limit: 0,
            use_meta: true,
        };
        self.lookup_series_tsuids(&q, budget)
    }

    /// The newest hour of a series: the newer of the head's and the series
    /// index's. The index is read only when the head does not know what it
    /// records (a series not flushed since it entered the head), or on a
    /// shared store, where other nodes record hours too.
    fn newest_hour(&self, series_key: &[u8], shared: bool) -> Result<Option<u32>, LastError> {
        let (in_head, recorded) = {
            let head = self.head();
            head.id_of(series_key)
                .and_then(|id| head.entry(id))
                .map_or((0, 0), |e| (e.newest_base, e.newest_recorded))
        };
        let recorded = if recorded == super::head::NONE_RECORDED && !shared {
            0
        } else if recorded > 0 && !shared {
            recorded
        } else {
            self.recorded_newest_hours(&[series_key])?
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(0)
        };
        Ok(Some(in_head.max(recorded)).filter(|b| *b > 0))
    }

    /// The newest point of a series (key with salt): in its newest hour
    /// (`back_scan == 0`), or in the current hour and the `back_scan` hours
    /// before it. Each row read counts as one point of `budget` plus the
    /// points it holds.
    pub fn last_point(
        &self,
        series_key: &[u8],
        back_scan: u32,
        budget: &QueryBudget,
    ) -> Result<Option<(i64, Num)>, LastError> {
        let now_hour = (self.now_secs().max(0) as u64 / 3600 * 3600) as u32;
        // On a shared store another node may hold newer hours than this
        // node knows: the hours above the newest known one are read too,
        // from the current hour down (at most a day of rows), in one batch.
        let shared = self.log.is_none();
        // Hours to read, newest first.
        let down = |from: u32, steps: u32| {
            (0..=steps).map_while(move |s| from.checked_sub(s.saturating_mul(3600)))
        };
        let bases: Vec<u32> = if back_scan > 0 {
            down(now_hour, back_scan).collect()
        } else {
            match self.newest_hour(series_key, shared)? {
                Some(b) if shared && now_hour > b => {
                    let catch_up = ((now_hour - b) / 3600).min(SHARED_CATCH_UP_HOURS);
                    let mut v: Vec<u32> = down(now_hour, catch_up.saturating_sub(1)).collect();
                    v.push(b);
                    v
                }
                Some(b) => vec![b],
                None => vec![now_hour],
            }
        };
        let mut prefetched: Vec<Vec<crate::storage::Cell>> = if shared {
            budget.check()?;
            let rows: Vec<Vec<u8>> = bases
                .iter()
                .map(|b| self.layout.row_key(series_key, *b))
                .collect();
            self.store.get_rows(Table::Data, &rows)?
        } else {
            Vec::new()
        };
        prefetched.reverse();
        let metric = super::metric_of(&self.layout, series_key);
        // Nothing older than the metric's retention horizon, as queries.
        let horizon = match self.uids.name_of(UidKind::Metric, metric)? {
            Some(name) => self.retention.horizon_ms(&name, self.clock.now_ms()),
            None => i64::MIN,
        };
        let mut scratch = Vec::new();
        for base in bases {
            let base_ms = i64::from(base) * 1000;
            if base_ms + 3_600_000 <= horizon {
                break;
            }
            let min_offset = horizon.saturating_sub(base_ms);
            budget.check()?;
            let cells = match prefetched.pop() {
                Some(c) => c,
                None => {
                    let row = self.layout.row_key(series_key, base);
                    self.store.get_row(Table::Data, &row)?
                }
            };
            let mut best = None;
            if !cells.is_empty() {
                scratch.clear();
                crate::codec::row::decode_row(&cells, &mut scratch).map_err(|e| {
                    LastError::Corrupt {
                        series: crate::codec::hex::encode(series_key),
                        reason: e.to_string(),
                    }
                })?;
                newest(&mut best, &scratch, min_offset);
            }
            {
                let head = self.head();
                for frozen in &head.frozen {
                    for (key, hour) in frozen.rows.get(&metric).into_iter().flatten() {
                        if hour.base == base && &key[..] == series_key {
                            newest(&mut best, &hour.points(), min_offset);
                        }
                    }
                }
                if let Some(e) = head.id_of(series_key).and_then(|id| head.entry(id))
                    && let Ok(i) = e.hours.binary_search_by_key(&base, |h| h.base)
                {
                    newest(&mut best, &e.hours[i].points(), min_offset);
                }
            }
            if !budget.take_points(1 + scratch.len()) {
                budget.check_points()?;
            }
            if let Some(p) = best {
                let ts = base_ms + i64::from(p.offset_ms);
                return Ok(Some((ts, to_num(p.value))));
            }
        }
        Ok(None)
    }
}
