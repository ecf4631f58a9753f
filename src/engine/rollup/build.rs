//! Computing tier values. The base (1 h) tier's value of an hour is read
//! from the stored row as a query would read it (one native cell's
//! summary, or the row's cells merged and folded); a coarser tier's value
//! of an interval merges the base tier's values inside it in time order.
//! Both are written buffered: `Engine::checkpoint` syncs the store before
//! it lets the WAL segments go, so until a tier value is durable the points
//! it stands for are in the WAL, and a restart flushes them again (which
//! computes the value again).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use hourglass_query::partial::Partial;

use super::{REBUILD_BATCH, STATE_ROW, Tier};
use crate::codec::native::{self, TierRow, TierValue};
use crate::codec::row::{self, CellKind};
use crate::codec::{DecodedPoint, KeyLayout};
use crate::engine::{Engine, EngineError};
use crate::storage::{Cell, Durability, Mutation, StorageError, Table};

/// The value of a stored hour row, as the read path would fold its points;
/// `None` for a row without points.
pub fn hour_value(
    cells: &[Cell],
    scratch: &mut Vec<DecodedPoint>,
) -> Result<Option<TierValue>, row::RowError> {
    if let [c] = cells
        && let CellKind::Native { cell, .. } = row::classify(&c.column, &c.value)
        && let Ok(Some(summary)) = native::cell_summary(cell)
        && !summary.may_hold_stale_ends()
    {
        let points = native::cell_point_count(cell).map_err(row::RowError::from)?;
        return Ok(Some(TierValue {
            points: points as u64,
            partial: summary.partial(),
        }));
    }
    scratch.clear();
    row::decode_row(cells, scratch)?;
    Ok(points_value(scratch))
}

/// The value of an hour's points, in time order, as the read path folds
/// them (a staleness marker is not a value); `None` without a value.
pub fn points_value(points: &[DecodedPoint]) -> Option<TierValue> {
    let mut partial = Partial::EMPTY;
    let mut count = 0u64;
    for p in points.iter().filter(|p| !p.value.is_stale_marker()) {
        partial.push(p.value.as_f64());
        count += 1;
    }
    (!partial.is_empty()).then_some(TierValue {
        points: count,
        partial,
    })
}

/// The value of an interval from the base tier's values inside it, in
/// time order; `None` when it has none.
fn merge_values<'a>(values: impl Iterator<Item = &'a TierValue>) -> Option<TierValue> {
    let mut out = TierValue {
        points: 0,
        partial: Partial::EMPTY,
    };
    for v in values {
        out.points += v.points;
        out.partial.merge(&v.partial);
    }
    (!out.partial.is_empty()).then_some(out)
}

/// A stored hour: series key and base (seconds).
type Hour<'a> = (&'a [u8], u32);

/// Tier row key → the changes to it: (index, value) pairs.
type Updates = BTreeMap<Vec<u8>, Vec<(u32, Option<TierValue>)>>;

/// The rows of `tier` for the hours (sorted) of series the store holds
/// nothing of (their first flush), built from the hours' values alone (no
/// read, no map): an interval's value merges the values of its hours, in
/// time order; an hour without a value (`None`) adds none, and a row
/// without values is not written (there is nothing to delete). `horizon`
/// is `None` for the base tier (an interval is an hour, its value the
/// hour's); for a coarser tier it is the base tier's horizon, before which
/// intervals are skipped (as `Engine::roll_up_tier` does). Equal to what
/// the read-and-update path writes for such series
/// (`first_rows_equal_the_read_path`).
fn first_tier_rows(
    tier: &Tier,
    horizon: Option<i64>,
    layout: &KeyLayout,
    hours: &[Hour<'_>],
    values: &[Option<TierValue>],
    out: &mut Vec<Mutation>,
) {
    let column = super::row_column();
    let mut row: Option<((&[u8], u32), TierRow)> = None;
    let emit = |row: Option<((&[u8], u32), TierRow)>, out: &mut Vec<Mutation>| {
        if let Some(((series, span), r)) = row
            && !r.values.is_empty()
        {
            out.push(Mutation::Put {
                table: Table::Rollup,
                row: tier.row_key(layout, series, span),
                column: column.clone(),
                value: r.encode(),
            });
        }
    };
    let mut i = 0;
    while i < hours.len() {
        let (series, base) = hours[i];
        let start = base - base % tier.interval;
        // The hours of this interval.
        let mut end = i + 1;
        while end < hours.len()
            && hours[end].0 == series
            && hours[end].1 - hours[end].1 % tier.interval == start
        {
            end += 1;
        }
        let in_interval = &values[i..end];
        i = end;
        if horizon.is_some_and(|h| i64::from(start) < h) {
            continue;
        }
        let value = if horizon.is_none() {
            // The base tier: an interval is an hour.
            in_interval.iter().flatten().last().copied()
        } else {
            merge_values(in_interval.iter().flatten())
        };
        let Some(value) = value else {
            continue;
        };
        let span = tier.span_base(start);
        if row.as_ref().is_none_or(|(at, _)| *at != (series, span)) {
            emit(row.take(), out);
            row = Some(((series, span), TierRow::default()));
        }
        if let Some((_, r)) = row.as_mut() {
            r.values.push(((start - span) / tier.interval, value));
        }
    }
    emit(row, out);
}

/// `items` (sorted by series) in batches of about [`ROLL_UP_BATCH`], a
/// series never split between two.
pub(in crate::engine) fn series_batches<'a, T>(
    items: &'a [T],
    series: impl Fn(&T) -> &[u8] + 'a,
) -> impl Iterator<Item = &'a [T]> + 'a {
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = ROLL_UP_BATCH.min(rest.len());
        while end < rest.len() && series(&rest[end]) == series(&rest[end - 1]) {
            end += 1;
        }
        let (batch, tail) = rest.split_at(end);
        rest = tail;
        Some(batch)
    })
}

/// Stored hours whose tier values are computed together (and read back
/// at once, when they are).
pub(in crate::engine) const ROLL_UP_BATCH: usize = 4096;

fn corrupt(row: &[u8], e: impl std::fmt::Display) -> EngineError {
    EngineError::Storage(StorageError::Corrupt {
        path: std::path::PathBuf::from("<rollup>"),
        offset: None,
        reason: format!("row {row:02X?}: {e}"),
    })
}

impl Engine {
    /// Recomputes every tier's values for the stored hours `hours` (series
    /// key, hour base): after a delete changed them, or for a rebuild.
    /// Reads the rows as they are in the store now.
    pub(in crate::engine) fn roll_up(&self, hours: &[(&[u8], u32)]) -> Result<(), EngineError> {
        let unknown: Vec<(&[u8], u32, Option<TierValue>)> =
            hours.iter().map(|(s, b)| (*s, *b, None)).collect();
        self.roll_up_known(&unknown, &HashSet::new())
    }

    /// As [`Engine::roll_up`], with what a caller already knows: an hour
    /// given `Some` value (a flush that wrote the row's only cell) is not
    /// read back; one given `None` is. The tier rows of the series in
    /// `absent` (the store held nothing of them before this flush) are not
    /// read either, and an hour of theirs given `None` has no value; all
    /// hours of such a series must come in one call.
    pub(in crate::engine) fn roll_up_known(
        &self,
        hours: &[(&[u8], u32, Option<TierValue>)],
        absent: &HashSet<&[u8]>,
    ) -> Result<(), EngineError> {
        if self.tiers.is_empty() || hours.is_empty() {
            return Ok(());
        }
        let layout = self.layout;
        let mut sorted: Vec<(Hour<'_>, Option<TierValue>)> =
            hours.iter().map(|(s, b, v)| ((*s, *b), *v)).collect();
        // A stable sort: of the entries of one hour, one that must be read
        // back wins over a value.
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        sorted.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same && later.1.is_none() {
                earlier.1 = None;
            }
            same
        });
        // In batches: the rows read back keep their table blocks alive, and
        // a flush under memory pressure may hold a year of hours. A series'
        // hours stay in one batch: its tier rows are written once, so one
        // that was absent is absent only in that batch.
        let mut scratch = Vec::new();
        for batch in series_batches(&sorted, |((series, _), _)| series) {
            let unknown: Vec<Vec<u8>> = batch
                .iter()
                .filter(|((series, _), v)| v.is_none() && !absent.contains(series))
                .map(|((series, base), _)| layout.row_key(series, *base))
                .collect();
            let rows = self.store.get_rows(Table::Data, &unknown)?;
            let mut read = unknown.iter().zip(&rows);
            let mut values = Vec::with_capacity(batch.len());
            for ((series, _), known) in batch {
                values.push(match known {
                    Some(v) => Some(*v),
                    None if absent.contains(series) => None,
                    None => match read.next() {
                        Some((key, cells)) => {
                            hour_value(cells, &mut scratch).map_err(|e| corrupt(key, e))?
                        }
                        None => None,
                    },
                });
            }
            drop(rows);
            let hours: Vec<(&[u8], u32)> = batch.iter().map(|(h, _)| *h).collect();
            self.write_tier_values(&hours, values, absent)?;
        }
        Ok(())
    }

    /// Writes the base tier's values of `hours` (sorted, distinct), then
    /// every coarser tier's values of the intervals holding them, in one
    /// store write.
    fn write_tier_values(
        &self,
        hours: &[(&[u8], u32)],
        values: Vec<Option<TierValue>>,
        absent: &HashSet<&[u8]>,
    ) -> Result<(), EngineError> {
        let mut muts = Vec::new();
        self.tier_mutations(hours, values, absent, &mut muts)?;
        self.store.write(muts, Durability::Buffered)?;
        self.metrics.rollup_values.inc_by(hours.len() as u64);
        Ok(())
    }

    /// The mutations that set the base tier's values of `hours` (sorted,
    /// distinct), then every coarser tier's values of the intervals holding
    /// them, appended to `out`. The rows of series in `absent` are built
    /// from their hours alone (`first_tier_rows`); the others are read,
    /// changed and written back whole.
    fn tier_mutations(
        &self,
        hours: &[(&[u8], u32)],
        values: Vec<Option<TierValue>>,
        absent: &HashSet<&[u8]>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), EngineError> {
        let Some(base_tier) = self.tiers.base() else {
            return Ok(());
        };
        // Crash tests: the hours in table files, no tier value yet.
        crate::failpoint::crash("rollup_before", || {});
        let layout = self.layout;
        let (mut first, mut first_values) = (Vec::new(), Vec::new());
        let (mut known, mut known_values) = (Vec::new(), Vec::new());
        for (hour, value) in hours.iter().zip(values) {
            if absent.contains(hour.0) {
                first.push(*hour);
                first_values.push(value);
            } else {
                known.push(*hour);
                known_values.push(value);
            }
        }
        first_tier_rows(base_tier, None, &layout, &first, &first_values, out);
        let mut updates: Updates = BTreeMap::new();
        for ((series, base), value) in known.iter().zip(known_values) {
            let (row, index) = base_tier.cell_of(&layout, series, *base);
            updates.entry(row).or_default().push((index, value));
        }
        let base_rows = self.update_rows(updates, out)?;
        let base_horizon = base_tier.horizon(self.now_secs());
        for tier in &self.tiers.tiers[1..] {
            // Crash tests: the base tier's values on disk, this tier's not.
            crate::failpoint::crash("rollup_between", || {
                let _ = self.store.write(std::mem::take(out), Durability::Buffered);
                let _ = self.store.sync();
            });
            first_tier_rows(
                tier,
                Some(base_horizon),
                &layout,
                &first,
                &first_values,
                out,
            );
            self.roll_up_tier(base_tier, tier, &layout, &known, &base_rows, out)?;
        }
        Ok(())
    }

    /// Sets values in tier rows (`None` removes one): each row read,
    /// changed and written back whole (a row without values is deleted),
    /// its mutation appended to `out`. Returns the rows as written.
    /// Callers hold the flush lock, so no other update of the row runs
    /// meanwhile.
    fn update_rows(
        &self,
        updates: Updates,
        out: &mut Vec<Mutation>,
    ) -> Result<BTreeMap<Vec<u8>, TierRow>, EngineError> {
        let keys: Vec<Vec<u8>> = updates.keys().cloned().collect();
        let stored = self.store.get_rows(Table::Rollup, &keys)?;
        let column = super::row_column();
        let mut written = BTreeMap::new();
        for ((key, changes), cells) in updates.into_iter().zip(stored) {
            let mut row = match cells.iter().find(|c| c.column == column) {
                Some(c) => match TierRow::decode(&c.value) {
                    Ok(row) => row,
                    // Derived data: a damaged row is written anew rather
                    // than block every flush of its hours; the values it
                    // lost make every tier unusable until a rebuild.
                    Err(e) => {
                        self.give_up_tiers(&corrupt(&key, e));
                        TierRow::default()
                    }
                },
                None => TierRow::default(),
            };
            for (index, value) in changes {
                row.set(index, value);
            }
            out.push(if row.values.is_empty() {
                Mutation::Delete {
                    table: Table::Rollup,
                    row: key.clone(),
                    column: column.clone(),
                }
            } else {
                Mutation::Put {
                    table: Table::Rollup,
                    row: key.clone(),
                    column: column.clone(),
                    value: row.encode(),
                }
            });
            written.insert(key, row);
        }
        Ok(written)
    }

    /// A coarser tier's values for the intervals holding `hours`, from the
    /// base tier's values: the rows just written (`base_rows`), the others
    /// read; their mutations appended to `out`.
    fn roll_up_tier(
        &self,
        base_tier: &Tier,
        tier: &Tier,
        layout: &KeyLayout,
        hours: &[(&[u8], u32)],
        base_rows: &BTreeMap<Vec<u8>, TierRow>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), EngineError> {
        // An interval whose hours' 1 h values may be past their TTL (and
        // deleted) keeps the value it has: merging what is left would
        // answer for fewer hours than the interval held (docs/rollups.md).
        let base_horizon = base_tier.horizon(self.now_secs());
        let intervals: BTreeSet<(&[u8], u32)> = hours
            .iter()
            .map(|(series, base)| (*series, base - base % tier.interval))
            .filter(|(_, start)| i64::from(*start) >= base_horizon)
            .collect();
        // The base tier's rows inside each interval (a day per row), each
        // read once.
        let mut wanted: BTreeSet<(&[u8], u32)> = BTreeSet::new();
        for (series, start) in &intervals {
            let mut span = base_tier.span_base(*start);
            while span < start.saturating_add(tier.interval) {
                wanted.insert((series, span));
                match span.checked_add(base_tier.span) {
                    Some(next) => span = next,
                    None => break,
                }
            }
        }
        // The rows just written, and the rows to read with their keys.
        let mut written: Vec<(Hour<'_>, &TierRow)> = Vec::new();
        let mut unread: Vec<Hour<'_>> = Vec::new();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for (series, span) in wanted {
            let key = base_tier.row_key(layout, series, span);
            match base_rows.get(&key) {
                Some(row) => written.push(((series, span), row)),
                None => {
                    unread.push((series, span));
                    keys.push(key);
                }
            }
        }
        let stored = self.store.get_rows(Table::Rollup, &keys)?;
        let column = super::row_column();
        let mut read: Vec<(Hour<'_>, TierRow)> = Vec::new();
        for ((id, key), cells) in unread.iter().zip(&keys).zip(stored) {
            if let Some(c) = cells.iter().find(|c| c.column == column) {
                match TierRow::decode(&c.value) {
                    Ok(row) => read.push((*id, row)),
                    // As in update_rows: written anew, tiers given up.
                    Err(e) => self.give_up_tiers(&corrupt(key, e)),
                }
            }
        }
        let rows: BTreeMap<Hour<'_>, &TierRow> = written
            .into_iter()
            .chain(read.iter().map(|(id, row)| (*id, row)))
            .collect();
        let mut updates: Updates = BTreeMap::new();
        for (series, start) in &intervals {
            let end = u64::from(*start) + u64::from(tier.interval);
            let mut values = Vec::new();
            let first_span = base_tier.span_base(*start);
            for ((_, span), row) in rows.range((*series, first_span)..(*series, u32::MAX)) {
                if u64::from(*span) >= end {
                    break;
                }
                for (index, value) in &row.values {
                    match base_tier.interval_start(*span, *index) {
                        Some(t) if t >= *start && u64::from(t) < end => values.push(value),
                        _ => {}
                    }
                }
            }
            let (row, index) = tier.cell_of(layout, series, *start);
            updates
                .entry(row)
                .or_default()
                .push((index, merge_values(values.into_iter())));
        }
        self.update_rows(updates, out).map(|_| ())
    }

    /// Computes every tier's values from the stored rows with base hours
    /// at or after `from` (seconds), and the notes index of their
    /// annotations; then records the tiers complete from `from`. For data
    /// written before the tiers were configured; run on a stopped
    /// server's data directory (`hourglass rollup rebuild`). Returns the
    /// hours rolled up.
    pub fn rebuild_rollups(&self, from: u32) -> Result<u64, EngineError> {
        if self.tiers.is_empty() {
            return Err(EngineError::Config(crate::config::ConfigError::Invalid(
                "rollups are off (rollup.enabled = false) or the backend is shared: nothing to rebuild".into(),
            )));
        }
        // Values of hours whose data rows are gone would otherwise stay:
        // every tier starts empty from `from` on.
        for tier in &self.tiers.tiers {
            let first = from - from % tier.interval;
            self.retain_values(tier, |t| t < first)?;
        }
        let layout = self.layout;
        let mut batch: Vec<(Vec<u8>, u32, Option<TierValue>)> = Vec::new();
        let mut notes: Vec<Mutation> = Vec::new();
        let mut scratch = Vec::new();
        let mut done = 0u64;
        let flush = |batch: &mut Vec<(Vec<u8>, u32, Option<TierValue>)>,
                     notes: &mut Vec<Mutation>|
         -> Result<(), EngineError> {
            batch.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            let hours: Vec<(&[u8], u32)> = batch.iter().map(|(s, b, _)| (&s[..], *b)).collect();
            let values = batch.iter().map(|(_, _, v)| *v).collect();
            self.write_tier_values(&hours, values, &HashSet::new())?;
            if !notes.is_empty() {
                self.store
                    .write(std::mem::take(notes), Durability::Buffered)?;
            }
            batch.clear();
            Ok(())
        };
        let mut failed: Option<EngineError> = None;
        self.store.scan(Table::Data, &[], &[], &mut |row, cells| {
            let Some(parts) = layout.parse_row_key(row) else {
                return Ok(true);
            };
            if parts.base_time < from {
                return Ok(true);
            }
            let value = match hour_value(&cells, &mut scratch) {
                Ok(v) => v,
                Err(e) => {
                    failed = Some(corrupt(row, e));
                    return Ok(false);
                }
            };
            if cells
                .iter()
                .any(|c| row::classify(&c.column, &c.value) == CellKind::Annotation)
            {
                self.tiers.note_indexed();
                notes.push(Mutation::Put {
                    table: Table::Rollup,
                    row: super::notes_key(row),
                    column: crate::storage::column(crate::storage::family::DATA, &[]),
                    value: Vec::new(),
                });
            }
            batch.push((layout.series_of_row(row), parts.base_time, value));
            done += 1;
            if batch.len() >= REBUILD_BATCH
                && let Err(e) = flush(&mut batch, &mut notes)
            {
                failed = Some(e);
                return Ok(false);
            }
            Ok(true)
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        flush(&mut batch, &mut notes)?;
        self.store.sync()?;
        self.store_tier_state(from)?;
        Ok(done)
    }

    /// Deletes the tier values past their tier's TTL (queries stopped
    /// reading them when they passed it, one interval earlier, so a query
    /// running meanwhile never finds one gone), and records the tier
    /// complete only from there: a longer TTL configured later does not
    /// make the deleted intervals look empty. Unless `force`, at most once
    /// an hour. Returns the values deleted.
    pub fn purge_tiers(&self, force: bool) -> Result<usize, EngineError> {
        use std::sync::atomic::Ordering;
        let now = self.now_secs();
        let last = self.tiers.purged_at.load(Ordering::Acquire);
        if self.tiers.is_empty() || (!force && now.saturating_sub(last) < 3600) {
            return Ok(0);
        }
        self.tiers.purged_at.store(now, Ordering::Release);
        // Rows are rewritten whole: no flush may update them meanwhile.
        let _flush = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut deleted = 0;
        for tier in self.tiers.tiers.iter().filter(|t| t.ttl.is_some()) {
            let before = tier.horizon(now) - i64::from(tier.interval);
            deleted += self.retain_values(tier, |t| i64::from(t) >= before)?;
            let before = u32::try_from(before.max(0)).unwrap_or(u32::MAX);
            if before > tier.complete_from() {
                self.store_complete_from(tier, before)?;
            }
        }
        if self.tiers.may_have_external() {
            for table in self.tiers.externals.iter().filter(|t| t.ttl.is_some()) {
                // One interval late, as the tiers: a query running
                // meanwhile never finds one gone.
                let before = table.horizon(now) - i64::from(table.interval);
                deleted += self.purge_external(table, before)?;
            }
        }
        Ok(deleted)
    }

    /// Keeps the values of `tier` whose interval start (seconds) `keep`
    /// accepts and deletes the others, row by row; returns the values
    /// deleted. Callers hold the flush lock.
    fn retain_values(&self, tier: &Tier, keep: impl Fn(u32) -> bool) -> Result<usize, EngineError> {
        let layout = self.layout;
        let column = super::row_column();
        let start = tier.id().to_vec();
        let end = crate::storage::prefix_end(&start);
        let mut deleted = 0;
        let mut muts = Vec::new();
        let mut failed = None;
        self.store
            .scan(Table::Rollup, &start, &end, &mut |key, cells| {
                let Some(parts) = key.get(2..).and_then(|r| layout.parse_row_key(r)) else {
                    return Ok(true);
                };
                let Some(cell) = cells.iter().find(|c| c.column == column) else {
                    return Ok(true);
                };
                let mut row = match TierRow::decode(&cell.value) {
                    Ok(row) => row,
                    Err(e) => {
                        failed = Some(corrupt(key, e));
                        return Ok(false);
                    }
                };
                let before = row.values.len();
                row.values.retain(|(index, _)| {
                    tier.interval_start(parts.base_time, *index)
                        .is_some_and(&keep)
                });
                if row.values.len() == before {
                    return Ok(true);
                }
                deleted += before - row.values.len();
                muts.push(if row.values.is_empty() {
                    Mutation::Delete {
                        table: Table::Rollup,
                        row: key.to_vec(),
                        column: column.clone(),
                    }
                } else {
                    Mutation::Put {
                        table: Table::Rollup,
                        row: key.to_vec(),
                        column: column.clone(),
                        value: row.encode(),
                    }
                });
                if muts.len() >= REBUILD_BATCH
                    && let Err(e) = self
                        .store
                        .write(std::mem::take(&mut muts), Durability::Buffered)
                {
                    failed = Some(e.into());
                    return Ok(false);
                }
                Ok(true)
            })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !muts.is_empty() {
            self.store.write(muts, Durability::Buffered)?;
        }
        Ok(deleted)
    }

    /// Records `tier` complete from `t` (seconds) on, in memory and in the
    /// state row.
    fn store_complete_from(&self, tier: &Tier, t: u32) -> Result<(), EngineError> {
        tier.set_complete_from(t);
        self.store.write(
            vec![Mutation::Put {
                table: Table::Rollup,
                row: STATE_ROW.to_vec(),
                column: crate::storage::column(crate::storage::family::DATA, &tier.id()),
                value: t.to_be_bytes().to_vec(),
            }],
            Durability::Sync,
        )?;
        Ok(())
    }

    /// After a tier write failed halfway (a delete's tombstones written,
    /// the tiers not recomputed) or a damaged tier row was overwritten: no
    /// tier answers again until `hourglass rollup rebuild`, recorded if the
    /// store still takes writes.
    pub(in crate::engine) fn give_up_tiers(&self, why: &EngineError) {
        tracing::error!(error = %why, "rollup tiers may no longer match the stored points; queries read the points until `hourglass rollup rebuild` runs");
        for tier in &self.tiers.tiers {
            if let Err(e) = self.store_complete_from(tier, u32::MAX) {
                tracing::error!(error = %e, "could not record the rollup tiers as unusable");
            }
        }
    }

    /// True if the rollup table holds a row starting with `prefix`.
    fn any_rollup_row(&self, prefix: &[u8]) -> Result<bool, EngineError> {
        let mut found = false;
        self.store.scan(
            Table::Rollup,
            prefix,
            &crate::storage::prefix_end(prefix),
            &mut |_, _| {
                found = true;
                Ok(false)
            },
        )?;
        Ok(found)
    }

    /// Loads each tier's "complete from" hour from the state row; a tier
    /// the row does not know yet starts now (or at 0 when the store holds
    /// no data: nothing predates it), and is recorded. A tier no longer
    /// configured is forgotten: hours flushed without it have no values, so
    /// configuring it again starts it afresh.
    pub(in crate::engine) fn load_tier_state(&self, fresh: bool) -> Result<(), EngineError> {
        let notes = self.any_rollup_row(&super::NOTES_PREFIX)?;
        self.tiers
            .notes
            .store(notes, std::sync::atomic::Ordering::Release);
        let external = self.any_rollup_row(&crate::codec::rollup_cell::EXTERNAL_ROW_PREFIX)?;
        self.tiers
            .has_external
            .store(external, std::sync::atomic::Ordering::Release);
        let cells = self.store.get_row(Table::Rollup, STATE_ROW)?;
        let now = u32::try_from(self.now_secs().max(0)).unwrap_or(u32::MAX);
        let mut muts = Vec::new();
        for c in &cells {
            let configured =
                self.tiers.tiers.iter().any(|t| {
                    c.column == crate::storage::column(crate::storage::family::DATA, &t.id())
                });
            if !configured {
                muts.push(Mutation::Delete {
                    table: Table::Rollup,
                    row: STATE_ROW.to_vec(),
                    column: c.column.clone(),
                });
            }
        }
        for tier in &self.tiers.tiers {
            let column = crate::storage::column(crate::storage::family::DATA, &tier.id());
            let stored = cells
                .iter()
                .find(|c| c.column == column)
                .and_then(|c| <[u8; 4]>::try_from(&c.value[..]).ok())
                .map(u32::from_be_bytes);
            let from = match stored {
                Some(t) => t,
                None => {
                    // Hours flushed from now on get values; the interval
                    // holding this hour may have older hours without.
                    let t = if fresh {
                        0
                    } else {
                        let next_hour = (now - now % 3600).saturating_add(3600);
                        next_hour
                            .div_ceil(tier.interval)
                            .saturating_mul(tier.interval)
                    };
                    muts.push(Mutation::Put {
                        table: Table::Rollup,
                        row: STATE_ROW.to_vec(),
                        column,
                        value: t.to_be_bytes().to_vec(),
                    });
                    t
                }
            };
            tier.set_complete_from(from);
        }
        if !muts.is_empty() {
            self.store.write(muts, Durability::Sync)?;
        }
        Ok(())
    }

    /// Records that every tier is complete from `from` (seconds) on, after
    /// a rebuild of everything since: lowered to it, never raised (what was
    /// complete before `from` still is; a tier given up is complete again
    /// from `from`).
    pub(in crate::engine) fn store_tier_state(&self, from: u32) -> Result<(), EngineError> {
        for tier in &self.tiers.tiers {
            let t = from.div_ceil(tier.interval).saturating_mul(tier.interval);
            self.store_complete_from(tier, t.min(tier.complete_from()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_never_split_a_series() {
        // Series of 1 to 7 hours, enough for several batches.
        let mut items: Vec<(Vec<u8>, u32)> = Vec::new();
        for series in 0u32..3000 {
            for hour in 0..(series % 7 + 1) {
                items.push((series.to_be_bytes().to_vec(), hour));
            }
        }
        let batches: Vec<&[(Vec<u8>, u32)]> = series_batches(&items, |i| &i.0[..]).collect();
        assert!(batches.len() > 2);
        assert_eq!(batches.iter().map(|b| b.len()).sum::<usize>(), items.len());
        for pair in batches.windows(2) {
            let (last, first) = (&pair[0][pair[0].len() - 1], &pair[1][0]);
            assert_ne!(last.0, first.0, "a series split between two batches");
            assert!(pair[0].len() >= ROLL_UP_BATCH && pair[0].len() < ROLL_UP_BATCH + 7);
        }
        assert_eq!(series_batches(&items[..0], |i| &i.0[..]).count(), 0);
    }
}
