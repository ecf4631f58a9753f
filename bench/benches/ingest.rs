//! Write-path parsers of `hourglass-ingest` on the cpu workload: the telnet
//! `put` line parser, the `/api/put` JSON decoder (with per-point
//! validation), the InfluxDB line-protocol parser and the Prometheus
//! remote-write decoder. Throughput is in points; the payload's bytes per
//! point are printed alongside.

mod common;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hourglass_ingest::influx::{Precision, parse_body};
use hourglass_ingest::prom::pb::{Label, Sample, TimeSeries, WriteRequest};
use hourglass_ingest::prom::{DEFAULT_MAX_DECODED_LEN, decode_write};
use hourglass_ingest::{Command, Limits, decode_put_body, parse_line};
use prost::Message as _;

/// 1,000 points: 10 hosts × 10 metrics × 10 steps.
fn sample() -> Vec<(u32, usize, i64, i64)> {
    common::points(10, 10)
}

fn telnet_lines(pts: &[(u32, usize, i64, i64)]) -> Vec<String> {
    pts.iter()
        .map(|&(h, m, ts, v)| {
            let tags: Vec<String> = common::host_tags(h)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "put cpu.{} {ts} {} {}",
                common::METRICS[m],
                common::two_decimals(v),
                tags.join(" ")
            )
        })
        .collect()
}

fn bench_telnet(c: &mut Criterion) {
    let lines = telnet_lines(&sample());
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    common::report_size("telnet put lines", bytes, lines.len());
    let limits = Limits::default();
    let mut g = c.benchmark_group("ingest");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("telnet_parse_line", |b| {
        b.iter(|| {
            for l in &lines {
                match parse_line(black_box(l.as_bytes()), &limits) {
                    Command::Put(Ok(p)) => {
                        black_box(p);
                    }
                    other => panic!("{other:?}"),
                }
            }
        })
    });
    g.finish();
}

fn bench_json(c: &mut Criterion) {
    let pts = sample();
    let objs: Vec<serde_json::Value> = pts
        .iter()
        .map(|&(h, m, ts, v)| {
            let tags: serde_json::Map<String, serde_json::Value> = common::host_tags(h)
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect();
            serde_json::json!({
                "metric": format!("cpu.{}", common::METRICS[m]),
                "timestamp": ts,
                "value": v as f64 / 100.0,
                "tags": tags,
            })
        })
        .collect();
    let body = serde_json::Value::Array(objs).to_string().into_bytes();
    common::report_size("/api/put JSON", body.len(), pts.len());
    let limits = Limits::default();
    let mut g = c.benchmark_group("ingest");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("api_put_decode_and_validate", |b| {
        b.iter(|| {
            let decoded = decode_put_body(black_box(&body)).expect("valid body");
            for p in &decoded {
                black_box(p.to_point(&limits).expect("valid point"));
            }
        })
    });
    g.finish();
}

fn bench_influx(c: &mut Criterion) {
    let pts = sample();
    let mut body = String::new();
    // One line per host and timestamp, ten fields, as TSBS and Telegraf write.
    for chunk in pts.chunks(10) {
        let (h, _, ts, _) = chunk[0];
        let mut tags = common::host_tags(h);
        tags.sort();
        let tags: String = tags.iter().map(|(k, v)| format!(",{k}={v}")).collect();
        let fields: Vec<String> = chunk
            .iter()
            .map(|&(_, m, _, v)| format!("{}={}", common::METRICS[m], common::two_decimals(v)))
            .collect();
        body.push_str(&format!("cpu{tags} {} {}000000000\n", fields.join(","), ts));
    }
    common::report_size("InfluxDB lines", body.len(), pts.len());
    let limits = Limits::default();
    let mut g = c.benchmark_group("ingest");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("influx_parse_body", |b| {
        b.iter(|| {
            let batch = parse_body(
                black_box(body.as_bytes()),
                Precision::Nanoseconds,
                0,
                &limits,
            );
            assert!(batch.errors.is_empty());
            black_box(batch.point_count())
        })
    });
    g.finish();
}

fn bench_prom(c: &mut Criterion) {
    // 100 series × 100 samples: the shape of a 10,000-sample request.
    let mut timeseries = Vec::new();
    for s in 0..100u32 {
        let mut labels = vec![Label {
            name: "__name__".into(),
            value: format!("cpu:{}", common::METRICS[s as usize % 10]),
        }];
        for (k, v) in common::host_tags(s / 10) {
            labels.push(Label { name: k, value: v });
        }
        labels.sort_by(|a, b| a.name.cmp(&b.name));
        let samples = common::walk(u64::from(s), 100)
            .into_iter()
            .enumerate()
            .map(|(i, v)| Sample {
                value: v as f64 / 100.0,
                timestamp: 1_700_000_000_000 + i as i64 * 10_000,
            })
            .collect();
        timeseries.push(TimeSeries {
            labels,
            samples,
            ..TimeSeries::default()
        });
    }
    let raw = WriteRequest {
        timeseries,
        metadata: Vec::new(),
    }
    .encode_to_vec();
    let body = snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("snappy");
    common::report_size("remote-write body (snappy)", body.len(), 10_000);
    let limits = Limits::default();
    let mut g = c.benchmark_group("ingest");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("prom_remote_write_decode", |b| {
        b.iter(|| {
            let w =
                decode_write(black_box(&body), DEFAULT_MAX_DECODED_LEN, &limits).expect("decodes");
            black_box(w.point_count())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_telnet, bench_json, bench_influx, bench_prom);
criterion_main!(benches);
