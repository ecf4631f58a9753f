//! The evaluator over series in memory, against answers worked out by
//! hand from Prometheus' rules. (Answers compared with a real Prometheus
//! on the same data: the comparison harness, `docs/promql.md`.)

use promql_parser::parser::VectorSelector;

use super::*;
use crate::budget::{QueryBudget, QueryLimits};

struct Memory(Vec<RangeSeries>);

impl PromSource for Memory {
    fn select(
        &self,
        vs: &VectorSelector,
        start: i64,
        end: i64,
        _: &QueryBudget,
    ) -> Result<Vec<RangeSeries>, QueryError> {
        Ok(self
            .0
            .iter()
            .filter(|s| {
                vs.name
                    .as_deref()
                    .is_none_or(|n| s.labels.get(value::METRIC_NAME) == Some(n))
            })
            .filter(|s| {
                vs.matchers
                    .matchers
                    .iter()
                    .all(|m| m.is_match(s.labels.get(&m.name).unwrap_or("")))
            })
            .map(|s| RangeSeries {
                labels: s.labels.clone(),
                samples: s
                    .samples
                    .iter()
                    .copied()
                    .filter(|&(t, _)| (start..=end).contains(&t))
                    .collect(),
            })
            .filter(|s| !s.samples.is_empty())
            .collect())
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::new(
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    )
}

const MIN: i64 = 60_000;

/// Two counters (+10 and +5 every 15 s for 10 minutes), `up` 1 and 0,
/// a gauge per instance.
fn data() -> Memory {
    let every_15s = |per_step: f64| {
        (0..=40)
            .map(|i| (i * 15_000, i as f64 * per_step))
            .collect::<Vec<_>>()
    };
    let flat = |v: f64| (0..=40).map(|i| (i * 15_000, v)).collect::<Vec<_>>();
    Memory(vec![
        RangeSeries {
            labels: labels(&[
                ("__name__", "http_requests_total"),
                ("job", "api"),
                ("instance", "a"),
            ]),
            samples: every_15s(10.0),
        },
        RangeSeries {
            labels: labels(&[
                ("__name__", "http_requests_total"),
                ("job", "api"),
                ("instance", "b"),
            ]),
            samples: every_15s(5.0),
        },
        RangeSeries {
            labels: labels(&[("__name__", "up"), ("job", "api"), ("instance", "a")]),
            samples: flat(1.0),
        },
        RangeSeries {
            labels: labels(&[("__name__", "up"), ("job", "api"), ("instance", "b")]),
            samples: flat(0.0),
        },
        RangeSeries {
            labels: labels(&[("__name__", "mem"), ("instance", "a")]),
            samples: flat(100.0),
        },
        RangeSeries {
            labels: labels(&[("__name__", "mem"), ("instance", "b")]),
            samples: flat(300.0),
        },
    ])
}

fn budget() -> QueryBudget {
    QueryBudget::new(QueryLimits::default())
}

fn instant(q: &str, t: i64) -> Result<Value, QueryError> {
    let expr = parse(q)?;
    eval_instant(&data(), &expr, t, &budget())
}

/// An instant vector as (labels text, value), sorted.
fn vector(q: &str, t: i64) -> Vec<(String, f64)> {
    match instant(q, t) {
        Ok(Value::Vector(v)) => v
            .into_iter()
            .map(|s| {
                let text: Vec<String> = s.labels.iter().map(|(n, v)| format!("{n}={v}")).collect();
                (text.join(","), s.value)
            })
            .collect(),
        other => panic!("{q}: {other:?}"),
    }
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

#[test]
fn selectors_look_back_five_minutes_and_move_with_offset() {
    assert_eq!(vector("up", 10 * MIN).len(), 2);
    // The last sample is at 10 min: seen until 15 min, gone after.
    assert_eq!(vector("up", 15 * MIN).len(), 2);
    assert!(vector("up", 15 * MIN + 1).is_empty());
    assert_eq!(vector("up offset 10m", 15 * MIN + 1).len(), 2);
    assert_eq!(
        vector(r#"up{instance="b"}"#, MIN),
        [("__name__=up,instance=b,job=api".to_string(), 0.0)]
    );
    // `@` pins the instant whatever the evaluation time.
    assert_eq!(
        vector("http_requests_total{instance=\"a\"} @ 60", 9 * MIN)[0].1,
        40.0
    );
}

#[test]
fn rate_increase_and_aggregations() {
    let r = vector("rate(http_requests_total[1m])", 5 * MIN);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].0, "instance=a,job=api", "the metric name goes");
    assert!(
        close(r[0].1, 40.0 / 60.0) && close(r[1].1, 20.0 / 60.0),
        "{r:?}"
    );
    let inc = vector("increase(http_requests_total{instance=\"a\"}[2m])", 5 * MIN);
    assert!(close(inc[0].1, 80.0), "{inc:?}");
    let sum = vector("sum by (job) (rate(http_requests_total[1m]))", 5 * MIN);
    assert_eq!(sum.len(), 1);
    assert_eq!(sum[0].0, "job=api");
    assert!(close(sum[0].1, 1.0), "{sum:?}");
    assert_eq!(vector("count(up)", MIN), [(String::new(), 2.0)]);
    assert_eq!(vector("avg(up)", MIN), [(String::new(), 0.5)]);
    assert_eq!(
        vector("max without (instance) (mem)", MIN),
        [(String::new(), 300.0)]
    );
    assert_eq!(
        vector("topk(1, mem)", MIN),
        [("__name__=mem,instance=b".to_string(), 300.0)]
    );
    assert_eq!(vector("quantile(0.5, mem)", MIN), [(String::new(), 200.0)]);
    assert_eq!(
        vector(r#"count_values("v", up)"#, MIN),
        [("v=0".to_string(), 1.0), ("v=1".to_string(), 1.0)]
    );
    assert_eq!(vector("max_over_time(mem[5m])", MIN)[1].1, 300.0);
    assert_eq!(vector("count_over_time(mem[1m])", 5 * MIN)[0].1, 5.0);
}

#[test]
fn binary_operators_match_as_prometheus_does() {
    assert_eq!(
        vector("up == 1", MIN),
        [("__name__=up,instance=a,job=api".to_string(), 1.0)]
    );
    assert_eq!(
        vector("up == bool 1", MIN),
        [
            ("instance=a,job=api".to_string(), 1.0),
            ("instance=b,job=api".to_string(), 0.0)
        ]
    );
    assert_eq!(vector("2 * mem", MIN)[0], ("instance=a".to_string(), 200.0));
    // atan2 is no arithmetic operator: the name stays.
    assert_eq!(vector("mem atan2 1", MIN)[0].0, "__name__=mem,instance=a");
    assert_eq!(
        vector("mem / on(instance) up", MIN)[0],
        ("instance=a".to_string(), 100.0)
    );
    assert_eq!(
        vector("mem * on(instance) group_left(job) up", MIN)[0],
        ("instance=a,job=api".to_string(), 100.0)
    );
    assert_eq!(vector("up and on(instance) mem > 200", MIN).len(), 1);
    assert_eq!(vector("up unless on(instance) mem > 200", MIN).len(), 1);
    assert_eq!(vector("up or mem", MIN).len(), 4);
    match instant("up + on(job) up", MIN) {
        Err(QueryError::Execution(e)) => assert!(e.contains("duplicate series"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(instant("1 + 2 * 3", MIN), Ok(Value::Scalar(7.0)));
    assert_eq!(instant("2 > bool 1", MIN), Ok(Value::Scalar(1.0)));
}

#[test]
fn functions_of_labels_and_scalars() {
    assert_eq!(
        vector(
            r#"label_replace(mem, "host", "h-$1", "instance", "(.*)")"#,
            MIN
        )[0]
        .0,
        "__name__=mem,host=h-a,instance=a"
    );
    assert_eq!(
        vector(r#"label_join(up, "both", "/", "job", "instance")"#, MIN)[0].0,
        "__name__=up,both=api/a,instance=a,job=api"
    );
    assert_eq!(instant("time()", 90_000), Ok(Value::Scalar(90.0)));
    assert_eq!(instant("scalar(sum(up))", MIN), Ok(Value::Scalar(1.0)));
    assert_eq!(vector("vector(2) + 1", MIN), [(String::new(), 3.0)]);
    assert_eq!(
        vector("abs(-mem)", MIN)[0],
        ("instance=a".to_string(), 100.0)
    );
    // timestamp: a bare selector's own sample times; of anything else
    // (parentheses too) the evaluation time, as Prometheus 2.42 gives.
    let at = MIN + 5_000;
    assert_eq!(vector("timestamp(mem)", at)[0], ("instance=a".into(), 60.0));
    assert_eq!(
        vector("timestamp(mem offset 30s)", at)[0],
        ("instance=a".into(), 30.0)
    );
    assert_eq!(
        vector("timestamp((mem))", at)[0],
        ("instance=a".into(), 65.0)
    );
    assert_eq!(vector("timestamp(sum(mem))", at), [(String::new(), 65.0)]);
    // holt_winters follows a straight line exactly, and a flat one.
    assert_eq!(
        vector(
            r#"holt_winters(http_requests_total{instance="a"}[1m], 0.5, 0.5)"#,
            MIN
        ),
        [("instance=a,job=api".into(), 40.0)]
    );
    assert_eq!(
        vector("holt_winters(mem[1m], 0.1, 0.9)", MIN)[1],
        ("instance=b".into(), 300.0)
    );
    for (q, e) in [
        (
            "holt_winters(mem[1m], 0, 0.5)",
            "invalid smoothing factor. Expected: 0 < sf < 1, got: 0.000000",
        ),
        (
            "holt_winters(mem[1m], 0.5, 1)",
            "invalid trend factor. Expected: 0 < tf < 1, got: 1.000000",
        ),
    ] {
        assert_eq!(instant(q, MIN), Err(QueryError::Execution(e.into())), "{q}");
    }
    // Not checked without samples, as Prometheus checks per series.
    assert!(vector("holt_winters(nope[1m], 0, 0)", MIN).is_empty());
    // The 2.42 name is mapped for the parser, never inside a string or a
    // comment; the Prometheus 3 name is refused, as 2.42 refuses it.
    assert_eq!(
        vector(
            "holt_winters ( mem{instance!=\"holt_winters(\"}[1m], 0.1, 0.9) # holt_winters(",
            MIN
        )
        .len(),
        2
    );
    assert_eq!(
        instant("double_exponential_smoothing(mem[1m], 0.5, 0.5)", MIN),
        Err(QueryError::BadRequest {
            message: "unknown function with name \"double_exponential_smoothing\"".into(),
            details: None
        })
    );
    assert!(matches!(
        instant("my_holt_winters(mem)", MIN),
        Err(QueryError::BadRequest { .. })
    ));
}

#[test]
fn subqueries_absent_and_dates() {
    // The counter's rate at every 30 s step of the last 2 minutes: 40/min.
    let r = vector(
        "max_over_time(rate(http_requests_total{instance=\"a\"}[1m])[2m:30s])",
        5 * MIN,
    );
    assert!(close(r[0].1, 40.0 / 60.0), "{r:?}");
    // Steps are multiples of the step: 4:00, 4:30, 5:00 in [3:50, 5:00]…
    match instant("up{instance=\"a\"}[70s:30s]", 5 * MIN) {
        Ok(Value::Matrix(m)) => assert_eq!(
            m[0].samples.iter().map(|s| s.0).collect::<Vec<_>>(),
            [4 * MIN, 4 * MIN + 30_000, 5 * MIN]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        vector(r#"absent(nope{job="x", a="1", a="2"})"#, MIN),
        [("job=x".to_string(), 1.0)]
    );
    assert!(vector("absent(up)", MIN).is_empty());
    // A label matched otherwise than by `=` goes, as in Prometheus.
    assert_eq!(
        vector(r#"absent(nope{job="a", job=~"b"})"#, MIN),
        [(String::new(), 1.0)]
    );
    match instant(r#"count_values("a-b", up)"#, MIN) {
        Err(QueryError::Execution(e)) => assert!(e.contains("invalid label name"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        vector("absent_over_time(nope[1m])", MIN),
        [(String::new(), 1.0)]
    );
    // 2023-11-14 22:13:20 UTC, a Tuesday.
    assert_eq!(
        vector("hour(vector(1700000000))", MIN),
        [(String::new(), 22.0)]
    );
    assert_eq!(
        vector("day_of_week(vector(1700000000))", MIN),
        [(String::new(), 2.0)]
    );
    assert_eq!(
        vector("days_in_month(vector(1709251199))", MIN),
        [(String::new(), 29.0)]
    );
}

#[test]
fn edge_cases_prometheus_answers_its_own_way() {
    // Two series left with one label set once the name goes: refused.
    match instant(r#"-{__name__=~"up|http_requests_total"}"#, MIN) {
        Err(QueryError::Execution(e)) => assert!(e.contains("same labelset"), "{e}"),
        other => panic!("{other:?}"),
    }
    // An empty side matches nothing, and refuses nothing.
    assert!(vector("nope / on(job) up", MIN).is_empty());
    // `@ start()` inside a subquery is the query's start, not the
    // subquery's.
    let r = vector(
        r#"max_over_time((http_requests_total{instance="a"} @ start())[2m:1m])"#,
        5 * MIN,
    );
    assert_eq!(r[0].1, 200.0, "{r:?}");
    // An offset far past any date saturates instead of overflowing.
    assert!(vector("mem offset 100000000y", MIN).is_empty());
    // clamp passes NaN through, as Go's math.Max does.
    assert!(vector("clamp_min(vector(0) / 0, 1)", MIN)[0].1.is_nan());
    // topk's answer keeps its order at the top of an instant query.
    match instant("topk(2, mem)", MIN) {
        Ok(Value::Vector(v)) => assert_eq!(
            v.iter().map(|s| s.value).collect::<Vec<_>>(),
            [300.0, 100.0]
        ),
        other => panic!("{other:?}"),
    }
    // topk's k must be convertible to int64, as Go converts it.
    for (q, k) in [
        ("topk(NaN, mem)", "NaN"),
        ("bottomk(Inf, mem)", "+Inf"),
        ("topk(1e19, mem)", "1e+19"),
        ("topk(-1e19, mem)", "-1e+19"),
    ] {
        match instant(q, MIN) {
            Err(QueryError::Execution(e)) => {
                assert_eq!(e, format!("Scalar value {k} overflows int64"), "{q}")
            }
            other => panic!("{q}: {other:?}"),
        }
    }
    assert!(vector("topk(0.5, mem)", MIN).is_empty());
}

#[test]
fn a_range_query_evaluates_every_step() {
    let expr = parse("up").unwrap_or_else(|e| panic!("{e}"));
    let m = eval_range(&data(), &expr, 0, MIN, 15_000, &budget()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].samples.len(), 5);
    let expr = parse("sum(rate(http_requests_total[1m]))").unwrap_or_else(|e| panic!("{e}"));
    let m = eval_range(&data(), &expr, 2 * MIN, 4 * MIN, MIN, &budget())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.len(), 1);
    assert!(m[0].samples.iter().all(|&(_, v)| close(v, 1.0)), "{m:?}");
    let expr = parse("up[1m]").unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        eval_range(&data(), &expr, 0, MIN, 15_000, &budget()),
        Err(QueryError::BadRequest { .. })
    ));
}
