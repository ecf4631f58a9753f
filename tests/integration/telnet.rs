//! The line protocol, byte for byte as clients send it.

use std::io::Read;
use std::time::Duration;

use crate::common::{Server, dps, pts};

#[test]
fn puts_in_every_accepted_form_are_stored_exactly() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send("put t.cpu 1356998400 1 host=a\r\n"); // CRLF (collectd)
    t.send("put  t.cpu 1356998410 2 host=a\n"); // double space after put
    t.send("put t.cpu 1356998420 3  host=a  \r\n"); // runs of and trailing spaces
    t.send("put t.cpu 1356998430500 4.5 host=a\n"); // milliseconds
    t.send("put t.cpu 1356998440.250 5 host=a\n"); // dotted: 1356998440250 ms
    t.send("put t.cpu 1356998450 -0.1 host=a\n"); // stored as a double
    t.send("put t.cpu 1356998460 18446744073709551615 host=a\n"); // u64 counter
    assert_eq!(t.sync(), Vec::<String>::new(), "no error replies expected");
    let r = s.query("/api/query?start=1356998400&end=1356998500&m=sum:t.cpu{host=a}&ms=true");
    assert_eq!(r.as_array().unwrap().len(), 1);
    let got = dps(&r[0]);
    let want = pts(&[
        (1356998400000, 1.0),
        (1356998410000, 2.0),
        (1356998420000, 3.0),
        (1356998430500, 4.5),
        (1356998440250, 5.0),
        (1356998450000, -0.1),
        (1356998460000, 1.8446744073709552e19),
    ]);
    assert_eq!(got, want);
    // Integer points next to integers render as JSON integers.
    let text = s
        .get("/api/query?start=1356998400&end=1356998405&m=sum:t.cpu{host=a}")
        .text();
    assert!(text.contains("\"1356998400\":1}"), "{text}");
    assert_eq!(r[0]["metric"], "t.cpu");
    assert_eq!(r[0]["tags"]["host"], "a");
}

#[test]
fn every_applicable_error_line_of_the_reference() {
    let s = Server::start();
    let mut t = s.telnet();
    let cases: &[(&str, &str)] = &[
        (
            "put",
            "put: illegal argument: not enough arguments (need least 4, got 0)",
        ),
        (
            "put t.cpu 1356998400 1",
            "put: illegal argument: not enough arguments (need least 4, got 3)",
        ),
        (
            "put t.cpu notatime 1 host=a",
            "put: invalid value: Invalid character 'n' in notatime",
        ),
        (
            "put t.cpu 0 1 host=a",
            "put: illegal argument: invalid timestamp: 0",
        ),
        (
            "put t.cpu -5 1 host=a",
            "put: illegal argument: invalid timestamp: -5",
        ),
        (
            "put t.cpu 10000000000000 1 host=a",
            "put: illegal argument: bad timestamp=10000000000000 when trying to add value=[1]/0 to metric=t.cpu, tags={host=a}",
        ),
        (
            "put t.cpu 1356998400 1 hosta",
            "put: illegal argument: invalid tag: hosta",
        ),
        (
            "put t.cpu 1356998400 1 host=",
            "put: illegal argument: invalid tag: host=",
        ),
        (
            "put t.cpu 1356998400 1 host=a host=b",
            "put: illegal argument: duplicate tag: host=b, tags={host=a}",
        ),
        (
            "put t.cpu 1356998400 NaN host=a",
            "put: invalid value: Invalid character 'N' in NaN",
        ),
        (
            "put t.cpu 1356998400 -nan host=a",
            "put: invalid value: Invalid character 'n' in -nan",
        ),
        (
            "put t.cpu 1356998400 inf host=a",
            "put: invalid value: Invalid character 'i' in inf",
        ),
        (
            "put t.cpu 1356998400 1e400 host=a",
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=t.cpu timestamp=1356998400",
        ),
        (
            "put t.cpu 1356998400 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9",
            "put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}",
        ),
        (
            "put t.c!pu 1356998400 1 host=a",
            "put: illegal argument: Invalid metric name (\"t.c!pu\"): illegal character: !",
        ),
        (
            "put t.cpu 1356998400 1 ho$t=a",
            "put: illegal argument: Invalid tag name with value [a] (\"ho$t\"): illegal character: $",
        ),
        (
            "put t.cpu 1356998400 1 host=a:b",
            "put: illegal argument: Invalid tag value with key [host] (\"a:b\"): illegal character: :",
        ),
        ("hello", "unknown command: hello.  Try `help'."),
        ("PUT t.cpu 1 1 a=b", "unknown command: PUT.  Try `help'."),
        ("", "unknown command: .  Try `help'."),
    ];
    for (line, _) in cases {
        t.send(&format!("{line}\n"));
    }
    let got = t.sync();
    let want: Vec<String> = cases.iter().map(|(_, e)| e.to_string()).collect();
    assert_eq!(got, want);
    // The connection stayed open through every error and still accepts data.
    t.send("put t.cpu 1356998400 7 host=a\n");
    assert!(t.sync().is_empty());
    let r = s.query("/api/query?start=1356998400&end=1356998460&m=sum:t.cpu");
    assert_eq!(dps(&r[0]), pts(&[(1356998400, 7.0)]));
}

#[test]
fn unknown_metric_when_auto_create_is_off() {
    let s = Server::start_with("[uid]\nauto_create_metrics = false\n");
    let mut t = s.telnet();
    t.send("put new.metric 1479496160 1.3e3 host=web01\n");
    assert_eq!(
        t.sync(),
        vec!["put: unknown metric: No such name for 'metrics': 'new.metric'".to_string()]
    );
}

#[test]
fn commands() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send("help\n");
    assert_eq!(
        t.read_line(),
        "available commands: put rollup stats dropcaches version help exit \n"
    );
    t.send("dropcaches\n");
    assert_eq!(t.read_line(), "Caches dropped.\n");
    t.send("put t.x 1356998400 1 host=a\nstats\n");
    let stats = t.sync();
    assert!(
        stats
            .iter()
            .any(|l| l.starts_with("tsd.datapoints.added ") && l.contains(" 1 host=")),
        "{stats:?}"
    );
    assert!(stats.iter().all(|l| l.starts_with("tsd.")), "{stats:?}");
    t.send("exit\n");
    let mut rest = Vec::new();
    t.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server closes the connection: the read ends (Ok), it does not
    // time out (an Err of kind WouldBlock/TimedOut would mean it stayed open).
    let closed = t.stream.read_to_end(&mut rest);
    assert!(
        closed.is_ok(),
        "exit did not close the connection: {closed:?}"
    );
    assert!(rest.is_empty(), "exit sends nothing: {rest:?}");
}

#[test]
fn a_line_over_the_limit_closes_the_connection() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send("put t.ok 1356998400 1 host=a\n");
    t.send(&format!(
        "put t.long 1356998400 1 host={}",
        "a".repeat(2000)
    ));
    let mut rest = String::new();
    let _ = t.stream.read_to_string(&mut rest);
    assert!(
        rest.starts_with("put: illegal argument: line longer than 1024 bytes"),
        "{rest}"
    );
    // The line before it was kept; a new connection works.
    let mut t2 = s.telnet();
    assert!(t2.sync().is_empty());
    let r = s.query("/api/query?start=1356998400&end=1356998460&m=sum:t.ok");
    assert_eq!(dps(&r[0]).len(), 1);
}

#[test]
fn a_client_that_never_reads_its_errors_does_not_stall_ingest() {
    let s = Server::start();
    // collectd-style: writes a flood of bad lines and never reads.
    let mut silent = s.telnet();
    let bad = "put bad.metric notatime 1 host=a\n".repeat(2000);
    for _ in 0..20 {
        silent.send(&bad);
    }
    silent.send("put t.after 1356998400 42 host=a\n");
    // Another client is served promptly, and so is the silent one's data.
    let mut t = s.telnet();
    t.send("put t.other 1356998400 1 host=a\n");
    assert!(t.sync().is_empty());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = s.get("/api/query?start=1356998400&end=1356998460&m=sum:t.after");
        if r.status == 200 && r.json().as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the silent client's point never arrived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every one of the 40,000 error lines was either queued for the client
    // or dropped and counted. Now read what the client was sent (the
    // queue's worth and what the socket buffers held): together with the
    // dropped count it must be exactly 40,000, and most must have been
    // dropped.
    silent
        .stream
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    let mut received = Vec::new();
    silent
        .stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    silent
        .stream
        .read_to_end(&mut received)
        .expect("read the replies");
    let text = String::from_utf8(received).expect("utf-8 replies");
    let delivered = text.lines().count() as u64;
    assert!(
        text.lines()
            .all(|l| l == "put: invalid value: Invalid character 'n' in notatime"),
        "unexpected reply in {text:?}"
    );
    let dropped = s.metric("hourglass_telnet_error_lines_dropped_total");
    assert_eq!(
        dropped + delivered,
        40_000,
        "{dropped} dropped + {delivered} delivered error lines"
    );
    assert!(
        dropped >= 30_000,
        "only {dropped} error lines counted as dropped ({delivered} delivered)"
    );
}

#[test]
fn command_replies_are_never_dropped_behind_error_lines() {
    // Issue: after 100 bad puts, `version` on the same connection got no
    // answer, because replies shared the 64-slot error queue.
    let s = Server::start();
    let mut t = s.telnet();
    t.send(&"put bad.metric notatime 1 host=a\n".repeat(100));
    t.send("version\nhelp\n");
    let mut reader = std::io::BufReader::new(t.stream.try_clone().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
        assert!(n > 0, "connection closed; got {lines:?}");
        if line.starts_with("available commands") {
            break;
        }
        lines.push(line);
    }
    let version = lines
        .iter()
        .position(|l| l.starts_with("hourglass "))
        .expect("version reply");
    // In order: the errors that were kept, then the version's two lines.
    assert!(
        lines[..version]
            .iter()
            .all(|l| l.starts_with("put: invalid value"))
    );
    assert_eq!(lines.len(), version + 2);
}

#[test]
fn empty_connections_are_harmless() {
    let s = Server::start();
    for _ in 0..20 {
        drop(std::net::TcpStream::connect(s.addr).unwrap());
    }
    let mut t = s.telnet();
    assert!(t.sync().is_empty());
}

/// A connection's cached series stay right when the engine gives their
/// slots up (idle series past `head.max_series` after a flush) and other
/// series take the slots: every point lands in its own series.
#[test]
fn repeated_series_stay_exact_across_evictions() {
    let s = Server::start_with(
        "[head]\nmax_series = 3\nflush_grace_secs = 0\nflush_interval_secs = 1\n",
    );
    let mut t = s.telnet();
    let t0 = 1_356_998_400u64;
    for round in 0..6u64 {
        let mut lines = String::new();
        for h in 0..12u64 {
            // Two spellings of one series: the cache keys on the text.
            let sep = if h % 2 == 0 { " " } else { "  " };
            lines.push_str(&format!(
                "put ev.m {} {} host=h{h}{sep}dc=x\n",
                t0 + round * 10,
                round * 100 + h
            ));
        }
        t.send(&lines);
        assert!(t.sync().is_empty());
        // Let the flush loop write the (closed) hour out and evict.
        std::thread::sleep(Duration::from_millis(1200));
    }
    for h in 0..12u64 {
        let r = s.query(&format!(
            "/api/query?start={t0}&end={}&m=sum:ev.m%7Bhost=h{h}%7D",
            t0 + 100
        ));
        let want: Vec<(i64, f64)> = (0..6u64)
            .map(|round| ((t0 + round * 10) as i64, (round * 100 + h) as f64))
            .collect();
        assert_eq!(dps(&r[0]), pts(&want), "host h{h}");
    }
}

/// Issue 22, defect 8: telnet stored a name that is not UTF-8 as ISO-8859-1
/// while `/api/put` refused the same bytes. Names are UTF-8 on every
/// protocol: both refuse it with the same message, and nothing is stored.
#[test]
fn names_that_are_not_utf8_are_refused_as_over_http() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send_bytes(b"put caf\xe9 1356998400 1 host=a\nput ok.m 1356998400 1 host=w\xe9b\n");
    let lines = t.sync();
    assert_eq!(
        lines,
        vec![
            "put: illegal argument: Invalid metric name (\"caf\u{fffd}\"): illegal character: \u{fffd}",
            "put: illegal argument: Invalid tag value with key [host] (\"w\u{fffd}b\"): illegal character: \u{fffd}",
        ]
    );
    let r = s.http(
        "POST",
        "/api/put?details",
        &[],
        b"{\"metric\":\"caf\xe9\",\"timestamp\":1356998400,\"value\":1,\"tags\":{\"host\":\"a\"}}",
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"][0]["error"],
        "Invalid metric name (\"caf\u{fffd}\"): illegal character: \u{fffd}"
    );
    assert_eq!(
        s.get("/api/suggest?type=metrics").json(),
        serde_json::json!([])
    );
}

/// A connection whose series cache outgrows the CPU's caches reads each
/// line ahead of its turn (its cache slot prefetched): every point still
/// lands in its own series, in order, among InfluxDB lines, refused lines
/// and a cache emptied by `dropcaches`, and with a series spelled two ways.
#[test]
fn a_connection_with_a_large_series_cache_reads_ahead_and_stays_exact() {
    let s = Server::start();
    let mut t = s.telnet();
    let t0 = 1_356_998_400u64;
    // 30,000 series take the connection's table past 2 MiB (65,536 slots).
    let pods = 30_000u64;
    for round in 0..3u64 {
        let mut lines = String::with_capacity(2 << 20);
        for pod in 0..pods {
            let sep = if pod % 2 == 0 { " " } else { "  " };
            lines.push_str(&format!(
                "put la.m {} {} pod=p{pod}{sep}dc=x\n",
                t0 + round * 10,
                pod + round * 100_000
            ));
            if pod == 12_345 {
                lines.push_str("put la.m notatime 1 pod=bad\n");
                lines.push_str(&format!(
                    "la_influx,pod=a value={round} {}\n",
                    (t0 + round * 10) * 1_000_000_000
                ));
                if round == 1 {
                    // The cache emptied mid-read: the line read ahead
                    // keeps its key, and the cache grows large again.
                    lines.push_str("dropcaches\n");
                }
            }
        }
        t.send(&lines);
        let replies = t.sync();
        let errors: Vec<&String> = replies.iter().filter(|l| l.starts_with("put:")).collect();
        assert_eq!(errors.len(), 1, "{replies:?}");
        assert!(errors[0].contains("notatime"), "{errors:?}");
    }
    let sum_of_pods = pods * (pods - 1) / 2;
    let r = s.query(&format!(
        "/api/query?start={t0}&end={}&m=sum:la.m",
        t0 + 100
    ));
    let want: Vec<(i64, f64)> = (0..3u64)
        .map(|round| {
            (
                (t0 + round * 10) as i64,
                (sum_of_pods + pods * round * 100_000) as f64,
            )
        })
        .collect();
    assert_eq!(dps(&r[0]), pts(&want));
    // Every series holds its own three points: a line read ahead with
    // another line's key would move points between series, which the sum
    // above cannot see.
    let all = s.query(&format!(
        "/api/query?start={t0}&end={}&m=sum:la.m%7Bpod=*%7D",
        t0 + 100
    ));
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), pods as usize);
    for series in all {
        let name = series["tags"]["pod"].as_str().unwrap();
        let pod: u64 = name.strip_prefix('p').unwrap().parse().unwrap();
        let want: Vec<(i64, f64)> = (0..3u64)
            .map(|round| ((t0 + round * 10) as i64, (pod + round * 100_000) as f64))
            .collect();
        assert_eq!(dps(series), pts(&want), "pod {name}");
    }
    let influx = s.query(&format!(
        "/api/query?start={t0}&end={}&m=sum:la_influx.value",
        t0 + 100
    ));
    let want: Vec<(i64, f64)> = (0..3u64)
        .map(|round| ((t0 + round * 10) as i64, round as f64))
        .collect();
    assert_eq!(dps(&influx[0]), pts(&want));
}
