//! Cross-series aggregation: OpenTSDB's `AggregationIterator` (spec §5.6).
//!
//! This module owns the exact merge semantics: per-series `cur`/`nxt` state,
//! when a series is active, interpolation (LERP in Java `long` arithmetic in
//! integer mode), the per-step integer-vs-double decision, and the rate
//! special cases. Inputs are the already downsampled/rated series; output is
//! one point per timestamp in the union of the series' timestamps within
//! `[start, end]` (the scan window). Clipping to the query range is the
//! caller's job.
//!
//! The state machine is written to mirror the original step by step rather
//! than "a cleaner equivalent", because the quirks are observable:
//! * a series takes part only between its first and its last point (no
//!   zero-fill before/after, even for `zimsum`); it is still active at the
//!   step of its own last point;
//! * integer mode holds only if *no* buffered value (`cur` and `nxt` of every
//!   series, active or not) is a float, so one float anywhere nearby turns a
//!   step into double mode;
//! * rate series never interpolate: a missing series contributes its previous
//!   rate (at the start, the pseudo-rate against `(0, 0)`).

use crate::aggregate::{Aggregator, Interpolation};
use crate::budget::QueryBudget;
use crate::downsample::PointIter;
use crate::error::QueryError;
use crate::num::Num;

/// Per-series iterator state.
struct Slot<'a> {
    /// The current point; `None` means the series is not participating.
    cur: Option<(i64, Num)>,
    /// The look-ahead point; `None` means the series is exhausted.
    nxt: Option<(i64, Num)>,
    /// The rest of the series (dropped once exhausted).
    iter: Option<PointIter<'a>>,
}

impl Slot<'_> {
    /// `cur <- nxt`, `nxt <-` the following point (or exhausted).
    fn move_to_next(&mut self) -> Result<(), QueryError> {
        self.cur = self.nxt;
        self.nxt = match self.iter.as_mut().and_then(Iterator::next) {
            Some(p) => Some(p?),
            None => {
                self.iter = None;
                None
            }
        };
        Ok(())
    }
}

/// Merges `series` (each sorted by strictly increasing time) with `agg`.
///
/// `start`/`end` are the iterator bounds (OpenTSDB passes the scan window);
/// a series whose first point precedes `start` never participates, exactly
/// like the original's seek check. `rate` selects the rate special cases: the
/// first point of each series is the pseudo-rate (consumed, never emitted).
pub fn aggregate(
    series: &[&[(i64, Num)]],
    start: i64,
    end: i64,
    agg: Aggregator,
    rate: bool,
) -> Result<Vec<(i64, Num)>, QueryError> {
    let budget = QueryBudget::unlimited();
    let iters: Vec<PointIter<'_>> = series
        .iter()
        .map(|pts| -> PointIter<'_> { Box::new(pts.iter().copied().map(Ok)) })
        .collect();
    Merge::new(iters, start, end, agg, rate, &budget)?.collect()
}

/// The merge of series whose timestamps are all the same (regular
/// collection: every host reports at every step), without the general
/// state machine: at each step every series is current at its own point
/// (no interpolation), a step is in integer mode when every series' point
/// and its next one are integers, and values are aggregated in series
/// order — exactly what [`Merge`] computes for such input, with the same
/// bounds (`start` seek, `end` cut) and budget charges. `None` when the
/// series are not aligned (or a first point precedes `start`): the caller
/// runs [`Merge`].
pub(crate) fn aggregate_aligned(
    series: &[&[(i64, Num)]],
    start: i64,
    end: i64,
    agg: Aggregator,
    budget: &QueryBudget,
) -> Result<Option<Vec<(i64, Num)>>, QueryError> {
    let Some(first) = series.first() else {
        return Ok(Some(Vec::new()));
    };
    if first.first().is_some_and(|p| p.0 < start) {
        return Ok(None);
    }
    let m = first.len();
    for s in &series[1..] {
        if s.len() != m || s.iter().zip(first.iter()).any(|(a, b)| a.0 != b.0) {
            return Ok(None);
        }
    }
    let n = series.len();
    budget.hold(2 * n)?;
    let result = (|| {
        // A step is in integer mode if the points of this step and of the
        // next (the look-ahead) are all integers.
        let col_int: Vec<bool> = (0..m)
            .map(|j| series.iter().all(|s| s[j].1.is_int()))
            .collect();
        let mut ints: Vec<i64> = Vec::with_capacity(n);
        let mut doubles: Vec<f64> = Vec::with_capacity(n);
        let mut out = Vec::new();
        // Steps since the last deadline check (each pulls a point of every
        // series, as the merge does).
        let mut since = 0usize;
        for j in 0..m {
            let t = first[j].0;
            if t > end {
                break;
            }
            since += 1;
            if since * n >= WORK_PER_CHECK {
                budget.produced((since * n) as u64);
                since = 0;
                budget.check()?;
            }
            let integer_mode = col_int[j] && (j + 1 == m || col_int[j + 1]);
            let value = if integer_mode {
                ints.clear();
                ints.extend(series.iter().map(|s| as_long(s[j].1)));
                Num::Int(agg.run_long(&ints)?)
            } else {
                doubles.clear();
                doubles.extend(series.iter().map(|s| s[j].1.as_f64()));
                let v = agg.run_double(&doubles)?;
                if v.is_infinite() {
                    return Err(QueryError::Execution(format!(
                        "Got Infinity: {} at timestamp {t}",
                        if v > 0.0 { "Infinity" } else { "-Infinity" }
                    )));
                }
                Num::Float(v)
            };
            out.push((t, value));
        }
        budget.produced((since * n) as u64);
        Ok(out)
    })();
    budget.release(2 * n);
    result.map(Some)
}

/// The streaming cross-series merge: pulls one point at a time from each
/// series' lazy iterator and yields one aggregated point per timestamp.
/// Holds only two points per series plus one value buffer.
pub(crate) struct Merge<'a> {
    slots: Vec<Slot<'a>>,
    end: i64,
    agg: Aggregator,
    method: Interpolation,
    rate: bool,
    /// Index of the series that supplied the previous timestamp. The original
    /// only expires series from this index on; kept for fidelity.
    current: usize,
    ints: Vec<i64>,
    doubles: Vec<f64>,
    budget: &'a QueryBudget,
    /// Slot visits since the last deadline/cancel check.
    work: usize,
    /// Points pulled from the series since the last flush to the budget.
    pulled: u64,
    failed: bool,
    /// Values counted as held for the per-step buffers.
    held: usize,
}

/// Slot visits between two deadline/cancel checks.
const WORK_PER_CHECK: usize = 1 << 16;

impl<'a> Merge<'a> {
    /// Seeks every series to `start` and primes its look-ahead.
    pub(crate) fn new(
        iters: Vec<PointIter<'a>>,
        start: i64,
        end: i64,
        agg: Aggregator,
        rate: bool,
        budget: &'a QueryBudget,
    ) -> Result<Self, QueryError> {
        let n = iters.len();
        // The per-step buffers: one value per series.
        budget.hold(2 * n)?;
        let mut merge = Merge {
            slots: Vec::with_capacity(n),
            end,
            agg,
            method: agg.interpolation(),
            rate,
            current: 0,
            ints: Vec::with_capacity(n),
            doubles: Vec::with_capacity(n),
            budget,
            work: 0,
            pulled: 0,
            failed: false,
            held: 2 * n,
        };
        for mut iter in iters {
            let mut slot = Slot {
                cur: None,
                nxt: None,
                iter: None,
            };
            if let Some(first) = iter.next() {
                let first = first?;
                if first.0 >= start {
                    slot.nxt = Some(first);
                    slot.iter = Some(iter);
                    if rate {
                        // The pseudo-rate becomes `cur` only if another point
                        // follows (OpenTSDB's `hasNext() ? moveToNext : endReached`).
                        let second = match slot.iter.as_mut().and_then(Iterator::next) {
                            Some(p) => Some(p?),
                            None => None,
                        };
                        match second {
                            Some(p) => {
                                slot.cur = slot.nxt;
                                slot.nxt = Some(p);
                            }
                            None => {
                                slot.nxt = None;
                                slot.iter = None;
                            }
                        }
                    }
                }
            }
            merge.slots.push(slot);
        }
        Ok(merge)
    }

    fn step(&mut self) -> Result<Option<(i64, Num)>, QueryError> {
        // Next timestamp: the smallest look-ahead within the bounds.
        let Some(t) = self
            .slots
            .iter()
            .filter_map(|s| s.nxt.map(|p| p.0))
            .filter(|ts| *ts <= self.end)
            .min()
        else {
            return Ok(None);
        };
        self.work += self.slots.len();
        if self.work >= WORK_PER_CHECK {
            self.work = 0;
            self.budget.produced(std::mem::take(&mut self.pulled));
            self.budget.check()?;
        }
        for slot in self.slots.iter_mut().skip(self.current) {
            if slot.nxt.is_none() {
                slot.cur = None;
            }
        }
        let mut first_moved = None;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.nxt.is_some_and(|p| p.0 == t) {
                slot.move_to_next()?;
                self.pulled += 1;
                first_moved.get_or_insert(i);
            }
        }
        self.current = first_moved.unwrap_or(self.current);

        let integer_mode = !self.rate
            && self
                .slots
                .iter()
                .all(|s| s.cur.is_none_or(|p| p.1.is_int()) && s.nxt.is_none_or(|p| p.1.is_int()));
        let value = if integer_mode {
            self.ints.clear();
            for (i, slot) in self.slots.iter().enumerate() {
                if let Some(cur) = slot.cur {
                    self.ints
                        .push(long_value(i == self.current, t, cur, slot.nxt, self.method));
                }
            }
            Num::Int(self.agg.run_long(&self.ints)?)
        } else {
            self.doubles.clear();
            for (i, slot) in self.slots.iter().enumerate() {
                if let Some(cur) = slot.cur {
                    self.doubles.push(double_value(
                        i == self.current,
                        t,
                        cur,
                        slot.nxt,
                        self.method,
                        self.rate,
                    ));
                }
            }
            let v = self.agg.run_double(&self.doubles)?;
            if v.is_infinite() {
                return Err(QueryError::Execution(format!(
                    "Got Infinity: {} at timestamp {t}",
                    if v > 0.0 { "Infinity" } else { "-Infinity" }
                )));
            }
            Num::Float(v)
        };
        Ok(Some((t, value)))
    }
}

impl Iterator for Merge<'_> {
    type Item = Result<(i64, Num), QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(p) => p.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl Drop for Merge<'_> {
    fn drop(&mut self) {
        self.budget.produced(self.pulled);
        self.budget.release(self.held);
    }
}

fn as_long(value: Num) -> i64 {
    match value {
        Num::Int(i) => i,
        // Unreachable in integer mode; mirrors reading the raw slot.
        Num::Float(f) => f as i64,
    }
}

/// A participating series' value at `at` in integer mode.
fn long_value(
    is_current: bool,
    at: i64,
    cur: (i64, Num),
    nxt: Option<(i64, Num)>,
    method: Interpolation,
) -> i64 {
    let (x0, y0) = (cur.0, as_long(cur.1));
    if is_current || at == x0 {
        return y0;
    }
    let Some((x1, y1)) = nxt.map(|(x, y)| (x, as_long(y))) else {
        return y0;
    };
    if at == x1 {
        return y1;
    }
    match method {
        // Java: y0 + (x - x0) * (y1 - y0) / (x1 - x0), multiply first, truncate.
        Interpolation::Lerp => {
            let num = (at - x0).wrapping_mul(y1.wrapping_sub(y0));
            y0.wrapping_add(num.checked_div(x1 - x0).unwrap_or(0))
        }
        Interpolation::Zim => 0,
        Interpolation::Max => i64::MAX,
        Interpolation::Min => i64::MIN,
        Interpolation::Prev => y0,
    }
}

/// A participating series' value at `at` in double mode.
fn double_value(
    is_current: bool,
    at: i64,
    cur: (i64, Num),
    nxt: Option<(i64, Num)>,
    method: Interpolation,
    rate: bool,
) -> f64 {
    let (x0, y0) = (cur.0, cur.1.as_f64());
    if is_current || rate || at == x0 {
        return y0;
    }
    let Some((x1, y1)) = nxt.map(|(x, y)| (x, y.as_f64())) else {
        return y0;
    };
    if at == x1 {
        return y1;
    }
    match method {
        // Java evaluates (x - x0) * (y1 - y0) as long * double, then / long.
        Interpolation::Lerp => y0 + ((at - x0) as f64 * (y1 - y0)) / (x1 - x0) as f64,
        Interpolation::Zim => 0.0,
        Interpolation::Max => f64::MAX,
        Interpolation::Min => -f64::MAX,
        Interpolation::Prev => y0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    fn ints(v: &[(i64, i64)]) -> Vec<(i64, Num)> {
        v.iter().map(|(t, x)| (*t, Num::Int(*x))).collect()
    }

    proptest::proptest! {
        /// The aligned fast path computes what the merge computes, for every
        /// aggregator, integer and float values mixed, any bounds.
        #[test]
        fn aligned_fast_path_matches_the_merge(
            n in 1usize..6,
            steps in 1usize..40,
            values in proptest::collection::vec((proptest::prelude::any::<bool>(), -1000i64..1000), 240),
            agg_i in 0usize..crate::aggregate::ALL.len(),
            start in -20i64..50,
            end in 0i64..500,
        ) {
            let agg = crate::aggregate::ALL[agg_i];
            let series: Vec<Vec<(i64, Num)>> = (0..n)
                .map(|i| {
                    (0..steps)
                        .map(|j| {
                            let (float, x) = values[(i * steps + j) % values.len()];
                            let v = if float { Num::Float(x as f64 / 7.0) } else { Num::Int(x) };
                            (j as i64 * 10, v)
                        })
                        .collect()
                })
                .collect();
            let slices: Vec<&[(i64, Num)]> = series.iter().map(Vec::as_slice).collect();
            let budget = QueryBudget::unlimited();
            let fast = aggregate_aligned(&slices, start, end, agg, &budget);
            let slow = aggregate(&slices, start, end, agg, false);
            match (fast, slow) {
                (Ok(Some(f)), Ok(s)) => {
                    proptest::prop_assert_eq!(f.len(), s.len());
                    for (a, b) in f.iter().zip(&s) {
                        proptest::prop_assert_eq!(a.0, b.0);
                        match (a.1, b.1) {
                            (Num::Float(x), Num::Float(y)) if x.is_nan() && y.is_nan() => {}
                            (x, y) => proptest::prop_assert_eq!(x, y),
                        }
                    }
                }
                (Ok(None), _) => proptest::prop_assert!(start > 0),
                (Err(_), Err(_)) => {}
                (f, s) => proptest::prop_assert!(false, "fast {:?} vs merge {:?}", f, s),
            }
        }
    }

    #[test]
    fn lerp_in_integer_mode_truncates() {
        let a = ints(&[(0, 0), (30, 10)]);
        let b = ints(&[(10, 100)]);
        let got = aggregate(&[&a, &b], 0, 100, Aggregator::Sum, false).unwrap();
        // t=10: a = 0 + 10*10/30 = 3 (truncated), b = 100
        assert_eq!(
            got,
            vec![(0, Num::Int(0)), (10, Num::Int(103)), (30, Num::Int(10))]
        );
    }

    #[test]
    fn series_outside_their_span_do_not_count() {
        let a = ints(&[(0, 1), (10, 1)]);
        let b = ints(&[(20, 5), (30, 5)]);
        let got = aggregate(&[&a, &b], 0, 100, Aggregator::Count, false).unwrap();
        let counts: Vec<i64> = got.iter().map(|p| as_long(p.1)).collect();
        assert_eq!(counts, [1, 1, 1, 1]);
        let got = aggregate(&[&a, &b], 0, 100, Aggregator::Zimsum, false).unwrap();
        assert_eq!(got[2], (20, Num::Int(5)));
    }

    #[test]
    fn float_anywhere_in_the_buffer_switches_to_double() {
        // b's *next* point is a float: the step at t=0 is computed as double.
        let a = ints(&[(0, 1), (10, 2)]);
        let b = vec![(5, Num::Float(1.5))];
        let got = aggregate(&[&a, &b], 0, 100, Aggregator::Sum, false).unwrap();
        assert_eq!(got[0], (0, Num::Float(1.0)));
        // after b is gone, back to integers
        assert_eq!(got[2], (10, Num::Int(2)));
    }

    #[test]
    fn first_point_before_start_drops_the_series() {
        let a = ints(&[(0, 1), (10, 2)]);
        let b = ints(&[(5, 7), (15, 7)]);
        let got = aggregate(&[&a, &b], 5, 100, Aggregator::Sum, false).unwrap();
        assert_eq!(got, vec![(5, Num::Int(7)), (15, Num::Int(7))]);
    }

    #[test]
    fn end_bound_stops_iteration_but_keeps_lerp_target() {
        let a = ints(&[(0, 0), (100, 100)]);
        let b = ints(&[(50, 1)]);
        let got = aggregate(&[&a, &b], 0, 60, Aggregator::Sum, false).unwrap();
        assert_eq!(got, vec![(0, Num::Int(0)), (50, Num::Int(51))]);
    }

    #[test]
    fn rate_uses_previous_rate() {
        // rate inputs include the pseudo-rate first
        let a = vec![
            (10, Num::Float(0.1)),
            (20, Num::Float(1.0)),
            (40, Num::Float(2.0)),
        ];
        let b = vec![(10, Num::Float(0.5)), (30, Num::Float(3.0))];
        let got = aggregate(&[&a, &b], 0, 100, Aggregator::Sum, true).unwrap();
        // t=20: a=1.0, b=prev (pseudo) 0.5; t=30: a=1.0 (prev), b=3.0; t=40: a=2.0, b gone
        assert_eq!(
            got,
            vec![
                (20, Num::Float(1.5)),
                (30, Num::Float(4.0)),
                (40, Num::Float(2.0))
            ]
        );
    }

    #[test]
    fn mim_interpolation() {
        let a = ints(&[(0, 5), (20, 5)]);
        let b = ints(&[(10, 7), (30, 7)]);
        let min = aggregate(&[&a, &b], 0, 100, Aggregator::Mimmin, false).unwrap();
        let max = aggregate(&[&a, &b], 0, 100, Aggregator::Mimmax, false).unwrap();
        assert_eq!(min[1], (10, Num::Int(7)));
        assert_eq!(max[2], (20, Num::Int(5)));
        let pf = aggregate(&[&a, &b], 0, 100, Aggregator::Pfsum, false).unwrap();
        assert_eq!(pf[1], (10, Num::Int(12)));
    }

    #[test]
    fn infinity_aborts() {
        let a = vec![(0, Num::Float(f64::MAX))];
        let b = vec![(0, Num::Float(f64::MAX))];
        let e = aggregate(&[&a, &b], 0, 100, Aggregator::Sum, false).unwrap_err();
        assert!(e.message().starts_with("Got Infinity"));
    }
}
