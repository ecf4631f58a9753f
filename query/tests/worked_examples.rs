//! End-to-end numbers through the public API: OpenTSDB's `BaseTsdbTest` data
//! sets served by an in-memory [`SeriesSource`], checked against the results
//! of `TestTsdbQueryAggregators`, `TestTsdbQueryQueries` and
//! `TestTsdbQueryDownsample` (spec §5.8–§5.10), plus Grafana's request bodies
//! (clients.md §1.4) and the rendered JSON.

#![allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test

use std::sync::Arc;

use hourglass_query::{
    FetchRequest, Num, QueryResult, Series, SeriesSource, SeriesTag, SourceError, TsQuery, execute,
    parse_json_query, parse_query_string, render_json,
};

const START: i64 = 1_356_998_400;
const END: i64 = 1_357_041_600;
const METRIC: &str = "sys.cpu.user";

/// An in-memory store. Ignores filters on purpose: `execute` must re-apply them.
struct Mock {
    series: Vec<(String, Series)>,
}

impl SeriesSource for Mock {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        if !self.series.iter().any(|(m, _)| m == req.metric) {
            return Err(SourceError::NoSuchName {
                kind: "metrics",
                name: req.metric.to_string(),
            });
        }
        Ok(self
            .series
            .iter()
            .filter(|(m, _)| m == req.metric)
            .map(|(_, s)| Series {
                points: s
                    .points
                    .iter()
                    .copied()
                    .filter(|(ts, _)| *ts >= req.scan_start_ms && *ts < req.scan_end_ms)
                    .collect(),
                ..s.clone()
            })
            .collect())
    }
}

fn tag(k: &str, v: &str, kuid: u8, vuid: u8) -> SeriesTag {
    SeriesTag::named(Arc::from(k), Arc::from(v), u64::from(kuid), u64::from(vuid))
}

/// host=web01 (tagv uid 1) or host=web02 (tagv uid 2), metric uid 1.
fn series(host: u8, points: Vec<(i64, Num)>) -> (String, Series) {
    let name = if host == 1 { "web01" } else { "web02" };
    (
        METRIC.to_string(),
        Series {
            tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, host],
            tags: vec![tag("host", name, 1, host)].into(),
            points,
            annotations: Vec::new(),
            downsampled: false,
        },
    )
}

/// `storeLongTimeSeriesSeconds`: web01 1..300 every 30 s from START+30,
/// web02 300..1 (15 s later when `offset`).
fn long_seconds(offset: bool) -> Mock {
    let a = (1..=300)
        .map(|i| ((START + 30 * i) * 1000, Num::Int(i)))
        .collect();
    let base = if offset { START + 15 } else { START };
    let b = (1..=300)
        .map(|k| ((base + 30 * k) * 1000, Num::Int(301 - k)))
        .collect();
    Mock {
        series: vec![series(1, a), series(2, b)],
    }
}

/// `storeLongTimeSeriesMs`: every 500 ms from START*1000+500.
fn long_ms() -> Mock {
    let a = (1..=300)
        .map(|i| (START * 1000 + 500 * i, Num::Int(i)))
        .collect();
    let b = (1..=300)
        .map(|k| (START * 1000 + 500 * k, Num::Int(301 - k)))
        .collect();
    Mock {
        series: vec![series(1, a), series(2, b)],
    }
}

/// `storeFloatTimeSeriesSeconds`: 1.25..76 step 0.25 and 75..0.25.
fn float_seconds(offset: bool) -> Mock {
    let a = (0..300)
        .map(|i| {
            (
                (START + 30 * (i + 1)) * 1000,
                Num::Float(1.25 + 0.25 * i as f64),
            )
        })
        .collect();
    let base = if offset { START + 15 } else { START };
    let b = (0..300)
        .map(|i| {
            (
                (base + 30 * (i + 1)) * 1000,
                Num::Float(75.0 - 0.25 * i as f64),
            )
        })
        .collect();
    Mock {
        series: vec![series(1, a), series(2, b)],
    }
}

/// `storeLongTimeSeriesWithMissingData`: every 10 s; web01 value i+1 skipped
/// when i % 3 == 0; web02 value 300-i skipped when even.
fn missing() -> Mock {
    let a = (0..300)
        .filter(|i| i % 3 != 0)
        .map(|i| ((START + 10 * i) * 1000, Num::Int(i + 1)))
        .collect();
    let b = (0..300)
        .filter(|j| (300 - j) % 2 != 0)
        .map(|j| ((START + 10 * j) * 1000, Num::Int(300 - j)))
        .collect();
    Mock {
        series: vec![series(1, a), series(2, b)],
    }
}

fn run(src: &Mock, m: &str) -> Vec<QueryResult> {
    run_range(src, m, START, END)
}

/// With `show_tsuids`: the results carry their TSUIDs (only then; a wide
/// query's would be a string per series).
fn run_with_tsuids(src: &Mock, m: &str) -> Vec<QueryResult> {
    let mut q = query(m, START, END);
    q.show_tsuids = true;
    execute(&q, src).unwrap()
}

fn run_range(src: &Mock, m: &str, start: i64, end: i64) -> Vec<QueryResult> {
    let q = query(m, start, end);
    execute(&q, src).unwrap()
}

fn query(m: &str, start: i64, end: i64) -> TsQuery {
    let params = vec![
        ("start".to_string(), start.to_string()),
        ("end".to_string(), end.to_string()),
        ("m".to_string(), m.to_string()),
    ];
    parse_query_string(&params, 2_000_000_000_000).unwrap()
}

fn single(results: Vec<QueryResult>) -> QueryResult {
    assert_eq!(results.len(), 1, "{results:?}");
    let r = results.into_iter().next().unwrap();
    assert_eq!(r.metric, METRIC);
    r
}

/// Asserts the aggregated-over-host shape of OpenTSDB's `assertMeta(.., true)`.
fn aggregated(results: Vec<QueryResult>) -> QueryResult {
    let r = single(results);
    assert!(r.tags.is_empty(), "{:?}", r.tags);
    assert_eq!(r.aggregate_tags, ["host"]);
    r
}

fn longs(r: &QueryResult) -> Vec<i64> {
    r.dps
        .iter()
        .map(|(_, v)| match v {
            Num::Int(i) => *i,
            Num::Float(f) => panic!("expected an integer, got {f}"),
        })
        .collect()
}

fn doubles(r: &QueryResult) -> Vec<f64> {
    r.dps
        .iter()
        .map(|(_, v)| match v {
            Num::Float(f) => *f,
            Num::Int(i) => panic!("expected a double, got {i}"),
        })
        .collect()
}

fn timestamps(r: &QueryResult) -> Vec<i64> {
    r.dps.iter().map(|(t, _)| *t).collect()
}

fn every(start_s: i64, step_s: i64, n: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (start_s + step_s * i) * 1000)
        .collect()
}

fn close(got: &[f64], want: &[f64], eps: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g.is_nan() && w.is_nan()) || (g - w).abs() <= eps,
            "index {i}: got {g}, want {w}"
        );
    }
}

// ------------------------------------------------------------- aligned --

#[test]
fn aligned_sum_zimsum_avg_count() {
    let src = long_seconds(false);
    for agg in ["sum", "zimsum"] {
        let r = aggregated(run(&src, &format!("{agg}:{METRIC}")));
        assert_eq!(timestamps(&r), every(START + 30, 30, 300));
        assert!(longs(&r).iter().all(|v| *v == 301), "{agg}");
    }
    let r = aggregated(run(&src, &format!("avg:{METRIC}")));
    assert!(longs(&r).iter().all(|v| *v == 150));
    let r = aggregated(run(&src, &format!("count:{METRIC}")));
    assert!(longs(&r).iter().all(|v| *v == 2));
}

#[test]
fn aligned_min_max_and_mim() {
    let src = long_seconds(false);
    let up_down: Vec<i64> = (1..=150).chain((1..=150).rev()).collect();
    let down_up: Vec<i64> = (151..=300).rev().chain(151..=300).collect();
    for agg in ["min", "mimmin"] {
        assert_eq!(
            longs(&aggregated(run(&src, &format!("{agg}:{METRIC}")))),
            up_down
        );
    }
    for agg in ["max", "mimmax"] {
        assert_eq!(
            longs(&aggregated(run(&src, &format!("{agg}:{METRIC}")))),
            down_up
        );
    }
}

#[test]
fn aligned_dev() {
    let src = long_seconds(false);
    let want: Vec<i64> = (0..=149).rev().chain(0..=149).collect();
    assert_eq!(
        longs(&aggregated(run(&src, &format!("dev:{METRIC}")))),
        want
    );
}

#[test]
fn aligned_floats() {
    let src = float_seconds(false);
    let r = aggregated(run(&src, &format!("zimsum:{METRIC}")));
    close(&doubles(&r), &[76.25; 300], 1e-9);
    let r = aggregated(run(&src, &format!("avg:{METRIC}")));
    close(&doubles(&r), &[38.125; 300], 1e-9);
    let r = aggregated(run(&src, &format!("count:{METRIC}")));
    close(&doubles(&r), &[2.0; 300], 0.0);
    let r = aggregated(run(&src, &format!("dev:{METRIC}")));
    // |web01 - web02| / 2: 36.875 down to 0.125 (148 steps), then 0.125 up
    let want: Vec<f64> = (0..148)
        .map(|i| 36.875 - 0.25 * i as f64)
        .chain((0..152).map(|i| 0.125 + 0.25 * i as f64))
        .collect();
    close(&doubles(&r), &want, 1e-9);
    let r = aggregated(run(&src, &format!("min:{METRIC}")));
    let want: Vec<f64> = (0..148)
        .map(|i| 1.25 + 0.25 * i as f64)
        .chain((0..152).map(|i| 38.0 - 0.25 * i as f64))
        .collect();
    close(&doubles(&r), &want, 1e-9);
}

// -------------------------------------------------------------- offset --

#[test]
fn offset_sum_interpolates_in_integer_mode() {
    let r = aggregated(run(&long_seconds(true), &format!("sum:{METRIC}")));
    assert_eq!(timestamps(&r), every(START + 30, 15, 600));
    let v = longs(&r);
    assert_eq!(v[0], 1);
    assert_eq!(v[599], 1);
    for (i, x) in v.iter().enumerate().take(599).skip(1) {
        assert_eq!(*x, if i % 2 == 1 { 301 } else { 302 }, "index {i}");
    }
}

#[test]
fn offset_avg() {
    let v = longs(&aggregated(run(
        &long_seconds(true),
        &format!("avg:{METRIC}"),
    )));
    assert_eq!(v[0], 1);
    assert_eq!(v[599], 1);
    for (i, x) in v.iter().enumerate().take(599).skip(1) {
        assert_eq!(*x, if i % 2 == 1 { 150 } else { 151 }, "index {i}");
    }
}

#[test]
fn offset_zim_and_mim_alternate() {
    let src = long_seconds(true);
    let want: Vec<i64> = (0..600)
        .map(|i| if i % 2 == 0 { 1 + i / 2 } else { 300 - i / 2 })
        .collect();
    for agg in ["zimsum", "mimmin", "mimmax"] {
        assert_eq!(
            longs(&aggregated(run(&src, &format!("{agg}:{METRIC}")))),
            want,
            "{agg}"
        );
    }
    let fsrc = float_seconds(true);
    let fwant: Vec<f64> = (0..600)
        .map(|i| {
            if i % 2 == 0 {
                1.25 + 0.25 * (i / 2) as f64
            } else {
                75.0 - 0.25 * (i / 2) as f64
            }
        })
        .collect();
    for agg in ["zimsum", "mimmin", "mimmax"] {
        close(
            &doubles(&aggregated(run(&fsrc, &format!("{agg}:{METRIC}")))),
            &fwant,
            1e-9,
        );
    }
}

#[test]
fn offset_count_counts_interpolated_points() {
    let v = longs(&aggregated(run(
        &long_seconds(true),
        &format!("count:{METRIC}"),
    )));
    assert_eq!(v.len(), 600);
    for (i, x) in v.iter().enumerate() {
        assert_eq!(*x, if i == 0 || i == 599 { 1 } else { 2 }, "index {i}");
    }
}

#[test]
fn offset_min_max() {
    // runMinOffset: 1 1 2 2 3 ... the hump is 150 150 151 150 150
    let v = longs(&aggregated(run(
        &long_seconds(true),
        &format!("min:{METRIC}"),
    )));
    let mut want = Vec::new();
    let (mut x, mut counter, mut decrement) = (1i64, 0i64, false);
    for _ in 0..600 {
        want.push(x);
        if counter % 2 != 0 {
            if decrement { x -= 1 } else { x += 1 }
        } else if x == 151 {
            x = 150;
            decrement = true;
            counter -= 1;
        }
        counter += 1;
    }
    assert_eq!(v, want);
    // runMaxOffset
    let v = longs(&aggregated(run(
        &long_seconds(true),
        &format!("max:{METRIC}"),
    )));
    let mut want = Vec::new();
    let (mut x, mut counter, mut decrement) = (1i64, 0i64, true);
    for i in 0..600 {
        want.push(x);
        let ts = (START + 30 + 15 * i) * 1000;
        if x == 1 {
            x = 300;
        } else if ts == 1_357_007_400_000 {
            x = 1;
        } else if counter % 2 == 0 {
            if decrement { x -= 1 } else { x += 1 }
        }
        if x == 150 {
            x = 151;
            decrement = false;
            counter -= 1;
        }
        counter += 1;
    }
    assert_eq!(v, want);
}

#[test]
fn offset_dev() {
    // runDevOffset
    let v = longs(&aggregated(run(
        &long_seconds(true),
        &format!("dev:{METRIC}"),
    )));
    let mut want = Vec::new();
    let (mut x, mut counter, mut decrement) = (0i64, 0i64, true);
    for i in 0..600 {
        want.push(x);
        let ts = (START + 30 + 15 * i) * 1000;
        if ts == 1_356_998_430_000 {
            x = 149;
        } else if ts == 1_357_007_400_000 {
            x = 0;
        } else if counter % 2 == 0 {
            if decrement {
                x -= 1
            } else {
                x += 1
            }
            if x < 0 {
                x = 0;
                decrement = false;
                counter += 1;
            }
        }
        counter += 1;
    }
    assert_eq!(v, want);
}

#[test]
fn offset_float_avg_and_dev() {
    let src = float_seconds(true);
    let v = doubles(&aggregated(run(&src, &format!("avg:{METRIC}"))));
    assert_eq!(v.len(), 600);
    assert_eq!(v[0], 1.25);
    assert_eq!(v[599], 0.25);
    for x in &v[1..599] {
        assert!((x - 38.1875).abs() < 1e-4, "{x}");
    }
    let v = doubles(&aggregated(run(&src, &format!("dev:{METRIC}"))));
    assert_eq!(v[0], 0.0);
    assert!((v[1] - 36.8125).abs() < 1e-4);
    assert_eq!(v[599], 0.0);
}

#[test]
fn offset_percentiles_stay_in_range() {
    let src = long_seconds(true);
    let percentiles = hourglass_query::AGGREGATOR_NAMES
        .iter()
        .filter(|n| n.starts_with("ep") || (n.starts_with('p') && **n != "pfsum"));
    for agg in percentiles {
        let r = aggregated(run(&src, &format!("{agg}:{METRIC}")));
        assert_eq!(r.dps.len(), 600, "{agg}");
        assert!(longs(&r).iter().all(|v| (0..=300).contains(v)), "{agg}");
    }
}

// ---------------------------------------------------------- missing data --

#[test]
fn missing_data_zimsum() {
    let r = aggregated(run(&missing(), &format!("zimsum:{METRIC}")));
    assert_eq!(r.dps.len(), 250);
    for (ts, v) in &r.dps {
        let i = (ts / 1000 - START) / 10;
        let a = (i % 3 != 0).then_some(i + 1);
        let b = ((300 - i) % 2 != 0).then_some(300 - i);
        assert_eq!(*v, Num::Int(a.unwrap_or(0) + b.unwrap_or(0)), "step {i}");
        if a.is_some() && b.is_some() {
            assert_eq!(*v, Num::Int(301));
        }
    }
}

#[test]
fn missing_data_downsample_with_fill() {
    let src = missing();
    let buckets = (END - START) / 30 + 1;
    let r = aggregated(run(&src, &format!("sum:30s-avg-nan:{METRIC}")));
    assert_eq!(timestamps(&r), every(START, 30, buckets as usize));
    let v = doubles(&r);
    assert!(v[..100].iter().all(|x| *x == 301.5));
    assert!(v[100..].iter().all(|x| x.is_nan()));

    let v = doubles(&aggregated(run(
        &src,
        &format!("avg:30s-avg-zero:{METRIC}"),
    )));
    assert!(v[..100].iter().all(|x| *x == 150.75));
    assert!(v[100..].iter().all(|x| *x == 0.0));

    let v = doubles(&aggregated(run(&src, &format!("sum:30s-min-nan:{METRIC}"))));
    for (k, x) in v[..100].iter().enumerate() {
        assert_eq!(*x, if k % 2 == 0 { 301.0 } else { 300.0 });
    }

    let v = doubles(&aggregated(run(&src, &format!("sum:30s-sum-nan:{METRIC}"))));
    for (k, x) in v[..100].iter().enumerate() {
        let want = if k % 2 == 0 {
            304.0 + 3.0 * k as f64
        } else {
            603.0
        };
        assert_eq!(*x, want, "bucket {k}");
    }
}

#[test]
fn null_fill_renders_null_and_nan_fill_renders_string() {
    let src = missing();
    let q = query(&format!("sum:30s-avg-null:{METRIC}"), START, END);
    let body = String::from_utf8(render_json(&q, &execute(&q, &src).unwrap())).unwrap();
    assert!(body.contains("\"1356998400\":301.5,"));
    assert!(
        body.contains(&format!("\"{END}\":null}}")),
        "{}",
        &body[body.len() - 60..]
    );
    let q = query(&format!("sum:30s-avg-nan:{METRIC}"), START, END);
    let body = String::from_utf8(render_json(&q, &execute(&q, &src).unwrap())).unwrap();
    assert!(body.contains(&format!("\"{END}\":\"NaN\"}}")));
}

// ------------------------------------------------ grouping / none / tags --

#[test]
fn none_returns_each_series_in_tsuid_order() {
    assert!(
        run(&long_seconds(false), &format!("none:{METRIC}"))
            .iter()
            .all(|r| r.tsuids.is_empty())
    );
    let results = run_with_tsuids(&long_seconds(false), &format!("none:{METRIC}"));
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[0].tags.get("host").map(String::as_str),
        Some("web01")
    );
    assert_eq!(
        results[1].tags.get("host").map(String::as_str),
        Some("web02")
    );
    assert!(results.iter().all(|r| r.aggregate_tags.is_empty()));
    assert_eq!(results[0].tsuids, ["000001000001000001"]);
    assert_eq!(longs(&results[0]), (1..=300).collect::<Vec<_>>());
    assert_eq!(longs(&results[1]), (1..=300).rev().collect::<Vec<_>>());
}

#[test]
fn group_by_and_filters() {
    let src = long_seconds(false);
    let results = run(&src, &format!("sum:{METRIC}{{host=*}}"));
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[0].tags.get("host").map(String::as_str),
        Some("web01")
    );
    assert_eq!(longs(&results[0]), (1..=300).collect::<Vec<_>>());
    let r = single(run(&src, &format!("sum:{METRIC}{{host=web02}}")));
    assert_eq!(r.tags.get("host").map(String::as_str), Some("web02"));
    assert!(r.aggregate_tags.is_empty());
    let r = single(run(&src, &format!("sum:{METRIC}{{}}{{host=regexp(02$)}}")));
    assert_eq!(longs(&r), (1..=300).rev().collect::<Vec<_>>());
    // a filter on a key no series has matches nothing
    assert!(run(&src, &format!("sum:{METRIC}{{dc=*}}")).is_empty());
    assert!(run(&src, &format!("sum:{METRIC}{{}}{{dc=not_literal_or(x)}}")).is_empty());
    // explicit tags: the series only have `host`
    assert_eq!(
        run(&src, &format!("sum:explicit_tags:{METRIC}{{host=*}}")).len(),
        2
    );
    let mut extra = long_seconds(false);
    let hourglass_query::exec::SeriesTags::Listed(tags) = &mut extra.series[1].1.tags else {
        panic!("the test source lists its tags");
    };
    tags.push(tag("owner", "joe", 3, 9));
    assert_eq!(
        run(&extra, &format!("sum:explicit_tags:{METRIC}{{host=*}}")).len(),
        1
    );
    let r = single(run_with_tsuids(&extra, &format!("sum:{METRIC}")));
    // owner appears in one series only, with one value: it stays in `tags`
    assert_eq!(r.tags.get("owner").map(String::as_str), Some("joe"));
    assert_eq!(r.aggregate_tags, ["host"]);
    assert_eq!(r.tsuids.len(), 2);
}

#[test]
fn unknown_metric_is_no_such_name() {
    let q = query("sum:sys.cpu.nice", START, END);
    let e = execute(&q, &long_seconds(false)).unwrap_err();
    assert_eq!(e.message(), "No such name for 'metrics': 'sys.cpu.nice'");
}

// ------------------------------------------------- downsample and rate --

fn web01(src: Mock) -> Mock {
    Mock {
        series: src.series.into_iter().take(1).collect(),
    }
}

#[test]
fn single_series_downsample_avg_and_count() {
    let src = web01(long_seconds(false));
    let r = single(run(&src, &format!("sum:1m-avg:{METRIC}{{host=web01}}")));
    let v = doubles(&r);
    assert_eq!(v.len(), 151);
    assert_eq!(v[0], 1.0);
    assert_eq!(v[150], 300.0);
    for (i, x) in v.iter().enumerate().take(150).skip(1) {
        assert_eq!(*x, 2.0 * i as f64 + 0.5);
    }
    assert!(timestamps(&r).iter().all(|t| t % 60_000 == 0));
    let v = doubles(&single(run(&src, &format!("sum:1m-count:{METRIC}"))));
    assert_eq!(v.len(), 151);
    assert!(v[1..150].iter().all(|x| *x == 2.0));
    assert_eq!((v[0], v[150]), (1.0, 1.0));
    // ms data with 1s buckets gives the same shape
    let v = doubles(&single(run(
        &web01(long_ms()),
        &format!("sum:1s-avg:{METRIC}"),
    )));
    assert_eq!(v.len(), 151);
    assert_eq!(v[3], 6.5);
}

#[test]
fn downsample_then_rate() {
    let src = web01(long_seconds(false));
    let r = single(run(&src, &format!("sum:1m-avg:rate:{METRIC}")));
    assert_eq!(timestamps(&r), every(START + 60, 60, 150));
    let v = doubles(&r);
    assert!((v[0] - 0.025).abs() < 1e-12);
    assert!((v[149] - 0.025).abs() < 1e-12);
    assert!(v[1..149].iter().all(|x| (x - 2.0 / 60.0).abs() < 1e-12));
}

#[test]
fn rates() {
    let r = single(run(
        &web01(long_seconds(false)),
        &format!("sum:rate:{METRIC}"),
    ));
    assert_eq!(timestamps(&r), every(START + 60, 30, 299));
    assert!(doubles(&r).iter().all(|x| (x - 1.0 / 30.0).abs() < 1e-12));
    let r = single(run(&web01(long_ms()), &format!("sum:rate:{METRIC}")));
    assert_eq!(r.dps.len(), 299);
    assert_eq!(r.dps[0].0, 1_356_998_401_000);
    assert!(doubles(&r).iter().all(|x| *x == 2.0));
}

fn counter_series(values: &[i64]) -> Mock {
    let pts = values
        .iter()
        .enumerate()
        .map(|(i, v)| ((START + 30 * (i as i64 + 1)) * 1000, Num::Int(*v)))
        .collect();
    Mock {
        series: vec![series(1, pts)],
    }
}

#[test]
fn counter_rates() {
    let src = counter_series(&[i64::MAX - 55, i64::MAX - 25, 5]);
    let r = single(run(&src, &format!("sum:rate{{counter}}:{METRIC}")));
    assert_eq!(doubles(&r), [1.0, 1.0]);
    let r = single(run(
        &counter_series(&[45, 75, 5]),
        &format!("sum:rate{{counter,100}}:{METRIC}"),
    ));
    assert_eq!(doubles(&r), [1.0, 1.0]);
    let r = single(run(
        &counter_series(&[45, 75, 25]),
        &format!("sum:rate{{counter,10000,35}}:{METRIC}"),
    ));
    assert_eq!(doubles(&r), [1.0, 0.0]);
    let r = single(run(
        &counter_series(&[45, 75, 25, 55]),
        &format!("sum:rate{{dropcounter}}:{METRIC}"),
    ));
    assert_eq!(timestamps(&r), [1_356_998_460_000, 1_356_998_520_000]);
    assert_eq!(doubles(&r), [1.0, 1.0]);
}

#[test]
fn downsample_all() {
    let src = web01(long_seconds(false));
    let r = single(run(&src, &format!("sum:0all-sum:{METRIC}")));
    assert_eq!(r.dps, [(START * 1000, Num::Float(45150.0))]);
    let r = single(run_range(
        &src,
        &format!("sum:0all-sum:{METRIC}"),
        1_356_998_500,
        1_356_998_600,
    ));
    assert_eq!(r.dps, [(1_356_998_500_000, Num::Float(15.0))]);
}

#[test]
fn bucket_starting_before_start_is_dropped() {
    let src = web01(long_seconds(false));
    let r = single(run_range(
        &src,
        &format!("sum:1m-avg:{METRIC}"),
        1_356_998_430,
        END,
    ));
    assert_eq!(r.dps[0].0, 1_356_998_460_000);
}

#[test]
fn output_is_clipped_but_computation_uses_the_scan_window() {
    // query 1356998445..1356998475 on the offset set: still interpolates with
    // points outside the range
    let src = long_seconds(true);
    let r = aggregated(run_range(
        &src,
        &format!("sum:{METRIC}"),
        1_356_998_445,
        1_356_998_475,
    ));
    assert_eq!(
        r.dps,
        [
            (1_356_998_445_000, Num::Int(301)),
            (1_356_998_460_000, Num::Int(302)),
            (1_356_998_475_000, Num::Int(301))
        ]
    );
}

// --------------------------------------------------------------- Grafana --

#[test]
fn grafana_frontend_body() {
    let body = br#"{"start":1356998400000,"end":1357041600000,"msResolution":false,"globalAnnotations":true,"showQuery":true,
 "queries":[{"refId":"A","datasource":{"type":"opentsdb","uid":"abc"},"metric":"sys.cpu.user",
   "aggregator":"sum","downsampleAggregator":"avg","downsampleFillPolicy":"none","tags":{},
   "filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}],"downsample":"1m-avg",
   "hide":false,"alias":"$tag_host","shouldComputeRate":false,"isCounter":false,"disableDownsampling":false}]}"#;
    let q = parse_json_query(body, &[], 2_000_000_000_000).unwrap();
    assert!(q.show_query && q.global_annotations && !q.ms_resolution);
    let results = execute(&q, &long_seconds(false)).unwrap();
    assert_eq!(results.len(), 2);
    let json: serde_json::Value = serde_json::from_slice(&render_json(&q, &results)).unwrap();
    let arr = json.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    for (i, item) in arr.iter().enumerate() {
        assert_eq!(item["query"]["index"], 0);
        assert_eq!(item["metric"], METRIC);
        assert!(item["tags"].is_object());
        assert!(item["aggregateTags"].is_array());
        assert!(item["dps"].is_object());
        let host = if i == 0 { "web01" } else { "web02" };
        assert_eq!(item["tags"]["host"], host);
    }
    assert_eq!(arr[0]["dps"]["1356998400"], 1.0);
    assert_eq!(arr[0]["dps"]["1356998460"], 2.5);
}

#[test]
fn grafana_backend_body_with_arrays() {
    let body = br#"{"start":1356998400,"end":1357041600,"queries":[{"metric":"sys.cpu.user","aggregator":"sum",
  "downsample":"30s-avg","filters":[{"type":"literal_or","tagk":"host","filter":"web01|web02","groupBy":true}]}]}"#;
    let params = vec![("arrays".to_string(), "true".to_string())];
    let q = parse_json_query(body, &params, 2_000_000_000_000).unwrap();
    assert!(q.arrays);
    let results = execute(&q, &long_seconds(false)).unwrap();
    let text = String::from_utf8(render_json(&q, &results)).unwrap();
    assert!(
        text.starts_with(
            "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\
             \"dps\":[[1356998430,1.0],[1356998460,2.0],"
        ),
        "{}",
        &text[..200]
    );
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    // backend rate options arrive as floats
    let body = br#"{"start":1356998400,"end":1357041600,"queries":[{"metric":"sys.cpu.user","aggregator":"sum",
  "rate":true,"rateOptions":{"counter":true,"counterMax":100.0,"resetValue":0.0,"dropResets":false},
  "tags":{"host":"web01"},"explicitTags":true}]}"#;
    let q = parse_json_query(body, &[], 2_000_000_000_000).unwrap();
    let r = single(execute(&q, &long_seconds(false)).unwrap());
    assert_eq!(r.dps.len(), 299);
}

#[test]
fn show_tsuids_and_ms_render() {
    let params = vec![
        ("start".to_string(), "1356998400".to_string()),
        ("end".to_string(), "1356998460".to_string()),
        ("m".to_string(), format!("sum:{METRIC}")),
        ("show_tsuids".to_string(), String::new()),
        ("ms".to_string(), String::new()),
    ];
    let q = parse_query_string(&params, 2_000_000_000_000).unwrap();
    let body =
        String::from_utf8(render_json(&q, &execute(&q, &long_seconds(false)).unwrap())).unwrap();
    assert_eq!(
        body,
        "[{\"metric\":\"sys.cpu.user\",\"tags\":{},\"aggregateTags\":[\"host\"],\
         \"tsuids\":[\"000001000001000001\",\"000001000001000002\"],\
         \"dps\":{\"1356998430000\":301,\"1356998460000\":301}}]"
    );
}
