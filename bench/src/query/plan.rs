//! The logical queries of the query mode, their time windows over the
//! ingested cpu workload, and their expected answers.
//!
//! Windows are whole hours inside the data: the "hour" is the first whole
//! hour, the "day" the first (up to) 24 whole hours. With the reference data
//! (a start on a day boundary, 24 h) that is exactly the ingested day.

use std::collections::BTreeMap;

use super::expected::{Agg, Expected, ExpectedAnswer, aggregate, downsample, raw};
use crate::error::BenchError;
use crate::workload::{Kind, Workload};

const HOUR_MS: i64 = 3_600_000;

/// The logical queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueryId {
    /// One series over one hour, 1-minute `avg` buckets.
    HourAvg,
    /// One series over one day, 1-minute `avg` buckets.
    DayAvg,
    /// `max` per host per hour over the day, every host.
    MaxPerHost,
    /// The last point of one series.
    Last,
    /// `sum` across all hosts over the day, for every metric (every point of the day).
    SumAll,
}

impl QueryId {
    pub const ALL: [QueryId; 5] = [
        QueryId::HourAvg,
        QueryId::DayAvg,
        QueryId::MaxPerHost,
        QueryId::Last,
        QueryId::SumAll,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QueryId::HourAvg => "hour-avg",
            QueryId::DayAvg => "day-avg",
            QueryId::MaxPerHost => "max-per-host",
            QueryId::Last => "last",
            QueryId::SumAll => "sum-all",
        }
    }

    /// What the query does, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            QueryId::HourAvg => "1 series x 1 h, 1-min avg buckets",
            QueryId::DayAvg => "1 series x 1 day, 1-min avg buckets",
            QueryId::MaxPerHost => "max per host per hour over the day, all hosts",
            QueryId::Last => "last point of one series",
            QueryId::SumAll => "sum across all hosts over the day, every metric",
        }
    }
}

/// `[start_ms, end_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// Everything the targets need to build their requests.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    pub hour: Window,
    pub day: Window,
    /// The host of the single-series queries.
    pub host: u32,
    host_name: String,
    /// Metric names (OpenTSDB form).
    pub metrics: Vec<String>,
    pub interval_ms: i64,
    /// Timestamp of the last point of every series.
    pub last_ts_ms: i64,
    pub influx_db: String,
}

impl QueryPlan {
    /// Plans the queries over `workload` (which must be the cpu workload).
    pub fn new(workload: &Workload, host: u32, influx_db: &str) -> Result<Self, BenchError> {
        let spec = &workload.spec;
        if spec.kind != Kind::Cpu {
            return Err(BenchError::Config(
                "query mode runs over the cpu workload".into(),
            ));
        }
        if host >= spec.hosts {
            return Err(BenchError::Config(format!(
                "--query-host {host} is not one of the {} hosts",
                spec.hosts
            )));
        }
        if spec.interval_ms % 1000 != 0 || 60_000 % spec.interval_ms != 0 {
            return Err(BenchError::Config(
                "query mode needs an interval of whole seconds that divides a minute".into(),
            ));
        }
        let data_end = workload.ts_of(spec.steps);
        let first_hour = spec.start_ms.div_euclid(HOUR_MS) * HOUR_MS
            + if spec.start_ms % HOUR_MS == 0 {
                0
            } else {
                HOUR_MS
            };
        let last_hour = data_end.div_euclid(HOUR_MS) * HOUR_MS;
        if last_hour - first_hour < HOUR_MS {
            return Err(BenchError::Config(
                "query mode needs at least one whole hour of data (use --duration 1h or more)"
                    .into(),
            ));
        }
        let day_end = last_hour.min(first_hour + 24 * HOUR_MS);
        Ok(QueryPlan {
            hour: Window {
                start_ms: first_hour,
                end_ms: first_hour + HOUR_MS,
            },
            day: Window {
                start_ms: first_hour,
                end_ms: day_end,
            },
            host,
            host_name: workload.hosts[host as usize].tags[0].1.clone(),
            metrics: workload.metrics.iter().map(|m| m.name.clone()).collect(),
            interval_ms: spec.interval_ms,
            last_ts_ms: workload.ts_of(spec.steps - 1),
            influx_db: influx_db.to_string(),
        })
    }

    pub fn window(&self, q: QueryId) -> Window {
        match q {
            QueryId::HourAvg => self.hour,
            _ => self.day,
        }
    }

    pub fn host_name(&self) -> &str {
        &self.host_name
    }

    pub fn metric(&self, i: usize) -> &str {
        &self.metrics[i]
    }

    /// Raw points read by the query on the server (for scan-rate figures).
    pub fn points_scanned(&self, q: QueryId, hosts: u32) -> u64 {
        let steps = |w: Window| ((w.end_ms - w.start_ms) / self.interval_ms) as u64;
        match q {
            QueryId::HourAvg => steps(self.hour),
            QueryId::DayAvg => steps(self.day),
            QueryId::MaxPerHost => steps(self.day) * u64::from(hosts),
            QueryId::Last => 1,
            QueryId::SumAll => steps(self.day) * u64::from(hosts) * self.metrics.len() as u64,
        }
    }
}

/// One series of the workload as expected values.
fn series(workload: &Workload, host: u32, metric: u32) -> Vec<Expected> {
    raw(workload
        .series(host, metric)
        .map(|(ts, v)| (ts, v.as_f64())))
}

/// The expected answer of `q`, computed from the generator.
pub fn expected(workload: &Workload, plan: &QueryPlan, q: QueryId) -> ExpectedAnswer {
    let w = plan.window(q);
    match q {
        QueryId::HourAvg | QueryId::DayAvg => {
            let s = series(workload, plan.host, 0);
            let one = aggregate(
                &[downsample(&s, 60_000, Agg::Avg, w.start_ms, w.end_ms)],
                Agg::Avg,
            );
            ExpectedAnswer::Series(BTreeMap::from([(String::new(), one)]))
        }
        QueryId::MaxPerHost => ExpectedAnswer::Series(
            (0..workload.spec.hosts)
                .map(|h| {
                    let s = series(workload, h, 0);
                    let ds = downsample(&s, HOUR_MS, Agg::Max, w.start_ms, w.end_ms);
                    (workload.hosts[h as usize].tags[0].1.clone(), ds)
                })
                .collect(),
        ),
        QueryId::Last => {
            let s = series(workload, plan.host, 0);
            ExpectedAnswer::Last(s[s.len() - 1])
        }
        QueryId::SumAll => ExpectedAnswer::Series(
            (0..workload.spec.metrics)
                .map(|m| {
                    let all: Vec<Vec<Expected>> = (0..workload.spec.hosts)
                        .map(|h| {
                            series(workload, h, m)
                                .into_iter()
                                .filter(|p| p.ts >= w.start_ms && p.ts < w.end_ms)
                                .collect()
                        })
                        .collect();
                    (plan.metrics[m as usize].clone(), aggregate(&all, Agg::Sum))
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::expected::{Answer, check};
    use crate::workload::WorkloadSpec;
    use crate::workload::tests::spec;

    fn workload(start_ms: i64, steps: u64) -> Workload {
        Workload::new(WorkloadSpec {
            tags_per_host: 0,
            start_ms,
            churn: 0,
            ..spec(Kind::Cpu, 3, 10, steps, 1)
        })
    }

    #[test]
    fn windows_are_whole_hours_in_the_data() {
        let w = workload(1_699_999_990_000, 360 * 30);
        let p = QueryPlan::new(&w, 1, "bench").expect("plan");
        assert_eq!(p.hour.start_ms % HOUR_MS, 0);
        assert!(p.hour.start_ms >= w.spec.start_ms);
        assert_eq!(p.day.end_ms - p.day.start_ms, 24 * HOUR_MS);
        assert_eq!(p.host_name(), "host_1");
        assert!(QueryPlan::new(&workload(1_700_000_000_000, 100), 0, "b").is_err());
        assert!(QueryPlan::new(&w, 3, "b").is_err());
    }

    #[test]
    fn expected_shapes() {
        let w = workload(1_699_999_200_000, 360 * 3);
        let p = QueryPlan::new(&w, 0, "bench").expect("plan");
        let count = |q| match expected(&w, &p, q) {
            ExpectedAnswer::Series(s) => s.values().map(Vec::len).collect::<Vec<_>>(),
            ExpectedAnswer::Last(_) => vec![1],
        };
        assert_eq!(count(QueryId::HourAvg), [60]);
        assert_eq!(count(QueryId::DayAvg), [60 * 3]);
        assert_eq!(count(QueryId::MaxPerHost), [3, 3, 3]);
        assert_eq!(count(QueryId::SumAll), vec![360 * 3; 10]);
        let ExpectedAnswer::Last(last) = expected(&w, &p, QueryId::Last) else {
            panic!("last");
        };
        assert_eq!(last.ts, p.last_ts_ms);
    }

    /// The expected sum equals a sum of the regenerated values computed the
    /// obvious way, and the check accepts exactly that answer.
    #[test]
    fn sum_all_against_a_naive_sum() {
        let w = workload(1_699_999_200_000, 360 * 2);
        let p = QueryPlan::new(&w, 0, "bench").expect("plan");
        let mut naive: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
        for h in 0..3 {
            for m in 0..10 {
                for (ts, v) in w.series(h, m) {
                    if ts >= p.day.start_ms && ts < p.day.end_ms {
                        *naive
                            .entry(p.metrics[m as usize].clone())
                            .or_default()
                            .entry(ts)
                            .or_default() += v.as_f64();
                    }
                }
            }
        }
        let answer = Answer::Series(
            naive
                .into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect(),
        );
        assert_eq!(check(&expected(&w, &p, QueryId::SumAll), &answer), Ok(()));
    }
}
