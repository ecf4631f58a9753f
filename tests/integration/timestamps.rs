//! The one timestamp rule, end to end: every timestamp the server accepts
//! (telnet `put`, `/api/put` with a JSON number or a JSON string) is read
//! back by a query at exactly the millisecond a simple model computes, and
//! every timestamp it refuses stores nothing: no point and no UID.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::common::Server;

const MAX_S: u64 = 4_294_967_295;

/// The model: the instant (epoch ms) a timestamp text denotes, or `None`
/// when the rule refuses it. Seconds are 1–10 digits, milliseconds exactly
/// 13 digits or `<1–10 digits>.<3 digits>`; the instant must be positive and
/// not after 2106-02-07T06:28:15.999Z; and since raw values up to 2^32-1
/// are seconds in a row key, a smaller millisecond instant must be a whole
/// second.
fn model(text: &str) -> Option<u64> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let ms = match text.split_once('.') {
        None if digits(text) && text.len() <= 10 => {
            let s: u64 = text.parse().ok()?;
            return (1..=MAX_S).contains(&s).then_some(s * 1000);
        }
        None if digits(text) && text.len() == 13 => text.parse::<u64>().ok()?,
        Some((s, f)) if digits(s) && s.len() <= 10 && f.len() == 3 && digits(f) => {
            s.parse::<u64>().ok()? * 1000 + f.parse::<u64>().ok()?
        }
        _ => return None,
    };
    if ms == 0 || ms > MAX_S * 1000 + 999 || (ms <= MAX_S && ms % 1000 != 0) {
        return None;
    }
    Some(ms)
}

/// Timestamp texts around every boundary of the rule, plus plain junk.
fn timestamp_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "1[0-9]{9}",
        "1[0-9]{12}",
        "[0-9]{1,10}",
        "[0-9]{11,14}",
        "0{1,13}",
        "42949672[89][0-9]",
        "42949672[89][0-9]{4}",
        "4294967[0-9]{3}\\.[0-9]{3}",
        "[0-9]{1,7}\\.[0-9]{3}",
        "[0-9]{1,11}\\.[0-9]{0,4}",
        "1[0-9]{9}\\.[0-9]{3}\\.[0-9]",
        "-[0-9]{1,13}",
        "\\+[0-9]{1,10}",
        "[0-9]{1,3}[a-z.eE][0-9]{1,3}",
        "1[0-9]{2}e[0-9]",
    ]
}

/// Whether `text` is a JSON number literal (so it can be sent unquoted).
fn json_number(text: &str) -> bool {
    serde_json::from_str::<serde_json::Number>(text).is_ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Telnet,
    JsonNumber,
    JsonString,
}

/// Sends `cases` through `via` under metric `m`, one series per case
/// (tag `c` = `a<i>` when the model accepts it, `r<i>` otherwise) with value
/// `i`; returns how many points the server said it refused.
fn send(s: &Server, via: Via, m: &str, cases: &[(usize, String)]) -> usize {
    let tagv = |i: usize, t: &str| {
        if model(t).is_some() {
            format!("{m}_a{i}")
        } else {
            format!("{m}_r{i}")
        }
    };
    match via {
        Via::Telnet => {
            let mut t = s.telnet();
            let mut refused = 0;
            // Small chunks: a client that does not read may lose error lines.
            for chunk in cases.chunks(40) {
                let text: String = chunk
                    .iter()
                    .map(|(i, ts)| format!("put {m} {ts} {i} c={}\n", tagv(*i, ts)))
                    .collect();
                t.send(&text);
                let lines = t.sync();
                assert!(lines.iter().all(|l| l.starts_with("put: ")), "{lines:?}");
                refused += lines.len();
            }
            refused
        }
        Via::JsonNumber | Via::JsonString => {
            let body: Vec<String> = cases
                .iter()
                .map(|(i, ts)| {
                    let ts = if via == Via::JsonNumber {
                        ts.clone()
                    } else {
                        format!("\"{ts}\"")
                    };
                    format!(
                        r#"{{"metric":"{m}","timestamp":{ts},"value":{i},"tags":{{"c":"{}"}}}}"#,
                        tagv(*i, &ts.replace('"', ""))
                    )
                })
                .collect();
            let r = s.post_json("/api/put?details", &format!("[{}]", body.join(",")));
            assert!(
                r.status == 204 || r.status == 400 || r.status == 200,
                "{}",
                r.text()
            );
            if r.status == 204 {
                return 0;
            }
            let out = r.json();
            let refused = out["failed"].as_u64().unwrap_or_else(|| panic!("{out}"));
            for e in out["errors"].as_array().into_iter().flatten() {
                assert!(
                    e["error"].as_str().is_some_and(|x| !x.is_empty()),
                    "every refusal says why: {e}"
                );
            }
            refused as usize
        }
    }
}

/// Reads back metric `m`: tag value → (the one timestamp in ms, value).
fn read_back(s: &Server, m: &str) -> BTreeMap<String, (u64, f64)> {
    let r = s.get(&format!(
        "/api/query?start=0&end=4294967295999&m=sum:{m}{{c=*}}&ms=true"
    ));
    if r.status == 400 && r.text().contains("No such name") {
        return BTreeMap::new();
    }
    assert_eq!(r.status, 200, "{}", r.text());
    let mut got = BTreeMap::new();
    for series in r.json().as_array().expect("array") {
        let tagv = series["tags"]["c"].as_str().expect("tag c").to_owned();
        let dps = series["dps"].as_object().expect("dps");
        assert_eq!(dps.len(), 1, "{tagv}: exactly one point: {series}");
        let (ts, v) = dps.iter().next().expect("one point");
        let ts: u64 = ts.parse().expect("ms key");
        got.insert(tagv, (ts, v.as_f64().expect("number")));
    }
    got
}

#[test]
fn accepted_timestamps_read_back_at_the_exact_millisecond_refused_ones_store_nothing() {
    let s = Server::start();
    let cases: u32 = std::env::var("HOURGLASS_TS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let run = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&prop::collection::vec(timestamp_text(), 1..200), |texts| {
        let run = run.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        for via in [Via::Telnet, Via::JsonNumber, Via::JsonString] {
            let cases: Vec<(usize, String)> = texts
                .iter()
                .enumerate()
                .filter(|(_, t)| via != Via::JsonNumber || json_number(t))
                .map(|(i, t)| (i, t.clone()))
                .collect();
            let m = format!("tsp{run}.{via:?}").to_lowercase();
            let refused = send(&s, via, &m, &cases);
            let expected: BTreeMap<String, (u64, f64)> = cases
                .iter()
                .filter_map(|(i, t)| model(t).map(|ms| (format!("{m}_a{i}"), (ms, *i as f64))))
                .collect();
            prop_assert_eq!(refused, cases.len() - expected.len(), "{:?} refusals", via);
            let got = read_back(&s, &m);
            prop_assert_eq!(&got, &expected, "{:?}", via);
            // Refused points did not even create tag values.
            let r = s.get(&format!("/api/suggest?type=tagv&q={m}_r&max=1000"));
            prop_assert_eq!(r.json(), serde_json::json!([]), "{:?}", via);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_model_agrees_with_the_documented_examples() {
    assert_eq!(model("1600000000"), Some(1_600_000_000_000));
    assert_eq!(model("1600000000123"), Some(1_600_000_000_123));
    assert_eq!(model("1600000000.123"), Some(1_600_000_000_123));
    assert_eq!(model("1600000000.5"), None);
    assert_eq!(model("9999999999999"), None);
    assert_eq!(model("4294967296"), None);
    assert_eq!(model("0"), None);
    assert_eq!(model("5.000"), Some(5000));
    assert_eq!(model("5.500"), None);
    assert_eq!(model("4294967.296"), Some(4_294_967_296));
}
