//! Flushing the head: hours taken out of the head become one native cell
//! per row (series × hour), written to the store in one data write stamped
//! with its sequence number (on a shared store, whose rows already hold
//! the points, the rows are packed instead: `engine::shared`). No read of the stored row happens: a late
//! point for an hour already in the store becomes a second cell of that
//! row, and compaction merges the two. While the write runs the hours stay
//! readable as "frozen" rows; on failure they go back into the head, under
//! anything that arrived meanwhile.

use std::sync::Arc;

use super::Engine;
use super::EngineError;
use super::head::{Frozen, Take};
use crate::codec::native;
use crate::codec::row;
use crate::storage::{Mutation, Table};

impl Engine {
    /// Flushes hours that closed `head.flush_grace_secs` ago or earlier.
    pub fn flush_closed(&self) -> Result<usize, EngineError> {
        let cutoff = self.now_secs() - 3600 - self.settings.flush_grace_secs;
        if cutoff < 0 {
            return Ok(0);
        }
        // Hours with base <= cutoff.
        let before = u32::try_from(cutoff + 1).unwrap_or(u32::MAX);
        self.flush(Take::Before(before))
    }

    /// Flushes the hours `take` picks; returns the rows written.
    pub fn flush(&self, take: Take) -> Result<usize, EngineError> {
        let _flush = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let frozen = self.head().take(take);
        if frozen.is_empty() {
            return Ok(0);
        }
        let result = self.write_frozen(&frozen);
        let mut head = self.head();
        match &result {
            Ok(_) => head.unfreeze(&frozen),
            Err(_) => head.restore(&frozen),
        }
        self.metrics.head_points.set(head.points as i64);
        self.metrics.head_bytes.set(head.bytes as i64);
        drop(head);
        let rows = result?;
        self.metrics.flushes.inc();
        self.metrics.flushed_rows.inc_by(rows as u64);
        Ok(rows)
    }

    /// Encodes frozen rows and writes them in one data write. On a shared
    /// store the points are there already: the rows are packed instead.
    fn write_frozen(&self, frozen: &Arc<Frozen>) -> Result<usize, EngineError> {
        if self.log.is_none() {
            let rows: Vec<(Vec<u8>, u32)> = frozen
                .rows
                .values()
                .flatten()
                .map(|(key, hour)| (self.layout.row_key(key, hour.base), hour.base))
                .collect();
            return self.repack_rows(&rows, &|_, _| true);
        }
        let mut count = 0;
        let mut failure: Option<EngineError> = None;
        self.store.write_data(&mut |seq| {
            let mut muts = Vec::with_capacity(frozen.row_count());
            let column = row::native_column(seq);
            for rows in frozen.rows.values() {
                for (key, hour) in rows {
                    let points = hour.points();
                    if points.is_empty() {
                        continue;
                    }
                    let mut cell = Vec::with_capacity(points.len() + 32);
                    if let Err(e) = native::encode_cell(&points, &mut cell) {
                        // Points the head accepted always encode; refuse the
                        // whole write rather than drop a row.
                        failure = Some(EngineError::Damaged(format!(
                            "cannot encode a row for the store: {e}"
                        )));
                        return Ok(Vec::new());
                    }
                    muts.push(Mutation::Put {
                        table: Table::Data,
                        row: self.layout.row_key(key, hour.base),
                        column: column.clone(),
                        value: cell,
                    });
                }
            }
            count = muts.len();
            Ok(muts)
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(count),
        }
    }
}
