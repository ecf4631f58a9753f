//! Reassembling rows from a `ReadRows` stream. Bigtable sends cells as
//! chunks that may split a row (and a cell's value) across response
//! messages; a row is complete at its `commit_row` chunk and discarded at
//! a `reset_row`. The assembler keeps its state across messages, checks
//! the protocol's rules, and yields complete rows as store cells sorted by
//! column. [`RowsReader`] runs one `ReadRows` call through it.

use bigtable_rs::google::bigtable::v2::read_rows_response::CellChunk;
use bigtable_rs::google::bigtable::v2::read_rows_response::cell_chunk::RowStatus;

use bigtable_rs::bigtable::BigTable;
use bigtable_rs::google::bigtable::v2::{ReadRowsRequest, ReadRowsResponse};

use super::rpc::{client_error, request, status_error};
use super::schema;
use crate::storage::{Cell, Result};

/// A row as read: key and cells, sorted by column.
pub type Row = (Vec<u8>, Vec<Cell>);

#[derive(Debug, Default)]
pub struct RowAssembler {
    key: Option<Vec<u8>>,
    family: Option<String>,
    qualifier: Option<Vec<u8>>,
    /// A cell whose value continues in the next chunk.
    partial: Option<Vec<u8>>,
    cells: Vec<Cell>,
    /// The last committed key: rows must arrive in increasing key order.
    last_key: Option<Vec<u8>>,
}

impl RowAssembler {
    /// Feeds one message's chunks; appends the rows they complete.
    pub fn push(&mut self, chunks: Vec<CellChunk>, out: &mut Vec<Row>) -> Result<(), String> {
        for c in chunks {
            self.chunk(c, out)?;
        }
        Ok(())
    }

    /// True if no row is half read (the stream may end here).
    pub fn is_idle(&self) -> bool {
        self.key.is_none() && self.partial.is_none()
    }

    fn chunk(&mut self, c: CellChunk, out: &mut Vec<Row>) -> Result<(), String> {
        if let Some(RowStatus::ResetRow(true)) = c.row_status {
            if !c.row_key.is_empty() || c.family_name.is_some() || c.qualifier.is_some() {
                return Err("reset_row chunk carries cell data".into());
            }
            *self = RowAssembler {
                last_key: self.last_key.take(),
                ..RowAssembler::default()
            };
            return Ok(());
        }
        if self.partial.is_none() {
            // The start of a cell.
            if !c.row_key.is_empty() && self.key.as_ref() == Some(&c.row_key) {
                // The row's key repeated on a later cell (the emulator
                // does this): still the same row.
            } else if !c.row_key.is_empty() {
                if self.key.is_some() {
                    return Err("new row key before the previous row was committed".into());
                }
                if self.last_key.as_ref().is_some_and(|k| *k >= c.row_key) {
                    return Err("row keys out of order".into());
                }
                self.key = Some(c.row_key);
                self.family = None;
                self.qualifier = None;
            } else if self.key.is_none() {
                return Err("cell chunk without a row key".into());
            }
            if let Some(f) = c.family_name {
                if c.qualifier.is_none() {
                    return Err("family changed without a qualifier".into());
                }
                self.family = Some(f);
            }
            if let Some(q) = c.qualifier {
                self.qualifier = Some(q);
            }
            if self.family.is_none() || self.qualifier.is_none() {
                return Err("cell without a family or qualifier".into());
            }
            self.partial = Some(Vec::with_capacity(c.value_size.max(0) as usize));
        } else if (!c.row_key.is_empty() && self.key.as_ref() != Some(&c.row_key))
            || c.family_name.is_some()
            || c.qualifier.is_some()
        {
            return Err("a split cell's continuation names a new cell".into());
        }
        if let Some(v) = self.partial.as_mut() {
            v.extend_from_slice(&c.value);
        }
        if c.value_size == 0 {
            // The cell is complete.
            let value = self.partial.take().unwrap_or_default();
            if let (Some(f), Some(q)) = (&self.family, &self.qualifier)
                && let Some(cell) = schema::cell(f, q.clone(), value)
            {
                // Newest version first: keep only the first of a column.
                if self.cells.last().is_none_or(|l| l.column != cell.column) {
                    self.cells.push(cell);
                }
            }
        }
        if let Some(RowStatus::CommitRow(true)) = c.row_status {
            if self.partial.is_some() {
                return Err("row committed inside a split cell".into());
            }
            let Some(key) = self.key.take() else {
                return Err("commit without a row".into());
            };
            let mut cells = std::mem::take(&mut self.cells);
            // Families arrive in any order; columns sort by family byte.
            cells.sort_by(|a, b| a.column.cmp(&b.column));
            cells.dedup_by(|a, b| a.column == b.column);
            self.last_key = Some(key.clone());
            self.family = None;
            self.qualifier = None;
            out.push((key, cells));
        }
        Ok(())
    }
}

/// One `ReadRows` call, its responses assembled into rows.
pub struct RowsReader {
    stream: tonic::Streaming<ReadRowsResponse>,
    rows: RowAssembler,
}

impl RowsReader {
    pub async fn open(
        mut client: BigTable,
        req: ReadRowsRequest,
        profile: &str,
        timeout: std::time::Duration,
    ) -> Result<Self> {
        let name = req.table_name.clone();
        let stream = client
            .get_client()
            .read_rows(request(req, &name, profile, timeout))
            .await
            .map_err(|s| status_error("read", &s))?
            .into_inner();
        Ok(Self {
            stream,
            rows: RowAssembler::default(),
        })
    }

    /// Appends to `out` the rows the next response completes; false once the
    /// stream has ended (an error if it ended inside a row).
    pub async fn next_rows(&mut self, out: &mut Vec<Row>) -> Result<bool> {
        match self
            .stream
            .message()
            .await
            .map_err(|s| status_error("read", &s))?
        {
            Some(msg) => {
                self.rows
                    .push(msg.chunks, out)
                    .map_err(|e| client_error("malformed ReadRows response", e, true))?;
                Ok(true)
            }
            None if self.rows.is_idle() => Ok(false),
            None => Err(client_error("ReadRows", "stream ended inside a row", true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(key: &[u8], fam: Option<&str>, q: Option<&[u8]>, v: &[u8]) -> CellChunk {
        CellChunk {
            row_key: key.to_vec(),
            family_name: fam.map(str::to_string),
            qualifier: q.map(<[u8]>::to_vec),
            value: v.to_vec(),
            ..CellChunk::default()
        }
    }

    fn commit(mut c: CellChunk) -> CellChunk {
        c.row_status = Some(RowStatus::CommitRow(true));
        c
    }

    #[test]
    fn rows_and_split_cells_across_messages() {
        let mut a = RowAssembler::default();
        let mut out = Vec::new();
        let mut first = chunk(b"r1", Some("t"), Some(&[0, 1]), b"ab");
        first.value_size = 4;
        a.push(vec![first], &mut out).unwrap();
        assert!(out.is_empty());
        assert!(!a.is_idle());
        let cont = chunk(b"", None, None, b"cd");
        a.push(
            vec![cont, commit(chunk(b"", Some("id"), Some(b"metrics"), b"x"))],
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        let (key, cells) = &out[0];
        assert_eq!(key, b"r1");
        // Sorted by column: family byte 'i' < 't'.
        assert_eq!(cells[0].column, b"imetrics");
        assert_eq!(&cells[1].value[..], b"abcd");
        assert!(a.is_idle());
        a.push(
            vec![commit(chunk(b"r2", Some("t"), Some(&[0]), b"1"))],
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_repeated_row_key_continues_the_row() {
        let mut a = RowAssembler::default();
        let mut out = Vec::new();
        a.push(
            vec![
                chunk(b"r", Some("t"), Some(&[0]), b"1"),
                commit(chunk(b"r", Some("t"), Some(&[1]), b"2")),
            ],
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.len(), 2);
    }

    #[test]
    fn reset_drops_the_row_so_far() {
        let mut a = RowAssembler::default();
        let mut out = Vec::new();
        let reset = CellChunk {
            row_status: Some(RowStatus::ResetRow(true)),
            ..CellChunk::default()
        };
        a.push(
            vec![chunk(b"r1", Some("t"), Some(&[0]), b"1"), reset],
            &mut out,
        )
        .unwrap();
        a.push(
            vec![commit(chunk(b"r1", Some("t"), Some(&[1]), b"2"))],
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.len(), 1);
        assert_eq!(out[0].1[0].column, [b't', 1]);
    }

    #[test]
    fn protocol_violations_are_errors() {
        let mut out = Vec::new();
        let mut a = RowAssembler::default();
        assert!(
            a.push(vec![chunk(b"", Some("t"), Some(&[0]), b"")], &mut out)
                .is_err()
        );
        let mut a = RowAssembler::default();
        a.push(
            vec![commit(chunk(b"b", Some("t"), Some(&[0]), b""))],
            &mut out,
        )
        .unwrap();
        assert!(
            a.push(
                vec![commit(chunk(b"a", Some("t"), Some(&[0]), b""))],
                &mut out
            )
            .is_err()
        );
        let mut a = RowAssembler::default();
        assert!(
            a.push(vec![chunk(b"a", Some("t"), None, b"")], &mut out)
                .is_err()
        );
    }

    #[test]
    fn cells_of_other_families_are_skipped_and_versions_collapse() {
        let mut a = RowAssembler::default();
        let mut out = Vec::new();
        let newest = chunk(b"r", Some("t"), Some(&[0]), b"new");
        let mut older = chunk(b"", None, None, b"old");
        older.timestamp_micros = 1;
        let other = commit(chunk(b"", Some("x"), Some(&[0]), b"?"));
        a.push(vec![newest, older, other], &mut out).unwrap();
        assert_eq!(out[0].1.len(), 1);
        assert_eq!(&out[0].1[0].value[..], b"new");
    }
}
