//! Point deletes (`/api/query` with `"delete": true`, when
//! `query.allow_delete` is on): the points of the given series with
//! `start <= ts <= end` disappear durably.
//!
//! 1. A delete record per series goes to the WAL and is made durable, so a
//!    restart replays it over anything it replays from before.
//! 2. The head drops the points.
//! 3. Each stored row of those series in the range gets a tombstone cell
//!    (`codec::row`), which hides the points of older cells and is resolved
//!    by the next compaction of the window; the rollup tiers of those hours
//!    are computed again. A restart redoes this step for the deletes the
//!    WAL replays.
//!
//! Rollups written from outside for intervals starting in the range are
//! deleted before step 1, and not on replay (they are not in the WAL).
//!
//! The flush lock is held throughout, so no flush can write points the
//! delete has already removed from the head.
//!
//! On a shared store there is no WAL and no tombstone: each stored row is
//! rewritten without the points, deleting only the cells it read
//! (`engine::shared`).

use std::collections::{BTreeMap, HashSet};

use super::pending::PendingWrite;
use super::{Engine, EngineError};
use crate::codec::row;
use crate::storage::{Mutation, Table};

impl Engine {
    /// Deletes the points of `series_keys` (full series keys: salt, metric,
    /// tags) in `[start_ms, end_ms]`. Returns how many stored rows got a
    /// tombstone. Blocking.
    pub fn delete_points(
        &self,
        series_keys: &[Vec<u8>],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<usize, EngineError> {
        if series_keys.is_empty() || end_ms < start_ms {
            return Ok(0);
        }
        let _flush = self
            .flush_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Rollups written from outside for intervals in the range go first,
        // and only here, not when the WAL replays the delete: they are not
        // logged, so a replay would delete ones acknowledged after it. (A
        // crash before the delete is acknowledged may leave the points;
        // sending it again finishes it.)
        self.delete_external(series_keys, start_ms, end_ms)?;
        if let Some(wal) = self.wal() {
            // Logged and queued under the head lock, in order with the
            // points logged around it; the head drops the points once the
            // record is durable (`pending`).
            let mut frame = super::wal::FrameBuilder::new();
            for key in series_keys {
                frame.delete(key, start_ms, end_ms);
            }
            wal.wait_for_room()?;
            let lsn = {
                let mut head = self.head();
                let lsn = wal.append(frame)?;
                head.pending.push(
                    lsn,
                    PendingWrite::Delete {
                        keys: series_keys.to_vec(),
                        start_ms,
                        end_ms,
                    },
                );
                lsn
            };
            wal.wait_durable_blocking(lsn, 0)?;
        } else {
            let mut head = self.head();
            for key in series_keys {
                head.delete(key, start_ms, end_ms);
            }
        }
        // Crash tests: the delete logged, the store not yet changed.
        crate::failpoint::check("delete_store").map_err(|source| {
            crate::storage::StorageError::Io {
                path: std::path::PathBuf::from("<delete>"),
                source,
            }
        })?;
        self.delete_stored(series_keys, start_ms, end_ms)
    }

    /// The store's part of a delete: a tombstone on each stored row of the
    /// series in the range (on a shared store, the rows rewritten), and the
    /// rollup tiers of those hours recomputed. Idempotent: a restart runs
    /// it again for every delete the WAL replays, so a crash between the
    /// WAL record and the end of this leaves neither points nor tier values
    /// that the delete removed.
    pub(super) fn delete_stored(
        &self,
        series_keys: &[Vec<u8>],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<usize, EngineError> {
        // Stored rows of these series in the range: one scan per (salt,
        // metric) prefix over the hours, keeping the rows of the series.
        let layout = self.layout;
        let p = layout.prefix_width();
        let lo = hour_of(start_ms);
        let hi = hour_of(end_ms).saturating_add(3600);
        let mut groups: BTreeMap<Vec<u8>, HashSet<&[u8]>> = BTreeMap::new();
        for key in series_keys {
            if key.len() >= p {
                groups
                    .entry(key[..p].to_vec())
                    .or_default()
                    .insert(&key[p..]);
            }
        }
        let mut rows: Vec<(Vec<u8>, u32)> = Vec::new();
        for (prefix, tags) in &groups {
            let mut start = prefix.clone();
            start.extend_from_slice(&lo.to_be_bytes());
            let mut end = prefix.clone();
            end.extend_from_slice(&hi.to_be_bytes());
            self.store
                .scan(Table::Data, &start, &end, &mut |row_key, _| {
                    if let Some(parts) = layout.parse_row_key(row_key)
                        && tags.contains(parts.tags)
                    {
                        rows.push((row_key.to_vec(), parts.base_time));
                    }
                    Ok(true)
                })?;
        }
        if rows.is_empty() {
            return Ok(0);
        }
        if self.log.is_none() {
            // A shared store: rewrite the rows without the points, deleting
            // only the cells read (a point written since survives).
            let n = self.repack_rows(&rows, &|base, off| {
                let ts = i64::from(base) * 1000 + i64::from(off);
                ts < start_ms || ts > end_ms
            })?;
            self.metrics.deletes.inc();
            return Ok(n);
        }
        let n = rows.len();
        self.store.write_data(&mut |seq| {
            let column = row::tombstone_column(seq);
            Ok(rows
                .iter()
                .map(|(key, base)| {
                    let base_ms = i64::from(*base) * 1000;
                    let from = (start_ms - base_ms).clamp(0, 3_599_999) as u32;
                    let to = (end_ms - base_ms).clamp(0, 3_599_999) as u32;
                    Mutation::Put {
                        table: Table::Data,
                        row: key.clone(),
                        column: column.clone(),
                        value: row::tombstone_value(from, to),
                    }
                })
                .collect())
        })?;
        let series: Vec<Vec<u8>> = rows
            .iter()
            .map(|(key, _)| layout.series_of_row(key))
            .collect();
        let hours: Vec<(&[u8], u32)> = series
            .iter()
            .zip(&rows)
            .map(|(s, (_, base))| (s.as_slice(), *base))
            .collect();
        if let Err(e) = self.roll_up(&hours) {
            self.give_up_tiers(&e);
            return Err(e);
        }
        self.metrics.deletes.inc();
        Ok(n)
    }
}

fn hour_of(ms: i64) -> u32 {
    let s = ms.div_euclid(1000).clamp(0, i64::from(u32::MAX));
    (s - s % 3600) as u32
}
