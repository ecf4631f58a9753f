//! The write paths' caches of series by their text as a client sent it:
//! a line-protocol connection's own ([`SeriesCache`]: a `put` line's
//! metric and tag words exactly as sent, an InfluxDB line's measurement,
//! tags and field key) and the HTTP write endpoints' shared one
//! ([`SharedSeriesCache`]). A hit skips tag splitting, name validation,
//! sorting and the engine's series lookup: the steady state of a
//! collector that sends the same series again and again.
//!
//! Both are keyed by a seeded 128-bit digest of the text
//! ([`TextDigest`], as the engine keys its own series cache), not the
//! text: an entry costs the same small size however long its series'
//! names, and a key is made without an allocation. Each text starts with
//! a byte that says what it is, so texts of different kinds never meet.
//!
//! A connection's cache is bounded twice: per connection (entries) and
//! across connections (bytes, shared budget); a connection whose insert
//! would pass either bound empties its cache and starts over (its lines
//! then take the full path until they are cached again). The bytes an
//! entry is charged include the series key it keeps alive, which outlives
//! the head's copy once the series stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::SeriesRef;
use crate::hashing::{DigestTable, TextDigest};

/// Most series one connection caches: enough for a collector sending a
/// million series on one connection; the shared byte budget binds first
/// when many connections do.
const MAX_ENTRIES: usize = 1 << 20;
/// Bytes an entry costs beside the series key it holds: its table slot
/// (32 bytes, in a table between three eighths and three quarters full)
/// and its [`SeriesRef`].
const ENTRY_OVERHEAD: usize = 64 + std::mem::size_of::<SeriesRef>();

/// Table bytes past which a connection reads its next line ahead and
/// prefetches its slot: beyond a core's L2 share, nearly every lookup of a
/// table this size misses the caches.
const LARGE_TABLE_BYTES: usize = 2 << 20;

/// What a cached text is: its first byte, so that texts of different
/// kinds never meet.
#[derive(Clone, Copy)]
enum TextKind {
    Put,
    Field,
    Line,
    PutJson,
    ImportJson,
    Import,
    PromLabels,
}

/// Bytes cached by all connections, against `server.telnet_series_cache_bytes`.
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

/// The text-digest key of a cached series.
pub type CacheKey = u128;

/// Builds a cache key's text in `scratch` (its kind byte, then `parts`
/// with a 0 between them) and digests it.
fn key_of<'p>(
    digest: &TextDigest,
    kind: TextKind,
    parts: impl IntoIterator<Item = &'p [u8]>,
    scratch: &mut Vec<u8>,
) -> CacheKey {
    scratch.clear();
    scratch.push(kind as u8);
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            scratch.push(0);
        }
        scratch.extend_from_slice(part);
    }
    digest.of_bytes(scratch)
}

/// The key of a remote-write series: its label records (protobuf bytes)
/// as sent. The head keeps it for the series ([`crate::engine::Entry::SentAs`])
/// instead of a cache here: an entry there costs nothing more and leaves
/// with the series.
pub fn prom_labels_key(digest: &TextDigest, records: &[u8], scratch: &mut Vec<u8>) -> CacheKey {
    key_of(digest, TextKind::PromLabels, [records], scratch)
}

#[derive(Debug)]
pub struct SeriesCache {
    /// Text digest → index into `refs`.
    map: DigestTable,
    refs: Vec<SeriesRef>,
    bytes: usize,
    budget: Arc<CacheBudget>,
    digest: TextDigest,
    /// Scratch for building key texts.
    text: Vec<u8>,
}

impl SeriesCache {
    /// An empty cache charging `budget`, keyed with `digest` (the
    /// process's: a cache travels between a connection and its writes).
    pub fn new(budget: Arc<CacheBudget>, digest: TextDigest) -> Self {
        Self {
            map: DigestTable::default(),
            refs: Vec::new(),
            bytes: 0,
            budget,
            digest,
            text: Vec::new(),
        }
    }

    /// The key of a `put` line's series: its metric and tag words as sent.
    pub fn put_key(&mut self, metric: &[u8], tags: &[u8]) -> CacheKey {
        key_of(&self.digest, TextKind::Put, [metric, tags], &mut self.text)
    }

    /// The key of an InfluxDB field: the line's measurement and tags as
    /// sent, and the field key.
    pub fn field_key(&mut self, series: &[u8], field: &[u8]) -> CacheKey {
        key_of(
            &self.digest,
            TextKind::Field,
            [series, field],
            &mut self.text,
        )
    }

    /// The cached series of a key, as an index into [`SeriesCache::refs`].
    pub fn get(&self, key: CacheKey) -> Option<u32> {
        self.map.get(key)
    }

    /// Whether the table is past what the CPU's caches hold, so that a
    /// lookup waits on memory unless its slot was prefetched
    /// ([`SeriesCache::prefetch`]). Below it a lookup hits the caches, and
    /// reading every line ahead measured 3–5 % more CPU a point (BENCHMARKS
    /// "Series churn, step 17").
    pub fn is_large(&self) -> bool {
        self.map.bytes() >= LARGE_TABLE_BYTES
    }

    /// Asks memory for the table slot of a key that [`SeriesCache::get`]
    /// will be asked soon (the connection's next line).
    pub fn prefetch(&self, key: CacheKey) {
        self.map.prefetch(key);
    }

    /// Every cached series, indexed as [`SeriesCache::get`] answers.
    pub fn refs(&self) -> &[SeriesRef] {
        &self.refs
    }

    /// Caches a series under its key; false if the bounds refused it.
    pub fn insert(&mut self, key: CacheKey, series: SeriesRef) -> bool {
        if self.map.get(key).is_some() {
            return true;
        }
        let cost = ENTRY_OVERHEAD + series.key_bytes();
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
        self.refs = Vec::new();
        self.budget.give(self.bytes);
        self.bytes = 0;
    }
}

impl Drop for SeriesCache {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// The series cache of the HTTP write endpoints, shared by all requests
/// (bounded, least recently used entries go first): an InfluxDB line's
/// measurement, tags and field keys as sent → the series of its fields,
/// in order (one lookup per line); an `/api/put` element's metric and
/// tags text → its series; an import line's series text → its series.
#[derive(Debug)]
pub struct SharedSeriesCache {
    cache: quick_cache::sync::Cache<CacheKey, Arc<[SeriesRef]>, EntryBytes>,
    digest: TextDigest,
}

/// An entry's weight: its key, series handles and the series keys they
/// hold, and bookkeeping.
#[derive(Clone, Debug)]
struct EntryBytes;

impl quick_cache::Weighter<CacheKey, Arc<[SeriesRef]>> for EntryBytes {
    fn weight(&self, _key: &CacheKey, val: &Arc<[SeriesRef]>) -> u64 {
        let held: usize = val.iter().map(SeriesRef::key_bytes).sum();
        (ENTRY_OVERHEAD + std::mem::size_of_val(&val[..]) + held) as u64
    }
}

impl SharedSeriesCache {
    /// A cache of at most `bytes` of entries, keyed with `digest`.
    pub fn new(bytes: usize, digest: TextDigest) -> Self {
        Self {
            cache: quick_cache::sync::Cache::with_weighter(
                (bytes / (2 * ENTRY_OVERHEAD)).max(16),
                bytes.max(64 << 10) as u64,
                EntryBytes,
            ),
            digest,
        }
    }

    /// The key of a line: its series text and its field keys.
    pub fn line_key<'k>(
        &self,
        series: &'k [u8],
        fields: impl Iterator<Item = &'k [u8]>,
        scratch: &mut Vec<u8>,
    ) -> CacheKey {
        let parts = std::iter::once(series).chain(fields);
        key_of(&self.digest, TextKind::Line, parts, scratch)
    }

    /// The key of an `/api/put` element: its `metric` and `tags` JSON text
    /// as sent.
    pub fn put_key(&self, metric: &str, tags: &str, scratch: &mut Vec<u8>) -> CacheKey {
        key_of(
            &self.digest,
            TextKind::PutJson,
            [metric.as_bytes(), tags.as_bytes()],
            scratch,
        )
    }

    /// The key of a JSON import line's series: its `metric` object's text.
    pub fn import_json_key(&self, series: &str, scratch: &mut Vec<u8>) -> CacheKey {
        key_of(
            &self.digest,
            TextKind::ImportJson,
            [series.as_bytes()],
            scratch,
        )
    }

    /// The key of an import text line's series: its metric and tag words
    /// as sent.
    pub fn import_text_key(&self, metric: &[u8], tags: &[u8], scratch: &mut Vec<u8>) -> CacheKey {
        key_of(&self.digest, TextKind::Import, [metric, tags], scratch)
    }

    /// The series of a key.
    pub fn get(&self, key: CacheKey) -> Option<Arc<[SeriesRef]>> {
        self.cache.get(&key)
    }

    /// Caches a key's series.
    pub fn insert(&self, key: CacheKey, series: Arc<[SeriesRef]>) {
        self.cache.insert(key, series);
    }

    pub fn clear(&self) {
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_cache_is_bounded_by_bytes() {
        let cache = SharedSeriesCache::new(64 << 10, TextDigest::random());
        let none: Arc<[SeriesRef]> = Arc::from(Vec::new());
        for i in 0..10_000u128 {
            cache.insert(i, Arc::clone(&none));
        }
        assert!(cache.cache.weight() <= 64 << 10, "{}", cache.cache.weight());
        assert!(cache.cache.len() < 10_000, "{}", cache.cache.len());
        let mut scratch = Vec::new();
        let key = cache.put_key("m", "{\"a\":\"b\"}", &mut scratch);
        cache.insert(key, Arc::clone(&none));
        assert!(cache.get(key).is_some());
        assert!(
            cache
                .get(cache.put_key("m", "{\"a\":\"c\"}", &mut scratch))
                .is_none()
        );
    }

    #[test]
    fn keys_of_different_kinds_or_splits_differ() {
        let digest = TextDigest::random();
        let mut cache = SeriesCache::new(Arc::new(CacheBudget::new(1 << 20)), digest);
        let shared = SharedSeriesCache::new(1 << 20, digest);
        let mut scratch = Vec::new();
        let keys = [
            cache.put_key(b"m", b"a=b"),
            cache.put_key(b"m a", b"=b"),
            cache.field_key(b"m", b"a=b"),
            shared.line_key(b"m", [&b"a=b"[..]].into_iter(), &mut scratch),
            shared.put_key("m", "a=b", &mut scratch),
            shared.import_json_key("m", &mut scratch),
            shared.import_text_key(b"m", b"a=b", &mut scratch),
            prom_labels_key(&digest, b"m\0a=b", &mut scratch),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(cache.put_key(b"m", b"a=b"), keys[0]);
    }
}
