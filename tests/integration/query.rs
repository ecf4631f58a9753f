//! `/api/query` against values computed by hand.
//!
//! Data set (t0 = 1356998400, metric q.m):
//!   host=web01: t0 → 10, t0+60 → 20, t0+120 → 30
//!   host=web02: t0+30 → 1, t0+90 → 3
//! Cross-series timestamps are the union t0, +30, +60, +90, +120. With
//! linear interpolation web01 is 15 at +30 and 25 at +90; web02 is 2 at
//! +60. web02 has not started at t0 and has ended at +120, so it does not
//! take part there.

use crate::common::{Server, dps, pts};

const T0: i64 = 1356998400;

fn server() -> Server {
    let s = Server::start();
    let mut t = s.telnet();
    t.send(&format!(
        "put q.m {} 10 host=web01\nput q.m {} 1 host=web02\nput q.m {} 20 host=web01\nput q.m {} 3 host=web02\nput q.m {} 30 host=web01\n",
        T0,
        T0 + 30,
        T0 + 60,
        T0 + 90,
        T0 + 120
    ));
    assert!(t.sync().is_empty());
    s
}

fn series(v: &[(i64, f64)]) -> Vec<(String, f64)> {
    pts(&v.iter().map(|&(d, x)| (T0 + d, x)).collect::<Vec<_>>())
}

fn q(s: &Server, m: &str) -> serde_json::Value {
    s.query(&format!("/api/query?start={T0}&end={}&m={m}", T0 + 180))
}

#[test]
fn aggregators_with_interpolation() {
    let s = server();
    let cases: &[(&str, &[(i64, f64)])] = &[
        (
            "sum",
            &[(0, 10.0), (30, 16.0), (60, 22.0), (90, 28.0), (120, 30.0)],
        ),
        (
            "avg",
            &[(0, 10.0), (30, 8.0), (60, 11.0), (90, 14.0), (120, 30.0)],
        ),
        (
            "min",
            &[(0, 10.0), (30, 1.0), (60, 2.0), (90, 3.0), (120, 30.0)],
        ),
        (
            "max",
            &[(0, 10.0), (30, 15.0), (60, 20.0), (90, 25.0), (120, 30.0)],
        ),
        (
            "zimsum",
            &[(0, 10.0), (30, 1.0), (60, 20.0), (90, 3.0), (120, 30.0)],
        ),
        (
            "count",
            &[(0, 1.0), (30, 2.0), (60, 2.0), (90, 2.0), (120, 1.0)],
        ),
    ];
    for (agg, want) in cases {
        let r = q(&s, &format!("{agg}:q.m"));
        assert_eq!(r.as_array().unwrap().len(), 1, "{agg}: {r}");
        assert_eq!(dps(&r[0]), series(want), "aggregator {agg}");
        assert_eq!(r[0]["tags"], serde_json::json!({}), "{agg}");
        assert_eq!(r[0]["aggregateTags"], serde_json::json!(["host"]), "{agg}");
    }
    // `none`: one result per series, in row-key (UID) order.
    let r = q(&s, "none:q.m");
    assert_eq!(r.as_array().unwrap().len(), 2);
    assert_eq!(r[0]["tags"]["host"], "web01");
    assert_eq!(dps(&r[0]), series(&[(0, 10.0), (60, 20.0), (120, 30.0)]));
    assert_eq!(dps(&r[1]), series(&[(30, 1.0), (90, 3.0)]));
}

#[test]
fn downsampling() {
    let s = server();
    // Per series 1m-avg: web01 10,20,30 at 0,60,120; web02 1,3 at 0,60.
    let r = q(&s, "sum:1m-avg:q.m");
    assert_eq!(dps(&r[0]), series(&[(0, 11.0), (60, 23.0), (120, 30.0)]));
    // 2m-sum: web01 30 @0, 30 @120; web02 4 @0.
    let r = q(&s, "sum:2m-sum:q.m");
    assert_eq!(dps(&r[0]), series(&[(0, 34.0), (120, 30.0)]));
    // Fill with NaN: empty bucket 180 is NaN for both series, so the sum is NaN.
    let r = q(&s, "sum:1m-sum-nan:q.m");
    let got = dps(&r[0]);
    assert_eq!(
        &got[..3],
        &series(&[(0, 11.0), (60, 23.0), (120, 30.0)])[..]
    );
    assert_eq!(got[3].0, (T0 + 180).to_string());
    assert!(got[3].1.is_nan());
    let raw = s
        .get(&format!(
            "/api/query?start={T0}&end={}&m=sum:1m-sum-null:q.m",
            T0 + 180
        ))
        .text();
    assert!(raw.contains(&format!("\"{}\":null", T0 + 180)), "{raw}");
    let raw = s
        .get(&format!(
            "/api/query?start={T0}&end={}&m=sum:1m-sum-zero:q.m",
            T0 + 180
        ))
        .json();
    assert_eq!(dps(&raw[0])[3], ((T0 + 180).to_string(), 0.0));
    // Array form (Grafana's backend): NaN is null, which its decoder accepts.
    let raw = s
        .get(&format!(
            "/api/query?start={T0}&end={}&m=sum:1m-sum-nan:q.m&arrays=true",
            T0 + 180
        ))
        .json();
    assert_eq!(raw[0]["dps"][3], serde_json::json!([T0 + 180, null]));
}

#[test]
fn filters_and_group_by() {
    let s = server();
    let r = q(&s, "sum:q.m{host=*}");
    assert_eq!(r.as_array().unwrap().len(), 2);
    assert_eq!(r[0]["tags"]["host"], "web01");
    assert_eq!(dps(&r[0]), series(&[(0, 10.0), (60, 20.0), (120, 30.0)]));
    assert_eq!(r[1]["tags"]["host"], "web02");
    assert_eq!(dps(&r[1]), series(&[(30, 1.0), (90, 3.0)]));
    let r = q(&s, "sum:q.m{host=web01}");
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(dps(&r[0]), series(&[(0, 10.0), (60, 20.0), (120, 30.0)]));
    let r = q(&s, "sum:q.m{host=web01|web02}");
    assert_eq!(r.as_array().unwrap().len(), 2);
    let r = q(&s, "sum:q.m{}{host=wildcard(*02)}");
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(dps(&r[0]), series(&[(30, 1.0), (90, 3.0)]));
    // JSON form with filters and groupBy.
    let body = format!(
        r#"{{"start":{T0},"end":{},"queries":[{{"aggregator":"sum","metric":"q.m","filters":[{{"type":"wildcard","tagk":"host","filter":"web*","groupBy":true}}]}},
                                              {{"aggregator":"max","metric":"q.m","filters":[{{"type":"literal_or","tagk":"host","filter":"web02","groupBy":false}}]}}]}}"#,
        T0 + 180
    );
    let r = s.post_json("/api/query", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j.as_array().unwrap().len(), 3);
    assert_eq!(dps(&j[2]), series(&[(30, 1.0), (90, 3.0)]));
    assert_eq!(j[2]["tags"]["host"], "web02");
}

#[test]
fn grafana_requests() {
    let s = server();
    // Frontend path, version 2.3: ms start, showQuery, extra fields, tags and filters together.
    let body = format!(
        r#"{{"start":{},"end":{},"msResolution":false,"globalAnnotations":true,"showQuery":true,
            "queries":[{{"refId":"A","datasource":{{"type":"opentsdb","uid":"abc"}},"metric":"q.m","aggregator":"sum",
            "downsampleAggregator":"avg","downsampleFillPolicy":"none","tags":{{}},
            "filters":[{{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}}],"downsample":"1m-avg"}}]}}"#,
        T0 * 1000,
        (T0 + 180) * 1000
    );
    let r = s.post_json("/api/query", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j.as_array().unwrap().len(), 2);
    assert_eq!(j[0]["query"]["index"], 0);
    assert!(j[0]["aggregateTags"].is_array());
    // Backend path, version 2.4: seconds, ?arrays=true.
    let body = format!(
        r#"{{"start":{T0},"end":{},"queries":[{{"metric":"q.m","aggregator":"sum","downsample":"1m-avg","filters":[{{"type":"literal_or","tagk":"host","filter":"web01|web02","groupBy":true}}]}}]}}"#,
        T0 + 180
    );
    let r = s.http(
        "POST",
        "/api/query?arrays=true",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    let j = r.json();
    assert_eq!(
        j[0]["dps"],
        serde_json::json!([[T0, 10.0], [T0 + 60, 20.0], [T0 + 120, 30.0]])
    );
}

#[test]
fn query_errors() {
    let s = server();
    let err = |path: &str| {
        let r = s.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        r.json()["error"]["message"].as_str().unwrap().to_string()
    };
    assert_eq!(
        err("/api/query?start=1h-ago&m=sum:nope"),
        "No such name for 'metrics': 'nope'"
    );
    assert_eq!(
        err("/api/query?m=sum:q.m"),
        "Missing parameter <code>start</code>"
    );
    let r = s.post_json(
        "/api/query",
        r#"{"queries":[{"aggregator":"sum","metric":"q.m"}]}"#,
    );
    assert_eq!(
        (
            r.status,
            r.json()["error"]["message"].as_str().unwrap().to_string()
        ),
        (400, "Missing start time".to_string())
    );
    assert_eq!(
        err("/api/query?start=1h-ago&m=foo:q.m"),
        "No such aggregation function: foo"
    );
    assert_eq!(
        err("/api/query?start=1h-ago&m=sum:q.m{nokey=a}"),
        "No such name for 'tagk': 'nokey'"
    );
    assert_eq!(
        err("/api/query?start=1h-ago&m=sum:q.m{host=web09}"),
        "No such name for 'tagv': 'web09'"
    );
    assert!(
        err(&format!("/api/query?start={}&end={T0}&m=sum:q.m", T0 + 10)).starts_with("End time")
    );
    let r = s.post_json("/api/query", "{not json");
    assert_eq!(r.status, 400);
    // An empty window is an empty array.
    assert_eq!(
        s.query("/api/query?start=1000000000&end=1000000100&m=sum:q.m"),
        serde_json::json!([])
    );
}

#[test]
fn query_point_limit_answers_413() {
    let s = Server::start_with("[query]\nmax_points = 3\n");
    let mut t = s.telnet();
    t.send("put big.m 1356998400 1 host=a\nput big.m 1356998401 2 host=a\nput big.m 1356998402 3 host=b\nput big.m 1356998403 4 host=b\n");
    assert!(t.sync().is_empty());
    let r = s.get("/api/query?start=1356998400&end=1356998500&m=sum:big.m");
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Sorry, you have attempted to fetch more than our limit of 3 data points")
    );
    // A narrower query is within the limit.
    let r = s.query("/api/query?start=1356998400&end=1356998500&m=sum:big.m{host=a}");
    assert_eq!(dps(&r[0]).len(), 2);
}

#[test]
fn delete_needs_allow_delete_and_removes_exactly_the_range() {
    let body = r#"{"start":1356998400,"end":1356998460,"delete":true,"queries":[{"aggregator":"sum","metric":"del.m","tags":{"host":"a"}}]}"#;
    let delete_form = "/api/query?start=1356998400&end=1356998460&m=sum:del.m%7Bhost=b%7D";
    let write = |s: &Server| {
        let mut t = s.telnet();
        let mut lines = String::new();
        for i in 0..10 {
            lines.push_str(&format!("put del.m {} {i} host=a\n", 1356998400 + i * 30));
            lines.push_str(&format!("put del.m {} {i} host=b\n", 1356998400 + i * 30));
        }
        t.send(&lines);
        assert!(t.sync().is_empty());
    };
    let count = |s: &Server, host: &str| -> usize {
        let r = s.query(&format!(
            "/api/query?start=1356998400&end=1356999000&m=sum:del.m{{host={host}}}"
        ));
        dps(&r[0]).len()
    };
    // Off (the default): OpenTSDB's refusal, nothing deleted.
    let s = Server::start();
    write(&s);
    let r = s.post_json("/api/query", body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["message"], "Bad request");
    // The DELETE verb with the m= form too (OpenTSDB's TestQueryRpc:
    // 400, not 405).
    let r = s.http("DELETE", delete_form, &[], b"");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["message"], "Bad request");
    assert!(
        r.json()["error"]["details"]
            .as_str()
            .is_some_and(|d| d.starts_with("Deleting data is not enabled")),
        "{}",
        r.text()
    );
    assert_eq!(count(&s, "a"), 10);
    // On: the matching points in [start, end] go, durably; the answer still
    // holds them; host=b is untouched.
    let mut s = Server::start_with("[query]\nallow_delete = true\n");
    write(&s);
    let r = s.post_json("/api/query", body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        dps(&r.json()[0]).len(),
        3,
        "the deleted points are returned"
    );
    assert_eq!(count(&s, "a"), 7);
    assert_eq!(count(&s, "b"), 10);
    s.kill9();
    s.restart();
    assert_eq!(count(&s, "a"), 7, "the delete survives a crash");
    // DELETE with the m= form deletes the same way: host=b's first three.
    let r = s.http("DELETE", delete_form, &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(dps(&r.json()[0]).len(), 3, "{}", r.text());
    assert_eq!(count(&s, "b"), 7);
    assert_eq!(count(&s, "a"), 7);
}

/// Issue 22, defect 5: identical sub-queries of a POST were collapsed, so
/// 2, 3 or 10,000 of them returned one sub-query's series and
/// `sum,max,sum` returned two groups; clients match results to
/// sub-queries by position. Every sub-query answers, in order, over JSON
/// and over `m=`.
#[test]
fn identical_sub_queries_each_answer_in_order() {
    let s = server();
    let body = |aggs: &[&str]| {
        let subs: Vec<String> = aggs
            .iter()
            .map(|a| format!(r#"{{"aggregator":"{a}","metric":"q.m","showQuery":true}}"#))
            .collect();
        format!(
            r#"{{"start":{T0},"end":{},"showQuery":true,"queries":[{}]}}"#,
            T0 + 180,
            subs.join(",")
        )
    };
    for aggs in [
        vec!["sum"; 2],
        vec!["sum"; 3],
        vec!["sum", "max", "sum"],
        vec!["sum"; 1000],
    ] {
        let r = s.post_json("/api/query", &body(&aggs));
        assert_eq!(r.status, 200, "{}", r.text());
        let results = r.json();
        let results = results.as_array().expect("array");
        assert_eq!(results.len(), aggs.len(), "{aggs:?}");
        for (i, (res, agg)) in results.iter().zip(&aggs).enumerate() {
            assert_eq!(res["query"]["index"], i, "{aggs:?}");
            assert_eq!(res["query"]["aggregator"], *agg, "{aggs:?}");
            // At +60: web01 20, web02 interpolated to 2.
            let want = if *agg == "max" { 20.0 } else { 22.0 };
            let at = (T0 + 60).to_string();
            let got = dps(res).into_iter().find(|(k, _)| *k == at).map(|p| p.1);
            assert_eq!(got, Some(want), "{agg}");
        }
    }
    let r = s.query(&format!(
        "/api/query?start={T0}&end={}&m=sum:q.m&m=sum:q.m",
        T0 + 180
    ));
    assert_eq!(r.as_array().map(Vec::len), Some(2));
}
