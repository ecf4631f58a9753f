//! Per-series downsampling (spec §5.8).
//!
//! This module owns the downsample specification (`<interval>-<agg>[-<fill>]`,
//! `0all-<agg>`, calendar `c` suffix) with OpenTSDB's error texts, and the
//! downsampler itself, which mirrors OpenTSDB's `Downsampler` and
//! `FillingDownsampler` including how they *seek* to the scan start:
//!
//! * fixed intervals: buckets `[b, b+I)` with `b = ts - ts % I` (epoch
//!   aligned); the source is first advanced to the first bucket boundary at or
//!   after the scan start, so a partial leading bucket is skipped;
//! * fill policies `nan`/`null`/`zero` emit one point for every bucket from
//!   `align(scan_start)` to `align(scan_end)` (exclusive);
//! * `all`: one point at the query start aggregating `query_start <= ts <
//!   query_end`;
//! * calendar mode: boundaries step `n` units from an anchor derived
//!   from the first data point, in the query's time zone (see
//!   [`crate::calendar`] for the Java `Calendar` arithmetic).
//!
//! Bucket values are always computed in double mode and emitted as doubles.

use jiff::tz::TimeZone;

use crate::aggregate::Aggregator;
use crate::budget::QueryBudget;
pub use crate::calendar::CalendarUnit;
use crate::calendar::JavaCalendar;
use crate::error::QueryError;
use crate::filter::java_split;
use crate::num::Num;
use crate::partial::{HOUR_MS, HourFold, Partial, decomposes, merges_exactly};
use crate::time::parse_duration;

/// Buckets of at most this many values are aggregated without charging the
/// query budget: their buffer is reused, so its memory is bounded anyway.
const SMALL_BUCKET: usize = 64;

/// What to emit for a bucket without data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillPolicy {
    /// Emit nothing; cross-series interpolation fills the gap (default).
    None,
    /// Emit NaN (serialised as `"NaN"`).
    Nan,
    /// Emit NaN, serialised as JSON `null`.
    Null,
    /// Emit 0.0.
    Zero,
    /// Parses, but fails when a bucket actually needs filling (as in OpenTSDB).
    Scalar,
}

impl FillPolicy {
    /// The policy's name as written in a downsample spec.
    pub fn name(self) -> &'static str {
        match self {
            FillPolicy::None => "none",
            FillPolicy::Nan => "nan",
            FillPolicy::Null => "null",
            FillPolicy::Zero => "zero",
            FillPolicy::Scalar => "scalar",
        }
    }

    fn parse(s: &str) -> Option<FillPolicy> {
        [
            FillPolicy::None,
            FillPolicy::Nan,
            FillPolicy::Null,
            FillPolicy::Zero,
            FillPolicy::Scalar,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(s))
    }
}

/// The bucketing part of a downsample spec.
#[derive(Debug, Clone, PartialEq)]
pub enum DownsampleInterval {
    /// `0all`: a single bucket over the whole query range.
    All,
    /// A fixed, epoch-aligned interval.
    Fixed {
        /// Interval length in ms.
        ms: i64,
    },
    /// Calendar-aligned buckets (`1dc`, `1nc`, or any interval with `useCalendar`).
    Calendar {
        /// The fixed-length equivalent in ms (used for the scan window).
        ms: i64,
        /// Number of units per bucket.
        count: i64,
        /// The calendar unit.
        unit: CalendarUnit,
    },
}

/// A parsed downsample specification.
#[derive(Debug, Clone, PartialEq)]
pub struct DownsampleSpec {
    /// The specification as the client wrote it (echoed by `showQuery`).
    pub spec: String,
    /// Bucketing.
    pub interval: DownsampleInterval,
    /// Function combining the values of a bucket (never `none`).
    pub aggregator: Aggregator,
    /// Missing-bucket policy.
    pub fill: FillPolicy,
}

impl DownsampleSpec {
    /// Parses `<interval>-<aggregator>[-<fill>]`. `use_calendar` is the
    /// query-level `useCalendar` flag, which makes every interval calendar based.
    pub fn parse(spec: &str, use_calendar: bool) -> Result<DownsampleSpec, QueryError> {
        let parts = java_split(spec, '-');
        if parts.len() < 2 {
            return Err(QueryError::bad(format!(
                "Invalid downsampling specifier '{spec}': must provide at least interval and function"
            )));
        }
        if parts.len() > 3 {
            return Err(QueryError::bad(format!(
                "Invalid downsampling specifier '{spec}': must consist of interval, function, \
                 and optional fill policy"
            )));
        }
        let interval_str = parts[0];
        let interval = if interval_str.to_lowercase().contains("all") {
            DownsampleInterval::All
        } else if let Some(stripped) = interval_str.strip_suffix('c') {
            calendar_interval(stripped)?
        } else {
            let ms = parse_duration(interval_str)?;
            if use_calendar {
                calendar_interval(interval_str)?
            } else {
                DownsampleInterval::Fixed { ms }
            }
        };
        let agg_name = parts[1];
        let aggregator = Aggregator::from_name(agg_name)
            .ok_or_else(|| QueryError::bad(format!("No such downsampling function: {agg_name}")))?;
        if aggregator == Aggregator::None {
            return Err(QueryError::bad(
                "cannot use the NONE aggregator for downsampling",
            ));
        }
        let fill = match parts.get(2) {
            Some(f) => FillPolicy::parse(f)
                .ok_or_else(|| QueryError::bad(format!("Unrecognized fill policy: {f}")))?,
            None => FillPolicy::None,
        };
        Ok(DownsampleSpec {
            spec: spec.to_string(),
            interval,
            aggregator,
            fill,
        })
    }

    /// The fixed-length interval in ms used for the scan window (0 for `all`).
    pub fn interval_ms(&self) -> i64 {
        match self.interval {
            DownsampleInterval::All => 0,
            DownsampleInterval::Fixed { ms } | DownsampleInterval::Calendar { ms, .. } => ms,
        }
    }
}

/// `<n><unit>` read as a calendar interval (the duration must also parse,
/// since the scan window uses its fixed length).
fn calendar_interval(spec: &str) -> Result<DownsampleInterval, QueryError> {
    let ms = parse_duration(spec)?;
    let lower = spec.to_lowercase();
    let (count_str, unit) = if lower.contains("ms") {
        (
            lower.get(..lower.len().saturating_sub(2)),
            CalendarUnit::Millis,
        )
    } else {
        let unit = match lower.chars().last() {
            Some('s') => CalendarUnit::Seconds,
            Some('m') => CalendarUnit::Minutes,
            Some('h') => CalendarUnit::Hours,
            Some('d') => CalendarUnit::Days,
            Some('w') => CalendarUnit::Weeks,
            Some('n') => CalendarUnit::Months,
            Some('y') => CalendarUnit::Years,
            _ => {
                return Err(QueryError::bad(format!(
                    "Invalid duration (suffix): {spec}"
                )));
            }
        };
        (lower.get(..lower.len().saturating_sub(1)), unit)
    };
    let count = count_str
        .and_then(|c| c.parse::<i32>().ok())
        .filter(|c| *c > 0)
        .ok_or_else(|| {
            QueryError::bad(format!("Invalid calendar downsampling interval: {spec}"))
        })?;
    Ok(DownsampleInterval::Calendar {
        ms,
        count: i64::from(count),
        unit,
    })
}

/// The time bounds a downsampler sees.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Scan window start (ms), where the aggregation iterator seeks.
    pub scan_start: i64,
    /// Scan window end (ms).
    pub scan_end: i64,
    /// Query start (ms), used by `all`.
    pub query_start: i64,
    /// Query end (ms), used by `all` (exclusive there).
    pub query_end: i64,
}

/// A lazy stream of points (downsampled, rated): errors surface when the
/// point that causes them is pulled, as in OpenTSDB's iterator chain.
pub(crate) type PointIter<'a> = Box<dyn Iterator<Item = Result<(i64, Num), QueryError>> + 'a>;

/// Downsamples one series (points sorted by time) the way OpenTSDB's
/// downsampler yields them after `seek(scan_start)`. Values are always doubles.
#[cfg(test)]
pub(crate) fn downsample(
    points: &[(i64, Num)],
    spec: &DownsampleSpec,
    bounds: Bounds,
) -> Result<Vec<(i64, Num)>, QueryError> {
    let budget = QueryBudget::unlimited();
    downsample_iter(points, spec, bounds, &TimeZone::UTC, &budget)?.collect()
}

/// The lazy downsampler over `points` (sorted by time), with calendar
/// buckets in `tz`. Only a bucket's own values are buffered (counted as held
/// in `budget`); fill-policy buckets are generated one at a time.
pub(crate) fn downsample_iter<'a>(
    points: &'a [(i64, Num)],
    spec: &DownsampleSpec,
    bounds: Bounds,
    tz: &TimeZone,
    budget: &'a QueryBudget,
) -> Result<PointIter<'a>, QueryError> {
    let agg = spec.aggregator;
    if spec.fill != FillPolicy::None && spec.interval_ms() > 0 {
        let buckets = bounds.scan_end.saturating_sub(bounds.scan_start) / spec.interval_ms();
        if buckets > MAX_FILL_BUCKETS as i64 {
            return Err(too_many_buckets());
        }
    }
    let (bucketer, seek, grid) = match &spec.interval {
        DownsampleInterval::All => {
            let mut done = false;
            return Ok(Box::new(std::iter::from_fn(move || {
                if done {
                    return None;
                }
                done = true;
                let mut held = Held::for_aggregator(agg);
                for (ts, v) in points
                    .iter()
                    .skip_while(|(ts, _)| *ts < bounds.scan_start)
                    .filter(|(ts, _)| *ts >= bounds.query_start)
                    .take_while(|(ts, _)| *ts < bounds.query_end)
                {
                    held.push(*ts, v.as_f64());
                }
                if held.is_empty() {
                    return None;
                }
                let v = held.take(agg, budget);
                Some(v.map(|v| (bounds.query_start, Num::Float(v))))
            })));
        }
        DownsampleInterval::Fixed { ms } => {
            let interval = *ms;
            let align = |t: i64| t - t.rem_euclid(interval);
            let seek = align(bounds.scan_start.saturating_add(interval - 1));
            let grid = Grid::Fixed {
                next: align(bounds.scan_start),
                end: align(bounds.scan_end),
                interval,
            };
            (Bucketer::Fixed(interval), seek, grid)
        }
        DownsampleInterval::Calendar { count, unit, .. } => {
            let cal = JavaCalendar {
                count: *count,
                unit: *unit,
                tz: tz.clone(),
            };
            // Seek to the first calendar boundary at or after the scan start.
            let mut seek = cal.previous_interval(bounds.scan_start);
            if bounds.scan_start > seek {
                seek = cal.add(seek, 1);
            }
            let first = cal.previous_interval(bounds.scan_start);
            let mut end = cal.previous_interval(bounds.scan_end);
            if end == first {
                end = cal.add(end, 1);
            }
            let grid = Grid::Calendar {
                next: first,
                end,
                cal: cal.clone(),
            };
            (Bucketer::Calendar { cal, current: None }, seek, grid)
        }
    };
    let data = DataBuckets {
        points,
        pos: points.partition_point(|(ts, _)| *ts < seek),
        bucketer,
        agg,
        held: Held::for_aggregator(agg),
        budget,
    };
    if spec.fill == FillPolicy::None {
        return Ok(Box::new(data));
    }
    Ok(Box::new(Filled {
        data: data.peekable(),
        grid,
        policy: spec.fill,
    }))
}

/// A fixed-interval downsample a source may apply while it reads
/// ([`crate::exec::FetchRequest::downsample`]): epoch-aligned buckets
/// `[b, b + interval)` from the first one at or after the scan start, each
/// bucket's values (as doubles, in time order) through `aggregator`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pushdown {
    pub interval_ms: i64,
    pub aggregator: Aggregator,
}

impl Pushdown {
    /// The pushdown a downsample spec allows: fixed intervals without a
    /// fill policy (the buckets a series yields do not depend on others).
    pub fn of(spec: &DownsampleSpec) -> Option<Pushdown> {
        match spec.interval {
            DownsampleInterval::Fixed { ms } if spec.fill == FillPolicy::None && ms > 0 => {
                Some(Pushdown {
                    interval_ms: ms,
                    aggregator: spec.aggregator,
                })
            }
            _ => None,
        }
    }
}

/// A series' buckets built from its points as a source reads them (in time
/// order): the same buckets and values as the query's own downsampler
/// ([`DataBuckets`]) computes from the fetched points, without keeping the
/// points.
#[derive(Debug)]
pub struct BucketSink {
    interval: i64,
    /// Points before the first whole bucket are skipped (the seek).
    seek: i64,
    /// Points at or after the scan end are outside the window.
    end: i64,
    agg: Aggregator,
    /// The current bucket's start and end.
    bucket: Option<(i64, i64)>,
    /// The current bucket's span within the window (empty: none yet).
    bucket_start: i64,
    bucket_end: i64,
    held: Held,
    out: Vec<(i64, Num)>,
    last: Option<i64>,
}

/// What a bucket keeps of its values: their partials when the aggregator
/// decomposes ([`crate::partial`]), else the values themselves.
#[derive(Debug)]
enum Held {
    Fold(HourFold),
    Values(Vec<f64>),
}

impl Held {
    fn for_aggregator(agg: Aggregator) -> Held {
        if decomposes(agg) {
            Held::Fold(HourFold::default())
        } else {
            Held::Values(Vec::new())
        }
    }

    #[inline]
    fn push(&mut self, ts: i64, v: f64) {
        match self {
            Held::Fold(f) => f.push(ts, v),
            Held::Values(buf) => buf.push(v),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Held::Fold(f) => f.is_empty(),
            Held::Values(buf) => buf.is_empty(),
        }
    }

    /// The bucket's value, the holder left empty for the next bucket. Large
    /// buckets of values are charged to `budget` while they are aggregated.
    fn take(&mut self, agg: Aggregator, budget: &QueryBudget) -> Result<f64, QueryError> {
        match self {
            Held::Fold(f) => Ok(f.take().value(agg).unwrap_or(f64::NAN)),
            Held::Values(buf) => {
                // A bucket's values are held while it is aggregated; a small
                // one (in a reused buffer) is not worth the shared counters'
                // atomic updates.
                let charge = if buf.len() > SMALL_BUCKET {
                    buf.len()
                } else {
                    0
                };
                if charge > 0 {
                    budget.hold(charge)?;
                }
                let v = agg.run_double(buf);
                if charge > 0 {
                    budget.release(charge);
                }
                buf.clear();
                v
            }
        }
    }
}

impl BucketSink {
    /// Buckets for `[scan_start, scan_end)`.
    pub fn new(p: Pushdown, scan_start: i64, scan_end: i64) -> Self {
        let interval = p.interval_ms;
        let align = |t: i64| t - t.rem_euclid(interval);
        BucketSink {
            interval,
            seek: align(scan_start.saturating_add(interval - 1)),
            end: scan_end,
            agg: p.aggregator,
            bucket: None,
            bucket_start: 0,
            bucket_end: 0,
            held: Held::for_aggregator(p.aggregator),
            out: Vec::new(),
            last: None,
        }
    }

    /// True if the hour starting at `hour_ms` may come as its partial
    /// ([`BucketSink::push_hour`]) rather than its points: the buckets are
    /// whole hours, the aggregator decomposes, and the whole hour lies in
    /// the window (at or after the first whole bucket, before the scan end)
    /// after everything pushed so far.
    pub fn takes_hour(&self, hour_ms: i64) -> bool {
        self.takes_span(hour_ms, HOUR_MS)
    }

    /// True if the `len_ms` (a whole number of hours) starting at
    /// `start_ms` may come as one partial ([`BucketSink::push_span`]): as
    /// [`BucketSink::takes_hour`], with the span inside one bucket (the
    /// interval a multiple of the span, both epoch-aligned). A span longer
    /// than an hour is the merge of its hours' partials, which a sum folds
    /// as `(h₀ + … + h₂₃)` where the bucket folds `((… + h₂₃) + h₂₄)`: for
    /// the sums (`sum`, `zimsum`, `pfsum`, `avg`) it is taken only as a
    /// whole bucket, so the answer is the raw one to the bit.
    pub fn takes_span(&self, start_ms: i64, len_ms: i64) -> bool {
        len_ms > 0
            && len_ms % HOUR_MS == 0
            && self.interval % len_ms == 0
            && matches!(self.held, Held::Fold(_))
            && (len_ms == HOUR_MS || len_ms == self.interval || merges_exactly(self.agg))
            && start_ms.rem_euclid(len_ms) == 0
            && start_ms >= self.seek
            && start_ms.saturating_add(len_ms) <= self.end
            && self.last.is_none_or(|l| l < start_ms)
    }

    /// Adds the partial of every value of the hour starting at `hour_ms`,
    /// in time order with [`BucketSink::push`]; an error unless
    /// [`BucketSink::takes_hour`].
    pub fn push_hour(
        &mut self,
        hour_ms: i64,
        partial: &Partial,
        budget: &QueryBudget,
    ) -> Result<(), QueryError> {
        self.push_span(hour_ms, HOUR_MS, partial, budget)
    }

    /// Adds the partial of every value in `[start_ms, start_ms + len_ms)`,
    /// in time order with [`BucketSink::push`]; an error unless
    /// [`BucketSink::takes_span`].
    pub fn push_span(
        &mut self,
        start_ms: i64,
        len_ms: i64,
        partial: &Partial,
        budget: &QueryBudget,
    ) -> Result<(), QueryError> {
        if !self.takes_span(start_ms, len_ms) {
            return Err(QueryError::Execution(
                "internal error: a span's partial that its bucket cannot take".into(),
            ));
        }
        if partial.is_empty() {
            return Ok(());
        }
        if !(start_ms < self.bucket_end && start_ms >= self.bucket_start) {
            self.open(start_ms, budget)?;
        }
        if let Held::Fold(f) = &mut self.held {
            f.push_hour(partial);
        }
        // The span's points are all before its end.
        self.last = Some(start_ms + len_ms - 1);
        Ok(())
    }

    /// Adds a point; points come in strictly increasing time order (a
    /// source that cannot promise it keeps the points instead). Points
    /// outside the window are ignored.
    #[inline]
    pub fn push(&mut self, ts: i64, v: f64, budget: &QueryBudget) -> Result<(), QueryError> {
        // The hot path: inside the current bucket.
        if ts < self.bucket_end && ts >= self.bucket_start {
            debug_assert!(self.last.is_none_or(|l| l < ts), "points out of order");
            // Kept on the hot path too: `takes_hour` relies on it.
            self.last = Some(ts);
            self.held.push(ts, v);
            return Ok(());
        }
        self.push_slow(ts, v, budget)
    }

    #[cold]
    fn push_slow(&mut self, ts: i64, v: f64, budget: &QueryBudget) -> Result<(), QueryError> {
        if ts < self.seek || ts >= self.end {
            return Ok(());
        }
        debug_assert!(self.last.is_none_or(|l| l < ts), "points out of order");
        self.last = Some(ts);
        if !(ts < self.bucket_end && ts >= self.bucket_start) {
            self.open(ts, budget)?;
        }
        self.held.push(ts, v);
        Ok(())
    }

    /// Closes the current bucket and opens the one holding `ts`.
    fn open(&mut self, ts: i64, budget: &QueryBudget) -> Result<(), QueryError> {
        self.close(budget)?;
        let start = ts - ts.rem_euclid(self.interval);
        self.bucket = Some((start, start.saturating_add(self.interval)));
        // Within the window: the bucket end is capped at the scan end.
        self.bucket_start = start;
        self.bucket_end = start.saturating_add(self.interval).min(self.end);
        Ok(())
    }

    fn close(&mut self, budget: &QueryBudget) -> Result<(), QueryError> {
        if let Some((start, _)) = self.bucket.take()
            && !self.held.is_empty()
        {
            let v = self.held.take(self.agg, budget)?;
            self.out.push((start, Num::Float(v)));
        }
        Ok(())
    }

    /// The buckets, in time order.
    pub fn finish(mut self, budget: &QueryBudget) -> Result<Vec<(i64, Num)>, QueryError> {
        self.close(budget)?;
        Ok(self.out)
    }
}

/// Which bucket a timestamp falls in.
enum Bucketer {
    /// Epoch-aligned fixed intervals.
    Fixed(i64),
    /// Calendar buckets stepped from the first point's bucket, like the two
    /// calendars of OpenTSDB's `ValuesInInterval` (not re-anchored per point).
    Calendar {
        cal: JavaCalendar,
        current: Option<(i64, i64)>,
    },
}

impl Bucketer {
    /// The bucket holding `ts`: its start and (exclusive) end. Points arrive
    /// sorted, so a caller compares the next points with the end instead of
    /// paying a division (or a calendar step) per point.
    fn bounds(&mut self, ts: i64) -> (i64, i64) {
        match self {
            Bucketer::Fixed(interval) => {
                let start = ts - ts.rem_euclid(*interval);
                (start, start.saturating_add(*interval))
            }
            Bucketer::Calendar { cal, current } => {
                let (start, end) = *current.get_or_insert_with(|| {
                    let start = cal.previous_interval(ts);
                    (start, cal.add(start, 1))
                });
                if ts < end {
                    return (start, end);
                }
                let start = cal.bucket_start(end, ts);
                let bounds = (start, cal.add(start, 1));
                *current = Some(bounds);
                bounds
            }
        }
    }
}

/// Non-empty buckets of the points at or after the seek position.
struct DataBuckets<'a> {
    points: &'a [(i64, Num)],
    pos: usize,
    bucketer: Bucketer,
    agg: Aggregator,
    /// The current bucket's values or partials (reused; values are counted
    /// as held while aggregated).
    held: Held,
    budget: &'a QueryBudget,
}

impl Iterator for DataBuckets<'_> {
    type Item = Result<(i64, Num), QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        let &(ts, _) = self.points.get(self.pos)?;
        let (bucket, end) = self.bucketer.bounds(ts);
        while let Some(&(ts, v)) = self.points.get(self.pos) {
            if ts >= end {
                break;
            }
            self.held.push(ts, v.as_f64());
            self.pos += 1;
        }
        let value = self.held.take(self.agg, self.budget);
        Some(value.map(|v| (bucket, Num::Float(v))))
    }
}

/// The expected bucket timestamps of a filling downsampler.
enum Grid {
    Fixed {
        next: i64,
        end: i64,
        interval: i64,
    },
    Calendar {
        next: i64,
        end: i64,
        cal: JavaCalendar,
    },
}

impl Iterator for Grid {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        match self {
            Grid::Fixed {
                next,
                end,
                interval,
            } => {
                let t = *next;
                (t < *end).then(|| {
                    *next = t.saturating_add(*interval);
                    t
                })
            }
            Grid::Calendar { next, end, cal } => {
                let t = *next;
                (t < *end).then(|| {
                    *next = cal.add(t, 1);
                    t
                })
            }
        }
    }
}

/// OpenTSDB's `FillingDownsampler`: walks the expected bucket timestamps,
/// drops data buckets that precede the expected one, and fills the gaps.
struct Filled<'a> {
    data: std::iter::Peekable<DataBuckets<'a>>,
    grid: Grid,
    policy: FillPolicy,
}

impl Iterator for Filled<'_> {
    type Item = Result<(i64, Num), QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.grid.next()?;
        loop {
            match self.data.peek() {
                Some(Err(_)) => return self.data.next(),
                Some(Ok((b, _))) if *b < t => {
                    self.data.next();
                }
                Some(Ok((b, _))) if *b == t => return self.data.next(),
                _ => break,
            }
        }
        let value = match self.policy {
            FillPolicy::Nan | FillPolicy::Null => f64::NAN,
            FillPolicy::Zero => 0.0,
            FillPolicy::None | FillPolicy::Scalar => {
                return Some(Err(QueryError::Execution("unhandled fill policy".into())));
            }
        };
        Some(Ok((t, Num::Float(value))))
    }
}

/// Upper bound on the buckets a filling downsampler may emit for one series.
/// OpenTSDB has no such cap (it would run out of memory instead); a tiny
/// interval over a long range is answered with a 400 here.
pub(crate) const MAX_FILL_BUCKETS: usize = 5_000_000;

fn too_many_buckets() -> QueryError {
    QueryError::bad(format!(
        "Downsampling with a fill policy would produce more than {MAX_FILL_BUCKETS} points per \
         series; use a larger interval or a shorter time range"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::civil::{DAY_MS, days_from_civil};

    fn ds(s: &str) -> DownsampleSpec {
        DownsampleSpec::parse(s, false).unwrap()
    }

    fn err(s: &str) -> String {
        DownsampleSpec::parse(s, false).unwrap_err().message()
    }

    fn floats(v: &[(i64, Num)]) -> Vec<(i64, f64)> {
        v.iter().map(|(t, n)| (*t, n.as_f64())).collect()
    }

    fn same(a: &[(i64, f64)], b: &[(i64, f64)]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x.0, y.0, "{a:?} vs {b:?}");
            assert!(
                (x.1.is_nan() && y.1.is_nan()) || x.1 == y.1,
                "{a:?} vs {b:?}"
            );
        }
    }

    #[test]
    fn parse_valid_specs() {
        let d = ds("1m-avg");
        assert_eq!(d.interval, DownsampleInterval::Fixed { ms: 60_000 });
        assert_eq!(d.aggregator, Aggregator::Avg);
        assert_eq!(d.fill, FillPolicy::None);
        assert_eq!(ds("1h-sum-zero").fill, FillPolicy::Zero);
        assert_eq!(ds("1h-sum-NaN").fill, FillPolicy::Nan);
        assert_eq!(ds("1h-sum-NULL").fill, FillPolicy::Null);
        assert_eq!(ds("1h-sum-scalar").fill, FillPolicy::Scalar);
        assert_eq!(ds("0all-sum").interval, DownsampleInterval::All);
        assert_eq!(ds("0all-sum").interval_ms(), 0);
        assert_eq!(
            ds("1dc-sum").interval,
            DownsampleInterval::Calendar {
                ms: 86_400_000,
                count: 1,
                unit: CalendarUnit::Days
            }
        );
        assert_eq!(
            ds("1nc-sum").interval,
            DownsampleInterval::Calendar {
                ms: 2_592_000_000,
                count: 1,
                unit: CalendarUnit::Months
            }
        );
        assert_eq!(
            ds("15mc-sum").interval,
            DownsampleInterval::Calendar {
                ms: 900_000,
                count: 15,
                unit: CalendarUnit::Minutes
            }
        );
        assert_eq!(
            DownsampleSpec::parse("500ms-avg", true).unwrap().interval,
            DownsampleInterval::Calendar {
                ms: 500,
                count: 500,
                unit: CalendarUnit::Millis
            }
        );
        // Java split drops the trailing empty part
        assert_eq!(ds("1m-avg-").fill, FillPolicy::None);
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            err("1m"),
            "Invalid downsampling specifier '1m': must provide at least interval and function"
        );
        assert_eq!(
            err("1m-"),
            "Invalid downsampling specifier '1m-': must provide at least interval and function"
        );
        assert_eq!(
            err("1m-avg-zero-x"),
            "Invalid downsampling specifier '1m-avg-zero-x': must consist of interval, function, \
             and optional fill policy"
        );
        assert_eq!(err("1m-foo"), "No such downsampling function: foo");
        assert_eq!(
            err("1m-none"),
            "cannot use the NONE aggregator for downsampling"
        );
        assert_eq!(
            err("10m-avg-badbadbad"),
            "Unrecognized fill policy: badbadbad"
        );
        assert_eq!(err("1x-avg"), "Invalid duration (suffix): 1x");
        assert_eq!(err("0m-avg"), "Zero or negative duration: 0m");
    }

    fn bounds(scan_start: i64, scan_end: i64) -> Bounds {
        Bounds {
            scan_start,
            scan_end,
            query_start: scan_start,
            query_end: scan_end,
        }
    }

    #[test]
    fn docs_30s_sum_example() {
        // 10 s data, 30s-sum (user_guide/query/downsampling.rst)
        let base = 1_356_998_400_000;
        let a = [5, 5, 10, 15, 20, 5, 1];
        let b = [10, 5, 20, 15, 10, 0, 5];
        let mk = |v: &[i64]| -> Vec<(i64, Num)> {
            v.iter()
                .enumerate()
                .map(|(i, x)| (base + i as i64 * 10_000, Num::Int(*x)))
                .collect()
        };
        let w = bounds(base, base + 3_600_000);
        let ra = downsample(&mk(&a), &ds("30s-sum"), w).unwrap();
        let rb = downsample(&mk(&b), &ds("30s-sum"), w).unwrap();
        same(
            &floats(&ra),
            &[(base, 20.0), (base + 30_000, 40.0), (base + 60_000, 1.0)],
        );
        same(
            &floats(&rb),
            &[(base, 35.0), (base + 30_000, 25.0), (base + 60_000, 5.0)],
        );
    }

    #[test]
    fn docs_10s_sum_nan_example() {
        let base = 1_356_998_400_000;
        let a: Vec<(i64, Num)> = vec![(base + 30_000, Num::Int(15)), (base + 50_000, Num::Int(5))];
        let b: Vec<(i64, Num)> = vec![
            (base, Num::Int(10)),
            (base + 20_000, Num::Int(20)),
            (base + 60_000, Num::Int(20)),
        ];
        let w = bounds(base, base + 70_000);
        let nan = f64::NAN;
        let ra = downsample(&a, &ds("10s-sum-nan"), w).unwrap();
        let rb = downsample(&b, &ds("10s-sum-nan"), w).unwrap();
        let t = |i: i64| base + i * 10_000;
        same(
            &floats(&ra),
            &[
                (t(0), nan),
                (t(1), nan),
                (t(2), nan),
                (t(3), 15.0),
                (t(4), nan),
                (t(5), 5.0),
                (t(6), nan),
            ],
        );
        same(
            &floats(&rb),
            &[
                (t(0), 10.0),
                (t(1), nan),
                (t(2), 20.0),
                (t(3), nan),
                (t(4), nan),
                (t(5), nan),
                (t(6), 20.0),
            ],
        );
    }

    #[test]
    fn filling_nan_missing_interval() {
        let ts = [600, 625, 675, 800, 875, 1100, 1125, 1150, 1175];
        let pts: Vec<(i64, Num)> = ts.iter().map(|t| (*t, Num::Float(1.0))).collect();
        let nan = f64::NAN;
        let want = [
            (500, nan),
            (600, 3.0),
            (700, nan),
            (800, 2.0),
            (900, nan),
            (1000, nan),
            (1100, 4.0),
            (1200, nan),
            (1300, nan),
        ];
        let got = downsample(&pts, &ds("100ms-sum-nan"), bounds(500, 1400)).unwrap();
        same(&floats(&got), &want);
        let zero: Vec<(i64, f64)> = want
            .iter()
            .map(|(t, v)| (*t, if v.is_nan() { 0.0 } else { *v }))
            .collect();
        let got = downsample(&pts, &ds("100ms-sum-zero"), bounds(500, 1400)).unwrap();
        same(&floats(&got), &zero);
        let err = downsample(&pts, &ds("100ms-sum-scalar"), bounds(500, 1400)).unwrap_err();
        assert_eq!(err.message(), "unhandled fill policy");
    }

    #[test]
    fn filling_is_capped() {
        let pts = vec![(0, Num::Int(1))];
        let e = downsample(&pts, &ds("1ms-sum-zero"), bounds(0, 7_200_000)).unwrap_err();
        assert!(
            e.message()
                .starts_with("Downsampling with a fill policy would produce")
        );
        // without a fill policy only real buckets are produced: no cap needed
        assert_eq!(
            downsample(&pts, &ds("1ms-sum"), bounds(0, 7_200_000))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn filling_without_missing_intervals() {
        let pts: Vec<(i64, Num)> = (0..12).map(|i| (1000 + i * 25, Num::Int(12 - i))).collect();
        let got = downsample(&pts, &ds("100ms-sum-nan"), bounds(1000, 1300)).unwrap();
        same(&floats(&got), &[(1000, 42.0), (1100, 26.0), (1200, 10.0)]);
    }

    #[test]
    fn all_filter_on_query() {
        let base = 1_356_998_400_000;
        let pts: Vec<(i64, Num)> = [1, 2, 4, 8, 16, 32]
            .iter()
            .enumerate()
            .map(|(i, v)| (base + 5_000 + i as i64 * 10_000, Num::Int(*v)))
            .collect();
        let b = Bounds {
            scan_start: base,
            scan_end: base + 3_600_000,
            query_start: base + 15_000,
            query_end: base + 45_000,
        };
        let got = downsample(&pts, &ds("0all-sum-nan"), b).unwrap();
        same(&floats(&got), &[(base + 15_000, 14.0)]);
        let got = downsample(&pts, &ds("0all-sum"), b).unwrap();
        same(&floats(&got), &[(base + 15_000, 14.0)]);
        let empty = Bounds {
            query_start: base + 56_000,
            query_end: base + 60_000,
            ..b
        };
        assert!(downsample(&pts, &ds("0all-sum"), empty).unwrap().is_empty());
    }

    #[test]
    fn a_sink_takes_an_hour_only_whole_in_the_window_and_after_what_was_pushed() {
        let budget = QueryBudget::unlimited();
        let sum = Pushdown {
            interval_ms: DAY_MS,
            aggregator: Aggregator::Sum,
        };
        let mut sink = BucketSink::new(sum, 0, 2 * DAY_MS);
        assert!(sink.takes_hour(0));
        assert!(!sink.takes_hour(1000), "not the start of an hour");
        assert!(sink.takes_hour(2 * DAY_MS - HOUR_MS));
        assert!(!sink.takes_hour(2 * DAY_MS), "past the scan end");
        sink.push(1000, 1.0, &budget).unwrap();
        assert!(!sink.takes_hour(0), "a point of that hour was pushed");
        // A second point in the same bucket (the hot path) still counts.
        sink.push(HOUR_MS + 5000, 2.0, &budget).unwrap();
        assert!(!sink.takes_hour(HOUR_MS));
        let mut four = Partial::EMPTY;
        four.push(4.0);
        sink.push_hour(2 * HOUR_MS, &four, &budget).unwrap();
        assert!(sink.push_hour(2 * HOUR_MS, &four, &budget).is_err());
        let out = sink.finish(&budget).unwrap();
        assert_eq!(out, vec![(0, Num::Float(7.0))]);
        // Sub-hour buckets and aggregators that do not decompose take none.
        for p in [
            Pushdown {
                interval_ms: 600_000,
                aggregator: Aggregator::Sum,
            },
            Pushdown {
                interval_ms: DAY_MS,
                aggregator: Aggregator::Dev,
            },
        ] {
            assert!(!BucketSink::new(p, 0, 2 * DAY_MS).takes_hour(0));
        }
        // The first whole bucket is where the seek starts.
        assert!(!BucketSink::new(sum, 1, 2 * DAY_MS).takes_hour(0));
    }

    #[test]
    fn fixed_buckets_are_epoch_aligned_and_skip_partial_first() {
        // 1388550980000 with 1h -> 1388548800000
        let pts = vec![(1_388_550_980_000, Num::Int(1))];
        let got = downsample(&pts, &ds("1h-sum"), bounds(0, 2_000_000_000_000)).unwrap();
        assert_eq!(got[0].0, 1_388_548_800_000);
        // 36 minute buckets start at k * 2160000
        let pts = vec![(2_160_000 * 7 + 5, Num::Int(1))];
        let got = downsample(&pts, &ds("36m-sum"), bounds(0, 100_000_000)).unwrap();
        assert_eq!(got[0].0, 2_160_000 * 7);
        // seek rounds the scan start up to a boundary: a partial bucket is dropped
        let pts = vec![
            (1000, Num::Int(1)),
            (1500, Num::Int(2)),
            (2500, Num::Int(3)),
        ];
        let got = downsample(&pts, &ds("1s-sum"), bounds(1200, 10_000)).unwrap();
        same(&floats(&got), &[(2000, 3.0)]);
    }

    #[test]
    fn calendar_previous_interval() {
        // 2013-01-01T00:00:00Z is a Tuesday.
        let jan1 = 1_356_998_400_000;
        let cal = JavaCalendar::utc;
        let t = jan1 + 3 * DAY_MS + 5 * 3_600_000 + 17 * 60_000 + 42_123;
        assert_eq!(
            cal(1, CalendarUnit::Days).previous_interval(t),
            jan1 + 3 * DAY_MS
        );
        assert_eq!(
            cal(2, CalendarUnit::Days).previous_interval(t),
            jan1 + 2 * DAY_MS
        );
        assert_eq!(
            cal(1, CalendarUnit::Hours).previous_interval(t),
            jan1 + 3 * DAY_MS + 5 * 3_600_000
        );
        assert_eq!(
            cal(15, CalendarUnit::Minutes).previous_interval(t),
            jan1 + 3 * DAY_MS + 5 * 3_600_000 + 15 * 60_000
        );
        // 7 minutes does not divide an hour: anchored at midnight
        let seven = cal(7, CalendarUnit::Minutes).previous_interval(t);
        assert_eq!((seven - (jan1 + 3 * DAY_MS)) % 420_000, 0);
        assert!(seven <= t && t < seven + 420_000);
        // week starts on Sunday 2012-12-30
        assert_eq!(
            cal(1, CalendarUnit::Weeks).previous_interval(t),
            jan1 - 2 * DAY_MS
        );
        assert_eq!(cal(1, CalendarUnit::Months).previous_interval(t), jan1);
        let june = days_from_civil(2013, 6, 15) * DAY_MS;
        assert_eq!(
            cal(3, CalendarUnit::Months).previous_interval(june),
            days_from_civil(2013, 4, 1) * DAY_MS
        );
        assert_eq!(cal(1, CalendarUnit::Years).previous_interval(june), jan1);
        assert_eq!(
            cal(1, CalendarUnit::Months).add(jan1, 1),
            days_from_civil(2013, 2, 1) * DAY_MS
        );
        let q = cal(3, CalendarUnit::Months);
        assert_eq!(
            q.bucket_start(jan1, june),
            days_from_civil(2013, 4, 1) * DAY_MS
        );
        assert_eq!(
            q.bucket_start(jan1, days_from_civil(2014, 2, 1) * DAY_MS),
            days_from_civil(2014, 1, 1) * DAY_MS
        );
        assert_eq!(
            cal(7, CalendarUnit::Minutes).bucket_start(0, 420_000 * 5 + 1),
            420_000 * 5
        );
        assert_eq!(
            cal(1, CalendarUnit::Months).add(jan1, -1),
            days_from_civil(2012, 12, 1) * DAY_MS
        );
    }

    #[test]
    fn calendar_month_buckets() {
        let day = |y, m, d| days_from_civil(y, m, d) * DAY_MS;
        let pts = vec![
            (day(2013, 1, 5), Num::Int(1)),
            (day(2013, 1, 31), Num::Int(2)),
            (day(2013, 2, 1), Num::Int(4)),
            (day(2013, 3, 30), Num::Int(8)),
        ];
        let got = downsample(
            &pts,
            &ds("1nc-sum"),
            bounds(day(2013, 1, 1), day(2013, 6, 1)),
        )
        .unwrap();
        same(
            &floats(&got),
            &[
                (day(2013, 1, 1), 3.0),
                (day(2013, 2, 1), 4.0),
                (day(2013, 3, 1), 8.0),
            ],
        );
        let filled = downsample(
            &pts,
            &ds("1nc-sum-zero"),
            bounds(day(2013, 1, 1), day(2013, 6, 1)),
        )
        .unwrap();
        same(
            &floats(&filled),
            &[
                (day(2013, 1, 1), 3.0),
                (day(2013, 2, 1), 4.0),
                (day(2013, 3, 1), 8.0),
                (day(2013, 4, 1), 0.0),
                (day(2013, 5, 1), 0.0),
            ],
        );
        // useCalendar turns 1d into a calendar day
        let d = DownsampleSpec::parse("1d-sum", true).unwrap();
        let got = downsample(&pts, &d, bounds(day(2013, 1, 1), day(2013, 6, 1))).unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[1].0, day(2013, 1, 31));
    }
}
