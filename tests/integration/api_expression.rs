//! `/api/query/exp` and `/api/query/gexp` on a real server: the worked
//! examples of OpenTSDB's documentation over data written through
//! `/api/put`, answered as OpenTSDB documents them (the evaluator's
//! details are unit-tested in `hourglass_query::expression`).

use serde_json::{Value, json};

use crate::common::Server;

/// A whole minute half an hour ago (ms), so that `1y-ago` and `1h-ago`
/// cover the data.
fn t0() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    (now - 1800 - now % 60) * 1000
}

fn put(s: &Server, points: &[(&str, &str, i64, f64)]) {
    let body: Vec<Value> = points
        .iter()
        .map(|(metric, host, ts, v)| {
            json!({"metric": metric, "timestamp": ts, "value": v, "tags": {"host": host}})
        })
        .collect();
    let r = s.post_json("/api/put?sync", &Value::Array(body).to_string());
    assert_eq!(r.status, 204, "{}", r.text());
}

/// The "Complete Example" request of OpenTSDB's `/api/query/exp`
/// documentation, verbatim.
const DOCUMENTED_REQUEST: &str = r#"{
    "time": {"start": "1y-ago", "aggregator": "sum"},
    "filters": [{"tags": [{"type": "wildcard", "tagk": "host", "filter": "web*", "groupBy": true}],
                 "id": "f1"}],
    "metrics": [
        {"id": "a", "metric": "sys.cpu.user", "filter": "f1", "fillPolicy": {"policy": "nan"}},
        {"id": "b", "metric": "sys.cpu.iowait", "filter": "f1", "fillPolicy": {"policy": "nan"}}
    ],
    "expressions": [
        {"id": "e", "expr": "a + b"},
        {"id": "e2", "expr": "e * 2"},
        {"id": "e3", "expr": "e2 * 2"},
        {"id": "e4", "expr": "e3 * 2"},
        {"id": "e5", "expr": "e4 + e2"}
    ],
    "outputs": [{"id": "e5", "alias": "Mega expression"}, {"id": "a", "alias": "CPU User"}]
}"#;

#[test]
fn the_documented_exp_example_answers_as_documented() {
    let s = Server::start();
    let t0 = t0();
    let m = 60_000;
    // The data the documented response implies: sys.cpu.user web01 =
    // 1, 3, 5, 7 and web02 = 2, 8 (minutes 0 and 3); iowait at minutes 0
    // and 3 only.
    put(
        &s,
        &[
            ("sys.cpu.user", "web01", t0, 1.0),
            ("sys.cpu.user", "web01", t0 + m, 3.0),
            ("sys.cpu.user", "web01", t0 + 2 * m, 5.0),
            ("sys.cpu.user", "web01", t0 + 3 * m, 7.0),
            ("sys.cpu.user", "web02", t0, 2.0),
            ("sys.cpu.user", "web02", t0 + 3 * m, 8.0),
            ("sys.cpu.iowait", "web01", t0, 100.0),
            ("sys.cpu.iowait", "web01", t0 + 3 * m, 105.0),
            ("sys.cpu.iowait", "web02", t0, 101.0),
            ("sys.cpu.iowait", "web02", t0 + 3 * m, 106.0),
        ],
    );
    let r = s.post_json("/api/query/exp", DOCUMENTED_REQUEST);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.header("Content-Type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{:?}",
        r.header("Content-Type")
    );
    let answer = r.json();
    let outputs = answer["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), 2, "{answer}");
    // e5 = e4 + e2 = 8e + 2e = 10·(a + b) per host; a minute without b
    // (fill policy nan) is NaN.
    assert_eq!(outputs[0]["id"], "e5");
    assert_eq!(outputs[0]["alias"], "Mega expression");
    assert_eq!(
        outputs[0]["dps"],
        json!([
            [t0, 1010.0, 1030.0],
            [t0 + m, "NaN", "NaN"],
            [t0 + 2 * m, "NaN", "NaN"],
            [t0 + 3 * m, 1120.0, 1140.0]
        ])
    );
    assert_eq!(
        outputs[0]["dpsMeta"],
        json!({"firstTimestamp": t0, "lastTimestamp": t0 + 3 * m, "setCount": 4, "series": 2})
    );
    assert_eq!(
        outputs[0]["meta"][0],
        json!({"index": 0, "metrics": ["timestamp"]})
    );
    assert_eq!(
        outputs[0]["meta"][1]["commonTags"],
        json!({"host": "web01"})
    );
    assert_eq!(
        outputs[0]["meta"][2]["commonTags"],
        json!({"host": "web02"})
    );
    // A metric as an output: web02's missing minutes are written 0, as
    // OpenTSDB writes them.
    assert_eq!(outputs[1]["alias"], "CPU User");
    assert_eq!(
        outputs[1]["dps"],
        json!([
            [t0, 1.0, 2.0],
            [t0 + m, 3.0, 0.0],
            [t0 + 2 * m, 5.0, 0.0],
            [t0 + 3 * m, 7.0, 8.0]
        ])
    );
    assert_eq!(answer["query"]["outputs"][0]["id"], "e5");

    // Intersection (the documentation's join example): a host only one
    // metric has is left out.
    put(&s, &[("sys.cpu.user", "web03", t0, 50.0)]);
    let body = r#"{"time": {"start": "1y-ago", "aggregator": "sum"},
        "filters": [{"id": "f", "tags": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": true}]}],
        "metrics": [{"id": "a", "metric": "sys.cpu.user", "filter": "f"},
                    {"id": "b", "metric": "sys.cpu.iowait", "filter": "f"}],
        "expressions": [{"id": "e", "expr": "a + b", "join": {"operator": "intersection"}}]}"#;
    let r = s.post_json("/api/query/exp", body);
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(answer["outputs"][0]["dpsMeta"]["series"], 2, "{answer}");
    assert_eq!(answer["outputs"][0]["dps"][0], json!([t0, 101.0, 103.0]));

    // Errors in OpenTSDB's words, as 400.
    let r = s.post_json("/api/query/exp", r#"{"metrics": []}"#);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("time"), "{}", r.text());
    let r = s.post_json(
        "/api/query/exp",
        r#"{"time": {"start": "1h-ago", "aggregator": "sum"},
            "metrics": [{"id": "a", "metric": "sys.cpu.user"}],
            "expressions": [{"id": "e", "expr": "a + nope"}]}"#,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.post_json("/api/query/exp", "{not json");
    assert_eq!(r.status, 400, "{}", r.text());
    // Only POST, as OpenTSDB serves it.
    assert_eq!(s.get("/api/query/exp").status, 405);
}

#[test]
fn the_documented_gexp_examples_answer_as_query_does() {
    let s = Server::start();
    let t0 = t0();
    let m = 60_000;
    put(
        &s,
        &[
            ("if.bytes_in", "web01", t0, 1.0),
            ("if.bytes_in", "web01", t0 + m, 2.0),
            ("if.bytes_in", "web02", t0, 10.0),
            ("if.bytes_in", "web02", t0 + m, 20.0),
        ],
    );
    // scale(sum:if.bytes_in{host=*},1024): each host's series times 1024,
    // in /api/query's shape.
    let r = s.get("/api/query/gexp?start=1h-ago&exp=scale(sum:if.bytes_in%7Bhost=*%7D,1024)");
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    let series = answer.as_array().expect("an array");
    assert_eq!(series.len(), 2, "{answer}");
    let ts = |t: i64| (t / 1000).to_string();
    assert_eq!(series[0]["metric"], "if.bytes_in");
    assert_eq!(series[0]["tags"], json!({"host": "web01"}));
    assert_eq!(
        series[0]["dps"],
        json!({ts(t0): 1024.0, ts(t0 + m): 2048.0})
    );
    assert_eq!(
        series[1]["dps"],
        json!({ts(t0): 10240.0, ts(t0 + m): 20480.0})
    );
    // The documentation's sum(…, …): a union on the tags (a host one side
    // lacks counts 0), here nested in scale().
    put(
        &s,
        &[
            ("if.bytes_out", "web01", t0, 100.0),
            ("if.bytes_out", "web01", t0 + m, 200.0),
        ],
    );
    let r = s.get(
        "/api/query/gexp?start=1h-ago&exp=scale(sum(sum:if.bytes_in%7Bhost=*%7D,sum:if.bytes_out%7Bhost=*%7D),2)",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    // web01: 2·(1 + 100), 2·(2 + 200); web02: 2·(10 + 0), 2·(20 + 0).
    assert_eq!(answer[0]["tags"], json!({"host": "web01"}), "{answer}");
    assert_eq!(answer[0]["dps"], json!({ts(t0): 202.0, ts(t0 + m): 404.0}));
    assert_eq!(answer[1]["dps"], json!({ts(t0): 20.0, ts(t0 + m): 40.0}));
    // Errors: no start, an unknown function, a bad parameter.
    for q in [
        "exp=scale(sum:if.bytes_in,2)",
        "start=1h-ago&exp=nosuch(sum:if.bytes_in)",
        "start=1h-ago&exp=scale(sum:if.bytes_in,x)",
        "start=1h-ago",
    ] {
        let r = s.get(&format!("/api/query/gexp?{q}"));
        assert_eq!(r.status, 400, "{q}: {}", r.text());
    }
}
