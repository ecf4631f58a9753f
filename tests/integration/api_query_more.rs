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

/// A wide answer (more points than are rendered in one piece) comes back
/// whole, sent as it is rendered; a grouped query over short-lived series
/// names its groups' shared tags and aggregates the pod, whose values it
/// never names.
#[test]
fn wide_answers_are_streamed_whole_and_grouped_tags_named() {
    let s = Server::start();
    // 3 hosts x 100 pods, 400 points each (120,000 points): every pod on
    // one host, a host's dc the same for all its pods.
    const PODS: u64 = 100;
    const STEPS: u64 = 400;
    let mut batch = Vec::new();
    for host in 0..3u64 {
        for pod in 0..PODS {
            for i in 0..STEPS {
                batch.push(json!({"metric": "pod.cpu", "timestamp": T0 + i,
                    "value": host * 1000 + pod + i,
                    "tags": {"host": format!("h{host}"), "pod": format!("p{host}-{pod}"),
                             "dc": format!("dc{}", host % 2)}}));
            }
            if batch.len() >= 20_000 {
                let r = s.post_json("/api/put", &serde_json::Value::Array(batch).to_string());
                assert_eq!(r.status, 204, "{}", r.text());
                batch = Vec::new();
            }
        }
    }
    let r = s.post_json("/api/put", &serde_json::Value::Array(batch).to_string());
    assert_eq!(r.status, 204, "{}", r.text());
    let end = T0 + STEPS;

    // `none`: one result per series, every tag named.
    let r = s.get(&format!("/api/query?start={T0}&end={end}&m=none:pod.cpu"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("transfer-encoding"),
        Some("chunked"),
        "a wide answer is streamed"
    );
    let all = r.json();
    let all = all.as_array().expect("array");
    assert_eq!(all.len(), 300);
    let points: usize = all
        .iter()
        .map(|r| r["dps"].as_object().map_or(0, |d| d.len()))
        .sum();
    assert_eq!(points, 120_000);
    let one = all
        .iter()
        .find(|r| r["tags"]["pod"] == "p2-7")
        .expect("pod p2-7");
    assert_eq!(
        one["tags"],
        json!({"host": "h2", "pod": "p2-7", "dc": "dc0"})
    );
    assert_eq!(one["dps"][(T0 + 5).to_string()], 2000 + 7 + 5);
    // The streamed query held its slot until sent, then was recorded done,
    // with the points it read.
    let stats = s.get("/api/stats/query").json();
    assert_eq!(
        stats["running"].as_array().map(Vec::len),
        Some(0),
        "{stats}"
    );
    let record = stats["completed"]
        .as_array()
        .and_then(|c| c.iter().find(|r| r.to_string().contains("none:pod.cpu")))
        .unwrap_or_else(|| panic!("no record of the none query: {stats}"));
    assert_eq!(record["httpResponse"]["code"], 200, "{record}");

    // Grouped by host: the dc each host's pods share is a tag, the pod is
    // aggregated.
    let q = s.query(&format!(
        "/api/query?start={T0}&end={end}&m=zimsum:pod.cpu%7Bhost=*%7D"
    ));
    let q = q.as_array().expect("array");
    assert_eq!(q.len(), 3);
    for (i, r) in q.iter().enumerate() {
        let host = i as u64;
        assert_eq!(
            r["tags"],
            json!({"host": format!("h{host}"), "dc": format!("dc{}", host % 2)})
        );
        assert_eq!(r["aggregateTags"], json!(["pod"]));
        // The sum over pods 0..100 of host*1000 + pod + i.
        let want = PODS * (host * 1000 + 3) + PODS * (PODS - 1) / 2;
        assert_eq!(r["dps"][(T0 + 3).to_string()], want);
        assert!(r.get("tsuids").is_none());
    }
    // Grouped by dc: two hosts share dc0, so the host is aggregated too.
    let q = s.query(&format!(
        "/api/query?start={T0}&end={end}&m=zimsum:pod.cpu%7Bdc=dc0%7D&show_tsuids"
    ));
    assert_eq!(q[0]["tags"], json!({"dc": "dc0"}));
    assert_eq!(q[0]["aggregateTags"], json!(["host", "pod"]));
    assert_eq!(q[0]["tsuids"].as_array().map(Vec::len), Some(200));
}
