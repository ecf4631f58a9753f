//! Replays of what Grafana's OpenTSDB data source sends (reference
//! `clients.md` §1.3–§1.9), on both of its request paths, against the real
//! server; every response is checked for the fields Grafana reads.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::Server;

/// An hour-aligned instant (2023-11-14T22:00:00Z).
const T0: u64 = 1_699_999_200;

fn server() -> (Server, String) {
    let s = Server::start();
    let mut pts = Vec::new();
    for (host, env, base) in [("web01", "prod", 10.0), ("web02", "dev", 20.0)] {
        for i in 0..4u64 {
            pts.push(json!({"metric":"cpu.idle","timestamp":T0 + i * 60,
                "value": base + i as f64,"tags":{"host":host,"env":env}}));
        }
    }
    pts.push(
        json!({"metric":"cpu.user","timestamp":T0,"value":1,"tags":{"host":"web01","env":"prod"}}),
    );
    let r = s.post_json("/api/put", &Value::Array(pts).to_string());
    assert_eq!(r.status, 204, "{}", r.text());
    let j = s
        .get("/api/search/lookup?m=cpu.idle%7Bhost=web01%7D")
        .json();
    let tsuid = j["results"][0]["tsuid"]
        .as_str()
        .expect("tsuid")
        .to_string();
    // One series note and one global note (written as the Go client does).
    let r = s.post_json(
        "/api/annotation",
        &json!({"tsuid": tsuid, "startTime": T0 + 30, "description": "deploy web01"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.post_json(
        "/api/annotation",
        &json!({"startTime": T0 + 90, "description": "network outage"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    (s, tsuid)
}

/// A JSON array of strings, as Grafana's `metricFindQuery` maps it.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|x| x.as_str().expect("a string").to_string())
        .collect()
}

/// `tag_names()`: the deduplicated, sorted keys of `results[].tags`.
fn tag_names(v: &Value) -> Vec<String> {
    let keys: BTreeSet<String> = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .flat_map(|r| r["tags"].as_object().expect("tags object").keys().cloned())
        .collect();
    keys.into_iter().collect()
}

/// `tag_values(M, K)`: the deduplicated `results[].tags[K]`.
fn tag_values(v: &Value, key: &str) -> Vec<String> {
    let vals: BTreeSet<String> = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["tags"][key].as_str().map(str::to_string))
        .collect();
    vals.into_iter().collect()
}

#[test]
fn grafana_health_checks() {
    let (s, _) = server();
    // Backend path: exactly 200, no `max`.
    let r = s.get("/api/suggest?q=cpu&type=metrics");
    assert_eq!(r.status, 200);
    assert!(r.json().is_array());
    // Legacy path: through the proxy with `max=<lookupLimit>`, any 2xx.
    let r = s.get("/api/suggest?type=metrics&q=cpu&max=1000");
    assert!((200..300).contains(&r.status));
}

#[test]
fn grafana_template_variables() {
    let (s, _) = server();
    // metrics(cpu) and metrics() (empty q: everything up to max).
    let r = s.get("/api/suggest?type=metrics&q=cpu&max=1000");
    assert_eq!(strings(&r.json()), ["cpu.idle", "cpu.user"]);
    let r = s.get("/api/suggest?type=metrics&q=&max=1000");
    assert_eq!(strings(&r.json()), ["cpu.idle", "cpu.user"]);
    // tag_names(cpu.idle): limit=1000 (frontend) and limit=0 (backend path
    // when lookupLimit was never saved).
    for limit in ["1000", "0"] {
        let r = s.get(&format!("/api/search/lookup?m=cpu.idle&limit={limit}"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(tag_names(&r.json()), ["env", "host"]);
    }
    // tag_values(cpu.idle, host) and with an extra filter.
    let r = s.get("/api/search/lookup?m=cpu.idle%7Bhost=*%7D&limit=1000");
    assert_eq!(tag_values(&r.json(), "host"), ["web01", "web02"]);
    let r = s.get("/api/search/lookup?m=cpu.idle%7Bhost=*,env=prod%7D&limit=1000");
    assert_eq!(tag_values(&r.json(), "host"), ["web01"]);
    let r = s.get("/api/search/lookup?m=cpu.idle%7Benv=*%7D&limit=0");
    assert_eq!(tag_values(&r.json(), "env"), ["dev", "prod"]);
    // suggest_tagk(ho), suggest_tagv(web).
    let r = s.get("/api/suggest?type=tagk&q=ho&max=1000");
    assert_eq!(strings(&r.json()), ["host"]);
    let r = s.get("/api/suggest?type=tagv&q=web&max=1000");
    assert_eq!(strings(&r.json()), ["web01", "web02"]);
    // The query editor's lists: an array of strings, an object.
    let aggs = strings(&s.get("/api/aggregators").json());
    assert!(aggs.iter().any(|a| a == "sum"));
    let filters = s.get("/api/config/filters").json();
    assert!(
        filters
            .as_object()
            .is_some_and(|o| o.contains_key("wildcard"))
    );
}

/// Checks one `/api/query` result the way the frontend path reads it.
fn check_frontend_series(r: &Value) {
    assert!(r["metric"].is_string());
    assert!(r["tags"].is_object());
    assert!(r["aggregateTags"].is_array());
    let dps = r["dps"].as_object().expect("dps object");
    let ts: Vec<u64> = dps
        .keys()
        .map(|k| k.parse().expect("second keys"))
        .collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "ascending: {ts:?}");
    assert!(dps.values().all(Value::is_number));
}

#[test]
fn grafana_dashboard_queries_both_paths() {
    let (s, _) = server();
    // Frontend path, version 2.3: ms times, showQuery → query.index.
    let body = json!({"start": T0 * 1000, "end": (T0 + 600) * 1000, "msResolution": false,
        "globalAnnotations": true, "showQuery": true,
        "queries": [{"refId": "A", "datasource": {"type": "opentsdb", "uid": "abc"},
            "metric": "cpu.idle", "aggregator": "sum", "downsampleAggregator": "avg",
            "downsampleFillPolicy": "none", "tags": {},
            "filters": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": true}],
            "downsample": "1m-avg"}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let items = j.as_array().expect("array");
    assert_eq!(items.len(), 2);
    for it in items {
        check_frontend_series(it);
        assert_eq!(it["query"]["index"], 0);
    }
    // Backend path, version 2.4: seconds, one query per POST, arrays.
    let body = json!({"start": T0, "end": T0 + 600, "queries": [{"metric": "cpu.idle",
        "aggregator": "sum", "downsample": "1m-avg",
        "filters": [{"type": "literal_or", "tagk": "host", "filter": "web01|web02", "groupBy": true}]}]});
    let r = s.http(
        "POST",
        "/api/query?arrays=true",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    for it in j.as_array().expect("array") {
        assert!(it["tags"].is_object() && it["aggregateTags"].is_array());
        for p in it["dps"].as_array().expect("dps arrays") {
            assert!(p[0].is_u64(), "integer seconds: {p}");
            assert!(p[1].is_number() || p[1].is_null());
        }
    }
    assert_eq!(j[0]["dps"][0], json!([T0, 10.0]));
    // An unknown metric: OpenTSDB's error envelope, which the panel shows.
    let body = json!({"start": T0, "queries": [{"metric": "nope", "aggregator": "sum"}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "No such name for 'metrics': 'nope'"
    );
}

#[test]
fn grafana_annotation_queries_both_paths() {
    let (s, _) = server();
    // Frontend path: sum, no downsample, globalAnnotations, ms start.
    let body = json!({"start": T0 * 1000, "end": (T0 + 600) * 1000, "globalAnnotations": true,
        "queries": [{"metric": "cpu.idle", "aggregator": "sum"}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let first = &r.json()[0];
    let notes = first["annotations"].as_array().expect("annotations");
    assert_eq!(notes.len(), 1, "{first}");
    assert_eq!(notes[0]["description"], "deploy web01");
    assert_eq!(notes[0]["startTime"], T0 + 30, "startTime in seconds");
    let globals = first["globalAnnotations"].as_array().expect("globals");
    assert_eq!(globals[0]["description"], "network outage");
    assert_eq!(globals[0]["startTime"], T0 + 90);
    // Backend path: seconds, no globalAnnotations; every frame's notes.
    let body = json!({"start": T0, "end": T0 + 600,
        "queries": [{"metric": "cpu.idle", "aggregator": "sum",
            "filters": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": true}]}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let mut seen = Vec::new();
    for frame in j.as_array().expect("array") {
        assert!(frame.get("globalAnnotations").is_none());
        if let Some(a) = frame["annotations"].as_array() {
            seen.extend(a.iter().map(|n| n["description"].clone()));
        }
    }
    assert_eq!(seen, [json!("deploy web01")]);
    // A series without notes in range: no annotations (Grafana: no events).
    let body = json!({"start": T0, "end": T0 + 600,
        "queries": [{"metric": "cpu.user", "aggregator": "sum"}]});
    let j = s.post_json("/api/query", &body.to_string()).json();
    assert!(
        j[0].get("annotations")
            .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty))
    );
}

/// Grafana's Prometheus data source (10.x) pointed at hourglass, replayed:
/// the health check, the build info it reads to pick features, the
/// metrics browser (names, labels, values, series), `label_values()`
/// template variables, a panel's range query and Explore's instant query
/// (form POSTs), and the exemplar and metadata calls; every answer checked
/// for the fields Grafana reads.
#[test]
fn grafana_prometheus_data_source() {
    let (s, _) = server();
    let form = |path: &str, body: String| -> Value {
        let r = s.http(
            "POST",
            path,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        );
        assert_eq!(r.status, 200, "{path} {body}: {}", r.text());
        let j = r.json();
        assert_eq!(j["status"], "success", "{j}");
        j["data"].clone()
    };
    let get = |path: &str| -> Value {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let j = r.json();
        assert_eq!(j["status"], "success", "{j}");
        j["data"].clone()
    };
    let (start, end) = (T0, T0 + 3600);
    // "Save & test": an instant `1+1`.
    let d = get(&format!("/api/v1/query?query=1%2B1&time={end}"));
    assert_eq!(d["resultType"], "scalar");
    assert_eq!(d["result"][1], "2");
    // Build info: Grafana reads `version` to choose its features.
    assert_eq!(get("/api/v1/status/buildinfo")["version"], "2.42.0");
    // Metrics browser: names, then labels, then a label's values.
    let names = get(&format!(
        "/api/v1/label/__name__/values?start={start}&end={end}"
    ));
    assert_eq!(names, json!(["cpu:idle", "cpu:user"]));
    let labels = form(
        "/api/v1/labels",
        format!("match%5B%5D=cpu%3Aidle&start={start}&end={end}"),
    );
    assert_eq!(labels, json!(["__name__", "env", "host"]));
    let values = get(&format!(
        "/api/v1/label/host/values?match%5B%5D=%7B__name__%3D%22cpu%3Aidle%22%7D&start={start}&end={end}"
    ));
    assert_eq!(values, json!(["web01", "web02"]));
    // label_values(cpu:idle{env="prod"}, host): the series API.
    let series = form(
        "/api/v1/series",
        format!("match%5B%5D=cpu%3Aidle%7Benv%3D%22prod%22%7D&start={start}&end={end}"),
    );
    assert_eq!(
        series,
        json!([{"__name__": "cpu:idle", "env": "prod", "host": "web01"}])
    );
    // A panel: a range query, form-encoded, step in seconds.
    let d = form(
        "/api/v1/query_range",
        format!(
            "query=avg+by+%28host%29+%28cpu%3Aidle%29&start={}&end={}&step=60",
            T0,
            T0 + 180
        ),
    );
    assert_eq!(d["resultType"], "matrix");
    let result = d["result"].as_array().expect("a matrix");
    assert_eq!(result.len(), 2);
    assert_eq!(result[0]["metric"], json!({"host": "web01"}));
    assert_eq!(
        result[0]["values"],
        json!([
            [T0, "10"],
            [T0 + 60, "11"],
            [T0 + 120, "12"],
            [T0 + 180, "13"]
        ])
    );
    // Explore: an instant query at the range's end.
    let d = form(
        "/api/v1/query",
        format!("query=cpu%3Aidle%7Bhost%3D%22web02%22%7D&time={}", T0 + 200),
    );
    assert_eq!(d["resultType"], "vector");
    assert_eq!(d["result"][0]["value"], json!([T0 + 200, "23"]));
    // Exemplars (none kept) and metadata (none kept): empty, not errors.
    let d = form(
        "/api/v1/query_exemplars",
        format!("query=cpu%3Aidle&start={start}&end={end}"),
    );
    assert_eq!(d, json!([]));
    assert_eq!(get("/api/v1/metadata"), json!({}));
}
