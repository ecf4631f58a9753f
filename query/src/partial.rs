//! Partial aggregates: what a downsample bucket keeps of its values for the
//! aggregators that decompose (`sum`, `zimsum`, `pfsum`, `avg`, `count`,
//! `min`, `max`, `mimmin`, `mimmax`, `first`, `last`), so that a source may
//! hand over a whole hour of a series as its [`Partial`] (a native cell's
//! summary) instead of its points, with the same answer to the bit.
//!
//! The rule that makes it exact: a bucket's values are folded **per hour
//! row** (`⌊ts / 3 600 000⌋`) in time order, as OpenTSDB folds a bucket,
//! and the hours' partials are then merged in time order. Counts, extremes
//! and first/last values come out as a single fold would give them; a sum
//! over several hours is the sum of the hours' sums (`0.0 + h₀ + h₁ + …`),
//! which may differ from one running sum (see `docs/http-api.md`). A bucket
//! within one hour row — every bucket of an interval that divides an hour —
//! is exactly OpenTSDB's fold; buckets of other intervals (7m, 45m) and of
//! calendar and `all` downsampling may span rows.

use crate::aggregate::Aggregator;

/// One hour in milliseconds: the row a partial fold restarts at.
pub const HOUR_MS: i64 = 3_600_000;

/// The decomposable aggregates of a run of values in time order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Partial {
    /// Values that are not NaN.
    pub valid: u64,
    /// Smallest non-NaN value by `<` (the earliest of equal ones); NaN if none.
    pub min: f64,
    /// Largest non-NaN value by `>` (the earliest of equal ones); NaN if none.
    pub max: f64,
    /// `0.0 + v₀ + v₁ + …` over the non-NaN values; NaN if none.
    pub sum: f64,
    /// The first and last value, NaN included; `None` before any value.
    pub first: Option<f64>,
    pub last: Option<f64>,
}

impl Default for Partial {
    fn default() -> Self {
        Partial::EMPTY
    }
}

impl Partial {
    /// No values yet.
    pub const EMPTY: Partial = Partial {
        valid: 0,
        min: f64::NAN,
        max: f64::NAN,
        sum: f64::NAN,
        first: None,
        last: None,
    };

    /// True before any value.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Folds in the next value.
    #[inline]
    pub fn push(&mut self, v: f64) {
        if self.first.is_none() {
            self.first = Some(v);
        }
        self.last = Some(v);
        if v.is_nan() {
            return;
        }
        if self.valid == 0 {
            self.min = v;
            self.max = v;
            self.sum = 0.0 + v;
        } else {
            if v < self.min {
                self.min = v;
            }
            if v > self.max {
                self.max = v;
            }
            self.sum += v;
        }
        self.valid += 1;
    }

    /// Merges the partial of the values that follow this one's.
    pub fn merge(&mut self, later: &Partial) {
        if later.is_empty() {
            return;
        }
        if self.first.is_none() {
            self.first = later.first;
        }
        self.last = later.last;
        if later.valid == 0 {
            return;
        }
        if self.valid == 0 {
            self.min = later.min;
            self.max = later.max;
            self.sum = 0.0 + later.sum;
        } else {
            if later.min < self.min {
                self.min = later.min;
            }
            if later.max > self.max {
                self.max = later.max;
            }
            self.sum += later.sum;
        }
        self.valid += later.valid;
    }

    /// The aggregator's value of a non-empty partial, with the NaN rules of
    /// [`Aggregator::run_double`]; `None` for an aggregator that does not
    /// decompose.
    pub fn value(&self, agg: Aggregator) -> Option<f64> {
        use Aggregator::*;
        let none = self.valid == 0;
        Some(match agg {
            Sum | Zimsum | Pfsum => {
                if none {
                    f64::NAN
                } else {
                    self.sum
                }
            }
            Avg => {
                if none {
                    f64::NAN
                } else {
                    self.sum / self.valid as f64
                }
            }
            Count => self.valid as f64,
            // A lone infinity reads as "no value", as in run_double.
            Min | Mimmin if none || self.min == f64::INFINITY => f64::NAN,
            Min | Mimmin => self.min,
            Max | Mimmax if none || self.max == f64::NEG_INFINITY => f64::NAN,
            Max | Mimmax => self.max,
            First => self.first.unwrap_or(f64::NAN),
            Last => self.last.unwrap_or(f64::NAN),
            _ => return Option::None,
        })
    }
}

/// True if `agg`'s downsample buckets are computed from [`Partial`]s.
pub fn decomposes(agg: Aggregator) -> bool {
    Partial::EMPTY.value(agg).is_some()
}

/// True if `agg`'s value of merged partials is the same whichever way
/// the merges are grouped: counts, extremes and first/last values, not
/// the sums (floating-point addition does not associate).
pub fn merges_exactly(agg: Aggregator) -> bool {
    use Aggregator::*;
    matches!(agg, Count | Min | Max | Mimmin | Mimmax | First | Last)
}

/// A bucket's values folded per hour row and merged (the module's rule).
#[derive(Debug, Clone, Copy)]
pub struct HourFold {
    /// The hours before the current one, merged.
    done: Partial,
    /// The current hour's values.
    hour: Partial,
    /// The end of the current hour (exclusive, ms): a sorted value at or
    /// after it starts the next hour without a division per value.
    hour_end: i64,
}

impl Default for HourFold {
    fn default() -> Self {
        HourFold {
            done: Partial::EMPTY,
            hour: Partial::EMPTY,
            hour_end: i64::MIN,
        }
    }
}

impl HourFold {
    /// Adds a value at `ts`; values come in increasing time order.
    #[inline]
    pub fn push(&mut self, ts: i64, v: f64) {
        if ts >= self.hour_end {
            self.done.merge(&self.hour);
            self.hour = Partial::EMPTY;
            self.hour_end = (ts - ts.rem_euclid(HOUR_MS)).saturating_add(HOUR_MS);
        }
        self.hour.push(v);
    }

    /// Adds a whole hour's partial, or a span of whole hours' merged in
    /// order (after every value of earlier hours and none of its own).
    pub fn push_hour(&mut self, hour_partial: &Partial) {
        self.done.merge(&self.hour);
        self.hour = Partial::EMPTY;
        self.done.merge(hour_partial);
        self.hour_end = i64::MIN;
    }

    /// True before any value.
    pub fn is_empty(&self) -> bool {
        self.done.is_empty() && self.hour.is_empty()
    }

    /// Everything folded, the fold left empty for the next bucket.
    pub fn take(&mut self) -> Partial {
        let folded = std::mem::take(self);
        let mut all = folded.done;
        all.merge(&folded.hour);
        all
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    const DECOMPOSING: [Aggregator; 11] = [
        Aggregator::Sum,
        Aggregator::Zimsum,
        Aggregator::Pfsum,
        Aggregator::Avg,
        Aggregator::Count,
        Aggregator::Min,
        Aggregator::Max,
        Aggregator::Mimmin,
        Aggregator::Mimmax,
        Aggregator::First,
        Aggregator::Last,
    ];

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Tricky values: NaN, signed zeros, infinities, and decimals whose
    /// sums round.
    fn values(seed: u64, n: usize) -> Vec<f64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 11 {
                    0 => f64::NAN,
                    1 => 0.0,
                    2 => -0.0,
                    3 if x.is_multiple_of(7) => f64::INFINITY,
                    4 if x.is_multiple_of(7) => f64::NEG_INFINITY,
                    _ => (x % 20_001) as f64 / 100.0 - 100.0,
                }
            })
            .collect()
    }

    #[test]
    fn within_one_hour_every_decomposing_aggregator_is_run_double() {
        for seed in 1..200 {
            let vals = values(seed, (seed % 40) as usize + 1);
            let mut fold = HourFold::default();
            for (i, v) in vals.iter().enumerate() {
                fold.push(i as i64 * 1000, *v);
            }
            let p = fold.take();
            for agg in DECOMPOSING {
                let want = agg.run_double(&vals).unwrap();
                let got = p.value(agg).unwrap();
                assert!(same(got, want), "{agg:?} {vals:?}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn whole_hour_partials_give_the_bits_of_the_values() {
        for seed in 1..200 {
            let vals = values(seed, 3 * 30);
            // The same values as points, and with hours 0 and 2 as partials.
            let ts = |i: usize| (i / 30) as i64 * HOUR_MS + (i % 30) as i64 * 1000;
            let mut by_points = HourFold::default();
            for (i, v) in vals.iter().enumerate() {
                by_points.push(ts(i), *v);
            }
            let mut by_hours = HourFold::default();
            let partial_of = |hour: &[f64]| {
                let mut p = Partial::EMPTY;
                hour.iter().for_each(|v| p.push(*v));
                p
            };
            by_hours.push_hour(&partial_of(&vals[..30]));
            for (i, v) in vals.iter().enumerate().take(60).skip(30) {
                by_hours.push(ts(i), *v);
            }
            by_hours.push_hour(&partial_of(&vals[60..]));
            let (a, b) = (by_points.take(), by_hours.take());
            for agg in DECOMPOSING {
                let (x, y) = (a.value(agg).unwrap(), b.value(agg).unwrap());
                assert!(same(x, y), "{agg:?}: {x} vs {y}");
            }
            // Extremes, counts and ends are those of one fold over all.
            for agg in [Aggregator::Min, Aggregator::Max, Aggregator::Count] {
                let want = agg.run_double(&vals).unwrap();
                assert!(same(a.value(agg).unwrap(), want), "{agg:?}");
            }
            assert!(same(a.value(Aggregator::First).unwrap(), vals[0]));
            assert!(same(a.value(Aggregator::Last).unwrap(), vals[89]));
        }
    }

    #[test]
    fn a_sum_over_hours_is_the_sum_of_the_hour_sums() {
        let mut fold = HourFold::default();
        fold.push(0, 0.1);
        fold.push(1, 0.2);
        fold.push(HOUR_MS, 0.3);
        let p = fold.take();
        assert_eq!(p.sum, 0.0 + (0.0 + 0.1 + 0.2) + (0.0 + 0.3));
        assert!(fold.is_empty());
        assert!(!decomposes(Aggregator::Dev) && !decomposes(Aggregator::P99));
        assert!(decomposes(Aggregator::Avg));
    }
}
