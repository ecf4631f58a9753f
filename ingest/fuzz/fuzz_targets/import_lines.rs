//! Fuzz target: the import lines of `/api/v1/import` — VictoriaMetrics' JSON
//! lines and OpenTSDB's import text — must never panic, and what parses must
//! round-trip: a JSON line's points written back by the export's writer read
//! back as the same points, and the quick split of a text line agrees with
//! the full parser on the timestamp and the value.
#![no_main]

use hourglass_ingest::jsonl::{split_jsonl_line, write_import_lines, write_jsonl_line};
use hourglass_ingest::{Limits, fast_import, parse_import_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    for line in data.split(|&b| b == b'\n') {
        if let Ok(split) = split_jsonl_line(line) {
            let (Ok((metric, tags)), Ok(points)) = (split.names(&limits), split.points()) else {
                continue;
            };
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (&**k, &**v)).collect();
            let points: Vec<(i64, hourglass_ingest::Value)> = points
                .iter()
                .map(|(t, v)| (t.as_millis() as i64, *v))
                .collect();
            let mut out = Vec::new();
            write_jsonl_line(&mut out, &metric, &tags, &points);
            let again = split_jsonl_line(out.strip_suffix(b"\n").unwrap_or(&out))
                .expect("an exported line splits");
            let back = again.points().expect("an exported line's points parse");
            let back: Vec<(i64, hourglass_ingest::Value)> =
                back.iter().map(|(t, v)| (t.as_millis() as i64, *v)).collect();
            assert_eq!(back, points, "JSON line round trip");
            let (metric2, _) = again.names(&limits).expect("exported names are valid");
            assert_eq!(metric2, metric);
            // The same points as import text read back the same.
            let mut text = Vec::new();
            write_import_lines(&mut text, &metric, &tags, &points);
            for (l, (t, v)) in text.split(|&b| b == b'\n').zip(&points) {
                let l = std::str::from_utf8(l).expect("utf-8");
                let p = parse_import_line(l, &limits).expect("an exported text line parses");
                assert_eq!((p.timestamp.as_millis() as i64, p.value), (*t, *v), "{l}");
            }
        }
        let full = std::str::from_utf8(line)
            .ok()
            .map(|text| parse_import_line(text.trim(), &limits));
        if let (Some(fast), Some(Ok(p))) = (fast_import(line), full) {
            assert_eq!((fast.timestamp, fast.value), (p.timestamp, p.value));
        }
    }
});
