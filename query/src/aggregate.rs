//! The 35 OpenTSDB aggregation functions (spec §5.7).
//!
//! This module owns the registry ([`AGGREGATOR_NAMES`], [`Aggregator::from_name`]),
//! each function's interpolation mode, and the two evaluation modes OpenTSDB
//! distinguishes: integer mode ([`Aggregator::run_long`], Java `long`
//! arithmetic, wrapping) and double mode ([`Aggregator::run_double`], with the
//! per-function NaN rules). The cross-series iteration that feeds these lives
//! in [`crate::merge`]; per-bucket use lives in [`crate::downsample`].
//!
//! Gotchas copied on purpose: `avg` truncates in integer mode; `ep*`
//! percentiles ignore their estimation type in double mode; `min`/`max` return
//! NaN when they only saw NaN; `mult` lets NaN propagate.

use crate::error::QueryError;

/// Every registered aggregator name, exactly as `/api/aggregators` lists them.
pub const AGGREGATOR_NAMES: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "none",
    "median",
    "mult",
    "dev",
    "diff",
    "count",
    "zimsum",
    "mimmin",
    "mimmax",
    "first",
    "last",
    "pfsum",
    "squareSum",
    "p999",
    "p99",
    "p95",
    "p90",
    "p75",
    "p50",
    "ep999r3",
    "ep99r3",
    "ep95r3",
    "ep90r3",
    "ep75r3",
    "ep50r3",
    "ep999r7",
    "ep99r7",
    "ep95r7",
    "ep90r7",
    "ep75r7",
    "ep50r7",
];

/// How the cross-series iterator fills in a series that has no point at the
/// emitted timestamp (spec §5.6 step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpolation {
    /// Linear interpolation between the surrounding points.
    Lerp,
    /// Zero if missing.
    Zim,
    /// The type's maximum (so `min` ignores the series).
    Max,
    /// The type's minimum (so `max` ignores the series).
    Min,
    /// The previous value.
    Prev,
}

/// Percentile estimation flavours of Apache Commons Math used by OpenTSDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Estimation {
    Legacy,
    R3,
    R7,
}

/// An aggregation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregator {
    /// `sum`
    Sum,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `avg`
    Avg,
    /// `none` (no grouping; one result per series)
    None,
    /// `median`
    Median,
    /// `mult`
    Mult,
    /// `dev` (population standard deviation)
    Dev,
    /// `diff`
    Diff,
    /// `count`
    Count,
    /// `zimsum`
    Zimsum,
    /// `mimmin`
    Mimmin,
    /// `mimmax`
    Mimmax,
    /// `first`
    First,
    /// `last`
    Last,
    /// `pfsum`
    Pfsum,
    /// `squareSum`
    SquareSum,
    /// `p999`
    P999,
    /// `p99`
    P99,
    /// `p95`
    P95,
    /// `p90`
    P90,
    /// `p75`
    P75,
    /// `p50`
    P50,
    /// `ep999r3`
    Ep999r3,
    /// `ep99r3`
    Ep99r3,
    /// `ep95r3`
    Ep95r3,
    /// `ep90r3`
    Ep90r3,
    /// `ep75r3`
    Ep75r3,
    /// `ep50r3`
    Ep50r3,
    /// `ep999r7`
    Ep999r7,
    /// `ep99r7`
    Ep99r7,
    /// `ep95r7`
    Ep95r7,
    /// `ep90r7`
    Ep90r7,
    /// `ep75r7`
    Ep75r7,
    /// `ep50r7`
    Ep50r7,
}

/// Registry order matches [`AGGREGATOR_NAMES`].
pub(crate) const ALL: [Aggregator; 35] = [
    Aggregator::Sum,
    Aggregator::Min,
    Aggregator::Max,
    Aggregator::Avg,
    Aggregator::None,
    Aggregator::Median,
    Aggregator::Mult,
    Aggregator::Dev,
    Aggregator::Diff,
    Aggregator::Count,
    Aggregator::Zimsum,
    Aggregator::Mimmin,
    Aggregator::Mimmax,
    Aggregator::First,
    Aggregator::Last,
    Aggregator::Pfsum,
    Aggregator::SquareSum,
    Aggregator::P999,
    Aggregator::P99,
    Aggregator::P95,
    Aggregator::P90,
    Aggregator::P75,
    Aggregator::P50,
    Aggregator::Ep999r3,
    Aggregator::Ep99r3,
    Aggregator::Ep95r3,
    Aggregator::Ep90r3,
    Aggregator::Ep75r3,
    Aggregator::Ep50r3,
    Aggregator::Ep999r7,
    Aggregator::Ep99r7,
    Aggregator::Ep95r7,
    Aggregator::Ep90r7,
    Aggregator::Ep75r7,
    Aggregator::Ep50r7,
];

impl Aggregator {
    /// Looks up a registry name (case-sensitive, like OpenTSDB).
    pub fn from_name(name: &str) -> Option<Aggregator> {
        AGGREGATOR_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| ALL[i])
    }

    /// The registry name.
    pub fn name(self) -> &'static str {
        // ALL and AGGREGATOR_NAMES are parallel arrays; the position always exists.
        let i = ALL.iter().position(|a| *a == self).unwrap_or(0);
        AGGREGATOR_NAMES[i]
    }

    /// The interpolation used for series missing a point (spec §0 table).
    pub fn interpolation(self) -> Interpolation {
        use Aggregator::*;
        match self {
            Zimsum | Count | None | First | Last | SquareSum => Interpolation::Zim,
            Mimmin => Interpolation::Max,
            Mimmax => Interpolation::Min,
            Pfsum => Interpolation::Prev,
            _ => Interpolation::Lerp,
        }
    }

    fn percentile(self) -> Option<(f64, Estimation)> {
        use Aggregator::*;
        use Estimation::*;
        Some(match self {
            P999 => (99.9, Legacy),
            P99 => (99.0, Legacy),
            P95 => (95.0, Legacy),
            P90 => (90.0, Legacy),
            P75 => (75.0, Legacy),
            P50 => (50.0, Legacy),
            Ep999r3 => (99.9, R3),
            Ep99r3 => (99.0, R3),
            Ep95r3 => (95.0, R3),
            Ep90r3 => (90.0, R3),
            Ep75r3 => (75.0, R3),
            Ep50r3 => (50.0, R3),
            Ep999r7 => (99.9, R7),
            Ep99r7 => (99.0, R7),
            Ep95r7 => (95.0, R7),
            Ep90r7 => (90.0, R7),
            Ep75r7 => (75.0, R7),
            Ep50r7 => (50.0, R7),
            _ => return Option::None,
        })
    }

    /// Integer mode (`runLong`): Java `long` arithmetic, overflow wraps.
    ///
    /// `values` are the participating series' values in series order; the
    /// cross-series iterator never calls this with an empty slice.
    pub fn run_long(self, values: &[i64]) -> Result<i64, QueryError> {
        use Aggregator::*;
        let (&first, rest) = values
            .split_first()
            .ok_or_else(|| QueryError::Execution("no values to aggregate".into()))?;
        Ok(match self {
            Sum | Zimsum | Pfsum => rest.iter().fold(first, |a, v| a.wrapping_add(*v)),
            Min | Mimmin => rest.iter().fold(first, |a, v| a.min(*v)),
            Max | Mimmax => rest.iter().fold(first, |a, v| a.max(*v)),
            Avg => {
                let sum = rest.iter().fold(first, |a, v| a.wrapping_add(*v));
                // n >= 1, so this cannot overflow.
                sum / values.len() as i64
            }
            Median => {
                let mut sorted = values.to_vec();
                sorted.sort_unstable();
                sorted[sorted.len() / 2]
            }
            Mult => rest.iter().fold(first, |a, v| a.wrapping_mul(*v)),
            Dev => {
                let as_f: Vec<f64> = values.iter().map(|v| *v as f64).collect();
                // Java casts with (long): truncation, NaN -> 0, saturating.
                welford_population_dev(&as_f) as i64
            }
            Diff => match rest.last() {
                Some(last) => last.wrapping_sub(first),
                Option::None => 0,
            },
            Count => values.len() as i64,
            First => first,
            Last => rest.last().copied().unwrap_or(first),
            SquareSum => rest.iter().fold(first.wrapping_mul(first), |a, v| {
                a.wrapping_add(v.wrapping_mul(*v))
            }),
            None => {
                if !rest.is_empty() {
                    return Err(more_than_one());
                }
                first
            }
            _ => {
                let (p, est) = self.percentile().unwrap_or((50.0, Estimation::Legacy));
                let mut sorted: Vec<f64> = values.iter().map(|v| *v as f64).collect();
                sorted.sort_unstable_by(f64::total_cmp);
                percentile(&sorted, p, est) as i64
            }
        })
    }

    /// Double mode (`runDouble`) with OpenTSDB's NaN handling per function.
    pub fn run_double(self, values: &[f64]) -> Result<f64, QueryError> {
        use Aggregator::*;
        let non_nan = || values.iter().copied().filter(|v| !v.is_nan());
        Ok(match self {
            Sum | Zimsum | Pfsum => {
                let mut n = 0usize;
                let mut sum = 0.0;
                for v in non_nan() {
                    sum += v;
                    n += 1;
                }
                if n == 0 { f64::NAN } else { sum }
            }
            SquareSum => {
                let mut n = 0usize;
                let mut sum = 0.0;
                for v in non_nan() {
                    sum += v * v;
                    n += 1;
                }
                if n == 0 { f64::NAN } else { sum }
            }
            Min | Mimmin => {
                let Some((&initial, rest)) = values.split_first() else {
                    return Ok(f64::NAN);
                };
                let mut min = if initial.is_nan() {
                    f64::INFINITY
                } else {
                    initial
                };
                for &v in rest {
                    if !v.is_nan() && v < min {
                        min = v;
                    }
                }
                if min == f64::INFINITY { f64::NAN } else { min }
            }
            Max | Mimmax => {
                let Some((&initial, rest)) = values.split_first() else {
                    return Ok(f64::NAN);
                };
                let mut max = if initial.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    initial
                };
                for &v in rest {
                    if !v.is_nan() && v > max {
                        max = v;
                    }
                }
                if max == f64::NEG_INFINITY {
                    f64::NAN
                } else {
                    max
                }
            }
            Avg => {
                let mut n = 0usize;
                let mut sum = 0.0;
                for v in non_nan() {
                    sum += v;
                    n += 1;
                }
                if n == 0 { f64::NAN } else { sum / n as f64 }
            }
            Median => {
                let mut sorted: Vec<f64> = non_nan().collect();
                if sorted.is_empty() {
                    f64::NAN
                } else {
                    sorted.sort_unstable_by(f64::total_cmp);
                    sorted[sorted.len() / 2]
                }
            }
            Mult => {
                let Some((&first, rest)) = values.split_first() else {
                    return Ok(f64::NAN);
                };
                rest.iter().fold(first, |a, v| a * v)
            }
            Dev => {
                let vals: Vec<f64> = non_nan().collect();
                if vals.is_empty() {
                    f64::NAN
                } else {
                    welford_population_dev(&vals)
                }
            }
            Diff => {
                // First non-NaN value; then the very last value (NaN or not).
                let Some(first_idx) = values.iter().position(|v| !v.is_nan()) else {
                    return Ok(f64::NAN);
                };
                if first_idx + 1 == values.len() {
                    0.0
                } else {
                    values[values.len() - 1] - values[first_idx]
                }
            }
            Count => non_nan().count() as f64,
            First => values.first().copied().unwrap_or(f64::NAN),
            Last => values.last().copied().unwrap_or(f64::NAN),
            None => {
                if values.len() > 1 {
                    return Err(more_than_one());
                }
                values.first().copied().unwrap_or(f64::NAN)
            }
            _ => {
                // Double mode always uses the LEGACY estimator, even for ep*.
                let (p, _) = self.percentile().unwrap_or((50.0, Estimation::Legacy));
                let mut sorted: Vec<f64> = non_nan().collect();
                sorted.sort_unstable_by(f64::total_cmp);
                percentile(&sorted, p, Estimation::Legacy)
            }
        })
    }
}

fn more_than_one() -> QueryError {
    QueryError::Execution("More than one value in aggregator".into())
}

/// Welford's running variance as OpenTSDB writes it; population deviation.
/// `values` must be non-empty; a single value gives 0.
fn welford_population_dev(values: &[f64]) -> f64 {
    let Some((&first, rest)) = values.split_first() else {
        return f64::NAN;
    };
    if rest.is_empty() {
        return 0.0;
    }
    let mut old_mean = first;
    let mut n: i64 = 2;
    let mut m2 = 0.0;
    for &x in rest {
        let new_mean = old_mean + (x - old_mean) / n as f64;
        m2 += (x - old_mean) * (x - new_mean);
        old_mean = new_mean;
        n += 1;
    }
    (m2 / (n - 1) as f64).sqrt()
}

/// Apache Commons Math 3.6.1 `Percentile.evaluate` over sorted data.
fn percentile(sorted: &[f64], p: f64, est: Estimation) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n == 1 {
        return sorted[0];
    }
    let q = p / 100.0;
    let len = n as f64;
    let pos = match est {
        Estimation::Legacy => {
            if q == 0.0 {
                0.0
            } else if q == 1.0 {
                len
            } else {
                q * (len + 1.0)
            }
        }
        Estimation::R3 => {
            if q <= 0.5 / len {
                0.0
            } else {
                (len * q).round_ties_even()
            }
        }
        Estimation::R7 => {
            if q == 0.0 {
                0.0
            } else if q == 1.0 {
                len
            } else {
                1.0 + (len - 1.0) * q
            }
        }
    };
    let fpos = pos.floor();
    let dif = pos - fpos;
    if pos < 1.0 {
        return sorted[0];
    }
    if pos >= len {
        return sorted[n - 1];
    }
    let int_pos = fpos as usize;
    let lower = sorted[int_pos - 1];
    let upper = sorted[int_pos];
    lower + dif * (upper - lower)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    #[test]
    fn registry_round_trip() {
        assert_eq!(AGGREGATOR_NAMES.len(), 35);
        for name in AGGREGATOR_NAMES {
            let agg = Aggregator::from_name(name).unwrap();
            assert_eq!(agg.name(), *name);
        }
        assert_eq!(Aggregator::from_name("Sum"), None);
        assert_eq!(Aggregator::from_name("raw"), None);
        assert_eq!(Aggregator::from_name("squaresum"), None);
    }

    #[test]
    fn interpolation_modes() {
        use Interpolation::*;
        let expect = [
            ("sum", Lerp),
            ("min", Lerp),
            ("max", Lerp),
            ("avg", Lerp),
            ("dev", Lerp),
            ("median", Lerp),
            ("mult", Lerp),
            ("diff", Lerp),
            ("p99", Lerp),
            ("ep50r3", Lerp),
            ("zimsum", Zim),
            ("count", Zim),
            ("none", Zim),
            ("first", Zim),
            ("last", Zim),
            ("squareSum", Zim),
            ("mimmin", Max),
            ("mimmax", Min),
            ("pfsum", Prev),
        ];
        for (name, mode) in expect {
            assert_eq!(
                Aggregator::from_name(name).unwrap().interpolation(),
                mode,
                "{name}"
            );
        }
    }

    fn agg(name: &str) -> Aggregator {
        Aggregator::from_name(name).unwrap()
    }

    #[test]
    fn median_vectors() {
        assert_eq!(agg("median").run_long(&[5, 2, -1, 400, 3]).unwrap(), 3);
        assert_eq!(agg("median").run_long(&[5, 2, -1, 400, 3, -42]).unwrap(), 3);
        assert_eq!(
            agg("median")
                .run_double(&[5.1, 2.434, -1.99, 400.69487, 3.15168])
                .unwrap(),
            3.15168
        );
        assert!(agg("median").run_double(&[]).unwrap().is_nan());
        assert!(agg("median").run_double(&[f64::NAN]).unwrap().is_nan());
    }

    #[test]
    fn dev_vectors() {
        assert_eq!(agg("dev").run_double(&[1.0, 2.0]).unwrap(), 0.5);
        assert_eq!(agg("dev").run_long(&[1, 2]).unwrap(), 0);
        assert_eq!(agg("dev").run_long(&[42]).unwrap(), 0);
        assert_eq!(agg("dev").run_double(&[42.0]).unwrap(), 0.0);
        assert!(agg("dev").run_double(&[f64::NAN]).unwrap().is_nan());
        assert_eq!(agg("dev").run_double(&[3.0, f64::NAN]).unwrap(), 0.0);
        let big: Vec<f64> = (0..10_000).map(f64::from).collect();
        let d = agg("dev").run_double(&big).unwrap();
        assert!((d - 2_886.751_331_5).abs() < 1e-6, "{d}");
        let big_l: Vec<i64> = (0..10_000).collect();
        assert_eq!(agg("dev").run_long(&big_l).unwrap(), 2886);
    }

    #[test]
    fn percentiles_one_to_thousand() {
        let vals: Vec<i64> = (1..=1000).collect();
        let cases = [
            ("p50", 500),
            ("p75", 750),
            ("p90", 900),
            ("p95", 950),
            ("p99", 990),
            ("p999", 999),
            ("ep50r3", 500),
            ("ep75r3", 750),
            ("ep90r3", 900),
            ("ep95r3", 950),
            ("ep99r3", 990),
            ("ep999r3", 999),
            ("ep50r7", 500),
            ("ep75r7", 750),
            ("ep90r7", 900),
            ("ep95r7", 950),
            ("ep99r7", 990),
            ("ep999r7", 999),
        ];
        for (name, want) in cases {
            assert_eq!(agg(name).run_long(&vals).unwrap(), want, "{name}");
        }
        // double mode: ep* use LEGACY too, NaN skipped, empty -> NaN
        let d: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(
            agg("ep90r7").run_double(&d).unwrap(),
            agg("p90").run_double(&d).unwrap()
        );
        assert!(agg("p99").run_double(&[f64::NAN]).unwrap().is_nan());
        assert_eq!(agg("p50").run_double(&[7.0]).unwrap(), 7.0);
    }

    #[test]
    fn percentile_estimators_differ_on_small_sets() {
        // n = 4, p = 50: LEGACY pos 2.5 -> 2.5; R3 rint(2.0) = 2 -> x2 = 2; R7 pos 2.5 -> 2.5
        let v = [1, 2, 3, 4];
        assert_eq!(agg("p50").run_long(&v).unwrap(), 2);
        assert_eq!(agg("ep50r3").run_long(&v).unwrap(), 2);
        assert_eq!(agg("ep50r7").run_long(&v).unwrap(), 2);
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 50.0, Estimation::Legacy), 2.5);
        assert_eq!(percentile(&sorted, 50.0, Estimation::R3), 2.0);
        assert_eq!(percentile(&sorted, 50.0, Estimation::R7), 2.5);
        assert_eq!(percentile(&sorted, 99.9, Estimation::Legacy), 4.0);
        assert_eq!(percentile(&sorted, 10.0, Estimation::R3), 1.0);
    }

    #[test]
    fn long_mode_basics() {
        let v = [3, -1, 7];
        assert_eq!(agg("sum").run_long(&v).unwrap(), 9);
        assert_eq!(agg("zimsum").run_long(&v).unwrap(), 9);
        assert_eq!(agg("pfsum").run_long(&v).unwrap(), 9);
        assert_eq!(agg("min").run_long(&v).unwrap(), -1);
        assert_eq!(agg("mimmin").run_long(&v).unwrap(), -1);
        assert_eq!(agg("max").run_long(&v).unwrap(), 7);
        assert_eq!(agg("mimmax").run_long(&v).unwrap(), 7);
        assert_eq!(agg("avg").run_long(&[300, 1]).unwrap(), 150);
        assert_eq!(agg("avg").run_long(&[-3, 0]).unwrap(), -1);
        assert_eq!(agg("mult").run_long(&v).unwrap(), -21);
        assert_eq!(agg("diff").run_long(&v).unwrap(), 4);
        assert_eq!(agg("diff").run_long(&[5]).unwrap(), 0);
        assert_eq!(agg("count").run_long(&v).unwrap(), 3);
        assert_eq!(agg("first").run_long(&v).unwrap(), 3);
        assert_eq!(agg("last").run_long(&v).unwrap(), 7);
        assert_eq!(agg("squareSum").run_long(&v).unwrap(), 59);
        assert_eq!(agg("none").run_long(&[4]).unwrap(), 4);
        assert_eq!(
            agg("none").run_long(&[4, 5]).unwrap_err().message(),
            "More than one value in aggregator"
        );
        assert_eq!(agg("sum").run_long(&[i64::MAX, 1]).unwrap(), i64::MIN);
    }

    #[test]
    fn double_mode_nan_rules() {
        let nan = f64::NAN;
        assert!(agg("sum").run_double(&[nan, nan]).unwrap().is_nan());
        assert_eq!(agg("sum").run_double(&[nan, 2.0, 3.0]).unwrap(), 5.0);
        assert_eq!(agg("min").run_double(&[nan, 2.0, 1.0]).unwrap(), 1.0);
        assert!(agg("min").run_double(&[nan]).unwrap().is_nan());
        assert_eq!(agg("max").run_double(&[2.0, nan, 1.0]).unwrap(), 2.0);
        assert!(agg("max").run_double(&[nan, nan]).unwrap().is_nan());
        assert_eq!(agg("avg").run_double(&[nan, 2.0, 4.0]).unwrap(), 3.0);
        assert!(agg("avg").run_double(&[nan]).unwrap().is_nan());
        assert_eq!(agg("count").run_double(&[nan, 2.0, 4.0]).unwrap(), 2.0);
        assert!(agg("mult").run_double(&[nan, 2.0]).unwrap().is_nan());
        assert_eq!(agg("mult").run_double(&[1.5, 2.0]).unwrap(), 3.0);
        assert_eq!(agg("diff").run_double(&[nan, 1.0, 4.0]).unwrap(), 3.0);
        assert_eq!(agg("diff").run_double(&[nan, 1.0]).unwrap(), 0.0);
        assert!(agg("diff").run_double(&[1.0, nan]).unwrap().is_nan());
        assert_eq!(agg("squareSum").run_double(&[nan, 2.0, 3.0]).unwrap(), 13.0);
        assert_eq!(agg("first").run_double(&[2.0, 3.0]).unwrap(), 2.0);
        assert_eq!(agg("last").run_double(&[2.0, 3.0]).unwrap(), 3.0);
        assert_eq!(agg("p50").run_double(&[nan, 1.0, 2.0, 3.0]).unwrap(), 2.0);
    }
}
