//! Fuzz target: cell decoding of untrusted bytes — the native codec
//! (`codec::native`) and OpenTSDB's packed cells (`codec::cell`) — must never
//! panic or allocate beyond what the input justifies, and whatever decodes
//! must survive a native round trip bit for bit. The first input byte picks
//! the mode:
//!
//! * 0: native `decode_cell` / `for_each_point` / `decode_columns` /
//!   `cell_summary` / `Chunk::from_cell` on the rest, codec id forced to
//!   0x01, or to 0x02 when the mode byte has bit 2 set (mode 4);
//! * 1: the same on the rest as is (any codec id), and the rest read as a
//!   rollup tier value and as a tier row (`TierValue::decode`,
//!   `TierRow::decode`): what decodes re-encodes to the same value;
//! * 2: OpenTSDB `decode_cell` on the rest split into qualifier and value,
//!   and `decode_rollup_cell` on the same split;
//! * 3: the rest read as a list of points: `encode_cell` → `decode_cell` and
//!   `Chunk` pushes must give back exactly those points, the cell's
//!   summary must be those points' aggregates, and their tier value must
//!   come back bit for bit.
#![no_main]

use hourglass::codec::StoredValue;
use hourglass::codec::cell::{DecodedPoint, decode_cell as tsdb_decode_cell};
use hourglass::codec::native::{
    CellSummary, Chunk, NativeError, TierRow, TierValue, cell_point_count, cell_summary,
    decode_cell, decode_columns, encode_cell, for_each_point,
};
use hourglass::codec::rollup_cell::{decode_rollup_cell, rollup_qualifier};
use libfuzzer_sys::fuzz_target;

fn same_value(a: StoredValue, b: StoredValue) -> bool {
    match (a, b) {
        (StoredValue::Int(x), StoredValue::Int(y)) => x == y,
        (StoredValue::Float(x), StoredValue::Float(y)) => x.to_bits() == y.to_bits(),
        (StoredValue::Double(x), StoredValue::Double(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

fn same_summary(a: Option<CellSummary>, b: Option<CellSummary>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.valid == b.valid
                && [a.min, a.max, a.sum, a.first, a.last]
                    .iter()
                    .zip([b.min, b.max, b.sum, b.first, b.last])
                    .all(|(x, y)| x.to_bits() == y.to_bits())
        }
        (a, b) => a.is_none() && b.is_none(),
    }
}

fn same_tier_value(a: &TierValue, b: &TierValue) -> bool {
    let bits = |v: &TierValue| {
        [
            v.partial.min,
            v.partial.max,
            v.partial.sum,
            v.partial.first.unwrap_or(0.0),
            v.partial.last.unwrap_or(0.0),
        ]
        .map(f64::to_bits)
    };
    a.points == b.points && a.partial.valid == b.partial.valid && bits(a) == bits(b)
}

/// A tier value and a tier row of untrusted bytes: no panic; what decodes
/// re-encodes to itself.
fn tier_value(bytes: &[u8]) {
    if let Ok(v) = TierValue::decode(bytes) {
        let mut again = Vec::new();
        v.encode(&mut again);
        let back = TierValue::decode(&again).expect("a value we wrote decodes");
        assert!(same_tier_value(&v, &back), "tier value round trip");
    }
    if let Ok(row) = TierRow::decode(bytes) {
        let back = TierRow::decode(&row.encode()).expect("a row we wrote decodes");
        assert_eq!(back.values.len(), row.values.len(), "tier row round trip");
        for ((i, a), (j, b)) in row.values.iter().zip(&back.values) {
            assert!(i == j && same_tier_value(a, b), "tier row round trip");
        }
    }
}

fn same_points(a: &[DecodedPoint], b: &[DecodedPoint]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.offset_ms == y.offset_ms && x.ms == y.ms && same_value(x.value, y.value)
        })
}

/// Encodes `points` and checks every decoder and the chunk give them back.
fn round_trip(points: &[DecodedPoint]) {
    let mut cell = Vec::new();
    if encode_cell(points, &mut cell).is_err() {
        // Unsorted or out of the hour: nothing may have been written.
        assert!(cell.is_empty());
        return;
    }
    let mut back = Vec::new();
    decode_cell(&cell, &mut back).expect("a cell we wrote decodes");
    assert!(same_points(points, &back), "round trip changed the points");
    assert!(
        same_summary(
            cell_summary(&cell).expect("a cell we wrote has a readable summary"),
            CellSummary::of(points.iter().map(|p| p.value)),
        ),
        "the summary is not the points' aggregates"
    );
    if let Some(summary) = CellSummary::of(points.iter().map(|p| p.value)) {
        let value = TierValue {
            points: points.len() as u64,
            partial: summary.partial(),
        };
        let mut bytes = Vec::new();
        value.encode(&mut bytes);
        let back = TierValue::decode(&bytes).expect("a tier value we wrote decodes");
        assert!(same_tier_value(&value, &back), "tier value round trip");
    }
    let mut chunk = Chunk::new();
    for p in points {
        chunk.push(*p).expect("sorted points push");
    }
    let mut from_chunk = Vec::new();
    chunk.to_cell(&mut from_chunk);
    assert_eq!(from_chunk, cell, "Chunk::to_cell differs from encode_cell");
    let mut dec = Vec::new();
    chunk.decode(&mut dec).expect("chunk decodes");
    assert!(same_points(points, &dec));
}

fn native(cell: &[u8]) {
    let mut out = Vec::new();
    let res = decode_cell(cell, &mut out);
    // Allocation bound: one header byte covers at most 16 blocks of 128.
    assert!(out.capacity() <= 2048 * cell.len() + 128, "over-allocation");
    let count = cell_point_count(cell);
    let mut visited = 0usize;
    let each = for_each_point(cell, |_, _| visited += 1);
    let (mut offs, mut vals) = (Vec::new(), Vec::new());
    let cols = decode_columns(cell, &mut offs, &mut vals);
    let summary = cell_summary(cell);
    match res {
        Ok(()) => {
            assert_eq!(count, Ok(out.len()));
            // A summary is read, not checked against the points (table
            // files checksum their blocks); it is there exactly when the
            // codec has one and the cell is not empty.
            let summary = summary.expect("a decodable cell has a readable header");
            assert_eq!(summary.is_some(), cell[0] == 0x02 && !out.is_empty());
            assert_eq!(each, Ok(()));
            assert_eq!(visited, out.len());
            assert_eq!(cols, Ok(()));
            assert_eq!(offs.len(), out.len());
            assert!(out.windows(2).all(|w| w[0].offset_ms < w[1].offset_ms));
            assert!(out.iter().all(|p| p.offset_ms < 3_600_000));
            // What decodes re-encodes losslessly.
            round_trip(&out);
            let chunk = Chunk::from_cell(cell).expect("a decodable cell loads");
            let mut again = Vec::new();
            chunk.decode(&mut again).expect("chunk decodes");
            assert!(same_points(&out, &again));
        }
        Err(e) => {
            assert!(out.is_empty(), "points left behind on error");
            assert!(each.is_err() && cols.is_err());
            assert!(offs.is_empty() && vals.is_empty());
            if let NativeError::UnknownCodec(id) = e {
                assert!(id != 0x01 && id != 0x02);
            }
            assert!(Chunk::from_cell(cell).is_err());
        }
    }
}

fn opentsdb(rest: &[u8]) {
    let Some((&qlen, rest)) = rest.split_first() else {
        return;
    };
    let q = usize::from(qlen).min(rest.len());
    let (qualifier, value) = rest.split_at(q);
    let mut out = Vec::new();
    if tsdb_decode_cell(qualifier, value, &mut out).is_ok() {
        // Packed cells may repeat or disorder offsets; encode_cell must
        // reject those and take the rest.
        round_trip(&out);
    }
    // The same bytes as an OpenTSDB rollup cell: what decodes is written
    // back to the same qualifier.
    if let Some(c) = decode_rollup_cell(qualifier, value) {
        let flags = qualifier[2] & 0x0F;
        assert_eq!(
            rollup_qualifier(c.aggregator, c.index, flags),
            qualifier,
            "a rollup qualifier round trip"
        );
    }
}

/// Points from bytes: 11 bytes each — gap (2), flags (1), payload (8).
fn points_from(bytes: &[u8]) -> Vec<DecodedPoint> {
    let mut out = Vec::new();
    let mut t: u32 = 0;
    for (i, c) in bytes.chunks_exact(11).enumerate() {
        let gap = u32::from(u16::from_le_bytes([c[0], c[1]]));
        let flags = c[2];
        let raw = u64::from_le_bytes([c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]]);
        // Regular steps when the gap's top bit is set, so runs form.
        let step = if gap & 0x8000 != 0 { 10_000 } else { gap + 1 };
        t = if i == 0 { gap % 3_600_000 } else { t + step };
        if t >= 3_600_000 {
            break;
        }
        let value = match flags & 7 {
            0 => StoredValue::Int(raw as i64),
            1 => StoredValue::Int((raw as i64) % 1000),
            2 => StoredValue::Float(f32::from_bits(raw as u32)),
            3 => StoredValue::Double(f64::from_bits(raw)),
            4 => StoredValue::Double((raw as i64 % 100_000) as f64 / 100.0),
            5 => StoredValue::Float(((raw as i64 % 10_000) as f32) / 4.0),
            6 => StoredValue::Double(0.0),
            _ => StoredValue::Double((raw % 1000) as f64 / 10.0),
        };
        let derived = t % 1000 != 0;
        let ms = if flags & 0x80 != 0 { !derived } else { derived };
        out.push(DecodedPoint {
            offset_ms: t,
            ms,
            value,
        });
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let mut cell = rest.to_vec();
            let codec = if mode & 4 == 0 { 0x01 } else { 0x02 };
            if let Some(b) = cell.first_mut() {
                *b = codec;
            }
            native(&cell);
        }
        1 => {
            native(rest);
            tier_value(rest);
        }
        2 => opentsdb(rest),
        _ => round_trip(&points_from(rest)),
    }
});
