//! `/api/query/gexp` end to end over an in-memory source: the
//! documentation's two examples (`scale(sum:if.bytes_in{host=*},1024)` and
//! the per-host `sum(…,…)`), every function, nesting, and the errors in
//! OpenTSDB's words. Results are rendered with `/api/query`'s renderer.

use serde_json::{Value, json};

use crate::budget::{QueryBudget, QueryLimits};
use crate::error::QueryError;
use crate::exec::QueryResult;
use crate::expression::testing::MemorySource;
use crate::render::render_json;

use super::{parse, run};

const T0: i64 = 1_431_561_600_000;
const MIN: i64 = 60_000;
const NOW: i64 = T0 + 3_600_000;

fn params(exps: &[&str], extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out = vec![("start".to_string(), "1h-ago".to_string())];
    out.extend(exps.iter().map(|e| ("exp".to_string(), e.to_string())));
    out.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    out
}

fn results(src: &MemorySource, exp: &str) -> Result<Vec<QueryResult>, QueryError> {
    let query = parse(&params(&[exp], &[]), NOW)?;
    run(&query, src, &QueryBudget::unlimited())
}

/// The rendered `/api/query` body as JSON.
fn body(src: &MemorySource, exps: &[&str], extra: &[(&str, &str)]) -> Value {
    let query = parse(&params(exps, extra), NOW).unwrap();
    let out = run(&query, src, &QueryBudget::unlimited()).unwrap();
    serde_json::from_slice(&render_json(query.ts_query(), &out)).unwrap()
}

/// A result as `(metric, tags, dps with values as f64)`.
type Described = (String, Vec<(String, String)>, Vec<(i64, f64)>);

/// Every result of `exp`, described.
fn series(src: &MemorySource, exp: &str) -> Vec<Described> {
    results(src, exp)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.metric,
                r.tags.into_iter().collect(),
                r.dps.into_iter().map(|(t, v)| (t, v.as_f64())).collect(),
            )
        })
        .collect()
}

fn values(src: &MemorySource, exp: &str) -> Vec<Vec<f64>> {
    series(src, exp)
        .into_iter()
        .map(|(_, _, dps)| dps.into_iter().map(|(_, v)| v).collect())
        .collect()
}

fn error(src: &MemorySource, exp: &str) -> (String, Option<String>) {
    let e = results(src, exp).unwrap_err();
    (e.message(), e.details())
}

/// Interface counters of two hosts; web02 has no `if.bytes_out`.
fn interfaces() -> MemorySource {
    let mut src = MemorySource::new();
    src.ints(
        "if.bytes_in",
        &[("host", "web01")],
        &[(T0, 1), (T0 + MIN, 2)],
    )
    .ints(
        "if.bytes_in",
        &[("host", "web02")],
        &[(T0, 10), (T0 + MIN, 20)],
    )
    .ints(
        "if.bytes_out",
        &[("host", "web01")],
        &[(T0, 100), (T0 + MIN, 200)],
    )
    .ints("if.bytes_out", &[("host", "web03")], &[(T0, 1000)]);
    src
}

#[test]
fn documented_scale_example() {
    // GET /api/query/gexp?start=1h-ago&exp=scale(sum:if.bytes_in{host=*},1024)
    let src = interfaces();
    let got = body(&src, &["scale(sum:if.bytes_in{host=*},1024)"], &[]);
    // one series per host, each value × 1024; integers stay integers
    assert_eq!(
        got,
        json!([
            {"metric": "if.bytes_in", "tags": {"host": "web01"}, "aggregateTags": [],
             "dps": {"1431561600": 1024, "1431561660": 2048}},
            {"metric": "if.bytes_in", "tags": {"host": "web02"}, "aggregateTags": [],
             "dps": {"1431561600": 10240, "1431561660": 20480}}
        ])
    );
}

#[test]
fn documented_sum_example() {
    // sum(sum:if.bytes_in{host=*},sum:if.bytes_out{host=*}): a union on the
    // host; a series missing from one metric counts 0.
    let src = interfaces();
    let got = body(
        &src,
        &["sum(sum:if.bytes_in{host=*},sum:if.bytes_out{host=*})"],
        &[],
    );
    assert_eq!(
        got,
        json!([
            // web01: 1 + 100, 2 + 200
            {"metric": "if.bytes_in", "tags": {"host": "web01"}, "aggregateTags": [],
             "dps": {"1431561600": 101.0, "1431561660": 202.0}},
            // web02: no bytes_out: 10 + 0, 20 + 0
            {"metric": "if.bytes_in", "tags": {"host": "web02"}, "aggregateTags": [],
             "dps": {"1431561600": 10.0, "1431561660": 20.0}},
            // web03: no bytes_in: 0 + 1000
            {"metric": "if.bytes_out", "tags": {"host": "web03"}, "aggregateTags": [],
             "dps": {"1431561600": 1000.0}}
        ])
    );
}

/// Two hosts of `m`: web01 = -1, 2, -3, 4; web02 = 5, 5, 5, 5 (every minute).
fn signed() -> MemorySource {
    let mut src = MemorySource::new();
    src.ints(
        "m",
        &[("host", "web01")],
        &[
            (T0, -1),
            (T0 + MIN, 2),
            (T0 + 2 * MIN, -3),
            (T0 + 3 * MIN, 4),
        ],
    )
    .floats(
        "m",
        &[("host", "web02")],
        &[
            (T0, 5.0),
            (T0 + MIN, 5.0),
            (T0 + 2 * MIN, 5.0),
            (T0 + 3 * MIN, 5.0),
        ],
    )
    .ints(
        "n",
        &[("host", "web01")],
        &[(T0, 2), (T0 + MIN, 4), (T0 + 2 * MIN, 0), (T0 + 3 * MIN, 8)],
    );
    src
}

#[test]
fn single_series_functions() {
    let src = signed();
    assert_eq!(
        values(&src, "absolute(sum:m{host=*})"),
        [vec![1.0, 2.0, 3.0, 4.0], vec![5.0; 4]]
    );
    // ints stay ints with an integral factor, else doubles
    let r = results(&src, "scale(sum:m{host=web01},-2)").unwrap();
    assert_eq!(r[0].dps[0].1, crate::num::Num::Int(2));
    assert_eq!(
        values(&src, "scale(sum:m{host=web01},0.5)"),
        [vec![-0.5, 1.0, -1.5, 2.0]]
    );
    // firstDiff: 0, then each value minus the previous
    assert_eq!(
        values(&src, "firstDiff(sum:m{host=web01})"),
        [vec![0.0, 3.0, -5.0, 7.0]]
    );
    // a window of 2 points: 0, (-1+2)/2, (2-3)/2, (-3+4)/2
    assert_eq!(
        values(&src, "movingAverage(sum:m{host=web01},2)"),
        [vec![0.0, 0.5, -0.5, 0.5]]
    );
    // a 2-minute window: 0 (first), 0 (not full), then the last two minutes
    assert_eq!(
        values(&src, "movingAverage(sum:m{host=web01},'2min')"),
        [vec![0.0, 0.0, -0.5, 0.5]]
    );
    // several parameters: applied to every series of each
    assert_eq!(
        values(&src, "absolute(sum:m{host=web01},sum:n)"),
        [vec![1.0, 2.0, 3.0, 4.0], vec![2.0, 4.0, 0.0, 8.0]]
    );
}

#[test]
fn alias_names_series() {
    let src = signed();
    let got = series(&src, "alias(sum:m{host=*},cpu.@host)");
    assert_eq!(got[0].0, "cpu.web01");
    assert_eq!(got[1].0, "cpu.web02");
    // tags are dropped, values kept (OpenTSDB 2.4 also takes their absolute
    // value, a copy-paste bug)
    assert!(got[0].1.is_empty());
    assert_eq!(got[0].2[0], (T0, -1.0));
    let got = body(&src, &["alias(sum:m,all,hosts)"], &[]);
    assert_eq!(got[0]["metric"], "all,hosts");
    assert_eq!(got[0]["aggregateTags"], json!([]));
}

#[test]
fn combining_functions() {
    let src = signed();
    // web01 only in n: web01 = m op n, web02 = m op 0
    assert_eq!(
        values(&src, "diffSeries(sum:m{host=*},sum:n{host=*})"),
        [vec![-3.0, -2.0, -3.0, -4.0], vec![5.0; 4]]
    );
    assert_eq!(
        values(&src, "multiply(sum:m{host=*},sum:n{host=*})"),
        [vec![-2.0, 8.0, 0.0, 32.0], vec![0.0; 4]]
    );
    // division by zero (and by a missing series) is 0, as in JEXL
    assert_eq!(
        values(&src, "divideSeries(sum:m{host=*},sum:n{host=*})"),
        [vec![-0.5, 0.5, 0.0, 0.5], vec![0.0; 4]]
    );
    assert_eq!(
        values(&src, "sumSeries(sum:m{host=web01},sum:n,sum:m{host=web01})"),
        [vec![0.0, 8.0, -6.0, 16.0]]
    );
    // misaligned timestamps: the union, a missing point counting 0
    let mut src = MemorySource::new();
    src.ints("a", &[], &[(T0, 1), (T0 + 2 * MIN, 3)]).ints(
        "b",
        &[],
        &[(T0 + MIN, 10), (T0 + 2 * MIN, 30)],
    );
    assert_eq!(
        series(&src, "sum(sum:a,sum:b)")[0].2,
        [(T0, 1.0), (T0 + MIN, 10.0), (T0 + 2 * MIN, 33.0)]
    );
}

#[test]
fn highest_current_and_max() {
    let mut src = MemorySource::new();
    src.ints("m", &[("host", "a")], &[(T0, 1), (T0 + MIN, 9)])
        .ints("m", &[("host", "b")], &[(T0, 50), (T0 + MIN, 3)])
        .ints("m", &[("host", "c")], &[(T0, 7), (T0 + MIN, 7)]);
    let hosts = |exp: &str| -> Vec<String> {
        series(&src, exp)
            .into_iter()
            .map(|(_, tags, _)| tags[0].1.clone())
            .collect()
    };
    // latest: a = 9, c = 7, b = 3
    assert_eq!(hosts("highestCurrent(sum:m{host=*},2)"), ["a", "c"]);
    assert_eq!(hosts("highestCurrent(sum:m{host=*},10)"), ["a", "c", "b"]);
    // max: b = 50, a = 9, c = 7
    assert_eq!(hosts("highestMax(sum:m{host=*},1)"), ["b"]);
}

#[test]
fn time_shift_moves_and_clips() {
    let src = signed();
    // '1min' later: the last point leaves [start, end] only if beyond end;
    // here everything stays inside the hour
    assert_eq!(
        series(&src, "timeShift(sum:m{host=web01},'1min')")[0].2,
        [
            (T0 + MIN, -1.0),
            (T0 + 2 * MIN, 2.0),
            (T0 + 3 * MIN, -3.0),
            (T0 + 4 * MIN, 4.0)
        ]
    );
    let r = results(&src, "shift(sum:m{host=web01},'1hr')").unwrap();
    // T0 + 1h is the end itself: only the first point remains
    assert_eq!(r[0].dps, [(NOW, crate::num::Num::Int(-1))]);
}

#[test]
fn nesting_and_several_expressions() {
    let src = signed();
    assert_eq!(
        values(
            &src,
            "scale(sumSeries(sum:m{host=web01},sum:n{host=web01}),2)"
        ),
        [vec![2.0, 12.0, -6.0, 24.0]]
    );
    assert_eq!(
        series(
            &src,
            "alias(movingAverage(absolute(sum:m{host=web01}),2),smooth)"
        )[0],
        (
            "smooth".to_string(),
            vec![],
            vec![
                (T0, 0.0),
                (T0 + MIN, 1.5),
                (T0 + 2 * MIN, 2.5),
                (T0 + 3 * MIN, 3.5)
            ]
        )
    );
    // every exp= answers, in order; flags of /api/query apply
    let got = body(
        &src,
        &["absolute(sum:n)", "scale(sum:n,2)"],
        &[("ms", ""), ("arrays", "true"), ("show_query", "")],
    );
    assert_eq!(got.as_array().unwrap().len(), 2);
    assert_eq!(got[1]["dps"][1], json!([T0 + MIN, 8]));
    assert_eq!(got[1]["query"]["metric"], "n");
    assert_eq!(got[1]["query"]["index"], 1);
}

#[test]
fn errors_in_opentsdb_words() {
    let src = signed();
    assert_eq!(
        error(&src, "foo(sum:m)").0,
        "Function foo has not been implemented"
    );
    let (message, details) = error(&src, "scale(sum:m,2");
    assert_eq!(message, "Failed to parse scale(sum:m,2");
    assert!(details.unwrap().contains("<EOF>"));
    assert_eq!(error(&src, "scale(sum:m)").0, "Missing scaling factor");
    assert_eq!(
        error(&src, "scale(sum:m,x2)").0,
        "Unparseable scale factor value: x2"
    );
    assert_eq!(
        error(&src, "sumSeries(sum:m)").0,
        "Must have 2 to 26 series, got 1 instead"
    );
    assert_eq!(
        error(&src, "highestMax(sum:m)").0,
        "Need aggregation window for moving average"
    );
    assert_eq!(
        error(&src, "movingAverage(sum:m,'5y')").0,
        "Unknown time unit=y in window='5y'"
    );
    assert_eq!(
        error(&src, "timeShift(sum:m,10min)").0,
        "Invalid timeshift parameter: eg '10min'"
    );
    assert_eq!(error(&src, "alias(sum:m)").0, "Missing the alias");
    assert_eq!(
        error(&src, "scale(2,sum:m)").0,
        "Unknown parameter type: null in tree: scale(2,sum:m)"
    );
    // metric parameters are validated as m= is
    assert_eq!(
        error(&src, "absolute(nosuch:m)").0,
        "No such aggregation function: nosuch"
    );
    assert_eq!(
        error(&src, "absolute(sum:1x-avg:m)").0,
        "Invalid duration (suffix): 1x"
    );
    assert_eq!(
        error(&src, "absolute(sum:nometric)").0,
        "No such name for 'metrics': 'nometric'"
    );
    // no series parameter: no series, but also no sub query at all
    assert_eq!(error(&src, "scale(5)").0, "Missing sub queries");
    let e = parse(&[("exp".to_string(), "absolute(sum:m)".to_string())], NOW).unwrap_err();
    assert_eq!(e.message(), "Missing parameter <code>start</code>");
    let e = parse(&params(&[], &[]), NOW).unwrap_err();
    assert_eq!(e.message(), "Missing sub queries");
}

#[test]
fn other_sub_queries_are_checked_not_answered() {
    let src = signed();
    let got = body(&src, &["absolute(sum:n)"], &[("m", "sum:m")]);
    assert_eq!(got.as_array().unwrap().len(), 1);
    assert_eq!(got[0]["metric"], "n");
    let e = parse(&params(&["absolute(sum:n)"], &[("m", "bogus:m")]), NOW).unwrap_err();
    assert_eq!(e.message(), "No such aggregation function: bogus");
}

#[test]
fn bounds() {
    let src = signed();
    let many = vec!["absolute(sum:m)"; crate::expression::limits::MAX_GEXP_EXPRESSIONS + 1];
    let e = parse(&params(&many, &[]), NOW).unwrap_err();
    assert_eq!(e.message(), "Too many exp parameters: 21 (the limit is 20)");
    let deep = format!("{}sum:m{}", "absolute(".repeat(17), ")".repeat(17));
    assert_eq!(error(&src, &deep).0, format!("Failed to parse {deep}"));
    let query = parse(&params(&["sum(sum:m{host=*},sum:n{host=*})"], &[]), NOW).unwrap();
    let budget = QueryBudget::new(QueryLimits {
        max_values: 10,
        ..QueryLimits::default()
    });
    assert!(matches!(
        run(&query, &src, &budget),
        Err(QueryError::Limit(_))
    ));
}

#[test]
fn alias_substitutes_once_and_is_bounded() {
    let mut src = MemorySource::new();
    // a tag value that itself reads like a template
    src.ints("m", &[("host", "a@dc"), ("dc", "lga")], &[(T0, 1)]);
    let got = series(&src, "alias(sum:m{host=*,dc=*},@host.@dc.@hostname)");
    // inserted text is not searched again; `@hostname` is `@host` + "name"
    assert_eq!(got[0].0, "a@dc.lga.a@dcname");
    // a template that multiplies a long tag value is refused, not built
    let long = "v".repeat(100);
    let mut src = MemorySource::new();
    src.ints("m", &[("host", &long)], &[(T0, 1)]);
    let template = "@host".repeat(100);
    let (message, _) = error(&src, &format!("alias(sum:m{{host=*}},{template})"));
    assert_eq!(
        message,
        format!(
            "The alias is too long: over {} bytes once its tags are filled in",
            crate::expression::limits::MAX_ALIAS_BYTES
        )
    );
    // 40 copies (4000 bytes) still fit
    let template = "@host".repeat(40);
    assert_eq!(
        series(&src, &format!("alias(sum:m{{host=*}},{template})"))[0]
            .0
            .len(),
        4000
    );
}

#[test]
fn aliased_series_still_join_on_their_tags() {
    let src = signed();
    // m and n per host; the alias renames m but must not merge its hosts
    let got = series(&src, "sumSeries(alias(sum:m{host=*},x),sum:n{host=*})");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, [("host".to_string(), "web01".to_string())]);
    let web01: Vec<f64> = got[0].2.iter().map(|(_, v)| *v).collect();
    assert_eq!(web01, [1.0, 6.0, -3.0, 12.0]);
    assert_eq!(got[1].1, [("host".to_string(), "web02".to_string())]);
    let web02: Vec<f64> = got[1].2.iter().map(|(_, v)| *v).collect();
    assert_eq!(web02, [5.0; 4]);
    // the alias alone still answers without tags
    assert!(series(&src, "alias(sum:m{host=*},x)")[0].1.is_empty());
}

#[test]
fn time_shift_fetches_the_window_it_moves_into_range() {
    const DAY: i64 = 86_400_000;
    let mut src = MemorySource::new();
    src.ints(
        "m",
        &[("host", "web01")],
        &[
            (T0 - DAY, 1),
            (T0 - DAY + MIN, 2),
            (T0 - DAY + 2 * MIN, 3),
            (T0 - DAY + 3 * MIN, 4),
        ],
    );
    // start=1h-ago (T0): yesterday's points, moved to today
    assert_eq!(
        series(&src, "timeShift(sum:m,'1day')")[0].2,
        [
            (T0, 1.0),
            (T0 + MIN, 2.0),
            (T0 + 2 * MIN, 3.0),
            (T0 + 3 * MIN, 4.0)
        ]
    );
    // functions under the shift see yesterday's window; unshifted
    // parameters next to it see today's (nothing here)
    assert_eq!(
        values(&src, "timeShift(movingAverage(sum:m,2),'1day')"),
        [vec![0.0, 1.5, 2.5, 3.5]]
    );
    let got = series(&src, "sumSeries(timeShift(sum:m,'1day'),sum:m)");
    let sums: Vec<f64> = got[0].2.iter().map(|(_, v)| *v).collect();
    assert_eq!(sums, [1.0, 2.0, 3.0, 4.0]);
    // nested shifts add up
    let mut src = MemorySource::new();
    src.ints("m", &[], &[(T0 - 2 * DAY, 7)]);
    assert_eq!(
        series(&src, "timeShift(timeShift(sum:m,'1day'),'1day')")[0].2,
        [(T0, 7.0)]
    );
}
