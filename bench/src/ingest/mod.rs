//! Ingest mode: write a deterministic workload to a server over one of the
//! protocols and report what it acknowledged and how fast, with the
//! server's memory, CPU time and data-directory bytes per point when asked;
//! or, with `--dry-run`, print the payloads instead of sending them. Also
//! the `CREATE DATABASE` some Influx peers need before the first write.

pub mod args;
pub mod plan;
pub mod report;
pub mod verify;

pub use args::IngestArgs;

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use hyper::Method;

use self::report::{IngestReport, ServerReport};
use crate::clock::now_ms;
use crate::error::BenchError;
use crate::protocol::{Protocol, encoder_for};
use crate::workload::{Generator, Workload};
use crate::{http, procfs, runner};

/// Exit status when the server refused some of an ingest.
const EXIT_SERVER_ERRORS: u8 = 3;
/// Exit status when `--verify` found a point missing or wrong.
const EXIT_VERIFY_FAILED: u8 = 4;

/// Runs the ingest mode: the plan, a dry run or the run itself, and the report.
pub fn run(rt: &tokio::runtime::Runtime, args: &IngestArgs) -> Result<ExitCode, BenchError> {
    let mut plan = plan::plan(args, now_ms()?)?;
    if let Some(ca) = &args.tls_ca {
        crate::net::use_tls(ca)?;
    }
    let workload = Arc::new(Workload::new(plan.spec.clone()));
    plan.config.distinct_series = workload.distinct_series();

    if let Some(n) = args.dry_run {
        dry_run(&workload, &plan.opts, n)?;
        return Ok(ExitCode::SUCCESS);
    }

    if args.create_db {
        rt.block_on(create_influx_db(&plan.opts, &args.db))?;
    }
    let before = args.server_pid.map(procfs::sample).transpose()?;
    let run = rt.block_on(runner::run_ingest(Arc::clone(&workload), &plan.opts))?;
    if !args.settle.is_zero() {
        std::thread::sleep(args.settle);
    }
    let mut server = ServerReport::default();
    let acked: u64 = run.connections.iter().map(|c| c.points).sum();
    if let (Some(pid), Some(before)) = (args.server_pid, before) {
        let after = procfs::sample(pid)?;
        let cpu = after.cpu_since(&before).as_secs_f64();
        server.pid = Some(pid);
        server.peak_rss_bytes = Some(after.peak_rss_bytes);
        server.rss_bytes = Some(after.rss_bytes);
        server.cpu_seconds = Some(cpu);
        server.cpu_us_per_point = (acked > 0).then(|| cpu * 1e6 / acked as f64);
    }
    if let Some(dir) = &args.data_dir {
        let bytes = procfs::dir_bytes(dir)?;
        server.data_dir = Some(dir.clone());
        server.data_dir_bytes = Some(bytes);
        server.bytes_per_point = (acked > 0).then(|| bytes as f64 / acked as f64);
    }
    let mut report = IngestReport::new(plan.config, &run, server);
    if args.verify {
        report.verification = Some(if report.points == workload.total_points() {
            rt.block_on(verify::verify(&workload, &args.addr, args.reply_timeout))
        } else {
            verify::unacknowledged(&workload, report.points)
        });
    }
    crate::report::print(&report, args.json, |r, out| r.write_human(out))?;
    if report
        .verification
        .as_ref()
        .is_some_and(|v| v.missing_points > 0)
    {
        eprintln!("hourglass-bench: points read back are missing or wrong");
        return Ok(ExitCode::from(EXIT_VERIFY_FAILED));
    }
    if report.errors > 0 {
        eprintln!(
            "hourglass-bench: the server refused part of the ingest ({} error replies)",
            report.errors
        );
        return Ok(ExitCode::from(EXIT_SERVER_ERRORS));
    }
    Ok(ExitCode::SUCCESS)
}

/// `POST /query` `CREATE DATABASE`, as Telegraf does before writing to InfluxDB 1.x.
async fn create_influx_db(opts: &runner::RunOptions, db: &str) -> Result<(), BenchError> {
    let mut client = http::HttpClient::connect(&opts.addr, opts.connect_timeout).await?;
    let body = format!(
        "q={}",
        http::encode_component(&format!("CREATE DATABASE \"{db}\""))
    );
    let response = client
        .send(
            Method::POST,
            "/query",
            &[("content-type", "application/x-www-form-urlencoded")],
            body.into(),
            1 << 20,
            opts.reply_timeout,
        )
        .await?;
    if !response.is_success() {
        return Err(BenchError::Http {
            method: "POST",
            path: "/query (CREATE DATABASE)".into(),
            status: response.status,
            hint: "",
            body: response.snippet(),
        });
    }
    Ok(())
}

/// Writes the first `limit` payloads (0 = all) of the workload, in the order a
/// single connection would send them, to stdout; binary payloads (gzip,
/// snappy) are described instead.
fn dry_run(
    workload: &Arc<Workload>,
    opts: &runner::RunOptions,
    limit: u64,
) -> Result<(), BenchError> {
    let mut encoder = encoder_for(opts.protocol, workload, opts.encode);
    let hosts = (0..workload.spec.hosts).collect();
    let mut generator =
        Generator::with_limit(Arc::clone(workload), hosts, opts.points.unwrap_or(u64::MAX));
    let binary = opts.encode.gzip || opts.protocol == Protocol::PromWrite;
    let mut remaining = if limit == 0 { u64::MAX } else { limit };
    let mut out = io::stdout().lock();
    let mut buf = Vec::with_capacity(1 << 20);
    while remaining > 0 {
        buf.clear();
        encoder.begin_batch(&mut buf);
        let n = generator.next_batch(opts.batch, |p| encoder.encode(p, &mut buf));
        if n == 0 {
            break;
        }
        encoder.end_batch(&mut buf);
        remaining -= 1;
        let written = if binary {
            writeln!(
                out,
                "<{} bytes of {} payload, {n} points>",
                buf.len(),
                opts.protocol.name()
            )
        } else {
            out.write_all(&buf).and_then(|()| {
                if buf.last() == Some(&b'\n') {
                    Ok(())
                } else {
                    out.write_all(b"\n")
                }
            })
        };
        match written {
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
