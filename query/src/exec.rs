//! Query execution over an abstract [`SeriesSource`] (spec §5.1, §5.3, §5.5).
//!
//! This module owns the pipeline per sub query:
//! 1. compute the hour-aligned scan window ([`scan_window`]);
//! 2. fetch candidate series from the source;
//! 3. re-apply every filter and `explicitTags` (the source may pre-filter, but
//!    correctness never depends on it);
//! 4. group series (`none` = one group per series; otherwise by the
//!    concatenated tag-value UIDs of the group-by keys, unsigned byte order);
//! 5. per series: downsample → rate; then the cross-series merge
//!    ([`crate::merge`]) over the scan window;
//! 6. clip to `[start_ms, end_ms]` and compute `tags`/`aggregateTags` (and
//!    `tsuids` when they are shown or a delete needs them), the value names
//!    a grouped answer prints looked up then ([`ValueNames`]);
//! 7. attach the series' annotations (scan window) and the global ones.
//!
//! TSUID sub queries fetch exactly the listed series (all of one metric,
//! whose name the source resolves) and ignore metric and filters.
//!
//! Nothing here knows about storage layout beyond the UID bytes the source
//! hands over, and nothing does I/O itself.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use thiserror::Error;

use crate::aggregate::Aggregator;
use crate::annotation::{Annotation, time_ms};
use jiff::tz::TimeZone;

use crate::budget::QueryBudget;
use crate::calendar::{JavaCalendar, lookup_zone};
use crate::downsample::{
    Bounds, DownsampleInterval, DownsampleSpec, FillPolicy, PointIter, downsample_iter,
};
use crate::error::QueryError;
use crate::filter::TagFilter;
use crate::merge::Merge;
pub use crate::num::Num;
use crate::rate::rates_iter;
use crate::request::{SubQuery, TsQuery, decode_hex};
pub use crate::series_tags::{SeriesTag, SeriesTags, TagCodec};

/// Which tag value names a fetch resolves ([`FetchRequest::value_names`]).
///
/// A wide query grouped by one tag (`sum:m{host=*}` over pods that come
/// and go) prints few of its series' value names: those of its group-by
/// and filter keys, and the values a whole group shares. Resolving every
/// value of every series was most of such a query's time (a name lookup
/// per pod) and a name held per series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueNames {
    /// Every tag's value (readers that print every label: PromQL, remote
    /// read, `/api/query` with `none`).
    All,
    /// Only the values of keys with filters; the others are `None`, and
    /// the caller resolves those it prints with
    /// [`SeriesSource::tag_value_name`].
    Filtered,
}

/// One time series as fetched from storage.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// metric uid ‖ (tagk uid ‖ tagv uid)* — the ordering key for `none` and
    /// what `showTSUIDs` prints (upper-case hex).
    pub tsuid: Vec<u8>,
    /// Tags in row-key order (sorted by tag key UID bytes); read them with
    /// [`Series::tag_iter`].
    pub tags: SeriesTags,
    /// Points with ms timestamps, strictly increasing, deduplicated.
    pub points: Vec<(i64, Num)>,
    /// Annotations found in the series' rows, start time in the scan window
    /// (the source reads them with the points); each note's `tsuid` is its
    /// series' hex TSUID.
    pub annotations: Vec<Annotation>,
    /// The points are the buckets of [`FetchRequest::downsample`] (built
    /// with a [`crate::downsample::BucketSink`]), not raw points.
    pub downsampled: bool,
}

impl Series {
    /// The tags, in row-key order.
    pub fn tag_iter(&self) -> impl Iterator<Item = SeriesTag> + '_ {
        let (listed, coded) = match &self.tags {
            SeriesTags::Listed(tags) => (Some(tags.iter().cloned()), None),
            SeriesTags::Coded(codec) => (None, Some(codec.decode(&self.tsuid))),
        };
        listed
            .into_iter()
            .flatten()
            .chain(coded.into_iter().flatten())
    }

    /// The tags as (key, value) names: every tag after a fetch with
    /// [`ValueNames::All`]; a value left unresolved is skipped.
    pub fn named_tags(&self) -> impl Iterator<Item = (Arc<str>, Arc<str>)> + '_ {
        self.tag_iter().filter_map(|t| Some((t.key, t.value?)))
    }
}

/// What [`execute`] asks the source for.
#[derive(Debug, Clone, Copy)]
pub struct FetchRequest<'a> {
    /// Metric name.
    pub metric: &'a str,
    /// The sub query's filters; the source may push `literal_values()` down.
    pub filters: &'a [TagFilter],
    /// Series may only carry tag keys that have filters.
    pub explicit_tags: bool,
    /// A TSUID sub query: fetch exactly these series (metric uid ‖ (tagk uid
    /// ‖ tagv uid)*, all of `metric`); `filters` is then empty.
    pub tsuids: Option<&'a [Vec<u8>]>,
    /// Scan window start (ms, inclusive, hour aligned).
    pub scan_start_ms: i64,
    /// Scan window end (ms, exclusive, hour aligned).
    pub scan_end_ms: i64,
    /// A downsample the source may apply while it reads, series by series
    /// ([`Series::downsampled`]); a source may ignore it.
    pub downsample: Option<crate::downsample::Pushdown>,
    /// Whether the source may answer the pushdown's buckets from rollup
    /// tiers (values it keeps per interval and series).
    pub rollup_usage: crate::rollup::RollupUsage,
    /// Whether Prometheus' staleness markers come back as points (PromQL and
    /// remote read end a series at one). OpenTSDB's readers never see them:
    /// a marker is not a value.
    pub stale_markers: bool,
    /// Which tag value names the source resolves.
    pub value_names: ValueNames,
    /// The query's budget: call [`QueryBudget::take_points`] for the points
    /// read and stop scanning when it returns false; check
    /// [`QueryBudget::check`] now and then in long scans.
    pub budget: &'a QueryBudget,
}

/// Errors a source may report.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A metric, tag key or (literal) tag value name does not exist.
    #[error("No such name for '{kind}': '{name}'")]
    NoSuchName {
        /// `metrics`, `tagk` or `tagv`.
        kind: &'static str,
        /// The unknown name.
        name: String,
    },
    /// Any storage failure.
    #[error("{0}")]
    Storage(String),
    /// The storage is unreachable for now (a remote store timing out or
    /// throttling); the same query may succeed later.
    #[error("{0}")]
    Unavailable(String),
    /// The query would fetch more points than the source allows.
    #[error(
        "Sorry, you have attempted to fetch more than our limit of {limit} data points. Please try filtering using more tags or decrease your time range."
    )]
    TooManyPoints {
        /// The configured limit.
        limit: usize,
    },
}

/// Where series come from. Implemented by the root crate over its engine.
///
/// Only [`SeriesSource::fetch`] is required; the other methods have
/// defaults for sources without TSUID or annotation support.
pub trait SeriesSource {
    /// Returns every series of `req.metric` whose points fall in the scan
    /// window (points outside it are ignored). May pre-filter. With
    /// `req.tsuids`, only those series are wanted (extra ones are dropped).
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError>;

    /// Width in bytes of a metric UID, i.e. of a TSUID's metric prefix.
    fn metric_uid_width(&self) -> usize {
        3
    }

    /// The name of a metric UID (TSUID sub queries name their results with
    /// it). The default knows no UIDs.
    fn metric_name(&self, metric_uid: &[u8]) -> Result<String, SourceError> {
        Err(SourceError::NoSuchName {
            kind: "metrics",
            name: hex_upper(metric_uid),
        })
    }

    /// The name of a tag value UID, for values a fetch with
    /// [`ValueNames::Filtered`] left unresolved. The default knows no UIDs:
    /// right for a source that names every value, and a source that wraps
    /// another must pass this on with its fetches.
    fn tag_value_name(&self, value_uid: u64) -> Result<Arc<str>, SourceError> {
        Err(SourceError::Storage(format!(
            "internal error: this source cannot name tag value UID {value_uid:X}"
        )))
    }

    /// Global annotations (no TSUID) whose start time falls in
    /// `[start_ms, end_ms]`. The default has none.
    fn global_annotations(
        &self,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Annotation>, SourceError> {
        let _ = (start_ms, end_ms);
        Ok(Vec::new())
    }
}

fn source_error(e: SourceError) -> QueryError {
    match e {
        SourceError::NoSuchName { kind, name } => QueryError::NoSuchName { kind, name },
        SourceError::Storage(msg) => QueryError::Source(msg),
        SourceError::Unavailable(msg) => QueryError::Unavailable(msg),
        too_many @ SourceError::TooManyPoints { .. } => QueryError::Limit(too_many.to_string()),
    }
}

/// One result series (one object of the JSON response array).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// The sub query's `index` (position in the validated query list).
    pub sub_query: usize,
    /// Metric name.
    pub metric: String,
    /// Tag keys with a single value across the group's series.
    pub tags: BTreeMap<String, String>,
    /// Tag keys with several values across the group's series (sorted).
    pub aggregate_tags: Vec<String>,
    /// Upper-case hex TSUIDs of the group's series (sorted).
    pub tsuids: Vec<String>,
    /// The group's annotations in the scan window (the renderer keeps those
    /// starting in `[start, end]`, sorted by start time).
    pub annotations: Vec<Annotation>,
    /// Global annotations (with `globalAnnotations`), the same for every
    /// result.
    pub global_annotations: Vec<Annotation>,
    /// Points, already clipped to `[start_ms, end_ms]`.
    pub dps: Vec<(i64, Num)>,
}

/// The hour-aligned scan window (spec §5.3), returned in ms as
/// `(start inclusive, end exclusive)`. The downsample interval widens it so
/// that whole buckets are read; `all` and no downsampling use 0.
pub fn scan_window(start_ms: i64, end_ms: i64, downsample: Option<&DownsampleSpec>) -> (i64, i64) {
    let interval = downsample.map_or(0, DownsampleSpec::interval_ms);
    let mut s = start_ms / 1000;
    if interval > 0 {
        s -= s.saturating_mul(1000).rem_euclid(interval) / 1000;
    }
    s -= s.rem_euclid(3600);
    let s = s.max(0);
    let mut e = end_ms / 1000 + 1;
    if interval > 0 {
        e = e.saturating_add((interval - e.saturating_mul(1000).rem_euclid(interval)) / 1000);
        let off = e.rem_euclid(3600);
        if off != 0 {
            e = e.saturating_add(3600 - off);
        }
    } else {
        // Without downsampling the end always moves to the *next* hour.
        e = e.saturating_add(3600 - e.rem_euclid(3600));
    }
    (s.saturating_mul(1000), e.saturating_mul(1000))
}

/// Runs every sub query of `query` against `src`, in order, without limits.
pub fn execute(query: &TsQuery, src: &dyn SeriesSource) -> Result<Vec<QueryResult>, QueryError> {
    execute_with_budget(query, src, &QueryBudget::unlimited())
}

/// Runs every sub query of `query` against `src` within `budget` (shared by all
/// sub queries and handed to the source in every [`FetchRequest`]): point
/// and held-value limits, deadline and cancellation. On any error every
/// intermediate buffer is dropped before returning.
pub fn execute_with_budget(
    query: &TsQuery,
    src: &dyn SeriesSource,
    budget: &QueryBudget,
) -> Result<Vec<QueryResult>, QueryError> {
    budget.check()?;
    let mut results = Vec::new();
    // Validation already rejected unknown names; UTC is the default.
    let tz = query
        .timezone
        .as_deref()
        .filter(|t| !t.is_empty())
        .and_then(lookup_zone)
        .unwrap_or(TimeZone::UTC);
    let globals = if query.global_annotations && !query.no_annotations {
        fetch_global_annotations(query, src)?
    } else {
        Vec::new()
    };
    for sub in &query.queries {
        run_sub_query(query, sub, src, &tz, &globals, budget, &mut results)?;
    }
    Ok(results)
}

fn run_sub_query(
    query: &TsQuery,
    sub: &SubQuery,
    src: &dyn SeriesSource,
    tz: &TimeZone,
    globals: &[Annotation],
    budget: &QueryBudget,
    results: &mut Vec<QueryResult>,
) -> Result<(), QueryError> {
    let (scan_start, scan_end) = scan_window(query.start_ms, query.end_ms, sub.downsample.as_ref());
    let tsuids: Vec<Vec<u8>> = sub.tsuids.iter().map(|t| decode_hex(t)).collect();
    let metric = if tsuids.is_empty() {
        sub.metric.clone()
    } else {
        tsuid_metric(&tsuids, src)?
    };
    let req = FetchRequest {
        metric: &metric,
        filters: &sub.filters,
        explicit_tags: sub.explicit_tags,
        tsuids: (!tsuids.is_empty()).then_some(tsuids.as_slice()),
        scan_start_ms: scan_start,
        scan_end_ms: scan_end,
        downsample: sub
            .downsample
            .as_ref()
            .and_then(crate::downsample::Pushdown::of),
        rollup_usage: sub.rollup_usage,
        stale_markers: false,
        // Grouped answers print few value names (see ValueNames); `none`
        // prints every series' tags.
        value_names: if sub.aggregator == Aggregator::None {
            ValueNames::All
        } else {
            ValueNames::Filtered
        },
        budget,
    };
    let taken_before = budget.points_taken();
    let mut fetched = src.fetch(&req).map_err(source_error)?;
    // A source that does not report what it reads is charged here.
    if budget.points_taken() == taken_before {
        budget.take_points(fetched.iter().map(|s| s.points.len()).sum());
    }
    budget.check_points()?;
    budget.take_series(fetched.len())?;
    budget.check()?;
    if !tsuids.is_empty() {
        let wanted: HashSet<&[u8]> = tsuids.iter().map(Vec::as_slice).collect();
        fetched.retain(|s| wanted.contains(s.tsuid.as_slice()));
    }

    // Only rows inside the scan window exist for OpenTSDB; a series without
    // points there was never scanned.
    // In place: a wide query's series are not copied.
    let mut names = ValueNameMemo::new(src);
    let mut failed = None;
    let mut series = fetched;
    series.retain_mut(|s| {
        if failed.is_some() {
            return false;
        }
        match passes_filters(s, &sub.filters, sub.explicit_tags, &mut names) {
            Ok(true) => {}
            Ok(false) => return false,
            Err(e) => {
                failed.get_or_insert(e);
                return false;
            }
        }
        // Buckets built by the source are clipped already.
        if !s.downsampled {
            normalise_points(&mut s.points, scan_start, scan_end);
        }
        !s.points.is_empty()
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // Span order inside a group is row-key order (metric, then tag bytes).
    series.sort_by(|a, b| a.tsuid.cmp(&b.tsuid));

    let bounds = Bounds {
        scan_start,
        scan_end,
        query_start: query.start_ms,
        query_end: query.end_ms,
    };
    let mut notes_by_tsuid: BTreeMap<String, Vec<Annotation>> = BTreeMap::new();
    if !query.no_annotations {
        for note in series.iter().flat_map(|s| &s.annotations) {
            notes_by_tsuid
                .entry(note.tsuid.to_ascii_uppercase())
                .or_default()
                .push(note.clone());
        }
    }

    // Groups as positions in `series`; each group's points and tags are
    // freed once its answer is built, so a wide query holds its raw points
    // or its answer, not both.
    let groups: Vec<Vec<usize>> = if sub.aggregator == Aggregator::None {
        (0..series.len()).map(|i| vec![i]).collect()
    } else {
        let group_keys: HashSet<&str> = sub
            .filters
            .iter()
            .filter(|f| f.group_by)
            .map(|f| f.tagk.as_str())
            .collect();
        let mut by_key: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
        for (i, s) in series.iter().enumerate() {
            let mut key = Vec::new();
            let mut found = 0;
            for tag in s.tag_iter() {
                if group_keys.contains(&*tag.key) {
                    // Fixed width, big-endian: the order of the UID bytes.
                    key.extend_from_slice(&tag.value_uid.to_be_bytes());
                    found += 1;
                }
            }
            // OpenTSDB drops a span lacking a group-by key ("WTF?" log); the
            // filters make this impossible, but stay safe.
            if found == group_keys.len() {
                by_key.entry(key).or_default().push(i);
            }
        }
        by_key.into_values().collect()
    };

    // TSUIDs are printed only on request (and a delete needs them); a
    // wide query's would be a string per series.
    let want_tsuids = query.show_tsuids || query.delete;
    for members in groups {
        let group: Vec<&Series> = members.iter().filter_map(|&i| series.get(i)).collect();
        let dps = aggregate_group(&group, sub, bounds, tz, budget)?;
        let (tags, aggregate_tags) = group_tags(&group, &mut names)?;
        let mut annotations: Vec<Annotation> = Vec::new();
        let mut tsuids: Vec<String> = Vec::new();
        if want_tsuids || !notes_by_tsuid.is_empty() {
            let hex: Vec<String> = group.iter().map(|s| hex_upper(&s.tsuid)).collect();
            // Notes in span order (row-key order), like SpanGroup.getAnnotations.
            annotations = hex
                .iter()
                .filter_map(|t| notes_by_tsuid.get(t))
                .flatten()
                .cloned()
                .collect();
            if want_tsuids {
                tsuids = hex;
                tsuids.sort();
            }
        }
        drop(group);
        for &i in &members {
            if let Some(s) = series.get_mut(i) {
                s.points = Vec::new();
                s.tags = SeriesTags::default();
                s.tsuid = Vec::new();
                s.annotations = Vec::new();
            }
        }
        results.push(QueryResult {
            sub_query: sub.index,
            metric: metric.clone(),
            tags,
            aggregate_tags,
            tsuids,
            annotations,
            global_annotations: globals.to_vec(),
            dps,
        });
    }
    Ok(())
}

/// Tag value names resolved on demand for one sub query, each looked up
/// once ([`ValueNames::Filtered`]).
struct ValueNameMemo<'a> {
    src: &'a dyn SeriesSource,
    known: HashMap<u64, Arc<str>>,
}

impl<'a> ValueNameMemo<'a> {
    fn new(src: &'a dyn SeriesSource) -> Self {
        ValueNameMemo {
            src,
            known: HashMap::new(),
        }
    }

    /// The name of `tag`'s value: its own, or the source's.
    fn of(&mut self, tag: &SeriesTag) -> Result<Arc<str>, QueryError> {
        if let Some(v) = &tag.value {
            return Ok(Arc::clone(v));
        }
        if let Some(v) = self.known.get(&tag.value_uid) {
            return Ok(Arc::clone(v));
        }
        let name = self
            .src
            .tag_value_name(tag.value_uid)
            .map_err(source_error)?;
        self.known.insert(tag.value_uid, Arc::clone(&name));
        Ok(name)
    }
}

/// The metric name of a TSUID sub query: every TSUID must start with the
/// same metric UID (OpenTSDB's check and message).
fn tsuid_metric(tsuids: &[Vec<u8>], src: &dyn SeriesSource) -> Result<String, QueryError> {
    let width = src.metric_uid_width();
    let first = &tsuids[0];
    if first.len() < width {
        return Err(QueryError::bad(format!(
            "Invalid TSUID: {}",
            hex_upper(first)
        )));
    }
    let prefix = &first[..width];
    if tsuids.iter().any(|t| t.get(..width) != Some(prefix)) {
        return Err(QueryError::bad(
            "One or more TSUIDs did not share the same metric",
        ));
    }
    src.metric_name(prefix).map_err(source_error)
}

/// Global notes for the query (`Annotation.getGlobalAnnotations` over the
/// query range in seconds): start at or after the start second, end (unless
/// open, 0) at or before the end second.
fn fetch_global_annotations(
    query: &TsQuery,
    src: &dyn SeriesSource,
) -> Result<Vec<Annotation>, QueryError> {
    let start = query.start_ms.div_euclid(1000) * 1000;
    let end = query.end_ms.div_euclid(1000) * 1000;
    let mut notes = src.global_annotations(start, end).map_err(source_error)?;
    notes.retain(|n| n.is_global() && time_ms(n.start_time) >= start && time_ms(n.end_time) <= end);
    Ok(notes)
}

/// Every filter must match a present tag; with `explicit_tags` the series may
/// carry no other keys.
fn passes_filters(
    series: &Series,
    filters: &[TagFilter],
    explicit_tags: bool,
    names: &mut ValueNameMemo<'_>,
) -> Result<bool, QueryError> {
    for f in filters {
        let Some(tag) = series.tag_iter().find(|t| *t.key == *f.tagk) else {
            return Ok(false);
        };
        // The source names filtered keys' values; one it did not is asked
        // for here.
        if !f.matches(&names.of(&tag)?) {
            return Ok(false);
        }
    }
    let explicit_ok = !explicit_tags
        || series
            .tag_iter()
            .all(|t| filters.iter().any(|f| *f.tagk == *t.key));
    Ok(explicit_ok)
}

/// Keeps points inside the scan window; repairs ordering defensively (the
/// source promises sorted, deduplicated points; on a duplicate the later one
/// wins).
fn normalise_points(points: &mut Vec<(i64, Num)>, scan_start: i64, scan_end: i64) {
    if points.windows(2).all(|w| w[0].0 < w[1].0) {
        // The usual case: trim the ends by binary search, no pass over the
        // points in between.
        let hi = points.partition_point(|p| p.0 < scan_end);
        points.truncate(hi);
        let lo = points.partition_point(|p| p.0 < scan_start);
        points.drain(..lo);
        return;
    }
    points.retain(|(ts, _)| *ts >= scan_start && *ts < scan_end);
    points.sort_by_key(|p| p.0);
    let mut deduped: Vec<(i64, Num)> = Vec::with_capacity(points.len());
    for p in points.drain(..) {
        match deduped.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => deduped.push(p),
        }
    }
    *points = deduped;
}

/// Downsample → rate per series (lazy iterators over the raw points), then
/// the streaming cross-series merge; only points inside `[query_start,
/// query_end]` are kept (and counted as held).
fn aggregate_group(
    group: &[&Series],
    sub: &SubQuery,
    bounds: Bounds,
    tz: &TimeZone,
    budget: &QueryBudget,
) -> Result<Vec<(i64, Num)>, QueryError> {
    // Raw points (no downsampling, no rate), or buckets the source built, of
    // aligned series — the common case: every host reports at every step —
    // take the merge's fast path, on the fetched slices themselves (nothing
    // is materialised).
    if sub.rate.is_none() && (sub.downsample.is_none() || group.iter().all(|s| s.downsampled)) {
        let slices: Vec<&[(i64, Num)]> = group.iter().map(|s| s.points.as_slice()).collect();
        let start = merge_start(sub, bounds, tz);
        if let Some(points) = crate::merge::aggregate_aligned(
            &slices,
            start,
            bounds.scan_end,
            sub.aggregator,
            budget,
        )? {
            // One charge for the whole answer (a charge is several atomic
            // updates of shared counters).
            let out: Vec<_> = points
                .into_iter()
                .filter(|(t, _)| *t >= bounds.query_start && *t <= bounds.query_end)
                .collect();
            budget.hold(out.len())?;
            return Ok(out);
        }
    }
    let mut iters: Vec<PointIter<'_>> = Vec::with_capacity(group.len());
    for s in group {
        let stage: PointIter<'_> = match &sub.downsample {
            Some(ds) if !s.downsampled => downsample_iter(&s.points, ds, bounds, tz, budget)?,
            _ => Box::new(s.points.iter().copied().map(Ok)),
        };
        let stage = match &sub.rate {
            Some(opts) => rates_iter(stage, opts.clone()),
            None => stage,
        };
        iters.push(stage);
    }
    let merge = Merge::new(
        iters,
        merge_start(sub, bounds, tz),
        bounds.scan_end,
        sub.aggregator,
        sub.rate.is_some(),
        budget,
    )?;
    let mut out = Vec::new();
    // Values are charged every STEP, not one by one (a charge is several
    // atomic updates of shared counters): the limit is checked on exact
    // counts, at most STEP values late.
    const STEP: usize = 256;
    let mut charged = 0usize;
    for p in merge {
        let (t, v) = p?;
        if t >= bounds.query_start && t <= bounds.query_end {
            out.push((t, v));
            if out.len() - charged == STEP {
                budget.hold(STEP)?;
                charged += STEP;
            }
        }
    }
    budget.hold(out.len() - charged)?;
    Ok(out)
}

/// Where the cross-series merge starts: the scan start, except for calendar
/// downsampling with a fill policy, whose first filled bucket (the calendar
/// boundary at or before the scan start) may precede it in a non-UTC zone.
/// OpenTSDB drops such a series entirely (its first point fails the
/// iterator's seek check); we keep it. The bucket precedes the query start,
/// so it is never written either way.
fn merge_start(sub: &SubQuery, bounds: Bounds, tz: &TimeZone) -> i64 {
    match &sub.downsample {
        Some(DownsampleSpec {
            interval: DownsampleInterval::Calendar { count, unit, .. },
            fill,
            ..
        }) if *fill != FillPolicy::None => {
            let cal = JavaCalendar {
                count: *count,
                unit: *unit,
                tz: tz.clone(),
            };
            cal.previous_interval(bounds.scan_start)
                .min(bounds.scan_start)
        }
        _ => bounds.scan_start,
    }
}

/// `tags` = keys with one value across the group, `aggregateTags` = keys seen
/// with two or more values (spec §5.5).
fn group_tags(
    group: &[&Series],
    names: &mut ValueNameMemo<'_>,
) -> Result<(BTreeMap<String, String>, Vec<String>), QueryError> {
    // Per key (by name): its first tag, and whether another series of the
    // group has a different value (compared by UID).
    let mut values: BTreeMap<Arc<str>, (SeriesTag, bool)> = BTreeMap::new();
    for s in group {
        for t in s.tag_iter() {
            match values.get_mut(&t.key) {
                Some((first, several)) => *several |= first.value_uid != t.value_uid,
                None => {
                    values.insert(Arc::clone(&t.key), (t, false));
                }
            }
        }
    }
    let mut tags = BTreeMap::new();
    let mut aggregated = Vec::new();
    for (k, (first, several)) in values {
        if several {
            aggregated.push(k.to_string());
        } else {
            tags.insert(k.to_string(), names.of(&first)?.to_string());
        }
    }
    Ok((tags, aggregated))
}

/// Upper-case hex, the way OpenTSDB prints TSUIDs.
pub(crate) fn hex_upper(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    fn sec(s: i64) -> i64 {
        s * 1000
    }

    #[test]
    fn scan_window_vectors() {
        let ds = |s: &str| DownsampleSpec::parse(s, false).unwrap();
        assert_eq!(
            scan_window(sec(1_356_998_400), sec(1_357_041_600), Some(&ds("60s-sum"))),
            (sec(1_356_998_400), sec(1_357_045_200))
        );
        assert_eq!(
            scan_window(sec(1_427_372_347), sec(1_427_415_547), Some(&ds("15m-sum"))),
            (sec(1_427_371_200), sec(1_427_418_000))
        );
        assert_eq!(
            scan_window(
                sec(1_427_415_547 - 43_200),
                sec(1_427_415_547),
                Some(&ds("1d-sum"))
            ),
            (sec(1_427_328_000), sec(1_427_500_800))
        );
        // no downsampling: the end always moves to the next hour boundary
        assert_eq!(
            scan_window(sec(1_356_998_400), sec(1_357_041_600), None),
            (sec(1_356_998_400), sec(1_357_045_200))
        );
        assert_eq!(
            scan_window(sec(1_356_998_401), sec(1_357_045_199), None),
            (sec(1_356_998_400), sec(1_357_048_800))
        );
        // `all` behaves like no downsampling
        assert_eq!(
            scan_window(
                sec(1_356_998_400),
                sec(1_357_041_600),
                Some(&ds("0all-sum"))
            ),
            (sec(1_356_998_400), sec(1_357_045_200))
        );
        assert_eq!(scan_window(0, 0, None), (0, sec(3600)));
    }

    #[test]
    fn hex() {
        assert_eq!(hex_upper(&[0, 1, 0x0a, 0xff]), "00010AFF");
    }

    #[test]
    fn normalising_points() {
        let mut p = vec![
            (5, Num::Int(1)),
            (3, Num::Int(2)),
            (5, Num::Int(3)),
            (100, Num::Int(4)),
        ];
        normalise_points(&mut p, 0, 100);
        assert_eq!(p, vec![(3, Num::Int(2)), (5, Num::Int(3))]);
    }
}
