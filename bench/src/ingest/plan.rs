//! Turning the ingest flags into a validated [`Plan`]: the workload's spec,
//! the runner's transport options (with the HTTP request shape of each
//! protocol) and the configuration the report echoes.

use super::args::IngestArgs;
use super::report::IngestConfig;
use crate::duration::{format_ms, millis};
use crate::error::BenchError;
use crate::protocol::influx::Precision;
use crate::protocol::{EncodeOptions, Protocol};
use crate::runner::{HttpTarget, RunOptions};
use crate::workload::{Kind, TsUnit, WorkloadSpec};
use crate::workload_args::workload_spec;

/// A validated ingest run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: WorkloadSpec,
    pub opts: RunOptions,
    pub config: IngestConfig,
}

/// The HTTP request shape of `protocol`.
fn http_target(args: &IngestArgs) -> Option<HttpTarget> {
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    let mut headers = Vec::new();
    let default_path = match args.protocol {
        Protocol::Telnet | Protocol::InfluxTcp | Protocol::MixedTcp => return None,
        Protocol::HttpPut => {
            headers.push(s("content-type", "application/json"));
            "/api/put".to_string()
        }
        Protocol::InfluxHttp => {
            headers.push(s("content-type", "text/plain; charset=utf-8"));
            crate::http::with_query(
                "/write",
                &[("db", &args.db), ("precision", args.precision.param())],
            )
        }
        Protocol::InfluxV2 => {
            headers.push(s("content-type", "text/plain; charset=utf-8"));
            let mut params = vec![("bucket", args.db.as_str())];
            if let Some(org) = &args.org {
                params.push(("org", org));
            }
            params.push(("precision", args.precision.param()));
            crate::http::with_query("/api/v2/write", &params)
        }
        Protocol::PromWrite => {
            for (k, v) in crate::protocol::prom::HEADERS {
                headers.push(s(k, v));
            }
            headers.push(s("user-agent", "hourglass-bench"));
            "/api/v1/write".to_string()
        }
    };
    if args.gzip
        && matches!(
            args.protocol,
            Protocol::HttpPut | Protocol::InfluxHttp | Protocol::InfluxV2
        )
    {
        headers.push(s("content-encoding", "gzip"));
    }
    if let Some(token) = &args.token {
        // InfluxDB 2's scheme on its endpoint; a bearer token elsewhere.
        let scheme = if args.protocol == Protocol::InfluxV2 {
            "Token"
        } else {
            "Bearer"
        };
        headers.push(s("authorization", &format!("{scheme} {token}")));
    }
    Some(HttpTarget {
        path: args.path.clone().unwrap_or(default_path),
        headers,
    })
}

/// Validates the ingest flags and resolves defaults; `now_ms` is the current time.
pub fn plan(args: &IngestArgs, now_ms: i64) -> Result<Plan, BenchError> {
    let bad = |msg: String| Err(BenchError::Config(msg));
    let spec = workload_spec(&args.workload, now_ms)?;
    if args.connections == 0 {
        return bad("--connections must be at least 1".into());
    }
    let batch = args.batch.unwrap_or(args.protocol.default_batch());
    if batch == 0 {
        return bad("--batch must be at least 1".into());
    }
    if let Some(rate) = args.rate
        && !(rate > 0.0 && rate.is_finite())
    {
        return bad("--rate must be a positive number of points per second".into());
    }
    let unit = TsUnit::for_range(spec.start_ms, spec.interval_ms);
    let influx = matches!(
        args.protocol,
        Protocol::InfluxTcp | Protocol::MixedTcp | Protocol::InfluxHttp | Protocol::InfluxV2
    );
    if influx && args.precision == Precision::S && unit == TsUnit::Milliseconds {
        return bad("--precision s cannot carry millisecond timestamps; use ms or finer".into());
    }
    if args.gzip
        && !matches!(
            args.protocol,
            Protocol::HttpPut | Protocol::InfluxHttp | Protocol::InfluxV2
        )
    {
        return bad(format!("--gzip does not apply to {}", args.protocol.name()));
    }
    let max_skew_ms = match args.max_skew {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(millis(d)?),
        None if args.protocol == Protocol::PromWrite => Some(30 * 60 * 1000),
        None => None,
    };
    let connections = args.connections.min(spec.hosts);
    let opts = RunOptions {
        addr: args.addr.clone(),
        protocol: args.protocol,
        connections,
        batch,
        encode: EncodeOptions {
            gzip: args.gzip,
            precision: args.precision,
        },
        connect_timeout: args.connect_timeout,
        reply_timeout: args.reply_timeout,
        tcp_ack: args.tcp_ack,
        http: http_target(args),
        points: args.points,
        rate: args.rate,
        max_time: args.max_time,
        max_skew_ms,
        pregen: args.pregen,
        pregen_max_bytes: args.pregen_max_mb.saturating_mul(1_000_000),
        progress: !args.no_progress && !args.json,
        auth: args.token.clone(),
    };
    let series = u64::from(spec.hosts) * u64::from(spec.metrics);
    let total = spec.steps * series;
    let config = IngestConfig {
        workload: spec.kind,
        protocol: args.protocol,
        addr: args.addr.clone(),
        hosts: spec.hosts,
        metrics: spec.metrics,
        tags_per_host: spec.tags_per_host,
        series,
        distinct_series: 0,
        interval: format_ms(spec.interval_ms as u64),
        interval_ms: spec.interval_ms as u64,
        duration: format_ms(spec.steps * spec.interval_ms as u64),
        duration_ms: spec.steps * spec.interval_ms as u64,
        start: spec.start_ms.div_euclid(1000),
        start_ms: spec.start_ms,
        steps: spec.steps,
        total_points: args.points.map_or(total, |p| p.min(total)),
        timestamp_unit: unit,
        connections,
        connections_requested: args.connections,
        batch,
        gzip: args.gzip,
        precision: influx.then_some(args.precision),
        http_path: opts.http.as_ref().map(|h| h.path.clone()),
        tcp_ack: args.protocol.is_tcp().then_some(args.tcp_ack),
        rate: args.rate,
        max_time_ms: args.max_time.map(|d| d.as_millis() as u64),
        max_skew_ms,
        seed: spec.seed,
        churn: (spec.kind == Kind::HighCardinality).then_some(spec.churn),
        prefix: spec.prefix.clone(),
        connect_timeout_ms: args.connect_timeout.as_millis() as u64,
        reply_timeout_ms: args.reply_timeout.as_millis() as u64,
    };
    Ok(Plan { spec, opts, config })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(extra: &[&str]) -> IngestArgs {
        let mut argv = vec!["hourglass-bench", "ingest"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("flags parse").command {
            Command::Ingest(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn relative_start_is_aligned() {
        let p = plan(&args(&["--start", "now-1h"]), 1_700_000_003_456).expect("valid");
        assert_eq!(p.spec.start_ms, 1_699_996_400_000);
    }

    #[test]
    fn defaults_and_alignment() {
        let p = plan(&args(&[]), 1_700_000_003_456).expect("valid");
        assert_eq!(p.spec.kind, Kind::Cpu);
        assert_eq!(p.spec.steps, 360);
        assert_eq!(p.config.total_points, 100 * 10 * 360);
        assert_eq!(p.spec.start_ms % 10_000, 0);
        assert!(p.spec.start_ms <= 1_700_000_003_456 - 3_600_000);
        assert_eq!(p.opts.connections, 2);
        assert_eq!(p.opts.batch, 1000);
        assert_eq!(p.config.timestamp_unit, TsUnit::Seconds);
        assert!(p.opts.http.is_none());
        let hc = plan(
            &args(&["--workload", "high-cardinality"]),
            1_700_000_000_000,
        )
        .expect("valid");
        assert_eq!(hc.spec.hosts, 100_000);
        assert_eq!(hc.spec.steps, 12);
    }

    #[test]
    fn explicit_flags() {
        let a = args(&[
            "--workload",
            "devops",
            "--hosts",
            "3",
            "--metrics",
            "2",
            "--interval",
            "1m",
            "--duration",
            "1h",
            "--start",
            "1000",
            "--connections",
            "8",
            "--dry-run",
        ]);
        assert_eq!(a.dry_run, Some(20));
        let p = plan(&a, 0).expect("valid");
        assert_eq!(p.spec.start_ms, 1_000_000);
        assert_eq!(p.spec.steps, 60);
        assert_eq!(p.opts.connections, 3);
        assert_eq!(args(&["--dry-run", "5"]).dry_run, Some(5));
    }

    #[test]
    fn http_targets() {
        let p = plan(
            &args(&["--protocol", "influx-http", "--precision", "ms", "--gzip"]),
            1_700_000_000_000,
        )
        .expect("valid");
        let h = p.opts.http.expect("http");
        assert_eq!(h.path, "/write?db=bench&precision=ms");
        assert!(
            h.headers
                .contains(&("content-encoding".into(), "gzip".into()))
        );
        let p = plan(&args(&["--protocol", "prom-write"]), 1_700_000_000_000).expect("valid");
        assert_eq!(p.opts.batch, 50_000);
        assert_eq!(p.opts.max_skew_ms, Some(1_800_000));
        assert_eq!(p.opts.http.expect("http").path, "/api/v1/write");
        let p = plan(
            &args(&["--protocol", "influx-v2", "--org", "o", "--token", "t"]),
            1_700_000_000_000,
        )
        .expect("valid");
        let h = p.opts.http.expect("http");
        assert_eq!(h.path, "/api/v2/write?bucket=bench&org=o&precision=ns");
        assert!(
            h.headers
                .contains(&("authorization".into(), "Token t".into()))
        );
    }

    #[test]
    fn rejects_bad_flags() {
        for bad in [
            &["--hosts", "0"][..],
            &["--metrics", "0"],
            &["--metrics", "11"],
            &["--interval", "1h", "--duration", "1m"],
            &["--workload", "devops", "--tags-per-host", "10"],
            &["--batch", "0"],
            &["--start=-5"],
            &["--rate", "0"],
            &["--gzip"],
            &[
                "--protocol",
                "influx-http",
                "--precision",
                "s",
                "--interval",
                "500ms",
            ],
        ] {
            assert!(plan(&args(bad), 1_700_000_000_000).is_err(), "{bad:?}");
        }
    }
}
