//! Rate of change per series (spec §5.9), OpenTSDB's `RateSpan`.
//!
//! This module owns [`RateOptions`] and the rate computation. Rates are taken
//! after downsampling, before cross-series aggregation, and are always doubles.
//!
//! Gotchas copied on purpose:
//! * the first rate is computed against the pseudo point `(0, 0)`; it is kept
//!   in the output here because the aggregation iterator uses it as the
//!   "previous rate" of a series before its second point, but never emits it;
//! * deltas between two integers are computed in wrapping 64-bit arithmetic
//!   (so counters near `i64::MAX` work), otherwise in doubles;
//! * counter roll-over uses `counterMax - v0 + v1`; `resetValue` applies only
//!   to roll-overs; `dropResets` skips the point and restarts from it.

use crate::downsample::PointIter;
use crate::error::QueryError;
use crate::num::Num;

/// Options of a rate query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateOptions {
    /// Treat the series as a monotonically increasing counter that may roll over.
    pub counter: bool,
    /// The counter's maximum value before roll-over (default `i64::MAX`).
    pub counter_max: i64,
    /// When > 0, a roll-over rate above this value is reported as 0.
    pub reset_value: i64,
    /// Drop the point at a counter reset instead of computing a roll-over.
    pub drop_resets: bool,
}

impl Default for RateOptions {
    fn default() -> Self {
        RateOptions {
            counter: false,
            counter_max: i64::MAX,
            reset_value: 0,
            drop_resets: false,
        }
    }
}

/// Converts a series into rates per second, including the leading pseudo-rate
/// against `(0, 0)` (see the module docs).
#[cfg(test)]
pub(crate) fn rates(
    points: &[(i64, Num)],
    opts: &RateOptions,
) -> Result<Vec<(i64, Num)>, QueryError> {
    let src: PointIter<'_> = Box::new(points.iter().copied().map(Ok));
    rates_iter(src, opts.clone()).collect()
}

/// The lazy rate of `inner` (OpenTSDB's `RateSpan`): one rate per input
/// point, the first against `(0, 0)`; `dropResets` skips points.
pub(crate) fn rates_iter(inner: PointIter<'_>, opts: RateOptions) -> PointIter<'_> {
    let mut inner = inner;
    let mut prev: (i64, Num) = (0, Num::Int(0));
    Box::new(std::iter::from_fn(move || {
        loop {
            let (t1, v1) = match inner.next()? {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            let (t0, v0) = prev;
            if t1 <= t0 {
                return Some(Err(QueryError::Execution(format!(
                    "Next timestamp ({t1}) is supposed to be strictly greater than the previous \
                     one ({t0}), but it's not."
                ))));
            }
            let dt = (t1 - t0) as f64 / 1000.0;
            let diff = match (v0, v1) {
                (Num::Int(a), Num::Int(b)) => b.wrapping_sub(a) as f64,
                _ => v1.as_f64() - v0.as_f64(),
            };
            let rate = if opts.counter && diff < 0.0 {
                if opts.drop_resets {
                    prev = (t1, v1);
                    continue;
                }
                let rolled = match (v0, v1) {
                    (Num::Int(a), Num::Int(b)) => {
                        opts.counter_max.wrapping_sub(a).wrapping_add(b) as f64
                    }
                    _ => opts.counter_max as f64 - v0.as_f64() + v1.as_f64(),
                };
                let r = rolled / dt;
                if opts.reset_value > 0 && r > opts.reset_value as f64 {
                    0.0
                } else {
                    r
                }
            } else {
                diff / dt
            };
            prev = (t1, v1);
            return Some(Ok((t1, Num::Float(rate))));
        }
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    fn r(points: &[(i64, Num)], opts: &RateOptions) -> Vec<(i64, f64)> {
        rates(points, opts)
            .unwrap()
            .into_iter()
            .map(|(t, v)| (t, v.as_f64()))
            .collect()
    }

    #[test]
    fn rate_span_vectors() {
        let pts = [
            (1_356_998_400_000, Num::Float(40.0)),
            (1_356_998_400_000 + 2_000_000, Num::Int(50)),
            (1_357_002_000_000, Num::Int(40)),
            (1_357_002_000_000 + 5_000, Num::Float(50.0)),
            (1_357_005_600_000, Num::Int(40)),
            (1_357_005_600_000 + 2_000_000, Num::Float(50.0)),
        ];
        let got = r(&pts, &RateOptions::default());
        let want = [
            40.0 / 1_356_998_400.0,
            10.0 / 2000.0,
            -10.0 / 1600.0,
            10.0 / 5.0,
            -10.0 / 3595.0,
            10.0 / 2000.0,
        ];
        assert_eq!(got.len(), 6);
        for (g, w) in got.iter().zip(want) {
            assert!((g.1 - w).abs() < 1e-12, "{g:?} vs {w}");
        }
        let counter = RateOptions {
            counter: true,
            counter_max: 70,
            ..RateOptions::default()
        };
        let got = r(&pts, &counter);
        assert!((got[2].1 - 60.0 / 1600.0).abs() < 1e-12);
        assert!((got[4].1 - 60.0 / 3595.0).abs() < 1e-12);
        assert!((got[3].1 - 2.0).abs() < 1e-12);
    }

    fn every30(values: &[i64]) -> Vec<(i64, Num)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (1_356_998_430_000 + i as i64 * 30_000, Num::Int(*v)))
            .collect()
    }

    #[test]
    fn counter_wrap_at_long_max() {
        let pts = every30(&[i64::MAX - 55, i64::MAX - 25, 5]);
        let opts = RateOptions {
            counter: true,
            ..RateOptions::default()
        };
        let got = r(&pts, &opts);
        assert_eq!(got[1].1, 1.0);
        assert_eq!(got[2].1, 1.0);
    }

    #[test]
    fn counter_max_set() {
        let opts = RateOptions {
            counter: true,
            counter_max: 100,
            ..RateOptions::default()
        };
        let got = r(&every30(&[45, 75, 5]), &opts);
        assert_eq!((got[1].1, got[2].1), (1.0, 1.0));
    }

    #[test]
    fn reset_value() {
        let opts = RateOptions {
            counter: true,
            counter_max: 10_000,
            reset_value: 35,
            drop_resets: false,
        };
        let got = r(&every30(&[45, 75, 25]), &opts);
        assert_eq!((got[1].1, got[2].1), (1.0, 0.0));
        // without a reset value the roll-over rate is reported
        let opts = RateOptions {
            reset_value: 0,
            ..opts
        };
        let got = r(&every30(&[45, 75, 25]), &opts);
        assert!((got[2].1 - (10_000.0 - 75.0 + 25.0) / 30.0).abs() < 1e-9);
    }

    #[test]
    fn drop_resets() {
        let opts = RateOptions {
            counter: true,
            drop_resets: true,
            ..RateOptions::default()
        };
        let got = r(&every30(&[45, 75, 25, 55]), &opts);
        let ts: Vec<i64> = got.iter().map(|p| p.0).collect();
        assert_eq!(
            ts,
            [1_356_998_430_000, 1_356_998_460_000, 1_356_998_520_000]
        );
        assert_eq!((got[1].1, got[2].1), (1.0, 1.0));
    }

    #[test]
    fn drop_resets_rate_span() {
        let pts: Vec<(i64, Num)> = [40, 50, 40, 50]
            .iter()
            .enumerate()
            .map(|(i, v)| (1_356_998_400_000 + i as i64 * 1000, Num::Int(*v)))
            .collect();
        let opts = RateOptions {
            counter: true,
            reset_value: 1,
            drop_resets: true,
            ..RateOptions::default()
        };
        let got = r(&pts, &opts);
        assert_eq!(got.len(), 3);
        assert!((got[0].1 - 40.0 / 1_356_998_400.0).abs() < 1e-15);
        assert_eq!((got[1].1, got[2].1), (10.0, 10.0));
        assert_eq!(got[2].0, 1_356_998_403_000);
    }

    #[test]
    fn non_increasing_timestamps_fail() {
        let pts = [(1000, Num::Int(1)), (1000, Num::Int(2))];
        let e = rates(&pts, &RateOptions::default()).unwrap_err();
        assert_eq!(
            e.message(),
            "Next timestamp (1000) is supposed to be strictly greater than the previous one \
             (1000), but it's not."
        );
    }
}
