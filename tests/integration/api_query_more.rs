//! `/api/query` features of issue 8 checked through the real server: time
//! zones with calendar downsampling, TSUID sub queries, `showTSUIDs`.

use serde_json::json;

use crate::common::Server;

/// 2023-11-14T22:00:00Z (23:00 in Paris).
const T0: u64 = 1_699_999_200;

fn server() -> Server {
    let s = Server::start();
    let mut pts = Vec::new();
    for (host, base) in [("web01", 10), ("web02", 20)] {
        for i in 0..4u64 {
            pts.push(json!({"metric":"cpu.idle","timestamp":T0 + i * 60,
                "value": base + i,"tags":{"host":host}}));
        }
    }
    let r = s.post_json("/api/put", &serde_json::Value::Array(pts).to_string());
    assert_eq!(r.status, 204, "{}", r.text());
    s
}

#[test]
fn calendar_downsampling_in_a_time_zone() {
    let s = server();
    let body = json!({"start": 1_699_900_000, "end": T0 + 600, "timezone": "Europe/Paris",
        "useCalendar": true,
        "queries": [{"metric": "cpu.idle", "aggregator": "sum", "downsample": "1d-sum"}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    // The day bucket starts at local midnight: 2023-11-13T23:00:00Z.
    assert_eq!(r.json()[0]["dps"], json!({"1699916400": 132.0}));
    let body = json!({"start": 1_699_900_000, "timezone": "Mars/Olympus",
        "queries": [{"metric": "cpu.idle", "aggregator": "sum", "downsample": "1dc-sum"}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 400, "{}", r.text());
}

#[test]
fn tsuid_queries_and_show_tsuids() {
    let s = server();
    let j = s
        .get("/api/search/lookup?m=cpu.idle%7Bhost=web01%7D")
        .json();
    let tsuid = j["results"][0]["tsuid"]
        .as_str()
        .expect("tsuid")
        .to_string();
    let q = s.query(&format!(
        "/api/query?start={T0}&end={}&tsuid=sum:{tsuid}&show_tsuids",
        T0 + 600
    ));
    assert_eq!(q.as_array().map(Vec::len), Some(1), "{q}");
    assert_eq!(q[0]["metric"], "cpu.idle");
    assert_eq!(q[0]["tsuids"], json!([tsuid]));
    assert_eq!(q[0]["dps"][T0.to_string()], 10);
    let body = json!({"start": T0, "end": T0 + 600, "showTSUIDs": true,
        "queries": [{"aggregator": "sum", "tsuids": [tsuid]}]});
    let r = s.post_json("/api/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()[0]["tags"]["host"], "web01");
    let r = s.get(&format!("/api/query?start={T0}&tsuid=sum:XYZ"));
    assert_eq!(r.status, 400, "{}", r.text());
}
