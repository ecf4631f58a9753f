//! `hourglass-bench`: load generator for hourglass.
//!
//! `hourglass-bench ingest` writes a deterministic TSBS-style devops workload
//! to an OpenTSDB-compatible server and reports the sustained ingest rate.
//! The pieces are kept apart so new protocols and modes slot in:
//!
//! - [`workload`] generates points (no I/O, no wire format);
//! - [`protocol`] encodes points into bytes;
//! - [`runner`] opens connections, sends, and measures;
//! - [`report`] prints the results;
//! - [`cli`] parses and validates flags.
//!
//! Exit status: 0 on success, 1 on failure (bad flags after parsing,
//! connection or I/O errors, server not answering), 2 on usage errors
//! (from clap), 3 when the run completed but the server sent error lines.

mod cli;
mod error;
mod protocol;
mod report;
mod runner;
mod workload;

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;

use crate::cli::{Cli, Command, IngestArgs};
use crate::error::BenchError;
use crate::protocol::Encoder;
use crate::protocol::telnet::{TelnetEncoder, TelnetTemplates};
use crate::report::IngestReport;
use crate::workload::{Generator, Workload};

/// Exit status when the server reported errors for some lines.
const EXIT_SERVER_ERRORS: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Ingest(args) => ingest(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hourglass-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn ingest(args: &IngestArgs) -> Result<ExitCode, BenchError> {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| BenchError::Config(format!("system clock is before 1970: {e}")))?
        .as_millis();
    let now_ms = i64::try_from(now_ms)
        .map_err(|_| BenchError::Config("system clock is too far in the future".into()))?;
    let plan = cli::plan(args, now_ms)?;
    let workload = Arc::new(Workload::new(plan.spec));

    if let Some(n) = args.dry_run {
        dry_run(workload, n)?;
        return Ok(ExitCode::SUCCESS);
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::io("starting the tokio runtime", e))?;
    let run = runtime.block_on(runner::run_ingest(
        Arc::clone(&workload),
        args.protocol,
        &plan.opts,
    ))?;
    let report = IngestReport::new(plan.config, &run);
    report.print(args.json)?;
    if report.points != workload.total_points() {
        return Err(BenchError::Protocol(format!(
            "internal error: sent {} points, expected {}",
            report.points,
            workload.total_points()
        )));
    }
    if report.error_lines > 0 {
        eprintln!(
            "hourglass-bench: the server rejected {} line(s)",
            report.error_lines
        );
        return Ok(ExitCode::from(EXIT_SERVER_ERRORS));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the first `limit` lines (0 = all) of the workload, in the order a
/// single connection would send them, to stdout.
fn dry_run(workload: Arc<Workload>, limit: u64) -> Result<(), BenchError> {
    let templates = Arc::new(TelnetTemplates::new(&workload));
    let mut encoder = TelnetEncoder::new(templates);
    let hosts = (0..workload.spec.hosts).collect();
    let mut generator = Generator::new(workload, hosts);
    let mut remaining = if limit == 0 { u64::MAX } else { limit };
    let mut out = io::stdout().lock();
    let mut buf = Vec::with_capacity(1 << 20);
    while remaining > 0 {
        buf.clear();
        let batch = remaining.min(8192) as usize;
        let n = generator.next_batch(batch, |p| encoder.encode(p, &mut buf));
        if n == 0 {
            break;
        }
        remaining -= n as u64;
        match out.write_all(&buf) {
            Ok(()) => {}
            // `hourglass-bench ingest --dry-run 0 | head` is fine.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(BenchError::io("writing to stdout", e)),
        }
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(BenchError::io("writing to stdout", e))
        }
        _ => Ok(()),
    }
}
