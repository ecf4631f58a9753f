//! The block cache: decompressed, checksum-verified data blocks of table
//! files, shared by every reader and bounded by a byte budget
//! (`storage.block_cache_bytes`). Keyed by (file number, block index); file
//! numbers are never reused, so an entry can never be stale. Eviction is
//! quick_cache's S3-FIFO, which keeps one large scan from flushing the hot
//! set.

use bytes::Bytes;
use quick_cache::Weighter;
use quick_cache::sync::Cache;

#[derive(Clone, Copy, Debug)]
struct ByteWeight;

impl Weighter<(u64, u32), Bytes> for ByteWeight {
    fn weight(&self, _key: &(u64, u32), val: &Bytes) -> u64 {
        // Count the key and bookkeeping too, so empty blocks are not free.
        val.len() as u64 + 64
    }
}

/// Decompressed blocks by (file number, block index).
pub struct BlockCache {
    inner: Option<Cache<(u64, u32), Bytes, ByteWeight>>,
    budget: u64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("budget", &self.budget)
            .field("used", &self.used_bytes())
            .finish()
    }
}

impl BlockCache {
    /// A cache of at most `budget` bytes; 0 disables caching.
    pub fn new(budget: u64) -> Self {
        let inner = (budget > 0).then(|| {
            // Estimated items: budget / 16 KiB blocks.
            let items = (budget / (16 << 10)).max(16) as usize;
            Cache::with_weighter(items, budget, ByteWeight)
        });
        Self { inner, budget }
    }

    pub fn get(&self, file: u64, block: u32) -> Option<Bytes> {
        self.inner.as_ref()?.get(&(file, block))
    }

    pub fn insert(&self, file: u64, block: u32, data: Bytes) {
        if let Some(c) = &self.inner {
            c.insert((file, block), data);
        }
    }

    pub fn used_bytes(&self) -> u64 {
        self.inner.as_ref().map_or(0, Cache::weight)
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Drops every block (operators' `dropcaches`).
    pub fn clear(&self) {
        if let Some(c) = &self.inner {
            c.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respects_the_budget() {
        let c = BlockCache::new(64 << 10);
        for i in 0..100u32 {
            c.insert(1, i, Bytes::from(vec![0u8; 4000]));
        }
        assert!(c.used_bytes() <= 64 << 10);
        let disabled = BlockCache::new(0);
        disabled.insert(1, 1, Bytes::from_static(b"x"));
        assert!(disabled.get(1, 1).is_none());
    }
}
