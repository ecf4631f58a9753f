//! Rollups computed elsewhere (`/api/rollup`, telnet `rollup`) with the
//! real binary, on either backend (the embedded store's rollup table, or
//! OpenTSDB's rollup tables on Bigtable).

use crate::common::{Server, dps, pts};

const T0: i64 = 1_356_998_400; // 2013-01-01

/// Rollups computed elsewhere, over the telnet `rollup` command and
/// `/api/rollup`, with OpenTSDB's refusals: once acknowledged they answer
/// downsampled queries of their interval, survive `kill -9`, and a raw
/// pre-aggregate is a point of its `_aggregate` series.
#[test]
fn rollups_written_from_outside_answer_their_buckets() {
    let mut s = Server::start();
    let mut t = s.telnet();
    t.send(&format!(
        "rollup 1h-SUM e.m {T0} 10 host=a\n\
         rollup 1h-COUNT e.m {} 4 host=a\n\
         rollup 1h-sum e.m {} 20.5 host=a\n\
         rollup 1m-SUM e.m {T0} 1 host=a\n\
         rollup 1h-SUM e.m\n\
         rollup 1h-SUM e.m {T0}123 1 host=a\n\
         rollup 1h-SUM e.m {T0} 1 host=a _aggregate=MAX\n\
         rollup SUM e.m {T0} 7 host=c\n",
        T0 + 59,
        T0 + 3600
    ));
    // Lines the parser refuses answer at once; the configuration's
    // refusals when the batch is written (before the `version` reply).
    assert_eq!(
        t.sync(),
        [
            "rollup: illegal argument: not enough arguments (need least 7, got 2)".to_string(),
            format!(
                "rollup: illegal argument: bad timestamp={T0}123 when trying to add \
                 value=[1]/0 to metric=e.m, tags={{host=a}}"
            ),
            "rollup: illegal argument: Given tag value for _aggregate of MAX did not match \
             the group by aggregator of null for e.m {host=a, _aggregate=MAX}"
                .to_string(),
            "rollup: No such rollup: No rollups configured for the interval: 1m".to_string(),
        ]
    );
    let body = format!(
        r#"[{{"metric":"e.m","timestamp":{T0},"value":3,"tags":{{"host":"b"}},"interval":"1h","aggregator":"SUM"}},
            {{"metric":"e.m","timestamp":{T0},"value":3,"tags":{{"host":"b"}},"aggregator":"SUM"}},
            {{"metric":"e.m","timestamp":{T0},"value":3,"tags":{{"host":"b"}},"interval":"1h","aggregator":"dev"}}]"#
    );
    let r = s.post_json("/api/rollup?details", &body);
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    assert_eq!(
        (v["success"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(v["errors"][0]["error"], "Missing interval");
    assert_eq!(v["errors"][0]["datapoint"]["aggregator"], "SUM");
    assert_eq!(
        v["errors"][1]["error"],
        "No ID found mapping to aggregator: dev"
    );
    assert_eq!(s.get("/api/rollup").status, 405);
    let sums = |s: &Server| {
        s.query(&format!(
            "/api/query?start={T0}&end={}&m=sum:1h-sum:e.m{{host=*}}",
            T0 + 7199
        ))
    };
    let expect = |s: &Server| {
        let v = sums(s);
        let by_host = |h: &str| {
            v.as_array()
                .and_then(|a| a.iter().find(|r| r["tags"]["host"] == h))
                .map(dps)
                .unwrap_or_default()
        };
        assert_eq!(by_host("a"), pts(&[(T0, 10.0), (T0 + 3600, 20.5)]));
        assert_eq!(by_host("b"), pts(&[(T0, 3.0)]));
        // The pre-aggregate (host c) is left out unless asked for.
        assert!(by_host("c").is_empty(), "{v}");
    };
    expect(&s);
    let avg = s.query(&format!(
        "/api/query?start={T0}&end={}&m=sum:1h-avg:e.m{{host=a}}",
        T0 + 3599
    ));
    assert_eq!(dps(&avg[0]), pts(&[(T0, 2.5)]));
    // `ROLLUP_RAW` reads no rollup: only the pre-aggregate's point is
    // stored, read when the query names `_aggregate`.
    let raw = s.query(&format!(
        "/api/query?start={T0}&end={}&m=sum:1h-sum:rollup_raw:e.m{{host=*,_aggregate=*}}",
        T0 + 7199
    ));
    assert_eq!(raw.as_array().map(Vec::len), Some(1), "{raw}");
    assert_eq!(raw[0]["tags"]["_aggregate"], "SUM");
    assert_eq!(dps(&raw[0]), pts(&[(T0, 7.0)]));
    // A `rollup` line is written when the input pauses, as a `put` is,
    // without waiting for a command.
    let mut quiet = s.telnet();
    quiet.send(&format!("rollup 1h-SUM e.m {} 9 host=d\n", T0 + 3600));
    let q = format!(
        "/api/query?start={T0}&end={}&m=sum:1h-sum:e.m{{host=d}}",
        T0 + 7199
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        // Until it is written, its tag value has no UID yet (400).
        let r = s.get(&q);
        let v = if r.status == 200 {
            r.json()
        } else {
            serde_json::Value::Null
        };
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            assert_eq!(dps(&v[0]), pts(&[(T0 + 3600, 9.0)]));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rollup line was not written"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(quiet);
    // Acknowledged means durable.
    s.kill9();
    s.restart();
    expect(&s);
}
