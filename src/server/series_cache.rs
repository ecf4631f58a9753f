//! A line-protocol connection's cache of the series it has written: the
//! raw text of a `put` line's series (metric and tag words exactly as
//! sent) → the engine's [`SeriesRef`]. A hit skips tag splitting, name
//! validation, sorting and the engine's series lookup: the steady state of
//! a collector that sends the same series again and again.
//!
//! Bounded twice: per connection (entries) and across connections (bytes
//! of keys, shared budget); a connection whose insert would pass either
//! bound empties its cache and starts over (its lines then take the full
//! path until they are cached again).
//!
//! HTTP writes (InfluxDB's `/write`) have no connection to keep a cache
//! in: [`SharedSeriesCache`] serves them, one bounded concurrent cache with
//! the same keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::SeriesRef;
use crate::hashing::BytesMap;

/// Most series one connection caches.
const MAX_ENTRIES: usize = 1 << 16;
/// Bytes an entry costs beyond its key (map slot, `SeriesRef`, `Arc`).
const ENTRY_OVERHEAD: usize = 96;

/// Key bytes cached by all connections, against `server.telnet_series_cache_bytes`.
#[derive(Debug, Default)]
pub struct CacheBudget {
    used: AtomicUsize,
    limit: usize,
}

impl CacheBudget {
    pub fn new(limit: usize) -> Self {
        Self {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    fn take(&self, n: usize) -> bool {
        let prev = self.used.fetch_add(n, Ordering::Relaxed);
        if prev + n > self.limit {
            self.used.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
pub struct SeriesCache {
    /// Raw series text → index into `refs`.
    map: BytesMap<Box<[u8]>, u32>,
    refs: Vec<SeriesRef>,
    bytes: usize,
    budget: Arc<CacheBudget>,
    /// Scratch for building keys.
    key: Vec<u8>,
}

impl SeriesCache {
    pub fn new(budget: Arc<CacheBudget>) -> Self {
        Self {
            map: BytesMap::default(),
            refs: Vec::new(),
            bytes: 0,
            budget,
            key: Vec::with_capacity(256),
        }
    }

    /// The cached series of a series text (metric and tag words as sent),
    /// as an index into [`SeriesCache::refs`].
    pub fn lookup(&mut self, metric: &[u8], tags: &[u8]) -> Option<u32> {
        self.key.clear();
        self.key.extend_from_slice(metric);
        self.key.push(0);
        self.key.extend_from_slice(tags);
        self.map.get(&self.key[..]).copied()
    }

    /// The cached series of an InfluxDB field: the line's measurement and
    /// tags as sent, and the field key (kept apart from put texts by the
    /// leading `0x01`).
    pub fn lookup_field(&mut self, series: &[u8], field: &[u8]) -> Option<u32> {
        self.key.clear();
        self.key.push(1);
        self.key.extend_from_slice(series);
        self.key.push(0);
        self.key.extend_from_slice(field);
        self.map.get(&self.key[..]).copied()
    }

    /// The key of an InfluxDB field ([`SeriesCache::lookup_field`]).
    pub fn owned_field_key(series: &[u8], field: &[u8]) -> Box<[u8]> {
        let mut k = Vec::with_capacity(series.len() + 2 + field.len());
        k.push(1);
        k.extend_from_slice(series);
        k.push(0);
        k.extend_from_slice(field);
        k.into_boxed_slice()
    }

    /// The key of a series text, to [`SeriesCache::insert`] it once the
    /// engine has resolved it.
    pub fn owned_key(metric: &[u8], tags: &[u8]) -> Box<[u8]> {
        let mut k = Vec::with_capacity(metric.len() + 1 + tags.len());
        k.extend_from_slice(metric);
        k.push(0);
        k.extend_from_slice(tags);
        k.into_boxed_slice()
    }

    /// Every cached series, indexed as [`SeriesCache::lookup`] answers.
    pub fn refs(&self) -> &[SeriesRef] {
        &self.refs
    }

    /// Caches a series under its raw text; false if the bounds refused it.
    pub fn insert(&mut self, key: Box<[u8]>, series: SeriesRef) -> bool {
        if self.map.contains_key(&key) {
            return true;
        }
        let cost = key.len() + ENTRY_OVERHEAD;
        if self.map.len() >= MAX_ENTRIES || !self.budget.take(cost) {
            self.clear();
            if !self.budget.take(cost) {
                return false;
            }
        }
        self.bytes += cost;
        let index = self.refs.len() as u32;
        self.refs.push(series);
        self.map.insert(key, index);
        true
    }

    /// Replaces a series the engine registered again.
    pub fn refresh(&mut self, index: u32, series: SeriesRef) {
        if let Some(r) = self.refs.get_mut(index as usize) {
            *r = series;
        }
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.refs.clear();
        self.budget.give(self.bytes);
        self.bytes = 0;
    }
}

impl Drop for SeriesCache {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// The raw-text series cache of the HTTP write endpoints, shared by all
/// requests (bounded, least recently used entries go first): an InfluxDB
/// line's measurement, tags and field keys as sent → the series of its
/// fields, in order (one lookup per line); an `/api/put` element's metric
/// and tags text → its series.
#[derive(Debug)]
pub struct SharedSeriesCache {
    cache: quick_cache::sync::Cache<Box<[u8]>, Arc<[SeriesRef]>, EntryBytes>,
}

/// Longest key the shared cache keeps: an accepted line or element may
/// still carry megabytes of text (JSON whitespace between tags, say); such
/// a series takes the full path every time rather than push out thousands
/// of others.
const MAX_SHARED_KEY: usize = 4096;

/// An entry's weight: its bytes (key, series handles, bookkeeping).
#[derive(Clone, Debug)]
struct EntryBytes;

impl quick_cache::Weighter<Box<[u8]>, Arc<[SeriesRef]>> for EntryBytes {
    fn weight(&self, key: &Box<[u8]>, val: &Arc<[SeriesRef]>) -> u64 {
        (key.len() + ENTRY_OVERHEAD + std::mem::size_of_val(&val[..])) as u64
    }
}

impl SharedSeriesCache {
    /// A cache of at most `bytes` of entries (keys as sent, series handles).
    pub fn new(bytes: usize) -> Self {
        Self {
            cache: quick_cache::sync::Cache::with_weighter(
                (bytes / (256 + ENTRY_OVERHEAD)).max(16),
                bytes.max(4 * MAX_SHARED_KEY) as u64,
                EntryBytes,
            ),
        }
    }

    /// The key of a line: its series text and its field keys.
    pub fn line_key<'k>(series: &[u8], fields: impl Iterator<Item = &'k [u8]>, out: &mut Vec<u8>) {
        out.clear();
        out.push(2);
        out.extend_from_slice(series);
        for k in fields {
            out.push(0);
            out.extend_from_slice(k);
        }
    }

    /// The key of an `/api/put` element: its `metric` and `tags` JSON text
    /// as sent.
    pub fn put_key(metric: &str, tags: &str, out: &mut Vec<u8>) {
        out.clear();
        out.push(3);
        out.extend_from_slice(metric.as_bytes());
        out.push(0);
        out.extend_from_slice(tags.as_bytes());
    }

    /// The series of a line's fields, by [`SharedSeriesCache::line_key`].
    pub fn get(&self, key: &[u8]) -> Option<Arc<[SeriesRef]>> {
        self.cache.get(key)
    }

    /// Caches a key's series (a key longer than [`MAX_SHARED_KEY`] is not
    /// kept).
    pub fn insert(&self, key: Box<[u8]>, series: Arc<[SeriesRef]>) {
        if key.len() <= MAX_SHARED_KEY {
            self.cache.insert(key, series);
        }
    }

    pub fn clear(&self) {
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_cache_is_bounded_by_bytes_and_skips_huge_keys() {
        let cache = SharedSeriesCache::new(64 << 10);
        let none: Arc<[SeriesRef]> = Arc::from(Vec::new());
        for i in 0..1000u32 {
            let mut key = vec![b'x'; 4000];
            key[..4].copy_from_slice(&i.to_le_bytes());
            cache.insert(key.into_boxed_slice(), Arc::clone(&none));
        }
        assert!(cache.cache.weight() <= 64 << 10, "{}", cache.cache.weight());
        assert!(cache.cache.len() < 20, "{}", cache.cache.len());
        let huge = vec![b'y'; MAX_SHARED_KEY + 1].into_boxed_slice();
        cache.insert(huge.clone(), Arc::clone(&none));
        assert!(cache.get(&huge).is_none());
        let small = b"\x03\"m\"\x00{\"a\":\"b\"}".to_vec().into_boxed_slice();
        cache.insert(small.clone(), Arc::clone(&none));
        assert!(cache.get(&small).is_some());
    }
}
