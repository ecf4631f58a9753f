//! `/api/put` and the small endpoints, as the real clients call them.

use crate::common::{Server, dps, gzip, pts};

const P1: &str = r#"{"metric":"h.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}}"#;

#[test]
fn put_single_object_array_gzip_and_trailing_slash() {
    let s = Server::start();
    // Single object (the Go client), JSON content type.
    let r = s.post_json("/api/put", P1);
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.body.is_empty());
    // Array, no Content-Type (pyopentsdb), trailing slash.
    let arr = r#"[{"metric":"h.cpu","timestamp":1356998410,"value":"2","tags":{"host":"web01"}},
                  {"metric":"h.cpu","timestamp":1356998420000,"value":3.5,"tags":{"host":"web01"}}]"#;
    let r = s.http("POST", "/api/put/", &[], arr.as_bytes());
    assert_eq!(r.status, 204, "{}", r.text());
    // Telegraf: gzip, newline between elements, always Content-Encoding.
    let body = "[{\"metric\":\"h.cpu\",\"timestamp\":1356998430,\"value\":4,\"tags\":{\"host\":\"web01\"}}\n,{\"metric\":\"h.cpu\",\"timestamp\":1356998440,\"value\":1e-07,\"tags\":{\"host\":\"web01\"}}\n]";
    let r = s.http(
        "POST",
        "/api/put",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &gzip(body.as_bytes()),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let q = s.query("/api/query?start=1356998400&end=1356998500&m=sum:h.cpu");
    assert_eq!(
        dps(&q[0]),
        pts(&[
            (1356998400, 1.0),
            (1356998410, 2.0),
            (1356998420, 3.5),
            (1356998430, 4.0),
            (1356998440, 1e-07)
        ])
    );
}

/// The `error` texts of a `details` answer, in order.
fn error_texts(j: &serde_json::Value) -> Vec<&str> {
    j["errors"]
        .as_array()
        .expect("an errors array")
        .iter()
        .map(|e| e["error"].as_str().expect("an error text"))
        .collect()
}

#[test]
fn put_summary_and_details() {
    let s = Server::start();
    let r = s.post_json("/api/put?summary", P1);
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!({"failed": 0, "success": 1}));
    let body = r#"[{"metric":"h.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
                   {"metric":"sys.cpu.nice","timestamp":1365465600,"value":"NaN","tags":{"host":"web01"}},
                   null,
                   {"metric":"","timestamp":1,"value":1,"tags":{"a":"b"}},
                   {"metric":"m","timestamp":0,"value":1,"tags":{"a":"b"}},
                   {"metric":"m","timestamp":1,"value":1,"tags":{}},
                   {"metric":"m","timestamp":1,"tags":{"a":"b"}},
                   {"metric":"m!","timestamp":1,"value":1,"tags":{"a":"b"}}]"#;
    let r = s.post_json("/api/put?details=true", body);
    assert_eq!(r.status, 400, "{}", r.text());
    let j = r.json();
    assert_eq!(j["success"], 1);
    assert_eq!(j["failed"], 7);
    let errors = error_texts(&j);
    assert_eq!(
        errors,
        [
            "Unable to parse value to a number",
            "Unexpected null datapoint encountered in set.",
            "Metric name was empty",
            "Invalid timestamp",
            "Missing tags",
            "Empty value",
            "Invalid metric name (\"m!\"): illegal character: !",
        ]
    );
    assert_eq!(
        j["errors"][0]["datapoint"],
        serde_json::json!({"metric":"sys.cpu.nice","timestamp":1365465600,"value":"NaN","tags":{"host":"web01"}})
    );
    // sync with a timeout reports the timeouts count (0: the WAL is fast).
    let r = s.post_json("/api/put?summary&sync&sync_timeout=60000", P1);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            serde_json::json!({"failed": 0, "success": 1, "timeouts": 0})
        )
    );
    let r = s.post_json("/api/put?sync&sync_timeout=abc", P1);
    assert_eq!(r.status, 400);
    // Without flags: one error object, nothing about the good points.
    let r = s.post_json(
        "/api/put",
        r#"[{"metric":"m","timestamp":1,"value":"x","tags":{"a":"b"}}]"#,
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "One or more data points had errors"
    );
    assert_eq!(r.json()["error"]["code"], 400);
}

/// Elements of a series already written skip decoding through the series
/// cache: their bad timestamps and values still get the full path's error
/// texts, and every good point reads back, across a dropped cache.
#[test]
fn put_of_known_series_keeps_values_and_error_texts() {
    let s = Server::start();
    let elem = |ts: &str, v: &str| {
        format!(
            r#"{{"metric":"k.cpu","timestamp":{ts},"value":{v},"tags":{{"host":"w1","dc":"x"}}}}"#
        )
    };
    let mut want = Vec::new();
    for k in 0..6i64 {
        let t = 1_356_998_400 + k * 60;
        let good = [
            elem(&t.to_string(), &k.to_string()),
            elem(&format!("\"{}\"", (t + 10) * 1000), &format!("\"{k}.5\"")),
        ];
        want.push((t, k as f64));
        want.push((t + 10, k as f64 + 0.5));
        let bad = [
            elem(&t.to_string(), "\"NaN\""),
            elem("0", "1"),
            elem(&t.to_string(), "\"x\""),
            elem(&t.to_string(), "null"),
            elem("99999999999999", "1"),
        ];
        let body = format!("[{},{}]", good.join(","), bad.join(","));
        let r = s.post_json("/api/put?details", &body);
        let j = r.json();
        assert_eq!(
            (r.status, &j["success"], &j["failed"]),
            (400, &2.into(), &5.into()),
            "{j}"
        );
        let errors = error_texts(&j);
        assert_eq!(
            errors[..4],
            [
                "Unable to parse value to a number",
                "Invalid timestamp",
                "Unable to parse value to a number",
                "Empty value",
            ],
            "{j}"
        );
        assert!(errors[4].starts_with("bad timestamp=99999999999999"), "{j}");
        if k == 3 {
            assert_eq!(s.http("POST", "/api/dropcaches", &[], b"").status, 200);
        }
    }
    let q = s.query("/api/query?start=1356998400&end=1357002000&m=sum:k.cpu{host=w1}");
    assert_eq!(dps(&q[0]), pts(&want));
}

#[test]
fn put_body_errors() {
    let s = Server::start();
    let r = s.post_json("/api/put", "");
    assert_eq!(
        (r.status, r.json()["error"]["message"].as_str().unwrap()),
        (400, "Missing request content")
    );
    let r = s.post_json("/api/put", "42");
    assert_eq!(
        r.json()["error"]["message"],
        "The JSON must start as an object or an array"
    );
    let r = s.post_json("/api/put", "[{\"metric\":");
    assert_eq!(
        r.json()["error"]["message"],
        "Unable to parse the given JSON"
    );
    assert!(r.json()["error"]["details"].is_string());
    let r = s.get("/api/put");
    assert_eq!(r.status, 405);
    assert_eq!(
        r.json()["error"]["details"],
        "The HTTP method [GET] is not permitted for this endpoint"
    );
    let r = s.http(
        "POST",
        "/api/put",
        &[("Content-Encoding", "gzip")],
        b"not gzip",
    );
    assert_eq!(r.status, 400);
}

#[test]
fn unknown_metric_via_http_when_auto_create_is_off() {
    let s = Server::start_with("[uid]\nauto_create_metrics = false\n");
    let r = s.post_json(
        "/api/put?details",
        r#"{"metric":"new.metric","timestamp":1479496160,"value":1,"tags":{"host":"a"}}"#,
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"][0]["error"], "Unknown metric");
}

#[test]
fn small_endpoints() {
    let s = Server::start();
    s.post_json("/api/put", r#"[{"metric":"sys.cpu.user","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
                               {"metric":"sys.mem.free","timestamp":1356998400,"value":1,"tags":{"host":"web02"}},
                               {"metric":"net.bytes","timestamp":1356998400,"value":1,"tags":{"host":"web01"}}]"#);
    let sug = s.get("/api/suggest?type=metrics&q=sys");
    assert_eq!(sug.status, 200);
    assert_eq!(
        sug.json(),
        serde_json::json!(["sys.cpu.user", "sys.mem.free"])
    );
    assert_eq!(
        s.get("/api/suggest?type=metrics&q=sys&max=1").json(),
        serde_json::json!(["sys.cpu.user"])
    );
    assert_eq!(
        s.get("/api/suggest?type=metrics&q=")
            .json()
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        s.get("/api/suggest?type=tagv&q=web").json(),
        serde_json::json!(["web01", "web02"])
    );
    assert_eq!(s.get("/api/suggest?q=cpu&type=metrics").status, 200); // Grafana health check
    assert_eq!(
        s.post_json("/api/suggest/", r#"{"type":"tagk","q":"h","max":10}"#)
            .json(),
        serde_json::json!(["host"])
    );
    assert_eq!(
        s.get("/api/suggest?q=x").json()["error"]["message"],
        "Missing parameter <code>type</code>"
    );
    assert_eq!(
        s.get("/api/suggest?type=foo").json()["error"]["message"],
        "Invalid 'type' parameter:foo"
    );
    assert_eq!(
        s.get("/api/suggest?type=metrics&max=x").json()["error"]["message"],
        "Unable to parse 'max' as a number"
    );

    let aggs = s.get("/api/aggregators").json();
    for a in [
        "sum", "avg", "min", "max", "count", "zimsum", "none", "dev", "p99",
    ] {
        assert!(
            aggs.as_array().unwrap().iter().any(|x| x == a),
            "{a} missing from {aggs}"
        );
    }
    let filters = s.get("/api/config/filters/").json();
    for f in [
        "literal_or",
        "wildcard",
        "iliteral_or",
        "not_literal_or",
        "regexp",
    ] {
        assert!(filters.get(f).is_some(), "{f} missing from {filters}");
    }
    assert!(s.get("/api/version").json()["version"].is_string());
    assert_eq!(s.get("/api/v1/version").status, 200);
    assert_eq!(s.get("/API/VERSION").status, 200);
    assert_eq!(
        s.http("POST", "/api/dropcaches", &[], b"").json()["message"],
        "Caches dropped"
    );
    let stats = s.get("/api/stats").json();
    assert!(
        stats
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["metric"] == "tsd.datapoints.added" && e["value"] == "3"),
        "{stats}"
    );
    let nf = s.get("/api/nope");
    assert_eq!(
        (nf.status, nf.json()["error"]["message"].as_str().unwrap()),
        (404, "Endpoint not found")
    );
    let v2 = s.get("/api/v2/version");
    assert_eq!(v2.status, 501);
    let q = s.get("/api/query?start=1356998400&m=sum:sys.cpu.user");
    assert_eq!(
        q.header("content-type"),
        Some("application/json; charset=UTF-8")
    );
    let m = s.get("/metrics");
    assert!(
        m.text().contains("hourglass_points_written_total 3"),
        "{}",
        m.text()
    );
    // The registry's bytes as they are at the scrape, not as the last
    // flush round (every 30 s) left them: the series written just now count.
    assert!(s.metric("hourglass_series_registry_bytes") > 0);
}

#[test]
fn config_and_serializers() {
    let s = Server::start_with("[query]\nmax_points = 1234\n");
    let r = s.get("/api/config");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let m = j.as_object().expect("object");
    assert!(m.values().all(serde_json::Value::is_string), "{j}");
    let keys: Vec<&String> = m.keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(j["tsd.query.limits.data_points.default"], "1234");
    assert_eq!(j["hourglass.query.max_points"], "1234");
    assert_eq!(j["tsd.core.auto_create_metrics"], "true");
    let r = s.get("/api/serializers");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()[0]["serializer"], "json");
    let r = s.http("DELETE", "/api/config", &[], b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["error"]["code"], 405);
}
