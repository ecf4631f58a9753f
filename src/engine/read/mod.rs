//! The read side: fetch the series of one metric in a time window for the
//! query layer. Issues one scan per salt bucket (`[salt][metric][start
//! hour]` to `[salt][metric][end hour]`), run on parallel threads, filters
//! tag pairs on raw key bytes (literal filters pushed down as UID sets),
//! decodes each row's cells (`codec::row`), and merges the rows being
//! flushed and the head on top (newest point of an instant wins; on a
//! shared store the store alone answers: it holds every node's points). Points
//! older than the metric's retention horizon are never returned.
//!
//! With a downsample pushdown the window is cut into segments
//! (`rollup::plan`): raw rows here, rollup tier values in `tier`; rollups
//! written from outside fill the buckets no stored point falls in
//! (`external`).

mod external;
mod prefilter;
mod source_error;
mod tier;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};

use hourglass_query::QueryBudget;
use hourglass_query::downsample::{BucketSink, Pushdown};
use hourglass_query::exec::{
    FetchRequest, Num, Series, SeriesSource, SeriesTag, SeriesTags, SourceError, TagCodec,
    ValueNames,
};

use self::prefilter::Prefilter;
use self::source_error::{source_err, storage_source_err};
use super::Engine;
use super::rollup;
use crate::codec::rowkey::uid_from_bytes;
use crate::codec::{DecodedPoint, KeyLayout, StoredValue};
use crate::hashing::BytesMap;
use crate::storage::{KeyRange, Table};
use crate::uid::UidKind;

fn to_num(v: StoredValue) -> Num {
    match v {
        StoredValue::Int(i) => Num::Int(i),
        StoredValue::Float(f) => Num::Float(f64::from(f)),
        StoredValue::Double(d) => Num::Float(d),
    }
}

type Points = Vec<(i64, Num)>;

/// A head hour kept as the one value a pushdown needs of it (its largest or
/// smallest), not decoded: see [`HourPick`].
struct SummaryHour {
    base: u32,
    value: f64,
    /// The hour's points, still encoded (a copy: cheap next to decoding),
    /// for a series the store also holds, whose points are merged raw.
    chunk: crate::codec::native::Chunk,
}

/// What a fetch found of one series in memory.
#[derive(Default)]
struct MemSeries {
    /// Raw points, in the order found (frozen rows, then head hours).
    points: Points,
    /// Head hours kept as summaries, in hour order.
    hours: Vec<SummaryHour>,
}

/// Which value of a head hour stands for all of its points, when the
/// pushdown's buckets are whole hours and its aggregator keeps only the
/// largest or smallest value: every point of such an hour falls in one
/// bucket, and that bucket's max (min) over the hour's points is the max
/// (min) of the hour's max (min) and its other values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HourPick {
    Max,
    Min,
}

impl HourPick {
    fn of(p: Option<Pushdown>) -> Option<HourPick> {
        use hourglass_query::Aggregator;
        let p = p?;
        if p.interval_ms <= 0 || p.interval_ms % 3_600_000 != 0 {
            return None;
        }
        match p.aggregator {
            Aggregator::Max | Aggregator::Mimmax => Some(HourPick::Max),
            Aggregator::Min | Aggregator::Mimmin => Some(HourPick::Min),
            _ => None,
        }
    }
}

/// What one fetch reads: a metric's rows with base hours in `[lo, hi)`
/// that pass the prefilter, within the query's budget.
#[derive(Clone, Copy)]
struct Scan<'a> {
    metric: u64,
    lo: u32,
    hi: u32,
    /// The scan window in ms (annotations are kept by their start time).
    start_ms: i64,
    end_ms: i64,
    /// Nothing older than this is returned (retention).
    horizon_ms: i64,
    /// A downsample to apply while decoding. A series with points in
    /// memory (`raw`) has its rows before `memory_from_ms` downsampled
    /// while read, and keeps the later ones as points for the merge.
    pushdown: Option<Pushdown>,
    raw: &'a HashMap<Vec<u8>, MemSeries>,
    /// The first hour (ms) any series of `raw` holds in memory.
    memory_from_ms: i64,
    pf: &'a Prefilter,
    budget: &'a QueryBudget,
}

/// What a fetch found of one series: its points, or its buckets when the
/// downsample is applied while decoding.
#[derive(Default)]
struct Found {
    points: Points,
    /// Boxed: a wide raw read has a `Found` per series and no sink.
    sink: Option<Box<BucketSink>>,
    notes: Vec<hourglass_query::Annotation>,
}

type FoundMap = BytesMap<Vec<u8>, Found>;

impl Scan<'_> {
    /// Charges `n` points read; false once the query must stop (over its
    /// point budget, timed out or cancelled: the query layer then reports
    /// which).
    fn take(&self, n: usize) -> bool {
        self.budget.take_points(n) && self.budget.check().is_ok()
    }
}

fn push_row(out: &mut Points, base: u32, pts: &[DecodedPoint]) {
    let base_ms = i64::from(base) * 1000;
    out.extend(
        pts.iter()
            .map(|p| (base_ms + i64::from(p.offset_ms), to_num(p.value))),
    );
}

/// Appends a row's points to `out`, in offset order. One native cell (the
/// common case) is decoded straight into `out`; anything else goes through
/// the row merge.
fn decode_row_into(
    cells: &[crate::storage::Cell],
    base: u32,
    out: &mut Points,
    scratch: &mut Vec<DecodedPoint>,
) -> Result<(), crate::codec::row::RowError> {
    use crate::codec::row::{CellKind, classify};
    if let [c] = cells
        && let CellKind::Native { cell, .. } = classify(&c.column, &c.value)
    {
        let base_ms = i64::from(base) * 1000;
        if let Ok(n) = crate::codec::native::cell_point_count(cell) {
            out.reserve(n);
        }
        let before = out.len();
        let res = crate::codec::native::for_each_point(cell, |off, v| {
            out.push((base_ms + i64::from(off), to_num(v)));
        });
        if res.is_err() {
            out.truncate(before);
        }
        return Ok(res?);
    }
    scratch.clear();
    crate::codec::row::decode_row(cells, scratch)?;
    push_row(out, base, scratch);
    Ok(())
}

/// Appends the points of summarised head hours (see [`MemSeries`]).
fn decode_summarised(hours: &[SummaryHour], out: &mut Points) -> Result<(), SourceError> {
    let mut scratch = Vec::new();
    for h in hours {
        scratch.clear();
        h.chunk
            .decode(&mut scratch)
            .map_err(|e| SourceError::Storage(format!("undecodable head chunk: {e}")))?;
        push_row(out, h.base, &scratch);
    }
    Ok(())
}

/// Why feeding a row to a bucket sink failed.
enum Fed {
    Row(crate::codec::row::RowError),
    Query(hourglass_query::QueryError),
}

/// Feeds a row's points (within the window and the retention horizon) to a
/// series' bucket sink; returns the points read. One native cell (the
/// common case) is decoded straight into the sink, or, when its hour falls
/// whole in one bucket of a decomposing aggregator, stands as its summary
/// (one value read).
fn feed_row(
    cells: &[crate::storage::Cell],
    base: u32,
    scan: &Scan<'_>,
    sink: &mut BucketSink,
    scratch: &mut Vec<DecodedPoint>,
) -> Result<usize, Fed> {
    use crate::codec::row::{CellKind, classify};
    let base_ms = i64::from(base) * 1000;
    let lo = scan.horizon_ms;
    let native = match cells {
        [c] => match classify(&c.column, &c.value) {
            CellKind::Native { cell, .. } => Some(cell),
            _ => None,
        },
        _ => None,
    };
    // A whole hour in one bucket: the cell's summary stands for its points,
    // one value read (an unreadable summary is left to the decoder to
    // report). Not when it may start or end with a staleness marker, which
    // is no point for a downsample.
    if let Some(cell) = native
        && base_ms >= lo
        && sink.takes_hour(base_ms)
        && let Ok(Some(summary)) = crate::codec::native::cell_summary(cell)
        && !summary.may_hold_stale_ends()
    {
        sink.push_hour(base_ms, &summary.partial(), scan.budget)
            .map_err(Fed::Query)?;
        return Ok(1);
    }
    let mut failed = None;
    let mut n = 0usize;
    let mut push = |off: u32, v: StoredValue| {
        n += 1;
        let ts = base_ms + i64::from(off);
        if ts >= lo
            && failed.is_none()
            && !v.is_stale_marker()
            && let Err(e) = sink.push(ts, to_num(v).as_f64(), scan.budget)
        {
            failed = Some(e);
        }
    };
    if let Some(cell) = native {
        crate::codec::native::for_each_point(cell, &mut push).map_err(|e| Fed::Row(e.into()))?;
    } else {
        scratch.clear();
        crate::codec::row::decode_row(cells, scratch).map_err(Fed::Row)?;
        for p in scratch.iter() {
            push(p.offset_ms, p.value);
        }
    }
    match failed {
        Some(e) => Err(Fed::Query(e)),
        None => Ok(n),
    }
}

/// An hour base in ms; `u32::MAX` (none) is `i64::MAX`.
fn first_ms(base: u32) -> i64 {
    if base == u32::MAX {
        i64::MAX
    } else {
        i64::from(base) * 1000
    }
}

/// Points a scan range reads between two charges to the query budget.
const TAKE_BATCH: usize = 4096;
/// Rows a scan range reads between two charges (and deadline checks).
const TAKE_ROWS: usize = 256;

/// Most points a series' buffer is sized for up front.
const MAX_PRESIZE: usize = 1 << 20;

/// Points in a row's cells, as far as cheaply known (one native cell).
fn row_point_estimate(cells: &[crate::storage::Cell]) -> usize {
    use crate::codec::row::{CellKind, classify};
    match cells {
        [c] => match classify(&c.column, &c.value) {
            CellKind::Native { cell, .. } => {
                crate::codec::native::cell_point_count(cell).unwrap_or(0)
            }
            _ => 0,
        },
        _ => 0,
    }
}

/// The annotation cells of a data row whose start time falls in the scan
/// window, as notes of the row's series (a row's notes ride along with its
/// points: no second scan).
fn collect_notes(
    layout: &KeyLayout,
    row: &[u8],
    cells: &[crate::storage::Cell],
    scan: &Scan<'_>,
    out: &mut Vec<hourglass_query::Annotation>,
) {
    use crate::codec::row::{CellKind, classify};
    for c in cells {
        if classify(&c.column, &c.value) != CellKind::Annotation {
            continue;
        }
        let Ok(mut note) = hourglass_query::Annotation::from_storage_json(&c.value) else {
            tracing::warn!(row = ?row, "unreadable annotation cell skipped");
            continue;
        };
        let t = super::annotations::time_ms(note.start_time);
        if t < scan.start_ms || t > scan.end_ms {
            continue;
        }
        if let Some(p) = layout.parse_row_key(row) {
            let mut tsuid = p.metric.to_vec();
            tsuid.extend_from_slice(p.tags);
            note.tsuid = crate::codec::hex::encode(&tsuid);
        }
        out.push(note);
    }
}

/// What one salt bucket's scans found: the series, a decode buffer, the
/// current series key, and the points and rows read but not yet charged.
type Slot = (FoundMap, Vec<DecodedPoint>, Vec<u8>, (usize, usize));

/// Sets `key` to the series key of `row` (whose tag section is `tags`),
/// without allocating for a series seen before, and makes the series'
/// entry on first sight: with a sink when the fetch has a pushdown, else
/// prepared for points by `fresh`.
fn enter_series(
    local: &mut FoundMap,
    key: &mut Vec<u8>,
    layout: &KeyLayout,
    row: &[u8],
    tags: &[u8],
    scan: &Scan<'_>,
    fresh: impl FnOnce(&mut Found),
) {
    key.clear();
    key.extend_from_slice(&row[..layout.prefix_width()]);
    key.extend_from_slice(tags);
    if !local.contains_key(key.as_slice()) {
        let f = local.entry(key.clone()).or_default();
        match scan.pushdown {
            Some(p) => f.sink = Some(Box::new(BucketSink::new(p, scan.start_ms, scan.end_ms))),
            None => fresh(f),
        }
    }
}

impl Engine {
    /// The found series of one slot per salt bucket, shared by the scans
    /// of a fetch's segments (a series always falls in the same bucket).
    fn new_slots(&self) -> Vec<Mutex<Slot>> {
        let layout = self.layout();
        let buckets = if layout.salt_width == 0 {
            1
        } else {
            layout.salt_buckets as usize
        };
        (0..buckets).map(|_| Mutex::default()).collect()
    }

    /// Everything the scans found, per salt bucket (a series is in one
    /// bucket only; kept apart, a wide read's maps are not copied into one
    /// more), the budget charged for the rest.
    fn collect_slots(slots: Vec<Mutex<Slot>>, scan: &Scan<'_>) -> Vec<FoundMap> {
        slots
            .into_iter()
            .map(|slot| {
                let (m, _, _, (uncharged, _)) = slot
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // The rest is charged too: the query layer then reports a
                // limit that this last batch crossed.
                scan.take(uncharged);
                m
            })
            .collect()
    }

    /// Points (and annotations) per series key from the store's rows with
    /// base hours in `[lo, hi)`: one range per salt bucket, which the store
    /// scans in parallel; tag filters are checked on row keys before any
    /// cell is read.
    fn scan_store(
        &self,
        scan: &Scan<'_>,
        lo: u32,
        hi: u32,
        slots: &[Mutex<Slot>],
    ) -> Result<(), SourceError> {
        let layout = *self.layout();
        let ranges: Vec<KeyRange> = (0..slots.len() as u32)
            .map(|b| KeyRange {
                start: layout.scan_key(b, scan.metric, lo),
                end: layout.scan_key(b, scan.metric, hi),
            })
            .collect();
        let filter = |row: &[u8]| {
            layout
                .parse_row_key(row)
                .is_some_and(|p| scan.pf.matches(&layout, p.tags))
        };
        // One slot per range: a range is visited by one thread at a time,
        // so its lock is never contended. Its last fields count the points
        // and rows read but not yet charged to the budget: the shared
        // counters (and the deadline's clock) are touched once per
        // TAKE_BATCH points or TAKE_ROWS rows of a range, not once per row,
        // which mattered once a row can be one summary value; rows without
        // points still bring the deadline and cancellation checks round.
        self.store
            .scan_ranges(Table::Data, &ranges, &filter, &|i, row, cells| {
                let Some(parts) = layout.parse_row_key(row) else {
                    return Ok(true);
                };
                let mut slot = slots[i]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let (local, pts, key, (uncharged, rows)) = &mut *slot;
                enter_series(local, key, &layout, row, parts.tags, scan, |f| {
                    // Room for every hour of the scan at this row's size, so
                    // the series' points are not moved as it grows.
                    let hours = ((hi - lo) / 3600) as usize;
                    let per_row = row_point_estimate(&cells);
                    f.points
                        .reserve(hours.saturating_mul(per_row).min(MAX_PRESIZE));
                });
                // Rows before the memory cut go to the sink; a series with
                // points in memory keeps the later ones for the merge.
                let to_sink = i64::from(parts.base_time) * 1000 < scan.memory_from_ms
                    || !scan.raw.contains_key(key.as_slice());
                let Some(found) = local.get_mut(key.as_slice()) else {
                    return Ok(true);
                };
                let corrupt = |e: crate::codec::row::RowError| {
                    // Never skip damage silently: fail the query.
                    crate::storage::StorageError::Corrupt {
                        path: std::path::PathBuf::from("<data row>"),
                        offset: None,
                        reason: format!("row {row:02X?}: {e}"),
                    }
                };
                let n = match found.sink.as_mut() {
                    Some(sink) if to_sink => feed_row(&cells, parts.base_time, scan, sink, pts)
                        .map_err(|e| match e {
                            Fed::Row(e) => corrupt(e),
                            Fed::Query(q) => crate::storage::StorageError::Damaged(q.to_string()),
                        })?,
                    _ => {
                        let before = found.points.len();
                        decode_row_into(&cells, parts.base_time, &mut found.points, pts)
                            .map_err(corrupt)?;
                        found.points.len() - before
                    }
                };
                collect_notes(&layout, row, &cells, scan, &mut found.notes);
                *uncharged += n;
                *rows += 1;
                if *uncharged < TAKE_BATCH && *rows < TAKE_ROWS {
                    return Ok(true);
                }
                *rows = 0;
                Ok(scan.take(std::mem::take(uncharged)))
            })
            .map_err(|e| storage_source_err(&e))
    }

    /// Points per series key held in memory (rows being flushed, then the
    /// head), in that order so newer points come later. Head hours wholly
    /// inside the window are kept as summaries when the pushdown allows it
    /// ([`HourPick`]) and the series has no rows being flushed.
    fn scan_memory(
        &self,
        scan: &Scan<'_>,
    ) -> Result<(HashMap<Vec<u8>, MemSeries>, i64), SourceError> {
        let layout = *self.layout();
        let p = layout.prefix_width();
        let head = self.head();
        let mut out: HashMap<Vec<u8>, MemSeries> = HashMap::new();
        // The first hour held in memory for a series of the scan.
        let mut first = u32::MAX;
        let in_range = |base: u32| base >= scan.lo && base < scan.hi;
        for frozen in &head.frozen {
            for (key, hour) in frozen.rows.get(&scan.metric).into_iter().flatten() {
                if !in_range(hour.base)
                    || !scan.pf.matches(&layout, key.get(p..).unwrap_or_default())
                {
                    continue;
                }
                let pts = hour.points();
                if !scan.take(pts.len()) {
                    return Ok((out, first_ms(first)));
                }
                first = first.min(hour.base);
                push_row(
                    &mut out.entry(key.to_vec()).or_default().points,
                    hour.base,
                    &pts,
                );
            }
        }
        let pick = HourPick::of(scan.pushdown);
        // Hours a summary may stand for: inside the window, the horizon
        // and the first whole bucket (where the sink's seek starts).
        let (summary_lo, summary_hi) = match scan.pushdown {
            Some(pd) => {
                let seek = scan.start_ms.saturating_add(pd.interval_ms - 1);
                let seek = seek - seek.rem_euclid(pd.interval_ms);
                (seek.max(scan.horizon_ms), scan.end_ms)
            }
            None => (0, 0),
        };
        for e in head.series_of(scan.metric) {
            if e.hours.iter().all(|h| !in_range(h.base))
                || !scan.pf.matches(&layout, e.key.get(p..).unwrap_or_default())
            {
                continue;
            }
            let had_frozen = out.contains_key(&e.key[..]);
            let entry = out.entry(e.key.to_vec()).or_default();
            if pick.is_none() {
                // Every hour read is decoded (none can stand as a
                // summary): room for all their points at once. Grown hour
                // by hour, a day of a series was a chain of copies into
                // fresh memory (most of a whole-day query's page faults).
                // Past the point budget this is at most one series' hours
                // in the head.
                entry.points.reserve(
                    e.hours
                        .iter()
                        .filter(|h| in_range(h.base))
                        .map(|h| h.chunk.len() + h.ooo.len())
                        .sum(),
                );
            }
            for hour in e.hours.iter().filter(|h| in_range(h.base)) {
                first = first.min(hour.base);
                let base_ms = i64::from(hour.base) * 1000;
                let summary = match (pick, hour.value_range()) {
                    (Some(pick), Some((min, max)))
                        if !had_frozen
                            && base_ms >= summary_lo
                            && base_ms + 3_600_000 <= summary_hi =>
                    {
                        Some(if pick == HourPick::Max { max } else { min })
                    }
                    _ => None,
                };
                if let Some(value) = summary {
                    if !scan.take(hour.chunk.len()) {
                        return Ok((out, first_ms(first)));
                    }
                    entry.hours.push(SummaryHour {
                        base: hour.base,
                        value,
                        chunk: hour.chunk.clone(),
                    });
                    continue;
                }
                let pts = hour.points();
                if !scan.take(pts.len()) {
                    return Ok((out, first_ms(first)));
                }
                push_row(&mut entry.points, hour.base, &pts);
            }
        }
        Ok((out, first_ms(first)))
    }

    /// A fetched series of `series_key` (salt, metric, tags), its tags
    /// coded by `codec` or, without one, listed with every name.
    fn series(
        &self,
        codec: Option<&Arc<TagCodec>>,
        series_key: Vec<u8>,
        points: Points,
        annotations: Vec<hourglass_query::Annotation>,
        downsampled: bool,
    ) -> Result<Series, SourceError> {
        let tags = match codec {
            Some(codec) => SeriesTags::Coded(Arc::clone(codec)),
            None => SeriesTags::Listed(self.resolve_tags(&series_key)?),
        };
        // The key becomes the TSUID in place (no copy per series).
        let mut tsuid = series_key;
        tsuid.drain(..self.layout().salt_width.min(tsuid.len()));
        Ok(Series {
            tsuid,
            tags,
            points,
            annotations,
            downsampled,
        })
    }

    /// The tags of `series_key`, every name resolved.
    fn resolve_tags(&self, series_key: &[u8]) -> Result<Vec<SeriesTag>, SourceError> {
        let layout = self.layout();
        let tags = series_key.get(layout.prefix_width()..).unwrap_or_default();
        let mut out =
            Vec::with_capacity(tags.len() / (layout.tagk_width + layout.tagv_width).max(1));
        for (k, v) in layout.tag_pairs(tags) {
            let (key_uid, value_uid) = (uid_from_bytes(k), uid_from_bytes(v));
            out.push(SeriesTag::named(
                self.name_or_hex(UidKind::TagK, key_uid)
                    .map_err(source_err)?,
                self.name_or_hex(UidKind::TagV, value_uid)
                    .map_err(source_err)?,
                key_uid,
                value_uid,
            ));
        }
        Ok(out)
    }

    /// The codec of a fetch's series ([`ValueNames::Filtered`]): the names
    /// of every tag key of `series_keys`, and of the values of the keys in
    /// `named_keys` (the filtered ones), each looked up once.
    fn tag_codec<'k>(
        &self,
        series_keys: impl Iterator<Item = &'k [u8]>,
        named_keys: &[u64],
    ) -> Result<TagCodec, SourceError> {
        let layout = self.layout();
        let mut codec = TagCodec {
            metric_width: layout.metric_width,
            tagk_width: layout.tagk_width,
            tagv_width: layout.tagv_width,
            ..TagCodec::default()
        };
        for key in series_keys {
            let tags = key.get(layout.prefix_width()..).unwrap_or_default();
            for (k, v) in layout.tag_pairs(tags) {
                let key_uid = uid_from_bytes(k);
                if let Entry::Vacant(slot) = codec.keys.entry(key_uid) {
                    slot.insert(
                        self.name_or_hex(UidKind::TagK, key_uid)
                            .map_err(source_err)?,
                    );
                }
                if !named_keys.contains(&key_uid) {
                    continue;
                }
                let value_uid = uid_from_bytes(v);
                if let Entry::Vacant(slot) = codec.values.entry(value_uid) {
                    slot.insert(
                        self.name_or_hex(UidKind::TagV, value_uid)
                            .map_err(source_err)?,
                    );
                }
            }
        }
        Ok(codec)
    }
}

impl SeriesSource for Engine {
    fn metric_uid_width(&self) -> usize {
        self.layout().metric_width
    }

    fn global_annotations(
        &self,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<hourglass_query::Annotation>, SourceError> {
        let notes = self
            .notes_in(None, start_ms, end_ms, &QueryBudget::unlimited())
            .map_err(|e| SourceError::Storage(e.to_string()))?;
        Ok(notes.into_iter().map(|(_, _, n)| n).collect())
    }

    fn tag_value_name(&self, value_uid: u64) -> Result<Arc<str>, SourceError> {
        self.name_or_hex(UidKind::TagV, value_uid)
            .map_err(source_err)
    }

    fn metric_name(&self, metric_uid: &[u8]) -> Result<String, SourceError> {
        let uid = uid_from_bytes(metric_uid);
        self.uids()
            .name_of(UidKind::Metric, uid)
            .map_err(source_err)?
            .map(|n| n.to_string())
            .ok_or_else(|| SourceError::NoSuchName {
                kind: "metrics",
                name: format!("{uid:06X}"),
            })
    }

    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        let mw = self.layout().metric_width;
        let (metric, pf) = match req.tsuids {
            Some(tsuids) => {
                let first = tsuids.first().and_then(|t| t.get(..mw));
                let Some(m) = first else {
                    return Ok(Vec::new());
                };
                let pf = Prefilter {
                    exact: Some(
                        tsuids
                            .iter()
                            .filter_map(|t| t.get(mw..))
                            .map(<[u8]>::to_vec)
                            .collect(),
                    ),
                    ..Prefilter::default()
                };
                (uid_from_bytes(m), pf)
            }
            None => {
                let metric = self
                    .uids()
                    .lookup(UidKind::Metric, req.metric)
                    .map_err(source_err)?
                    .ok_or_else(|| SourceError::NoSuchName {
                        kind: "metrics",
                        name: req.metric.to_string(),
                    })?;
                (metric, self.prefilter(req)?)
            }
        };
        let hour = |ms: i64| -> u32 {
            let s = ms.div_euclid(1000).clamp(0, i64::from(u32::MAX));
            (s - s % 3600) as u32
        };
        let lo = hour(req.scan_start_ms);
        // Exclusive: the hour after the one holding the last millisecond.
        let hi = hour(req.scan_end_ms.saturating_sub(1)).saturating_add(3600);
        // Memory first: a flush publishes its table file and only then drops
        // the frozen rows, so rows that finish flushing during this query
        // are in the memory snapshot or in the later store scan (or both,
        // deduplicated below), never in neither.
        // Retention: nothing older than the metric's horizon.
        let horizon = self
            .retention
            .horizon_ms(req.metric, self.clock.now_ms())
            .max(req.scan_start_ms);
        let no_memory = HashMap::new();
        let filter_keys: Vec<u64> = pf
            .required
            .iter()
            .map(|(key, _)| uid_from_bytes(key))
            .collect();

        let mut scan = Scan {
            metric,
            lo,
            hi,
            start_ms: req.scan_start_ms,
            end_ms: req.scan_end_ms,
            horizon_ms: horizon,
            pushdown: req.downsample,
            raw: &no_memory,
            memory_from_ms: i64::MAX,
            pf: &pf,
            budget: req.budget,
        };
        // On a shared store every acknowledged point (every node's) is in
        // the store already: the head would only add copies.
        let (mut memory, memory_from_ms) = if self.log.is_some() {
            self.scan_memory(&scan)?
        } else {
            (HashMap::new(), i64::MAX)
        };
        // Series with points in memory keep their raw points from the first
        // hour in memory on: theirs and the store's are merged below.
        scan.raw = &memory;
        scan.memory_from_ms = memory_from_ms;
        let segments = match req.downsample {
            Some(p) if req.rollup_usage.uses_tiers() && !self.tiers.is_empty() => {
                rollup::plan::plan(
                    &self.tiers,
                    &rollup::plan::Query {
                        interval_ms: p.interval_ms,
                        aggregator: p.aggregator,
                        lo_ms: i64::from(lo) * 1000,
                        start_ms: req.scan_start_ms,
                        end_ms: req.scan_end_ms,
                        hi_ms: i64::from(hi) * 1000,
                        memory_from_ms,
                        now_secs: self.now_secs(),
                    },
                )
            }
            _ => Vec::new(),
        };
        let slots = self.new_slots();
        if segments.is_empty() {
            self.scan_store(&scan, lo, hi, &slots)?;
        }
        for seg in &segments {
            let secs = |ms: i64| u32::try_from(ms.div_euclid(1000)).unwrap_or(u32::MAX);
            match seg.source {
                rollup::plan::Source::Raw => {
                    self.scan_store(&scan, secs(seg.lo_ms), secs(seg.hi_ms), &slots)?;
                }
                rollup::plan::Source::Tier(i) => {
                    let Some(tier) = self.tiers.tiers.get(i) else {
                        return Err(SourceError::Storage(format!(
                            "internal error: the plan names rollup tier {i}, which is not configured"
                        )));
                    };
                    self.scan_tier(&scan, tier, seg.lo_ms, seg.hi_ms, &slots)?;
                }
            }
        }
        let stored = Self::collect_slots(slots, &scan);
        let mut external = match req.downsample {
            Some(p) if req.rollup_usage.uses_tiers() && self.tiers.may_have_external() => {
                self.external_buckets(&scan, p)?
            }
            _ => HashMap::new(),
        };
        let codec = match req.value_names {
            ValueNames::All => None,
            ValueNames::Filtered => {
                let keys = stored
                    .iter()
                    .flat_map(|m| m.keys())
                    .chain(memory.keys())
                    .chain(external.keys())
                    .map(Vec::as_slice);
                Some(Arc::new(self.tag_codec(keys, &filter_keys)?))
            }
        };
        let mut out =
            Vec::with_capacity(stored.iter().map(|m| m.len()).sum::<usize>() + memory.len());
        let sink_err = |e: hourglass_query::QueryError| SourceError::Storage(e.to_string());
        let mut bucketed = Vec::new();
        for (key, found) in stored.into_iter().flatten() {
            let mut pts = found.points;
            if let Some(mem) = memory.remove(&key) {
                pts.extend(mem.points);
                // The store holds this series too: its summarised hours
                // are merged as points.
                decode_summarised(&mem.hours, &mut pts)?;
            }
            if let Some(mut sink) = found.sink {
                // Everything before the memory cut went into the sink; what
                // follows it (the store's rows and memory) comes in order.
                for (ts, v) in settle(pts, horizon, req.scan_end_ms, req.stale_markers) {
                    sink.push(ts, v.as_f64(), req.budget).map_err(sink_err)?;
                }
                let buckets = sink.finish(req.budget).map_err(sink_err)?;
                let buckets = Self::with_external(buckets, external.remove(&key));
                if !buckets.is_empty() {
                    bucketed.push(self.series(codec.as_ref(), key, buckets, found.notes, true)?);
                }
                continue;
            }
            let pts = settle(pts, horizon, req.scan_end_ms, req.stale_markers);
            if let Some(ext) = external.remove(&key) {
                let buckets = Self::bucket_with_external(req, pts, ext)?;
                bucketed.push(self.series(codec.as_ref(), key, buckets, found.notes, true)?);
            } else if !pts.is_empty() {
                out.push(self.series(codec.as_ref(), key, pts, found.notes, false)?);
            }
        }
        for (key, mem) in memory {
            if mem.hours.is_empty() {
                let pts = settle(mem.points, horizon, req.scan_end_ms, req.stale_markers);
                if let Some(ext) = external.remove(&key) {
                    let buckets = Self::bucket_with_external(req, pts, ext)?;
                    bucketed.push(self.series(codec.as_ref(), key, buckets, Vec::new(), true)?);
                } else if !pts.is_empty() {
                    out.push(self.series(codec.as_ref(), key, pts, Vec::new(), false)?);
                }
                continue;
            }
            // Only in memory, with summarised hours: the pushdown's buckets
            // from the raw points and the hours' values, in time order.
            let Some(p) = req.downsample else {
                return Err(SourceError::Storage(
                    "internal error: summarised hours without a pushdown".into(),
                ));
            };
            let mut sink = BucketSink::new(p, req.scan_start_ms, req.scan_end_ms);
            let mut hours = mem.hours.iter().peekable();
            for &(ts, v) in &mem.points {
                while let Some(h) = hours.next_if(|h| i64::from(h.base) * 1000 < ts) {
                    sink.push(i64::from(h.base) * 1000, h.value, req.budget)
                        .map_err(sink_err)?;
                }
                if ts >= horizon && !is_stale_num(v) {
                    sink.push(ts, v.as_f64(), req.budget).map_err(sink_err)?;
                }
            }
            for h in hours {
                sink.push(i64::from(h.base) * 1000, h.value, req.budget)
                    .map_err(sink_err)?;
            }
            let buckets = sink.finish(req.budget).map_err(sink_err)?;
            let buckets = Self::with_external(buckets, external.remove(&key));
            if !buckets.is_empty() {
                bucketed.push(self.series(codec.as_ref(), key, buckets, Vec::new(), true)?);
            }
        }
        // Series only external values hold.
        for (key, buckets) in external {
            bucketed.push(self.series(codec.as_ref(), key, buckets, Vec::new(), true)?);
        }
        out.extend(bucketed);
        Ok(out)
    }
}

/// A series' points as the query wants them: in time order, inside
/// `[horizon, end)`, the newest point of an instant (the later in `pts`:
/// memory after the store) kept, and Prometheus' staleness markers dropped
/// unless the reader asked for them (after deduplication: a marker newer
/// than a value of its instant replaces it).
fn settle(mut pts: Points, horizon: i64, end: i64, stale_markers: bool) -> Points {
    pts = settle_window(pts, horizon, end);
    if !stale_markers {
        pts.retain(|&(_, v)| !is_stale_num(v));
    }
    pts
}

fn is_stale_num(v: Num) -> bool {
    matches!(v, Num::Float(f) if hourglass_ingest::prom::is_stale_marker(f))
}

fn settle_window(mut pts: Points, horizon: i64, end: i64) -> Points {
    if pts.windows(2).all(|w| w[0].0 < w[1].0) {
        // The usual case (rows arrive in hour order, one source): trim the
        // ends by binary search.
        let hi = pts.partition_point(|p| p.0 < end);
        pts.truncate(hi);
        let lo = pts.partition_point(|p| p.0 < horizon);
        if lo > 0 {
            pts.drain(..lo);
        }
        return pts;
    }
    // The head overlaps the store: a stable sort keeps the later (newer)
    // source last for equal instants; keep the window and the newest point
    // per instant, in place.
    pts.sort_by_key(|p| p.0);
    let mut n = 0usize;
    for i in 0..pts.len() {
        let (ts, v) = pts[i];
        if ts < horizon || ts >= end {
            continue;
        }
        if n > 0 && pts[n - 1].0 == ts {
            pts[n - 1].1 = v;
        } else {
            pts[n] = (ts, v);
            n += 1;
        }
    }
    pts.truncate(n);
    pts
}
