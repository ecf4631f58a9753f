//! The embedded store's settings.

use std::path::PathBuf;

use super::table::CellStats;
use crate::codec::KeyLayout;
use crate::storage::retention::RetentionView;

#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    pub dir: PathBuf,
    pub layout: KeyLayout,
    /// The memtable is written to a meta table file past this many bytes.
    pub memtable_bytes: usize,
    /// Meta table files are merged size-tiered: runs of similar size, and
    /// the smallest beyond this many.
    pub max_meta_files: usize,
    /// Small and large data windows, in seconds.
    pub windows: [u64; 2],
    /// Seconds after a window ends before it counts as closed.
    pub settle_secs: u64,
    /// A window taking files merges its newest files under
    /// `max_tier_bytes` once it holds this many of them.
    pub max_files_per_window: usize,
    /// Size tiers of a window taking files stop at this size, and files
    /// under `min_tier_bytes` make the lowest tier (see
    /// `compaction::policy`).
    pub max_tier_bytes: u64,
    pub min_tier_bytes: u64,
    pub block_cache_bytes: u64,
    pub bloom_bits_per_key: usize,
    /// zstd level of files written by flushes and by compactions.
    pub zstd_levels: [i32; 2],
    pub retention: RetentionView,
    /// Run the documented repairs instead of refusing to open.
    pub repair: bool,
    /// Counts the points of a data cell (file statistics).
    pub cell_stats: Option<CellStats>,
}

impl EmbeddedOptions {
    /// Defaults for tests and tools: 2 h / 1 day windows, small caches.
    pub fn new(dir: PathBuf, layout: KeyLayout) -> Self {
        Self {
            dir,
            layout,
            memtable_bytes: 8 << 20,
            max_meta_files: 16,
            windows: [7200, 86_400],
            settle_secs: 3600,
            max_files_per_window: 16,
            max_tier_bytes: 64 << 20,
            min_tier_bytes: 4 << 20,
            block_cache_bytes: 8 << 20,
            bloom_bits_per_key: 10,
            zstd_levels: [1, 3],
            retention: RetentionView {
                ttls: Vec::new(),
                forever: true,
            },
            repair: false,
            cell_stats: None,
        }
    }
}
