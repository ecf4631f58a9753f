//! Soak mode: for `--duration`, steady acknowledged ingest (telnet and HTTP)
//! alongside queries (ordinary and oversized), bad input of every kind, idle
//! connections, and a storm of stalled connections during which fresh
//! clients must still get through. At the end every acknowledged point is
//! read back ([`writers::verify`]).
//!
//! Timeline: the wide series for the oversized query are written first;
//! ingest, queries and bad input run from the start to the end; idle
//! connections are opened at the start and held; the storm opens at a third
//! of the duration and is held to the end — stalled connections, and
//! slow-body attackers that declare 64 MiB bodies, trickle them and
//! reconnect whenever the server cuts them off — and probes run every
//! `--probe-every` during it. The writers' acknowledged rate before and
//! during the storm is compared: the storm may not slow them down.
//!
//! The run fails (exit 1) when an acknowledged point is missing, when a
//! probe could not connect and write during the storm, when the writers'
//! rate during the storm fell below 90 % of the rate before it, when a slow
//! body was held longer than `--slow-body-max-hold`, when the server died,
//! when its RSS passed `--max-rss-mb`, or (unless `--allow-errors`) when
//! anything got an answer it must never get (see [`hostile`]).

pub mod args;
pub mod hostile;
pub mod report;
pub mod shared;
pub mod writers;

pub use args::SoakArgs;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use self::hostile::{BadInput, Hold};
use self::report::SoakReport;
use self::shared::Shared;
use self::writers::{WriterKind, WriterResult};
use crate::error::BenchError;
use crate::workload::{Kind, Workload, WorkloadSpec, partition_hosts};

/// Runs the soak.
pub async fn run(args: &SoakArgs, now_ms: i64) -> Result<ExitCode, BenchError> {
    if args.telnet_writers + args.http_writers == 0 || args.hosts == 0 || args.batch == 0 {
        return Err(BenchError::Config(
            "the soak needs at least one writer, one host and a batch of at least 1".into(),
        ));
    }
    if !(args.rate > 0.0 && args.rate.is_finite()) {
        return Err(BenchError::Config("--rate must be positive".into()));
    }
    let writers = args.telnet_writers + args.http_writers;
    if args.hosts < writers {
        return Err(BenchError::Config(format!(
            "--hosts must be at least the {writers} writers"
        )));
    }
    // One point per series per second of data; the data ends a minute ago
    // at the latest, whatever the rate, so nothing is ever in the future.
    let series = u64::from(args.hosts) * 10;
    let steps = ((args.rate * args.duration.as_secs_f64()) as u64 / series + 2).max(2);
    let start_ms = (now_ms - 60_000 - steps as i64 * 1000).div_euclid(1000) * 1000;
    let workload = Arc::new(Workload::new(WorkloadSpec {
        kind: Kind::Cpu,
        hosts: args.hosts,
        metrics: 10,
        tags_per_host: 0,
        start_ms,
        interval_ms: 1000,
        steps,
        seed: args.seed,
        churn: 0,
        prefix: "soak.".into(),
    }));

    // Fail early and clearly when nothing listens there.
    crate::net::connect(&args.addr, args.timeout).await?;
    let wide = hostile::write_wide(&args.addr, args.timeout, args.wide_series).await;
    // The soak proper starts now.
    let shared = Arc::new(Shared::new(
        args.addr.clone(),
        Instant::now(),
        args.duration,
        args.timeout,
        args.query_timeout,
    ));
    let wide_ok = match wide {
        Ok(()) => true,
        Err(why) => {
            shared.error(format!("writing the wide series: {why}"));
            false
        }
    };
    let deadline = shared.start + args.duration;
    let storm_at = shared.start + args.duration / 3;

    // Writers: telnet ones take the first host sets, HTTP ones the rest.
    let mut writer_tasks = tokio::task::JoinSet::new();
    let per_writer_rate = args.rate / f64::from(writers);
    for (i, hosts) in partition_hosts(args.hosts, writers).into_iter().enumerate() {
        let kind = if (i as u32) < args.telnet_writers {
            WriterKind::Telnet
        } else {
            WriterKind::HttpPut
        };
        writer_tasks.spawn(writers::run_writer(
            kind,
            Arc::clone(&workload),
            hosts,
            per_writer_rate,
            args.batch,
            Arc::clone(&shared),
        ));
    }

    let mut side = tokio::task::JoinSet::new();
    // Ordinary queries.
    {
        let (shared, every) = (Arc::clone(&shared), args.query_every);
        let metric = workload.metrics[0].name.clone();
        let host = workload.hosts[0].tags[0].1.clone();
        side.spawn(async move {
            let mut client = None;
            while hostile::tick(every, deadline).await {
                hostile::normal_query(&mut client, &shared, &metric, &host).await;
            }
            Side::Done
        });
    }
    // Oversized queries.
    if wide_ok {
        let (shared, every) = (Arc::clone(&shared), args.oversized_every);
        side.spawn(async move {
            let mut client = None;
            while hostile::tick(every, deadline).await {
                hostile::oversized_query(&mut client, &shared).await;
            }
            Side::Done
        });
    }
    // Bad input, every kind in turn.
    {
        let (shared, every) = (Arc::clone(&shared), args.bad_every);
        side.spawn(async move {
            let mut kinds = BadInput::ALL.iter().cycle();
            while hostile::tick(every, deadline).await {
                if let Some(&kind) = kinds.next() {
                    hostile::send_bad(kind, &shared).await;
                }
            }
            Side::Done
        });
    }
    // Idle connections from the start; the stall storm from a third in.
    {
        let (shared, n) = (Arc::clone(&shared), args.idle);
        side.spawn(async move {
            Side::Idle(hostile::hold_connections(shared, Hold::Idle, n, deadline).await)
        });
    }
    for (hold, n) in [
        (Hold::StalledLine, args.stalled / 2),
        (Hold::StalledBody, args.stalled - args.stalled / 2),
    ] {
        let shared = Arc::clone(&shared);
        side.spawn(async move {
            tokio::time::sleep_until(storm_at.into()).await;
            Side::Stalled(hostile::hold_connections(shared, hold, n, deadline).await)
        });
    }
    // Slow-body attackers during the storm, and the acknowledged count as
    // it starts.
    {
        let (shared, n, every) = (Arc::clone(&shared), args.slow_bodies, args.trickle_every);
        side.spawn(async move {
            tokio::time::sleep_until(storm_at.into()).await;
            let acked = shared.counters.points_acked.load(Ordering::Relaxed);
            let bodies = hostile::slow_bodies(shared, n, every, deadline).await;
            Side::SlowBodies(bodies, acked)
        });
    }
    // Probes during the storm (after the stalled connections had a moment to open).
    {
        let (shared, every) = (Arc::clone(&shared), args.probe_every);
        side.spawn(async move {
            tokio::time::sleep_until((storm_at + Duration::from_millis(500)).into()).await;
            let mut probes = report::Probes::default();
            let mut n = 0;
            loop {
                n += 1;
                probes.sent += 1;
                match hostile::probe(&shared, n).await {
                    Ok(()) => probes.ok += 1,
                    Err(why) => {
                        probes.failed += 1;
                        probes.first_failure.get_or_insert(why);
                    }
                }
                if !hostile::tick(every, deadline).await {
                    break;
                }
            }
            Side::Probes(probes)
        });
    }
    // RSS sampling and the progress line.
    let rss = args.server_pid.map(|pid| {
        let shared = Arc::clone(&shared);
        let bar = crate::progress::bar(
            !args.no_progress && !args.json,
            args.duration.as_secs(),
            "s",
        );
        tokio::spawn(async move {
            let mut peak = 0u64;
            let mut alive = true;
            while Instant::now() < deadline + Duration::from_secs(1) {
                match crate::procfs::sample(pid) {
                    Ok(s) => peak = peak.max(s.rss_bytes),
                    Err(_) => {
                        alive = false;
                        break;
                    }
                }
                bar.set_position(shared.start.elapsed().as_secs());
                bar.set_message(format!(
                    "{} acked",
                    shared.counters.points_acked.load(Ordering::Relaxed)
                ));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            bar.finish_and_clear();
            (peak, alive)
        })
    });

    let mut writer_results: Vec<WriterResult> = Vec::new();
    while let Some(r) = writer_tasks.join_next().await {
        match r {
            Ok(w) => writer_results.push(w),
            Err(e) => shared.error(format!("writer task failed: {e}")),
        }
    }
    // The writers are done: everything acknowledged since the storm began
    // was acknowledged during it.
    let writers_done = Instant::now();
    let acked_total = shared.counters.points_acked.load(Ordering::Relaxed);
    let mut idle = hostile::HeldConnections::default();
    let mut storm = report::Storm::default();
    while let Some(r) = side.join_next().await {
        match r {
            Ok(Side::Idle(h)) => idle = h,
            Ok(Side::Stalled(h)) => {
                storm.stalled.opened += h.opened;
                storm.stalled.failed_to_open += h.failed_to_open;
                storm.stalled.closed_by_server += h.closed_by_server;
            }
            Ok(Side::SlowBodies(b, acked_at_storm)) => {
                storm.slow_bodies = b;
                storm.acked_before = acked_at_storm;
                storm.acked_during = acked_total.saturating_sub(acked_at_storm);
            }
            Ok(Side::Probes(p)) => storm.probes = p,
            Ok(Side::Done) => {}
            Err(e) => shared.error(format!("soak task failed: {e}")),
        }
    }
    storm.seconds_before = storm_at
        .saturating_duration_since(shared.start)
        .as_secs_f64();
    storm.seconds_during = writers_done
        .saturating_duration_since(storm_at)
        .as_secs_f64();
    let seconds = shared.start.elapsed().as_secs_f64();
    let (peak_sampled, alive) = match rss {
        Some(task) => task.await.unwrap_or((0, false)),
        None => (0, true),
    };
    let final_sample = args
        .server_pid
        .map(crate::procfs::sample)
        .transpose()
        .ok()
        .flatten();

    let verification =
        writers::verify(&workload, &writer_results, &args.addr, args.query_timeout).await;
    let report = SoakReport::new(
        args,
        seconds,
        &shared,
        &writer_results,
        idle,
        storm,
        peak_sampled,
        final_sample,
        alive,
        verification,
    );
    crate::report::print(&report, args.json, |r, out| r.write_human(out))?;
    if report.passed {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "hourglass-bench: soak FAILED: {}",
            report.failures.join("; ")
        );
        Ok(ExitCode::FAILURE)
    }
}

/// What a side task reports.
enum Side {
    Done,
    Idle(hostile::HeldConnections),
    Stalled(hostile::HeldConnections),
    /// The attackers' outcome and the points acknowledged when the storm began.
    SlowBodies(hostile::SlowBodies, u64),
    Probes(report::Probes),
}
