//! `/api/search/lookup` against the real server: the series index, its
//! wildcards and limits, its errors, and that it survives `kill -9`.

use crate::common::Server;

pub(crate) fn put_series(s: &Server) {
    let body = r#"[
        {"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01","dc":"lga"}},
        {"metric":"sys.cpu","timestamp":1356998400,"value":2,"tags":{"host":"web02","dc":"lga"}},
        {"metric":"sys.cpu","timestamp":1356998400,"value":3,"tags":{"host":"db01","dc":"sjc"}},
        {"metric":"sys.mem","timestamp":1356998400,"value":4,"tags":{"host":"web01"}}]"#;
    let r = s.post_json("/api/put", body);
    assert_eq!(r.status, 204, "{}", r.text());
}

/// `host` values of a lookup answer, sorted.
pub(crate) fn hosts(j: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = j["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["tags"]["host"].as_str().expect("host").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn lookup_get_and_post_with_wildcards_and_limits() {
    let s = Server::start();
    put_series(&s);
    let r = s.get("/api/search/lookup?m=sys.cpu%7Bhost=*%7D&limit=0");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["type"], "LOOKUP");
    assert_eq!(j["metric"], "sys.cpu");
    assert_eq!(j["tags"], serde_json::json!([{"key":"host","value":"*"}]));
    assert_eq!(j["limit"], 0);
    assert_eq!(j["totalResults"], 3);
    assert_eq!(j["startIndex"], 0);
    assert!(j["time"].is_u64());
    assert_eq!(hosts(&j), ["db01", "web01", "web02"]);
    let first = &j["results"][0];
    assert_eq!(first["metric"], "sys.cpu");
    let tsuid = first["tsuid"].as_str().unwrap();
    assert_eq!(tsuid.len(), 2 * (3 + 2 * 6), "{tsuid}");
    assert!(
        tsuid
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
    );

    // Limit, default limit, OR within a key, AND across keys.
    let j = s.get("/api/search/lookup?m=sys.cpu&limit=1").json();
    assert_eq!(j["results"].as_array().unwrap().len(), 1);
    let j = s.get("/api/search/lookup?m=sys.cpu&limit=-5").json();
    assert_eq!(j["totalResults"], 3);
    let j = s
        .get("/api/search/lookup?m=sys.cpu%7Bhost=web01,host=db01%7D")
        .json();
    assert_eq!(hosts(&j), ["db01", "web01"]);
    let j = s
        .get("/api/search/lookup?m=sys.cpu%7Bhost=*,dc=lga%7D")
        .json();
    assert_eq!(hosts(&j), ["web01", "web02"]);
    // No metric: any metric; key wildcard.
    let j = s.get("/api/search/lookup?m=%7B*=web01%7D").json();
    let mut metrics: Vec<&str> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    metrics.sort();
    assert_eq!(metrics, ["sys.cpu", "sys.mem"]);
    let j = s.get("/api/search/lookup?m=*%7Bdc=sjc%7D").json();
    assert_eq!(hosts(&j), ["db01"]);

    // POST, as Grafana's backend sends it (limit 0 = unlimited).
    let r = s.post_json(
        "/api/search/lookup",
        r#"{"metric":"sys.cpu","tags":[{"key":"dc","value":"*"}],"limit":0,"useMeta":true}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["totalResults"], 3);
}

#[test]
fn lookup_errors() {
    let s = Server::start();
    put_series(&s);
    let err = |path: &str, status: u16, msg: &str| {
        let r = s.get(path);
        assert_eq!(r.status, status, "{path}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], status);
        assert_eq!(r.json()["error"]["message"], msg, "{path}");
    };
    err(
        "/api/search/lookup",
        400,
        "Missing parameter <code>m</code>",
    );
    err(
        "/api/search/lookup?m=sys.cpu%7Bhost%7D",
        400,
        "Unable to parse query",
    );
    err(
        "/api/search/lookup?m=sys.cpu&limit=x",
        400,
        "Unable to convert 'limit' to a valid number",
    );
    err(
        "/api/search/lookup?m=nosuch.metric",
        404,
        "Unable to resolve one or more UIDs",
    );
    err(
        "/api/search/lookup?m=sys.cpu%7Bhost=nosuch%7D",
        404,
        "Unable to resolve one or more UIDs",
    );
    err(
        "/api/search/tsmeta?query=x",
        400,
        "Searching is not enabled",
    );
    err(
        "/api/search/bogus",
        400,
        "Invalid search query type supplied",
    );
    for (body, msg) in [
        ("{", "Unable to parse the given JSON"),
        ("", "Missing message content"),
        (
            r#"{"limit":3}"#,
            "Missing metric and tags. Please supply at least one value.",
        ),
    ] {
        let r = s.post_json("/api/search/lookup", body);
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["message"], msg);
    }
}

#[test]
fn lookup_over_the_point_budget_is_413() {
    let s = Server::start_with("[query]\nmax_points = 2\n");
    put_series(&s);
    let r = s.get("/api/search/lookup?m=sys.cpu&limit=0");
    assert_eq!(r.status, 413, "{}", r.text());
}

#[test]
fn lookup_finds_series_after_kill9_and_after_a_clean_restart() {
    let mut s = Server::start();
    put_series(&s);
    // A new series made of names that all have UIDs: no UID fsync covers
    // its buffered index row, the WAL replay must bring it back.
    let r = s.post_json(
        "/api/put",
        r#"{"metric":"sys.cpu","timestamp":1356998400,"value":9,"tags":{"host":"db01","dc":"lga"}}"#,
    );
    assert_eq!(r.status, 204);
    s.kill9();
    s.restart();
    let j = s
        .get("/api/search/lookup?m=sys.cpu%7Bhost=db01%7D&limit=0")
        .json();
    assert_eq!(j["totalResults"], 2, "{j}");
    let j = s.get("/api/search/lookup?m=sys.cpu&limit=0").json();
    assert_eq!(j["totalResults"], 4, "{j}");
    // New series after the restart, then a clean stop (checkpoint).
    let r = s.post_json(
        "/api/put",
        r#"{"metric":"sys.cpu","timestamp":1356998460,"value":5,"tags":{"host":"web03","dc":"lga"}}"#,
    );
    assert_eq!(r.status, 204);
    s.stop();
    s.restart();
    let j = s.get("/api/search/lookup?m=sys.cpu&limit=0").json();
    assert_eq!(hosts(&j), ["db01", "db01", "web01", "web02", "web03"]);
}
