//! Series counts from the series index (`/api/stats/cardinality`, the web
//! UI's explore page): series per metric, and per tag key the series that
//! carry it, its distinct values and the values with the most series. One
//! pass over the index rows (a metric's rows only, when one is named),
//! never over data rows; every row read counts against the query budget,
//! every distinct metric, key or value held as one value.

use std::collections::HashMap;

use hourglass_query::QueryBudget;
use hourglass_query::error::QueryError;

use super::Engine;
use super::index::{IndexError, series_column};
use crate::codec::rowkey::{uid_bytes, uid_from_bytes};
use crate::storage::Table;
use crate::uid::UidKind;

/// What to count.
#[derive(Debug, Clone)]
pub struct CardinalityQuery {
    /// Only this metric's series; `None`: every series.
    pub metric: Option<String>,
    /// Values listed per tag key.
    pub top: usize,
    /// Metrics listed.
    pub limit: usize,
}

/// A name and the number of series under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub name: String,
    pub series: u64,
}

/// One tag key's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagKeyCounts {
    pub name: String,
    /// Series that carry the key.
    pub series: u64,
    /// Its distinct values.
    pub values: u64,
    /// The values with the most series, most first.
    pub top_values: Vec<Counted>,
}

/// The answer: metrics by series count (most first, at most `limit`; ties
/// by UID, the older name first), tag keys by distinct values (most
/// first), each with its `top` values the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cardinality {
    pub total_series: u64,
    pub metric_count: usize,
    pub metrics: Vec<Counted>,
    /// More metrics than `limit` had series.
    pub truncated: bool,
    pub tag_keys: Vec<TagKeyCounts>,
}

/// Counts by UID while scanning.
#[derive(Default)]
struct Tally {
    series: u64,
    metrics: HashMap<u64, u64>,
    keys: HashMap<u64, u64>,
    pairs: HashMap<(u64, u64), u64>,
}

/// The `n` UIDs with the most series, most first, ties by UID.
fn most_counted(mut counts: Vec<(u64, u64)>, n: usize) -> Vec<(u64, u64)> {
    let by_count = |x: &(u64, u64), y: &(u64, u64)| y.1.cmp(&x.1).then(x.0.cmp(&y.0));
    if counts.len() > n && n > 0 {
        counts.select_nth_unstable_by(n - 1, by_count);
    }
    counts.truncate(n);
    counts.sort_unstable_by(by_count);
    counts
}

impl Engine {
    /// Series counts of `q` from the series index (see the module doc).
    pub fn cardinality(
        &self,
        q: &CardinalityQuery,
        budget: &QueryBudget,
    ) -> Result<Cardinality, IndexError> {
        let layout = self.layout;
        let (start, end) = match &q.metric {
            Some(name) => {
                let id = self.uids.lookup(UidKind::Metric, name)?.ok_or_else(|| {
                    IndexError::Unresolved {
                        kind: UidKind::Metric,
                        name: name.clone(),
                    }
                })?;
                let mut m = Vec::with_capacity(layout.metric_width);
                uid_bytes(id, layout.metric_width, &mut m);
                let end = crate::storage::prefix_end(&m);
                (m, end)
            }
            // Past the marker row.
            None => (vec![0, 0], Vec::new()),
        };
        let col = series_column();
        let mut tally = Tally::default();
        let mut failed: Option<QueryError> = None;
        let mut tick = 0u32;
        self.store
            .scan(Table::Meta, &start, &end, &mut |row, cells| {
                let stop = |e: QueryError, failed: &mut Option<QueryError>| {
                    *failed = Some(e);
                    Ok(false)
                };
                if !budget.take_points(1) {
                    let e = match budget.check_points() {
                        // The data-point wording speaks of time ranges.
                        Err(QueryError::Limit(_)) => QueryError::Limit(
                            "More series than [query] max_points allows to count: \
                             name a metric (metric=) or raise the limit"
                                .to_string(),
                        ),
                        other => other.err().unwrap_or(QueryError::Cancelled),
                    };
                    return stop(e, &mut failed);
                }
                if let Err(e) = budget.tick(&mut tick) {
                    return stop(e, &mut failed);
                }
                if !cells.iter().any(|c| c.column == col) || row.len() < layout.metric_width {
                    return Ok(true);
                }
                let (metric, tags) = row.split_at(layout.metric_width);
                if !tags.len().is_multiple_of(layout.tag_pair_width()) {
                    return Ok(true);
                }
                let mut new_entries = 0;
                tally.series += 1;
                let count = tally.metrics.entry(uid_from_bytes(metric)).or_insert(0);
                new_entries += usize::from(*count == 0);
                *count += 1;
                for (k, v) in layout.tag_pairs(tags) {
                    let (k, v) = (uid_from_bytes(k), uid_from_bytes(v));
                    let count = tally.keys.entry(k).or_insert(0);
                    new_entries += usize::from(*count == 0);
                    *count += 1;
                    let count = tally.pairs.entry((k, v)).or_insert(0);
                    new_entries += usize::from(*count == 0);
                    *count += 1;
                }
                if new_entries > 0
                    && let Err(e) = budget.hold(new_entries)
                {
                    return stop(e, &mut failed);
                }
                Ok(true)
            })?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        self.name_tally(tally, q, budget)
    }

    /// Names the counted UIDs and orders them. Only what is listed is
    /// named (a UID-table read each when not cached): ties at a cut go by
    /// UID, the order names were first seen, so a key with a million
    /// values of one series each costs `top` names, not a million.
    fn name_tally(
        &self,
        tally: Tally,
        q: &CardinalityQuery,
        budget: &QueryBudget,
    ) -> Result<Cardinality, IndexError> {
        let name = |kind: UidKind, id: u64| -> Result<String, IndexError> {
            budget.check()?;
            Ok(self.name_or_hex(kind, id)?.to_string())
        };
        let named = |kind: UidKind, counts: Vec<(u64, u64)>, n: usize| {
            most_counted(counts, n)
                .into_iter()
                .map(|(id, series)| {
                    Ok(Counted {
                        name: name(kind, id)?,
                        series,
                    })
                })
                .collect::<Result<Vec<_>, IndexError>>()
        };
        let metric_count = tally.metrics.len();
        let truncated = metric_count > q.limit;
        let metrics = named(
            UidKind::Metric,
            tally.metrics.into_iter().collect(),
            q.limit,
        )?;
        let mut values_of: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        for ((k, v), series) in tally.pairs {
            values_of.entry(k).or_default().push((v, series));
        }
        let mut tag_keys = Vec::with_capacity(tally.keys.len());
        for (k, series) in tally.keys {
            let values = values_of.remove(&k).unwrap_or_default();
            tag_keys.push(TagKeyCounts {
                name: name(UidKind::TagK, k)?,
                series,
                values: values.len() as u64,
                top_values: named(UidKind::TagV, values, q.top)?,
            });
        }
        tag_keys.sort_unstable_by(|x, y| {
            y.values
                .cmp(&x.values)
                .then(y.series.cmp(&x.series))
                .then_with(|| x.name.cmp(&y.name))
        });
        Ok(Cardinality {
            total_series: tally.series,
            metric_count,
            metrics,
            truncated,
            tag_keys,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::most_counted;

    #[test]
    fn the_most_counted_come_first_and_ties_go_by_uid() {
        let counts = vec![(7, 1), (3, 5), (9, 5), (1, 1), (4, 2), (2, 1)];
        assert_eq!(most_counted(counts.clone(), 3), [(3, 5), (9, 5), (4, 2)]);
        assert_eq!(
            most_counted(counts.clone(), 4),
            [(3, 5), (9, 5), (4, 2), (1, 1)]
        );
        assert_eq!(most_counted(counts.clone(), 6).len(), 6);
        assert_eq!(most_counted(counts.clone(), 100).len(), 6);
        assert!(most_counted(counts, 0).is_empty());
    }
}
