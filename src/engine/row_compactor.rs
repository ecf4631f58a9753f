//! The engine's side of compaction: how the store merges the cells of one
//! data row ([`crate::codec::row::compact_row`]) and which rows retention
//! has expired. The store decides *when* to merge (its pure policy); this
//! decides *what* a merged row holds.

use std::sync::Arc;

use super::retention::Retention;
use crate::codec::KeyLayout;
use crate::codec::row::{CellKind, classify};
use crate::storage::{Cell, CompactContext, RowCompactor};
use crate::uid::{UidKind, Uids};

#[derive(Debug)]
pub struct Compactor {
    layout: KeyLayout,
    retention: Arc<Retention>,
    uids: Arc<Uids>,
}

impl Compactor {
    pub fn new(layout: KeyLayout, retention: Arc<Retention>, uids: Arc<Uids>) -> Self {
        Self {
            layout,
            retention,
            uids,
        }
    }

    /// The TTL of the metric a row belongs to, in seconds.
    fn ttl(&self, metric_uid: u64) -> Result<Option<u64>, String> {
        if self.retention.uniform() {
            return Ok(self.retention.ttl(""));
        }
        match self.uids.name_of(UidKind::Metric, metric_uid) {
            Ok(Some(name)) => Ok(self.retention.ttl(&name)),
            // A metric without a name: keep the longest horizon rather than
            // guess a shorter one.
            Ok(None) => Ok(self
                .retention
                .view()
                .ttls
                .last()
                .copied()
                .filter(|_| !self.retention.view().forever)),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl RowCompactor for Compactor {
    fn compact_row(
        &self,
        row: &[u8],
        cells: Vec<Cell>,
        ctx: &CompactContext,
    ) -> Result<Vec<Cell>, String> {
        let Some(parts) = self.layout.parse_row_key(row) else {
            // Not a row key of this layout: keep it untouched.
            return Ok(cells);
        };
        let metric = crate::codec::rowkey::uid_from_bytes(parts.metric);
        if let Some(ttl) = self.ttl(metric)?
            && u64::from(parts.base_time) + 3600 + ttl <= ctx.now_secs
        {
            return Ok(Vec::new());
        }
        // Applying a tombstone drops it: in a partial merge the points it
        // covers in older files would come back.
        if !ctx.complete
            && cells
                .iter()
                .any(|c| matches!(classify(&c.column, &c.value), CellKind::Tombstone { .. }))
        {
            return Ok(cells);
        }
        crate::codec::row::compact_row(cells).map_err(|e| e.to_string())
    }
}
