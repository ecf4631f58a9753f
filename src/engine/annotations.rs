//! Annotations stored as OpenTSDB stores them (spec §1.9): one cell in a
//! data row, family `t`, qualifier `01` ‖ 2-byte offset in seconds (or
//! `01` ‖ 4-byte offset in ms for a millisecond start time), value = the
//! storage JSON. A series note lives in its series' hour row (salted); a
//! global note in the row `zeros(salt) ‖ zeros(metric) ‖ base time`, no
//! tags. The data-row readers and the row compactor already skip and keep
//! these cells (`codec::row`). Layout in `docs/format/row-key-and-cells.md`.
//!
//! Writes go through `Store::write` (durable); a read-modify-write holds
//! one process-wide lock, which stands in for OpenTSDB's compare-and-set on
//! a single node.

use std::collections::HashSet;
use std::sync::Mutex;

use hourglass_query::Annotation;
use hourglass_query::QueryBudget;
use hourglass_query::error::QueryError;

use super::Engine;
use crate::codec::row::{CellKind, classify};
use crate::storage::{Durability, Mutation, StorageError, Table, family};

/// A stored note with its row key and column.
pub type StoredNote = (Vec<u8>, Vec<u8>, Annotation);

/// A scan range and the tag sections wanted in it (`None`: global rows).
type NoteRange = (Vec<u8>, Vec<u8>, Option<HashSet<Vec<u8>>>);

/// Serialises annotation read-modify-writes.
static WRITE_LOCK: Mutex<()> = Mutex::new(());

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationError {
    /// Not whole UIDs in hex (400).
    #[error("Invalid TSUID: {0}")]
    BadTsuid(String),
    /// A start time below 1 (400).
    #[error("The start timestamp has not been set")]
    NoStart,
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bad request (the query crate's text), or over the query budget.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// A note time in ms (seconds unless above `u32::MAX`, as OpenTSDB reads it).
pub(super) fn time_ms(t: i64) -> i64 {
    if t > i64::from(u32::MAX) || t < 0 {
        t
    } else {
        t.saturating_mul(1000)
    }
}

/// Base hour (seconds) and qualifier of a note's start time.
fn place(start_time: i64) -> Result<(u32, Vec<u8>), AnnotationError> {
    if start_time < 1 {
        return Err(AnnotationError::NoStart);
    }
    let t = start_time as u64;
    // Milliseconds that are whole seconds are stored as seconds.
    let (secs, ms) = if t > u64::from(u32::MAX) {
        if t.is_multiple_of(1000) {
            (t / 1000, None)
        } else {
            (t / 1000, Some(t % 1000))
        }
    } else {
        (t, None)
    };
    let base = u32::try_from(secs - secs % 3600).map_err(|_| AnnotationError::NoStart)?;
    let off = secs - u64::from(base);
    let mut q = vec![family::DATA, crate::codec::row::ANNOTATION];
    match ms {
        None => q.extend_from_slice(&(off as u16).to_be_bytes()),
        Some(m) => q.extend_from_slice(&((off * 1000 + m) as u32).to_be_bytes()),
    }
    Ok((base, q))
}

impl Engine {
    /// The series key of a hex TSUID (`None` for "" = global).
    fn note_series(&self, tsuid: &str) -> Result<Option<Vec<u8>>, AnnotationError> {
        if tsuid.is_empty() {
            return Ok(None);
        }
        crate::codec::hex::decode(tsuid)
            .and_then(|t| self.layout.series_key_from_tsuid(&t))
            .map(Some)
            .ok_or_else(|| AnnotationError::BadTsuid(tsuid.to_string()))
    }

    /// Row of a global note's hour.
    fn global_row(&self, base: u32) -> Vec<u8> {
        let mut row = vec![0u8; self.layout.prefix_width()];
        row.extend_from_slice(&base.to_be_bytes());
        row
    }

    /// Row key and column of a note.
    fn note_cell(
        &self,
        tsuid: &str,
        start_time: i64,
    ) -> Result<(Vec<u8>, Vec<u8>), AnnotationError> {
        let (base, column) = place(start_time)?;
        let row = match self.note_series(tsuid)? {
            Some(key) => self.layout.row_key(&key, base),
            None => self.global_row(base),
        };
        Ok((row, column))
    }

    /// The stored note at (`tsuid`, `start_time`), if any.
    pub fn get_annotation(
        &self,
        tsuid: &str,
        start_time: i64,
    ) -> Result<Option<Annotation>, AnnotationError> {
        let (row, column) = self.note_cell(tsuid, start_time)?;
        let cells = self.store.get_row(Table::Data, &row)?;
        Ok(cells
            .iter()
            .find(|c| c.column == column)
            .and_then(|c| Annotation::from_storage_json(&c.value).ok()))
    }

    /// Runs `f` on the stored note (if any) under the write lock and stores
    /// what it returns (`None`: leave storage alone). Returns `f`'s answer.
    pub fn update_annotation<T>(
        &self,
        tsuid: &str,
        start_time: i64,
        f: impl FnOnce(Option<&Annotation>) -> Result<(Option<Annotation>, T), AnnotationError>,
    ) -> Result<T, AnnotationError> {
        let mut f = Some(f);
        let mut out =
            self.update_annotations(&[(tsuid, start_time)], |_, stored| match f.take() {
                Some(f) => f(stored),
                None => Err(AnnotationError::NoStart),
            })?;
        out.pop().ok_or(AnnotationError::NoStart)
    }

    /// [`Engine::update_annotation`] for many notes at once (`/api/annotation/bulk`):
    /// `f(i, stored)` for each `(tsuid, start_time)` in order, seeing the
    /// notes earlier calls stored; everything is written in one durable
    /// store write (one small table file, not one per note).
    pub fn update_annotations<T>(
        &self,
        keys: &[(&str, i64)],
        mut f: impl FnMut(
            usize,
            Option<&Annotation>,
        ) -> Result<(Option<Annotation>, T), AnnotationError>,
    ) -> Result<Vec<T>, AnnotationError> {
        let _guard = WRITE_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending: std::collections::HashMap<(Vec<u8>, Vec<u8>), Annotation> =
            std::collections::HashMap::new();
        let mut order: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut out = Vec::with_capacity(keys.len());
        for (i, &(tsuid, start_time)) in keys.iter().enumerate() {
            let cell = self.note_cell(tsuid, start_time)?;
            let stored = match pending.get(&cell) {
                Some(n) => Some(n.clone()),
                None => self.get_annotation(tsuid, start_time)?,
            };
            let (store, answer) = f(i, stored.as_ref())?;
            if let Some(note) = store {
                let cell = self.note_cell(&note.tsuid, note.start_time)?;
                if !pending.contains_key(&cell) {
                    order.push(cell.clone());
                }
                pending.insert(cell, note);
            }
            out.push(answer);
        }
        if !order.is_empty() {
            // The notes index first (with rollup tiers): a query answered
            // from a tier reads the notes of the rows it names (a marker
            // left by a failed write below names a row without notes:
            // harmless).
            if !self.tiers.is_empty() {
                let marks: Vec<Mutation> = order
                    .iter()
                    .map(|(row, _)| Mutation::Put {
                        table: Table::Rollup,
                        row: super::rollup::notes_key(row),
                        column: crate::storage::column(crate::storage::family::DATA, &[]),
                        value: Vec::new(),
                    })
                    .collect();
                self.tiers.note_indexed();
                self.store.write(marks, Durability::Sync)?;
            }
            let batch = order
                .into_iter()
                .filter_map(|cell| {
                    let note = pending.remove(&cell)?;
                    Some(Mutation::Put {
                        table: Table::Data,
                        row: cell.0,
                        column: cell.1,
                        value: note.to_storage_json().into_bytes(),
                    })
                })
                .collect();
            self.store.write(batch, Durability::Sync)?;
        }
        Ok(out)
    }

    /// Deletes the note at (`tsuid`, `start_time`) (absent is fine).
    pub fn delete_annotation(&self, tsuid: &str, start_time: i64) -> Result<(), AnnotationError> {
        let (row, column) = self.note_cell(tsuid, start_time)?;
        let _guard = WRITE_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.store.write(
            vec![Mutation::Delete {
                table: Table::Data,
                row,
                column,
            }],
            Durability::Sync,
        )?;
        Ok(())
    }

    /// Notes with start times in `[start_ms, end_ms]`: of the series with
    /// these TSUIDs (bytes), or the global ones (`tsuids` = `None`). Reads
    /// the series' metric rows of the hours in range, one scan per salt
    /// bucket (global rows are unsalted: one scan); every row read counts
    /// as one point of `budget`. Returns each note with its row and column.
    pub fn notes_in(
        &self,
        tsuids: Option<&[Vec<u8>]>,
        start_ms: i64,
        end_ms: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<StoredNote>, AnnotationError> {
        let layout = self.layout;
        let lo = (start_ms.max(0) / 1000 / 3600 * 3600).min(i64::from(u32::MAX)) as u32;
        let hi = ((end_ms.max(0) / 1000 / 3600 + 1) * 3600).min(i64::from(u32::MAX)) as u32;
        let mut out = Vec::new();
        let mut ranges: Vec<NoteRange> = Vec::new();
        match tsuids {
            None => ranges.push((self.global_row(lo), self.global_row(hi), None)),
            Some(list) => {
                let mw = layout.metric_width;
                let mut by_metric: std::collections::BTreeMap<&[u8], HashSet<Vec<u8>>> =
                    Default::default();
                for t in list {
                    if layout.series_key_from_tsuid(t).is_none() {
                        continue;
                    }
                    by_metric
                        .entry(&t[..mw])
                        .or_default()
                        .insert(t[mw..].to_vec());
                }
                let buckets = if layout.salt_width == 0 {
                    1
                } else {
                    layout.salt_buckets
                };
                for (m, tags) in by_metric {
                    let metric = crate::codec::rowkey::uid_from_bytes(m);
                    for b in 0..buckets {
                        ranges.push((
                            layout.scan_key(b, metric, lo),
                            layout.scan_key(b, metric, hi),
                            Some(tags.clone()),
                        ));
                    }
                }
            }
        }
        let mut failed = None;
        for (start, end, tags) in ranges {
            self.store
                .scan(Table::Data, &start, &end, &mut |row, cells| {
                    if !budget.take_points(1) {
                        failed = budget.check_points().err();
                        return Ok(false);
                    }
                    let Some(parts) = layout.parse_row_key(row) else {
                        return Ok(true);
                    };
                    let wanted = match &tags {
                        Some(set) => set.contains(parts.tags),
                        None => parts.tags.is_empty(),
                    };
                    if !wanted {
                        return Ok(true);
                    }
                    for c in cells {
                        if classify(&c.column, &c.value) != CellKind::Annotation {
                            continue;
                        }
                        let Ok(mut note) = Annotation::from_storage_json(&c.value) else {
                            tracing::warn!(row = ?row, "unreadable annotation cell skipped");
                            continue;
                        };
                        let t = time_ms(note.start_time);
                        if t < start_ms || t > end_ms {
                            continue;
                        }
                        if tags.is_some() {
                            let mut tsuid = parts.metric.to_vec();
                            tsuid.extend_from_slice(parts.tags);
                            note.tsuid = crate::codec::hex::encode(&tsuid);
                        }
                        out.push((row.to_vec(), c.column, note));
                    }
                    Ok(true)
                })?;
            if let Some(e) = failed.take() {
                return Err(e.into());
            }
            budget.check()?;
        }
        Ok(out)
    }

    /// Deletes notes found by [`Engine::notes_in`]; returns how many.
    pub fn delete_notes(&self, notes: Vec<StoredNote>) -> Result<u64, AnnotationError> {
        let n = notes.len() as u64;
        if n == 0 {
            return Ok(0);
        }
        let _guard = WRITE_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let batch = notes
            .into_iter()
            .map(|(row, column, _)| Mutation::Delete {
                table: Table::Data,
                row,
                column,
            })
            .collect();
        self.store.write(batch, Durability::Sync)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::place;

    #[test]
    fn qualifiers_follow_opentsdb() {
        // The docs' example: start 1292148123 → base 1292148000, `01 00 7B`.
        assert_eq!(
            place(1292148123).unwrap(),
            (1292148000, vec![b't', 1, 0, 0x7B])
        );
        // Whole-second milliseconds are seconds; others a 4-byte ms offset.
        assert_eq!(
            place(1292148123000).unwrap(),
            (1292148000, vec![b't', 1, 0, 0x7B])
        );
        assert_eq!(
            place(1292148123456).unwrap(),
            (1292148000, vec![b't', 1, 0x00, 0x01, 0xE2, 0x40])
        );
        assert!(place(0).is_err());
    }
}
