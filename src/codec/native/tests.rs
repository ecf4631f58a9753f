//! Cross-cutting tests of the native codec: every mode round-trips bit for
//! bit through `encode_cell`, `decode_cell`, `for_each_point` and `Chunk`;
//! corrupt input is an error, never a panic.

use super::decimal::same_value;
use super::measure::{Rng, cpu_cell, cpu_series};
use super::*;
use crate::codec::StoredValue::{self, Double, Float, Int};
use crate::codec::cell::DecodedPoint;
use proptest::prelude::*;

fn pt(offset_ms: u32, value: StoredValue) -> DecodedPoint {
    DecodedPoint {
        offset_ms,
        ms: !offset_ms.is_multiple_of(1000),
        value,
    }
}

fn same_points(a: &[DecodedPoint], b: &[DecodedPoint]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.offset_ms == y.offset_ms && x.ms == y.ms && same_value(x.value, y.value)
        })
}

fn assert_same(a: &[DecodedPoint], b: &[DecodedPoint]) {
    if !same_points(a, b) {
        let i = a
            .iter()
            .zip(b)
            .position(|(x, y)| {
                !(x.offset_ms == y.offset_ms && x.ms == y.ms && same_value(x.value, y.value))
            })
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "points differ at {i} (lengths {} vs {}): {:?} vs {:?}",
            a.len(),
            b.len(),
            a.get(i),
            b.get(i)
        );
    }
}

/// The codec `0x01` form of a cell: its header without the summary, then
/// the same blocks.
fn v1_form(cell: &[u8]) -> Vec<u8> {
    let blocks = super::cell::read_header(cell).unwrap().blocks.pos;
    let (_, count_end) = crate::codec::varint::decode(cell, 1).unwrap();
    let mut v1 = vec![CODEC_ID_V1];
    v1.extend_from_slice(&cell[1..count_end]);
    v1.extend_from_slice(&cell[blocks..]);
    v1
}

fn same_summary(a: &CellSummary, b: &CellSummary) -> bool {
    a.valid == b.valid
        && [a.min, a.max, a.sum, a.first, a.last]
            .iter()
            .zip([b.min, b.max, b.sum, b.first, b.last])
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Encodes, decodes every way there is, and checks the chunk agrees byte
/// for byte, the summary holds the points' aggregates, and the same blocks
/// under a codec `0x01` header decode to the same points. Returns the cell
/// in its codec `0x01` form (the blocks' size, which the tests measure).
fn check(points: &[DecodedPoint]) -> Vec<u8> {
    let mut cell = Vec::new();
    encode_cell(points, &mut cell).unwrap();
    assert_eq!(cell[0], CODEC_ID_V2);
    assert_eq!(cell_point_count(&cell).unwrap(), points.len());
    match (
        cell_summary(&cell).unwrap(),
        CellSummary::of(points.iter().map(|p| p.value)),
    ) {
        (Some(got), Some(want)) => assert!(same_summary(&got, &want), "{got:?} vs {want:?}"),
        (got, want) => assert_eq!(got, want),
    }
    let v1 = v1_form(&cell);
    assert_eq!(cell_summary(&v1).unwrap(), None);
    let mut from_v1 = Vec::new();
    decode_cell(&v1, &mut from_v1).unwrap();
    assert_same(points, &from_v1);
    assert_eq!(Chunk::from_cell(&v1).unwrap().len(), points.len());
    let mut got = Vec::new();
    decode_cell(&cell, &mut got).unwrap();
    assert_same(points, &got);

    let mut visited = Vec::new();
    for_each_point(&cell, |o, v| visited.push((o, v))).unwrap();
    assert_eq!(visited.len(), points.len());
    for (p, (o, v)) in points.iter().zip(&visited) {
        assert_eq!(p.offset_ms, *o);
        assert!(same_value(p.value, *v));
    }
    let (mut offs, mut vals) = (Vec::new(), Vec::new());
    decode_columns(&cell, &mut offs, &mut vals).unwrap();
    assert_eq!(offs.len(), points.len());

    let mut chunk = Chunk::new();
    for p in points {
        chunk.push(*p).unwrap();
    }
    assert_eq!(chunk.len(), points.len());
    let mut from_chunk = Vec::new();
    chunk.to_cell(&mut from_chunk);
    assert_eq!(from_chunk, cell, "Chunk::to_cell differs from encode_cell");
    let mut dec = Vec::new();
    chunk.decode(&mut dec).unwrap();
    assert_same(points, &dec);
    v1
}

#[test]
fn empty_and_single_point_cells() {
    assert_eq!(check(&[]), [0x01, 0x00]);
    let one = check(&[pt(5000, Int(42))]);
    assert!(one.len() <= 8, "{one:02X?}");
    check(&[pt(0, Double(0.1))]);
    check(&[pt(3_599_999, Float(-1.5))]);
    check(&[pt(1, Double(f64::NAN))]);
}

/// The example drawn in `docs/format/native-cell.md`.
#[test]
fn worked_example_bytes() {
    let pts: Vec<_> = [37.21f64, 37.25, 36.90, 37.00, 38.15]
        .iter()
        .enumerate()
        .map(|(i, &d)| pt(i as u32 * 10_000, super::measure::classify(d)))
        .collect();
    assert!(matches!(pts[1].value, Float(_)) && matches!(pts[0].value, Double(_)));
    let v1 = check(&pts);
    assert_eq!(
        v1,
        [
            0x01, 0x0B, 0x01, 0x00, 0x0A, 0x25, 0x44, 0x92, 0x3A, 0x08, 0x45, 0x14, 0xE6
        ]
    );
    // Codec 0x02 (what this build writes): the summary sits between the
    // count and the same block.
    let mut cell = Vec::new();
    encode_cell(&pts, &mut cell).unwrap();
    #[rustfmt::skip]
    let summary = [
        0x00,                   // flags: no NaN, so valid = n
        0x01, 0xE2, 0x05,       // min 36.9 = 369 / 10^1
        0x02, 0xCE, 0x3B,       // max 38.15 = 3815 / 10^2
        0x42, 0xB6, 0xA3, 0x02, 0x02, // sum 186.51000000000002: 18651 / 10^2, bits + 1
        0x02, 0x92, 0x3A,       // first 37.21
        0x02, 0xCE, 0x3B,       // last 38.15
    ];
    let mut want = vec![0x02, 0x0B];
    want.extend_from_slice(&summary);
    want.extend_from_slice(&v1[2..]);
    assert_eq!(cell, want, "{cell:02X?}");
    // And the head of a 360-point cpu cell: one header covering 3 blocks.
    let mut rng = Rng(1);
    let cell = v1_form(&cpu_cell(&mut rng, 360));
    assert_eq!(&cell[..6], &[0x01, 0xD1, 0x05, 0x21, 0x00, 0x0A]);
    assert!(cell.len() <= 371, "{}", cell.len());
}

#[test]
fn unknown_codec_is_rejected_with_its_id() {
    let err = decode_cell(&[0x07, 0x00], &mut Vec::new()).unwrap_err();
    assert_eq!(err, NativeError::UnknownCodec(0x07));
    assert!(err.to_string().contains("unknown cell codec 0x07"), "{err}");
    assert!(err.to_string().contains("newer hourglass"), "{err}");
    assert_eq!(cell_point_count(&[0x07]), Err(NativeError::UnknownCodec(7)));
    assert_eq!(
        for_each_point(&[0x00], |_, _| {}),
        Err(NativeError::UnknownCodec(0))
    );
    assert_eq!(decode_cell(&[], &mut Vec::new()), Err(NativeError::Empty));
}

#[test]
fn encode_rejects_bad_input() {
    let mut out = Vec::new();
    assert_eq!(
        encode_cell(&[pt(10, Int(1)), pt(10, Int(2))], &mut out),
        Err(NativeError::Unsorted {
            index: 1,
            offset_ms: 10
        })
    );
    assert!(encode_cell(&[pt(20, Int(1)), pt(10, Int(2))], &mut out).is_err());
    assert_eq!(
        encode_cell(&[pt(3_600_000, Int(1))], &mut out),
        Err(NativeError::OffsetOutOfRange {
            index: 0,
            offset_ms: 3_600_000
        })
    );
    assert!(out.is_empty());
    let mut c = Chunk::new();
    c.push(pt(10, Int(1))).unwrap();
    assert!(c.push(pt(10, Int(2))).is_err());
    assert!(c.push(pt(5, Int(2))).is_err());
    assert!(c.push(pt(3_600_000, Int(2))).is_err());
    assert_eq!(c.len(), 1);
    assert_eq!(c.last_offset(), Some(10));
}

#[test]
fn regular_timestamps_cost_almost_nothing() {
    // A constant gauge every 10 s: one header byte covers 16 blocks.
    let pts: Vec<_> = (0..360).map(|i| pt(i * 10_000, Int(7))).collect();
    let cell = check(&pts);
    assert!(cell.len() <= 12, "{} bytes: {cell:02X?}", cell.len());
    // Exactly 128 and 129 points.
    for n in [127, 128, 129, 256, 257] {
        let pts: Vec<_> = (0..n)
            .map(|i| pt(i * 1000, Double(f64::from(i) / 4.0)))
            .collect();
        check(&pts);
    }
}

#[test]
fn irregular_timestamps() {
    let mut rng = Rng(3);
    let mut t = 0u32;
    let pts: Vec<_> = (0..700)
        .map(|_| {
            t += 4_500 + (rng.next() % 1000) as u32;
            pt(t, Int(1))
        })
        .collect();
    check(&pts);
    // Whole-second jitter and gaps (missing points).
    let mut t = 0u32;
    let pts: Vec<_> = (0..300)
        .map(|i| {
            t += if i % 37 == 0 { 30_000 } else { 10_000 } + (rng.next() % 3) as u32 * 1000;
            pt(t, Int(i))
        })
        .collect();
    check(&pts);
    // Accelerating steps (delta-of-delta wins).
    let mut t = 0u32;
    let pts: Vec<_> = (1..200u32)
        .map(|i| {
            t += i * 7;
            pt(t, Int(0))
        })
        .collect();
    check(&pts);
    // Dense milliseconds.
    let pts: Vec<_> = (0..1000).map(|i| pt(i * 3 + 1, Int(i.into()))).collect();
    check(&pts);
}

#[test]
fn integer_transforms() {
    // Steady counter: delta FOR at width 0.
    let pts: Vec<_> = (0..1000)
        .map(|i| pt(i * 1000, Int(1_000_000 + 17 * i64::from(i))))
        .collect();
    let cell = check(&pts);
    assert!(cell.len() < 30, "{}", cell.len());
    // Counter with random increments.
    let mut rng = Rng(9);
    let mut v = 0i64;
    let pts: Vec<_> = (0..1000)
        .map(|i| {
            v += (rng.next() % 16) as i64;
            pt(i * 1000, Int(v))
        })
        .collect();
    check(&pts);
    // Linearly growing increments (delta-of-delta).
    let pts: Vec<_> = (0..300)
        .map(|i| pt(i * 1000, Int(i64::from(i * i))))
        .collect();
    check(&pts);
    // Extremes and wrapping deltas.
    let pts: Vec<_> = [i64::MIN, i64::MAX, 0, i64::MIN, -1, i64::MAX, 1]
        .iter()
        .cycle()
        .take(300)
        .enumerate()
        .map(|(i, &v)| pt(i as u32 * 7, Int(v)))
        .collect();
    check(&pts);
    check(&[pt(0, Int(i64::MIN))]);
    check(&[pt(0, Int(i64::MAX)), pt(1, Int(i64::MIN))]);
}

#[test]
fn decimals_with_exceptions() {
    let mut rng = Rng(1);
    let mut pts = cpu_series(&mut rng, 0, 9_000, 400);
    for i in [3usize, 130, 200, 399] {
        pts[i].value = Double(f64::NAN);
    }
    pts[5].value = Double(-0.0);
    pts[6].value = Double(f64::INFINITY);
    pts[7].value = Double(f64::NEG_INFINITY);
    pts[8].value = Double(std::f64::consts::PI);
    pts[9].value = Double(f64::from_bits(1)); // subnormal
    pts[10].value = Double(f64::from_bits(0x7FF0_0000_0000_0001)); // signalling NaN
    pts[11].value = Float(f32::from_bits(0x7F80_0001)); // f32 signalling NaN
    pts[12].value = Float(f32::from_bits(0xFFC1_2345)); // NaN payload
    pts[13].value = Float(-0.0);
    pts[14].value = Double(1e300);
    check(&pts);
}

#[test]
fn xor_and_raw_fallbacks() {
    // Non-decimal doubles that change slowly: Gorilla XOR.
    let pts: Vec<_> = (0..500)
        .map(|i| pt(i * 1000, Double((f64::from(i) * 0.01).sin() / 3.0)))
        .collect();
    check(&pts);
    // Random bit patterns: raw.
    let mut rng = Rng(77);
    let pts: Vec<_> = (0..500)
        .map(|i| pt(i * 1000, Double(f64::from_bits(rng.next()))))
        .collect();
    let cell = check(&pts);
    assert!(cell.len() <= 500 * 86 / 10, "{}", cell.len());
    // Repeated non-decimal values: XOR costs a bit each.
    let pts: Vec<_> = (0..500).map(|i| pt(i * 1000, Double(1.0 / 3.0))).collect();
    check(&pts);
}

#[test]
fn mixed_kinds() {
    // Telegraf: integral values arrive as Int in a float series.
    let mut rng = Rng(5);
    let pts: Vec<_> = (0..400)
        .map(|i| {
            let c = (rng.next() % 10_000) as i64;
            let v = if c % 3 == 0 {
                Int(c / 100)
            } else {
                let d = c as f64 / 100.0;
                if f64::from(d as f32) == d {
                    Float(d as f32)
                } else {
                    Double(d)
                }
            };
            pt(i * 9_000, v)
        })
        .collect();
    check(&pts);
    // Python: 100.0 written as "100.0" (a Float) next to Ints: kind bitmap.
    let pts: Vec<_> = (0..300)
        .map(|i| {
            let v = match i % 4 {
                0 => Int(i64::from(i)),
                1 => Float(i as f32),
                2 => Double(f64::from(i) + 0.1),
                _ => Double(f64::from(i) + 0.5), // f32-exact but a Double: explicit kinds
            };
            pt(i * 1000, v)
        })
        .collect();
    check(&pts);
    // Floats that are not short decimals as f64 (f32 37.21).
    let pts: Vec<_> = (0..200)
        .map(|i| pt(i * 10, Float(37.21 + i as f32)))
        .collect();
    check(&pts);
    // Mostly ints with a NaN and a huge int (not representable as f64).
    let mut pts: Vec<_> = (0..200).map(|i| pt(i * 10, Int(i64::from(i)))).collect();
    pts[50].value = Double(f64::NAN);
    pts[51].value = Int(i64::MAX - 1);
    pts[52].value = Float(0.5);
    check(&pts);
    // Ints inside XOR blocks.
    let pts: Vec<_> = (0..300)
        .map(|i| {
            pt(
                i * 10,
                if i % 5 == 0 {
                    Int(i64::from(i) << 40)
                } else {
                    Double((f64::from(i)).sqrt())
                },
            )
        })
        .collect();
    check(&pts);
}

#[test]
fn explicit_ms_flags() {
    // ms qualifiers at whole seconds (a client writing ms timestamps).
    let pts: Vec<_> = (0..300)
        .map(|i| DecodedPoint {
            offset_ms: i * 1000,
            ms: true,
            value: Int(1),
        })
        .collect();
    check(&pts);
    // Some of them.
    let pts: Vec<_> = (0..300)
        .map(|i| DecodedPoint {
            offset_ms: i * 1000,
            ms: i % 7 == 0,
            value: Int(1),
        })
        .collect();
    check(&pts);
    // Not representable by OpenTSDB, but still lossless: ms=false off-second.
    let pts: Vec<_> = (0..300)
        .map(|i| DecodedPoint {
            offset_ms: i * 1001,
            ms: i % 2 == 0,
            value: Int(1),
        })
        .collect();
    check(&pts);
}

#[test]
fn full_hour_at_one_millisecond() {
    let pts: Vec<_> = (0..MAX_POINTS as u32)
        .map(|i| pt(i, Int(i64::from(i % 1000))))
        .collect();
    let mut cell = Vec::new();
    encode_cell(&pts, &mut cell).unwrap();
    let mut got = Vec::new();
    decode_cell(&cell, &mut got).unwrap();
    assert_same(&pts, &got);
    // A constant full hour is tiny.
    let pts: Vec<_> = (0..MAX_POINTS as u32).map(|i| pt(i, Double(0.5))).collect();
    let mut cell = Vec::new();
    encode_cell(&pts, &mut cell).unwrap();
    assert!(cell.len() < 2000, "{}", cell.len());
    let mut n = 0;
    for_each_point(&cell, |_, v| {
        assert!(same_value(v, Double(0.5)));
        n += 1;
    })
    .unwrap();
    assert_eq!(n, MAX_POINTS);
}

#[test]
fn header_claims_are_checked_before_allocating() {
    // 3.6 M points claimed in a few bytes.
    let mut cell = vec![CODEC_ID_V1];
    varint::put_uvarint(&mut cell, (MAX_POINTS as u64) << 1);
    cell.extend_from_slice(&[0x01, 0, 1, 0, 0]);
    assert!(matches!(
        cell_point_count(&cell),
        Err(NativeError::Corrupt { .. })
    ));
    assert!(decode_cell(&cell, &mut Vec::new()).is_err());
    // More than the maximum.
    let mut cell = vec![CODEC_ID_V1];
    varint::put_uvarint(&mut cell, ((MAX_POINTS as u64) + 1) << 1);
    assert!(cell_point_count(&cell).is_err());
    // Trailing bytes.
    let mut cell = check(&[pt(0, Int(1)), pt(1000, Int(2))]);
    cell.push(0);
    assert!(matches!(
        decode_cell(&cell, &mut Vec::new()),
        Err(NativeError::Corrupt { .. })
    ));
    // Empty cell with a stray byte.
    assert!(decode_cell(&[0x01, 0x00, 0x00], &mut Vec::new()).is_err());
}

fn sample_cells() -> Vec<Vec<u8>> {
    let mut rng = Rng(11);
    let mut cells = vec![cpu_cell(&mut rng, 360)];
    let mut c = Vec::new();
    let mut pts = cpu_series(&mut rng, 7, 1003, 300);
    pts[4].value = Double(f64::NAN);
    pts[200].value = Int(3);
    pts[201].ms = !pts[201].ms;
    encode_cell(&pts, &mut c).unwrap();
    cells.push(c);
    let mut c = Vec::new();
    let pts: Vec<_> = (0..200)
        .map(|i| pt(i * 999, Double((f64::from(i) * 0.3).cos())))
        .collect();
    encode_cell(&pts, &mut c).unwrap();
    cells.push(c);
    cells
}

#[test]
fn every_truncation_is_an_error() {
    for cell in sample_cells() {
        for len in 0..cell.len() {
            let mut out = Vec::new();
            assert!(
                decode_cell(&cell[..len], &mut out).is_err(),
                "prefix of {len}/{} bytes decoded",
                cell.len()
            );
            assert!(out.is_empty());
            assert!(for_each_point(&cell[..len], |_, _| {}).is_err());
        }
    }
}

#[test]
fn byte_flips_never_panic() {
    for cell in sample_cells() {
        let mut rng = Rng(cell.len() as u64);
        for i in 0..cell.len() {
            for _ in 0..4 {
                let mut bad = cell.clone();
                bad[i] ^= 1 << (rng.next() % 8);
                let mut out = Vec::new();
                if decode_cell(&bad, &mut out).is_ok() {
                    assert!(out.len() <= MAX_POINTS);
                    assert!(out.windows(2).all(|w| w[0].offset_ms < w[1].offset_ms));
                    assert!(out.iter().all(|p| p.offset_ms < 3_600_000));
                }
                let _ = for_each_point(&bad, |_, _| {});
                let _ = cell_point_count(&bad);
                let _ = Chunk::from_cell(&bad);
            }
        }
    }
}

#[test]
fn chunk_memory_on_the_cpu_workload() {
    let mut rng = Rng(42);
    let pts = cpu_series(&mut rng, 0, 10_000, 360);
    let mut c = Chunk::new();
    assert_eq!(c.heap_bytes(), 0);
    c.push(pts[0]).unwrap();
    assert_eq!(c.heap_bytes(), 16, "1 point");
    for p in &pts[1..] {
        c.push(*p).unwrap();
    }
    assert!(
        c.heap_bytes() <= 450,
        "360 points: {} bytes",
        c.heap_bytes()
    );
}

#[test]
fn long_chunk_matches_encode_cell() {
    // Many blocks: geometric growth, repeats, and a switch to ms mid-way.
    let mut rng = Rng(17);
    let mut pts = cpu_series(&mut rng, 0, 1000, 3000);
    pts.extend((3000..200_000u32).map(|i| pt(3_000_000 + i, Int(i64::from(i / 100)))));
    pts.retain(|p| p.offset_ms <= 3_599_999);
    let mut c = Chunk::new();
    for p in &pts {
        c.push(*p).unwrap();
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    c.to_cell(&mut a);
    encode_cell(&pts, &mut b).unwrap();
    assert_eq!(a, b);
    assert!(
        c.heap_bytes() < b.len() * 2 + 1024,
        "{} vs {}",
        c.heap_bytes(),
        b.len()
    );
    let mut got = Vec::new();
    c.decode(&mut got).unwrap();
    assert_same(&pts, &got);
}

#[test]
fn chunk_tail_runs_keep_repeats_small() {
    // Constant gauge and steady counter: the open tail folds repeats into runs.
    for v in [
        |_: i64| Int(7),
        |i: i64| Int(1_000 + 25 * i),
        |_| Double(0.5),
    ] {
        let pts: Vec<_> = (0..127).map(|i| pt(i as u32 * 10_000, v(i))).collect();
        let mut c = Chunk::new();
        for p in &pts {
            c.push(*p).unwrap();
        }
        assert!(c.heap_bytes() <= 48, "{}", c.heap_bytes());
        let mut got = Vec::new();
        c.decode(&mut got).unwrap();
        assert_same(&pts, &got);
        check(&pts);
    }
    // Runs broken by changes, a run of more than 255, and a pattern of two.
    let pts: Vec<_> = (0..1000u32)
        .map(|i| {
            let v = match i {
                0..300 => 1,
                300..301 => 2,
                301..600 => 1,
                _ => i64::from(i % 2),
            };
            pt(i * 1000, Int(v))
        })
        .collect();
    check(&pts);
}

#[test]
fn chunk_from_cell_continues() {
    let mut rng = Rng(8);
    let cpu = cpu_series(&mut rng, 0, 10_000, 360);
    // Constant: headers with repeat counts that cover the partial block.
    let constant: Vec<_> = (0..360).map(|i| pt(i * 10_000, Int(3))).collect();
    let ms: Vec<_> = (0..360).map(|i| pt(i * 10_000 + 7, Double(0.25))).collect();
    for pts in [cpu, constant, ms] {
        from_cell_splits(&pts);
    }
}

fn from_cell_splits(pts: &[DecodedPoint]) {
    for split in [0, 1, 127, 128, 129, 200, 255, 256, 257, 360] {
        let mut cell = Vec::new();
        encode_cell(&pts[..split], &mut cell).unwrap();
        let mut c = Chunk::from_cell(&cell).unwrap();
        for p in &pts[split..] {
            c.push(*p).unwrap();
        }
        let mut got = Vec::new();
        c.decode(&mut got).unwrap();
        assert_same(pts, &got);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        c.to_cell(&mut a);
        encode_cell(pts, &mut b).unwrap();
        assert_eq!(a, b, "split {split}");
    }
}

#[test]
fn chunk_switches_to_ms_unit_after_sealing() {
    let mut pts: Vec<_> = (0..300)
        .map(|i| pt(i * 1000, Double(f64::from(i) * 0.25)))
        .collect();
    pts.push(pt(300_001, Int(5)));
    pts.push(pt(301_000, Int(6)));
    check(&pts);
}

// --- property tests -------------------------------------------------------

fn arb_value() -> impl Strategy<Value = StoredValue> {
    prop_oneof![
        any::<i64>().prop_map(Int),
        (-1000i64..1000).prop_map(Int),
        any::<u32>().prop_map(|b| Float(f32::from_bits(b))),
        (-100_000i64..100_000).prop_map(|c| Float(c as f32 / 4.0)),
        any::<u64>().prop_map(|b| Double(f64::from_bits(b))),
        (-1_000_000i64..1_000_000, 0u8..4)
            .prop_map(|(m, e)| Double(m as f64 / [1.0, 10.0, 100.0, 1000.0][e as usize])),
        Just(Double(-0.0)),
        Just(Double(f64::NAN)),
    ]
}

fn arb_points(max: usize) -> impl Strategy<Value = Vec<DecodedPoint>> {
    (
        prop::collection::vec((1u32..20_000, arb_value(), 0u8..10), 0..max),
        any::<bool>(),
        0u32..1000,
    )
        .prop_map(|(raw, seconds, start)| {
            let mut t = start;
            let mut out = Vec::new();
            for (gap, value, flag) in raw {
                let step = if seconds { (gap % 20 + 1) * 1000 } else { gap };
                t = t.saturating_add(step);
                let t = if seconds { t / 1000 * 1000 } else { t };
                if t > 3_599_999 || out.last().is_some_and(|p: &DecodedPoint| p.offset_ms >= t) {
                    break;
                }
                let ms = if flag == 0 {
                    t.is_multiple_of(1000)
                } else {
                    !t.is_multiple_of(1000)
                };
                out.push(DecodedPoint {
                    offset_ms: t,
                    ms,
                    value,
                });
            }
            out
        })
}

/// Runs of similar values, so chaining, SAME and repeats get exercised.
fn arb_runs() -> impl Strategy<Value = Vec<DecodedPoint>> {
    prop::collection::vec((arb_value(), 1usize..300, 0u8..3), 1..6).prop_map(|runs| {
        let mut out = Vec::new();
        let mut t = 0u32;
        for (v, len, how) in runs {
            for i in 0..len {
                t += 10_000;
                if t > 3_599_999 {
                    return out;
                }
                let value = match (how, v) {
                    (1, Int(x)) => Int(x.wrapping_add(i as i64 * 3)),
                    (1, Double(d)) => Double(d + i as f64 * 0.01),
                    (2, Int(x)) => Int(x.wrapping_add((i as i64 * 7919) % 13)),
                    _ => v,
                };
                out.push(pt(t, value));
            }
        }
        out
    })
}

proptest! {
    // 256 cases by default; PROPTEST_CASES=N for a deeper run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn prop_round_trip(points in arb_points(400)) {
        check(&points);
    }

    #[test]
    fn prop_round_trip_runs(points in arb_runs()) {
        check(&points);
    }

    #[test]
    fn prop_from_cell_then_push(points in arb_points(300), split in 0usize..300) {
        let split = split.min(points.len());
        let mut cell = Vec::new();
        encode_cell(&points[..split], &mut cell).unwrap();
        let mut c = Chunk::from_cell(&cell).unwrap();
        for p in &points[split..] {
            c.push(*p).unwrap();
        }
        let mut got = Vec::new();
        c.decode(&mut got).unwrap();
        prop_assert!(same_points(&points, &got));
        let mut a = Vec::new();
        c.to_cell(&mut a);
        let mut b = Vec::new();
        encode_cell(&points, &mut b).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn prop_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut b = bytes;
        if let Some(f) = b.first_mut() {
            *f = CODEC_ID_V1;
        }
        let mut out = Vec::new();
        let _ = decode_cell(&b, &mut out);
        let _ = for_each_point(&b, |_, _| {});
        let _ = Chunk::from_cell(&b);
    }
}

/// Encodes `pts` as one block and returns the state it leaves: which class,
/// transform and flag modes the encoder chose.
fn modes_of(pts: &[DecodedPoint], unit: i64) -> block::State {
    let mut enc = encode::Encoder::new(unit);
    enc.encode_block(pts, &mut Vec::new());
    enc.st
}

#[test]
fn encoder_picks_each_mode() {
    use block::*;
    use encode::Encoder;
    let mut rng = Rng(21);
    let params = |st: State| st.params.unwrap();

    let cpu = cpu_series(&mut rng, 0, 10_000, 128);
    let st = modes_of(&cpu, 1000);
    assert_eq!(params(st).class, CLASS_DEC0 + 2);
    assert_eq!(params(st).transform, TR_DELTA);
    assert_eq!((st.kind_mode, st.ms_mode), (K_DEFAULT, MS_DERIVED));

    // A walk with steps up to ±2.00: 401 delta values, packed in base 401
    // three to a 26-bit word instead of 9 bits each.
    let mut c = 5000i64;
    let pct: Vec<_> = (0..128)
        .map(|i| {
            c = (c + (rng.next() % 401) as i64 - 200).clamp(0, 10_000);
            pt(i * 10_000, super::measure::classify(c as f64 / 100.0))
        })
        .collect();
    let p = params(modes_of(&pct, 1000));
    assert!(p.radix > 300 && p.width == 0, "{p:?}");
    check(&pct);
    // Counter increments 0..=100: base 101.
    let mut v = 0i64;
    let incs: Vec<_> = (0..128)
        .map(|i| {
            v += (rng.next() % 101) as i64;
            pt(i * 10_000, Int(v))
        })
        .collect();
    assert!(params(modes_of(&incs, 1000)).radix > 90);
    check(&incs);

    let counter: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Int(5 + 3 * i64::from(i))))
        .collect();
    let st = modes_of(&counter, 1000);
    assert_eq!(
        (params(st).class, params(st).transform, params(st).width),
        (CLASS_INT, TR_DELTA_FOR, 0)
    );

    let accel: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Int(i64::from(i * i) * 1000)))
        .collect();
    assert_eq!(params(modes_of(&accel, 1000)).transform, TR_DOD_FOR);

    let level: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Int(1_000_000 + (rng.next() % 16) as i64)))
        .collect();
    assert_eq!(params(modes_of(&level, 1000)).transform, TR_FOR);

    let raw: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Double(f64::from_bits(rng.next()))))
        .collect();
    assert_eq!(params(modes_of(&raw, 1000)).class, CLASS_RAW);

    // Non-decimal doubles that change now and then: XOR's repeats cost a bit.
    let steps: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Double(f64::from(i / 8 + 1) / 3.0)))
        .collect();
    assert_eq!(params(modes_of(&steps, 1000)).class, CLASS_XOR);

    // Telegraf: integral values are Ints.
    let tele: Vec<_> = (0..128)
        .map(|i| {
            let c = (rng.next() % 1000) as i64;
            pt(
                i * 1000,
                if c % 10 == 0 {
                    Int(c / 10)
                } else {
                    Double(c as f64 / 10.0)
                },
            )
        })
        .collect();
    assert_eq!(modes_of(&tele, 1000).kind_mode & 3, IR_INTEGRAL);

    // Ints next to integral Floats: the Int bitmap.
    let map: Vec<_> = (0..128)
        .map(|i| {
            pt(
                i * 1000,
                if i % 2 == 0 {
                    Int(i64::from(i))
                } else {
                    Float(i as f32)
                },
            )
        })
        .collect();
    assert_eq!(modes_of(&map, 1000).kind_mode & 3, IR_MAP);

    // Doubles that are exact f32s next to Floats that are not: explicit kinds.
    let explicit: Vec<_> = (0..128)
        .map(|i| {
            pt(
                i * 1000,
                match i % 3 {
                    0 => Double(f64::from(i) + 0.5),
                    1 => Float(f64::from(i) as f32 + 0.1),
                    _ => Int(i64::from(i)),
                },
            )
        })
        .collect();
    assert_eq!(modes_of(&explicit, 1000).kind_mode & 3, IR_EXPLICIT);

    // Written through a double API: 0.5 stays a Double.
    let doubles: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Double(f64::from(i % 4) * 0.5)))
        .collect();
    assert_eq!(modes_of(&doubles, 1000).kind_mode >> 2, FR_DOUBLE);
    let floats: Vec<_> = (0..128)
        .map(|i| pt(i * 1000, Float(0.1 * i as f32)))
        .collect();
    assert_eq!(modes_of(&floats, 1000).kind_mode >> 2, FR_FLOAT);

    // ms flags.
    let all_ms: Vec<_> = (0..128)
        .map(|i| DecodedPoint {
            offset_ms: i * 1000,
            ms: true,
            value: Int(1),
        })
        .collect();
    assert_eq!(modes_of(&all_ms, 1000).ms_mode, MS_ALL);
    let some_ms: Vec<_> = (0..128)
        .map(|i| DecodedPoint {
            offset_ms: i * 1000,
            ms: i % 3 == 0,
            value: Int(1),
        })
        .collect();
    assert_eq!(modes_of(&some_ms, 1000).ms_mode, MS_MAP);

    // Timestamp modes: regular, jittered (delta FOR), accelerating (dod).
    let mut t = 0;
    let jitter: Vec<_> = (0..128)
        .map(|_| {
            t += 9_990 + (rng.next() % 20) as u32;
            pt(t, Int(0))
        })
        .collect();
    let mut enc = Encoder::new(1);
    let mut out = Vec::new();
    enc.encode_block(&jitter, &mut out);
    assert_eq!(out[0] & 3, TS_DELTA);
    let mut t = 0;
    let accel_t: Vec<_> = (0..128u32)
        .map(|i| {
            t += 1000 + i * 10;
            pt(t, Int(0))
        })
        .collect();
    let mut enc = Encoder::new(1);
    let mut out = Vec::new();
    enc.encode_block(&accel_t, &mut out);
    assert_eq!(out[0] & 3, TS_DOD);
}

#[test]
fn spikes_are_overrides() {
    // 128 zeros with three spikes: far below a byte per point.
    let mut pts: Vec<_> = (0..1280).map(|i| pt(i * 1000, Int(0))).collect();
    for i in (0..1280).step_by(47) {
        pts[i].value = Int(90 + i as i64 % 7);
    }
    let cell = check(&pts);
    assert!(cell.len() < 1280 / 8, "{} bytes", cell.len());
    let mut pts: Vec<_> = (0..1280).map(|i| pt(i * 1000, Float(0.0))).collect();
    for i in (0..1280).step_by(61) {
        pts[i].value = Double(3.17 + i as f64);
    }
    let cell = check(&pts);
    assert!(cell.len() < 1280 / 8, "{} bytes", cell.len());
}
