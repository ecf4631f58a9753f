//! `movingAverage`, as OpenTSDB's `MovingAverageAggregator` computes it
//! point by point over the points in the query range:
//!
//! * a window of `n` points: the mean of the last `n` non-NaN values, `0`
//!   until there are `n` of them;
//! * a time window: the mean of the non-NaN values less than the window
//!   older than the newest point, `0` until some point is at least the
//!   window older (and for the first point of the series).
//!
//! Every output value is a double. The sum runs from the newest value to
//! the oldest, as OpenTSDB's does, while the window holds at most
//! [`EXACT_SUM_MAX`] values; beyond that a running sum keeps the work per
//! point constant (its last bits may differ; it is resynchronised every
//! [`EXACT_SUM_MAX`] points).

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
    /// Their sum, maintained incrementally.
    running: f64,
    steps_since_resync: usize,
}

impl Accumulation {
    fn push(&mut self, ts: i64, value: f64) {
        self.entries.push_back((ts, value));
        if !value.is_nan() {
            self.count += 1;
            self.running += value;
        }
    }

    fn pop_oldest(&mut self) {
        if let Some((_, value)) = self.entries.pop_front()
            && !value.is_nan()
        {
            self.count -= 1;
            self.running -= value;
        }
    }

    /// The mean of the non-NaN values, summed newest first.
    fn mean(&mut self, budget: &QueryBudget, tick: &mut u32) -> Result<f64, QueryError> {
        if self.count == 0 {
            return Ok(0.0);
        }
        self.steps_since_resync += 1;
        if self.entries.len() <= EXACT_SUM_MAX || self.steps_since_resync >= EXACT_SUM_MAX {
            let mut sum = 0.0;
            for (_, value) in self.entries.iter().rev() {
                budget.tick(tick)?;
                if !value.is_nan() {
                    sum += value;
                }
            }
            self.running = sum;
            self.steps_since_resync = 0;
        }
        Ok(self.running / self.count as f64)
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
