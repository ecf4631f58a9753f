//! Fuzz target: InfluxDB line protocol bodies (`influx::parse_body`), single telnet-port lines
//! (`influx::parse_line`), the port-sharing decisions and the error texts the server answers
//! with must never panic, and every point they return must pass `check_point`.
#![no_main]

use hourglass_ingest::influx::{MAX_SHOWN_LINE, Precision, parse_body, parse_line};
use hourglass_ingest::port::{classify_line, sniff_connection};
use hourglass_ingest::refusals::MAX_KEPT;
use hourglass_ingest::{Limits, check_point};
use libfuzzer_sys::fuzz_target;

const NOW_MS: i64 = 1_700_000_000_123;

fn body(data: &[u8], precision: Precision, limits: &Limits) {
    let batch = parse_body(data, precision, NOW_MS, limits);
    let mut points = 0;
    for p in batch.points() {
        assert_eq!(check_point(&p, limits), Ok(()), "{p:?}");
        points += 1;
    }
    assert_eq!(points, batch.point_count());
    for e in &batch.errors {
        assert!(e.line_no >= 1);
        // Cut at MAX_SHOWN_LINE bytes; each byte of those at most one U+FFFD, plus `…`.
        assert!(e.line.len() <= 3 * MAX_SHOWN_LINE + 3, "{}", e.line.len());
        let _ = e.to_string();
    }
    // Refusals are counted, and kept only up to the bound.
    assert_eq!(batch.errors.len(), batch.errors.count().min(MAX_KEPT));
    // What the server builds its answer from (src/server/api/influx.rs).
    assert_eq!(batch.error_text().is_none(), batch.errors.is_empty());
    assert_eq!(
        batch.first_error_line(),
        batch.errors.first().map(|e| e.line_no)
    );
    assert_eq!(batch.empty_body, data.is_empty());
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    body(data, Precision::Nanoseconds, &limits);
    body(
        data,
        Precision::Seconds,
        &Limits {
            max_tags: 2,
            max_line_len: 64,
            max_name_len: 32,
        },
    );
    let _ = sniff_connection(data);
    for line in data.split(|&b| b == b'\n') {
        let _ = classify_line(line);
        if let Ok(Some(l)) = parse_line(line, Precision::Milliseconds, NOW_MS, &limits) {
            for p in l.points() {
                assert_eq!(check_point(&p, &limits), Ok(()), "{p:?}");
            }
        }
    }
});
