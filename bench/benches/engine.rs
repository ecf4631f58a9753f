//! Storage-engine building blocks of `hourglass` on the cpu workload: series
//! key building and the head's series registry lookup (UID-free: keys are
//! built from fixed UIDs), WAL frame encoding, head insert, and the native
//! and OpenTSDB cell codecs. Throughput is in points; bytes per point are
//! printed for the encoders.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use hourglass::codec::cell::{DecodedPoint, decode_cell as decode_opentsdb, encode_packed_cell};
use hourglass::codec::native::{decode_cell, encode_cell, for_each_point};
use hourglass::codec::{KeyLayout, StoredValue};
use hourglass::engine::head::Head;
use hourglass::engine::wal::FrameBuilder;

/// Series keys of 100 hosts × 10 metrics with 7 tags, from fixed UIDs.
fn series_keys(layout: &KeyLayout) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for h in 0..100u64 {
        for m in 0..10u64 {
            let tags: Vec<(u64, u64)> = (0..7u64).map(|k| (k + 1, 1000 + h * 7 + k)).collect();
            keys.push(layout.series_key(m + 1, &tags));
        }
    }
    keys
}

fn bench_series(c: &mut Criterion) {
    let layout = KeyLayout::default();
    let tags: Vec<Vec<(u64, u64)>> = (0..1000u64)
        .map(|s| (0..7u64).map(|k| (k + 1, 1000 + s * 7 + k)).collect())
        .collect();
    let keys: Vec<Arc<[u8]>> = series_keys(&layout).into_iter().map(Arc::from).collect();
    let mut head = Head::default();
    for k in &keys {
        head.register(Arc::clone(k), 1);
    }
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("series_key_build", |b| {
        b.iter(|| {
            for (i, t) in tags.iter().enumerate() {
                black_box(layout.series_key(i as u64 % 10 + 1, black_box(t)));
            }
        })
    });
    g.bench_function("head_series_lookup", |b| {
        b.iter(|| {
            for k in &keys {
                black_box(head.id_of(black_box(k)));
            }
        })
    });
    g.finish();
}

/// 10,000 points of 1,000 series (10 steps), as (series, raw ts, value).
fn wal_points() -> Vec<(u32, u64, StoredValue)> {
    common::points(100, 10)
        .into_iter()
        .map(|(h, m, ts, v)| {
            (
                h * 10 + m as u32,
                ts as u64,
                StoredValue::Double(v as f64 / 100.0),
            )
        })
        .collect()
}

fn bench_wal(c: &mut Criterion) {
    let layout = KeyLayout::default();
    let keys = series_keys(&layout);
    let points = wal_points();
    let mut frame = FrameBuilder::new();
    for (i, k) in keys.iter().enumerate() {
        frame.series(i as u32, k);
    }
    let defs = frame.len();
    for &(id, ts, v) in &points {
        frame.point(id, ts, v);
    }
    common::report_size("WAL frame (points only)", frame.len() - defs, points.len());
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(points.len() as u64));
    g.bench_function("wal_frame_encode", |b| {
        b.iter(|| {
            let mut f = FrameBuilder::new();
            for &(id, ts, v) in &points {
                f.point(id, ts, v);
            }
            black_box(f.len())
        })
    });
    g.finish();
}

fn bench_head(c: &mut Criterion) {
    let keys: Vec<Arc<[u8]>> = series_keys(&KeyLayout::default())
        .into_iter()
        .map(Arc::from)
        .collect();
    // One hour of the 1,000 series at 10 s: 360,000 points in time order.
    let pts: Vec<(u32, u64, StoredValue)> = common::points(100, 360)
        .into_iter()
        .map(|(h, m, ts, v)| {
            (
                h * 10 + m as u32,
                ts as u64,
                StoredValue::Double(v as f64 / 100.0),
            )
        })
        .collect();
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.sample_size(20);
    g.bench_function("head_insert_hour", |b| {
        b.iter_batched(
            || {
                let mut head = Head::default();
                let ids: Vec<u32> = keys
                    .iter()
                    .map(|k| head.register(Arc::clone(k), 1).0)
                    .collect();
                (head, ids)
            },
            |(mut head, ids)| {
                for &(s, ts, v) in &pts {
                    head.insert(ids[s as usize], ts, v);
                }
                head
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
    let mut head = Head::default();
    let ids: Vec<u32> = keys
        .iter()
        .map(|k| head.register(Arc::clone(k), 1).0)
        .collect();
    for &(s, ts, v) in &pts {
        head.insert(ids[s as usize], ts, v);
    }
    common::report_size("head (chunk bytes)", head.bytes, head.points);
}

/// One hour of one cpu series at 10 s: a row's cell.
fn hour_points(seed: u64) -> Vec<DecodedPoint> {
    common::walk(seed, 360)
        .into_iter()
        .enumerate()
        .map(|(i, v)| DecodedPoint {
            offset_ms: i as u32 * 10_000,
            ms: false,
            value: StoredValue::Double(v as f64 / 100.0),
        })
        .collect()
}

fn bench_cells(c: &mut Criterion) {
    let rows: Vec<Vec<DecodedPoint>> = (0..100).map(hour_points).collect();
    let n: usize = rows.iter().map(Vec::len).sum();
    let native: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            encode_cell(r, &mut out).expect("sorted, unique");
            out
        })
        .collect();
    common::report_size("native cell", native.iter().map(Vec::len).sum(), n);
    let packed: Vec<(Vec<u8>, Vec<u8>)> = rows.iter().map(|r| encode_packed_cell(r)).collect();
    common::report_size(
        "OpenTSDB packed cell (qualifier + value)",
        packed.iter().map(|(q, v)| q.len() + v.len()).sum(),
        n,
    );
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("native_encode_cell", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            for r in &rows {
                out.clear();
                encode_cell(black_box(r), &mut out).expect("encodes");
            }
        })
    });
    g.bench_function("native_decode_cell", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            for cell in &native {
                out.clear();
                decode_cell(black_box(cell), &mut out).expect("decodes");
            }
        })
    });
    g.bench_function("native_for_each_point_sum", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            for cell in &native {
                for_each_point(black_box(cell), |_, v| {
                    if let StoredValue::Double(d) = v {
                        sum += d;
                    }
                })
                .expect("decodes");
            }
            black_box(sum)
        })
    });
    g.bench_function("opentsdb_encode_packed_cell", |b| {
        b.iter(|| {
            for r in &rows {
                black_box(encode_packed_cell(black_box(r)));
            }
        })
    });
    g.bench_function("opentsdb_decode_cell", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            for (q, v) in &packed {
                out.clear();
                decode_opentsdb(black_box(q), black_box(v), &mut out).expect("decodes");
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench_series, bench_wal, bench_head, bench_cells);
criterion_main!(benches);
