//! Fuzz target: telnet framing and command parsing (`next_line`, `parse_line`, the `rollup`
//! checks, error rendering) must never panic on any byte stream, and framing must respect its
//! contract.
#![no_main]

use hourglass_ingest::{
    Command, Limits, LineResult, RollupPoint, next_line, parse_line, unknown_command_line,
};
use libfuzzer_sys::fuzz_target;

fn drive(data: &[u8], limits: &Limits) {
    let mut rest = data;
    loop {
        match next_line(rest, limits.max_line_len) {
            LineResult::Line { line, consumed } => {
                assert!(consumed > line.len() && consumed <= rest.len());
                assert!(line.len() <= limits.max_line_len);
                handle(parse_line(line, limits));
                rest = &rest[consumed..];
            }
            LineResult::Incomplete => {
                handle(parse_line(rest, limits));
                break;
            }
            LineResult::TooLong => break,
        }
    }
}

fn handle(cmd: Command<'_>) {
    match cmd {
        Command::Put(Ok(p)) => {
            assert!(p.timestamp.0 > 0);
            let _ = p.timestamp.as_millis();
            let _ = p.value.encode();
        }
        Command::Put(Err(e)) => {
            let line = e.telnet_line();
            assert!(line.starts_with("put: "));
            let _ = e.http_message();
        }
        Command::Rollup(Ok((spec, p))) => {
            // The configuration-free checks never panic, and a checked
            // pre-aggregate carries its tag.
            let group_by = spec.group_by().is_some();
            let known = |name: &str| matches!(name, "sum" | "count" | "min" | "max" | "avg");
            if let Ok(r) = RollupPoint::check(p, spec, &Limits::default(), known) {
                assert!(!r.point.timestamp.is_ms());
                assert_eq!(
                    group_by,
                    r.point.tags.iter().any(|(k, _)| k == "_aggregate")
                );
            }
        }
        Command::Rollup(Err(e)) => {
            assert!(e.line_of("rollup").starts_with("rollup: "));
        }
        Command::Unknown(w) => {
            let _ = unknown_command_line(&w);
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    drive(data, &Limits::default());
    drive(
        data,
        &Limits {
            max_tags: 2,
            max_line_len: 64,
            max_name_len: 32,
        },
    );
    // Also as one line, so long lines reach the put parser.
    handle(parse_line(data, &Limits::default()));
});
