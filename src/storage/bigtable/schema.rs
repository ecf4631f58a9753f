//! OpenTSDB's schema on Bigtable, and the requests that read and write it.
//!
//! ```text
//! table        Bigtable table            families (GC: 1 version; data: + max age)
//! Data         {prefix}tsdb              t
//! Uid          {prefix}tsdb-uid          id, name
//! Meta         {prefix}tsdb-meta         name
//! ```
//! A store column is one family byte followed by the qualifier
//! ([`crate::storage::family`]); here the byte becomes the family's name.
//! Row keys, qualifiers and values are the bytes the engine hands over,
//! which are OpenTSDB's (byte-exact row keys, one cell per point or packed
//! cells), so OpenTSDB and hourglass can share a table.
//!
//! Cell timestamps: data cells carry the base hour of their row (so a
//! max-age garbage-collection rule expires whole hours, and rewriting a cell
//! is idempotent); UID and index cells carry 0. Every read asks for the
//! newest version only.

use bigtable_rs::google::bigtable::v2::{
    ColumnRange, Mutation as BtMutation, RowFilter, RowRange, RowSet, ValueRange, column_range,
    mutation, row_filter, row_range, value_range,
};

use crate::codec::KeyLayout;
use crate::storage::{Cell, KeyRange, Mutation, StorageError, Table, family};

/// The tables created, in [`Table`] order. Rollup tiers are kept by the
/// embedded store only (`docs/rollups.md`): their table is named but not
/// created.
pub const TABLES: [Table; 3] = [Table::Data, Table::Uid, Table::Meta];

/// Every table, in [`Table`] order.
pub const ALL_TABLES: [Table; 4] = [Table::Data, Table::Uid, Table::Meta, Table::Rollup];

/// Bigtable table id of a table (OpenTSDB's names after the prefix).
pub fn table_id(prefix: &str, table: Table) -> String {
    let base = match table {
        Table::Data => "tsdb",
        Table::Uid => "tsdb-uid",
        Table::Meta => "tsdb-meta",
        Table::Rollup => "hourglass-rollup",
    };
    format!("{prefix}{base}")
}

/// The families a table is created with.
pub fn families(table: Table) -> &'static [&'static str] {
    match table {
        Table::Data => &["t"],
        Table::Uid => &["id", "name"],
        Table::Meta => &["name"],
        Table::Rollup => &["t"],
    }
}

/// The Bigtable family of a store column's family byte.
pub fn family_name(byte: u8) -> Result<&'static str, StorageError> {
    match byte {
        family::DATA => Ok("t"),
        family::ID => Ok("id"),
        family::NAME => Ok("name"),
        other => Err(StorageError::Unsupported(format!(
            "no Bigtable column family for family byte {other:#04x}"
        ))),
    }
}

/// The family byte of a Bigtable family (`None`: not one of ours, its
/// cells are not returned).
pub fn family_byte(name: &str) -> Option<u8> {
    match name {
        "t" => Some(family::DATA),
        "id" => Some(family::ID),
        "name" => Some(family::NAME),
        _ => None,
    }
}

/// Splits a store column into (family name, qualifier).
pub fn split_column(column: &[u8]) -> Result<(&'static str, &[u8]), StorageError> {
    let (&fam, q) = column
        .split_first()
        .ok_or_else(|| StorageError::Unsupported("empty column".into()))?;
    Ok((family_name(fam)?, q))
}

/// The timestamp a cell is written with (microseconds, a multiple of 1000
/// as Bigtable's default granularity requires).
pub fn cell_timestamp(layout: &KeyLayout, table: Table, row: &[u8]) -> i64 {
    match table {
        Table::Data => layout
            .parse_row_key(row)
            .map_or(0, |p| i64::from(p.base_time) * 1_000_000),
        Table::Uid | Table::Meta | Table::Rollup => 0,
    }
}

/// A store mutation as a Bigtable one (same row), at cell time `at` (µs,
/// a multiple of 1000) if given, else [`cell_timestamp`]'s.
pub fn mutation(
    layout: &KeyLayout,
    m: &Mutation,
    at: Option<i64>,
) -> Result<BtMutation, StorageError> {
    let inner = match m {
        Mutation::Put {
            table,
            row,
            column,
            value,
        } => {
            let (fam, q) = split_column(column)?;
            mutation::Mutation::SetCell(mutation::SetCell {
                family_name: fam.to_string(),
                column_qualifier: q.to_vec(),
                timestamp_micros: at.unwrap_or_else(|| cell_timestamp(layout, *table, row)),
                value: value.clone(),
            })
        }
        Mutation::Delete { column, .. } => {
            let (fam, q) = split_column(column)?;
            mutation::Mutation::DeleteFromColumn(mutation::DeleteFromColumn {
                family_name: fam.to_string(),
                column_qualifier: q.to_vec(),
                time_range: None,
            })
        }
    };
    Ok(BtMutation {
        mutation: Some(inner),
    })
}

fn filter(f: row_filter::Filter) -> RowFilter {
    RowFilter { filter: Some(f) }
}

/// The newest version of each cell: every read uses it (cells are written
/// once per timestamp, but a rewrite with another timestamp, or another
/// writer's, may leave an older version until garbage collection).
pub fn latest_only() -> RowFilter {
    filter(row_filter::Filter::CellsPerColumnLimitFilter(1))
}

/// Exactly one column (binary-safe: a closed qualifier range, not a regex).
pub fn column_filter(fam: &str, qualifier: &[u8]) -> RowFilter {
    filter(row_filter::Filter::ColumnRangeFilter(ColumnRange {
        family_name: fam.to_string(),
        start_qualifier: Some(column_range::StartQualifier::StartQualifierClosed(
            qualifier.to_vec(),
        )),
        end_qualifier: Some(column_range::EndQualifier::EndQualifierClosed(
            qualifier.to_vec(),
        )),
    }))
}

/// Cells whose value is exactly `value`.
pub fn value_filter(value: &[u8]) -> RowFilter {
    filter(row_filter::Filter::ValueRangeFilter(ValueRange {
        start_value: Some(value_range::StartValue::StartValueClosed(value.to_vec())),
        end_value: Some(value_range::EndValue::EndValueClosed(value.to_vec())),
    }))
}

/// Filters that must all pass.
pub fn chain(filters: Vec<RowFilter>) -> RowFilter {
    filter(row_filter::Filter::Chain(row_filter::Chain { filters }))
}

/// A store key range as a Bigtable row range (an empty start or end is
/// unbounded).
pub fn row_range(r: &KeyRange) -> RowRange {
    RowRange {
        start_key: (!r.start.is_empty())
            .then(|| row_range::StartKey::StartKeyClosed(r.start.clone())),
        end_key: (!r.end.is_empty()).then(|| row_range::EndKey::EndKeyOpen(r.end.clone())),
    }
}

/// Row set of one range.
pub fn range_set(r: &KeyRange) -> RowSet {
    RowSet {
        row_keys: Vec::new(),
        row_ranges: vec![row_range(r)],
    }
}

/// A cell read back, as a store cell.
pub fn cell(family: &str, qualifier: Vec<u8>, value: Vec<u8>) -> Option<Cell> {
    let byte = family_byte(family)?;
    let mut column = Vec::with_capacity(qualifier.len() + 1);
    column.push(byte);
    column.extend_from_slice(&qualifier);
    Some(Cell {
        column,
        value: value.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_families_follow_opentsdb() {
        assert_eq!(table_id("", Table::Data), "tsdb");
        assert_eq!(table_id("a-", Table::Uid), "a-tsdb-uid");
        assert_eq!(table_id("", Table::Meta), "tsdb-meta");
        for b in [family::DATA, family::ID, family::NAME] {
            let name = family_name(b).unwrap();
            assert_eq!(family_byte(name), Some(b));
        }
        assert!(family_name(b'x').is_err());
        assert_eq!(family_byte("other"), None);
    }

    #[test]
    fn data_cells_carry_their_base_hour() {
        let layout = KeyLayout {
            salt_width: 1,
            salt_buckets: 20,
            metric_width: 3,
            tagk_width: 3,
            tagv_width: 3,
        };
        let key = layout.row_key(&layout.series_key(1, &[(1, 1)]), 1_700_006_400);
        assert_eq!(
            cell_timestamp(&layout, Table::Data, &key),
            1_700_006_400_000_000
        );
        assert_eq!(cell_timestamp(&layout, Table::Uid, b"name"), 0);
        let m = mutation(
            &layout,
            &Mutation::Delete {
                table: Table::Data,
                row: key,
                column: vec![family::DATA, 0, 0x10],
            },
            None,
        )
        .unwrap();
        assert!(matches!(
            m.mutation,
            Some(mutation::Mutation::DeleteFromColumn(d)) if d.family_name == "t" && d.column_qualifier == [0, 0x10]
        ));
    }

    #[test]
    fn ranges_are_half_open_and_empty_bounds_unbounded() {
        let r = row_range(&KeyRange {
            start: vec![1],
            end: vec![],
        });
        assert_eq!(
            r.start_key,
            Some(row_range::StartKey::StartKeyClosed(vec![1]))
        );
        assert_eq!(r.end_key, None);
        let r = row_range(&KeyRange {
            start: vec![],
            end: vec![2],
        });
        assert_eq!(r.start_key, None);
        assert_eq!(r.end_key, Some(row_range::EndKey::EndKeyOpen(vec![2])));
    }
}
