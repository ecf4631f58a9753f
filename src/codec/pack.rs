//! Packing a row of OpenTSDB cells on a shared store: one cell per point,
//! as OpenTSDB writes them, become one packed cell (§1.6), by a rewrite
//! that deletes exactly the cells it read, so a point another node writes
//! into the row meanwhile survives as a cell of its own.
//!
//! The same rewrite drops points (deletes): it keeps the points `keep`
//! accepts. Packed qualifiers are bounded ([`MAX_QUALIFIER`]), so an hour
//! of millisecond points becomes several packed cells rather than one that
//! Bigtable would refuse.

use super::cell::{DecodedPoint, encode_packed_cell};
use super::row::{CellKind, RowError, classify, decode_opentsdb};
use crate::codec::column::{Cell, family};

/// Largest packed qualifier written (Bigtable refuses qualifiers over
/// 16 KiB; HBase allows more).
pub const MAX_QUALIFIER: usize = 16 * 1024 - 64;

/// The cells a rewrite writes and the columns (family byte and qualifier)
/// it deletes, all in one row mutation.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewrite {
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
    pub deletes: Vec<Vec<u8>>,
}

/// Packs the OpenTSDB cells of one row, keeping the points whose offset
/// (ms into the hour) `keep` accepts. Returns `None` when nothing would
/// change (already one packed cell, or no point to drop). Cells of other
/// kinds (annotations, native cells, other families) are left alone.
pub fn repack(cells: &[Cell], keep: impl Fn(u32) -> bool) -> Result<Option<Rewrite>, RowError> {
    let old: Vec<&Cell> = cells
        .iter()
        .filter(|c| matches!(classify(&c.column, &c.value), CellKind::OpenTsdb { .. }))
        .collect();
    if old.is_empty() {
        return Ok(None);
    }
    let all = decode_opentsdb(cells)?;
    let points: Vec<DecodedPoint> = all.iter().copied().filter(|p| keep(p.offset_ms)).collect();
    if old.len() == 1 && points.len() == all.len() {
        return Ok(None);
    }
    let mut new: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let mut width = 0;
        let mut end = start;
        while end < points.len() {
            let w = if points[end].ms { 4 } else { 2 };
            if width + w > MAX_QUALIFIER {
                break;
            }
            width += w;
            end += 1;
        }
        let (q, v) = encode_packed_cell(&points[start..end]);
        let mut column = Vec::with_capacity(q.len() + 1);
        column.push(family::DATA);
        column.extend_from_slice(&q);
        new.push((column, v));
        start = end;
    }
    let deletes: Vec<Vec<u8>> = old
        .iter()
        .filter(|c| !new.iter().any(|(col, _)| *col == c.column))
        .map(|c| c.column.clone())
        .collect();
    let puts: Vec<(Vec<u8>, Vec<u8>)> = new
        .into_iter()
        .filter(|(col, v)| !old.iter().any(|c| c.column == *col && c.value[..] == v[..]))
        .collect();
    if puts.is_empty() && deletes.is_empty() {
        return Ok(None);
    }
    Ok(Some(Rewrite { puts, deletes }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::codec::StoredValue;
    use crate::codec::cell::encode_packed_cell;

    fn point(offset_ms: u32, ms: bool, v: i64) -> DecodedPoint {
        DecodedPoint {
            offset_ms,
            ms,
            value: StoredValue::Int(v),
        }
    }

    fn cell_of(points: &[DecodedPoint]) -> Cell {
        let (q, v) = encode_packed_cell(points);
        let mut column = vec![family::DATA];
        column.extend_from_slice(&q);
        Cell {
            column,
            value: v.into(),
        }
    }

    /// The row after a rewrite, as a store applies it.
    fn apply(cells: &[Cell], r: &Rewrite) -> Vec<Cell> {
        let mut out: Vec<Cell> = cells
            .iter()
            .filter(|c| !r.deletes.contains(&c.column))
            .cloned()
            .collect();
        for (col, v) in &r.puts {
            out.retain(|c| c.column != *col);
            out.push(Cell {
                column: col.clone(),
                value: v.clone().into(),
            });
        }
        out.sort_by(|a, b| a.column.cmp(&b.column));
        out
    }

    #[test]
    fn single_cells_become_one_packed_cell_and_are_deleted() {
        let cells: Vec<Cell> = (0..5)
            .map(|i| cell_of(&[point(i * 10_000, false, i as i64)]))
            .collect();
        let r = repack(&cells, |_| true).unwrap().unwrap();
        assert_eq!(r.puts.len(), 1);
        assert_eq!(r.deletes.len(), 5);
        let after = apply(&cells, &r);
        assert_eq!(after.len(), 1);
        assert_eq!(
            decode_opentsdb(&after).unwrap(),
            decode_opentsdb(&cells).unwrap()
        );
        // Packing a packed row again changes nothing.
        assert_eq!(repack(&after, |_| true).unwrap(), None);
    }

    #[test]
    fn a_point_written_during_the_packing_survives_it() {
        let read: Vec<Cell> = (0..3)
            .map(|i| cell_of(&[point(i * 1000, false, 1)]))
            .collect();
        let r = repack(&read, |_| true).unwrap().unwrap();
        // Another node wrote offset 7 s between the read and the rewrite.
        let mut now = read.clone();
        now.push(cell_of(&[point(7000, false, 9)]));
        let after = apply(&now, &r);
        let pts = decode_opentsdb(&after).unwrap();
        assert_eq!(pts.len(), 4);
        assert!(pts.contains(&point(7000, false, 9)));
    }

    #[test]
    fn a_single_cell_rewritten_after_packing_wins_over_the_packed_one() {
        let packed = cell_of(&[point(0, false, 1), point(1000, false, 2)]);
        let newer = cell_of(&[point(1000, false, 5)]);
        let cells = vec![packed, newer];
        let pts = decode_opentsdb(&cells).unwrap();
        assert_eq!(pts, vec![point(0, false, 1), point(1000, false, 5)]);
        let after = apply(&cells, &repack(&cells, |_| true).unwrap().unwrap());
        assert_eq!(decode_opentsdb(&after).unwrap(), pts);
    }

    #[test]
    fn deletes_keep_only_accepted_points() {
        let cells = vec![cell_of(&[
            point(0, false, 1),
            point(1000, false, 2),
            point(2000, false, 3),
        ])];
        let r = repack(&cells, |o| o != 1000).unwrap().unwrap();
        let after = apply(&cells, &r);
        assert_eq!(
            decode_opentsdb(&after).unwrap(),
            vec![point(0, false, 1), point(2000, false, 3)]
        );
        // Dropping every point deletes the cells and writes none.
        let r = repack(&cells, |_| false).unwrap().unwrap();
        assert!(r.puts.is_empty());
        assert!(apply(&cells, &r).is_empty());
        // Nothing to drop: nothing to do.
        assert_eq!(repack(&cells, |o| o < 5000).unwrap(), None);
    }

    #[test]
    fn long_millisecond_rows_split_under_the_qualifier_limit() {
        let points: Vec<DecodedPoint> = (0..10_000)
            .map(|i| point(i * 100, true, i as i64))
            .collect();
        let cells: Vec<Cell> = points.iter().map(|p| cell_of(&[*p])).collect();
        let r = repack(&cells, |_| true).unwrap().unwrap();
        assert!(r.puts.len() > 1);
        assert!(r.puts.iter().all(|(c, _)| c.len() - 1 <= MAX_QUALIFIER));
        let after = apply(&cells, &r);
        assert_eq!(decode_opentsdb(&after).unwrap(), points);
    }

    #[test]
    fn annotations_and_other_cells_are_left_alone() {
        let note = Cell {
            column: vec![family::DATA, 0x01, 0, 0],
            value: b"{}".to_vec().into(),
        };
        let cells = vec![
            note.clone(),
            cell_of(&[point(0, false, 1)]),
            cell_of(&[point(1000, false, 2)]),
        ];
        let r = repack(&cells, |_| true).unwrap().unwrap();
        assert!(!r.deletes.contains(&note.column));
        assert!(apply(&cells, &r).contains(&note));
    }

    proptest! {
        /// Against a model: the rewritten row reads back as the kept
        /// points of the original row, and every deleted column was read.
        #[test]
        fn rewrite_matches_the_model(
            cells in proptest::collection::vec(
                proptest::collection::btree_map(0u32..3600, -1000i64..1000, 1..20), 1..6),
            cut in 0u32..3600,
        ) {
            // A store holds one cell per column: a later one replaces it.
            let mut by_column = std::collections::BTreeMap::new();
            for m in &cells {
                let pts: Vec<DecodedPoint> = m.iter().map(|(&s, &v)| point(s * 1000, false, v)).collect();
                let c = cell_of(&pts);
                by_column.insert(c.column.clone(), c);
            }
            let cells: Vec<Cell> = by_column.into_values().collect();
            let before = decode_opentsdb(&cells).unwrap();
            let keep = |o: u32| o / 1000 < cut;
            let want: Vec<DecodedPoint> = before.iter().copied().filter(|p| keep(p.offset_ms)).collect();
            let after = match repack(&cells, keep).unwrap() {
                Some(r) => {
                    for d in &r.deletes {
                        prop_assert!(cells.iter().any(|c| c.column == *d));
                    }
                    apply(&cells, &r)
                }
                None => cells.clone(),
            };
            prop_assert_eq!(decode_opentsdb(&after).unwrap(), want);
            // At most 120 points: one packed cell (or none) is left.
            prop_assert!(after.len() <= 1);
        }
    }
}
