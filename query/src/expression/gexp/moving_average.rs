//! `movingAverage`, as OpenTSDB's `MovingAverageAggregator` computes it
//! point by point over the points in the query range:
//!
//! * a window of `n` points: the mean of the last `n` non-NaN values, `0`
//!   until there are `n` of them;
//! * a time window: the mean of the non-NaN values less than the window
//!   older than the newest point, `0` until some point is at least the
//!   window older (and for the first point of the series).
//!
//! Every output value is a double. While the window holds at most
//! [`EXACT_SUM_MAX`] values it is summed at every point from the newest
//! value to the oldest, exactly as OpenTSDB does (OpenTSDB always does, at
//! a cost of the window's length per point). Larger windows keep a running
//! sum instead, so the work per point is constant:
//!
//! * the finite values are summed with Neumaier's compensation, so a huge
//!   value leaving the window does not take the small ones' bits with it
//!   (`[1e20, 1, 1, …]` averages to `1`, not `0`);
//! * infinities are counted, not summed, so one leaving the window does
//!   not leave `Inf - Inf = NaN` behind; the mean is infinite (NaN with
//!   both signs, as OpenTSDB's sum is) only while one is inside;
//! * the sum is recomputed from the window's values once the window has
//!   turned over since the last time (so rounding of the compensation
//!   itself cannot build up) and whenever the running sum overflowed.

use std::collections::VecDeque;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::expression::gexp::functions::Window;
use crate::num::Num;

/// The largest window summed exactly in OpenTSDB's order at every point.
pub(crate) const EXACT_SUM_MAX: usize = 1024;

/// The values in the window (newest at the back) and their running sum.
#[derive(Debug, Default)]
struct Accumulation {
    entries: VecDeque<(i64, f64)>,
    /// Non-NaN values in `entries`.
    count: usize,
    /// `+Infinity` and `-Infinity` values in `entries`.
    positive_infinities: usize,
    negative_infinities: usize,
    /// The finite values' sum, and the rounding errors it dropped
    /// (Neumaier): the sum is `sum + compensation`.
    sum: f64,
    compensation: f64,
    /// Values added or removed since the sum was last recomputed.
    steps_since_resync: usize,
}

impl Accumulation {
    fn push(&mut self, ts: i64, value: f64) {
        self.entries.push_back((ts, value));
        self.count_in(value, 1.0);
    }

    fn pop_oldest(&mut self) {
        if let Some((_, value)) = self.entries.pop_front() {
            self.count_in(value, -1.0);
        }
    }

    /// Adds (`sign` 1) or removes (-1) `value` from the running sum.
    fn count_in(&mut self, value: f64, sign: f64) {
        if value.is_nan() {
            return;
        }
        let adding = sign > 0.0;
        if adding {
            self.count += 1;
        } else {
            self.count -= 1;
        }
        let infinities = if value == f64::INFINITY {
            &mut self.positive_infinities
        } else if value == f64::NEG_INFINITY {
            &mut self.negative_infinities
        } else {
            self.steps_since_resync += 1;
            self.add(sign * value);
            return;
        };
        if adding {
            *infinities += 1;
        } else {
            *infinities -= 1;
        }
    }

    /// Neumaier's step: `sum + compensation` gains `x` with the rounding
    /// error of the addition kept in `compensation`.
    fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// The mean of the non-NaN values.
    fn mean(&mut self, budget: &QueryBudget, tick: &mut u32) -> Result<f64, QueryError> {
        if self.count == 0 {
            return Ok(0.0);
        }
        if self.entries.len() <= EXACT_SUM_MAX {
            // OpenTSDB's order, newest first, bit for bit.
            let mut sum = 0.0;
            for (_, value) in self.entries.iter().rev() {
                budget.tick(tick)?;
                if !value.is_nan() {
                    sum += value;
                }
            }
            return Ok(sum / self.count as f64);
        }
        match (self.positive_infinities > 0, self.negative_infinities > 0) {
            (true, true) => return Ok(f64::NAN),
            (true, false) => return Ok(f64::INFINITY),
            (false, true) => return Ok(f64::NEG_INFINITY),
            (false, false) => {}
        }
        // An overflowed finite sum (values near `f64::MAX`) is recomputed at
        // every point while it lasts: rare, and bounded by the budget's
        // deadline like the exact sum.
        if self.steps_since_resync >= self.entries.len()
            || !(self.sum + self.compensation).is_finite()
        {
            self.resync(budget, tick)?;
        }
        Ok((self.sum + self.compensation) / self.count as f64)
    }

    /// Recomputes the running sum from the window's finite values.
    fn resync(&mut self, budget: &QueryBudget, tick: &mut u32) -> Result<(), QueryError> {
        self.sum = 0.0;
        self.compensation = 0.0;
        for index in 0..self.entries.len() {
            budget.tick(tick)?;
            if let Some(&(_, value)) = self.entries.get(index)
                && value.is_finite()
            {
                self.add(value);
            }
        }
        self.steps_since_resync = 0;
        Ok(())
    }
}

/// The moving average of `points` (in time order).
pub(crate) fn moving_average(
    points: &[(i64, Num)],
    window: Window,
    budget: &QueryBudget,
) -> Result<Vec<(i64, Num)>, QueryError> {
    budget.hold(points.len())?;
    let mut out = Vec::with_capacity(points.len());
    let mut acc = Accumulation::default();
    let mut tick = 0;
    // A time window is full once some point fell out of it (for good: the
    // newest point only moves forward).
    let mut full = false;
    for (i, &(ts, value)) in points.iter().enumerate() {
        budget.tick(&mut tick)?;
        acc.push(ts, value.as_f64());
        let average = match window {
            Window::Points(n) => {
                // Keep the newest `n` non-NaN values (and NaNs between them).
                while acc.count > n
                    || (acc.count == n && acc.entries.front().is_some_and(|(_, v)| v.is_nan()))
                {
                    acc.pop_oldest();
                }
                if acc.count >= n {
                    acc.mean(budget, &mut tick)?
                } else {
                    0.0
                }
            }
            Window::Millis(span) => {
                while acc
                    .entries
                    .front()
                    .is_some_and(|(oldest, _)| ts.saturating_sub(*oldest) >= span)
                {
                    acc.pop_oldest();
                    full = true;
                }
                if i == 0 || !full {
                    0.0
                } else {
                    acc.mean(budget, &mut tick)?
                }
            }
        };
        out.push((ts, Num::Float(average)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(points: &[(i64, f64)], window: Window) -> Vec<f64> {
        let points: Vec<(i64, Num)> = points.iter().map(|(t, v)| (*t, Num::Float(*v))).collect();
        moving_average(&points, window, &QueryBudget::unlimited())
            .unwrap()
            .into_iter()
            .map(|(_, v)| v.as_f64())
            .collect()
    }

    const M: i64 = 60_000;

    #[test]
    fn point_windows() {
        let p: Vec<(i64, f64)> = (1..=5).map(|i| (i * M, i as f64)).collect();
        // window 1 is the series itself
        assert_eq!(values(&p, Window::Points(1)), [1.0, 2.0, 3.0, 4.0, 5.0]);
        // window 2: 0 until two values, then (1+2)/2, (2+3)/2, …
        assert_eq!(values(&p, Window::Points(2)), [0.0, 1.5, 2.5, 3.5, 4.5]);
        assert_eq!(values(&p, Window::Points(5)), [0.0, 0.0, 0.0, 0.0, 3.0]);
        assert_eq!(values(&p, Window::Points(6)), [0.0; 5]);
        // NaNs are skipped, not counted
        let p = [(M, 1.0), (2 * M, f64::NAN), (3 * M, 3.0), (4 * M, 5.0)];
        assert_eq!(values(&p, Window::Points(2)), [0.0, 0.0, 2.0, 4.0]);
    }

    #[test]
    fn time_windows() {
        let p: Vec<(i64, f64)> = (0..5).map(|i| (i * M, (i + 1) as f64)).collect();
        // '1min': the first point is 0, then only the newest value is less
        // than a minute old
        assert_eq!(values(&p, Window::Millis(M)), [0.0, 2.0, 3.0, 4.0, 5.0]);
        // '2min': at 1m the window is not full yet (0), then the last two
        assert_eq!(values(&p, Window::Millis(2 * M)), [0.0, 0.0, 2.5, 3.5, 4.5]);
        // '3min': full from 3m on: (2+3+4)/3 = 3, (3+4+5)/3 = 4
        assert_eq!(values(&p, Window::Millis(3 * M)), [0.0, 0.0, 0.0, 3.0, 4.0]);
    }

    #[test]
    fn a_huge_value_leaving_a_large_window_keeps_the_small_ones() {
        // 2000 > EXACT_SUM_MAX: the running sum. A plain one is 1e20 after
        // the ones are added (they vanish in its rounding) and 0 once 1e20
        // leaves; the compensated one keeps them.
        let mut p = vec![(0, 1e20)];
        p.extend((1..3000).map(|i| (i * 1000, 1.0)));
        let got = values(&p, Window::Points(2000));
        assert_eq!(got[1998], 0.0);
        assert_eq!(got[1999], (1e20 + 1999.0) / 2000.0);
        assert!(
            got[2000..].iter().all(|v| *v == 1.0),
            "{:?}",
            &got[2000..2004]
        );
    }

    #[test]
    fn infinities_leave_a_large_window_without_a_trace() {
        let mut p = vec![(0, f64::INFINITY)];
        p.extend((1..2100).map(|i| (i * 1000, 2.0)));
        let got = values(&p, Window::Points(2000));
        assert_eq!(got[1999], f64::INFINITY);
        assert!(got[2000..].iter().all(|v| *v == 2.0));
        // both signs inside: NaN (OpenTSDB's Inf + -Inf), then back to 2
        p[1] = (1000, f64::NEG_INFINITY);
        let got = values(&p, Window::Points(2000));
        assert!(got[1999].is_nan());
        assert_eq!(got[2000], f64::NEG_INFINITY);
        assert!(got[2001..].iter().all(|v| *v == 2.0));
        // and in a small window (summed exactly each time)
        let p = [(0, f64::INFINITY), (M, 1.0), (2 * M, 1.0), (3 * M, 1.0)];
        assert_eq!(
            values(&p, Window::Points(3)),
            [0.0, 0.0, f64::INFINITY, 1.0]
        );
    }

    #[test]
    fn large_windows_stay_close() {
        let p: Vec<(i64, f64)> = (0..5000)
            .map(|i| (i * 1000, (i % 7) as f64 * 0.1))
            .collect();
        let exact: Vec<f64> = {
            let mut out = Vec::new();
            for i in 0..p.len() {
                if i + 1 < 2000 {
                    out.push(0.0);
                } else {
                    let sum: f64 = p[i + 1 - 2000..=i].iter().rev().map(|(_, v)| v).sum();
                    out.push(sum / 2000.0);
                }
            }
            out
        };
        for (got, want) in values(&p, Window::Points(2000)).iter().zip(&exact) {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
    }
}
