//! Rollup tiers with the real binary: a `kill -9` at any moment of a tier
//! build leaves no query answering from a partial tier value, and a delete
//! that died halfway is finished by the restart, tiers included.

use std::time::Duration;

use crate::common::Server;

const T0: i64 = 1_356_998_400; // 2013-01-01, days of closed hours

/// Three days at 60 s for two hosts, through telnet.
fn write_three_days(s: &Server) {
    let mut t = s.telnet();
    let mut lines = String::new();
    for host in ["a", "b"] {
        for i in 0..3 * 1440i64 {
            let v = ((i * 37 + if host == "a" { 0 } else { 11 }) % 1009) as f64 / 100.0;
            lines.push_str(&format!("put r.m {} {v} host={host}\n", T0 + i * 60));
        }
    }
    t.send(&lines);
    assert!(t.sync().is_empty());
}

/// Every decomposing aggregator over hours, days and two days from the
/// tiers equals `rollup_raw`'s answer; returns the tier values read.
fn answers_match(s: &Server) -> u64 {
    let before = s.counter("hourglass_rollup_values_read_total");
    for agg in ["sum", "avg", "count", "min", "max", "first", "last"] {
        for interval in ["1h", "1d", "2d"] {
            let q = |usage: &str| {
                s.get(&format!(
                    "/api/query?start={}&end={}&m=sum:{usage}{interval}-{agg}:r.m{{host=*}}",
                    T0 + 1800,
                    T0 + 3 * 86_400 - 1
                ))
                .text()
            };
            let (tiers, raw) = (q(""), q("rollup_raw:"));
            assert!(raw.contains("\"dps\":{\""), "{interval}-{agg}: {raw}");
            assert_eq!(tiers, raw, "{interval}-{agg}");
        }
    }
    s.counter("hourglass_rollup_values_read_total") - before
}

#[test]
fn kill9_during_a_rollup_build_never_answers_a_partial_bucket() {
    for point in ["rollup_before", "rollup_between"] {
        let spec = format!("{point}=0");
        let mut s = Server::start_with_env(
            "[head]\nflush_interval_secs = 1\n",
            &[("HOURGLASS_FAILPOINTS", spec.as_str())],
        );
        write_three_days(&s);
        // The flush writes the hours to table files, then dies computing
        // their tiers.
        assert!(
            s.wait_exit(Duration::from_secs(30)),
            "{point}: the failpoint did not end the server"
        );
        assert!(
            s.log().contains(&format!("failpoint {point}")),
            "{}",
            s.log()
        );
        s.set_env(&[]);
        s.restart();
        // At once (the replayed hours are in the head again) and once they
        // are flushed again with their tiers: the raw answers.
        answers_match(&s);
        s.wait_for_counter("hourglass_rollup_hours_total", 0);
        assert!(answers_match(&s) > 0, "{point}: the tiers answer");
        s.kill9();
        s.restart();
        assert!(
            answers_match(&s) > 0,
            "{point}: the tiers answer after a restart"
        );
    }
}

#[test]
fn a_delete_that_died_halfway_is_finished_by_the_restart() {
    let mut s = Server::start_with_env(
        "[query]\nallow_delete = true\n[head]\nflush_interval_secs = 1\n",
        &[("HOURGLASS_FAILPOINTS", "delete_store=0")],
    );
    write_three_days(&s);
    s.wait_for_counter("hourglass_rollup_hours_total", 2 * 72 - 1);
    // Host a's second day: logged, dropped from the head, then the store
    // write fails.
    let body = format!(
        r#"{{"start":{},"end":{},"delete":true,"queries":[{{"aggregator":"sum","metric":"r.m","tags":{{"host":"a"}}}}]}}"#,
        T0 + 86_400,
        T0 + 2 * 86_400 - 1
    );
    let r = s.post_json("/api/query", &body);
    assert_eq!(r.status, 500, "{}", r.text());
    s.kill9();
    s.set_env(&[]);
    s.restart();
    let day_max = |usage: &str| {
        s.get(&format!(
            "/api/query?start={T0}&end={}&m=sum:{usage}1d-max:r.m{{host=a}}",
            T0 + 3 * 86_400 - 1
        ))
        .text()
    };
    let tiers = day_max("");
    assert_eq!(tiers, day_max("rollup_raw:"));
    let second_day = format!("\"{}\":", T0 + 86_400);
    assert!(
        !tiers.contains(&second_day),
        "the deleted day is gone: {tiers}"
    );
    assert!(tiers.contains(&format!("\"{T0}\":")), "{tiers}");
}

/// A query a tier answers still returns the annotations of the data rows
/// it did not read, as `rollup_raw` does, and after a restart.
#[test]
fn annotations_come_with_series_a_tier_answers() {
    let mut s = Server::start_with("[head]\nflush_interval_secs = 1\n");
    write_three_days(&s);
    s.wait_for_counter("hourglass_rollup_hours_total", 2 * 72 - 1);
    let tsuid = s.get("/api/search/lookup?m=r.m%7Bhost=a%7D").json()["results"][0]["tsuid"]
        .as_str()
        .expect("tsuid")
        .to_string();
    let note = format!(
        r#"{{"tsuid":"{tsuid}","startTime":{},"description":"deploy"}}"#,
        T0 + 86_400 + 3_600
    );
    let r = s.post_json("/api/annotation", &note);
    assert_eq!(r.status, 200, "{}", r.text());
    let day_max = |s: &Server, usage: &str| {
        s.get(&format!(
            "/api/query?start={T0}&end={}&m=sum:{usage}1d-max:r.m{{host=a}}",
            T0 + 3 * 86_400 - 1
        ))
        .text()
    };
    let before = s.counter("hourglass_rollup_values_read_total");
    let tiers = day_max(&s, "");
    assert!(
        s.counter("hourglass_rollup_values_read_total") > before,
        "no tier read"
    );
    assert!(tiers.contains("\"description\":\"deploy\""), "{tiers}");
    assert_eq!(tiers, day_max(&s, "rollup_raw:"));
    s.stop();
    s.restart();
    assert_eq!(day_max(&s, ""), tiers);
}

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
            "rollup: illegal argument: No rollups configured for the interval: 1m".to_string(),
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
                .map(crate::common::dps)
                .unwrap_or_default()
        };
        assert_eq!(
            by_host("a"),
            crate::common::pts(&[(T0, 10.0), (T0 + 3600, 20.5)])
        );
        assert_eq!(by_host("b"), crate::common::pts(&[(T0, 3.0)]));
    };
    expect(&s);
    let avg = s.query(&format!(
        "/api/query?start={T0}&end={}&m=sum:1h-avg:e.m{{host=a}}",
        T0 + 3599
    ));
    assert_eq!(
        crate::common::dps(&avg[0]),
        crate::common::pts(&[(T0, 2.5)])
    );
    // `ROLLUP_RAW` reads no rollup: only the pre-aggregate's point is stored.
    let raw = s.query(&format!(
        "/api/query?start={T0}&end={}&m=sum:1h-sum:rollup_raw:e.m{{host=*}}",
        T0 + 7199
    ));
    assert_eq!(raw.as_array().map(Vec::len), Some(1), "{raw}");
    assert_eq!(raw[0]["tags"]["_aggregate"], "SUM");
    assert_eq!(
        crate::common::dps(&raw[0]),
        crate::common::pts(&[(T0, 7.0)])
    );
    // Acknowledged means durable.
    s.kill9();
    s.restart();
    expect(&s);
}
