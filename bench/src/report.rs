//! How every report prints itself: `--json` as one pretty JSON object, or
//! the human summary the report writes; and the figures they share (rates,
//! MiB).

use std::io::{self, Write};

use serde::Serialize;

use crate::error::BenchError;

/// `n / seconds`, or 0 for an empty interval.
pub fn rate(n: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { n / seconds } else { 0.0 }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Writes `value` as one pretty JSON object followed by a newline.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// Prints a report to stdout: JSON, or the human form written by `human`.
pub fn print<T: Serialize>(
    report: &T,
    json: bool,
    human: impl FnOnce(&T, &mut io::StdoutLock<'static>) -> io::Result<()>,
) -> Result<(), BenchError> {
    let mut out = io::stdout().lock();
    let written = if json {
        write_json(&mut out, report)
    } else {
        human(report, &mut out)
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| BenchError::io("writing report to stdout", e))
}
