//! InfluxDB line protocol (TCP and HTTP) and Prometheus remote write/read
//! against the real binary, with bodies encoded as real clients encode them
//! (protobuf + snappy block for Prometheus, gzip for Telegraf's HTTP output).

use std::io::Write;
use std::net::TcpStream;

use hourglass_ingest::prom::pb;
use prost::Message;

use crate::common::{Server, dps, gzip, pts};

/// A query's single result's points, with ms timestamps.
fn points(s: &Server, m: &str, start: i64, end: i64) -> Vec<(String, f64)> {
    let r = s.query(&format!(
        "/api/query?start={start}&end={end}&m=sum:{m}&ms=true"
    ));
    let arr = r.as_array().expect("array");
    assert_eq!(arr.len(), 1, "one result for {m}: {r}");
    dps(&arr[0])
}

#[test]
fn put_and_influx_lines_share_one_connection() {
    let s = Server::start();
    let mut t = s.telnet();
    // The first line starts with a capital letter: OpenTSDB's first-byte
    // rule would take the connection for HTTP.
    t.send("CPU,host=a usage=1.5 1356998400000000000\n");
    t.send("put t.mixed 1356998400 7 host=a\n");
    t.send("mem,host=a,rack=r1 used=42i,free=8i,ok=true,note=\"x y\" 1356998410000000000\n");
    // A measurement named `put` without tags is InfluxDB (its second
    // section has `=`).
    t.send("put,host=a value=3 1356998420000000000\n");
    t.send("put t.mixed 1356998410 notanumber host=a\n"); // bad put
    t.send("cpu,host=a usage=oops 1356998400000000000\n"); // bad Influx line
    t.send("put t.mixed 1356998420 9 host=a\r\n");
    t.send("cpu,host=b usage=2.25\n"); // no timestamp: now
    let errors = t.sync();
    assert_eq!(
        errors,
        vec![
            "put: invalid value: For input string: \"notanumber\"".to_string(),
            "influx: line 6: unable to parse 'cpu,host=a usage=oops 1356998400000000000': invalid boolean"
                .to_string(),
        ]
    );
    assert_eq!(
        points(&s, "CPU.usage", 1356998400, 1356998500),
        pts(&[(1356998400000, 1.5)])
    );
    assert_eq!(
        points(&s, "t.mixed{host=a}", 1356998400, 1356998500),
        pts(&[(1356998400000, 7.0), (1356998420000, 9.0)])
    );
    assert_eq!(
        points(&s, "mem.used{rack=r1}", 1356998400, 1356998500),
        pts(&[(1356998410000, 42.0)])
    );
    assert_eq!(
        points(&s, "mem.free", 1356998400, 1356998500),
        pts(&[(1356998410000, 8.0)])
    );
    assert_eq!(
        points(&s, "mem.ok", 1356998400, 1356998500),
        pts(&[(1356998410000, 1.0)])
    );
    assert_eq!(
        points(&s, "put.value", 1356998400, 1356998500),
        pts(&[(1356998420000, 3.0)])
    );
    // The string field was skipped and counted, not stored.
    let r = s.get("/api/query?start=1356998400&end=1356998500&m=sum:mem.note");
    assert_eq!(r.status, 400, "{}", r.text());
    let m = s.get("/metrics").text();
    assert!(
        m.contains("hourglass_influx_string_fields_skipped_total 1"),
        "{m}"
    );
    // The point without a timestamp got the server's time.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let r = s.query(&format!(
        "/api/query?start={}&end={}&m=sum:cpu.usage{{host=b}}",
        now - 600,
        now + 600
    ));
    assert_eq!(dps(&r[0]).len(), 1, "{r}");
    assert_eq!(dps(&r[0])[0].1, 2.25);
    // Lines that can be neither keep OpenTSDB's replies.
    t.send("hello\n\n");
    assert_eq!(
        t.sync(),
        vec![
            "unknown command: hello.  Try `help'.".to_string(),
            "unknown command: .  Try `help'.".to_string(),
        ]
    );
}

/// Influx lines on the TCP port whose series was cached field by field:
/// a line with one more field, a repeated line and a line with fields in
/// another order all read back exactly.
#[test]
fn influx_tcp_lines_with_changing_fields_read_back_exactly() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send(
        "net,host=a rx=1 1356998400000000000
",
    );
    t.send(
        "net,host=a rx=2,tx=20 1356998410000000000
",
    );
    t.send(
        "net,host=a rx=3,tx=30 1356998420000000000
",
    );
    t.send(
        "net,host=a tx=40,rx=4 1356998430000000000
",
    );
    t.send(
        "net,host=a rx=5 1356998440000000000
",
    );
    assert!(t.sync().is_empty());
    assert_eq!(
        points(&s, "net.rx{host=a}", 1356998400, 1356998500),
        pts(&[
            (1356998400000, 1.0),
            (1356998410000, 2.0),
            (1356998420000, 3.0),
            (1356998430000, 4.0),
            (1356998440000, 5.0)
        ])
    );
    assert_eq!(
        points(&s, "net.tx{host=a}", 1356998400, 1356998500),
        pts(&[
            (1356998410000, 20.0),
            (1356998420000, 30.0),
            (1356998430000, 40.0)
        ])
    );
}

#[test]
fn long_influx_lines_are_framed_but_long_puts_still_close() {
    let s = Server::start();
    let mut t = s.telnet();
    // Telegraf puts all of a metric's fields on one line: far past 1024.
    let fields: Vec<String> = (0..100).map(|i| format!("field_{i:03}={i}i")).collect();
    t.send(&format!(
        "wide,host=a {} 1356998400000000000\n",
        fields.join(",")
    ));
    assert!(t.sync().is_empty());
    assert_eq!(
        points(&s, "wide.field_099", 1356998400, 1356998500),
        pts(&[(1356998400000, 99.0)])
    );
    // An OpenTSDB command keeps OpenTSDB's 1024-byte limit.
    t.send(&format!(
        "put t.long 1356998400 1 host={}\n",
        "a".repeat(2000)
    ));
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut t.stream, &mut rest);
    assert!(
        rest.starts_with("put: illegal argument: line longer than 1024 bytes"),
        "{rest}"
    );
}

/// What Telegraf's `influx` serializer writes: tags sorted by key, floats
/// with `%.6f`-style digits, integers with `i`, nanosecond timestamps.
fn telegraf_flush(host: &str, t0_s: i64, k: i64) -> (String, Vec<(String, i64, f64)>) {
    let ts_ns = (t0_s + k * 10) * 1_000_000_000;
    let idle = 90.0 + (k as f64) * 0.123457;
    let user = 1.0 + (k as f64) / 7.0;
    let line1 = format!(
        "cpu,cpu=cpu-total,dc=eu-1,host={host} usage_idle={idle:.6},usage_user={user:.6} {ts_ns}\n"
    );
    let used = 1_000_000 + k * 4096;
    let line2 = format!(
        "mem,dc=eu-1,host={host} used={used}i,used_percent={:.6} {ts_ns}\n",
        12.5 + k as f64 / 3.0
    );
    let ms = ts_ns / 1_000_000;
    let parse = |s: String| s.parse::<f64>().expect("a float");
    let want = vec![
        ("cpu.usage_idle".into(), ms, parse(format!("{idle:.6}"))),
        ("cpu.usage_user".into(), ms, parse(format!("{user:.6}"))),
        ("mem.used".into(), ms, used as f64),
        (
            "mem.used_percent".into(),
            ms,
            parse(format!("{:.6}", 12.5 + k as f64 / 3.0)),
        ),
    ];
    (line1 + &line2, want)
}

fn check_readback(s: &Server, host: &str, t0_s: i64, want: &[(String, i64, f64)]) {
    for metric in [
        "cpu.usage_idle",
        "cpu.usage_user",
        "mem.used",
        "mem.used_percent",
    ] {
        let expected: Vec<(String, f64)> = want
            .iter()
            .filter(|(m, _, _)| m == metric)
            .map(|(_, t, v)| (t.to_string(), *v))
            .collect();
        let got = points(
            s,
            &format!("{metric}{{host={host},dc=eu-1}}"),
            t0_s,
            t0_s + 3600,
        );
        assert_eq!(got, expected, "{metric}");
    }
}

#[test]
fn telegraf_socket_writer_replay_reads_back_exact_values() {
    let s = Server::start();
    let t0 = 1_700_000_000;
    let mut want = Vec::new();
    // socket_writer: a fresh connection per flush, closed after writing.
    for k in 0..12 {
        let (lines, w) = telegraf_flush("web01", t0, k);
        want.extend(w);
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(lines.as_bytes()).unwrap();
        drop(c);
    }
    // The last connection's lines may still be in flight: sync on a new one
    // and poll until every point is visible.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut t = s.telnet();
        assert!(t.sync().is_empty());
        // Until the first line is in, its names are unknown (400): not
        // visible yet, as an empty answer.
        let poll = |m: &str| {
            let r = s.get(&format!(
                "/api/query?start={t0}&end={}&m=sum:{m}{{host=web01}}",
                t0 + 3600
            ));
            match r.status {
                200 => r.json(),
                400 if r.text().contains("No such name") => serde_json::json!([]),
                other => panic!("query answered {other}: {}", r.text()),
            }
        };
        let r = poll("cpu.usage_idle");
        let r2 = poll("mem.used_percent");
        let complete = |r: &serde_json::Value| {
            r.as_array().is_some_and(|a| !a.is_empty()) && dps(&r[0]).len() == 12
        };
        if complete(&r) && complete(&r2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "points missing: {r} {r2}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    check_readback(&s, "web01", t0, &want);
}

#[test]
fn telegraf_http_output_with_gzip_reads_back_exact_values() {
    let s = Server::start();
    // What outputs.influxdb does first.
    let r = s.http(
        "POST",
        "/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"q=CREATE+DATABASE+%22telegraf%22",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        serde_json::json!({"results":[{"statement_id":0}]})
    );
    let r = s.get("/ping");
    assert_eq!(r.status, 204);
    assert!(r.header("X-Influxdb-Version").is_some());
    let t0 = 1_700_003_600;
    let mut body = String::new();
    let mut want = Vec::new();
    for k in 0..30 {
        let (lines, w) = telegraf_flush("db01", t0, k);
        body.push_str(&lines);
        want.extend(w);
    }
    let r = s.http(
        "POST",
        "/write?db=telegraf",
        &[
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Encoding", "gzip"),
        ],
        &gzip(body.as_bytes()),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    check_readback(&s, "db01", t0, &want);
}

/// Lines of series already seen skip parsing through the shared series
/// cache: repeated writes, a cache dropped mid-way, a line whose field set
/// changes and a bad line beside cached ones all read back exactly.
#[test]
fn repeated_influx_http_series_read_back_exact_values() {
    let s = Server::start();
    let t0 = 1_700_007_200;
    let mut want = Vec::new();
    for k in 0..12 {
        let (mut lines, w) = telegraf_flush("app01", t0, k);
        want.extend(w);
        if k == 5 {
            // A line that fails between cached ones: the others still land.
            lines.push_str("cpu,host=app01 usage_idle=oops 1\n");
        }
        if k % 3 == 2 {
            // The same series with one more field: a different line key.
            let ts = (t0 + k * 10) * 1_000_000_000;
            lines.push_str(&format!(
                "cpu,cpu=cpu-total,dc=eu-1,host=app02 usage_idle=1,usage_steal={k}i {ts}\n"
            ));
        }
        let r = s.http("POST", "/write?db=t", &[], lines.as_bytes());
        if k == 5 {
            assert_eq!(r.status, 400, "{}", r.text());
            assert!(r.text().contains("oops"), "{}", r.text());
        } else {
            assert_eq!(r.status, 204, "{}", r.text());
        }
        if k == 8 {
            assert_eq!(s.http("POST", "/api/dropcaches", &[], b"").status, 200);
        }
    }
    check_readback(&s, "app01", t0, &want);
    let steal = points(&s, "cpu.usage_steal{host=app02}", t0, t0 + 3600);
    let expect: Vec<(String, f64)> = [2, 5, 8, 11]
        .iter()
        .map(|k| (((t0 + k * 10) * 1000).to_string(), *k as f64))
        .collect();
    assert_eq!(steal, expect);
}

#[test]
fn influx_http_errors_name_the_line_and_keep_good_lines_as_influxdb_does() {
    let s = Server::start();
    let body = "m,host=a v=1 1356998400\nm,host=a v=oops 1356998410\nm,host=a v=3 1356998420\n";
    // 1.x: the good lines are written, 400 names the bad one.
    let r = s.http("POST", "/write?db=x&precision=s", &[], body.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    let j = r.json();
    assert_eq!(
        j["error"],
        "partial write: unable to parse 'm,host=a v=oops 1356998410': invalid boolean dropped=0"
    );
    assert_eq!(j["line"], 2);
    assert!(r.header("X-Influxdb-Error").is_some());
    assert_eq!(
        points(&s, "m.v", 1356998400, 1356998500),
        pts(&[(1356998400000, 1.0), (1356998420000, 3.0)])
    );
    // 2.x: nothing is written when a line is refused.
    let body2 = "n,host=a v=1 1356998400000\nn,host=a\n";
    let r = s.http(
        "POST",
        "/api/v2/write?org=o&bucket=b&precision=ms",
        &[],
        body2.as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let j = r.json();
    assert_eq!(j["code"], "invalid");
    assert_eq!(j["message"], "unable to parse 'n,host=a': missing fields");
    assert_eq!(j["line"], 2);
    let r = s.get("/api/query?start=1356998400&end=1356998500&m=sum:n.v");
    assert_eq!(r.status, 400, "n.v must not exist: {}", r.text());
    // 2.x success, every precision.
    for (p, ts) in [
        ("s", "1356998400"),
        ("ms", "1356998401000"),
        ("us", "1356998402000000"),
        ("ns", "1356998403000000000"),
    ] {
        let r = s.http(
            "POST",
            &format!("/api/v2/write?bucket=b&precision={p}"),
            &[],
            format!("p,host=a v=1 {ts}\n").as_bytes(),
        );
        assert_eq!(r.status, 204, "{p}: {}", r.text());
    }
    assert_eq!(
        points(&s, "p.v", 1356998400, 1356998500),
        pts(&[
            (1356998400000, 1.0),
            (1356998401000, 1.0),
            (1356998402000, 1.0),
            (1356998403000, 1.0)
        ])
    );
    // An unknown precision is refused, in each API's shape.
    let r = s.http("POST", "/write?precision=x", &[], b"p,host=a v=1 1\n");
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("invalid precision")
    );
    let r = s.http(
        "POST",
        "/api/v2/write?precision=m",
        &[],
        b"p,host=a v=1 1\n",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["code"], "invalid");
    // A body over the limit: 413 in InfluxDB's shape.
    let s2 = Server::start_with("[server]\nmax_body_bytes = 1024\nmax_inflight_bytes = 1048576\n");
    let big = "m,host=a v=1 1356998400\n".repeat(100);
    let r = s2.http("POST", "/api/v2/write?precision=s", &[], big.as_bytes());
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["code"], "request too large");
    // Other InfluxQL is refused.
    let r = s.get("/query?q=SELECT+*+FROM+cpu");
    assert_eq!(r.status, 400);
}

/// A body of half a million tiny bad lines: the answer keeps the first
/// hundred refusals and counts the rest, and the good line is stored.
#[test]
fn an_influx_write_of_many_tiny_bad_lines_is_answered_briefly() {
    let s = Server::start();
    let mut body = b"x\n".repeat(500_000);
    body.extend_from_slice(b"tiny,host=a v=1 1356998400\n");
    let r = s.http("POST", "/write?db=x&precision=s", &[], &body);
    assert_eq!(r.status, 400, "{}", r.text());
    let text = r.text();
    assert!(text.len() < 16 << 10, "{} bytes", text.len());
    let j = r.json();
    let error = j["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("partial write: unable to parse 'x': missing fields\n"),
        "{error}"
    );
    assert!(
        error.ends_with("\nand 499900 more lines refused dropped=0"),
        "{error}"
    );
    assert_eq!(j["line"], 1);
    assert_eq!(
        points(&s, "tiny.v", 1356998400, 1356998500),
        pts(&[(1356998400000, 1.0)])
    );
    // Long bad lines: each shown cut at 1 KiB in the body, and the header
    // (which clients bound, Python's at 64 KiB a line) cut at 4 KiB.
    let body = format!("{}\n", "y".repeat(2000)).repeat(200);
    let r = s.http("POST", "/write?db=x", &[], body.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    let error = r.json()["error"].as_str().unwrap_or_default().to_owned();
    assert!(error.len() < 120 << 10, "{} bytes", error.len());
    assert!(
        error.contains(&format!("'{}…': missing fields", "y".repeat(1024))),
        "{error}"
    );
    // Every line refused: InfluxDB's answer without "partial write".
    assert!(error.ends_with("\nand 100 more lines refused"), "{error}");
    let header = r.header("X-Influxdb-Error").unwrap_or_default();
    assert_eq!(header.len(), 4096, "{header}");
    assert!(header.starts_with("unable to parse 'yyy"), "{header}");
    assert!(header.ends_with("y..."), "{header}");
}

// ---- Prometheus ----

fn label(name: &str, value: &str) -> pb::Label {
    pb::Label {
        name: name.into(),
        value: value.into(),
    }
}

fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> pb::TimeSeries {
    let mut labels: Vec<pb::Label> = labels.iter().map(|(n, v)| label(n, v)).collect();
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    pb::TimeSeries {
        labels,
        samples: samples
            .iter()
            .map(|&(timestamp, value)| pb::Sample { value, timestamp })
            .collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

fn snappy(msg: &impl Message) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(&msg.encode_to_vec())
        .expect("snappy")
}

/// The headers Prometheus 2.42 sends.
const WRITE_HEADERS: [(&str, &str); 3] = [
    ("Content-Encoding", "snappy"),
    ("Content-Type", "application/x-protobuf"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

fn remote_write(s: &Server, req: &pb::WriteRequest) -> crate::common::Response {
    s.http("POST", "/api/v1/write", &WRITE_HEADERS, &snappy(req))
}

fn remote_read(s: &Server, queries: Vec<pb::Query>) -> Result<pb::ReadResponse, (u16, String)> {
    let req = pb::ReadRequest {
        queries,
        accepted_response_types: Vec::new(),
    };
    let r = s.http(
        "POST",
        "/api/v1/read",
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
            ("X-Prometheus-Remote-Read-Version", "0.1.0"),
        ],
        &snappy(&req),
    );
    if r.status != 200 {
        return Err((r.status, r.text()));
    }
    assert_eq!(r.header("Content-Encoding"), Some("snappy"));
    assert_eq!(r.header("Content-Type"), Some("application/x-protobuf"));
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&r.body)
        .expect("a snappy response");
    Ok(pb::ReadResponse::decode(raw.as_slice()).expect("a ReadResponse"))
}

fn matcher(t: pb::MatchType, name: &str, value: &str) -> pb::LabelMatcher {
    pb::LabelMatcher {
        r#type: t as i32,
        name: name.into(),
        value: value.into(),
    }
}

fn query(start: i64, end: i64, matchers: Vec<pb::LabelMatcher>) -> pb::Query {
    pb::Query {
        start_timestamp_ms: start,
        end_timestamp_ms: end,
        matchers,
        hints: None,
    }
}

fn labels_of(ts: &pb::TimeSeries) -> Vec<(String, String)> {
    ts.labels
        .iter()
        .map(|l| (l.name.clone(), l.value.clone()))
        .collect()
}

const T0: i64 = 1_700_000_000_000;

#[test]
fn prometheus_remote_write_round_trips_through_query_and_remote_read() {
    let s = Server::start();
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let req = pb::WriteRequest {
        timeseries: vec![
            series(
                &[
                    ("__name__", "http_requests_total"),
                    ("job", "api"),
                    ("instance", "10.0.0.1:9100"),
                    ("path", "/a b"),
                ],
                &[
                    (T0, 1.0),
                    (T0 + 15_000, 3.5),
                    (T0 + 30_000, 1e300),
                    (T0 + 45_000, stale),
                ],
            ),
            series(
                &[
                    ("__name__", "http_requests_total"),
                    ("job", "web"),
                    ("instance", "10.0.0.2:9100"),
                    ("path", "/"),
                ],
                &[(T0, 10.0), (T0 + 15_000, 20.0)],
            ),
            // A recording-rule name: `:` maps to `.`.
            series(&[("__name__", "job:up:sum"), ("job", "api")], &[(T0, 2.0)]),
        ],
        metadata: Vec::new(),
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 204, "{}", r.text());
    // Metadata-only requests (sent once a minute) are accepted.
    let meta = pb::WriteRequest {
        timeseries: Vec::new(),
        metadata: vec![pb::MetricMetadata {
            r#type: 1,
            metric_family_name: "http_requests_total".into(),
            help: "Requests.".into(),
            unit: String::new(),
        }],
    };
    assert_eq!(remote_write(&s, &meta).status, 204);
    // The staleness marker is stored, not skipped (OpenTSDB's readers do
    // not see it: below).
    let m = s.get("/metrics").text();
    assert!(!m.contains("reason=\"stale_marker\""), "{m}");

    // Through the OpenTSDB API: label values mapped with %XX.
    let start = T0 / 1000;
    let r = s.query(&format!(
        "/api/query?start={start}&end={}&m=sum:http_requests_total{{job=api}}&ms=true",
        start + 600
    ));
    assert_eq!(r[0]["tags"]["instance"], "10.0.0.1%3A9100");
    assert_eq!(r[0]["tags"]["path"], "/a%20b");
    assert_eq!(
        dps(&r[0]),
        pts(&[(T0, 1.0), (T0 + 15_000, 3.5), (T0 + 30_000, 1e300)])
    );
    let r = s.query(&format!(
        "/api/query?start={start}&end={}&m=sum:job.up.sum&ms=true",
        start + 600
    ));
    assert_eq!(dps(&r[0]), pts(&[(T0, 2.0)]));

    // Through remote read: the exact labels and values come back.
    use pb::MatchType::{Eq, Neq, Nre, Re};
    let name = |v: &str| matcher(Eq, "__name__", v);
    let res = remote_read(
        &s,
        vec![
            query(
                T0,
                T0 + 60_000,
                vec![name("http_requests_total"), matcher(Eq, "job", "api")],
            ),
            query(
                T0,
                T0 + 60_000,
                vec![name("http_requests_total"), matcher(Neq, "job", "api")],
            ),
            query(
                T0,
                T0 + 60_000,
                vec![
                    name("http_requests_total"),
                    matcher(Re, "instance", "10\\.0\\.0\\.[12]:9100"),
                ],
            ),
            query(
                T0,
                T0 + 60_000,
                vec![name("http_requests_total"), matcher(Nre, "path", "/a.*")],
            ),
            query(T0 + 10_000, T0 + 15_000, vec![name("http_requests_total")]),
            query(T0, T0 + 60_000, vec![name("job:up:sum")]),
            query(T0, T0 + 60_000, vec![matcher(Re, "__name__", "job:.*")]),
            query(T0, T0 + 60_000, vec![name("no_such_metric")]),
            query(
                T0,
                T0 + 60_000,
                vec![name("http_requests_total"), matcher(Eq, "job", "nope")],
            ),
            // `label=""` matches series without the label.
            query(
                T0,
                T0 + 60_000,
                vec![name("http_requests_total"), matcher(Eq, "path", "")],
            ),
        ],
    )
    .expect("remote read");
    assert_eq!(res.results.len(), 10, "one result per query");
    let r0 = &res.results[0].timeseries;
    assert_eq!(r0.len(), 1);
    assert_eq!(
        labels_of(&r0[0]),
        vec![
            ("__name__".into(), "http_requests_total".into()),
            ("instance".into(), "10.0.0.1:9100".into()),
            ("job".into(), "api".into()),
            ("path".into(), "/a b".into()),
        ]
    );
    // The staleness marker comes back bit for bit, as Prometheus' own
    // remote read returns it.
    let samples: Vec<(i64, u64)> = r0[0]
        .samples
        .iter()
        .map(|s| (s.timestamp, s.value.to_bits()))
        .collect();
    assert_eq!(
        samples,
        vec![
            (T0, 1f64.to_bits()),
            (T0 + 15_000, 3.5f64.to_bits()),
            (T0 + 30_000, 1e300f64.to_bits()),
            (T0 + 45_000, stale.to_bits()),
        ]
    );
    let jobs = |i: usize| -> Vec<String> {
        res.results[i]
            .timeseries
            .iter()
            .map(|t| {
                t.labels
                    .iter()
                    .find(|l| l.name == "job")
                    .unwrap()
                    .value
                    .clone()
            })
            .collect()
    };
    assert_eq!(jobs(1), vec!["web"]);
    assert_eq!(jobs(2), vec!["api", "web"]);
    assert_eq!(jobs(3), vec!["web"]);
    // Only samples inside [start, end] (both inclusive).
    let r4: Vec<Vec<i64>> = res.results[4]
        .timeseries
        .iter()
        .map(|t| t.samples.iter().map(|s| s.timestamp).collect())
        .collect();
    assert_eq!(r4, vec![vec![T0 + 15_000], vec![T0 + 15_000]]);
    assert_eq!(res.results[5].timeseries.len(), 1);
    assert_eq!(
        labels_of(&res.results[5].timeseries[0])[0],
        ("__name__".into(), "job:up:sum".into())
    );
    assert_eq!(
        res.results[6].timeseries.len(),
        1,
        "regex over metric names"
    );
    assert!(res.results[7].timeseries.is_empty());
    assert!(res.results[8].timeseries.is_empty());
    assert!(res.results[9].timeseries.is_empty());
}

/// One series sent as several `TimeSeries` of a request (a client that
/// splits a series, or label sets that map to one OpenTSDB series): every
/// sample of every part is stored.
#[test]
fn a_series_split_across_timeseries_of_one_request_keeps_every_sample() {
    let s = Server::start();
    let labels = [("__name__", "split_total"), ("job", "api")];
    let req = pb::WriteRequest {
        timeseries: vec![
            series(&labels, &[(T0, 1.0), (T0 + 15_000, 2.0)]),
            series(&labels, &[(T0 + 30_000, 3.0), (T0 + 45_000, 4.0)]),
            series(&labels, &[(T0 + 60_000, 5.0)]),
        ],
        metadata: Vec::new(),
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 204, "{}", r.text());
    let start = T0 / 1000;
    let r = s.query(&format!(
        "/api/query?start={start}&end={}&m=sum:split_total&ms=true",
        start + 600
    ));
    assert_eq!(
        dps(&r[0]),
        pts(&[
            (T0, 1.0),
            (T0 + 15_000, 2.0),
            (T0 + 30_000, 3.0),
            (T0 + 45_000, 4.0),
            (T0 + 60_000, 5.0)
        ])
    );
}

/// A series sent again in the same bytes is found by them, its labels not
/// decoded again; in other bytes, or after the caches are dropped, by its
/// names. Every sample lands in its one series, and a refused sample of a
/// known series is reported as any other.
#[test]
fn repeated_remote_write_series_read_back_exact_values() {
    let s = Server::start();
    let a = [("__name__", "rep_total"), ("job", "api")];
    let b = [("__name__", "rep_total"), ("job", "db")];
    let (mut want_a, mut want_b) = (Vec::new(), Vec::new());
    for k in 0..6i64 {
        let t = T0 + k * 15_000;
        let mut timeseries = vec![
            series(&a, &[(t, k as f64)]),
            series(&b, &[(t, 10.0 + k as f64)]),
        ];
        want_a.push((t, k as f64));
        want_b.push((t, 10.0 + k as f64));
        match k {
            // Other bytes for the same series.
            2 => timeseries[1].labels.reverse(),
            // A refused sample before a good one, in a known series.
            3 => timeseries[0].samples.insert(
                0,
                pb::Sample {
                    value: 99.0,
                    timestamp: -1,
                },
            ),
            4 => assert_eq!(s.http("POST", "/api/dropcaches", &[], b"").status, 200),
            // A known series twice in one request.
            5 => {
                timeseries.push(series(&a, &[(t + 5_000, 0.5)]));
                want_a.push((t + 5_000, 0.5));
            }
            _ => {}
        }
        let r = remote_write(
            &s,
            &pb::WriteRequest {
                timeseries,
                metadata: Vec::new(),
            },
        );
        if k == 3 {
            assert_eq!(r.status, 400, "{}", r.text());
            assert!(r.text().starts_with("series 0: "), "{}", r.text());
        } else {
            assert_eq!(r.status, 204, "{}", r.text());
        }
    }
    // The thread that decoded the last body keeps its buffer for the next
    // one (until it has been idle for a while and ends), and /metrics
    // shows what is kept.
    assert!(s.metric("hourglass_prom_write_buffer_bytes") > 0);
    let start = T0 / 1000;
    for (job, want) in [("api", want_a), ("db", want_b)] {
        let r = s.query(&format!(
            "/api/query?start={start}&end={}&m=sum:rep_total{{job={job}}}&ms=true",
            start + 600
        ));
        assert_eq!(dps(&r[0]), pts(&want), "job={job}");
    }
}

/// Half a million empty series in one small request: refused with the
/// first hundred reasons and a count, not half a million lines; the good
/// series in the request is stored, and the server goes on.
#[test]
fn a_remote_write_of_many_tiny_bad_series_is_answered_briefly() {
    let s = Server::start();
    let good = pb::WriteRequest {
        timeseries: vec![series(
            &[("__name__", "tiny_ok"), ("job", "a")],
            &[(T0, 1.0)],
        )],
        metadata: Vec::new(),
    };
    let mut raw = [0x0a_u8, 0x00].repeat(500_000);
    raw.extend(good.encode_to_vec());
    let body = snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("snappy");
    let r = s.http("POST", "/api/v1/write", &WRITE_HEADERS, &body);
    assert_eq!(r.status, 400, "{}", r.text());
    let text = r.text();
    assert!(text.len() < 16 << 10, "{} bytes", text.len());
    assert!(text.starts_with("series 0: missing metric name"), "{text}");
    assert!(
        text.trim_end().ends_with("and 499900 more series refused"),
        "{text}"
    );
    let start = T0 / 1000;
    let r = s.query(&format!(
        "/api/query?start={start}&end={}&m=sum:tiny_ok&ms=true",
        start + 60
    ));
    assert_eq!(dps(&r[0]), pts(&[(T0, 1.0)]));
}

/// With metric auto-creation off, `/write` names the metric the engine
/// refused and keeps the lines it could store (cached ones included).
#[test]
fn influx_http_names_unknown_metrics_and_keeps_the_rest() {
    let s = Server::start_with("[uid]\nauto_create_metrics = false\n");
    let r = s.http("POST", "/api/uid/assign?metric=known.v", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    for k in 0..3 {
        let body = format!(
            "known,host=a v={k} {}\nfresh,host=a v=1 {}\n",
            (1_700_000_000 + k * 10) * 1_000_000_000_i64,
            (1_700_000_000 + k * 10) * 1_000_000_000_i64
        );
        let r = s.http("POST", "/write?db=t", &[], body.as_bytes());
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(
            r.text().contains("unable to write 'fresh.v'"),
            "{}",
            r.text()
        );
    }
    assert_eq!(
        points(&s, "known.v{host=a}", 1_700_000_000, 1_700_000_100),
        pts(&[
            (1_700_000_000_000, 0.0),
            (1_700_000_010_000, 1.0),
            (1_700_000_020_000, 2.0)
        ])
    );
}

#[test]
fn prometheus_remote_write_answers_what_prometheus_expects() {
    let s = Server::start_with("[uid]\nauto_create_metrics = false\n");
    // Undecodable bodies: 400, so Prometheus drops them instead of retrying.
    let r = s.http(
        "POST",
        "/api/v1/write",
        &WRITE_HEADERS,
        b"\x10not snappy at all",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.http(
        "POST",
        "/api/v1/write",
        &WRITE_HEADERS,
        &snap::raw::Encoder::new()
            .compress_vec(b"\x0a\x05junk!")
            .unwrap(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.http(
        "POST",
        "/api/v1/write",
        &[("Content-Encoding", "zstd")],
        b"whatever",
    );
    assert_eq!(r.status, 415, "{}", r.text());
    // The path is Prometheus's, not OpenTSDB's `/api/write`.
    let r = s.get("/api/v1/write");
    assert_eq!(r.status, 405, "{}", r.text());
    // A series without a name, and a metric that may not be created: 400
    // (resending cannot help), with the reasons.
    let req = pb::WriteRequest {
        timeseries: vec![
            series(&[("job", "x")], &[(T0, 1.0)]),
            series(&[("__name__", "new_metric"), ("job", "x")], &[(T0, 1.0)]),
        ],
        metadata: Vec::new(),
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 400, "{}", r.text());
    let text = r.text();
    assert!(text.contains("series 0: missing metric name"), "{text}");
    assert!(
        text.contains("No such name for 'metrics': 'new_metric'"),
        "{text}"
    );
    // A body that decodes past the body limit: 413, refused before it is
    // decoded (the declared length is in the snappy header).
    let s2 = Server::start_with("[server]\nmax_body_bytes = 1024\nmax_inflight_bytes = 1048576\n");
    let long = "a".repeat(5000);
    let req = pb::WriteRequest {
        timeseries: vec![series(&[("__name__", "m"), ("v", &long)], &[(T0, 1.0)])],
        metadata: Vec::new(),
    };
    let body = snappy(&req);
    assert!(body.len() < 1024, "compressed {} bytes", body.len());
    let r = s2.http("POST", "/api/v1/write", &WRITE_HEADERS, &body);
    assert_eq!(r.status, 413, "{}", r.text());
}

#[test]
fn remote_read_is_bounded_by_the_query_budget() {
    let s = Server::start_with("[query]\nmax_points = 50\n");
    let big: Vec<(i64, f64)> = (0..100).map(|i| (T0 + i * 1000, i as f64)).collect();
    let small: Vec<(i64, f64)> = (0..10).map(|i| (T0 + i * 1000, i as f64)).collect();
    let req = pb::WriteRequest {
        timeseries: vec![
            series(&[("__name__", "big"), ("job", "x")], &big),
            series(&[("__name__", "small"), ("job", "x")], &small),
        ],
        metadata: Vec::new(),
    };
    assert_eq!(remote_write(&s, &req).status, 204);
    let q = |name: &str| {
        query(
            T0,
            T0 + 100_000,
            vec![matcher(pb::MatchType::Eq, "__name__", name)],
        )
    };
    // Within the budget.
    let ok = remote_read(&s, vec![q("small")]).expect("small read");
    assert_eq!(ok.results[0].timeseries[0].samples.len(), 10);
    // Beyond it: refused, with OpenTSDB's text.
    let (status, text) = remote_read(&s, vec![q("big")]).expect_err("over budget");
    assert_eq!(status, 413, "{text}");
    assert!(
        text.contains("more than our limit of 50 data points"),
        "{text}"
    );
}

#[test]
fn an_http_method_split_across_packets_is_still_http() {
    let s = Server::start();
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // "PO" is a prefix of "POST ": the server waits for more bytes.
    c.write_all(b"PO").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let body = r#"{"metric":"split.m","timestamp":1356998400,"value":1,"tags":{"h":"a"}}"#;
    let head = format!(
        "ST /api/put HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(body.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut c, &mut out);
    assert!(out.starts_with("HTTP/1.1 204"), "{out}");
    assert_eq!(
        points(&s, "split.m", 1356998400, 1356998500),
        pts(&[(1356998400000, 1.0)])
    );
}

/// Issue 22, defect 6: `/api/put` with a 1 MiB metric name or tag value and
/// `/write` with a 1 MiB measurement answered 204 (telnet refused such
/// lines); the metric could then not be queried by GET and `/api/suggest`
/// returned the 1 MiB string. One bound (`schema.max_name_bytes`, default
/// 1,024 bytes as stored) now holds on every write path, with an error that
/// names what is too long without echoing it, and nothing of the refused
/// point is stored.
#[test]
fn names_longer_than_the_limit_are_refused_on_every_protocol() {
    let s = Server::start();
    let huge = "m".repeat(1 << 20);
    let limit = 1024;
    let just = "n".repeat(limit);
    let over = "o".repeat(limit + 1);
    let put = |metric: &str, tagv: &str| {
        s.post_json(
            "/api/put?details",
            &format!(r#"{{"metric":"{metric}","timestamp":1356998400,"value":1,"tags":{{"host":"{tagv}"}}}}"#),
        )
    };
    for (metric, tagv, what) in [
        (huge.as_str(), "a", "metric name"),
        ("len.m", huge.as_str(), "tag value with key [host]"),
        (over.as_str(), "a", "metric name"),
    ] {
        let r = put(metric, tagv);
        assert_eq!(r.status, 400, "{what}");
        // (`details` echoes the datapoint, as OpenTSDB's does; the error
        // text itself stays short.)
        let json = r.json();
        let text = json["errors"][0]["error"].as_str().unwrap_or("");
        assert!(
            text.starts_with(&format!("Invalid {what}"))
                && text.ends_with("longer than the limit of 1024"),
            "{text:.300}"
        );
        assert!(
            text.len() < 200,
            "the error echoes the name: {} bytes",
            text.len()
        );
    }
    // Exactly at the limit is fine.
    let r = put(&just, "a");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["success"], 1);
    // InfluxDB: the line is refused in InfluxDB's shape; the others stored.
    let body =
        format!("{over},host=a v=1 1356998400000000000\nlen2,host=a v=2 1356998400000000000\n");
    let r = s.http("POST", "/write", &[], body.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap_or("")
            .contains("longer than the limit"),
        "{:.300}",
        r.text()
    );
    assert_eq!(
        s.query("/api/query?start=1356998000&m=sum:len2.v")[0]["dps"]["1356998400"],
        2.0
    );
    // Prometheus: the series is refused (400, the reason), the rest kept.
    let req = pb::WriteRequest {
        timeseries: vec![
            series(&[("__name__", "len3"), ("pod", &over)], &[(T0, 1.0)]),
            series(&[("__name__", "len4"), ("pod", "a")], &[(T0, 4.0)]),
        ],
        metadata: Vec::new(),
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("longer than the limit"),
        "{:.300}",
        r.text()
    );
    // UID assignment is bounded too.
    let r = s.http("POST", &format!("/api/uid/assign?metric={over}"), &[], b"");
    assert_eq!(r.status, 400, "{:.300}", r.text());
    assert!(
        r.text().contains("longer than the limit"),
        "{:.300}",
        r.text()
    );
    // Telnet, with a bound below the line length.
    let s2 = Server::start_with("[schema]\nmax_name_bytes = 16\n");
    let mut t = s2.telnet();
    t.send(&format!("put {} 1356998400 1 host=a\n", "t".repeat(17)));
    let lines = t.sync();
    assert!(
        lines.iter().any(|l| l.contains("Invalid metric name") && l.contains("longer than the limit of 16")),
        "{lines:?}"
    );
    // Nothing too long was stored: suggest lists only names within bounds.
    let names = s.get("/api/suggest?type=metrics&max=100").json();
    for n in names.as_array().expect("array") {
        assert!(n.as_str().is_some_and(|n| n.len() <= limit), "{:.100}", n);
    }
}

/// The seconds timestamp of the per-protocol counters test.
const SECS: u64 = 1_700_000_000;

/// `hourglass_points_received_total` of one protocol.
fn received(s: &Server, protocol: &str) -> u64 {
    let text = s.get("/metrics").text();
    let prefix = format!("hourglass_points_received_total{{protocol=\"{protocol}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse().expect("a count"))
}

#[test]
fn ingest_is_counted_per_protocol() {
    let s = Server::start();
    let body = format!(
        r#"[{{"metric":"p.put","timestamp":{SECS},"value":1,"tags":{{"h":"a"}}}},
            {{"metric":"p.put","timestamp":{},"value":2,"tags":{{"h":"a"}}}},
            {{"metric":"p.put","timestamp":{SECS},"value":"bad","tags":{{"h":"a"}}}}]"#,
        SECS + 1
    );
    let r = s.post_json("/api/put", &body);
    assert_eq!(r.status, 400, "{}", r.text());
    let mut t = s.telnet();
    t.send(&format!(
        "put p.telnet {SECS} 1 h=a\nput p.telnet {} 2 h=a\n",
        SECS + 1
    ));
    t.send(&format!("p_line,h=a v=1 {}\n", SECS * 1_000_000_000));
    let errors = t.sync();
    assert!(errors.is_empty(), "{errors:?}");
    let r = s.http(
        "POST",
        "/write?precision=s",
        &[],
        format!("cpu,h=a user=1,system=2 {SECS}\n").as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let req = pb::WriteRequest {
        timeseries: vec![series(
            &[("__name__", "p_prom"), ("job", "a")],
            &[(T0, 1.0), (T0 + 15_000, 2.0), (T0 + 30_000, f64::NAN)],
        )],
        ..Default::default()
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 204, "{}", r.text());
    // Accepted points only: the refused `/api/put` element is not counted;
    // the NaN sample is stored, so it is.
    assert_eq!(received(&s, "put"), 2);
    assert_eq!(received(&s, "telnet"), 3);
    assert_eq!(received(&s, "influx"), 2);
    assert_eq!(received(&s, "prometheus"), 3);
    assert_eq!(received(&s, "import"), 0);
}

/// Staleness markers and NaN/±Inf from remote write are stored bit for bit:
/// PromQL ends a series at its marker and shows NaN and ±Inf as Prometheus
/// does; OpenTSDB's readers (`/api/query`, downsampled or not, and
/// `/api/query/last`) never see a marker. The same after a crash (WAL
/// replay) and after a clean stop (table files).
#[test]
fn staleness_markers_end_a_series_for_promql_and_are_invisible_to_opentsdb() {
    let mut s = Server::start();
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    // Two hours ago, 800 s into the hour: within `/api/query/last`'s
    // back_scan below.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    let base = ((now - 7200) / 3600 * 3600 + 800) * 1000;
    let req = pb::WriteRequest {
        timeseries: vec![
            series(
                &[("__name__", "up"), ("job", "a")],
                &[
                    (base, 1.0),
                    (base + 15_000, 1.0),
                    (base + 30_000, 0.0),
                    (base + 45_000, stale),
                ],
            ),
            series(
                &[("__name__", "temp"), ("room", "x")],
                &[
                    (base, 20.5),
                    (base + 15_000, f64::NAN),
                    (base + 30_000, f64::INFINITY),
                    (base + 45_000, f64::NEG_INFINITY),
                ],
            ),
        ],
        metadata: Vec::new(),
    };
    let r = remote_write(&s, &req);
    assert_eq!(r.status, 204, "{}", r.text());
    let t0 = base / 1000;
    // The hour holding base, whole, so a downsample may read summaries.
    let hour = t0 - t0 % 3600;
    let check = |s: &Server, when: &str| {
        let promql = |q: &str, at: i64| -> serde_json::Value {
            let r = s.get(&format!(
                "/api/v1/query?query={}&time={at}",
                q.replace('[', "%5B").replace(']', "%5D")
            ));
            assert_eq!(r.status, 200, "{when}: {q}: {}", r.text());
            r.json()["data"]["result"].clone()
        };
        let value = |q: &str, at: i64| -> Vec<String> {
            promql(q, at)
                .as_array()
                .expect("a vector")
                .iter()
                .map(|x| x["value"][1].as_str().expect("a value").to_owned())
                .collect()
        };
        assert_eq!(value("up", t0 + 40), vec!["0"], "{when}");
        // The marker ends the series at once, not five minutes later.
        assert_eq!(value("up", t0 + 46), Vec::<String>::new(), "{when}");
        assert_eq!(
            value("count_over_time(up[1m])", t0 + 50),
            vec!["3"],
            "{when}"
        );
        assert_eq!(value("temp", t0 + 16), vec!["NaN"], "{when}");
        assert_eq!(value("temp", t0 + 31), vec!["+Inf"], "{when}");
        assert_eq!(value("temp", t0 + 46), vec!["-Inf"], "{when}");
        // OpenTSDB: three points, no marker; downsampled over the whole
        // hour, the marker is neither counted nor the last value.
        let q = s.query(&format!(
            "/api/query?start={t0}&end={}&m=sum:up&ms=true",
            t0 + 600
        ));
        assert_eq!(
            dps(&q[0]),
            pts(&[(base, 1.0), (base + 15_000, 1.0), (base + 30_000, 0.0)]),
            "{when}"
        );
        for (ds, want) in [("count", 3.0), ("last", 0.0), ("sum", 2.0)] {
            let q = s.query(&format!(
                "/api/query?start={hour}&end={}&m=sum:1h-{ds}:up",
                hour + 3599
            ));
            assert_eq!(dps(&q[0]), pts(&[(hour, want)]), "{when}: 1h-{ds}");
        }
        // back_scan: on a shared store after a crash, nothing records the
        // series' newest hour, and without it only the current hour is read
        // (as OpenTSDB reads without meta counters).
        let last = s.get("/api/query/last?timeseries=up{job=a}&back_scan=4");
        assert_eq!(last.status, 200, "{when}: {}", last.text());
        let last = last.json();
        assert_eq!(last[0]["timestamp"], base + 30_000, "{when}: {last}");
        assert_eq!(last[0]["value"], "0.0", "{when}: {last}");
    };
    check(&s, "live");
    s.kill9();
    s.restart();
    check(&s, "after kill -9");
    s.stop();
    s.restart();
    check(&s, "after a clean stop");
}
