//! The series index: one row per series in the `Meta` table (OpenTSDB's
//! `tsdb-meta`), keyed by the TSUID (metric UID ‖ tag pairs, no salt, no
//! time), so `/api/search/lookup` and the metric queries of
//! `/api/query/last` read index rows, never data rows. Layout in
//! `docs/format/series-index.md`.
//!
//! Cost on the write path: a series the head does not know (new, or back
//! after eviction or a restart) gets its index row in the same store batch
//! as every other new series of the write, with buffered durability — one
//! memtable insert and a few log-buffer bytes, no fsync.
//!
//! Crash safety without an fsync per new series: the row is written before
//! the WAL frame that defines the series, so
//! * a series with a point in the replayed WAL segments is indexed again
//!   when the WAL is replayed ([`Engine::reindex`] on open; after a clean
//!   stop nothing is replayed, so nothing is rewritten), and
//! * a checkpoint syncs the store before it drops WAL segments, so a series
//!   whose frame is dropped already has a durable index row.
//!
//! Data directories written before the index existed are indexed once from
//! their data rows on open (the `00` marker row records that it was done).

use std::collections::BTreeMap;
use std::sync::Arc;

use hourglass_query::QueryBudget;
use hourglass_query::error::QueryError;
use hourglass_query::lookup::{LookupMatch, LookupQuery};

use super::Engine;
use crate::codec::KeyLayout;
use crate::codec::rowkey::{uid_bytes, uid_from_bytes};
use crate::storage::{Durability, Mutation, StorageError, Store, Table, column, family};
use crate::uid::{UidError, UidKind};

/// Qualifier of the cell every series row has.
const SERIES_QUALIFIER: &[u8] = b"ts_idx";
/// Value of a series row's cell: the row format version.
const SERIES_VALUE: u8 = 1;
/// Qualifier of a series row's newest-hour cell: the newest hour of the
/// series in table files, written when a flush stores it (so that
/// `/api/query/last` finds a series' newest point after a restart without
/// scanning back).
const NEWEST_QUALIFIER: &[u8] = b"newest_hour";
/// First byte of the newest-hour value: its format version.
const NEWEST_VERSION: u8 = 1;
/// The marker row: sorts before every TSUID (metric UIDs are never 0 and
/// TSUIDs are longer than one byte).
const MARKER_ROW: &[u8] = &[0];
const MARKER_QUALIFIER: &[u8] = b"index_version";
/// Index rows per store batch when rebuilding.
const BATCH: usize = 4096;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// A name in the request has no UID (OpenTSDB: 404).
    #[error("Unable to resolve one or more UIDs")]
    Unresolved { kind: UidKind, name: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Uid(#[from] UidError),
    /// Over the query budget, timed out or cancelled.
    #[error(transparent)]
    Budget(#[from] QueryError),
}

pub(super) fn series_column() -> Vec<u8> {
    column(family::NAME, SERIES_QUALIFIER)
}

fn newest_column() -> Vec<u8> {
    column(family::NAME, NEWEST_QUALIFIER)
}

/// A newest-hour value: version, then the hour's base (unix seconds, big
/// endian).
fn encode_newest(base: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(5);
    v.push(NEWEST_VERSION);
    v.extend_from_slice(&base.to_be_bytes());
    v
}

/// The hour of a newest-hour value; `None` for a value of another version
/// or length (read as "not recorded").
fn decode_newest(value: &[u8]) -> Option<u32> {
    match value {
        [NEWEST_VERSION, b0, b1, b2, b3] => Some(u32::from_be_bytes([*b0, *b1, *b2, *b3])),
        _ => None,
    }
}

/// The index row of a series key (the TSUID: the key without its salt).
fn index_row<'a>(layout: &KeyLayout, series_key: &'a [u8]) -> &'a [u8] {
    series_key.get(layout.salt_width..).unwrap_or_default()
}

fn put(row: &[u8]) -> Mutation {
    Mutation::Put {
        table: Table::Meta,
        row: row.to_vec(),
        column: series_column(),
        value: vec![SERIES_VALUE],
    }
}

/// One tag key of a lookup as UID bytes (`None` = `*`) and its allowed
/// value UIDs (`None` = any value).
type KeyGroup = (Option<Vec<u8>>, Option<Vec<Vec<u8>>>);

/// A lookup resolved to UIDs: the metric (`None` = any) and, per tag key
/// (`None` = `*`), the allowed values (`None` = any value).
#[derive(Debug)]
struct Resolved {
    metric: Option<Vec<u8>>,
    groups: Vec<KeyGroup>,
}

impl Resolved {
    /// OpenTSDB's rule: same key OR'd, different keys AND'd, `*` matches
    /// anything on its side.
    fn matches(&self, layout: &KeyLayout, tags: &[u8]) -> bool {
        self.groups.iter().all(|(key, values)| {
            layout.tag_pairs(tags).any(|(k, v)| {
                key.as_deref().is_none_or(|want| want == k)
                    && values
                        .as_ref()
                        .is_none_or(|vs| vs.iter().any(|want| want == v))
            })
        })
    }
}

impl Engine {
    /// Writes index rows for series keys (idempotent), buffered: see the
    /// module docs for why that is crash-safe.
    pub(crate) fn index_series<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<(), StorageError> {
        let layout = self.layout;
        let batch: Vec<Mutation> = keys
            .into_iter()
            .map(|k| put(index_row(&layout, k)))
            .collect();
        if batch.is_empty() {
            return Ok(());
        }
        self.store.write(batch, Durability::Buffered)
    }

    /// Which of `keys` the series index certainly does not hold (asked of
    /// the store's bloom filters, no block read; on a store without them,
    /// none): a series new to the index has no newest hour recorded, so its
    /// first flush need not read one back. Nor has it tier rows: the index
    /// row is written before any flush of a series, and nothing deletes
    /// index rows. (A tool that ever does, or that writes tier rows of a
    /// series without indexing it, breaks this.)
    pub(crate) fn not_indexed(&self, keys: &[&[u8]]) -> Result<Vec<bool>, StorageError> {
        keys.iter()
            .map(|k| {
                self.store
                    .row_may_exist(Table::Meta, index_row(&self.layout, k))
                    .map(|may| !may)
            })
            .collect()
    }

    /// The newest hours recorded for series keys (`None`: none recorded),
    /// in the order asked, in one read of their index rows.
    pub(crate) fn recorded_newest_hours(
        &self,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<u32>>, StorageError> {
        let rows: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| index_row(&self.layout, k).to_vec())
            .collect();
        let col = newest_column();
        Ok(self
            .store
            .get_rows(Table::Meta, &rows)?
            .iter()
            .map(|cells| {
                cells
                    .iter()
                    .find(|c| c.column == col)
                    .and_then(|c| decode_newest(&c.value))
            })
            .collect())
    }

    /// Records the newest stored hour of series keys, buffered: a crash
    /// may lose it only while the WAL still holds those hours' points (a
    /// checkpoint syncs the store before it drops WAL segments), and the
    /// replay puts them back in the head, which knows their hour.
    pub(crate) fn record_newest_hours(&self, newest: &[(&[u8], u32)]) -> Result<(), StorageError> {
        let col = newest_column();
        let batch: Vec<Mutation> = newest
            .iter()
            .map(|(key, base)| Mutation::Put {
                table: Table::Meta,
                row: index_row(&self.layout, key).to_vec(),
                column: col.clone(),
                value: encode_newest(*base),
            })
            .collect();
        if batch.is_empty() {
            return Ok(());
        }
        self.store.write(batch, Durability::Buffered)
    }

    /// On open: indexes the series the WAL replay saw (their index rows may
    /// have been lost with the store's log buffer), and, once per data
    /// directory, every series of the data rows written before the index
    /// existed. Ends with a sync, so the index is durable before any new
    /// write.
    pub(crate) fn reindex(
        store: &Arc<dyn Store>,
        layout: &KeyLayout,
        replayed: impl IntoIterator<Item = Arc<[u8]>>,
    ) -> Result<(), StorageError> {
        let marker_col = column(family::NAME, MARKER_QUALIFIER);
        let mut batch = Vec::new();
        let flush = |batch: &mut Vec<Mutation>| -> Result<(), StorageError> {
            if batch.is_empty() {
                return Ok(());
            }
            store.write(std::mem::take(batch), Durability::Buffered)
        };
        for key in replayed {
            batch.push(put(index_row(layout, &key)));
            if batch.len() >= BATCH {
                flush(&mut batch)?;
            }
        }
        let marked = store
            .get_row(Table::Meta, MARKER_ROW)?
            .iter()
            .any(|c| c.column == marker_col);
        if !marked {
            // One pass over the data rows' keys; consecutive rows of a
            // series differ only in the hour, so skip repeats cheaply.
            let mut last: Vec<u8> = Vec::new();
            let mut rows = 0u64;
            let mut err = None;
            store.scan(Table::Data, &[], &[], &mut |row, _| {
                let series = layout.series_of_row(row);
                if series != last {
                    batch.push(put(index_row(layout, &series)));
                    last = series;
                    if batch.len() >= BATCH
                        && let Err(e) = flush(&mut batch)
                    {
                        err = Some(e);
                        return Ok(false);
                    }
                }
                rows += 1;
                Ok(true)
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            if rows > 0 {
                tracing::info!(rows, "built the series index from the data rows");
            }
            batch.push(Mutation::Put {
                table: Table::Meta,
                row: MARKER_ROW.to_vec(),
                column: marker_col,
                value: vec![SERIES_VALUE],
            });
        }
        flush(&mut batch)?;
        store.sync()
    }

    fn resolve_lookup(&self, q: &LookupQuery) -> Result<Resolved, IndexError> {
        let uid = |kind: UidKind, name: &str| -> Result<Vec<u8>, IndexError> {
            let id = self
                .uids
                .lookup(kind, name)?
                .ok_or_else(|| IndexError::Unresolved {
                    kind,
                    name: name.to_string(),
                })?;
            let mut b = Vec::with_capacity(8);
            uid_bytes(id, self.uids.width(kind), &mut b);
            Ok(b)
        };
        let metric = q
            .metric_filter()
            .map(|m| uid(UidKind::Metric, m))
            .transpose()?;
        // Group values by key; a `*` value makes the key's group "any".
        let mut by_key: BTreeMap<&str, Option<Vec<&str>>> = BTreeMap::new();
        for (k, v) in &q.tags {
            let slot = by_key.entry(k.as_str()).or_insert_with(|| Some(Vec::new()));
            if v == "*" {
                *slot = None;
            } else if let Some(vs) = slot {
                vs.push(v.as_str());
            }
        }
        let mut groups = Vec::with_capacity(by_key.len());
        for (k, vs) in by_key {
            let key = (k != "*").then(|| uid(UidKind::TagK, k)).transpose()?;
            let values = vs
                .map(|vs| {
                    vs.into_iter()
                        .map(|v| uid(UidKind::TagV, v))
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?;
            groups.push((key, values));
        }
        Ok(Resolved { metric, groups })
    }

    /// `/api/search/lookup`: the series matching `q`, read from the index
    /// (a metric's rows only when a metric is given, else every index row),
    /// at most `q.effective_limit()`. Every index row read counts as one
    /// point of `budget`, every result as one value held.
    pub fn lookup_series(
        &self,
        q: &LookupQuery,
        budget: &QueryBudget,
    ) -> Result<Vec<LookupMatch>, IndexError> {
        let matched = self.lookup_series_tsuids(q, budget)?;
        let mut out = Vec::with_capacity(matched.len());
        for tsuid in matched {
            budget.check()?;
            out.push(self.describe_tsuid(&tsuid)?);
        }
        Ok(out)
    }

    /// The TSUIDs [`Engine::lookup_series`] describes.
    pub fn lookup_series_tsuids(
        &self,
        q: &LookupQuery,
        budget: &QueryBudget,
    ) -> Result<Vec<Vec<u8>>, IndexError> {
        let r = self.resolve_lookup(q)?;
        let layout = self.layout;
        let limit = q.effective_limit().unwrap_or(usize::MAX);
        let (start, end) = match &r.metric {
            Some(m) => (m.clone(), crate::storage::prefix_end(m)),
            // Skip the marker row.
            None => (vec![0, 0], Vec::new()),
        };
        let mut matched: Vec<Vec<u8>> = Vec::new();
        let mut failed: Option<QueryError> = None;
        let mut tick = 0u32;
        let col = series_column();
        self.store
            .scan(Table::Meta, &start, &end, &mut |row, cells| {
                let stop = |e: QueryError, failed: &mut Option<QueryError>| {
                    *failed = Some(e);
                    Ok(false)
                };
                if !budget.take_points(1) {
                    return stop(
                        budget.check_points().err().unwrap_or(QueryError::Cancelled),
                        &mut failed,
                    );
                }
                if let Err(e) = budget.tick(&mut tick) {
                    return stop(e, &mut failed);
                }
                if !cells.iter().any(|c| c.column == col) || row.len() < layout.metric_width {
                    return Ok(true);
                }
                let (_, tags) = row.split_at(layout.metric_width);
                if !tags.len().is_multiple_of(layout.tag_pair_width()) || !r.matches(&layout, tags)
                {
                    return Ok(true);
                }
                if let Err(e) = budget.hold(1) {
                    return stop(e, &mut failed);
                }
                matched.push(row.to_vec());
                Ok(matched.len() < limit)
            })?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        Ok(matched)
    }

    /// Metric and tag names of a TSUID (UIDs without a name print as hex,
    /// as after a repair).
    pub fn describe_tsuid(&self, tsuid: &[u8]) -> Result<LookupMatch, UidError> {
        let layout = self.layout;
        let (m, tags) = tsuid.split_at(layout.metric_width.min(tsuid.len()));
        let name = |kind: UidKind, b: &[u8]| {
            self.name_or_hex(kind, uid_from_bytes(b))
                .map(|n| n.to_string())
        };
        let metric = name(UidKind::Metric, m)?;
        let mut names = BTreeMap::new();
        for (k, v) in layout.tag_pairs(tags) {
            names.insert(name(UidKind::TagK, k)?, name(UidKind::TagV, v)?);
        }
        Ok(LookupMatch {
            tsuid: tsuid.to_vec(),
            metric,
            tags: names,
        })
    }

    /// The name of a UID, or its bytes in hex when it has none (as after a
    /// repair).
    pub(super) fn name_or_hex(&self, kind: UidKind, id: u64) -> Result<Arc<str>, UidError> {
        Ok(match self.uids.name_of(kind, id)? {
            Some(n) => n,
            None => {
                tracing::warn!(kind = kind.as_str(), uid = id, "UID without a name");
                let mut b = Vec::with_capacity(8);
                uid_bytes(id, self.uids.width(kind), &mut b);
                Arc::from(crate::codec::hex::encode(&b))
            }
        })
    }

    /// Whether a TSUID has an index row.
    pub fn is_indexed(&self, tsuid: &[u8]) -> Result<bool, StorageError> {
        let col = series_column();
        Ok(self
            .store
            .get_row(Table::Meta, tsuid)?
            .iter()
            .any(|c| c.column == col))
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_newest, encode_newest};
    use crate::storage::prefix_end;

    #[test]
    fn newest_hour_values_round_trip_and_other_forms_read_as_none() {
        let v = encode_newest(1_700_006_400);
        assert_eq!(v, vec![1, 0x65, 0x54, 0x0A, 0x00]);
        assert_eq!(decode_newest(&v), Some(1_700_006_400));
        assert_eq!(decode_newest(&[]), None);
        assert_eq!(decode_newest(&[2, 0, 0, 0, 1]), None);
        assert_eq!(decode_newest(&[1, 0, 0, 1]), None);
        assert_eq!(decode_newest(&[1, 0, 0, 0, 1, 0]), None);
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(&[0, 0, 1]), vec![0, 0, 2]);
        assert_eq!(prefix_end(&[0, 0xFF]), vec![1]);
        assert_eq!(prefix_end(&[0xFF]), Vec::<u8>::new());
    }
}
