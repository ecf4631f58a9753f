//! Query reports: latency percentiles per target and query, the check
//! outcome, and the side-by-side table.

use std::io::{self, Write};
use std::time::Duration;

use serde::Serialize;

use super::plan::{QueryId, Window};
use super::targets::Target;
use crate::workload::Kind;

/// The resolved configuration, echoed in the report.
#[derive(Debug, Clone, Serialize)]
pub struct QueryConfig {
    pub workload: Kind,
    pub hosts: u32,
    pub metrics: u32,
    /// First timestamp of the data, unix seconds.
    pub start: i64,
    pub interval_ms: i64,
    pub seed: u64,
    pub hour: Window,
    pub day: Window,
    pub query_host: String,
    pub repeat: u32,
    pub warmup: u32,
    pub clients: u32,
    pub targets: Vec<Target>,
}

/// Latency figures, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples` (empty: all zero).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Latency::default();
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let i = ((p / 100.0) * ms.len() as f64).ceil() as usize;
            ms[i.clamp(1, ms.len()) - 1]
        };
        Latency {
            min_ms: ms[0],
            p50_ms: rank(50.0),
            p90_ms: rank(90.0),
            p99_ms: rank(99.0),
            max_ms: ms[ms.len() - 1],
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }
}

/// One query against one target.
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub target: String,
    pub addr: String,
    pub query: QueryId,
    pub description: &'static str,
    /// Timed runs that got a response.
    pub runs: usize,
    #[serde(flatten)]
    pub latency: Latency,
    /// Every answer (warm-up included) matched the generated data.
    pub ok: bool,
    pub answers: u64,
    pub failures: u64,
    /// Answers that differ from the generated data.
    pub wrong_answers: u64,
    pub first_failure: Option<String>,
    pub values_per_answer: u64,
    /// Raw points the query covers on the server.
    pub points_scanned: u64,
    /// `points_scanned` / median latency.
    pub scan_points_per_sec: f64,
    pub reconnects: u64,
}

impl QueryResult {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        target: &Target,
        query: QueryId,
        latencies: &[Duration],
        answers: u64,
        failures: u64,
        wrong_answers: u64,
        first_failure: Option<String>,
        values_per_answer: u64,
        points_scanned: u64,
        reconnects: u64,
    ) -> Self {
        let latency = Latency::of(latencies);
        QueryResult {
            target: target.to_string(),
            addr: target.addr.clone(),
            query,
            description: query.describe(),
            runs: latencies.len(),
            latency,
            ok: failures == 0 && answers > 0,
            answers,
            failures,
            wrong_answers,
            first_failure,
            values_per_answer,
            points_scanned,
            scan_points_per_sec: crate::report::rate(
                points_scanned as f64,
                latency.p50_ms / 1000.0,
            ),
            reconnects,
        }
    }
}

/// The outcome of a query run.
#[derive(Debug, Clone, Serialize)]
pub struct QueryReport {
    pub config: QueryConfig,
    pub results: Vec<QueryResult>,
}

impl QueryReport {
    /// The side-by-side table (median latency, check mark) and the details.
    pub fn write_human(&self, out: &mut impl Write) -> io::Result<()> {
        let c = &self.config;
        writeln!(
            out,
            "hourglass-bench query: {} workload, {} hosts x {} metrics from {}; {} timed runs each after {} warm-up, {} client(s)",
            c.workload.name(),
            c.hosts,
            c.metrics,
            c.start,
            c.repeat,
            c.warmup,
            c.clients
        )?;
        let mut targets: Vec<(String, String)> = Vec::new();
        for r in &self.results {
            let key = (r.target.clone(), r.addr.clone());
            if !targets.contains(&key) {
                targets.push(key);
            }
        }
        let mut queries: Vec<QueryId> = Vec::new();
        for r in &self.results {
            if !queries.contains(&r.query) {
                queries.push(r.query);
            }
        }
        write!(out, "\n{:<14}", "median (ok?)")?;
        for (t, _) in &targets {
            write!(out, " {t:>18}")?;
        }
        writeln!(out)?;
        for q in &queries {
            write!(out, "{:<14}", q.name())?;
            for (t, a) in &targets {
                let cell = self
                    .results
                    .iter()
                    .find(|r| r.query == *q && &r.target == t && &r.addr == a)
                    .map_or("-".to_string(), |r| {
                        let verdict = if r.ok {
                            "ok"
                        } else if r.wrong_answers > 0 {
                            "WRONG"
                        } else {
                            "ERROR"
                        };
                        if r.runs == 0 {
                            verdict.to_string()
                        } else {
                            format!("{:.2} ms {verdict}", r.latency.p50_ms)
                        }
                    });
                write!(out, " {cell:>18}")?;
            }
            writeln!(out)?;
        }
        writeln!(out)?;
        for r in &self.results {
            writeln!(
                out,
                "{} {} ({}): p50 {:.3} p90 {:.3} p99 {:.3} max {:.3} ms over {} runs; {} values/answer{}",
                r.target,
                r.query.name(),
                r.description,
                r.latency.p50_ms,
                r.latency.p90_ms,
                r.latency.p99_ms,
                r.latency.max_ms,
                r.runs,
                r.values_per_answer,
                if r.query == QueryId::SumAll && r.runs > 0 {
                    format!("; {:.1} M points/s scanned", r.scan_points_per_sec / 1e6)
                } else {
                    String::new()
                }
            )?;
            if let Some(why) = &r.first_failure {
                writeln!(
                    out,
                    "  CHECK FAILED ({} of {} answers): {why}",
                    r.failures,
                    r.answers.max(r.failures)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::of(&samples);
        assert_eq!(
            (l.min_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert!((l.mean_ms - 50.5).abs() < 1e-9);
        let one = Latency::of(&[Duration::from_millis(3)]);
        assert_eq!((one.p50_ms, one.p99_ms), (3.0, 3.0));
        assert_eq!(Latency::of(&[]), Latency::default());
    }

    #[test]
    fn table_and_json() {
        let hg: Target = "hourglass=127.0.0.1:4242".parse().expect("target");
        let vm: Target = "vm=127.0.0.1:8428".parse().expect("target");
        let w = Window {
            start_ms: 0,
            end_ms: 3_600_000,
        };
        let ms = |v: u64| vec![Duration::from_micros(v); 3];
        let report = QueryReport {
            config: QueryConfig {
                workload: Kind::Cpu,
                hosts: 100,
                metrics: 10,
                start: 0,
                interval_ms: 10_000,
                seed: 1,
                hour: w,
                day: w,
                query_host: "host_0".into(),
                repeat: 3,
                warmup: 1,
                clients: 1,
                targets: vec![hg.clone(), vm.clone()],
            },
            results: vec![
                QueryResult::new(&hg, QueryId::HourAvg, &ms(910), 4, 0, 0, None, 60, 360, 0),
                QueryResult::new(&vm, QueryId::HourAvg, &ms(270), 4, 0, 0, None, 60, 360, 0),
                QueryResult::new(
                    &hg,
                    QueryId::Last,
                    &[],
                    4,
                    4,
                    0,
                    Some("HTTP 404: nope".into()),
                    0,
                    1,
                    0,
                ),
            ],
        };
        let mut human = Vec::new();
        report.write_human(&mut human).expect("human");
        let human = String::from_utf8(human).expect("utf8");
        assert!(human.contains("0.91 ms ok"), "{human}");
        assert!(human.contains("0.27 ms ok"), "{human}");
        assert!(human.contains("ERROR"), "{human}");
        assert!(
            human.contains("CHECK FAILED (4 of 4 answers): HTTP 404: nope"),
            "{human}"
        );
        let mut json = Vec::new();
        crate::report::write_json(&mut json, &report).expect("json");
        let v: serde_json::Value = serde_json::from_slice(&json).expect("valid");
        assert_eq!(v["results"][0]["query"], "hour-avg");
        assert_eq!(v["results"][0]["p50_ms"], 0.91);
        assert_eq!(v["results"][1]["target"], "victoriametrics");
        assert_eq!(v["results"][2]["ok"], false);
        assert_eq!(v["config"]["targets"][1]["kind"], "victoriametrics");
    }
}
