//! Data generators shared by the tests, and the measurement run that prints
//! bytes per point (raw and after zstd over 32 KiB table-file blocks) and
//! speeds for each kind of data:
//!
//! ```sh
//! cargo test --release -p hourglass --lib codec::native::measure -- --ignored --nocapture
//! ```
//! It asserts nothing about timing.

use super::*;
use crate::codec::StoredValue;
use crate::codec::StoredValue::{Double, Float, Int};
use crate::codec::cell::DecodedPoint;
use std::hint::black_box;
use std::time::Instant;

/// splitmix64: a fixed-seed generator so every run sees the same data.
#[derive(Debug, Clone)]
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// How OpenTSDB stores a decimal text value: Float when the double is an
/// exact f32, else Double.
pub(crate) fn classify(d: f64) -> StoredValue {
    if f64::from(d as f32) == d {
        Float(d as f32)
    } else {
        Double(d)
    }
}

fn point(offset_ms: u32, value: StoredValue) -> DecodedPoint {
    DecodedPoint {
        offset_ms,
        ms: !offset_ms.is_multiple_of(1000),
        value,
    }
}

/// The cpu workload (TSBS cpu-only shape): a random walk in [0, 100] with
/// two decimals and a uniform step in [-1.00, +1.00], clamped.
pub(crate) fn cpu_series(rng: &mut Rng, start: u32, step: u32, n: usize) -> Vec<DecodedPoint> {
    let mut cents = (rng.next() % 10_001) as i64;
    (0..n)
        .map(|i| {
            cents = (cents + (rng.next() % 201) as i64 - 100).clamp(0, 10_000);
            point(start + step * i as u32, classify(cents as f64 / 100.0))
        })
        .collect()
}

pub(crate) fn cpu_cell(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut c = Vec::new();
    encode_cell(&cpu_series(rng, 0, 10_000, n), &mut c).unwrap();
    c
}

/// Bytes per point raw, and after zstd levels 1 and 3 over 32 KiB blocks of
/// concatenated cells (how table files store them).
fn sizes(cells: &[Vec<u8>], points: usize) -> (f64, f64, f64) {
    let raw: usize = cells.iter().map(Vec::len).sum();
    let mut blocks: Vec<Vec<u8>> = vec![Vec::new()];
    for c in cells {
        if blocks
            .last()
            .is_some_and(|b| b.len() + c.len() > 32 * 1024 && !b.is_empty())
        {
            blocks.push(Vec::new());
        }
        if let Some(b) = blocks.last_mut() {
            b.extend_from_slice(c);
        }
    }
    let z = |level| -> usize {
        blocks
            .iter()
            .map(|b| zstd::bulk::compress(b, level).unwrap().len())
            .sum()
    };
    let p = points as f64;
    (raw as f64 / p, z(1) as f64 / p, z(3) as f64 / p)
}

fn report(name: &str, series: &[Vec<DecodedPoint>]) {
    let mut cells = Vec::new();
    let mut points = 0;
    for s in series {
        let mut c = Vec::new();
        encode_cell(s, &mut c).unwrap();
        let mut back = Vec::new();
        decode_cell(&c, &mut back).unwrap();
        assert_eq!(back.len(), s.len());
        points += s.len();
        cells.push(c);
    }
    let (raw, z1, z3) = sizes(&cells, points);
    println!("{name:<44} raw {raw:7.4}  zstd-1 {z1:7.4}  zstd-3 {z3:7.4}  B/pt");
}

fn series_of(
    cells: usize,
    mut f: impl FnMut(&mut Rng, usize) -> StoredValue,
) -> Vec<Vec<DecodedPoint>> {
    let mut rng = Rng(0xC0DEC);
    (0..cells)
        .map(|_| {
            (0..360)
                .map(|i| point(i as u32 * 10_000, f(&mut rng, i)))
                .collect()
        })
        .collect()
}

fn rate(name: &str, points: usize, secs: f64) {
    println!("{name:<44} {:8.1} M points/s", points as f64 / secs / 1e6);
}

/// CPU time this thread has run, from the scheduler (ns): on a shared
/// machine, waiting for a core does not count against the codec.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// Runs `f` three times; the best (CPU time if available, else wall) wins.
fn best_of(f: &mut dyn FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let (t, c) = (Instant::now(), cpu_secs());
            f();
            let cpu = cpu_secs() - c;
            if cpu > 0.0 {
                cpu
            } else {
                t.elapsed().as_secs_f64()
            }
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
#[ignore = "measurement; run with --release -- --ignored --nocapture"]
fn measure() {
    const CELLS: usize = 2000;
    let mut rng = Rng(1);
    let cpu: Vec<Vec<DecodedPoint>> = (0..CELLS)
        .map(|_| cpu_series(&mut rng, 0, 10_000, 360))
        .collect();
    report("cpu (10 s, 2-decimal walk, 360/cell)", &cpu);
    let cpu_phase: Vec<Vec<DecodedPoint>> = (0..CELLS)
        .map(|_| {
            let start = (rng.next() % 10) as u32 * 1000;
            cpu_series(&mut rng, start, 10_000, 360)
        })
        .collect();
    report("cpu, random start second", &cpu_phase);
    // hourglass-bench's Percent metric walks by up to ±2.00.
    let bench_pct: Vec<Vec<DecodedPoint>> = (0..CELLS)
        .map(|_| {
            let mut c = (rng.next() % 10_001) as i64;
            (0..360)
                .map(|i| {
                    c = (c + (rng.next() % 401) as i64 - 200).clamp(0, 10_000);
                    point(i as u32 * 10_000, classify(c as f64 / 100.0))
                })
                .collect()
        })
        .collect();
    report("bench Percent (steps up to ±2.00)", &bench_pct);
    let jitter: Vec<Vec<DecodedPoint>> = (0..CELLS)
        .map(|_| {
            let mut s = cpu_series(&mut rng, 0, 10_000, 360);
            for p in &mut s {
                p.offset_ms += (rng.next() % 50) as u32;
                p.ms = !p.offset_ms.is_multiple_of(1000);
            }
            s
        })
        .collect();
    report("cpu, timestamps jittered 0-49 ms", &jitter);

    report(
        "constant gauge (Double 12.5)",
        &series_of(CELLS, |_, _| Double(12.5)),
    );
    report("constant gauge (Int 1)", &series_of(CELLS, |_, _| Int(1)));
    report(
        "steady counter (+100 per point)",
        &series_of(CELLS, |_, i| Int(1_000_000 + 100 * i as i64)),
    );
    for n in [1u64, 15, 255, 65_535] {
        let mut v = 0i64;
        let s = series_of(CELLS, |r, _| {
            v += (r.next() % (n + 1)) as i64;
            Int(v)
        });
        let ideal = ((n + 1) as f64).log2() / 8.0;
        report(
            &format!("counter, increments 0..={n} (ideal {ideal:.3})"),
            &s,
        );
    }
    report(
        "mostly-zero gauge (98% 0, else 0.01-9.99)",
        &series_of(CELLS, |r, _| {
            if r.next() % 50 == 0 {
                classify((1 + r.next() % 999) as f64 / 100.0)
            } else {
                classify(0.0)
            }
        }),
    );
    report(
        "mostly-zero Int gauge (98% 0)",
        &series_of(CELLS, |r, _| {
            Int(if r.next() % 50 == 0 {
                (r.next() % 100) as i64
            } else {
                0
            })
        }),
    );
    report(
        "Telegraf-style (ints among 1-decimal floats)",
        &series_of(CELLS, |r, _| {
            let c = (r.next() % 1000) as i64;
            if c % 10 == 0 {
                Int(c / 10)
            } else {
                classify(c as f64 / 10.0)
            }
        }),
    );
    report(
        "random f64 (all 64 bits random)",
        &series_of(CELLS, |r, _| Double(f64::from_bits(r.next()))),
    );
    report(
        "random f64 in [0,1) (53-bit mantissas)",
        &series_of(CELLS, |r, _| {
            Double((r.next() >> 11) as f64 / (1u64 << 53) as f64)
        }),
    );
    report(
        "slow sine (non-decimal doubles)",
        &series_of(CELLS, |_, i| Double((i as f64 * 0.01).sin())),
    );

    // Speeds, one core.
    let cells: Vec<Vec<u8>> = cpu
        .iter()
        .map(|s| {
            let mut c = Vec::new();
            encode_cell(s, &mut c).unwrap();
            c
        })
        .collect();
    let total = CELLS * 360;
    // Best of three runs, by this thread's CPU time: the machine is shared.
    let best = best_of;
    let reps = 5;
    let secs = best(&mut || {
        for _ in 0..reps {
            for s in &cpu {
                let mut c = Vec::with_capacity(512);
                encode_cell(black_box(s), &mut c).unwrap();
                black_box(c);
            }
        }
    });
    rate("encode_cell (cpu)", total * reps, secs);

    let reps = 20;
    let mut sum = 0.0;
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &cells {
                for_each_point(black_box(c), |o, v| {
                    sum += v.as_f64() + f64::from(o);
                })
                .unwrap();
            }
        }
    });
    black_box(sum);
    rate("for_each_point (cpu), summing values", total * reps, secs);

    let pct_cells: Vec<Vec<u8>> = bench_pct
        .iter()
        .map(|s| {
            let mut c = Vec::new();
            encode_cell(s, &mut c).unwrap();
            c
        })
        .collect();
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &pct_cells {
                for_each_point(black_box(c), |o, v| {
                    sum += v.as_f64() + f64::from(o);
                })
                .unwrap();
            }
        }
    });
    black_box(sum);
    rate("for_each_point (bench Percent, radix)", total * reps, secs);

    let mut out = Vec::with_capacity(400);
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &cells {
                out.clear();
                decode_cell(black_box(c), &mut out).unwrap();
                black_box(&out);
            }
        }
    });
    rate("decode_cell (cpu) into Vec", total * reps, secs);

    // What a summarised hour costs a query: reading the cell's summary.
    let mut got = 0.0;
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &cells {
                if let Ok(Some(s)) = super::cell_summary(black_box(c)) {
                    got += s.max;
                }
            }
        }
    });
    black_box(got);
    rate(
        "cell_summary (cpu), in points it stands for",
        total * reps,
        secs,
    );

    let (mut offs, mut vals) = (Vec::with_capacity(400), Vec::with_capacity(400));
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &cells {
                offs.clear();
                vals.clear();
                decode_columns(black_box(c), &mut offs, &mut vals).unwrap();
                black_box((&offs, &vals));
            }
        }
    });
    rate("decode_columns (cpu)", total * reps, secs);

    let reps = 5;
    let mut heap = 0;
    let secs = best(&mut || {
        heap = 0;
        for _ in 0..reps {
            for s in &cpu {
                let mut ch = Chunk::new();
                for p in s {
                    ch.push(*p).unwrap();
                }
                heap += ch.heap_bytes();
                black_box(&ch);
            }
        }
    });
    rate("Chunk::push (cpu), 360 per chunk", total * reps, secs);
    println!(
        "Chunk heap after 360 cpu points: {:.1} bytes (mean); size_of::<Chunk>() = {}",
        heap as f64 / (CELLS * reps) as f64,
        size_of::<Chunk>()
    );
    let secs = best(&mut || {
        for _ in 0..reps {
            for s in &cpu {
                let mut ch = Chunk::new();
                for p in s {
                    ch.push(*p).unwrap();
                }
                let mut c = Vec::new();
                ch.to_cell(&mut c);
                black_box(c);
            }
        }
    });
    rate("Chunk::push + to_cell (cpu)", total * reps, secs);
    let secs = best(&mut || {
        for _ in 0..reps {
            for c in &cells {
                black_box(Chunk::from_cell(black_box(c)).unwrap());
            }
        }
    });
    rate("Chunk::from_cell (cpu)", total * reps, secs);
    for (name, series) in [
        ("cpu, jittered 0-49 ms", &jitter),
        ("bench Percent", &bench_pct),
        (
            "steady counter",
            &series_of(100, |_, i| Int(1_000_000 + 100 * i as i64)),
        ),
    ] {
        let heap: usize = series
            .iter()
            .map(|s| {
                let mut ch = Chunk::new();
                for p in s {
                    ch.push(*p).unwrap();
                }
                ch.heap_bytes()
            })
            .sum();
        println!(
            "Chunk heap after 360 points, {name:<24} {:.1} bytes (mean)",
            heap as f64 / series.len() as f64
        );
    }
}

/// Just `Chunk::push` on the cpu workload, for profiling.
#[test]
#[ignore = "profiling aid"]
fn profile_push() {
    let mut rng = Rng(1);
    for (series, reps) in [(2000usize, 5usize), (20, 500)] {
        let cpu: Vec<Vec<DecodedPoint>> = (0..series)
            .map(|_| cpu_series(&mut rng, 0, 10_000, 360))
            .collect();
        let secs = best_of(&mut || {
            for _ in 0..reps {
                for s in &cpu {
                    let mut ch = Chunk::new();
                    for p in s {
                        ch.push(*p).unwrap();
                    }
                    black_box(&ch);
                }
            }
        });
        rate(
            &format!("Chunk::push (cpu), {series} series"),
            series * 360 * reps,
            secs,
        );
    }
}

/// Writes the fuzz seeds in `tests/fuzz/seeds/cell_decode/` (first byte =
/// the fuzz target's mode).
#[test]
#[ignore = "regenerates fuzz seeds"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/seeds/cell_decode");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(99);
    let cell = |pts: &[DecodedPoint]| {
        let mut c = Vec::new();
        encode_cell(pts, &mut c).unwrap();
        c
    };
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();
    seeds.push((
        "native_cpu",
        [&[4u8][..], &cpu_cell(&mut rng, 360)].concat(),
    ));
    let mut pts = cpu_series(&mut rng, 1234, 997, 200);
    pts[3].value = Double(f64::NAN);
    pts[4].value = Int(7);
    pts[5].ms = !pts[5].ms;
    pts[6].value = Float(37.21);
    seeds.push(("native_mixed", [&[1u8][..], &cell(&pts)].concat()));
    let pts: Vec<_> = (0..150)
        .map(|i| point(i * 1000, Double((i as f64 * 0.1).sin())))
        .collect();
    seeds.push(("native_xor", [&[1u8][..], &cell(&pts)].concat()));
    let pts: Vec<_> = (0..40)
        .map(|i| point(i * 7, Double(f64::from_bits(rng.next()))))
        .collect();
    seeds.push(("native_raw", [&[4u8][..], &cell(&pts)].concat()));
    let pts: Vec<_> = (0..300)
        .map(|i| point(i * 10_000, Int(if i % 50 == 0 { 9 } else { 0 })))
        .collect();
    seeds.push(("native_spikes", [&[1u8][..], &cell(&pts)].concat()));
    let pts: Vec<_> = (0..260)
        .map(|i| point(i * 1000, Int(1000 + 3 * i as i64)))
        .collect();
    seeds.push(("native_counter", [&[1u8][..], &cell(&pts)].concat()));
    let mut c = 5000i64;
    let pts: Vec<_> = (0..300)
        .map(|i| {
            c = (c + (rng.next() % 401) as i64 - 200).clamp(0, 10_000);
            point(i * 10_000, classify(c as f64 / 100.0))
        })
        .collect();
    seeds.push(("native_radix", [&[1u8][..], &cell(&pts)].concat()));
    seeds.push(("native_unknown_codec", vec![1, 0x07, 0x02, 0x01]));
    // OpenTSDB packed cell: qualifier length, qualifiers, values + meta byte.
    let (q, v) = crate::codec::cell::encode_packed_cell(&[
        point(0, Int(4)),
        point(4, Int(5)),
        point(1000, Double(0.5)),
    ]);
    seeds.push((
        "opentsdb_packed",
        [&[2u8, q.len() as u8][..], &q, &v].concat(),
    ));
    // Points for the round-trip mode: gap (2), flags (1), payload (8).
    let mut pts = vec![3u8];
    for i in 0..60u64 {
        pts.extend_from_slice(&0x8000u16.to_le_bytes());
        pts.push((i % 8) as u8);
        pts.extend_from_slice(&rng.next().to_le_bytes());
    }
    seeds.push(("points", pts));
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Just `encode_cell` and `for_each_point` on the cpu workload, for profiling.
#[test]
#[ignore = "profiling aid"]
fn profile_codec() {
    let mut rng = Rng(1);
    let cpu: Vec<Vec<DecodedPoint>> = (0..2000)
        .map(|_| cpu_series(&mut rng, 0, 10_000, 360))
        .collect();
    let mut cells = Vec::new();
    let secs = best_of(&mut || {
        for _ in 0..3 {
            cells.clear();
            for s in &cpu {
                let mut c = Vec::with_capacity(512);
                encode_cell(s, &mut c).unwrap();
                cells.push(c);
            }
        }
    });
    rate("encode_cell (cpu)", 2000 * 360 * 3, secs);
    let mut sum = 0.0;
    let secs = best_of(&mut || {
        for _ in 0..10 {
            for c in &cells {
                for_each_point(c, |o, v| sum += v.as_f64() + f64::from(o)).unwrap();
            }
        }
    });
    black_box(sum);
    rate("for_each_point (cpu)", 2000 * 360 * 10, secs);
}
