//! `series` mode: creates many new series through `/api/put`, one batch at a
//! time, and reports how the cost of a batch of new series changes as the
//! series count grows. Every point of a batch starts a series the server has
//! never seen (a fresh `pod` tag value, hosts cycling through `--hosts`), so
//! each batch exercises the whole new-series path: tag value UID
//! assignment, the series registry and the log writes.
//!
//! The run fails (exit 1) if the median of the last `--window` batches is
//! more than `--max-slowdown` times the median of the first ones (the first
//! batch is left out: it also creates the metric and tag keys and warms the
//! caches).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use serde::Serialize;

use crate::duration::parse_duration;
use crate::error::BenchError;
use crate::http::HttpClient;
use crate::procfs;

/// Flags of `hourglass-bench series`.
#[derive(Debug, Clone, clap::Args)]
pub struct SeriesArgs {
    /// Server address (host:port).
    #[arg(long, default_value = "127.0.0.1:4242")]
    pub addr: String,

    /// New series to create in total.
    #[arg(long, default_value_t = 1_000_000)]
    pub series: u64,

    /// New series (points) per `/api/put` request.
    #[arg(long, default_value_t = 10_000)]
    pub batch: u64,

    /// Metric the series belong to.
    #[arg(long, default_value = "bench.series")]
    pub metric: String,

    /// Number of the first series (its `pod` tag value); runs with different
    /// values create disjoint series.
    #[arg(long, default_value_t = 0)]
    pub first: u64,

    /// Distinct `host` tag values the series cycle through.
    #[arg(long, default_value_t = 1000)]
    pub hosts: u64,

    /// Timestamp (unix seconds) of every point.
    #[arg(long, default_value_t = 1_700_006_400)]
    pub timestamp: u64,

    /// Batches at each end compared (medians).
    #[arg(long, default_value_t = 5)]
    pub window: usize,

    /// Fail if the last batches are this many times slower than the first.
    #[arg(long, default_value_t = 2.0)]
    pub max_slowdown: f64,

    /// Time allowed for one batch.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Server process, for its peak memory.
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a `series` run measured.
#[derive(Debug, Serialize)]
pub struct SeriesReport {
    pub series: u64,
    pub batch: u64,
    pub seconds: f64,
    /// Series created per second over the whole run.
    pub series_per_sec: f64,
    /// Seconds each batch took, in order.
    pub batch_seconds: Vec<f64>,
    /// Series per second of the median first batches (after the first).
    pub start_series_per_sec: f64,
    /// Series per second of the median last batches.
    pub end_series_per_sec: f64,
    /// How many times slower the end is than the start.
    pub slowdown: f64,
    pub server_peak_rss_bytes: Option<u64>,
    pub server_rss_bytes: Option<u64>,
    pub passed: bool,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The JSON body of batch `b`: `batch` points, each a new series.
fn body(args: &SeriesArgs, b: u64) -> String {
    let mut out = String::with_capacity(args.batch as usize * 96);
    out.push('[');
    for i in 0..args.batch {
        let n = args.first + b * args.batch + i;
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"metric":"{}","timestamp":{},"value":{},"tags":{{"host":"h{}","pod":"p{n}"}}}}"#,
            args.metric,
            args.timestamp,
            n % 1000,
            n % args.hosts.max(1),
        );
    }
    out.push(']');
    out
}

/// Runs the mode.
pub async fn run(args: &SeriesArgs) -> Result<ExitCode, BenchError> {
    if args.batch == 0 || args.series < args.batch {
        return Err(BenchError::Config(
            "--batch must be at least 1 and at most --series".into(),
        ));
    }
    let batches = args.series / args.batch;
    if batches < 2 * args.window as u64 + 1 {
        return Err(BenchError::Config(format!(
            "{batches} batches are too few to compare {} at each end; raise --series or lower --batch/--window",
            args.window
        )));
    }
    let mut client = HttpClient::connect(&args.addr, Duration::from_secs(10)).await?;
    let mut batch_seconds = Vec::with_capacity(batches as usize);
    let started = Instant::now();
    for b in 0..batches {
        // Built before the clock starts: only the server's time is measured.
        let payload = Bytes::from(body(args, b));
        let t = Instant::now();
        let r = client
            .send(
                Method::POST,
                "/api/put",
                &[("content-type", "application/json")],
                payload,
                1 << 20,
                args.timeout,
            )
            .await?;
        let took = t.elapsed().as_secs_f64();
        if !r.is_success() {
            return Err(BenchError::Http {
                method: "POST",
                path: "/api/put".into(),
                status: r.status,
                hint: "",
                body: r.snippet(),
            });
        }
        batch_seconds.push(took);
        if !args.json && (b + 1) % (batches / 10).max(1) == 0 {
            eprintln!(
                "  {:>9} series: this batch {:.1} ms ({:.0} series/s)",
                (b + 1) * args.batch,
                took * 1e3,
                args.batch as f64 / took
            );
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let w = args.window;
    let n = batch_seconds.len();
    let start = median(&batch_seconds[1..=w]);
    let end = median(&batch_seconds[n - w..]);
    let slowdown = end / start;
    let server = args.server_pid.map(procfs::sample).transpose()?;
    let report = SeriesReport {
        series: batches * args.batch,
        batch: args.batch,
        seconds,
        series_per_sec: (batches * args.batch) as f64 / seconds,
        start_series_per_sec: args.batch as f64 / start,
        end_series_per_sec: args.batch as f64 / end,
        slowdown,
        server_peak_rss_bytes: server.map(|s| s.peak_rss_bytes),
        server_rss_bytes: server.map(|s| s.rss_bytes),
        passed: slowdown <= args.max_slowdown,
        batch_seconds,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| BenchError::Config(format!("serialising the report: {e}")))?;
        println!("{text}");
    } else {
        println!(
            "hourglass-bench series: {} new series in {:.1} s ({:.0} series/s) — {}",
            report.series,
            report.seconds,
            report.series_per_sec,
            if report.passed { "PASSED" } else { "FAILED" }
        );
        println!(
            "  batches of {}: start {:.0} series/s (median of batches 2..={}), end {:.0} series/s (median of the last {w}); end/start time {:.2}x (limit {:.1}x)",
            args.batch,
            report.start_series_per_sec,
            w + 1,
            report.end_series_per_sec,
            slowdown,
            args.max_slowdown
        );
        if let Some(s) = server {
            println!(
                "  server RSS {:.1} MiB (peak {:.1} MiB)",
                s.rss_bytes as f64 / 1048576.0,
                s.peak_rss_bytes as f64 / 1048576.0
            );
        }
    }
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn every_point_of_every_batch_is_a_new_series() {
        let args = SeriesArgs {
            addr: String::new(),
            series: 6,
            batch: 3,
            metric: "m".into(),
            first: 0,
            hosts: 2,
            timestamp: 1,
            window: 1,
            max_slowdown: 2.0,
            timeout: Duration::from_secs(1),
            server_pid: None,
            json: false,
        };
        let a: serde_json::Value = serde_json::from_str(&body(&args, 0)).expect("json");
        let b: serde_json::Value = serde_json::from_str(&body(&args, 1)).expect("json");
        let pods: std::collections::BTreeSet<String> = a
            .as_array()
            .into_iter()
            .chain(b.as_array())
            .flatten()
            .map(|p| p["tags"]["pod"].as_str().expect("pod").to_owned())
            .collect();
        assert_eq!(pods.len(), 6);
        assert_eq!(a[1]["tags"]["host"], "h1");
    }
}
