//! Property tests: the telnet and JSON parsers never panic on arbitrary input, their outputs keep
//! the documented invariants, and valid points round-trip through both wire formats.
#![allow(clippy::unwrap_used)]

use std::borrow::Cow;

use hourglass_ingest::{
    Command, Limits, LineResult, MAX_TIMESTAMP_MS, MAX_TIMESTAMP_SECS, Point, Timestamp, Value,
    check_point, decode_put_body, next_line, parse_line, parse_timestamp, parse_value,
    timestamp_from_millis, unknown_command_line,
};
use proptest::prelude::*;

/// Runs every line of `buf` through the telnet pipeline, as a connection handler would.
fn drive_telnet(buf: &[u8], limits: &Limits) {
    let mut rest = buf;
    loop {
        match next_line(rest, limits.max_line_len) {
            LineResult::Line { line, consumed } => {
                assert!(consumed > line.len() && consumed <= rest.len());
                assert!(line.len() <= limits.max_line_len);
                assert_eq!(&rest[..line.len()], line);
                assert_eq!(rest[consumed - 1], b'\n');
                check_command(parse_line(line, limits), limits);
                rest = &rest[consumed..];
            }
            LineResult::Incomplete => {
                assert!(!rest.contains(&b'\n') && rest.len() <= limits.max_line_len + 1);
                // The tail would be parsed once the connection closes.
                check_command(parse_line(rest, limits), limits);
                break;
            }
            LineResult::TooLong => break,
        }
    }
}

fn check_command(cmd: Command<'_>, limits: &Limits) {
    match cmd {
        Command::Put(Ok(p)) => {
            assert!(p.timestamp.0 > 0);
            assert!(check_point(&p, limits).is_ok());
            if let Value::Float(f) = p.value {
                assert!(f.is_finite());
            }
            if let Value::Double(d) = p.value {
                assert!(d.is_finite());
            }
        }
        Command::Put(Err(e)) => {
            let line = e.telnet_line();
            assert!(line.starts_with("put: "));
            assert!(!e.http_message().is_empty());
        }
        Command::Rollup(Ok((_, p))) => {
            assert!(p.timestamp.0 > 0);
            assert!(check_point(&p, limits).is_ok());
        }
        Command::Rollup(Err(e)) => {
            assert!(e.line_of("rollup").starts_with("rollup: "));
        }
        Command::Unknown(w) => {
            assert!(!w.contains(' '));
            let _ = unknown_command_line(&w);
        }
        Command::Auth(t) => assert!(!t.contains(' ')),
        Command::Version | Command::Help | Command::Stats | Command::DropCaches | Command::Exit => {
        }
    }
}

fn drive_json(body: &[u8], limits: &Limits) {
    if let Ok(points) = decode_put_body(body) {
        for p in &points {
            let _ = p.echo();
            if let Ok(point) = p.to_point(limits) {
                assert!(point.timestamp.0 > 0);
                assert!(check_point(&point, limits).is_ok());
                assert_eq!(p.time_value(), Some((point.timestamp, point.value)));
            }
        }
    }
}

/// Words that exercise the interesting paths of `put`.
fn put_word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("put".to_owned()),
        Just(String::new()),
        Just("NaN".to_owned()),
        Just("-nan".to_owned()),
        Just("1e400".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("9223372036854775808".to_owned()),
        Just("-9223372036854775808".to_owned()),
        Just("10000000000000".to_owned()),
        Just("1364410924.250".to_owned()),
        Just("a=b".to_owned()),
        Just("a=c".to_owned()),
        Just("=".to_owned()),
        Just("k=v=w".to_owned()),
        "[0-9.eE+-]{0,22}",
        "[a-z]{1,3}=[a-z0-9]{1,3}",
        "[a-zA-Z0-9._/é日*:= -]{0,12}",
        any::<String>(),
    ]
}

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._/éßЖ日ñ-]{1,12}"
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        any::<f32>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any::<f64>()
            .prop_filter("finite double, not a float", |d| {
                d.is_finite() && f64::from(*d as f32) != *d
            })
            .prop_map(Value::Double),
    ]
}

/// Raw timestamps the text rule can express: seconds (1-10 digits) or 13-digit milliseconds.
fn raw_timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=MAX_TIMESTAMP_SECS,
        1_000_000_000_000u64..=MAX_TIMESTAMP_MS
    ]
}

fn valid_point() -> impl Strategy<Value = Point<'static>> {
    (
        name(),
        raw_timestamp(),
        value(),
        prop::collection::btree_map(name(), name(), 1..=8),
    )
        .prop_map(|(metric, ts, value, tags)| Point {
            metric: Cow::Owned(metric),
            timestamp: Timestamp(ts),
            value,
            tags: tags
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Cow::Owned(v)))
                .collect(),
        })
}

fn put_line(p: &Point<'_>) -> String {
    let mut line = format!("put {} {} {}", p.metric, p.timestamp.0, p.value);
    for (k, v) in &p.tags {
        line.push_str(&format!(" {k}={v}"));
    }
    line
}

fn json_point(p: &Point<'_>, value_as_string: bool) -> String {
    let tags: serde_json::Map<String, serde_json::Value> = p
        .tags
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    let value = if value_as_string {
        format!("\"{}\"", p.value)
    } else {
        p.value.to_string()
    };
    format!(
        "{{\"metric\":{},\"timestamp\":{},\"value\":{},\"tags\":{}}}",
        serde_json::Value::String(p.metric.to_string()),
        p.timestamp.0,
        value,
        serde_json::Value::Object(tags)
    )
}

/// Arbitrary JSON trees.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as J;
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(J::from),
        any::<f64>().prop_map(J::from),
        any::<String>().prop_map(J::String),
        name().prop_map(J::String),
        "[0-9.eE+-]{0,12}".prop_map(J::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("metric".to_owned()),
                    Just("timestamp".to_owned()),
                    Just("value".to_owned()),
                    Just("tags".to_owned()),
                    name(),
                ],
                inner,
                0..6
            )
            .prop_map(|m| J::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn telnet_arbitrary_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..3000)) {
        drive_telnet(&buf, &Limits::default());
        drive_telnet(&buf, &Limits { max_tags: 1, max_line_len: 7, max_name_len: 16 });
    }

    #[test]
    fn telnet_put_like_lines_never_panic(words in prop::collection::vec(put_word(), 0..12),
                                         sep in prop_oneof![Just(" "), Just("  "), Just("\t")]) {
        let mut line = String::from("put ");
        line.push_str(&words.join(sep));
        drive_telnet(format!("{line}\r\n{line}\n").as_bytes(), &Limits::default());
        check_command(parse_line(line.as_bytes(), &Limits::default()), &Limits::default());
    }

    /// The series-cache split agrees with the full parser: whenever both
    /// accept a line they give one timestamp and value, and a line whose
    /// timestamp and value the split accepts fails the full parse only for
    /// reasons that depend on its metric and tag words alone (so a line with
    /// the same words that parsed once is never refused).
    #[test]
    fn fast_put_agrees_with_parse_line(
        p in valid_point(),
        junk in prop::collection::vec(put_word(), 3..9),
        mix in 0u8..4,
        other in prop::collection::vec(put_word(), 2..3),
        sep in prop_oneof![Just(" "), Just("  ")],
    ) {
        let limits = Limits::default();
        // A valid line, the same with junk in one place, or junk alone.
        let line = match mix {
            0 => put_line(&p),
            1 => format!("put {} {} {}", junk[0], p.timestamp.0, p.value)
                + &put_line(&p)[4..].splitn(4, ' ').nth(3).map(|t| format!(" {t}")).unwrap_or_default(),
            2 => format!("{} {}", put_line(&p), junk[1]),
            _ => format!("put {}", junk.join(sep)),
        };
        if mix == 0 {
            // A valid line always takes the fast path.
            let f = hourglass_ingest::fast_put(line.as_bytes());
            prop_assert!(f.is_some(), "{line:?}");
        }
        let fast = hourglass_ingest::fast_put(line.as_bytes());
        if let (Some(f), Command::Put(Ok(p))) = (fast, parse_line(line.as_bytes(), &limits)) {
            prop_assert_eq!(p.timestamp, f.timestamp);
            prop_assert_eq!(p.value, f.value);
            // Same metric and tag words, another timestamp and value.
            let line2 = format!(
                "put {} {} {} {}",
                String::from_utf8_lossy(f.metric),
                other[0],
                other[1],
                String::from_utf8_lossy(f.tags)
            );
            if let Some(f2) = hourglass_ingest::fast_put(line2.as_bytes())
                && f2.metric == f.metric
                && f2.tags == f.tags
            {
                match parse_line(line2.as_bytes(), &limits) {
                    Command::Put(Ok(p2)) => {
                        prop_assert_eq!(p2.timestamp, f2.timestamp);
                        prop_assert_eq!(p2.value, f2.value);
                    }
                    other => prop_assert!(false, "{line2:?} refused after {line:?} parsed: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn next_line_finds_short_lines(line in prop::collection::vec(any::<u8>().prop_filter("no LF", |b| *b != b'\n'), 0..1100),
                                   crlf in any::<bool>()) {
        let mut buf = line.clone();
        buf.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        let expect = if crlf { &line[..] } else { line.strip_suffix(b"\r").unwrap_or(&line) };
        match next_line(&buf, 1024) {
            LineResult::Line { line: got, consumed } => {
                prop_assert_eq!(got, expect);
                prop_assert_eq!(consumed, buf.len());
            }
            LineResult::TooLong => prop_assert!(expect.len() > 1024),
            LineResult::Incomplete => prop_assert!(false, "incomplete with a newline"),
        }
    }

    #[test]
    fn telnet_round_trip(p in valid_point()) {
        let line = put_line(&p);
        match parse_line(line.as_bytes(), &Limits::default()) {
            Command::Put(Ok(got)) => prop_assert_eq!(got, p),
            other => prop_assert!(false, "{} -> {:?}", line, other),
        }
    }

    #[test]
    fn json_round_trip(p in valid_point(), as_string in any::<bool>()) {
        let body = format!("[\n{}\n,{}\n]", json_point(&p, as_string), json_point(&p, !as_string));
        let points = decode_put_body(body.as_bytes()).unwrap();
        prop_assert_eq!(points.len(), 2);
        for jp in &points {
            prop_assert_eq!(&jp.to_point(&Limits::default()).unwrap(), &p);
            let echo = jp.echo();
            prop_assert_eq!(&echo["metric"], &serde_json::Value::String(p.metric.to_string()));
            prop_assert_eq!(&echo["value"], &serde_json::Value::String(p.value.to_string()));
        }
    }

    #[test]
    fn telnet_and_json_classify_values_alike(text in prop_oneof![
        "[0-9.eE+-]{1,22}",
        "[0-9]{1,21}",
        any::<String>().prop_filter("no space", |s| !s.contains(' ') && !s.is_empty()),
    ]) {
        let line = format!("put m 1 {text} a=b");
        let telnet = match parse_line(line.as_bytes(), &Limits::default()) {
            Command::Put(r) => r.map(|p| p.value).map_err(|e| e.http_message().to_owned()),
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        let body = format!(
            "{{\"metric\":\"m\",\"timestamp\":1,\"value\":{},\"tags\":{{\"a\":\"b\"}}}}",
            serde_json::Value::String(text.clone())
        );
        let points = decode_put_body(body.as_bytes()).unwrap();
        let json = points[0].to_point(&Limits::default()).map(|p| p.value);
        prop_assert_eq!(&json, &telnet);
        prop_assert_eq!(json.ok(), parse_value(&text).ok());
    }

    /// The series cache's shortcut: with a valid series, `time_value`
    /// accepts exactly what `to_point` accepts, with the same timestamp and
    /// value.
    #[test]
    fn json_time_value_agrees_with_to_point(
        ts in prop_oneof![
            "-?[0-9]{1,20}(\\.[0-9]{0,4})?",
            "\"[0-9.eE+-]{0,16}\"",
            Just("null".to_owned()), Just("true".to_owned()), Just("{}".to_owned()),
            (0u64..20_000_000_000_000).prop_map(|t| t.to_string()),
        ],
        value in prop_oneof![
            "-?[0-9]{1,22}(\\.[0-9]{0,6})?([eE][+-]?[0-9]{1,3})?",
            "\"[0-9a-zA-Z.eE+-]{0,16}\"",
            Just("null".to_owned()), Just("[1]".to_owned()), Just("false".to_owned()),
            Just("NaN".to_owned()), Just("\"Infinity\"".to_owned()),
        ],
    ) {
        let body = format!(
            "{{\"metric\":\"sys.cpu\",\"timestamp\":{ts},\"value\":{value},\"tags\":{{\"host\":\"a\"}}}}"
        );
        let Ok(points) = decode_put_body(body.as_bytes()) else { return Ok(()) };
        let full = points[0].to_point(&Limits::default()).map(|p| (p.timestamp, p.value));
        prop_assert_eq!(points[0].time_value(), full.ok(), "{}", body);
        prop_assert_eq!(points[0].series_text(), Some(("\"sys.cpu\"", "{\"host\":\"a\"}")));
    }

    #[test]
    fn json_arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000)) {
        drive_json(&body, &Limits::default());
    }

    #[test]
    fn json_arbitrary_text_never_panics(body in "[\\[\\]{}\",:0-9a-zA-Z.eE+\\- \n\\\\]{0,200}") {
        drive_json(body.as_bytes(), &Limits::default());
    }

    #[test]
    fn json_arbitrary_trees_never_panic(v in json_value(), wrap in any::<bool>()) {
        let body = if wrap { format!("[{v}]") } else { v.to_string() };
        drive_json(body.as_bytes(), &Limits::default());
        // Python-style non-numeric tokens in the mix.
        let body = body.replace("null", "NaN");
        drive_json(body.as_bytes(), &Limits::default());
    }
}

// ---- the shared timestamp rule (hourglass_ingest::timestamp) ----

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The rule written down independently: the intended millisecond of an accepted text, `None` for
/// a refused one.
fn intended_ms(t: &str) -> Option<u64> {
    let in_range_ms = |ms: u64| {
        (1..=MAX_TIMESTAMP_MS).contains(&ms)
            && (ms > u64::from(u32::MAX) || ms.is_multiple_of(1000))
    };
    if digits(t) && t.len() <= 10 {
        let s: u64 = t.parse().ok()?;
        (1..=MAX_TIMESTAMP_SECS).contains(&s).then_some(s * 1000)
    } else if digits(t) && t.len() == 13 {
        let ms: u64 = t.parse().ok()?;
        in_range_ms(ms).then_some(ms)
    } else {
        let (s, f) = t.split_once('.')?;
        if !(digits(s) && s.len() <= 10 && digits(f) && f.len() == 3) {
            return None;
        }
        let ms = s.parse::<u64>().ok()? * 1000 + f.parse::<u64>().ok()?;
        in_range_ms(ms).then_some(ms)
    }
}

/// Texts the rule accepts, with the millisecond each one means.
fn accepted_timestamp() -> impl Strategy<Value = (String, u64)> {
    prop_oneof![
        // Seconds, with leading zeros up to 10 digits.
        (1u64..=MAX_TIMESTAMP_SECS, 0usize..=10).prop_map(|(s, w)| (format!("{s:0w$}"), s * 1000)),
        // 13-digit milliseconds (from 2001-09-09 on; smaller values have leading zeros).
        (1_000_000_000_000u64..=MAX_TIMESTAMP_MS).prop_map(|ms| (format!("{ms:013}"), ms)),
        // <seconds>.<3 digits> above the smallest millisecond encoding.
        (4_294_968u64..=MAX_TIMESTAMP_SECS, 0u64..1000)
            .prop_map(|(s, f)| (format!("{s}.{f:03}"), s * 1000 + f)),
        // <seconds>.000 for any positive second.
        (1u64..=MAX_TIMESTAMP_SECS).prop_map(|s| (format!("{s}.000"), s * 1000)),
    ]
}

/// Texts the rule refuses.
fn refused_timestamp() -> impl Strategy<Value = String> {
    prop_oneof![
        // 11 or 12 digits: neither seconds nor milliseconds.
        "[0-9]{11,12}",
        // 14 to 19 digits.
        "[1-9][0-9]{13,18}",
        // Seconds after 2106.
        (MAX_TIMESTAMP_SECS + 1..=9_999_999_999u64).prop_map(|s| s.to_string()),
        // 13-digit milliseconds after 2106.
        (MAX_TIMESTAMP_MS + 1..=9_999_999_999_999u64).prop_map(|ms| ms.to_string()),
        // Other fraction lengths.
        ("[0-9]{1,10}", prop_oneof!["[0-9]{1,2}", "[0-9]{4,6}"])
            .prop_map(|(s, f)| format!("{s}.{f}")),
        // Several dots, empty parts.
        "[0-9]{0,10}\\.[0-9]{0,3}\\.[0-9]{0,3}",
        "\\.[0-9]{3}",
        "[0-9]{1,10}\\.",
        // Signs.
        ("[+-]", "[0-9]{1,10}").prop_map(|(sign, d)| format!("{sign}{d}")),
        // Zero in every form.
        "0{1,10}",
        "0{1,10}\\.000",
        "0{13}",
        // Junk around or inside an accepted text.
        (accepted_timestamp(), "[a-zA-Z ,:eE_x]", 0usize..15).prop_map(|((t, _), junk, at)| {
            let at = at.min(t.len());
            format!("{}{junk}{}", &t[..at], &t[at..])
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn accepted_timestamps_map_to_the_intended_millisecond((text, ms) in accepted_timestamp()) {
        let ts = parse_timestamp(&text);
        prop_assert_eq!(ts.map(Timestamp::as_millis), Ok(ms), "{}", text);
        prop_assert_eq!(intended_ms(&text), Some(ms));
        // The numeric entry point agrees.
        let ms_i64 = i64::try_from(ms).unwrap();
        prop_assert_eq!(timestamp_from_millis(ms_i64).map(Timestamp::as_millis), Ok(ms));
        // And the telnet port stores the same instant.
        let line = format!("put m {text} 1 a=b");
        match parse_line(line.as_bytes(), &Limits::default()) {
            Command::Put(Ok(p)) => prop_assert_eq!(p.timestamp.as_millis(), ms),
            other => prop_assert!(false, "{} -> {:?}", line, other),
        }
    }

    #[test]
    fn refused_timestamps_are_refused(text in refused_timestamp()) {
        prop_assert!(parse_timestamp(&text).is_err(), "{} accepted", text);
        prop_assert_eq!(intended_ms(&text), None);
        let line = format!("put m {text} 1 a=b");
        if !text.contains(' ') {
            let cmd = parse_line(line.as_bytes(), &Limits::default());
            prop_assert!(matches!(cmd, Command::Put(Err(_))), "{} -> {:?}", line, cmd);
        }
    }

    #[test]
    fn timestamp_rule_matches_its_definition(text in prop_oneof![
        "[0-9.+-]{0,16}",
        "[0-9]{1,14}(\\.[0-9]{0,4})?",
    ]) {
        let got = parse_timestamp(&text).ok().map(Timestamp::as_millis);
        prop_assert_eq!(got, intended_ms(&text), "{}", text);
    }

    #[test]
    fn numeric_millis_rule(ms in prop_oneof![any::<i64>(), -5i64..=5_000_000_000_000]) {
        let expect = u64::try_from(ms).ok().filter(|&m| {
            (1..=MAX_TIMESTAMP_MS).contains(&m) && (m > u64::from(u32::MAX) || m.is_multiple_of(1000))
        });
        prop_assert_eq!(timestamp_from_millis(ms).ok().map(Timestamp::as_millis), expect);
    }
}

// ---- InfluxDB line protocol ----

mod influx_props {
    use super::*;
    use hourglass_ingest::influx::{Precision, parse_body};
    use hourglass_ingest::{decode_name, encode_name};

    fn check_batch(body: &[u8], limits: &Limits) {
        let batch = parse_body(body, Precision::Nanoseconds, 1_700_000_000_000, limits);
        for p in batch.points() {
            assert_eq!(check_point(&p, limits), Ok(()), "{p:?}");
        }
        for e in &batch.errors {
            assert!(e.line_no >= 1);
            assert!(e.to_string().starts_with("unable to parse '"));
        }
        assert_eq!(batch.error_text().is_none(), batch.errors.is_empty());
    }

    /// Any text that can be written as a line-protocol name (no newline, no trailing backslash,
    /// no leading blank or `#` for measurements).
    fn lp_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,6}",
            "[a-zA-Z0-9 ,=\"\\\\%:é😀._-]{1,8}",
            any::<String>(),
        ]
        .prop_filter("writable", |s| {
            !s.is_empty() && !s.contains(['\n', '\r']) && !s.ends_with('\\')
        })
    }

    fn escape(s: &str, special: &[char]) -> String {
        let mut out = String::new();
        for c in s.chars() {
            if special.contains(&c) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn influx_arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000)) {
            check_batch(&body, &Limits::default());
        }

        #[test]
        fn influx_line_like_text_never_panics(body in "[a-z,= \"\\\\0-9.ieutfTF#\n\r-]{0,200}") {
            check_batch(body.as_bytes(), &Limits::default());
            check_batch(body.as_bytes(), &Limits { max_tags: 1, max_line_len: 8, max_name_len: 16 });
        }

        /// The series-cache split agrees with the full parser: whenever both
        /// accept a line they give the same fields (order, values) and
        /// timestamp, and another line with the same series and field keys
        /// that the split accepts is accepted by the parser too.
        #[test]
        fn fast_line_agrees_with_parse_line(
            body in "[a-z]{1,3}(,[a-z]{1,2}=[a-z0-9.]{1,3}){0,3} [a-z]{1,2}=[0-9.eiu-]{1,6}(,[a-z]{1,2}=(t|[0-9.eiu-]{1,6})){0,3}( -?[0-9]{1,19})?",
            other in "(t|-?[0-9]{1,4}(\\.[0-9]{1,3})?i?)",
            ts2 in 1_000_000_000_000_000_000i64..1_900_000_000_000_000_000,
            precision in prop_oneof![Just(Precision::Nanoseconds), Just(Precision::Seconds)],
        ) {
            let limits = Limits::default();
            let mut fields = Vec::new();
            let fast = hourglass_ingest::influx::fast_line(body.as_bytes(), precision, 1_700_000_000_000, &mut fields);
            let full = hourglass_ingest::influx::parse_line(body.as_bytes(), precision, 1_700_000_000_000, &limits);
            if let (Some(f), Ok(Some(l))) = (fast, &full) {
                prop_assert_eq!(l.timestamp, f.timestamp);
                let got: Vec<_> = l.fields.iter().map(|(_, v)| *v).collect();
                let want: Vec<_> = fields.iter().map(|(_, v)| *v).collect();
                prop_assert_eq!(got, want, "{}", body);
                // Same series and keys, other values and timestamp.
                let line2 = format!(
                    "{} {} {}",
                    String::from_utf8_lossy(f.series),
                    fields
                        .iter()
                        .map(|(k, _)| format!("{}={other}", String::from_utf8_lossy(k)))
                        .collect::<Vec<_>>()
                        .join(","),
                    ts2 / if precision == Precision::Seconds { 1_000_000_000 } else { 1 }
                );
                let mut fields2 = Vec::new();
                if hourglass_ingest::influx::fast_line(line2.as_bytes(), precision, 1, &mut fields2).is_some() {
                    let full2 = hourglass_ingest::influx::parse_line(line2.as_bytes(), precision, 1, &limits);
                    prop_assert!(matches!(full2, Ok(Some(_))), "{} refused after {} parsed: {:?}", line2, body, full2);
                }
            }
        }

        #[test]
        fn influx_escaping_round_trips(
            measurement in lp_name().prop_filter("no leading blank or #", |m| !m.starts_with(['\t', '#'])),
            tags in prop::collection::btree_map(lp_name(), lp_name(), 1..4),
            fields in prop::collection::btree_map(lp_name(), any::<i64>(), 1..4),
            ts in 1_000_000_000_000u64..=MAX_TIMESTAMP_MS,
        ) {
            let mut line = escape(&measurement, &[',', ' ']);
            for (k, v) in &tags {
                line.push_str(&format!(",{}={}", escape(k, &[',', '=', ' ']), escape(v, &[',', '=', ' '])));
            }
            let fields_text: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}={v}i", escape(k, &[',', '=', ' '])))
                .collect();
            line.push_str(&format!(" {} {}", fields_text.join(","), ts * 1_000_000));
            let body = format!("{line}\n{line}\r\n");
            let batch = parse_body(body.as_bytes(), Precision::Nanoseconds, 1, &Limits::default());
            prop_assert!(batch.errors.is_empty(), "{:?} -> {:?}", line, batch.errors);
            prop_assert_eq!(batch.lines.len(), 2);
            for l in &batch.lines {
                prop_assert_eq!(l.timestamp.as_millis(), ts);
                let got_tags: Vec<(String, String)> = l
                    .tags
                    .iter()
                    .map(|(k, v)| (decode_name(k).into_owned(), decode_name(v).into_owned()))
                    .collect();
                let want_tags: Vec<(String, String)> = tags.clone().into_iter().collect();
                prop_assert_eq!(got_tags, want_tags);
                let want_fields: Vec<(String, Value)> = fields
                    .iter()
                    .map(|(k, v)| (format!("{}.{}", encode_name(&measurement), encode_name(k)), Value::Int(*v)))
                    .collect();
                prop_assert_eq!(&l.fields, &want_fields);
            }
        }

        #[test]
        fn names_round_trip(s in any::<String>()) {
            let encoded = encode_name(&s);
            prop_assert_eq!(decode_name(&encoded), s.as_str());
            if !s.is_empty() {
                prop_assert!(hourglass_ingest::validate_name("metric name", &encoded, usize::MAX).is_ok());
            }
        }
    }
}

// ---- Prometheus remote write ----

mod prom_props {
    use super::*;
    use hourglass_ingest::prom::{
        DEFAULT_MAX_DECODED_LEN, SeenLabels, decode_read, decode_write, decode_write_with,
    };

    fn check(body: &[u8]) {
        let limits = Limits::default();
        if let Ok(w) = decode_write(body, DEFAULT_MAX_DECODED_LEN, &limits) {
            for p in w.points() {
                assert_eq!(check_point(&p, &limits), Ok(()), "{p:?}");
            }
        }
        // A caller that knows every other series: those keep their samples only.
        let answers = |n: usize| -> Vec<SeenLabels> {
            (0..n)
                .map(|i| match i % 2 {
                    1 => SeenLabels::Known(i as u32),
                    _ => SeenLabels::New(i as u128),
                })
                .collect()
        };
        if let Ok(w) =
            decode_write_with(body, DEFAULT_MAX_DECODED_LEN, &limits, |r| answers(r.len()))
        {
            assert!(
                w.known
                    .iter()
                    .all(|k| k.index % 2 == 1 && k.handle as usize == k.index)
            );
            assert!(w.series.iter().all(|s| s.labels_key % 2 == 0));
            let known: usize = w.known.iter().map(|k| k.samples.len()).sum();
            assert_eq!(w.points().count() + known, w.point_count());
        }
        let _ = decode_read(body, DEFAULT_MAX_DECODED_LEN);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn prom_arbitrary_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..1000)) {
            check(&body);
            // The same bytes as a valid snappy frame, so the protobuf decoder sees them.
            let framed = snap::raw::Encoder::new().compress_vec(&body).unwrap();
            check(&framed);
        }

        #[test]
        fn prom_protobuf_like_bodies_never_panic(parts in prop::collection::vec(prop_oneof![
            Just(vec![0x0a_u8]), Just(vec![0x12]), Just(vec![0x1a]), Just(vec![0x09]), Just(vec![0x10]),
            (0u8..40).prop_map(|n| vec![n]),
            "[a-z_:]{0,6}".prop_map(String::into_bytes),
            any::<f64>().prop_map(|f| f.to_le_bytes().to_vec()),
        ], 0..40)) {
            let payload: Vec<u8> = parts.concat();
            let framed = snap::raw::Encoder::new().compress_vec(&payload).unwrap();
            check(&framed);
        }
    }
}
