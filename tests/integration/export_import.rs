//! Export and import with the real binary: a million points of every value
//! kind (integers, 4-byte floats, doubles; second and millisecond
//! timestamps) exported in both formats by `hourglass export`, imported
//! into an empty server by `hourglass import`, and exported again: the two
//! exports are equal byte for byte, so every point came back with the same
//! bits. Also the errors: a bad line is reported with its line number and
//! stops the import or is skipped, and nothing of it is stored.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Server, binary, http};

const HOSTS: i64 = 20;
const METRICS: [&str; 5] = ["rt.int", "rt.float", "rt.double", "rt.ms", "rt.big"];
/// Points per series: 20 hosts × 5 metrics × 10 000 = 1 000 000 points.
const STEPS: i64 = 10_000;
const T0: i64 = 1_600_000_000;

fn value(metric: &str, host: i64, step: i64) -> String {
    match metric {
        "rt.int" => format!("{}", step * 37 - host * 1000),
        // Exactly representable as 4-byte floats.
        "rt.float" => format!("{}.25", step % 977 + host),
        "rt.double" => format!("{:?}", (step as f64) * 0.1 + host as f64 / 3.0),
        "rt.ms" => format!("{}", step % 200),
        _ => format!("{}", i64::MAX - step * 7919 - host),
    }
}

fn timestamp(metric: &str, step: i64) -> String {
    if metric == "rt.ms" {
        format!("{}", (T0 + step * 10) * 1000 + step % 1000)
    } else {
        format!("{}", T0 + step * 10)
    }
}

fn load(s: &Server) {
    let mut t = s.telnet();
    let mut text = String::with_capacity(8 << 20);
    for step in 0..STEPS {
        for metric in METRICS {
            for host in 0..HOSTS {
                text.push_str(&format!(
                    "put {metric} {} {} host=h{host} dc=dc{}\n",
                    timestamp(metric, step),
                    value(metric, host, step),
                    host % 3
                ));
            }
        }
        if text.len() > 4 << 20 {
            t.send(&text);
            text.clear();
        }
    }
    t.send(&text);
    let replies = t.sync();
    assert!(
        replies.is_empty(),
        "refused: {:?}",
        &replies[..replies.len().min(5)]
    );
}

fn hourglass(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .output()
        .expect("run hourglass")
}

fn export(s: &Server, format: &str, to: &Path, gzip: bool) {
    let url = format!("http://{}", s.addr);
    let mut args = vec![
        "export",
        "--url",
        &url,
        "--start",
        "1500000000",
        "--format",
        format,
        "--quiet",
        "--output",
        to.to_str().expect("utf-8"),
    ];
    if gzip {
        args.push("--gzip");
    }
    let out = hourglass(&args);
    assert!(
        out.status.success(),
        "export: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn import(s: &Server, file: &Path, extra: &[&str]) -> Output {
    let url = format!("http://{}", s.addr);
    let mut args = vec![
        "import",
        "--url",
        &url,
        "--quiet",
        file.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    hourglass(&args)
}

#[test]
fn a_million_points_round_trip_bit_for_bit_in_both_formats() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let source = Server::start();
    load(&source);
    for format in ["jsonl", "opentsdb"] {
        let first = tmp.path().join(format!("first.{format}"));
        export(&source, format, &first, false);
        let exported = std::fs::read(&first).expect("export");
        let lines = exported.iter().filter(|&&b| b == b'\n').count();
        if format == "opentsdb" {
            assert_eq!(lines, 1_000_000, "one line a point");
        }
        // Compressed on the way out, read back as gzip by the import.
        let gz = tmp.path().join(format!("first.{format}.gz"));
        export(&source, format, &gz, true);
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("gz")),
            &mut unzipped,
        )
        .expect("gunzip");
        assert!(
            unzipped == exported,
            "the gzip export differs from the plain one"
        );

        let target = Server::start();
        let out = import(&target, &gz, &[]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "import: {said} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("import: 1000000 points"), "{said}");
        let second = tmp.path().join(format!("second.{format}"));
        export(&target, format, &second, false);
        let again = std::fs::read(&second).expect("export");
        assert!(
            again == exported,
            "{format}: the import's export differs from the original's ({} and {} bytes)",
            again.len(),
            exported.len()
        );
    }
    // Spot checks of the text itself: kinds and timestamps as written.
    let text = std::fs::read_to_string(tmp.path().join("first.opentsdb")).expect("text");
    assert!(
        text.contains(&format!("rt.float {} 0.25 ", T0)),
        "4-byte floats keep their point"
    );
    assert!(
        text.contains(&format!("rt.ms {}.001 ", T0 + 10)),
        "milliseconds stay"
    );
    assert!(
        text.contains(&format!("rt.big {} {} ", T0, i64::MAX)),
        "64-bit integers stay exact"
    );
}

#[test]
fn bad_lines_are_reported_by_number_and_never_stored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("points.txt");
    std::fs::write(
        &file,
        "ok.m 1600000000 1 host=a\n\
         ok.m 1600000010 2 host=a\n\
         \n\
         ok.m 1600000020 abc host=a\n\
         ok.m 1600000030 4 host=a\n\
         ok.m 1600000040\n\
         ok.m 1600000050 6 host=a\n",
    )
    .expect("write");
    let s = Server::start();
    // Stop: lines 1-2 stored, the bad line 4 and everything after it not.
    let out = import(&s, &file, &["--connections", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("points.txt:4: put: invalid value"), "{err}");
    assert!(!err.contains(":6:"), "stopped at the first: {err}");
    let q = "/api/query?start=1600000000&end=1600000100&m=sum:ok.m";
    let dps = |s: &Server| {
        s.query(q)[0]["dps"]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(dps(&s), ["1600000000", "1600000010"]);
    // Skip: every good line stored, both bad ones reported.
    let out = import(&s, &file, &["--on-error", "skip"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("points.txt:4:")
            && err.contains("points.txt:6: put: illegal argument: not enough arguments"),
        "{err}"
    );
    assert_eq!(
        dps(&s),
        ["1600000000", "1600000010", "1600000030", "1600000050"]
    );
    // The HTTP endpoint's own answer.
    let r = http(
        s.addr,
        "POST",
        "/api/v1/import",
        &[],
        b"{\"metric\":{\"__name__\":\"j.m\",\"h\":\"a\"},\"values\":[1,2],\"timestamps\":[1600000000000,1600000001000]}\n{\"metric\":{}}\n",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let answer = r.json();
    assert_eq!(answer["points"], 2);
    assert_eq!(answer["errors"][0]["line"], 2);
    assert!(
        answer["errors"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("pair up") || e.contains("JSON")),
        "{answer}"
    );
    // An export with no selector is refused with what to send.
    let r = http(s.addr, "GET", "/api/v1/export", &[], b"");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("match[]"), "{}", r.text());
    let r = http(
        s.addr,
        "GET",
        "/api/v1/export?match[]=%7Ba%3D~%22.*%22%7D",
        &[],
        b"",
    );
    assert_eq!(r.status, 400);
    assert!(r.text().contains("matches every series"), "{}", r.text());
}
