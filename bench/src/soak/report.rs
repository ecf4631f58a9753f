//! The soak report: what was sent, what the server refused (by status), the
//! errors, the held connections, the storm (slow bodies, probes, the
//! writers' rate before and during it), the server's memory, the read-back
//! of every acknowledged point, and the verdict with each failure named.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::Ordering;

use serde::Serialize;

use super::args::SoakArgs;
use super::hostile::{HeldConnections, SlowBodies};
use super::shared::Shared;
use super::writers::{Verification, WriterKind, WriterResult};
use crate::procfs::ProcSample;
use crate::report::mib;

/// The storm (from a third of the duration to the end): stalled
/// connections, slow-body attackers, fresh-client probes, and what the
/// writers got acknowledged before and during it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Storm {
    pub stalled: HeldConnections,
    pub slow_bodies: SlowBodies,
    pub probes: Probes,
    pub acked_before: u64,
    pub seconds_before: f64,
    pub acked_during: u64,
    pub seconds_during: f64,
}

impl Storm {
    pub fn points_per_sec_before(&self) -> f64 {
        crate::report::rate(self.acked_before as f64, self.seconds_before)
    }

    pub fn points_per_sec_during(&self) -> f64 {
        crate::report::rate(self.acked_during as f64, self.seconds_during)
    }
}

/// Fresh clients during the stall storm.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Probes {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    pub first_failure: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IngestFigures {
    pub points_acked: u64,
    pub telnet_points_acked: u64,
    pub http_points_acked: u64,
    pub points_per_sec: f64,
    /// Batches sent again after a refusal or failure.
    pub retries: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueryFigures {
    pub sent: u64,
    pub ok: u64,
    pub oversized_sent: u64,
    pub oversized_answered: u64,
    pub oversized_refused: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BadInputFigures {
    pub sent: u64,
    pub refused: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerFigures {
    pub pid: Option<u32>,
    /// Highest VmRSS seen while sampling every 200 ms.
    pub peak_rss_sampled_bytes: Option<u64>,
    /// VmHWM at the end (peak since the server started).
    pub peak_rss_bytes: Option<u64>,
    pub rss_end_bytes: Option<u64>,
    pub alive_at_end: bool,
}

/// The outcome of a soak.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub addr: String,
    pub duration_ms: u64,
    pub seconds: f64,
    pub rate: f64,
    pub ingest: IngestFigures,
    pub queries: QueryFigures,
    pub bad_input: BadInputFigures,
    /// HTTP status → refusals (ingest, bad input, queries).
    pub refused_by_status: BTreeMap<u16, u64>,
    /// `what status` → refusals.
    pub refused_detail: BTreeMap<String, u64>,
    /// Answers that must never happen (5xx, timeouts, accepted bad input, ...).
    pub errors: u64,
    pub first_errors: Vec<String>,
    pub idle_connections: HeldConnections,
    pub storm: Storm,
    /// Ingest rates before and during the storm, points per second.
    pub points_per_sec_before_storm: f64,
    pub points_per_sec_during_storm: f64,
    /// Every probe during the storm connected and wrote.
    pub fresh_client_got_through: bool,
    pub server: ServerFigures,
    pub verification: Verification,
    pub passed: bool,
    pub failures: Vec<String>,
}

impl SoakReport {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        args: &SoakArgs,
        seconds: f64,
        shared: &Shared,
        writers: &[WriterResult],
        idle: HeldConnections,
        storm: Storm,
        peak_sampled: u64,
        final_sample: Option<ProcSample>,
        alive: bool,
        verification: Verification,
    ) -> Self {
        let c = &shared.counters;
        let acked = |k: WriterKind| {
            writers
                .iter()
                .filter(|w| w.kind == k)
                .map(|w| w.acked)
                .sum()
        };
        let points_acked: u64 = writers.iter().map(|w| w.acked).sum();
        let server = ServerFigures {
            pid: args.server_pid,
            peak_rss_sampled_bytes: args.server_pid.map(|_| peak_sampled),
            peak_rss_bytes: final_sample.map(|s| s.peak_rss_bytes),
            rss_end_bytes: final_sample.map(|s| s.rss_bytes),
            alive_at_end: alive && (args.server_pid.is_none() || final_sample.is_some()),
        };
        let errors = c.errors.load(Ordering::Relaxed);
        let probes = &storm.probes;
        let fresh_client_got_through = probes.sent > 0 && probes.failed == 0;
        let (before, during) = (storm.points_per_sec_before(), storm.points_per_sec_during());
        let mut failures = Vec::new();
        // Writers run at a fixed rate: the storm may not slow them down.
        if storm.seconds_before >= 1.0 && before > 0.0 && during < 0.9 * before {
            failures.push(format!(
                "the writers slowed down during the storm: {before:.0} points/s before, {during:.0} during"
            ));
        }
        if let Some(max) = args.slow_body_max_hold
            && storm.slow_bodies.longest_held_ms > max.as_millis() as u64
        {
            failures.push(format!(
                "a slow body held its connection for {:.1} s (--slow-body-max-hold {:.0} s)",
                storm.slow_bodies.longest_held_ms as f64 / 1000.0,
                max.as_secs_f64()
            ));
        }
        if verification.missing_points > 0 {
            failures.push(format!(
                "{} acknowledged point(s) missing",
                verification.missing_points
            ));
        }
        if !fresh_client_got_through {
            failures.push(format!(
                "a fresh client could not connect and write during the stall storm ({} of {} probes failed)",
                probes.failed, probes.sent
            ));
        }
        if !server.alive_at_end {
            failures.push("the server is gone".into());
        }
        if let (Some(max), Some(peak)) = (
            args.max_rss_mb,
            server.peak_rss_bytes.or(server.peak_rss_sampled_bytes),
        ) && peak > max << 20
        {
            failures.push(format!("peak RSS {} above --max-rss-mb {max}", mib(peak)));
        }
        if errors > 0 && !args.allow_errors {
            failures.push(format!("{errors} error(s)"));
        }
        if points_acked == 0 {
            failures.push("no point was acknowledged".into());
        }
        SoakReport {
            addr: args.addr.clone(),
            duration_ms: args.duration.as_millis() as u64,
            seconds,
            rate: args.rate,
            ingest: IngestFigures {
                points_acked,
                telnet_points_acked: acked(WriterKind::Telnet),
                http_points_acked: acked(WriterKind::HttpPut),
                points_per_sec: crate::report::rate(points_acked as f64, seconds),
                retries: writers.iter().map(|w| w.retries).sum(),
            },
            queries: QueryFigures {
                sent: c.queries_sent.load(Ordering::Relaxed),
                ok: c.queries_ok.load(Ordering::Relaxed),
                oversized_sent: c.oversized_sent.load(Ordering::Relaxed),
                oversized_answered: c.oversized_answered.load(Ordering::Relaxed),
                oversized_refused: c.oversized_refused.load(Ordering::Relaxed),
            },
            bad_input: BadInputFigures {
                sent: c.bad_sent.load(Ordering::Relaxed),
                refused: c.bad_refused.load(Ordering::Relaxed),
            },
            refused_by_status: shared.refused_by_status(),
            refused_detail: shared.refused_detail(),
            errors,
            first_errors: shared.first_errors(),
            idle_connections: idle,
            points_per_sec_before_storm: before,
            points_per_sec_during_storm: during,
            fresh_client_got_through,
            storm,
            server,
            verification,
            passed: failures.is_empty(),
            failures,
        }
    }

    pub fn write_human(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "hourglass-bench soak: {} for {:.1} s — {}",
            self.addr,
            self.seconds,
            if self.passed { "PASSED" } else { "FAILED" }
        )?;
        let i = &self.ingest;
        writeln!(
            out,
            "  ingest        {} points acked ({} telnet, {} HTTP), {:.0} points/s, {} retries",
            i.points_acked, i.telnet_points_acked, i.http_points_acked, i.points_per_sec, i.retries
        )?;
        let q = &self.queries;
        writeln!(
            out,
            "  queries       {} ok of {}; oversized: {} sent, {} answered, {} refused",
            q.ok, q.sent, q.oversized_sent, q.oversized_answered, q.oversized_refused
        )?;
        writeln!(
            out,
            "  bad input     {} sent, {} refused",
            self.bad_input.sent, self.bad_input.refused
        )?;
        let statuses: Vec<String> = self
            .refused_by_status
            .iter()
            .map(|(s, n)| format!("{s} x{n}"))
            .collect();
        writeln!(
            out,
            "  refused       {}",
            if statuses.is_empty() {
                "none".into()
            } else {
                statuses.join(", ")
            }
        )?;
        writeln!(out, "  errors        {}", self.errors)?;
        for e in &self.first_errors {
            writeln!(out, "    {e}")?;
        }
        for (name, h) in [
            ("idle", &self.idle_connections),
            ("stalled", &self.storm.stalled),
        ] {
            writeln!(
                out,
                "  {name:<13} {} opened ({} failed to open), {} closed by the server",
                h.opened, h.failed_to_open, h.closed_by_server
            )?;
        }
        let b = &self.storm.slow_bodies;
        writeln!(
            out,
            "  slow bodies   {} connections ({} failed to open), {} cut by the server ({} with 408), longest held {:.1} s",
            b.connections,
            b.failed_to_open,
            b.cut_by_server,
            b.answered_408,
            b.longest_held_ms as f64 / 1000.0
        )?;
        writeln!(
            out,
            "  storm ingest  {:.0} points/s before, {:.0} during",
            self.points_per_sec_before_storm, self.points_per_sec_during_storm
        )?;
        let p = &self.storm.probes;
        writeln!(
            out,
            "  fresh client  {} of {} probes got through during the storm{}",
            p.ok,
            p.sent,
            p.first_failure
                .as_ref()
                .map_or(String::new(), |f| format!(" (first failure: {f})"))
        )?;
        let s = &self.server;
        if s.pid.is_some() {
            writeln!(
                out,
                "  server RSS    peak {} (sampled peak {}, end {}){}",
                s.peak_rss_bytes.map_or("-".into(), mib),
                s.peak_rss_sampled_bytes.map_or("-".into(), mib),
                s.rss_end_bytes.map_or("-".into(), mib),
                if s.alive_at_end { "" } else { "; SERVER GONE" }
            )?;
        }
        let v = &self.verification;
        writeln!(
            out,
            "  read back     {} of {} acknowledged points; missing {}",
            v.found_points, v.acked_points, v.missing_points
        )?;
        for m in &v.first_missing {
            writeln!(out, "    {m}")?;
        }
        for f in &self.failures {
            writeln!(out, "  FAILURE       {f}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use std::time::Instant;

    fn args(extra: &[&str]) -> SoakArgs {
        let mut argv = vec!["b", "soak"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("flags").command {
            Command::Soak(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn shared() -> Shared {
        Shared::new(
            "127.0.0.1:1".into(),
            Instant::now(),
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(1),
        )
    }

    fn writers() -> Vec<WriterResult> {
        vec![
            WriterResult {
                kind: WriterKind::Telnet,
                hosts: vec![0],
                acked: 600,
                retries: 0,
            },
            WriterResult {
                kind: WriterKind::HttpPut,
                hosts: vec![1],
                acked: 400,
                retries: 2,
            },
        ]
    }

    fn verification(missing: u64) -> Verification {
        Verification {
            acked_points: 1000,
            found_points: 1000 - missing,
            missing_points: missing,
            query_failures: 0,
            first_missing: if missing > 0 {
                vec![
                    "soak.cpu.usage_user{hostname=host_0} at 1000 ms: expected 1, found None"
                        .into(),
                ]
            } else {
                Vec::new()
            },
        }
    }

    fn probes(failed: u64) -> Probes {
        Probes {
            sent: 5,
            ok: 5 - failed,
            failed,
            first_failure: (failed > 0).then(|| "telnet: no answer within 1s".into()),
        }
    }

    /// A storm the writers went through at 100 points/s.
    fn storm() -> Storm {
        Storm {
            probes: probes(0),
            acked_before: 500,
            seconds_before: 5.0,
            acked_during: 500,
            seconds_during: 5.0,
            ..Storm::default()
        }
    }

    fn sample(peak_mib: u64) -> Option<ProcSample> {
        Some(ProcSample {
            rss_bytes: 10 << 20,
            peak_rss_bytes: peak_mib << 20,
            cpu_ticks: 0,
        })
    }

    #[test]
    fn a_clean_soak_passes_and_reports_everything() {
        let s = shared();
        s.refused("bad-json", 400, "");
        s.refused("oversized query", 413, "");
        let a = args(&["--server-pid", "1", "--max-rss-mb", "100"]);
        let r = SoakReport::new(
            &a,
            10.0,
            &s,
            &writers(),
            HeldConnections::default(),
            Storm {
                stalled: HeldConnections {
                    opened: 200,
                    failed_to_open: 0,
                    closed_by_server: 200,
                },
                probes: probes(0),
                ..storm()
            },
            50 << 20,
            sample(60),
            true,
            verification(0),
        );
        assert!(r.passed, "{:?}", r.failures);
        assert_eq!(r.ingest.points_acked, 1000);
        assert_eq!(r.ingest.telnet_points_acked, 600);
        assert_eq!(r.refused_by_status, BTreeMap::from([(400, 1), (413, 1)]));
        let mut human = Vec::new();
        r.write_human(&mut human).expect("human");
        let human = String::from_utf8(human).expect("utf8");
        assert!(human.contains("PASSED"), "{human}");
        assert!(human.contains("refused       400 x1, 413 x1"), "{human}");
        assert!(
            human.contains("200 opened (0 failed to open), 200 closed by the server"),
            "{human}"
        );
        assert!(
            human.contains("read back     1000 of 1000 acknowledged points; missing 0"),
            "{human}"
        );
        let mut json = Vec::new();
        crate::report::write_json(&mut json, &r).expect("json");
        let v: serde_json::Value = serde_json::from_slice(&json).expect("valid");
        assert_eq!(v["verification"]["missing_points"], 0);
        assert_eq!(v["fresh_client_got_through"], true);
        assert_eq!(v["server"]["peak_rss_bytes"], 60 << 20);
    }

    #[test]
    fn each_failure_is_named() {
        let s = shared();
        s.error("query: HTTP 500 boom".into());
        let a = args(&[
            "--server-pid",
            "1",
            "--max-rss-mb",
            "100",
            "--slow-body-max-hold",
            "60s",
        ]);
        let r = SoakReport::new(
            &a,
            10.0,
            &s,
            &writers(),
            HeldConnections::default(),
            Storm {
                probes: probes(2),
                acked_during: 100,
                slow_bodies: SlowBodies {
                    longest_held_ms: 90_000,
                    ..SlowBodies::default()
                },
                ..storm()
            },
            50 << 20,
            sample(150),
            true,
            verification(3),
        );
        assert!(!r.passed);
        let all = r.failures.join("; ");
        assert!(all.contains("3 acknowledged point(s) missing"), "{all}");
        assert!(
            all.contains("could not connect and write during the stall storm (2 of 5"),
            "{all}"
        );
        assert!(all.contains("above --max-rss-mb 100"), "{all}");
        assert!(all.contains("1 error(s)"), "{all}");
        assert!(
            all.contains(
                "the writers slowed down during the storm: 100 points/s before, 20 during"
            ),
            "{all}"
        );
        assert!(
            all.contains("a slow body held its connection for 90.0 s (--slow-body-max-hold 60 s)"),
            "{all}"
        );
        let allowed = SoakReport::new(
            &args(&["--allow-errors"]),
            10.0,
            &s,
            &writers(),
            HeldConnections::default(),
            storm(),
            0,
            None,
            true,
            verification(0),
        );
        assert!(allowed.passed, "{:?}", allowed.failures);
        assert_eq!(allowed.errors, 1);
        let gone = SoakReport::new(
            &args(&["--server-pid", "1"]),
            10.0,
            &shared(),
            &writers(),
            HeldConnections::default(),
            storm(),
            0,
            None,
            false,
            verification(0),
        );
        assert!(
            gone.failures
                .iter()
                .any(|f| f.contains("the server is gone"))
        );
    }
}
