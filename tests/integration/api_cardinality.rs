//! `/api/stats/cardinality` against the real server: series counts per
//! metric, tag key and value from the series index, its bounds and errors,
//! and that it survives `kill -9`.

use crate::common::Server;

const T0: u64 = 1_700_000_000;

fn put(s: &Server, metric: &str, tags: &[(&str, String)]) {
    let tags: serde_json::Map<String, serde_json::Value> = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone().into()))
        .collect();
    let body = serde_json::json!([{"metric": metric, "timestamp": T0, "value": 1, "tags": tags}]);
    let r = s.post_json("/api/put", &body.to_string());
    assert_eq!(r.status, 204, "{}", r.text());
}

fn counted(list: &serde_json::Value) -> Vec<(String, u64)> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().expect("name").to_string(),
                c["series"].as_u64().expect("series"),
            )
        })
        .collect()
}

#[test]
fn cardinality_counts_the_series_of_the_index() {
    let mut s = Server::start();
    // m1: 10 hosts × 2 dcs; m2: 5 hosts. Hosts h0..h4 are in 3 series,
    // h5..h9 in 2.
    for h in 0..10 {
        for dc in ["a", "b"] {
            put(&s, "m1", &[("host", format!("h{h}")), ("dc", dc.into())]);
        }
    }
    for h in 0..5 {
        put(&s, "m2", &[("host", format!("h{h}"))]);
    }
    // A point of a series already there is no new series.
    put(&s, "m2", &[("host", "h0".into())]);

    let all = s.get("/api/stats/cardinality?top=3");
    assert_eq!(all.status, 200, "{}", all.text());
    let all = all.json();
    assert_eq!(all["metric"], serde_json::Value::Null);
    assert_eq!(all["totalSeries"], 25);
    assert_eq!(all["metricCount"], 2);
    assert_eq!(all["truncated"], false);
    assert_eq!(
        counted(&all["metrics"]),
        [("m1".to_string(), 20), ("m2".to_string(), 5)]
    );
    let keys = all["tagKeys"].as_array().expect("tag keys");
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["name"], "host");
    assert_eq!(keys[0]["series"], 25);
    assert_eq!(keys[0]["values"], 10);
    assert_eq!(
        counted(&keys[0]["topValues"]),
        [
            ("h0".to_string(), 3),
            ("h1".to_string(), 3),
            ("h2".to_string(), 3)
        ]
    );
    assert_eq!(keys[1]["name"], "dc");
    assert_eq!(keys[1]["series"], 20);
    assert_eq!(keys[1]["values"], 2);
    assert_eq!(
        counted(&keys[1]["topValues"]),
        [("a".to_string(), 10), ("b".to_string(), 10)]
    );

    // One metric's series; the list of metrics cut at `limit`.
    let m2 = s.get("/api/stats/cardinality?metric=m2").json();
    assert_eq!(m2["metric"], "m2");
    assert_eq!(m2["totalSeries"], 5);
    assert_eq!(m2["tagKeys"][0]["values"], 5);
    assert_eq!(m2["tagKeys"].as_array().map(Vec::len), Some(1));
    let cut = s.get("/api/stats/cardinality?limit=1").json();
    assert_eq!(counted(&cut["metrics"]), [("m1".to_string(), 20)]);
    assert_eq!(cut["truncated"], true);
    assert_eq!(cut["metricCount"], 2);

    // The counts come from the index: the same after kill -9 and a restart.
    s.kill9();
    s.restart();
    let again = s.get("/api/stats/cardinality?top=3").json();
    assert_eq!(again, all);

    // Bad input.
    let r = s.get("/api/stats/cardinality?metric=nope");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json()["error"]["message"],
        "Unable to resolve one or more UIDs"
    );
    for bad in ["top=x", "top=1001", "limit=-1", "limit=100001"] {
        let r = s.get(&format!("/api/stats/cardinality?{bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Invalid ")),
            "{bad}: {}",
            r.text()
        );
    }
}

#[test]
fn counting_more_series_than_the_query_limit_allows_is_refused() {
    let s = Server::start_with("[query]\nmax_points = 10\n");
    for h in 0..20 {
        put(&s, "big", &[("pod", format!("p{h}"))]);
    }
    put(&s, "small", &[("pod", "p0".into())]);
    let r = s.get("/api/stats/cardinality");
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("name a metric")),
        "{}",
        r.text()
    );
    // One metric's series fit.
    let r = s.get("/api/stats/cardinality?metric=small");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["totalSeries"], 1);
}
