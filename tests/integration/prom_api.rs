//! The Prometheus HTTP API's series metadata against the real server:
//! `/api/v1/series`, `/api/v1/labels`, `/api/v1/label/<name>/values` with
//! PromQL selectors and names as Prometheus shows them, the fixed answers,
//! and Prometheus' error shapes.

use crate::common::Server;

const T0: u64 = 1_700_000_000;

fn put(s: &Server, metric: &str, tags: &[(&str, &str)]) {
    let tags: serde_json::Map<String, serde_json::Value> = tags
        .iter()
        .map(|(k, v)| (k.to_string(), (*v).into()))
        .collect();
    let body = serde_json::json!([{"metric": metric, "timestamp": T0, "value": 1, "tags": tags}]);
    let r = s.post_json("/api/put", &body.to_string());
    assert_eq!(r.status, 204, "{}", r.text());
}

/// A successful answer's `data`.
fn data(s: &Server, path: &str) -> serde_json::Value {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    let j = r.json();
    assert_eq!(j["status"], "success", "{path}: {j}");
    j["data"].clone()
}

/// An error answer: status, `errorType`, `error`.
fn error(s: &Server, path: &str) -> (u16, String, String) {
    let r = s.get(path);
    let j = r.json();
    assert_eq!(j["status"], "error", "{path}: {j}");
    (
        r.status,
        j["errorType"].as_str().unwrap_or_default().to_string(),
        j["error"].as_str().unwrap_or_default().to_string(),
    )
}

fn enc(selector: &str) -> String {
    form_urlencoded::byte_serialize(selector.as_bytes()).collect()
}

fn setup() -> Server {
    let s = Server::start();
    put(&s, "node.cpu.seconds", &[("host", "a"), ("mode", "idle")]);
    put(&s, "node.cpu.seconds", &[("host", "b"), ("mode", "user")]);
    // A label value as remote write stores it: `:` escaped (%3A).
    put(&s, "up", &[("job", "api.v1"), ("Instance", "h%3A9100")]);
    s
}

#[test]
fn series_labels_and_values_as_prometheus_shows_them() {
    let s = setup();
    let series = data(
        &s,
        &format!("/api/v1/series?match[]={}", enc("node:cpu:seconds")),
    );
    assert_eq!(
        series,
        serde_json::json!([
            {"__name__": "node:cpu:seconds", "host": "a", "mode": "idle"},
            {"__name__": "node:cpu:seconds", "host": "b", "mode": "user"},
        ])
    );
    // Every matcher kind; several selectors are a union, each series once.
    for (selector, want) in [
        (r#"node:cpu:seconds{mode="user"}"#, 1),
        (r#"node:cpu:seconds{mode!="user"}"#, 1),
        (r#"{__name__=~"node:.*", host=~"a|b"}"#, 2),
        (r#"{__name__=~".+", host!~"a"}"#, 2),
        (r#"{job="api.v1"}"#, 1),
        (r#"{job=~"api\\.v1"}"#, 1),
        (r#"{mode="nope"}"#, 0),
        (r#"{nokey="x"}"#, 0),
    ] {
        let got = data(&s, &format!("/api/v1/series?match[]={}", enc(selector)));
        assert_eq!(
            got.as_array().map(Vec::len),
            Some(want),
            "{selector}: {got}"
        );
    }
    let both = data(
        &s,
        &format!(
            "/api/v1/series?match[]={}&match[]={}",
            enc("node:cpu:seconds"),
            enc(r#"{host="a"}"#)
        ),
    );
    assert_eq!(both.as_array().map(Vec::len), Some(2), "{both}");

    assert_eq!(
        data(&s, "/api/v1/labels"),
        serde_json::json!(["Instance", "__name__", "host", "job", "mode"])
    );
    assert_eq!(
        data(&s, &format!("/api/v1/labels?match[]={}", enc("up"))),
        serde_json::json!(["Instance", "__name__", "job"])
    );
    assert_eq!(
        data(&s, "/api/v1/label/__name__/values"),
        serde_json::json!(["node:cpu:seconds", "up"])
    );
    assert_eq!(
        data(&s, "/api/v1/label/job/values"),
        serde_json::json!(["api.v1"])
    );
    // A label name keeps its case in the path.
    assert_eq!(
        data(&s, "/api/v1/label/Instance/values"),
        serde_json::json!(["h:9100"])
    );
    assert_eq!(
        data(
            &s,
            &format!(
                "/api/v1/label/host/values?match[]={}",
                enc(r#"{mode="idle"}"#)
            )
        ),
        serde_json::json!(["a"])
    );
    assert_eq!(data(&s, "/api/v1/label/nope/values"), serde_json::json!([]));

    // POST with a form body, as Prometheus clients send long selectors.
    let r = s.http(
        "POST",
        "/api/v1/series",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("match[]={}", enc(r#"node:cpu:seconds{host="b"}"#)).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"][0]["host"], "b");

    // `limit` cuts, with Prometheus' warning.
    let r = s
        .get(&format!(
            "/api/v1/series?match[]={}&limit=1",
            enc(r#"{__name__=~".+"}"#)
        ))
        .json();
    assert_eq!(r["data"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["warnings"][0], "results truncated due to limit");
    let r = s.get("/api/v1/labels?limit=2").json();
    assert_eq!(r["data"], serde_json::json!(["Instance", "__name__"]));
}

#[test]
fn fixed_answers_and_errors_have_prometheus_shapes() {
    let s = setup();
    let build = data(&s, "/api/v1/status/buildinfo");
    assert_eq!(build["version"], "2.42.0");
    assert_eq!(data(&s, "/api/v1/metadata"), serde_json::json!({}));
    assert_eq!(data(&s, "/api/v1/query_exemplars"), serde_json::json!([]));

    for (path, want) in [
        (
            "/api/v1/series".to_string(),
            "no match[] parameter provided",
        ),
        (
            format!("/api/v1/series?match[]={}", enc("up{")),
            "invalid parameter \"match[]\"",
        ),
        (
            format!("/api/v1/series?match[]={}", enc(r#"{host=~".*"}"#)),
            "invalid parameter \"match[]\"",
        ),
        (
            format!("/api/v1/series?match[]={}", enc("rate(up[5m])")),
            "is not a series selector",
        ),
        (
            format!("/api/v1/series?match[]=up&start={}", enc("yesterday")),
            "invalid parameter \"start\"",
        ),
        (
            "/api/v1/labels?limit=x".to_string(),
            "invalid parameter \"limit\"",
        ),
    ] {
        let (status, kind, message) = error(&s, &path);
        assert_eq!(
            (status, kind.as_str()),
            (400, "bad_data"),
            "{path}: {message}"
        );
        assert!(message.contains(want), "{path}: {message}");
    }
    // Times in both of Prometheus' forms are taken.
    for t in ["1700000000", "1700000000.5", "2023-11-14T22:13:20Z"] {
        data(
            &s,
            &format!("/api/v1/series?match[]=up&start={}&end={}", enc(t), enc(t)),
        );
    }
}

#[test]
fn without_a_token_the_answer_is_prometheus_shaped() {
    let s = Server::start_with("[auth]\nenabled = true\n");
    let r = s.get("/api/v1/labels");
    assert_eq!(r.status, 401, "{}", r.text());
    let j = r.json();
    assert_eq!(j["status"], "error");
    assert_eq!(j["errorType"], "unauthorized");
}

/// `metric` of `tags` at `T0 + i * 15 s` with values `value(i)`, i in 0..n.
fn put_series(s: &Server, metric: &str, tags: &[(&str, &str)], n: u64, value: impl Fn(u64) -> f64) {
    let tags: serde_json::Map<String, serde_json::Value> = tags
        .iter()
        .map(|(k, v)| (k.to_string(), (*v).into()))
        .collect();
    let points: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"metric": metric, "timestamp": T0 + i * 15, "value": value(i), "tags": tags}))
        .collect();
    let r = s.post_json("/api/put", &serde_json::Value::Array(points).to_string());
    assert_eq!(r.status, 204, "{}", r.text());
}

#[test]
fn promql_instant_and_range_queries() {
    let s = Server::start();
    // Two counters: +10 and +5 every 15 s, for 10 minutes.
    put_series(&s, "http.requests", &[("instance", "a")], 41, |i| {
        i as f64 * 10.0
    });
    put_series(&s, "http.requests", &[("instance", "b")], 41, |i| {
        i as f64 * 5.0
    });
    let at = T0 + 300;
    let q = |query: &str, time: u64| {
        data(
            &s,
            &format!("/api/v1/query?query={}&time={time}", enc(query)),
        )
    };
    // A counter rising 10 every 15 s: 40 a minute.
    let r = q("sum(rate(http:requests[1m]))", at);
    assert_eq!(r["resultType"], "vector");
    assert_eq!(
        r["result"],
        serde_json::json!([{"metric": {}, "value": [at, "1"]}])
    );
    let r = q(r#"http:requests{instance="b"}"#, at);
    assert_eq!(
        r["result"],
        serde_json::json!([{"metric": {"__name__": "http:requests", "instance": "b"}, "value": [at, "100"]}])
    );
    assert_eq!(q("1 + 1", at)["result"], serde_json::json!([at, "2"]));
    // Five minutes after the last sample, nothing.
    assert_eq!(
        q("http:requests", T0 + 600 + 301)["result"],
        serde_json::json!([])
    );

    let r = data(
        &s,
        &format!(
            "/api/v1/query_range?query={}&start={}&end={}&step=60",
            enc("sum by (instance) (increase(http:requests[1m]))"),
            T0 + 120,
            T0 + 240
        ),
    );
    assert_eq!(r["resultType"], "matrix");
    let series = r["result"].as_array().expect("matrix");
    assert_eq!(series.len(), 2);
    assert_eq!(series[0]["metric"], serde_json::json!({"instance": "a"}));
    assert_eq!(
        series[0]["values"],
        serde_json::json!([[T0 + 120, "40"], [T0 + 180, "40"], [T0 + 240, "40"]])
    );

    // POST with a form body, as Grafana sends it.
    let r = s.http(
        "POST",
        "/api/v1/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("query={}&time={at}", enc("count(http:requests)")).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"]["result"][0]["value"][1], "2");

    // A JSON body sent as curl sends `-d` (a form) is OpenTSDB's query.
    let r = s.http(
        "POST",
        "/api/v1/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!(r#"{{"start":{T0},"queries":[{{"metric":"http.requests","aggregator":"sum"}}]}}"#)
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()[0]["metric"], "http.requests");
    // OpenTSDB's own /api/v1/query is still OpenTSDB's.
    let r = s.get(&format!("/api/v1/query?start={T0}&m=sum:http.requests"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()[0]["metric"], "http.requests");

    // Errors, in Prometheus' shape.
    for (path, status, kind) in [
        ("/api/v1/query?query=sum(".to_string(), 400, "bad_data"),
        (
            "/api/v1/query_range?query=up&start=10&end=5&step=1".to_string(),
            400,
            "bad_data",
        ),
        (
            "/api/v1/query_range?query=up&start=0&end=100000&step=1".to_string(),
            400,
            "bad_data",
        ),
        (
            "/api/v1/query_range?query=up&start=0&end=10&step=0".to_string(),
            400,
            "bad_data",
        ),
        (
            format!("/api/v1/query?query={}", enc("topk(NaN, http:requests)")),
            422,
            "execution",
        ),
    ] {
        let (got, kind_got, message) = error(&s, &path);
        assert_eq!(
            (got, kind_got.as_str()),
            (status, kind),
            "{path}: {message}"
        );
    }
}
