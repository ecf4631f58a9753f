//! Query mode: after an ingest of the cpu workload, time the reference
//! queries ([`plan::QueryId`]) against one or more servers and check every
//! answer against the generated data ([`expected`]).
//!
//! Each query runs `--warmup` untimed times, then `--repeat` timed times,
//! spread over `--clients` clients that each hold one keep-alive HTTP
//! connection (the peers were measured that way). A latency runs from the
//! first byte of the request to the last byte of the response; parsing and
//! checking happen after the clock stops. Every answer, warm-up included, is
//! checked.

pub mod expected;
pub mod plan;
pub mod report;
pub mod targets;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::Method;

use self::expected::ExpectedAnswer;
use self::plan::{QueryId, QueryPlan};
use self::report::{QueryConfig, QueryReport, QueryResult};
use self::targets::Target;
use crate::duration::parse_duration;
use crate::error::BenchError;
use crate::http::HttpClient;
use crate::workload::Workload;
use crate::workload_args::{WorkloadArgs, workload_spec};

/// Flags of `hourglass-bench query`.
#[derive(Debug, Clone, clap::Args)]
pub struct QueryArgs {
    /// The workload that was ingested (the same flags, `--start` included).
    #[command(flatten)]
    pub workload: WorkloadArgs,

    /// A server to query, `KIND[/NAMES]=HOST:PORT`; repeat for a side-by-side
    /// table. KIND: hourglass (or opentsdb), victoriametrics (vm), prometheus,
    /// influxdb. NAMES: dot, colon, underscore (how metric names look there).
    #[arg(long = "target", default_value = "hourglass=127.0.0.1:4242")]
    pub targets: Vec<Target>,

    /// Queries to run (comma-separated) [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub queries: Vec<QueryId>,

    /// Timed runs of each query.
    #[arg(long, default_value_t = 20)]
    pub repeat: u32,

    /// Untimed runs of each query first (warm caches).
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,

    /// Concurrent query clients, each with one keep-alive connection.
    #[arg(long, default_value_t = 1)]
    pub clients: u32,

    /// Host of the single-series queries.
    #[arg(long, default_value_t = 0)]
    pub query_host: u32,

    /// InfluxDB database to query.
    #[arg(long, default_value = "bench")]
    pub influx_db: String,

    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Per request.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Largest response accepted, MB.
    #[arg(long, default_value_t = 256)]
    pub max_response_mb: usize,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Runs the query mode.
pub async fn run(args: &QueryArgs, now_ms: i64) -> Result<ExitCode, BenchError> {
    if args.workload.start.is_none() {
        return Err(BenchError::Config(
            "pass the --start the data was ingested with (the ingest report shows it)".into(),
        ));
    }
    if args.repeat == 0 || args.clients == 0 {
        return Err(BenchError::Config(
            "--repeat and --clients must be at least 1".into(),
        ));
    }
    let spec = workload_spec(&args.workload, now_ms)?;
    let workload = Workload::new(spec);
    let plan = Arc::new(QueryPlan::new(&workload, args.query_host, &args.influx_db)?);
    let queries: Vec<QueryId> = if args.queries.is_empty() {
        QueryId::ALL.to_vec()
    } else {
        args.queries.clone()
    };
    let expected: Vec<(QueryId, Arc<ExpectedAnswer>)> = queries
        .iter()
        .map(|&q| (q, Arc::new(plan::expected(&workload, &plan, q))))
        .collect();

    let total =
        args.targets.len() as u64 * queries.len() as u64 * u64::from(args.repeat + args.warmup);
    let bar = crate::progress::bar(!args.no_progress && !args.json, total, "queries");
    let mut results = Vec::new();
    for target in &args.targets {
        for (q, want) in &expected {
            let r = run_one(args, target, *q, &plan, want, &bar).await;
            results.push(r.into_result(target, *q, &plan, workload.spec.hosts));
        }
    }
    bar.finish_and_clear();
    let report = QueryReport {
        config: QueryConfig {
            workload: workload.spec.kind,
            hosts: workload.spec.hosts,
            metrics: workload.spec.metrics,
            start: workload.spec.start_ms / 1000,
            interval_ms: workload.spec.interval_ms,
            seed: workload.spec.seed,
            hour: plan.hour,
            day: plan.day,
            query_host: plan.host_name().to_string(),
            repeat: args.repeat,
            warmup: args.warmup,
            clients: args.clients,
            targets: args.targets.clone(),
        },
        results,
    };
    crate::report::print(&report, args.json, |r, out| r.write_human(out))?;
    let failed = report.results.iter().filter(|r| !r.ok).count();
    if failed > 0 {
        eprintln!("hourglass-bench: {failed} query result(s) failed their check");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What the runs of one query against one target gave.
#[derive(Debug, Default)]
struct Runs {
    latencies: Vec<Duration>,
    answers: u64,
    failures: u64,
    /// Failures that were wrong answers (the others: errors, no answer).
    wrong: u64,
    first_failure: Option<String>,
    values_per_answer: u64,
    reconnects: u64,
}

impl Runs {
    fn fail(&mut self, why: String) {
        self.failures += 1;
        self.first_failure.get_or_insert(why);
    }

    fn merge(&mut self, other: Runs) {
        self.latencies.extend(other.latencies);
        self.answers += other.answers;
        self.failures += other.failures;
        self.wrong += other.wrong;
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure;
        }
        self.values_per_answer = self.values_per_answer.max(other.values_per_answer);
        self.reconnects += other.reconnects;
    }

    fn into_result(self, target: &Target, q: QueryId, plan: &QueryPlan, hosts: u32) -> QueryResult {
        QueryResult::new(
            target,
            q,
            &self.latencies,
            self.answers,
            self.failures,
            self.wrong,
            self.first_failure,
            self.values_per_answer,
            plan.points_scanned(q, hosts),
            self.reconnects,
        )
    }
}

async fn run_one(
    args: &QueryArgs,
    target: &Target,
    q: QueryId,
    plan: &Arc<QueryPlan>,
    want: &Arc<ExpectedAnswer>,
    bar: &indicatif::ProgressBar,
) -> Runs {
    let path = target.request(q, plan);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..args.clients {
        // Timed runs split over the clients; each client warms up on its own.
        let timed = args.repeat / args.clients + u32::from(c < args.repeat % args.clients);
        let (target, plan, want, path, bar) = (
            target.clone(),
            Arc::clone(plan),
            Arc::clone(want),
            path.clone(),
            bar.clone(),
        );
        let (warmup, connect_timeout, timeout) =
            (args.warmup, args.connect_timeout, args.request_timeout);
        let max_body = args.max_response_mb.saturating_mul(1 << 20);
        tasks.spawn(async move {
            let mut runs = Runs::default();
            let mut client = match HttpClient::connect(&target.addr, connect_timeout).await {
                Ok(c) => c,
                Err(e) => {
                    runs.fail(e.to_string());
                    bar.inc(u64::from(warmup + timed));
                    return runs;
                }
            };
            for i in 0..warmup + timed {
                let t = Instant::now();
                let sent = client
                    .send(
                        Method::GET,
                        &path,
                        &[],
                        bytes::Bytes::new(),
                        max_body,
                        timeout,
                    )
                    .await;
                let took = t.elapsed();
                bar.inc(1);
                let response = match sent {
                    Ok(r) => r,
                    Err(e) => {
                        runs.fail(e.to_string());
                        continue;
                    }
                };
                if i >= warmup {
                    runs.latencies.push(took);
                }
                runs.answers += 1;
                if !response.is_success() {
                    runs.fail(format!("HTTP {}: {}", response.status, response.snippet()));
                    continue;
                }
                match target.parse(q, &plan, &response.body) {
                    Ok(answer) => {
                        runs.values_per_answer = answer.values();
                        if let Err(why) = expected::check(&want, &answer) {
                            runs.wrong += 1;
                            runs.fail(why);
                        }
                    }
                    Err(why) => runs.fail(format!("unreadable answer: {why}")),
                }
            }
            runs.reconnects = client.reconnects;
            runs
        });
    }
    let mut all = Runs::default();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(runs) => all.merge(runs),
            Err(e) => all.fail(format!("query client failed: {e}")),
        }
    }
    all
}
