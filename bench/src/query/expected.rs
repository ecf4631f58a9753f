//! Expected answers with OpenTSDB's semantics, computed from the generated
//! data, and the comparison of an answer against them.
//!
//! * Downsampling: epoch-aligned buckets `[b, b + I)` with `b = ts - ts % I`,
//!   labelled by `b`; only points with `start <= ts < end` count.
//! * Cross-series aggregation (`avg`, `max`, `sum`): over the union of the
//!   series' timestamps; a series contributes its own value at `t`, or the
//!   linear interpolation of its neighbours when `t` lies inside its range,
//!   and nothing outside its range (OpenTSDB's `AggregationIterator`).
//!
//! Every expected value carries a tolerance: each raw value may have been
//! stored as a 4-byte float (relative error 2^-24 < [`REL`]), and sums and
//! averages carry their inputs' tolerances along. A real fault (a missing
//! point, a wrong bucket) moves a value by far more.

use std::collections::BTreeMap;

/// Relative tolerance of one stored value (16× the 4-byte float rounding).
pub const REL: f64 = 1e-6;

/// Absolute tolerance floor (double arithmetic in another order).
const ABS: f64 = 1e-9;

/// An aggregation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    Avg,
    Max,
    Sum,
}

/// One expected value and how far an answer may be from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    pub ts: i64,
    pub value: f64,
    pub tol: f64,
}

/// Raw points as expected values.
pub fn raw(points: impl IntoIterator<Item = (i64, f64)>) -> Vec<Expected> {
    points
        .into_iter()
        .map(|(ts, value)| Expected {
            ts,
            value,
            tol: value.abs() * REL,
        })
        .collect()
}

/// Reduces `values` (non-empty) with `agg`, tolerances alongside.
fn reduce(agg: Agg, values: &[(f64, f64)]) -> (f64, f64) {
    let n = values.len() as f64;
    match agg {
        Agg::Sum => values
            .iter()
            .fold((0.0, 0.0), |(s, t), (v, vt)| (s + v, t + vt)),
        Agg::Avg => {
            let (s, t) = reduce(Agg::Sum, values);
            (s / n, t / n)
        }
        Agg::Max => values
            .iter()
            .fold((f64::NEG_INFINITY, 0.0), |(m, t), &(v, vt)| {
                (m.max(v), t.max(vt))
            }),
    }
}

/// Downsamples one series (sorted by time) into epoch-aligned buckets of
/// `interval_ms`, counting only points with `start_ms <= ts < end_ms`.
pub fn downsample(
    points: &[Expected],
    interval_ms: i64,
    agg: Agg,
    start_ms: i64,
    end_ms: i64,
) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut bucket: Option<i64> = None;
    let mut values: Vec<(f64, f64)> = Vec::new();
    let mut flush = |b: Option<i64>, values: &mut Vec<(f64, f64)>| {
        if let Some(ts) = b
            && !values.is_empty()
        {
            let (value, tol) = reduce(agg, values);
            out.push(Expected { ts, value, tol });
        }
        values.clear();
    };
    for p in points.iter().filter(|p| p.ts >= start_ms && p.ts < end_ms) {
        let b = p.ts - p.ts.rem_euclid(interval_ms);
        if bucket != Some(b) {
            flush(bucket, &mut values);
            bucket = Some(b);
        }
        values.push((p.value, p.tol));
    }
    flush(bucket, &mut values);
    out
}

/// Aggregates several series (each sorted by time) into one, OpenTSDB style.
pub fn aggregate(series: &[Vec<Expected>], agg: Agg) -> Vec<Expected> {
    let mut times: Vec<i64> = series.iter().flatten().map(|p| p.ts).collect();
    times.sort_unstable();
    times.dedup();
    // Per series, the index of the first point at or after the current time.
    let mut cursor = vec![0usize; series.len()];
    let mut values = Vec::with_capacity(series.len());
    let mut out = Vec::with_capacity(times.len());
    for &t in &times {
        values.clear();
        for (s, pts) in series.iter().enumerate() {
            let i = &mut cursor[s];
            while *i < pts.len() && pts[*i].ts < t {
                *i += 1;
            }
            match pts.get(*i) {
                Some(p) if p.ts == t => values.push((p.value, p.tol)),
                Some(next) if *i > 0 => {
                    let prev = pts[*i - 1];
                    let f = (t - prev.ts) as f64 / (next.ts - prev.ts) as f64;
                    values.push((
                        prev.value + (next.value - prev.value) * f,
                        prev.tol.max(next.tol),
                    ));
                }
                _ => {}
            }
        }
        if !values.is_empty() {
            let (value, tol) = reduce(agg, &values);
            out.push(Expected { ts: t, value, tol });
        }
    }
    out
}

/// Series answers keyed by what distinguishes them (host name, metric, or
/// `""` for a single series): `(timestamp ms, value)` sorted by time.
pub type SeriesAnswer = BTreeMap<String, Vec<(i64, f64)>>;

/// What an answer must be.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedAnswer {
    Series(BTreeMap<String, Vec<Expected>>),
    /// The last point; some query languages do not return its timestamp.
    Last(Expected),
}

/// What a server answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Series(SeriesAnswer),
    Last { ts: Option<i64>, value: f64 },
}

impl Answer {
    /// Values in the answer (for points/s figures).
    pub fn values(&self) -> u64 {
        match self {
            Answer::Series(s) => s.values().map(|v| v.len() as u64).sum(),
            Answer::Last { .. } => 1,
        }
    }
}

fn close(got: f64, want: &Expected) -> bool {
    (got - want.value).abs() <= want.tol + ABS * want.value.abs().max(1.0)
}

/// Compares an answer with the expectation; `Err` says the first difference.
pub fn check(expected: &ExpectedAnswer, got: &Answer) -> Result<(), String> {
    match (expected, got) {
        (ExpectedAnswer::Last(want), Answer::Last { ts, value }) => {
            if let Some(ts) = ts
                && *ts != want.ts
            {
                return Err(format!("last point at {ts} ms, expected {} ms", want.ts));
            }
            if !close(*value, want) {
                return Err(format!("last value {value}, expected {}", want.value));
            }
            Ok(())
        }
        (ExpectedAnswer::Series(want), Answer::Series(got)) => {
            let missing: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).collect();
            let extra: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(format!(
                    "{} series expected, {} answered; missing {:?}, unexpected {:?}",
                    want.len(),
                    got.len(),
                    first(&missing),
                    first(&extra)
                ));
            }
            for (key, want) in want {
                let got = &got[key];
                let label = if key.is_empty() {
                    String::new()
                } else {
                    format!("{key}: ")
                };
                if got.len() != want.len() {
                    let ts = |v: Option<i64>| v.map_or("-".to_string(), |t| t.to_string());
                    return Err(format!(
                        "{label}{} points answered, {} expected (answered {}..{}, expected {}..{})",
                        got.len(),
                        want.len(),
                        ts(got.first().map(|p| p.0)),
                        ts(got.last().map(|p| p.0)),
                        ts(want.first().map(|p| p.ts)),
                        ts(want.last().map(|p| p.ts)),
                    ));
                }
                for ((ts, v), w) in got.iter().zip(want) {
                    if *ts != w.ts {
                        return Err(format!(
                            "{label}point at {ts} ms, expected one at {} ms",
                            w.ts
                        ));
                    }
                    if !close(*v, w) {
                        return Err(format!(
                            "{label}value at {ts} ms is {v}, expected {} (± {:.2e})",
                            w.value, w.tol
                        ));
                    }
                }
            }
            Ok(())
        }
        (ExpectedAnswer::Last(_), Answer::Series(_)) => {
            Err("expected a last point, got series".into())
        }
        (ExpectedAnswer::Series(_), Answer::Last { .. }) => {
            Err("expected series, got a last point".into())
        }
    }
}

fn first<'a>(keys: &[&'a String]) -> Vec<&'a String> {
    keys.iter().take(3).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::rng::SplitMix64;

    fn series(seed: u64, n: usize, step: i64, offset: i64) -> Vec<Expected> {
        let mut rng = SplitMix64::new(seed);
        raw((0..n).map(|i| {
            (
                offset + i as i64 * step,
                rng.range(0, 10_000) as f64 / 100.0,
            )
        }))
    }

    /// Naive reference: for each bucket, scan every point.
    fn naive_downsample(
        pts: &[Expected],
        interval: i64,
        agg: Agg,
        start: i64,
        end: i64,
    ) -> Vec<(i64, f64)> {
        let mut out = Vec::new();
        let mut b = start - start.rem_euclid(interval);
        while b < end {
            let vals: Vec<f64> = pts
                .iter()
                .filter(|p| p.ts >= b && p.ts < b + interval && p.ts >= start && p.ts < end)
                .map(|p| p.value)
                .collect();
            if !vals.is_empty() {
                let v = match agg {
                    Agg::Sum => vals.iter().sum(),
                    Agg::Avg => vals.iter().sum::<f64>() / vals.len() as f64,
                    Agg::Max => vals.iter().cloned().fold(f64::MIN, f64::max),
                };
                out.push((b, v));
            }
            b += interval;
        }
        out
    }

    #[test]
    fn downsample_matches_naive_reference() {
        let pts = series(7, 1000, 10_000, 1_700_000_000_000);
        for agg in [Agg::Avg, Agg::Max, Agg::Sum] {
            for (interval, start, end) in [
                (60_000, 1_700_000_000_000, 1_700_003_600_000),
                (3_600_000, 1_699_999_000_000, 1_700_020_000_000),
                (60_000, 1_700_000_005_000, 1_700_000_500_000),
            ] {
                let got = downsample(&pts, interval, agg, start, end);
                let want = naive_downsample(&pts, interval, agg, start, end);
                assert_eq!(got.len(), want.len());
                for (g, (ts, v)) in got.iter().zip(&want) {
                    assert_eq!(g.ts, *ts);
                    assert!((g.value - v).abs() < 1e-9, "{agg:?} {} vs {v}", g.value);
                    assert!(g.tol > 0.0 || *v == 0.0);
                }
            }
        }
    }

    #[test]
    fn aligned_aggregation_matches_naive_reference() {
        let all: Vec<Vec<Expected>> = (0..20).map(|s| series(s, 50, 10_000, 0)).collect();
        for agg in [Agg::Avg, Agg::Max, Agg::Sum] {
            let got = aggregate(&all, agg);
            assert_eq!(got.len(), 50);
            for (i, g) in got.iter().enumerate() {
                let vals: Vec<f64> = all.iter().map(|s| s[i].value).collect();
                let v = match agg {
                    Agg::Sum => vals.iter().sum(),
                    Agg::Avg => vals.iter().sum::<f64>() / 20.0,
                    Agg::Max => vals.iter().cloned().fold(f64::MIN, f64::max),
                };
                assert_eq!(g.ts, i as i64 * 10_000);
                assert!((g.value - v).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn interpolates_inside_a_series_range_only() {
        let a = raw([(0, 1.0), (10, 3.0)]);
        let b = raw([(5, 10.0)]);
        let got: Vec<(i64, f64)> = aggregate(&[a, b], Agg::Sum)
            .iter()
            .map(|e| (e.ts, e.value))
            .collect();
        assert_eq!(got, [(0, 1.0), (5, 12.0), (10, 3.0)]);
    }

    #[test]
    fn checks_report_the_first_difference() {
        let want = ExpectedAnswer::Series(BTreeMap::from([(
            "host_0".to_string(),
            raw([(0, 1.5), (60_000, 2.25)]),
        )]));
        let ok = Answer::Series(BTreeMap::from([(
            "host_0".to_string(),
            vec![(0, 1.5), (60_000, 2.25 + 1e-7)],
        )]));
        assert_eq!(check(&want, &ok), Ok(()));
        let wrong = Answer::Series(BTreeMap::from([(
            "host_0".to_string(),
            vec![(0, 1.5), (60_000, 2.5)],
        )]));
        let err = check(&want, &wrong).expect_err("wrong value");
        assert!(err.contains("host_0: value at 60000 ms is 2.5"), "{err}");
        let short = Answer::Series(BTreeMap::from([("host_0".to_string(), vec![(0, 1.5)])]));
        assert!(
            check(&want, &short)
                .expect_err("short")
                .contains("1 points answered, 2 expected")
        );
        let other = Answer::Series(BTreeMap::from([("host_1".to_string(), vec![])]));
        assert!(check(&want, &other).expect_err("keys").contains("missing"));
        let last = ExpectedAnswer::Last(raw([(10, 4.0)])[0]);
        assert_eq!(
            check(
                &last,
                &Answer::Last {
                    ts: None,
                    value: 4.0
                }
            ),
            Ok(())
        );
        assert!(
            check(
                &last,
                &Answer::Last {
                    ts: Some(20),
                    value: 4.0
                }
            )
            .is_err()
        );
    }
}
