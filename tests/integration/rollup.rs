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
        // The hours are counted as rolled up before the head lets go of
        // them: poll.
        s.wait_for_counter("hourglass_rollup_hours_total", 0);
        tiers_answer_within(&s, Duration::from_secs(30), point);
        // Killed before a checkpoint: the WAL brings the hours back into
        // the head, where the raw path answers them, until they are
        // flushed (and rolled up) again.
        s.kill9();
        s.restart();
        tiers_answer_within(&s, Duration::from_secs(30), point);
        // Killed after one: nothing is replayed, and the tier values
        // written before the kill answer at once.
        let r = s.post_json("/api/admin/snapshot", "");
        assert_eq!(r.status, 200, "{}", r.text());
        s.kill9();
        s.restart();
        assert!(
            answers_match(&s) > 0,
            "{point}: the tiers answer at once after a restart with nothing to replay"
        );
    }
}

/// Polls until the tiers answer, every answer on the way equal to the raw
/// path's.
fn tiers_answer_within(s: &Server, within: Duration, point: &str) {
    let deadline = std::time::Instant::now() + within;
    while answers_match(s) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{point}: the tiers answer after a restart"
        );
        std::thread::sleep(Duration::from_millis(100));
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
    // The hours are counted as rolled up before the head lets go of them:
    // until it has, the raw path answers (the same bytes).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let tiers = loop {
        let before = s.counter("hourglass_rollup_values_read_total");
        let tiers = day_max(&s, "");
        if s.counter("hourglass_rollup_values_read_total") > before {
            break tiers;
        }
        assert_eq!(tiers, day_max(&s, "rollup_raw:"));
        assert!(std::time::Instant::now() < deadline, "no tier read");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(tiers.contains("\"description\":\"deploy\""), "{tiers}");
    assert_eq!(tiers, day_max(&s, "rollup_raw:"));
    s.stop();
    s.restart();
    assert_eq!(day_max(&s, ""), tiers);
}
