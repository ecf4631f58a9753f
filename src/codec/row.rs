//! The cells of one data row, as the embedded engine writes them and as
//! OpenTSDB writes them, and how they combine into the row's points.
//!
//! ```text
//! native cell   qualifier 0x07 | seq u64 BE     value = native codec cell (codec id first)
//! tombstone     qualifier 0x08 | seq u64 BE     value = from_ms u32 BE | to_ms u32 BE
//! OpenTSDB      even-length qualifiers (single points and packed cells, §1.5–§1.7)
//! annotation    0x01 | offset (3 or 5 bytes; §1.9), kept as is, never points
//! ```
//! Both engine qualifiers have odd length, so an OpenTSDB reader skips them
//! (§1.4). The sequence number is the store write that produced the cell:
//! a row read merges its cells oldest first — OpenTSDB cells (written by
//! another system or on a shared store, so oldest; among them single-point
//! cells win over packed ones, see [`decode_opentsdb`]), then native cells and
//! tombstones by sequence — and a later cell wins on an equal timestamp; a
//! tombstone removes the points of strictly older cells in its offset
//! range. Compaction collapses a row into one native cell stamped with the
//! newest sequence it merged, which keeps that order.

use super::cell::{self, CellError, DecodedPoint, merge_points};
use super::native::{self, NativeError};
use crate::codec::column::{Cell, family};

pub const NATIVE: u8 = 0x07;
pub const TOMBSTONE: u8 = 0x08;
pub const ANNOTATION: u8 = 0x01;

#[derive(Debug, thiserror::Error)]
pub enum RowError {
    #[error(transparent)]
    OpenTsdb(#[from] CellError),
    #[error(transparent)]
    Native(#[from] NativeError),
    #[error("corrupt tombstone cell: {0} bytes (expected 8)")]
    BadTombstone(usize),
}

fn stamped(kind: u8, seq: u64) -> Vec<u8> {
    let mut c = Vec::with_capacity(10);
    c.push(family::DATA);
    c.push(kind);
    c.extend_from_slice(&seq.to_be_bytes());
    c
}

/// Column (family and qualifier) of a native cell written at `seq`.
pub fn native_column(seq: u64) -> Vec<u8> {
    stamped(NATIVE, seq)
}

/// Column of a point tombstone written at `seq`.
pub fn tombstone_column(seq: u64) -> Vec<u8> {
    stamped(TOMBSTONE, seq)
}

/// Value of a tombstone removing offsets `from..=to` (ms into the hour).
pub fn tombstone_value(from_ms: u32, to_ms: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(8);
    v.extend_from_slice(&from_ms.to_be_bytes());
    v.extend_from_slice(&to_ms.to_be_bytes());
    v
}

/// What a data cell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind<'a> {
    Native {
        seq: u64,
        cell: &'a [u8],
    },
    Tombstone {
        seq: u64,
        value: &'a [u8],
    },
    OpenTsdb {
        qualifier: &'a [u8],
        value: &'a [u8],
    },
    Annotation,
    /// Not a data cell of any kind known here (other families, OpenTSDB's
    /// appends and histograms): not points.
    Other,
}

/// Classifies a cell by its column (family byte ‖ qualifier).
pub fn classify<'a>(column: &'a [u8], value: &'a [u8]) -> CellKind<'a> {
    let Some((&fam, q)) = column.split_first() else {
        return CellKind::Other;
    };
    if fam != family::DATA {
        return CellKind::Other;
    }
    let seq = |q: &[u8]| {
        q.get(1..9)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    };
    match q.first() {
        Some(&NATIVE) if q.len() == 9 => match seq(q) {
            Some(seq) => CellKind::Native { seq, cell: value },
            None => CellKind::Other,
        },
        Some(&TOMBSTONE) if q.len() == 9 => match seq(q) {
            Some(seq) => CellKind::Tombstone { seq, value },
            None => CellKind::Other,
        },
        Some(&ANNOTATION) if q.len() % 2 == 1 => CellKind::Annotation,
        Some(_) if q.len() % 2 == 0 => CellKind::OpenTsdb {
            qualifier: q,
            value,
        },
        _ => CellKind::Other,
    }
}

fn tombstone_range(value: &[u8]) -> Result<(u32, u32), RowError> {
    let b: [u8; 8] = value
        .try_into()
        .map_err(|_| RowError::BadTombstone(value.len()))?;
    Ok((
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    ))
}

/// The points of a row's OpenTSDB cells, sorted by offset with one point
/// per offset. Packed cells are read first, in column order, then
/// single-point cells, which win on an equal offset: a packing always
/// deletes the single cells it packed, so a single cell next to a packed
/// one was written after that packing (a point rewritten since).
pub fn decode_opentsdb(cells: &[Cell]) -> Result<Vec<DecodedPoint>, RowError> {
    let (mut packed, mut single) = (Vec::new(), Vec::new());
    for c in cells {
        if let CellKind::OpenTsdb { qualifier, value } = classify(&c.column, &c.value) {
            let out = if cell::is_single(qualifier) {
                &mut single
            } else {
                &mut packed
            };
            cell::decode_cell(qualifier, value, out)?;
        }
    }
    Ok(match (packed.is_empty(), single.is_empty()) {
        (true, true) => Vec::new(),
        _ => merge_points(&packed, &single),
    })
}

/// Appends the points of a row's cells to `out`, sorted by offset with one
/// point per offset (the newest write wins), tombstones applied. Returns the
/// highest sequence number among the engine's cells (0 if none).
pub fn decode_row(cells: &[Cell], out: &mut Vec<DecodedPoint>) -> Result<u64, RowError> {
    // The common case: one native cell.
    if let [c] = cells
        && let CellKind::Native { seq, cell } = classify(&c.column, &c.value)
    {
        native::decode_cell(cell, out)?;
        return Ok(seq);
    }
    let mut layers: Vec<(u64, u8, &Cell)> = Vec::new();
    for c in cells {
        match classify(&c.column, &c.value) {
            // Tombstones sort before native cells of the same sequence: they
            // remove strictly older points only.
            CellKind::Native { seq, .. } => layers.push((seq, 1, c)),
            CellKind::Tombstone { seq, .. } => layers.push((seq, 0, c)),
            CellKind::OpenTsdb { .. } | CellKind::Annotation | CellKind::Other => {}
        }
    }
    let mut acc = decode_opentsdb(cells)?;
    layers.sort_by_key(|&(seq, kind, _)| (seq, kind));
    let mut max_seq = 0;
    let mut pts = Vec::new();
    for (seq, _, c) in layers {
        max_seq = max_seq.max(seq);
        match classify(&c.column, &c.value) {
            CellKind::Native { cell, .. } => {
                pts.clear();
                native::decode_cell(cell, &mut pts)?;
                acc = if acc.is_empty() {
                    std::mem::take(&mut pts)
                } else {
                    merge_points(&acc, &pts)
                };
            }
            CellKind::Tombstone { value, .. } => {
                let (from, to) = tombstone_range(value)?;
                acc.retain(|p| p.offset_ms < from || p.offset_ms > to);
            }
            _ => {}
        }
    }
    out.extend_from_slice(&acc);
    Ok(max_seq)
}

/// Collapses a row's cells into at most one native cell (stamped with the
/// newest sequence merged) plus its annotation cells, unchanged. A row with
/// neither points nor annotations becomes empty.
pub fn compact_row(cells: Vec<Cell>) -> Result<Vec<Cell>, RowError> {
    let needs = cells
        .iter()
        .filter(|c| {
            !matches!(
                classify(&c.column, &c.value),
                CellKind::Annotation | CellKind::Other
            )
        })
        .count();
    let single_native = cells.iter().all(|c| {
        matches!(
            classify(&c.column, &c.value),
            CellKind::Native { .. } | CellKind::Annotation | CellKind::Other
        )
    });
    if needs <= 1 && single_native {
        return Ok(cells);
    }
    let mut points = Vec::new();
    let seq = decode_row(&cells, &mut points)?;
    let mut out: Vec<Cell> = cells
        .into_iter()
        .filter(|c| {
            matches!(
                classify(&c.column, &c.value),
                CellKind::Annotation | CellKind::Other
            )
        })
        .collect();
    if !points.is_empty() {
        let mut value = Vec::with_capacity(points.len() + 16);
        native::encode_cell(&points, &mut value)?;
        out.push(Cell {
            column: native_column(seq),
            value: value.into(),
        });
    }
    out.sort_by(|a, b| a.column.cmp(&b.column));
    Ok(out)
}

/// `(codec id, points)` of a data cell, for table-file statistics; OpenTSDB
/// cells count as codec 0.
pub fn cell_stats(column: &[u8], value: &[u8]) -> Option<(u8, u64)> {
    match classify(column, value) {
        CellKind::Native { cell, .. } => {
            let n = native::cell_point_count(cell).ok()?;
            Some((cell.first().copied().unwrap_or(0), n as u64))
        }
        CellKind::OpenTsdb { qualifier, .. } => {
            let mut n = 0u64;
            let mut i = 0;
            while i < qualifier.len() {
                i += if super::qualifier::is_ms(qualifier[i]) {
                    4
                } else {
                    2
                };
                n += 1;
            }
            Some((0, n))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::StoredValue;

    fn p(offset_s: u32, v: i64) -> DecodedPoint {
        DecodedPoint {
            offset_ms: offset_s * 1000,
            ms: false,
            value: StoredValue::Int(v),
        }
    }

    fn native(seq: u64, pts: &[DecodedPoint]) -> Cell {
        let mut v = Vec::new();
        native::encode_cell(pts, &mut v).unwrap();
        Cell {
            column: native_column(seq),
            value: v.into(),
        }
    }

    fn tomb(seq: u64, from_s: u32, to_s: u32) -> Cell {
        Cell {
            column: tombstone_column(seq),
            value: tombstone_value(from_s * 1000, to_s * 1000).into(),
        }
    }

    fn otsdb(pts: &[DecodedPoint]) -> Cell {
        let (q, v) = cell::encode_packed_cell(pts);
        let mut column = vec![family::DATA];
        column.extend_from_slice(&q);
        Cell {
            column,
            value: v.into(),
        }
    }

    fn decode(cells: &[Cell]) -> Vec<DecodedPoint> {
        let mut out = Vec::new();
        decode_row(cells, &mut out).unwrap();
        out
    }

    #[test]
    fn later_cells_win_and_tombstones_remove_older_points() {
        let cells = vec![
            otsdb(&[p(0, 1), p(1, 1), p(2, 1)]),
            native(5, &[p(1, 5), p(3, 5)]),
            tomb(6, 0, 1),
            native(7, &[p(0, 7)]),
        ];
        // Column order is not write order: shuffle.
        let mut shuffled = cells.clone();
        shuffled.reverse();
        let want = vec![p(0, 7), p(2, 1), p(3, 5)];
        assert_eq!(decode(&cells), want);
        assert_eq!(decode(&shuffled), want);
        // Compaction keeps exactly what a read returns, in one cell.
        let compacted = compact_row(shuffled).unwrap();
        assert_eq!(compacted.len(), 1);
        assert_eq!(compacted[0].column, native_column(7));
        assert_eq!(decode(&compacted), want);
    }

    #[test]
    fn annotations_survive_compaction_and_empty_rows_vanish() {
        let ann = Cell {
            column: vec![family::DATA, ANNOTATION, 0, 0x7B],
            value: bytes::Bytes::from_static(b"{\"description\":\"x\"}"),
        };
        let out = compact_row(vec![native(1, &[p(5, 1)]), tomb(2, 0, 3599), ann.clone()]).unwrap();
        assert_eq!(out, vec![ann.clone()]);
        assert!(
            compact_row(vec![native(1, &[p(5, 1)]), tomb(2, 0, 3599)])
                .unwrap()
                .is_empty()
        );
        // A single native cell is left as it is.
        let one = vec![native(3, &[p(1, 1)])];
        assert_eq!(compact_row(one.clone()).unwrap(), one);
    }

    #[test]
    fn unknown_codec_is_an_error_not_skipped() {
        let mut c = native(1, &[p(1, 1)]);
        let mut v = c.value.to_vec();
        v[0] = 0x7E;
        c.value = v.into();
        assert!(decode_row(&[c], &mut Vec::new()).is_err());
        let bad_tomb = Cell {
            column: tombstone_column(1),
            value: bytes::Bytes::from_static(&[1, 2]),
        };
        assert!(decode_row(&[native(0, &[p(1, 1)]), bad_tomb], &mut Vec::new()).is_err());
    }

    #[test]
    fn stats() {
        let n = native(1, &[p(1, 1), p(2, 2)]);
        assert_eq!(
            cell_stats(&n.column, &n.value),
            Some((native::CODEC_ID_V2, 2))
        );
        let o = otsdb(&[p(1, 1), p(2, 2), p(3, 3)]);
        assert_eq!(cell_stats(&o.column, &o.value), Some((0, 3)));
        let t = tomb(1, 0, 1);
        assert_eq!(cell_stats(&t.column, &t.value), None);
    }
}
