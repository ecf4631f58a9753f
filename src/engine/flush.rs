//! Flushing the head: hours taken out of the head become one native cell
//! per row (series × hour), written to the store in one data write stamped
//! with its sequence number (on a shared store, whose rows already hold
//! the points, the rows are packed instead: `engine::shared`). No read of the stored row happens: a late
//! point for an hour already in the store becomes a second cell of that
//! row, and compaction merges the two. While the write runs the hours stay
//! readable as "frozen" rows; on failure they go back into the head, under
//! anything that arrived meanwhile. The rollup tiers of the written hours
//! are computed before the rows leave the head (`engine::rollup`). Once
//! stored, each series' newest hour
//! is recorded in the series index (`record_newest`), where
//! `/api/query/last` finds it after a restart.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Engine;
use super::EngineError;
use super::head::{Frozen, NONE_RECORDED, Take};
use crate::codec::native::{self, TierValue};
use crate::codec::row;
use crate::storage::{Mutation, Table};

/// Rows one piece of a flush takes out of the head: what the piece holds
/// besides them (cells, mutations, the table file being built, tier rows)
/// is a few hundred bytes a row, so some 30 MB.
pub(super) const FLUSH_PIECE_ROWS: usize = 1 << 16;

impl Engine {
    /// Flushes hours that closed `head.flush_grace_secs` ago or earlier,
    /// then forgets the series all of whose points were in them: a series
    /// that stopped (a pod gone) leaves memory with its last hour, and one
    /// written in the past (a backfill) as each flush writes it out. Either
    /// is resolved again if it comes back.
    pub fn flush_closed(&self) -> Result<usize, EngineError> {
        self.flush_closed_with(false)
    }

    /// [`Engine::flush_closed`]; with `defer_written`, the hour holding a
    /// series' newest point waits while the series takes points (one round
    /// of the flusher to the next: [`Take::Closed`]). The flusher defers, so
    /// that a backfill, all of whose hours are closed, writes each row once
    /// when its series moves on or stops rather than a cell per round.
    pub(super) fn flush_closed_with(&self, defer_written: bool) -> Result<usize, EngineError> {
        let before = self.closed_before();
        let take = {
            let mut head = self.head();
            head.closed_rows = 0;
            head.looked_secs = head.newest_secs;
            // With the count that set it (`Engine::note_head`, under this
            // lock): a writer can ask for the next look only once data
            // time has moved on again.
            self.closed_look.store(false, Ordering::Release);
            if defer_written {
                Take::Closed {
                    before,
                    round: head.next_round(),
                }
            } else {
                Take::Before(before)
            }
        };
        if before == 0 {
            return Ok(0);
        }
        let mut closed = 0;
        let rows = self.flush_then(take, |head| {
            closed += head.evict_closed(before);
        })?;
        self.metrics.series_stopped.inc_by(closed as u64);
        self.metrics
            .head_series
            .set(self.head().series_count() as i64);
        Ok(rows)
    }

    /// Hours with a base below this have closed: they ended
    /// `head.flush_grace_secs` ago or earlier (0 before 1970 ends).
    pub(super) fn closed_before(&self) -> u32 {
        let cutoff = self.now_secs() - 3600 - self.settings.flush_grace_secs;
        u32::try_from(cutoff + 1).unwrap_or(if cutoff < 0 { 0 } else { u32::MAX })
    }

    /// Flushes the hours `take` picks; returns the rows written.
    pub fn flush(&self, take: Take) -> Result<usize, EngineError> {
        self.flush_then(take, |_| {})
    }

    /// [`Engine::flush`] in pieces of at most about [`FLUSH_PIECE_ROWS`]
    /// rows, calling `after` with the head once each piece is stored: what
    /// a flush holds besides the rows (their cells, the table being
    /// written, the tier rows) stays bounded however much the head holds,
    /// and series written out can leave memory before the whole flush is
    /// done.
    pub(super) fn flush_then(
        &self,
        take: Take,
        mut after: impl FnMut(&mut super::head::Head),
    ) -> Result<usize, EngineError> {
        let _flush = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The oldest hours by bytes are chosen once: later pieces take
        // what is left below the same hour.
        let take = match take {
            Take::Bytes(want) => match self.head().bytes_cutoff(want) {
                Some(cutoff) => Take::Before(cutoff),
                None => return Ok(0),
            },
            other => other,
        };
        let mut rows = 0;
        let mut flushed = false;
        loop {
            let (frozen, more) = self.head().take_some(take, FLUSH_PIECE_ROWS);
            if frozen.is_empty() {
                break;
            }
            rows += self.flush_frozen(&frozen)?;
            flushed = true;
            after(&mut self.head());
            if !more {
                break;
            }
        }
        if flushed {
            self.metrics.flushes.inc();
        }
        Ok(rows)
    }

    /// Writes one piece of a flush (rows taken out of the head, frozen),
    /// its tiers and newest hours; on failure the rows go back into the
    /// head.
    fn flush_frozen(&self, frozen: &Arc<Frozen>) -> Result<usize, EngineError> {
        // The tiers are computed before the hours leave the head: a query
        // reads a tier only for hours the head no longer holds. A row the
        // store held no cell of before this write has the value of the
        // cell written (no read back).
        let result = self.rows_stored_before(frozen).and_then(|before| {
            let (rows, values) = self.write_frozen(frozen)?;
            self.roll_up_frozen(frozen, &before, values)?;
            Ok(rows)
        });
        let mut head = self.head();
        match &result {
            Ok(_) => head.unfreeze(frozen),
            Err(_) => head.restore(frozen),
        }
        self.metrics.head_points.set(head.points as i64);
        self.metrics.head_bytes.set(head.bytes as i64);
        drop(head);
        let rows = result?;
        self.record_newest(frozen);
        self.metrics.flushed_rows.inc_by(rows as u64);
        Ok(rows)
    }

    /// Encodes frozen rows and writes them in one data write; returns the
    /// rows written and the tier value of each frozen row's cell (in the
    /// order of `frozen.rows`). On a shared store the points are there
    /// already: the rows are packed instead.
    fn write_frozen(
        &self,
        frozen: &Arc<Frozen>,
    ) -> Result<(usize, Vec<Option<TierValue>>), EngineError> {
        if self.log.is_none() {
            let rows: Vec<(Vec<u8>, u32)> = frozen
                .rows
                .values()
                .flatten()
                .map(|(key, hour)| (self.layout.row_key(key, hour.base), hour.base))
                .collect();
            return Ok((self.repack_rows(&rows, &|_, _| true)?, Vec::new()));
        }
        let mut values = Vec::new();
        let mut count = 0;
        let mut failure: Option<EngineError> = None;
        self.store.write_data(&mut |seq| {
            let mut muts = Vec::with_capacity(frozen.row_count());
            values.clear();
            let column = row::native_column(seq);
            for rows in frozen.rows.values() {
                for (key, hour) in rows {
                    let points = hour.points();
                    if points.is_empty() {
                        if !self.tiers.is_empty() {
                            values.push(None);
                        }
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
                    // The row's tier value is the cell's summary, unless a
                    // staleness marker may be one of its ends (or it has
                    // none): then the points', as a read would fold them.
                    if !self.tiers.is_empty() {
                        values.push(match native::cell_summary(&cell).ok().flatten() {
                            Some(summary) if !summary.may_hold_stale_ends() => Some(TierValue {
                                points: points.len() as u64,
                                partial: summary.partial(),
                            }),
                            _ => super::rollup::build::points_value(&points),
                        });
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
            None => Ok((count, values)),
        }
    }

    /// Which frozen rows (in the order of `frozen.rows`) the store may
    /// already hold a cell of (a late point, a flush again after a
    /// restart, an annotation): their tier values are read back after the
    /// write. Asked of the bloom filters before the write, but for series
    /// the store holds nothing of (`Frozen::absent`), whose rows the
    /// filters' false positives would have read back; nothing to ask
    /// without tiers.
    fn rows_stored_before(&self, frozen: &Frozen) -> Result<Vec<bool>, EngineError> {
        if self.tiers.is_empty() || self.log.is_none() {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(frozen.row_count());
        for (key, hour) in frozen.rows.values().flatten() {
            out.push(
                !frozen.absent.contains(key)
                    && self
                        .store
                        .row_may_exist(Table::Data, &self.layout.row_key(key, hour.base))?,
            );
        }
        Ok(out)
    }

    /// Computes the rollup tiers of the hours a flush wrote (embedded
    /// store only): from the cell written when the store held none of the
    /// row before, else from the row read back. On failure the hours go
    /// back into the head and the next flush writes them again, tiers
    /// included.
    fn roll_up_frozen(
        &self,
        frozen: &Frozen,
        stored_before: &[bool],
        written: Vec<Option<TierValue>>,
    ) -> Result<(), EngineError> {
        if self.tiers.is_empty() || self.log.is_none() {
            return Ok(());
        }
        // One call: the tier rows of a series in `absent` are written
        // without reading, so its hours must all be in it (`roll_up_known`
        // batches them by series, and writes each batch's rows).
        let all: Vec<(&[u8], u32, Option<TierValue>)> = frozen
            .rows
            .values()
            .flatten()
            .zip(stored_before)
            .zip(written)
            .map(|(((key, hour), before), value)| {
                (&key[..], hour.base, if *before { None } else { value })
            })
            .collect();
        let absent: HashSet<&[u8]> = frozen.absent.iter().map(|k| &k[..]).collect();
        self.roll_up_known(&all, &absent)
    }

    /// Records in the series index the newest hour this flush stored for
    /// each of its series, when it is the series' newest: not when the head
    /// holds a newer hour (that hour's flush records it), nor when the index
    /// holds this hour or a newer one already (a late point for an old hour,
    /// a backfill). A series whose recorded hour this head has not read yet
    /// is read first, all in one batch. Best effort: without it
    /// `/api/query/last` reads the hours the head knows, or `back_scan`
    /// hours, so a failure is logged rather than failing the flush.
    fn record_newest(&self, frozen: &Frozen) {
        let mut newest: HashMap<&[u8], u32> = HashMap::new();
        for rows in frozen.rows.values() {
            for (key, hour) in rows {
                let base = newest.entry(&key[..]).or_insert(0);
                *base = (*base).max(hour.base);
            }
        }
        let mut write: Vec<(&[u8], u32)> = Vec::new();
        let mut unread: Vec<(&[u8], u32)> = Vec::new();
        {
            let head = self.head();
            for (key, base) in newest {
                match head.id_of(key).and_then(|id| head.entry(id)) {
                    Some(e)
                        if base < e.newest_base
                            || (e.newest_recorded >= base
                                && e.newest_recorded != NONE_RECORDED) => {}
                    Some(e) if e.newest_recorded > 0 => write.push((key, base)),
                    _ => unread.push((key, base)),
                }
            }
        }
        // What the index holds for the series this head has not read.
        let mut recorded: Vec<(&[u8], u32)> = Vec::new();
        if !unread.is_empty() {
            let keys: Vec<&[u8]> = unread.iter().map(|(key, _)| *key).collect();
            match self.recorded_newest_hours(&keys) {
                Ok(stored) => {
                    for ((key, base), stored) in unread.into_iter().zip(stored) {
                        match stored {
                            Some(s) if s >= base => recorded.push((key, s)),
                            _ => write.push((key, base)),
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the newest hours of the series index");
                    return;
                }
            }
        }
        if let Err(e) = self.record_newest_hours(&write) {
            tracing::warn!(error = %e, series = write.len(), "could not record the newest hours in the series index");
            return;
        }
        let mut head = self.head();
        for (key, base) in write.into_iter().chain(recorded) {
            if let Some(e) = head.id_of(key).and_then(|id| head.entry_mut(id)) {
                e.newest_recorded = e.newest_recorded.max(base);
            }
        }
    }
}
