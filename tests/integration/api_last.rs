//! `/api/query/last` against the real server: from the head, from storage
//! after a restart (with and without `back_scan`, after a backfill), both
//! request forms, `resolve`, and the errors.

use crate::common::Server;

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

#[test]
fn last_point_from_head_and_from_storage() {
    let mut s = Server::start();
    // Two hours ago (a closed hour) and, for web02, an older hour too.
    let t = now_s() / 3600 * 3600 - 2 * 3600 + 120;
    let body = format!(
        r#"[{{"metric":"sys.cpu","timestamp":{a},"value":1,"tags":{{"host":"web01"}}}},
            {{"metric":"sys.cpu","timestamp":{b},"value":2.5,"tags":{{"host":"web01"}}}},
            {{"metric":"sys.cpu","timestamp":{c},"value":7,"tags":{{"host":"web02"}}}}]"#,
        a = t,
        b = t + 60,
        c = t - 3600,
    );
    let r = s.post_json("/api/put", &body);
    assert_eq!(r.status, 204, "{}", r.text());

    // From memory, no back_scan needed.
    let r = s.get("/api/query/last?timeseries=sys.cpu%7Bhost=web01%7D&resolve");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j.as_array().map(Vec::len), Some(1), "{j}");
    assert_eq!(j[0]["timestamp"], (t + 60) * 1000);
    assert_eq!(j[0]["value"], "2.5");
    assert_eq!(j[0]["metric"], "sys.cpu");
    assert_eq!(j[0]["tags"], serde_json::json!({"host": "web01"}));
    let tsuid = j[0]["tsuid"].as_str().expect("tsuid").to_string();
    // Without resolve: no names. A metric without tags: every series.
    let j = s.get("/api/query/last?timeseries=sys.cpu").json();
    assert_eq!(j.as_array().map(Vec::len), Some(2), "{j}");
    assert!(j[0].get("metric").is_none());
    // By TSUID, GET and POST.
    let j = s.get(&format!("/api/query/last?tsuids={tsuid}")).json();
    assert_eq!(j[0]["value"], "2.5");
    let r = s.post_json(
        "/api/query/last",
        &format!(r#"{{"queries":[{{"tsuids":["{tsuid}"]}},{{"metric":"sys.cpu","tags":{{"host":"web02"}}}}],"resolveNames":true}}"#),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j[0]["value"], "2.5");
    assert_eq!(j[1]["value"], "7");
    assert_eq!(j[1]["timestamp"], (t - 3600) * 1000);
    assert_eq!(j[1]["tags"]["host"], "web02");

    // back_scan=N reads the current hour and the N before it, as OpenTSDB
    // does: web02's point (3 hours back) is not returned with back_scan=2,
    // although the head holds it.
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web02%7D&back_scan=2")
        .json();
    assert_eq!(j, serde_json::json!([]));
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web02%7D&back_scan=4")
        .json();
    assert_eq!(j[0]["value"], "7", "{j}");

    // After a clean restart the closed hours are in table files and the
    // head no longer knows the series: the series index recorded their
    // newest hours at the flush, so no back_scan is needed.
    s.stop();
    s.restart();
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web01%7D")
        .json();
    assert_eq!(j[0]["timestamp"], (t + 60) * 1000, "{j}");
    assert_eq!(j[0]["value"], "2.5");
    let j = s.get("/api/query/last?timeseries=sys.cpu").json();
    assert_eq!(j.as_array().map(Vec::len), Some(2), "{j}");
    // A backfill of an older hour, flushed too, does not move the newest
    // hour back.
    let r = s.post_json(
        "/api/put",
        &format!(
            r#"{{"metric":"sys.cpu","timestamp":{},"value":99,"tags":{{"host":"web01"}}}}"#,
            t - 5 * 3600
        ),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    s.stop();
    s.restart();
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web01%7D")
        .json();
    assert_eq!(j[0]["value"], "2.5", "{j}");
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web01%7D&back_scan=3")
        .json();
    assert_eq!(j[0]["timestamp"], (t + 60) * 1000, "{j}");
    assert_eq!(j[0]["value"], "2.5");
    // web02's point is 3 hours back: back_scan=2 stops short of it.
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web02%7D&back_scan=2")
        .json();
    assert_eq!(j, serde_json::json!([]));
    let j = s
        .get("/api/query/last?timeseries=sys.cpu%7Bhost=web02%7D&back_scan=4")
        .json();
    assert_eq!(j[0]["value"], "7", "{j}");
}

#[test]
fn last_point_errors() {
    let s = Server::start();
    let r = s.post_json(
        "/api/put",
        r#"{"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}}"#,
    );
    assert_eq!(r.status, 204);
    for (path, msg) in [
        ("/api/query/last", "Missing sub queries"),
        (
            "/api/query/last?timeseries=sys.cpu&back_scan=x",
            "Unable to parse back_scan parameter",
        ),
        ("/api/query/last?tsuids=XYZ", "Invalid TSUID: XYZ"),
        ("/api/query/last?tsuids=0001", "Invalid TSUID: 0001"),
        (
            "/api/query/last?timeseries=nosuch",
            "No such name for 'metrics': 'nosuch'",
        ),
        (
            "/api/query/last?timeseries=sys.cpu%7Bhost=nosuch%7D",
            "No such name for 'tagv': 'nosuch'",
        ),
    ] {
        let r = s.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], 400);
        assert_eq!(r.json()["error"]["message"], msg, "{path}");
    }
    for (body, msg) in [
        ("{", "Unable to parse the given JSON"),
        ("", "Missing message content"),
        (r#"{"queries":[]}"#, "Missing sub queries"),
    ] {
        let r = s.post_json("/api/query/last", body);
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["message"], msg);
    }
}
