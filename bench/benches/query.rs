//! The query path of `hourglass-query` on one day of the cpu workload held
//! in memory (100 hosts, 10 s): downsampling one series, `max` per host per
//! hour, and a `sum` across every host — parsing, fetching from an in-memory
//! source (which filters and clones the series, as a storage source
//! materialises them),
//! downsampling and aggregation. Throughput is in raw points scanned.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hourglass_query::{
    FetchRequest, Num, QueryBudget, Series, SeriesSource, SeriesTag, SourceError,
    execute_with_budget, parse_query_string,
};

const HOSTS: u32 = 100;
const STEPS: usize = 8640;
const START_MS: i64 = 1_700_006_400_000;

struct Memory {
    series: Vec<Series>,
}

impl SeriesSource for Memory {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        if req.metric != "cpu.usage_user" {
            return Err(SourceError::NoSuchName {
                kind: "metrics",
                name: req.metric.to_string(),
            });
        }
        // Push filters down as a storage source does: only matching series
        // are materialised.
        Ok(self
            .series
            .iter()
            .filter(|s| {
                req.filters.iter().all(|f| {
                    s.named_tags()
                        .find(|(key, _)| **key == *f.tagk)
                        .is_some_and(|(_, value)| f.matches(&value))
                })
            })
            .cloned()
            .collect())
    }
}

fn source() -> Memory {
    let series = (0..HOSTS)
        .map(|h| {
            let uid = (h + 1).to_be_bytes()[1..].to_vec();
            Series {
                tsuid: [vec![0, 0, 1], vec![0, 0, 1], uid].concat(),
                tags: vec![SeriesTag::named(
                    Arc::from("hostname"),
                    Arc::from(format!("host_{h}").as_str()),
                    1,
                    u64::from(h + 1),
                )]
                .into(),
                points: common::walk(u64::from(h), STEPS)
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (START_MS + i as i64 * 10_000, Num::Float(v as f64 / 100.0)))
                    .collect(),
                annotations: Vec::new(),
                downsampled: false,
            }
        })
        .collect();
    Memory { series }
}

fn bench_queries(c: &mut Criterion) {
    let src = source();
    let start = (START_MS / 1000).to_string();
    let end = (START_MS / 1000 + 86_399).to_string();
    let cases = [
        (
            "downsample_1series_day_1m_avg",
            "avg:1m-avg:cpu.usage_user{hostname=host_0}",
            STEPS,
        ),
        (
            "max_per_host_per_hour_day",
            "max:1h-max:cpu.usage_user{hostname=*}",
            STEPS * HOSTS as usize,
        ),
        (
            "sum_all_hosts_day_raw",
            "sum:cpu.usage_user",
            STEPS * HOSTS as usize,
        ),
    ];
    let mut g = c.benchmark_group("query");
    g.sample_size(20);
    for (name, m, scanned) in cases {
        let params: Vec<(String, String)> = vec![
            ("start".into(), start.clone()),
            ("end".into(), end.clone()),
            ("m".into(), m.into()),
        ];
        g.throughput(Throughput::Elements(scanned as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let q = parse_query_string(black_box(&params), START_MS + 86_400_000)
                    .expect("valid query");
                let out = execute_with_budget(&q, &src, &QueryBudget::unlimited()).expect("runs");
                black_box(out)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_queries);
criterion_main!(benches);
