//! What PromQL functions compute, with Prometheus 2.42's arithmetic: the
//! range functions (`rate` with its extrapolation, `*_over_time`,
//! `deriv`, …), the element-wise math functions, `histogram_quantile`,
//! `sort`, `label_replace`/`label_join`. Pure: the evaluator
//! (`eval::calls`) reads the arguments and calls these.

use regex::Regex;

use super::failure::execution;
use super::value::{Labels, Sample};
use crate::error::QueryError;

/// Neumaier's compensated sum step, as Prometheus 2.42 sums
/// (`kahanSumInc`).
fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}

/// Prometheus' φ-quantile of `values` (linear between the closest ranks).
pub(super) fn quantile(q: f64, values: &mut [f64]) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    // NaN first, as Prometheus' heap orders them.
    values.sort_by(|x, y| match (x.is_nan(), y.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => x.total_cmp(y),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    values[lower as usize] * (1.0 - weight) + values[upper as usize] * weight
}

/// `rate`, `increase` and `delta`: the change over the window, extrapolated
/// to its edges (Prometheus' `extrapolatedRate`).
fn extrapolated(
    samples: &[(i64, f64)],
    range_start: i64,
    range_end: i64,
    counter: bool,
    rate: bool,
) -> Option<f64> {
    let (&(first_t, first_v), &(last_t, last_v)) = (samples.first()?, samples.last()?);
    if samples.len() < 2 {
        return None;
    }
    let mut result = last_v - first_v;
    if counter {
        let mut previous = 0.0;
        for &(_, v) in samples {
            if v < previous {
                result += previous;
            }
            previous = v;
        }
    }
    let mut to_start = (first_t - range_start) as f64 / 1000.0;
    let to_end = (range_end - last_t) as f64 / 1000.0;
    let sampled = (last_t - first_t) as f64 / 1000.0;
    let average = sampled / (samples.len() - 1) as f64;
    if counter && result > 0.0 && first_v >= 0.0 {
        let to_zero = sampled * (first_v / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = average * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        average / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        average / 2.0
    };
    result *= interval / sampled;
    if rate {
        result /= (range_end - range_start) as f64 / 1000.0;
    }
    Some(result)
}

/// `irate` and `idelta`: from the last two samples.
fn instant_change(samples: &[(i64, f64)], rate: bool) -> Option<f64> {
    let [.., (prev_t, prev_v), (last_t, last_v)] = samples else {
        return None;
    };
    let mut result = if rate && last_v < prev_v {
        *last_v
    } else {
        last_v - prev_v
    };
    let interval = last_t - prev_t;
    if interval == 0 {
        return None;
    }
    if rate {
        result /= interval as f64 / 1000.0;
    }
    Some(result)
}

/// Least squares over (seconds from `intercept_ms`, value).
fn linear_regression(samples: &[(i64, f64)], intercept_ms: i64) -> (f64, f64) {
    let first = samples.first().map_or(0.0, |s| s.1);
    if samples.iter().all(|s| s.1 == first) {
        return if first.is_infinite() {
            (f64::NAN, f64::NAN)
        } else {
            (0.0, first)
        };
    }
    let (mut n, mut sx, mut cx, mut sy, mut cy, mut sxy, mut cxy, mut sx2, mut cx2) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &(t, v) in samples {
        n += 1.0;
        let x = (t - intercept_ms) as f64 / 1000.0;
        (sx, cx) = kahan_inc(x, sx, cx);
        (sy, cy) = kahan_inc(v, sy, cy);
        (sxy, cxy) = kahan_inc(x * v, sxy, cxy);
        (sx2, cx2) = kahan_inc(x * x, sx2, cx2);
    }
    let (sx, sy, sxy, sx2) = (sx + cx, sy + cy, sxy + cxy, sx2 + cx2);
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

/// A `*_over_time` function of the window's values.
fn over_time(name: &str, values: &[f64], param: f64) -> f64 {
    match name {
        "sum_over_time" => {
            let (s, c) = values
                .iter()
                .fold((0.0, 0.0), |(s, c), &v| kahan_inc(v, s, c));
            if s.is_infinite() { s } else { s + c }
        }
        "avg_over_time" => {
            let (mut mean, mut count, mut c) = (0.0_f64, 0.0_f64, 0.0_f64);
            for &v in values {
                count += 1.0;
                if mean.is_infinite() {
                    if v.is_infinite() && (mean > 0.0) == (v > 0.0) {
                        continue;
                    }
                    if !v.is_infinite() && !v.is_nan() {
                        continue;
                    }
                }
                (mean, c) = kahan_inc(v / count - mean / count, mean, c);
            }
            if mean.is_infinite() { mean } else { mean + c }
        }
        "min_over_time" => values
            .iter()
            .fold(f64::NAN, |m, &v| if v < m || m.is_nan() { v } else { m }),
        "max_over_time" => values
            .iter()
            .fold(f64::NAN, |m, &v| if v > m || m.is_nan() { v } else { m }),
        "count_over_time" => values.len() as f64,
        "present_over_time" => 1.0,
        "last_over_time" => values.last().copied().unwrap_or(f64::NAN),
        "stddev_over_time" | "stdvar_over_time" => {
            let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &v in values {
                count += 1.0;
                let delta = v - (mean + c_mean);
                (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
                (aux, c_aux) = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux);
            }
            let var = (aux + c_aux) / count;
            if name == "stddev_over_time" {
                var.sqrt()
            } else {
                var
            }
        }
        "quantile_over_time" => quantile(param, &mut values.to_vec()),
        "changes" => values
            .windows(2)
            .filter(|w| w[0] != w[1] && !(w[0].is_nan() && w[1].is_nan()))
            .count() as f64,
        "resets" => values.windows(2).filter(|w| w[1] < w[0]).count() as f64,
        _ => f64::NAN,
    }
}

/// The math functions of one value.
pub(super) fn math(name: &str, v: f64) -> Option<f64> {
    Some(match name {
        "abs" => v.abs(),
        "ceil" => v.ceil(),
        "floor" => v.floor(),
        "exp" => v.exp(),
        "sqrt" => v.sqrt(),
        "ln" => v.ln(),
        "log2" => v.log2(),
        "log10" => v.log10(),
        "sgn" => {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }
        "acos" => v.acos(),
        "acosh" => v.acosh(),
        "asin" => v.asin(),
        "asinh" => v.asinh(),
        "atan" => v.atan(),
        "atanh" => v.atanh(),
        "cos" => v.cos(),
        "cosh" => v.cosh(),
        "sin" => v.sin(),
        "sinh" => v.sinh(),
        "tan" => v.tan(),
        "tanh" => v.tanh(),
        "deg" => v * 180.0 / std::f64::consts::PI,
        "rad" => v * std::f64::consts::PI / 180.0,
        _ => return None,
    })
}

/// `histogram_quantile` of classic buckets: series grouped by their
/// labels but `le`, Prometheus' `bucketQuantile`; the answer loses the
/// metric name (two histograms left with one label set are refused by the
/// evaluator, as Prometheus refuses them).
pub(super) fn histogram_quantile(q: f64, samples: Vec<Sample>) -> Vec<Sample> {
    let mut groups: Vec<(Labels, Vec<(f64, f64)>)> = Vec::new();
    let mut index: std::collections::HashMap<Labels, usize> = std::collections::HashMap::new();
    let excluded = ["le".to_string()];
    for s in samples {
        // A sample without a bucket bound is no bucket.
        let Some(bound) = s.labels.get("le").and_then(|le| le.parse::<f64>().ok()) else {
            continue;
        };
        let key = s.labels.project(&excluded, false);
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push((bound, s.value));
    }
    groups
        .into_iter()
        .map(|(labels, buckets)| Sample {
            labels: labels.without_name(),
            value: bucket_quantile(q, buckets),
        })
        .collect()
}

fn bucket_quantile(q: f64, mut buckets: Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|x, y| x.0.total_cmp(&y.0));
    if buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        return f64::NAN;
    }
    // Buckets of one bound add up; counts never fall.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for (bound, count) in buckets {
        match merged.last_mut() {
            Some(last) if last.0 == bound => last.1 += count,
            _ => merged.push((bound, count)),
        }
    }
    let mut max = f64::NEG_INFINITY;
    for b in &mut merged {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
    if merged.len() < 2 {
        return f64::NAN;
    }
    let observations = merged[merged.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let searched = &merged[..merged.len() - 1];
    let b = searched.partition_point(|x| x.1 < rank);
    if b == merged.len() - 1 {
        return merged[merged.len() - 2].0;
    }
    if b == 0 && merged[0].0 <= 0.0 {
        return merged[0].0;
    }
    let (mut start, end, mut count) = (0.0, merged[b].0, merged[b].1);
    if b > 0 {
        start = merged[b - 1].0;
        count -= merged[b - 1].1;
        rank -= merged[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// A date function of unix seconds, in UTC (`hour`, `day_of_week`, …),
/// exactly as Prometheus computes it with Go: `time.Unix(int64(v), 0)`,
/// where a NaN, infinite or out-of-range `v` converts to the smallest
/// int64 (amd64's conversion), and Go's calendar arithmetic runs on
/// seconds since January 1 of year -292277022399, wrapping at 2^64 (so
/// `year(vector(NaN))` is 292277026596, as Prometheus answers).
pub(super) fn date_part(name: &str, seconds: f64) -> f64 {
    use crate::civil::{civil_from_days, days_from_civil};
    /// Go's `absoluteZeroYear`.
    const ABSOLUTE_ZERO_YEAR: i64 = -292_277_022_399;
    /// Go's `unixToInternal + internalToAbsolute`: seconds from the
    /// absolute zero to the unix epoch.
    const UNIX_TO_ABSOLUTE: i64 = 62_135_596_800 + 9_223_371_966_579_724_800;
    let unix = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&seconds) {
        seconds as i64
    } else {
        i64::MIN
    };
    let absolute = unix.wrapping_add(UNIX_TO_ABSOLUTE) as u64;
    // Below 2^64 / 86400: fits an i64.
    let days = (absolute / 86_400) as i64;
    // Year -292277022399 starts a 400-year cycle as year 1 does, so the
    // calendar is year 1's, shifted.
    let (y, month, day) = civil_from_days(days_from_civil(1, 1, 1) + days);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let value = match name {
        "day_of_month" => day,
        // January 1 of the absolute zero year is a Monday.
        "day_of_week" => (days + 1) % 7,
        "day_of_year" => days_from_civil(y, month, day) - days_from_civil(y, 1, 1) + 1,
        "days_in_month" => match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        },
        "hour" => (absolute % 86_400 / 3600) as i64,
        "minute" => (absolute % 3600 / 60) as i64,
        "month" => month,
        "year" => y - 1 + ABSOLUTE_ZERO_YEAR,
        _ => return f64::NAN,
    };
    value as f64
}

/// Prometheus' label-name rule.
pub(super) fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The vector's label sets must stay unique after a label function.
pub(super) fn check_unique(samples: &[Sample]) -> Result<(), QueryError> {
    let mut seen = std::collections::HashSet::with_capacity(samples.len());
    if samples.iter().all(|s| seen.insert(&s.labels)) {
        Ok(())
    } else {
        Err(execution(
            "vector cannot contain metrics with the same labelset",
        ))
    }
}

/// The value of a range function (`rate`, `*_over_time`, …) of one
/// series' window `[range_start, range_end]`, evaluated at `t`; `None`:
/// no value (too few samples).
/// `holt_winters(m, sf, tf)` of one series' samples (double exponential
/// smoothing, Prometheus 2.42's `funcHoltWinters`); `None` below two
/// samples. The factors are checked by the caller.
pub(super) fn holt_winters(samples: &[(i64, f64)], sf: f64, tf: f64) -> Option<f64> {
    let [(_, first), (_, second), ..] = samples else {
        return None;
    };
    let (mut s0, mut s1, mut trend) = (0.0, *first, second - first);
    for (i, &(_, v)) in samples.iter().enumerate().skip(1) {
        let x = sf * v;
        // The trend at the previous sample (the first one's is given).
        if i > 1 {
            trend = tf * (s1 - s0) + (1.0 - tf) * trend;
        }
        let y = (1.0 - sf) * (s1 + trend);
        (s0, s1) = (s1, x + y);
    }
    Some(s1)
}

/// Go's `%f` (six decimals), for holt_winters' messages.
pub(super) fn go_f(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.6}")
    } else {
        super::float_text::go_v(v)
    }
}

pub(super) fn range_value(
    name: &str,
    samples: &[(i64, f64)],
    range_start: i64,
    range_end: i64,
    t: i64,
    param: f64,
) -> Option<f64> {
    match name {
        "rate" => extrapolated(samples, range_start, range_end, true, true),
        "increase" => extrapolated(samples, range_start, range_end, true, false),
        "delta" => extrapolated(samples, range_start, range_end, false, false),
        "irate" => instant_change(samples, true),
        "idelta" => instant_change(samples, false),
        "deriv" => (samples.len() >= 2).then(|| linear_regression(samples, samples[0].0).0),
        "predict_linear" => (samples.len() >= 2).then(|| {
            let (slope, intercept) = linear_regression(samples, t);
            intercept + slope * param
        }),
        _ => {
            let values: Vec<f64> = samples.iter().map(|s| s.1).collect();
            Some(over_time(name, &values, param))
        }
    }
}

/// Whether `name` is a range function [`range_value`] computes.
pub(super) fn is_range_function(name: &str) -> bool {
    matches!(
        name,
        "rate"
            | "increase"
            | "delta"
            | "irate"
            | "idelta"
            | "deriv"
            | "predict_linear"
            | "sum_over_time"
            | "avg_over_time"
            | "min_over_time"
            | "max_over_time"
            | "count_over_time"
            | "present_over_time"
            | "last_over_time"
            | "stddev_over_time"
            | "stdvar_over_time"
            | "quantile_over_time"
            | "double_exponential_smoothing"
            | "changes"
            | "resets"
    )
}

/// `sort` and `sort_desc`: NaN to the bottom either way.
pub(super) fn sort_samples(descending: bool, v: &mut [Sample]) {
    v.sort_by(|x, y| match (x.value.is_nan(), y.value.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ if descending => y.value.total_cmp(&x.value),
        _ => x.value.total_cmp(&y.value),
    });
}

/// `label_replace`: where the anchored `pattern` matches `src`'s value,
/// `dst` becomes the expanded `replacement` (removed when empty).
pub(super) fn label_replace(
    mut samples: Vec<Sample>,
    dst: &str,
    replacement: &str,
    src: &str,
    pattern: &str,
) -> Result<Vec<Sample>, QueryError> {
    let pattern = super::go_regex::expand_quotes(pattern);
    let re = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
        execution(format!(
            "invalid regular expression in label_replace(): {e}"
        ))
    })?;
    if !valid_label_name(dst) {
        return Err(execution(format!(
            "invalid destination label name in label_replace(): {dst}"
        )));
    }
    for s in &mut samples {
        let value = s.labels.get(src).unwrap_or("");
        if let Some(caps) = re.captures(value) {
            let mut replaced = String::new();
            caps.expand(replacement, &mut replaced);
            s.labels = s.labels.with(dst, &replaced);
        }
    }
    check_unique(&samples)?;
    Ok(samples)
}

/// `label_join`: `dst` becomes the `sources`' values joined by `separator`.
pub(super) fn label_join(
    mut samples: Vec<Sample>,
    dst: &str,
    separator: &str,
    sources: &[String],
) -> Result<Vec<Sample>, QueryError> {
    if let Some(src) = sources.iter().find(|s| !valid_label_name(s)) {
        return Err(execution(format!(
            "invalid source label name in label_join(): {src}"
        )));
    }
    if !valid_label_name(dst) {
        return Err(execution(format!(
            "invalid destination label name in label_join(): {dst}"
        )));
    }
    for s in &mut samples {
        let joined = sources
            .iter()
            .map(|src| s.labels.get(src).unwrap_or(""))
            .collect::<Vec<_>>()
            .join(separator);
        s.labels = s.labels.with(dst, &joined);
    }
    check_unique(&samples)?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_parts_are_gos_even_past_any_calendar() {
        // Prometheus 2.42's answers (amd64), and ordinary dates.
        for (name, v, want) in [
            ("hour", f64::NAN, 15.0),
            ("year", f64::INFINITY, 292_277_026_596.0),
            ("minute", f64::NEG_INFINITY, 30.0),
            ("year", 1e13, 318_857.0),
            ("day_of_year", -1e13, 225.0),
            ("month", 2f64.powi(62), 6.0),
            ("year", 1_700_000_000.0, 2023.0),
            ("month", 1_700_000_000.0, 11.0),
            ("day_of_month", 1_700_000_000.0, 14.0),
            ("hour", 1_700_000_000.0, 22.0),
            ("minute", 1_700_000_000.0, 13.0),
            ("day_of_year", 1_700_000_000.0, 318.0),
            // 2023-11-14 was a Tuesday; 1970-01-01 a Thursday.
            ("day_of_week", 1_700_000_000.0, 2.0),
            ("day_of_week", 0.0, 4.0),
            ("day_of_week", -1.0, 3.0),
            ("days_in_month", 951_782_400.0, 29.0), // 2000-02-29
            ("days_in_month", 4_107_456_000.0, 28.0), // 2100-02-28
            ("year", -1.5, 1969.0),
        ] {
            assert_eq!(date_part(name, v), want, "{name}({v})");
        }
    }

    #[test]
    fn rate_extrapolates_as_prometheus_does() {
        // A counter at 100, 110, 120, 130 every 15 s from 10 s, in a
        // window of 0–60 s: 30 over the 45 s sampled; the 10 s to the
        // start and the 5 s to the end are under 1.1 intervals, so the
        // change is extrapolated over both.
        let samples: Vec<(i64, f64)> = (0..4)
            .map(|i| (10_000 + i * 15_000, 100.0 + i as f64 * 10.0))
            .collect();
        let r = extrapolated(&samples, 0, 60_000, true, true).unwrap_or_default();
        let want = 30.0 * ((45.0 + 10.0 + 5.0) / 45.0) / 60.0;
        assert!((r - want).abs() < 1e-12, "{r} {want}");
        // From 0, a counter cannot have started before its first sample:
        // nothing is extrapolated to the start.
        let from_zero: Vec<(i64, f64)> = samples.iter().map(|&(t, v)| (t, v - 100.0)).collect();
        let r = extrapolated(&from_zero, 0, 60_000, true, true).unwrap_or_default();
        let want = 30.0 * ((45.0 + 5.0) / 45.0) / 60.0;
        assert!((r - want).abs() < 1e-12, "{r} {want}");
        // A counter reset adds the value before it.
        let reset = [(0, 5.0), (15_000, 8.0), (30_000, 2.0)];
        let inc = extrapolated(&reset, 0, 30_000, true, false).unwrap_or_default();
        assert!((inc - 5.0).abs() < 1e-12, "{inc}");
        assert_eq!(extrapolated(&[(0, 1.0)], 0, 60_000, true, true), None);
    }

    #[test]
    fn quantile_interpolates_between_ranks() {
        let mut v = vec![1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(0.5, &mut v), 2.5);
        assert_eq!(quantile(0.0, &mut v), 1.0);
        assert_eq!(quantile(1.0, &mut v), 4.0);
        assert_eq!(quantile(1.5, &mut v), f64::INFINITY);
        assert!(quantile(0.5, &mut []).is_nan());
        // NaN sorts first, as in Prometheus.
        assert_eq!(quantile(0.5, &mut [2.0, f64::NAN, 1.0]), 1.0);
    }

    #[test]
    fn over_time_functions() {
        let v = [1.0, 3.0, 3.0, 2.0];
        assert_eq!(over_time("sum_over_time", &v, 0.0), 9.0);
        assert_eq!(over_time("avg_over_time", &v, 0.0), 2.25);
        assert_eq!(over_time("min_over_time", &v, 0.0), 1.0);
        assert_eq!(over_time("max_over_time", &v, 0.0), 3.0);
        assert_eq!(over_time("changes", &v, 0.0), 2.0);
        assert_eq!(over_time("resets", &v, 0.0), 1.0);
        assert!((over_time("stdvar_over_time", &v, 0.0) - 0.6875).abs() < 1e-12);
    }

    #[test]
    fn bucket_quantiles_as_prometheus_computes_them() {
        let b = vec![(0.1, 10.0), (0.5, 30.0), (f64::INFINITY, 40.0)];
        // Rank 20 falls in (0.1, 0.5]: 10 of its 20.
        assert!((bucket_quantile(0.5, b.clone()) - 0.3).abs() < 1e-12);
        // In the +Inf bucket: the bound below it.
        assert_eq!(bucket_quantile(0.9, b.clone()), 0.5);
        assert!(bucket_quantile(0.5, vec![(0.1, 1.0)]).is_nan());
        assert_eq!(bucket_quantile(-1.0, b), f64::NEG_INFINITY);
    }

    #[test]
    fn regression_slope_per_second() {
        let s = [(0, 1.0), (10_000, 2.0), (20_000, 3.0)];
        let (slope, intercept) = linear_regression(&s, 0);
        assert!((slope - 0.1).abs() < 1e-12 && (intercept - 1.0).abs() < 1e-12);
    }
}
