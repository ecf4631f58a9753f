//! `/api/query/exp` end to end over an in-memory source: OpenTSDB's
//! documented example request verbatim (its response reproduced value by
//! value), the scenario its documentation describes for joins (a host
//! missing from one metric), every fill policy, nested expressions,
//! outputs and aliases, the JEXL rules, errors and bounds.

use serde_json::{Value, json};

use crate::budget::{QueryBudget, QueryLimits};
use crate::error::QueryError;
use crate::expression::testing::MemorySource;

use super::{parse, run};

/// The documentation's timestamps: 2015-05-14 00:00 UTC and every minute.
const T0: i64 = 1_431_561_600_000;
const MIN: i64 = 60_000;
/// "now" an hour after T0, so `1y-ago` and `1h-ago` cover the data.
const NOW: i64 = T0 + 3_600_000;

fn answer(src: &MemorySource, body: &str) -> Result<String, QueryError> {
    let query = parse(body.as_bytes(), NOW)?;
    Ok(run(&query, src, &QueryBudget::unlimited())?.to_json())
}

fn answer_json(src: &MemorySource, body: &str) -> Value {
    serde_json::from_str(&answer(src, body).unwrap()).unwrap()
}

fn error(src: &MemorySource, body: &str) -> (String, Option<String>) {
    let e = answer(src, body).unwrap_err();
    (e.message(), e.details())
}

/// The `dps` of output `i` as `[ts, v…]` rows (NaN as the string).
fn dps(answer: &Value, i: usize) -> Value {
    answer["outputs"][i]["dps"].clone()
}

/// The data the documented example implies. Its response shows
/// `sys.cpu` (metric `a`) as web01 = 1, 3, 5, 7 and web02 = 2, –, –, 8
/// (written 0: a metric output fills with zero), and e5 = 10·(a + b) as
/// 1010/1030 at T0 and 1120/1140 at T0+3m, NaN between: so b (iowait) is
/// web01 = 100, 105 and web02 = 101, 106 at T0 and T0+3m only, and with
/// both metrics' fill policy `nan` the middle minutes are NaN.
fn documented_data() -> MemorySource {
    let mut src = MemorySource::new();
    src.ints(
        "sys.cpu.user",
        &[("host", "web01")],
        &[(T0, 1), (T0 + MIN, 3), (T0 + 2 * MIN, 5), (T0 + 3 * MIN, 7)],
    )
    .ints(
        "sys.cpu.user",
        &[("host", "web02")],
        &[(T0, 2), (T0 + 3 * MIN, 8)],
    )
    .ints(
        "sys.cpu.iowait",
        &[("host", "web01")],
        &[(T0, 100), (T0 + 3 * MIN, 105)],
    )
    .ints(
        "sys.cpu.iowait",
        &[("host", "web02")],
        &[(T0, 101), (T0 + 3 * MIN, 106)],
    );
    src
}

/// The "Complete Example" request of the `/api/query/exp` documentation,
/// verbatim.
const DOCUMENTED_REQUEST: &str = r#" {
    "time": {
        "start": "1y-ago",
        "aggregator":"sum"
    },
    "filters": [
        {
            "tags": [
                {
                    "type": "wildcard",
                    "tagk": "host",
                    "filter": "web*",
                    "groupBy": true
                }
            ],
            "id": "f1"
        }
    ],
    "metrics": [
        {
            "id": "a",
            "metric": "sys.cpu.user",
            "filter": "f1",
            "fillPolicy":{"policy":"nan"}
        },
        {
            "id": "b",
            "metric": "sys.cpu.iowait",
            "filter": "f1",
            "fillPolicy":{"policy":"nan"}
        }
    ],
    "expressions": [
        {
            "id": "e",
            "expr": "a + b"
        },
        {
          "id":"e2",
          "expr": "e * 2"
        },
        {
          "id":"e3",
          "expr": "e2 * 2"
        },
        {
          "id":"e4",
          "expr": "e3 * 2"
        },
        {
          "id":"e5",
          "expr": "e4 + e2"
        }
     ],
     "outputs":[
       {"id":"e5", "alias":"Mega expression"},
       {"id":"a", "alias":"CPU User"}
     ]
  }"#;

#[test]
fn documented_complete_example() {
    let body = answer(&documented_data(), DOCUMENTED_REQUEST).unwrap();
    // e5 = e4 + e2 = 8e + 2e = 10e, e = a + b:
    //   T0    web01: 10·(1 + 100) = 1010, web02: 10·(2 + 101) = 1030
    //   T0+1m web01: 3 + NaN (b has no point, fill nan) = NaN; web02: NaN + NaN
    //   T0+2m likewise NaN, NaN
    //   T0+3m web01: 10·(7 + 105) = 1120, web02: 10·(8 + 106) = 1140
    // Metric a as an output: web02's missing minutes are written 0.
    let outputs = concat!(
        r#"{"outputs":["#,
        r#"{"id":"e5","alias":"Mega expression","dps":[[1431561600000,1010.0,1030.0],"#,
        r#"[1431561660000,"NaN","NaN"],[1431561720000,"NaN","NaN"],[1431561780000,1120.0,1140.0]],"#,
        r#""dpsMeta":{"firstTimestamp":1431561600000,"lastTimestamp":1431561780000,"setCount":4,"series":2},"#,
        r#""meta":[{"index":0,"metrics":["timestamp"]},"#,
        r#"{"index":1,"metrics":["sys.cpu.iowait","sys.cpu.user"],"commonTags":{"host":"web01"},"aggregatedTags":[]},"#,
        r#"{"index":2,"metrics":["sys.cpu.iowait","sys.cpu.user"],"commonTags":{"host":"web02"},"aggregatedTags":[]}]},"#,
        r#"{"id":"a","alias":"CPU User","dps":[[1431561600000,1.0,2.0],[1431561660000,3.0,0.0],"#,
        r#"[1431561720000,5.0,0.0],[1431561780000,7.0,8.0]],"#,
        r#""dpsMeta":{"firstTimestamp":1431561600000,"lastTimestamp":1431561780000,"setCount":4,"series":2},"#,
        r#""meta":[{"index":0,"metrics":["timestamp"]},"#,
        r#"{"index":1,"metrics":["sys.cpu.user"],"commonTags":{"host":"web01"},"aggregatedTags":[]},"#,
        r#"{"index":2,"metrics":["sys.cpu.user"],"commonTags":{"host":"web02"},"aggregatedTags":[]}]}],"#,
    );
    assert!(body.starts_with(outputs), "{body}");
    let echo = serde_json::from_str::<Value>(&body).unwrap()["query"].clone();
    // The request as OpenTSDB's pojos serialise it after validation.
    assert_eq!(
        echo,
        json!({
            "name": null,
            "time": {"start": "1y-ago", "end": null, "timezone": null, "downsampler": null,
                     "aggregator": "sum", "rate": false},
            "filters": [{"id": "f1", "tags": [{"tagk": "host", "filter": "web*", "group_by": true,
                         "type": "wildcard"}], "explicitTags": false}],
            "metrics": [
                {"metric": "sys.cpu.user", "id": "a", "filter": "f1", "aggregator": null,
                 "fillPolicy": {"policy": "nan", "value": "NaN"}, "timeOffset": null},
                {"metric": "sys.cpu.iowait", "id": "b", "filter": "f1", "aggregator": null,
                 "fillPolicy": {"policy": "nan", "value": "NaN"}, "timeOffset": null}
            ],
            "expressions": [
                {"id": "e", "expr": "a + b", "join": {"operator": "union", "useQueryTags": false, "includeAggTags": true}, "fillPolicy": null},
                {"id": "e2", "expr": "e * 2", "join": {"operator": "union", "useQueryTags": false, "includeAggTags": true}, "fillPolicy": null},
                {"id": "e3", "expr": "e2 * 2", "join": {"operator": "union", "useQueryTags": false, "includeAggTags": true}, "fillPolicy": null},
                {"id": "e4", "expr": "e3 * 2", "join": {"operator": "union", "useQueryTags": false, "includeAggTags": true}, "fillPolicy": null},
                {"id": "e5", "expr": "e4 + e2", "join": {"operator": "union", "useQueryTags": false, "includeAggTags": true}, "fillPolicy": null}
            ],
            "outputs": [{"id": "e5", "alias": "Mega expression"}, {"id": "a", "alias": "CPU User"}]
        })
    );
    assert!(body.ends_with("]}}"), "{body}");
}

/// The documentation's join example: "a + b" grouped by host, b lacks web03.
fn missing_host() -> MemorySource {
    let mut src = MemorySource::new();
    for (host, base) in [("web01", 10), ("web02", 20), ("web03", 30)] {
        src.ints("a", &[("host", host)], &[(T0, base), (T0 + MIN, base + 1)]);
    }
    src.ints("b", &[("host", "web01")], &[(T0, 1), (T0 + MIN, 2)])
        .ints("b", &[("host", "web02")], &[(T0, 3)]);
    src
}

fn join_request(operator: &str, b_fill: &str) -> String {
    format!(
        r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},
            "filters":[{{"id":"f","tags":[{{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}}]}}],
            "metrics":[{{"id":"a","metric":"a","filter":"f"}},
                       {{"id":"b","metric":"b","filter":"f","fillPolicy":{b_fill}}}],
            "expressions":[{{"id":"e","expr":"a + b","join":{{"operator":"{operator}"}}}}]}}"#
    )
}

#[test]
fn intersection_skips_the_missing_host() {
    let a = answer_json(&missing_host(), &join_request("intersection", "null"));
    // web01: 10 + 1, 11 + 2; web02: 20 + 3, then 21 + (missing point, b's
    // default fill zero) = 21. web03 is not in b: skipped.
    assert_eq!(
        dps(&a, 0),
        json!([[T0, 11.0, 23.0], [T0 + MIN, 13.0, 21.0]])
    );
    assert_eq!(a["outputs"][0]["dpsMeta"]["series"], 2);
    assert_eq!(
        a["outputs"][0]["meta"][2]["commonTags"],
        json!({"host": "web02"})
    );
}

#[test]
fn union_substitutes_zero_for_the_missing_host() {
    let fill = r#"{"policy":"scalar","value":100}"#;
    let a = answer_json(&missing_host(), &join_request("union", fill));
    // web02's missing point takes b's fill (100): 21 + 100 = 121; web03 has
    // no b series at all, which counts 0 whatever the policy: 30, 31.
    assert_eq!(
        dps(&a, 0),
        json!([[T0, 11.0, 23.0, 30.0], [T0 + MIN, 13.0, 121.0, 31.0]])
    );
    let meta = &a["outputs"][0]["meta"][3];
    assert_eq!(meta["commonTags"], json!({"host": "web03"}));
    assert_eq!(meta["metrics"], json!(["a"]));
}

#[test]
fn every_fill_policy() {
    // a: T0 = 5, T0+1m = 6 (NaN at T0+2m); b: T0 = 1 only.
    let mut src = MemorySource::new();
    src.add(
        "a",
        &[],
        &[
            (T0, 5.into()),
            (T0 + MIN, 6.into()),
            (T0 + 2 * MIN, f64::NAN.into()),
        ],
    )
    .ints("b", &[], &[(T0, 1)]);
    let with = |fill: &str| {
        let a = answer_json(
            &src,
            &format!(
                r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},
                    "metrics":[{{"id":"a","metric":"a","fillPolicy":{fill}}},{{"id":"b","metric":"b","fillPolicy":{fill}}}],
                    "expressions":[{{"id":"e","expr":"a + b"}}]}}"#
            ),
        );
        dps(&a, 0)
    };
    // b's missing points (and a's NaN) become the fill value.
    assert_eq!(
        with(r#"{"policy":"zero"}"#),
        json!([[T0, 6.0], [T0 + MIN, 6.0], [T0 + 2 * MIN, 0.0]])
    );
    assert_eq!(
        with(r#"{"policy":"scalar","value":"1.5"}"#),
        json!([[T0, 6.0], [T0 + MIN, 7.5], [T0 + 2 * MIN, 3.0]])
    );
    for nan_like in [
        r#"{"policy":"nan"}"#,
        r#"{"policy":"null"}"#,
        r#"{"policy":"none"}"#,
    ] {
        assert_eq!(
            with(nan_like),
            json!([[T0, 6.0], [T0 + MIN, "NaN"], [T0 + 2 * MIN, "NaN"]]),
            "{nan_like}"
        );
    }
    // no policy at all: zero
    assert_eq!(with("null"), with(r#"{"policy":"zero"}"#));
    // a value alone picks the policy
    assert_eq!(
        with(r#"{"value":-1}"#),
        json!([[T0, 6.0], [T0 + MIN, 5.0], [T0 + 2 * MIN, -2.0]])
    );
}

#[test]
fn nested_expressions_and_their_fill() {
    let mut src = MemorySource::new();
    src.ints("a", &[], &[(T0, 2)])
        .ints("b", &[], &[(T0, 10), (T0 + MIN, 20)]);
    let body = |fill: &str| {
        format!(
            r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},
                "metrics":[{{"id":"a","metric":"a"}},{{"id":"b","metric":"b"}}],
                "expressions":[{{"id":"e","expr":"a * 3","fillPolicy":{fill}}},
                               {{"id":"e2","expr":"e * 2"}},
                               {{"id":"f","expr":"b + e"}}],
                "outputs":[{{"id":"e2"}},{{"id":"f"}}]}}"#
        )
    };
    let a = answer_json(&src, &body("null"));
    // e = 6 at T0 only; e2 = e * 2 = 12.
    assert_eq!(dps(&a, 0), json!([[T0, 12.0]]));
    // f = b + e: at T0+1m e has no point and its default fill is NaN.
    assert_eq!(dps(&a, 1), json!([[T0, 16.0], [T0 + MIN, "NaN"]]));
    // the expression's fill policy applies where another expression reads it
    let a = answer_json(&src, &body(r#"{"policy":"scalar","value":1}"#));
    assert_eq!(dps(&a, 1), json!([[T0, 16.0], [T0 + MIN, 21.0]]));
    // single-row output: last timestamp is that row
    assert_eq!(
        a["outputs"][0]["dpsMeta"],
        json!({"firstTimestamp": T0, "lastTimestamp": T0, "setCount": 1, "series": 1})
    );
}

#[test]
fn default_outputs_aliases_and_unknown_ids() {
    let src = missing_host();
    let base = r#""time":{"start":"1h-ago","aggregator":"sum"},"metrics":[{"id":"a","metric":"a"},{"id":"b","metric":"b"}]"#;
    // no outputs: every expression, without alias
    let a = answer_json(
        &src,
        &format!(r#"{{{base},"expressions":[{{"id":"x","expr":"a"}},{{"id":"y","expr":"b"}}]}}"#),
    );
    let ids: Vec<&Value> = a["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["id"])
        .collect();
    assert_eq!(ids, [&json!("x"), &json!("y")]);
    assert!(a["outputs"][0].get("alias").is_none());
    // no expressions either: every metric (all hosts summed: 60, 63 / 4, 2)
    let a = answer_json(&src, &format!("{{{base}}}"));
    assert_eq!(dps(&a, 0), json!([[T0, 60.0], [T0 + MIN, 63.0]]));
    assert_eq!(dps(&a, 1), json!([[T0, 4.0], [T0 + MIN, 2.0]]));
    assert_eq!(
        a["outputs"][0]["meta"][1]["aggregatedTags"],
        json!(["host"])
    );
    assert_eq!(a["outputs"][0]["meta"][1]["commonTags"], json!({}));
    // listed outputs that name nothing are skipped
    let a = answer_json(
        &src,
        &format!(r#"{{{base},"outputs":[{{"id":"nope"}},{{"id":"b","alias":"B"}}]}}"#),
    );
    assert_eq!(a["outputs"].as_array().unwrap().len(), 1);
    assert_eq!(a["outputs"][0]["alias"], "B");
}

#[test]
fn empty_results() {
    let mut src = MemorySource::new();
    src.ints("a", &[], &[(T0 - 10 * 3_600_000, 1)]);
    let a = answer_json(
        &src,
        r#"{"time":{"start":"1h-ago","aggregator":"sum"},"metrics":[{"id":"a","metric":"a"}],
            "expressions":[{"id":"e","expr":"a + 1"}],"outputs":[{"id":"e"},{"id":"a"}]}"#,
    );
    for i in 0..2 {
        let o = &a["outputs"][i];
        assert_eq!(o["dps"], json!([]));
        assert_eq!(
            o["dpsMeta"],
            json!({"firstTimestamp": 0, "lastTimestamp": 0, "setCount": 0, "series": 0})
        );
        assert!(o.get("meta").is_none());
    }
}

#[test]
fn jexl_arithmetic() {
    let mut src = MemorySource::new();
    src.ints("a", &[], &[(T0, 7)]).ints("b", &[], &[(T0, 0)]);
    let eval = |expr: &str| {
        let a = answer_json(
            &src,
            &format!(
                r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},
                    "metrics":[{{"id":"a","metric":"a"}},{{"id":"b","metric":"b"}}],
                    "expressions":[{{"id":"e","expr":"{expr}"}}]}}"#
            ),
        );
        dps(&a, 0)[0][1].clone()
    };
    // division (and modulo) by zero is 0 in JEXL's lenient mode
    assert_eq!(eval("a / b"), json!(0.0));
    assert_eq!(eval("a / 0"), json!(0.0));
    assert_eq!(eval("a % b"), json!(0.0));
    assert_eq!(eval("a % 4"), json!(3.0));
    // integer literals divide as integers
    assert_eq!(eval("a * (1 / 2)"), json!(0.0));
    assert_eq!(eval("a * (1.0 / 2)"), json!(3.5));
    // comparisons and logic: 1 or 0
    assert_eq!(eval("a > b"), json!(1.0));
    assert_eq!(eval("a < b || b != 0"), json!(0.0));
    assert_eq!(eval("b ?: a"), json!(7.0));
    assert_eq!(eval("-a + b * 2"), json!(-7.0));
    // a conditional must still end in a double: 1 is an Integer
    assert_eq!(eval("a > 0 ? a : b"), json!(7.0));
    let e = error(
        &src,
        r#"{"time":{"start":"1h-ago","aggregator":"sum"},"metrics":[{"id":"a","metric":"a"}],
            "expressions":[{"id":"e","expr":"a > 0 ? 1 : 0"}]}"#,
    );
    assert_eq!(
        e.0,
        "Expression returned a result of type: java.lang.Integer for ExpressionIterator(id=e, expression=\"a > 0 ? 1 : 0\")"
    );
}

#[test]
fn join_options() {
    // a has host and dc; b only host (different dc values would never
    // match on all tags).
    let mut src = MemorySource::new();
    src.ints("a", &[("host", "web01"), ("dc", "lga")], &[(T0, 1)])
        .ints("b", &[("host", "web01"), ("dc", "sjc")], &[(T0, 10)]);
    let body = |join: &str| {
        format!(
            r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},
                "filters":[{{"id":"f","tags":[{{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}}]}}],
                "metrics":[{{"id":"a","metric":"a","filter":"f"}},{{"id":"b","metric":"b","filter":"f"}}],
                "expressions":[{{"id":"e","expr":"a + b","join":{join}}}]}}"#
        )
    };
    assert_eq!(
        error(&src, &body(r#"{"operator":"intersection"}"#)).0,
        "No intersections found: IntersectionIterator(id=e, useQueryTags=false, includeAggTags=true)"
    );
    // only the filtered keys (host): they meet
    let a = answer_json(
        &src,
        &body(r#"{"operator":"intersection","useQueryTags":true}"#),
    );
    assert_eq!(dps(&a, 0), json!([[T0, 11.0]]));
    assert_eq!(
        a["outputs"][0]["meta"][1]["commonTags"],
        json!({"host": "web01"})
    );
    // a union on all tags keeps both, each with 0 for the other
    let a = answer_json(&src, &body(r#"{"operator":"union"}"#));
    assert_eq!(dps(&a, 0), json!([[T0, 1.0, 10.0]]));

    // aggregated tags: a sums two racks of one host, b has no rack tag
    let mut src = MemorySource::new();
    src.ints("a", &[("host", "web01"), ("rack", "r1")], &[(T0, 1)])
        .ints("a", &[("host", "web01"), ("rack", "r2")], &[(T0, 2)])
        .ints("b", &[("host", "web01")], &[(T0, 10)]);
    assert!(
        error(&src, &body(r#"{"operator":"intersection"}"#))
            .0
            .starts_with("No intersections found")
    );
    let a = answer_json(
        &src,
        &body(r#"{"operator":"intersection","includeAggTags":false}"#),
    );
    assert_eq!(dps(&a, 0), json!([[T0, 13.0]]));
    assert_eq!(
        a["outputs"][0]["meta"][1]["aggregatedTags"],
        json!(["rack"])
    );
}

#[test]
fn downsampling_and_rate_run_as_sub_queries() {
    let mut src = MemorySource::new();
    // every 30 s: 0, 30, 60, 90 … for 4 minutes
    let points: Vec<(i64, i64)> = (0..8).map(|i| (T0 + i * 30_000, i * 30)).collect();
    src.ints("a", &[], &points);
    let a = answer_json(
        &src,
        r#"{"time":{"start":"1431561600","end":"1431561810","aggregator":"sum",
             "downsampler":{"interval":"1m","aggregator":"avg","fillPolicy":{"policy":"nan"}}},
            "metrics":[{"id":"a","metric":"a"}],"expressions":[{"id":"e","expr":"a * 2"}]}"#,
    );
    // 1m averages: (0+30)/2 = 15, 75, 135, 195; doubled.
    assert_eq!(
        dps(&a, 0),
        json!([
            [T0, 30.0],
            [T0 + MIN, 150.0],
            [T0 + 2 * MIN, 270.0],
            [T0 + 3 * MIN, 390.0]
        ])
    );
    let a = answer_json(
        &src,
        r#"{"time":{"start":"1431561600","end":"1431561810","aggregator":"sum","rate":true},
            "metrics":[{"id":"a","metric":"a"}],"expressions":[{"id":"e","expr":"a"}]}"#,
    );
    // 30 per 30 s = 1 per second, from the second point on
    let rows = dps(&a, 0);
    assert_eq!(rows.as_array().unwrap().len(), 7);
    assert_eq!(rows[0], json!([T0 + 30_000, 1.0]));
}

#[test]
fn errors_in_opentsdb_words() {
    let src = missing_host();
    let q = |rest: &str| format!(r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},{rest}}}"#);
    let metrics = r#""metrics":[{"id":"a","metric":"a"},{"id":"b","metric":"b"}]"#;
    assert_eq!(
        error(&src, r#"{"metrics":[{"id":"a","metric":"a"}]}"#).0,
        "missing time"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"a + c"}}]"#
            ))
        )
        .0,
        "Expression [a + c] was missing input c"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"e + a"}}]"#
            ))
        )
        .0,
        "Self referencing expression found: e"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e1","expr":"e2 + a"}},{{"id":"e2","expr":"e1 * 2"}}]"#
            ))
        )
        .0,
        "Circular reference found: e2"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"a + b","join":{{"operator":"outer"}}}}]"#
            ))
        )
        .0,
        "Unrecognized set operator: outer"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"a + b","join":{{}}}}]"#
            ))
        )
        .0,
        "The set operator cannot be null"
    );
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"1 + 1"}}]"#
            ))
        )
        .0,
        "The expression didn't appear to have any variables"
    );
    assert_eq!(
        error(
            &src,
            &q(r#""metrics":[{"id":"a","metric":"a","filter":"f1"}]"#)
        )
        .0,
        "No filter defined: f1"
    );
    assert_eq!(
        error(&src, &q(r#""metrics":[{"id":"a","metric":"nosuch"}]"#)).0,
        "No such name for 'metrics': 'nosuch'"
    );
    assert_eq!(
        error(
            &src,
            &q(r#""metrics":[{"id":"a","metric":"a","aggregator":"SUM"}]"#)
        )
        .0,
        "No such aggregation function: SUM"
    );
    assert_eq!(
        error(
            &src,
            r#"{"time":{"start":"1h-ago","end":"2h-ago","aggregator":"sum"},"metrics":[{"id":"a","metric":"a"}]}"#
        )
        .0,
        format!(
            "End time [{}] must be greater than or equal to the start time [{}]",
            NOW - 7_200_000,
            NOW - 3_600_000
        )
    );
    let (message, details) = error(
        &src,
        &q(&format!(
            r#"{metrics},"expressions":[{{"id":"e","expr":"a.b + 1"}}]"#
        )),
    );
    assert_eq!(message, "Invalid expression at index 0");
    assert!(details.unwrap().contains("member access"));
    // (+) on a boolean and an integer fails even in lenient mode
    assert_eq!(
        error(
            &src,
            &q(&format!(
                r#"{metrics},"expressions":[{{"id":"e","expr":"(a > b) + 1"}}]"#
            ))
        )
        .0,
        "+/- error in expression [(a > b) + 1]"
    );
}

#[test]
fn bounds() {
    let src = missing_host();
    let long = vec!["a"; 3000].join("+");
    let (message, details) = error(
        &src,
        &format!(
            r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},"metrics":[{{"id":"a","metric":"a"}}],
                "expressions":[{{"id":"e","expr":"{long}"}}]}}"#
        ),
    );
    assert_eq!(message, "Invalid expression at index 0");
    assert!(details.unwrap().contains("the limit is 4096"));
    let many: Vec<String> = (0..=crate::expression::limits::MAX_EXPRESSIONS)
        .map(|i| format!(r#"{{"id":"e{i}","expr":"a"}}"#))
        .collect();
    assert_eq!(
        error(
            &src,
            &format!(
                r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},"metrics":[{{"id":"a","metric":"a"}}],
                    "expressions":[{}]}}"#,
                many.join(",")
            )
        )
        .0,
        "Too many expressions: 101 (the limit is 100)"
    );
    // the budget bounds what evaluation holds
    let query = parse(join_request("union", "null").as_bytes(), NOW).unwrap();
    let budget = QueryBudget::new(QueryLimits {
        max_values: 8,
        ..QueryLimits::default()
    });
    let e = run(&query, &src, &budget).unwrap_err();
    assert!(matches!(e, QueryError::Limit(_)), "{e:?}");
}

#[test]
fn upper_case_ids_work() {
    // OpenTSDB 2.4 fails these (it looks variables up lower-cased).
    let mut src = MemorySource::new();
    src.ints("a", &[], &[(T0, 4)]);
    let a = answer_json(
        &src,
        r#"{"time":{"start":"1h-ago","aggregator":"sum"},"metrics":[{"id":"cpuNice","metric":"a"}],
            "expressions":[{"id":"Busy","expr":"cpuNice * 25"}]}"#,
    );
    assert_eq!(dps(&a, 0), json!([[T0, 100.0]]));
}

#[test]
fn documented_section_snippets() {
    // The documentation's snippets, assembled: its `time` example ("1h-ago"
    // to "10m-ago", 15m max downsampling; the required aggregator added),
    // its `filters` example (host=* grouped, colo=lga not grouped; fixed
    // into valid JSON), seven CPU metrics a..g, its `cpubusy` expression and
    // join, and its output with an alias.
    let states = [
        ("a", "user", [10, 30]),
        ("b", "nice", [0, 0]),
        ("c", "system", [5, 10]),
        ("d", "iowait", [5, 0]),
        ("e", "irq", [0, 0]),
        ("f", "softirq", [0, 0]),
        ("g", "idle", [80, 60]),
    ];
    let mut src = MemorySource::new();
    for (_, state, [web01, web02]) in states {
        let metric = format!("sys.cpu.{state}");
        src.ints(
            &metric,
            &[("host", "web01"), ("colo", "lga")],
            &[(T0 + MIN, web01)],
        )
        .ints(
            &metric,
            &[("host", "web02"), ("colo", "lga")],
            &[(T0 + MIN, web02)],
        )
        // excluded by colo=lga
        .ints(
            &metric,
            &[("host", "web03"), ("colo", "sjc")],
            &[(T0 + MIN, 1)],
        );
    }
    let metrics: Vec<String> = states
        .iter()
        .map(|(id, state, _)| {
            format!(r#"{{"id":"{id}", "filter":"f1", "metric":"sys.cpu.{state}"}}"#)
        })
        .collect();
    let body = format!(
        r#"{{"time":{{ "start":"1h-ago", "end":"10m-ago", "downsampler":{{"interval":"15m","aggregator":"max"}}, "aggregator":"sum"}},
            "filters":[{{
              "id":"f1",
              "tags":[
                {{ "type":"wildcard", "tagk":"host", "filter":"*", "groupBy":true }},
                {{ "type":"literal_or", "tagk":"colo", "filter":"lga", "groupBy":false }}
              ]}}],
            "metrics":[{}],
            "expressions":[{{
              "id": "cpubusy",
              "expr": "(((a + b + c + d + e + f + g) - g) / (a + b + c + d + e + f + g)) * 100",
              "join": {{ "operator": "intersection", "useQueryTags": true, "includeAggTags": false }}
            }}],
            "outputs":[{{"id":"cpubusy", "alias":"System Busy"}}]}}"#,
        metrics.join(",")
    );
    let a = answer_json(&src, &body);
    let out = &a["outputs"][0];
    assert_eq!(out["id"], "cpubusy");
    assert_eq!(out["alias"], "System Busy");
    // one 15-minute bucket at T0; web01: (100 - 80) / 100 * 100 = 20,
    // web02: (100 - 60) / 100 * 100 = 40; web03 (colo=sjc) filtered out
    assert_eq!(out["dps"], json!([[T0, 20.0, 40.0]]));
    assert_eq!(
        out["meta"][1]["commonTags"],
        json!({"colo": "lga", "host": "web01"})
    );
    assert_eq!(out["meta"][1]["metrics"].as_array().unwrap().len(), 7);
    assert_eq!(
        a["query"]["time"]["downsampler"],
        json!({"interval": "15m", "aggregator": "max", "fillPolicy": null})
    );
}
