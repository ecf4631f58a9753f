//! The series head: every series the engine knows (the series registry)
//! and, per series, its open hours as compressed appendable chunks in the
//! native cell codec — a few bytes per point plus a bounded overhead per
//! series and per open hour.
//!
//! Points that arrive in order are appended to the hour's chunk; a point at
//! or before the chunk's last offset (out of order, or a rewrite of an
//! existing timestamp) goes to the hour's small out-of-order buffer, which
//! wins over the chunk on an equal timestamp and is merged into the cell
//! when the hour is flushed.
//!
//! The registry is bounded (`head.max_series`): past the bound the flusher
//! forgets series without points in the head (second-chance, CLOCK, order)
//! and writes out and forgets the longest silent ones (`Take::Idle`); they
//! are resolved again if they come back. Series ids are slots reused after
//! eviction, kept in fixed pages (`Slots`: the registry never copies itself
//! to grow); a generation number tells a stale reference from the slot's
//! new owner. Series are found by key and by the digest of the text a
//! write named them by, through two `SlotIndex` tables of bare slot ids.
//!
//! Hours being flushed ("frozen") stay readable here until the store has
//! published them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::codec::cell::{DecodedPoint, merge_points};
use crate::codec::native::{self, Chunk};
use crate::codec::rowkey::split_timestamp;
use crate::codec::{KeyLayout, StoredValue};

use super::pending::{PendingPoint, PendingQueue, PendingWrite};
use super::slot_index::SlotIndex;
use super::slots::Slots;

/// The entry in slot `id`, if taken: for the lookup tables' closures,
/// which borrow the slots beside a table borrowed mutably.
fn slot(slots: &Slots<SeriesEntry>, id: u32) -> Option<&SeriesEntry> {
    slots.get(id as usize)?.as_ref()
}

/// Forgotten series whose key hashes [`Head::removed_since`] remembers.
const RECENT_REMOVALS: usize = 1 << 17;

/// `SeriesEntry::text` of a series whose text digest is not known.
const NO_TEXT: [u64; 2] = [0, 0];

/// A series-text digest as an entry holds it (two words: a `u128` field
/// would align the entry to 16 bytes); never [`NO_TEXT`].
fn text_words(digest: u128) -> [u64; 2] {
    match [digest as u64, (digest >> 64) as u64] {
        NO_TEXT => [0, 1],
        words => words,
    }
}

/// `SeriesEntry::newest_recorded` of a series the index records no hour
/// of: not an hour's base (those are multiples of 3600), and below them
/// all but the first.
pub const NONE_RECORDED: u32 = 1;

/// Hour rows opened in closed hours ([`Head::closed_rows`]) after which the
/// flusher looks for closed hours without waiting for its interval (of wall
/// time) once the interval has passed in data time: in a backfill, where
/// every hour is closed and data time runs ahead of the clock, series that
/// stopped are written out and leave memory as it goes, not all at the
/// next interval; a series still taking points at least once an interval
/// (of data time) keeps its newest hour.
pub const CLOSED_ROWS_LOOK: usize = 1 << 16;

/// One open hour of one series.
#[derive(Debug)]
pub struct HourData {
    pub base: u32,
    pub chunk: Chunk,
    /// Out-of-order points in arrival order (a later one wins).
    pub ooo: Vec<DecodedPoint>,
    /// Smallest and largest value in `chunk` (as doubles), kept as points
    /// are appended so that a query wanting only that (hourly max or min
    /// buckets) need not decode the chunk; NaN when not known (an hour
    /// loaded from a checkpoint). Stored values are never NaN.
    range: (f64, f64),
}

/// Inserts an hour at `i`, growing the series' hours by one: most series
/// have one open hour, and the default growth would hold room for four
/// (some 290 bytes a series idle).
fn insert_hour(hours: &mut Vec<HourData>, i: usize, hour: HourData) {
    hours.reserve_exact(1);
    hours.insert(i, hour);
}

/// A value range with `v` taken in: strict comparisons keep the earliest of
/// equal values (0.0 before -0.0 stays 0.0) and pass over NaN, as the
/// query layer's fold does, so an hour's range stands for its points.
fn widen((lo, hi): (f64, f64), v: f64) -> (f64, f64) {
    (if v < lo { v } else { lo }, if v > hi { v } else { hi })
}

/// A stored value as the query layer reads it (`Num::as_f64`).
pub fn value_f64(v: StoredValue) -> f64 {
    match v {
        StoredValue::Int(i) => i as f64,
        StoredValue::Float(f) => f64::from(f),
        StoredValue::Double(d) => d,
    }
}

impl HourData {
    fn new(base: u32) -> Self {
        Self {
            base,
            chunk: Chunk::new(),
            ooo: Vec::new(),
            range: (f64::NAN, f64::NAN),
        }
    }

    /// Appends a point to the chunk, or to the out-of-order buffer when it
    /// is not after the chunk's last one.
    fn push(&mut self, p: DecodedPoint) {
        let was_empty = self.chunk.is_empty();
        match self.chunk.push(p) {
            Ok(()) => {
                let v = value_f64(p.value);
                if was_empty {
                    self.range = (v, v);
                } else if !self.range.0.is_nan() {
                    self.range = widen(self.range, v);
                }
            }
            Err(p) => self.ooo.push(p),
        }
    }

    /// The smallest and largest value in the chunk, by decoding it (NaN if
    /// empty or undecodable).
    fn chunk_range(&self) -> (f64, f64) {
        let mut pts = Vec::with_capacity(self.chunk.len());
        if self.chunk.decode(&mut pts).is_err() || pts.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        pts.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |range, p| {
                widen(range, value_f64(p.value))
            })
    }

    /// The smallest and largest value of the hour's points, when known
    /// without decoding (no out-of-order points, a range kept since the
    /// hour opened).
    pub fn value_range(&self) -> Option<(f64, f64)> {
        (self.ooo.is_empty() && !self.chunk.is_empty() && !self.range.0.is_nan())
            .then_some(self.range)
    }

    fn heap_bytes(&self) -> usize {
        self.chunk.heap_bytes() + self.ooo.capacity() * std::mem::size_of::<DecodedPoint>()
    }

    fn len(&self) -> usize {
        self.chunk.len() + self.ooo.len()
    }

    /// Every point of the hour, sorted, one per offset (the out-of-order
    /// buffer wins).
    pub fn points(&self) -> Vec<DecodedPoint> {
        let mut pts = Vec::with_capacity(self.len());
        if let Err(e) = self.chunk.decode(&mut pts) {
            // A chunk the head itself built cannot be malformed; if it ever
            // is, say so rather than return wrong data silently.
            tracing::error!(error = %e, "undecodable head chunk");
        }
        if self.ooo.is_empty() {
            pts
        } else {
            merge_points(&pts, &self.ooo)
        }
    }

    /// Rebuilds the hour from points (after a delete or a merge).
    fn from_points(base: u32, points: &[DecodedPoint]) -> Self {
        let mut h = Self::new(base);
        for &p in points {
            h.push(p);
        }
        h
    }
}

#[derive(Debug)]
pub struct SeriesEntry {
    pub key: Arc<[u8]>,
    pub metric: u64,
    /// Digest of the series' text (metric and tags as the write path
    /// writes them), if a write named the series since it entered the
    /// head: the write path finds the series by it without resolving UIDs.
    text: [u64; 2],
    pub generation: u32,
    /// WAL segment epoch in which this series was last defined.
    pub wal_epoch: u64,
    /// Open hours, sorted by base.
    pub hours: Vec<HourData>,
    /// Base hour of the newest point inserted since the series entered the
    /// head (0 = none yet), kept after the hour is flushed: where
    /// `/api/query/last` looks first. Updated only when an hour opens.
    pub newest_base: u32,
    /// The newest hour the series index records for this series, as far
    /// as this entry knows (0 = not read since the series entered the
    /// head; [`NONE_RECORDED`] = none, known without reading: a series new
    /// to the index): a flush records an hour only when it is newer.
    pub newest_recorded: u32,
    referenced: bool,
    /// The store holds nothing of this series: it was new to the series
    /// index when registered, and no flush has taken its hours since.
    absent_from_store: bool,
    /// Points of this series logged but not yet durable (in
    /// [`Head::pending`]): the slot may not be given up meanwhile.
    pub pending: u32,
    /// The second of the newest point inserted (data time): how long the
    /// series has been silent, against [`Head::newest_secs`].
    pub last_secs: u32,
    /// [`Head::round`] when the series last took a point.
    written_round: u16,
}

/// One frozen row: series key and hour.
pub type FrozenRow = (Arc<[u8]>, HourData);

/// Rows taken out of the head for a flush, readable until published.
#[derive(Debug, Default)]
pub struct Frozen {
    /// Per metric UID.
    pub rows: HashMap<u64, Vec<FrozenRow>>,
    /// Series of which the store held nothing before this flush (new to
    /// the index when registered, not flushed since): their tier rows need
    /// not be read.
    pub absent: HashSet<Arc<[u8]>>,
}

impl Frozen {
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn row_count(&self) -> usize {
        self.rows.values().map(Vec::len).sum()
    }
}

/// How a flush picks hours.
#[derive(Debug, Clone, Copy)]
pub enum Take {
    /// Hours whose base is below this (closed hours).
    Before(u32),
    /// Hours whose base is below `before`, but not the hour holding the
    /// newest point of a series written during round `round` or since (see
    /// [`Head::next_round`]): in a backfill every hour is closed, and a
    /// series still being written would otherwise be written out at every
    /// round, each time a new cell of its row. Nor the first hour of a
    /// series new to the store that holds two (see [`Head::take_some`]).
    Closed { before: u32, round: u16 },
    /// Oldest hours first until at least this many bytes are taken.
    Bytes(usize),
    /// Everything.
    All,
    /// Every hour of the series whose newest point is before this second
    /// (stopped series).
    Idle(u32),
}

#[derive(Debug, Default)]
pub struct Head {
    slots: Slots<SeriesEntry>,
    free: Vec<u32>,
    /// Slot ids by series key (hashed with `seed`).
    by_key: SlotIndex,
    /// Slot ids by series-text digest (for entries that have one).
    by_text: SlotIndex,
    /// Seed of the key hash, random per process: series keys come from
    /// UIDs clients can steer, so their hashes must not be foreseeable.
    seed: u64,
    by_metric: HashMap<u64, HashSet<u32>>,
    next_gen: u32,
    /// The second of the newest point ever inserted (data time).
    pub newest_secs: u32,
    /// Series registered since the process started, and how many of them
    /// the metrics have counted.
    pub created: u64,
    pub created_counted: u64,
    /// Series forgotten since the process started: a writer that learnt
    /// something of a series before taking the lock knows it still holds
    /// when this has not moved.
    pub removed: u64,
    /// Key hashes of the last [`RECENT_REMOVALS`] series forgotten, oldest
    /// first, and how many times each hash is among them.
    recent_removals: VecDeque<u64>,
    recent_removal_counts: HashMap<u64, u32>,
    hand: usize,
    /// Rounds of the flusher's look for closed hours ([`Take::Closed`]),
    /// wrapping: a series whose `written_round` is the round just ended
    /// took a point since the previous look.
    round: u16,
    /// Hours below this base are closed (the engine sets it from the
    /// clock on every write); 0 = not known yet.
    pub closed_before: u32,
    /// Hour rows opened in closed hours since the flusher last looked for
    /// them (a backfill, a late point): past [`CLOSED_ROWS_LOOK`] the
    /// flusher looks at once rather than at its next interval, if data
    /// time has moved on by that interval since the last look.
    pub closed_rows: usize,
    /// [`Head::newest_secs`] when the flusher last looked for closed hours.
    pub looked_secs: u32,
    /// Bytes of the registered series' keys.
    key_bytes: usize,
    /// Heap bytes of chunks and out-of-order buffers.
    pub bytes: usize,
    pub points: usize,
    /// Open hours across all series.
    pub hours: usize,
    pub frozen: Vec<Arc<Frozen>>,
    /// Writes logged but not yet durable, applied once they are.
    pub pending: PendingQueue,
}

impl Head {
    /// An empty head whose key hash is seeded with `seed`.
    pub fn with_seed(seed: u64) -> Self {
        Self {
            seed,
            ..Self::default()
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn series_count(&self) -> usize {
        self.by_key.len()
    }

    /// Bytes the registry holds besides the points: entries, keys, the
    /// lookup tables and the hours' fixed parts (an estimate from
    /// capacities; allocator overhead not counted).
    pub fn registry_bytes(&self) -> usize {
        use std::mem::size_of;
        let arc_counts = 2 * size_of::<usize>();
        let by_metric: usize = self
            .by_metric
            .values()
            .map(|ids| ids.capacity() * (size_of::<u32>() + 1))
            .sum();
        self.slots.capacity() * size_of::<Option<SeriesEntry>>()
            + self.free.capacity() * size_of::<u32>()
            + self.by_key.heap_bytes()
            + self.by_text.heap_bytes()
            + self.by_key.len() * arc_counts
            + self.recent_removals.capacity() * size_of::<u64>()
            + self.recent_removal_counts.capacity() * (size_of::<(u64, u32)>() + 1)
            + self.key_bytes
            + by_metric
            + self.hours * size_of::<HourData>()
    }

    /// Slots (live or free): series ids are below this.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn entry(&self, id: u32) -> Option<&SeriesEntry> {
        slot(&self.slots, id)
    }

    pub fn entry_mut(&mut self, id: u32) -> Option<&mut SeriesEntry> {
        self.slots.get_mut(id as usize)?.as_mut()
    }

    /// True if `id` still belongs to generation `generation`.
    pub fn is_current(&self, id: u32, generation: u32) -> bool {
        self.entry(id).is_some_and(|e| e.generation == generation)
    }

    pub fn id_of(&self, key: &[u8]) -> Option<u32> {
        self.by_key.find(xxh3_64_with_seed(key, self.seed), |id| {
            self.entry(id).is_some_and(|e| *e.key == *key)
        })
    }

    /// Whether the series `key` may have been forgotten since
    /// [`Head::removed`] was `since` (a writer that found the series index
    /// without its row then knows nothing was flushed of it meanwhile when
    /// this is false). True when too many series were forgotten since to
    /// tell.
    pub fn removed_since(&self, key: &[u8], since: u64) -> bool {
        if self.removed == since {
            return false;
        }
        if self.removed - since > self.recent_removals.len() as u64 {
            return true;
        }
        self.recent_removal_counts
            .contains_key(&xxh3_64_with_seed(key, self.seed))
    }

    /// The series (id, generation) whose text has digest `digest`, if a
    /// write named it since it entered the head ([`Head::set_text`]).
    pub fn id_of_text(&self, digest: u128) -> Option<(u32, u32)> {
        let text = text_words(digest);
        let id = self
            .by_text
            .find(text[0], |id| self.entry(id).is_some_and(|e| e.text == text))?;
        self.entry(id).map(|e| (id, e.generation))
    }

    /// Notes the digest of the text a write named series `id` by.
    pub fn set_text(&mut self, id: u32, digest: u128) {
        let text = text_words(digest);
        let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        if e.text == text {
            return;
        }
        if e.text != NO_TEXT {
            self.by_text.remove(e.text[0], id);
        }
        e.text = text;
        let slots = &self.slots;
        self.by_text.insert(text[0], id, |other| {
            slot(slots, other).map_or(0, |e| e.text[0])
        });
    }

    /// Forgets every series' text digest (`dropcaches`): the next write of
    /// each resolves its UIDs again.
    pub fn drop_texts(&mut self) {
        self.by_text.clear();
        for e in self.slots.iter_mut().flatten() {
            e.text = NO_TEXT;
        }
    }

    /// The id of a series, registering it if new. Returns `(id, generation)`.
    pub fn register(&mut self, key: Arc<[u8]>, metric: u64) -> (u32, u32) {
        if let Some(id) = self.id_of(&key)
            && let Some(e) = self.entry_mut(id)
        {
            e.referenced = true;
            return (id, e.generation);
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        self.created += 1;
        let generation = self.next_gen;
        let entry = SeriesEntry {
            key: Arc::clone(&key),
            metric,
            text: NO_TEXT,
            generation,
            wal_epoch: 0,
            hours: Vec::new(),
            newest_base: 0,
            newest_recorded: 0,
            referenced: true,
            absent_from_store: false,
            pending: 0,
            // New, not silent: as fresh as the newest point.
            last_secs: self.newest_secs,
            written_round: self.round,
        };
        let reused = self.free.pop().and_then(|id| {
            let free = self.slots.get_mut(id as usize);
            debug_assert!(free.is_some(), "free slot {id} past the slots");
            Some((id, free?))
        });
        let id = match reused {
            Some((id, free)) => {
                *free = Some(entry);
                id
            }
            None => self.slots.push(Some(entry)) as u32,
        };
        self.key_bytes += key.len();
        let (slots, seed) = (&self.slots, self.seed);
        self.by_key
            .insert(xxh3_64_with_seed(&key, seed), id, |other| {
                slot(slots, other).map_or(0, |e| xxh3_64_with_seed(&e.key, seed))
            });
        self.by_metric.entry(metric).or_default().insert(id);
        (id, generation)
    }

    /// Notes that the store holds nothing of series `id`: the series
    /// index held no row of it when it was registered, so no hour of it is
    /// recorded and no tier row of it exists. Only for a series just
    /// registered (nothing flushed since).
    pub fn new_to_store(&mut self, id: u32) {
        if let Some(e) = self.entry_mut(id)
            && e.newest_recorded == 0
        {
            e.newest_recorded = NONE_RECORDED;
            e.absent_from_store = true;
        }
    }

    /// Forgets idle series (no points in the head) until at most
    /// `max_series` remain or none is idle; second-chance order. Returns
    /// how many were forgotten.
    pub fn evict(&mut self, max_series: usize) -> usize {
        let mut evicted = 0;
        let mut scanned = 0;
        let n = self.slots.len();
        while self.by_key.len() > max_series && scanned < 2 * n {
            scanned += 1;
            self.hand = (self.hand + 1) % n.max(1);
            let id = self.hand as u32;
            let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
                continue;
            };
            if !e.hours.is_empty() || e.pending > 0 {
                continue;
            }
            if e.referenced {
                e.referenced = false;
                continue;
            }
            if self.remove(id) {
                evicted += 1;
            }
        }
        evicted
    }

    /// Forgets the stopped series: no open hours, nothing pending, newest
    /// point before `before` (data time). Returns how many.
    pub fn evict_idle(&mut self, before: u32) -> usize {
        self.evict_written(|e| e.last_secs < before)
    }

    /// Forgets the series all of whose points were in hours before
    /// `before` (flushed): no open hours, nothing pending, and a newest
    /// hour inserted before `before` (a series registered but not yet
    /// written to, as on a shared store between its register and insert,
    /// has none). Returns how many.
    pub fn evict_closed(&mut self, before: u32) -> usize {
        self.evict_written(|e| e.newest_base != 0 && e.newest_base < before)
    }

    /// Forgets the series with no open hours and nothing pending that
    /// `pick` picks; returns how many.
    fn evict_written(&mut self, pick: impl Fn(&SeriesEntry) -> bool) -> usize {
        let picked: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(id, e)| {
                let e = e.as_ref()?;
                (e.hours.is_empty() && e.pending == 0 && pick(e)).then_some(id as u32)
            })
            .collect();
        picked.into_iter().filter(|&id| self.remove(id)).count()
    }

    /// Whether a series stopped before `before` still has open hours.
    pub fn has_idle_hours(&self, before: u32) -> bool {
        self.slots
            .iter()
            .flatten()
            .any(|e| !e.hours.is_empty() && e.last_secs < before)
    }

    /// Gives up a series' slot; false if it was free.
    fn remove(&mut self, id: u32) -> bool {
        let Some(e) = self.slots.get_mut(id as usize).and_then(Option::take) else {
            return false;
        };
        let hash = xxh3_64_with_seed(&e.key, self.seed);
        self.by_key.remove(hash, id);
        if self.recent_removals.len() == RECENT_REMOVALS
            && let Some(oldest) = self.recent_removals.pop_front()
            && let Some(count) = self.recent_removal_counts.get_mut(&oldest)
        {
            *count -= 1;
            if *count == 0 {
                self.recent_removal_counts.remove(&oldest);
            }
        }
        self.recent_removals.push_back(hash);
        *self.recent_removal_counts.entry(hash).or_insert(0) += 1;
        if e.text != NO_TEXT {
            self.by_text.remove(e.text[0], id);
        }
        self.key_bytes -= e.key.len();
        self.removed += 1;
        if let Some(set) = self.by_metric.get_mut(&e.metric) {
            set.remove(&id);
            if set.is_empty() {
                self.by_metric.remove(&e.metric);
            }
        }
        self.free.push(id);
        true
    }

    /// Applies writes the log has made durable, in log order.
    pub fn apply(&mut self, writes: Vec<PendingWrite>) {
        for w in writes {
            match w {
                PendingWrite::Points(mut points) => {
                    for &(id, _, _) in &points {
                        if let Some(e) = self.entry_mut(id) {
                            e.pending = e.pending.saturating_sub(1);
                        }
                    }
                    self.insert_batch(&mut points);
                }
                PendingWrite::Delete {
                    keys,
                    start_ms,
                    end_ms,
                } => {
                    for key in &keys {
                        self.delete(key, start_ms, end_ms);
                    }
                }
            }
        }
    }

    /// Forgets writes that will never be durable (the log failed).
    pub fn discard_pending(&mut self) {
        for w in self.pending.take_all() {
            if let PendingWrite::Points(points) = w {
                for (id, _, _) in points {
                    if let Some(e) = self.entry_mut(id) {
                        e.pending = e.pending.saturating_sub(1);
                    }
                }
            }
        }
    }

    /// Inserts logged points, sorted by series first (stably, so a series
    /// keeps its order): a batch interleaves many series, and inserting in
    /// slot order walks the head almost sequentially instead of missing the
    /// cache on every point (WAL replay measured twice as fast).
    pub fn insert_batch(&mut self, batch: &mut [PendingPoint]) {
        batch.sort_by_key(|p| p.0);
        for &(id, raw_ts, value) in batch.iter() {
            self.insert(id, raw_ts, value);
        }
    }

    /// Appends one point. The caller has logged it.
    pub fn insert(&mut self, id: u32, raw_ts: u64, value: StoredValue) {
        let (base, offset_ms, ms) = split_timestamp(raw_ts);
        let p = DecodedPoint {
            offset_ms,
            ms,
            value,
        };
        let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        e.referenced = true;
        e.written_round = self.round;
        let secs = base.saturating_add(offset_ms / 1000);
        e.last_secs = e.last_secs.max(secs);
        self.newest_secs = self.newest_secs.max(secs);
        let i = match e.hours.binary_search_by_key(&base, |h| h.base) {
            Ok(i) => i,
            Err(i) => {
                insert_hour(&mut e.hours, i, HourData::new(base));
                e.newest_base = e.newest_base.max(base);
                self.hours += 1;
                if base < self.closed_before {
                    self.closed_rows += 1;
                }
                i
            }
        };
        let h = &mut e.hours[i];
        let before = h.heap_bytes();
        h.push(p);
        self.points += 1;
        // A chunk may shrink when it seals a block.
        self.bytes = (self.bytes + h.heap_bytes()).saturating_sub(before);
    }

    /// Removes the points of `key` with `start_ms <= ts <= end_ms`.
    /// Returns how many were removed.
    pub fn delete(&mut self, key: &[u8], start_ms: i64, end_ms: i64) -> usize {
        let Some(id) = self.id_of(key) else {
            return 0;
        };
        let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return 0;
        };
        let mut removed = 0;
        let (mut bytes, mut points, mut hours) = (self.bytes, self.points, self.hours);
        e.hours.retain_mut(|h| {
            let base_ms = i64::from(h.base) * 1000;
            if base_ms + 3_600_000 <= start_ms || base_ms > end_ms {
                return true;
            }
            let pts = h.points();
            let kept: Vec<DecodedPoint> = pts
                .iter()
                .copied()
                .filter(|p| {
                    let ts = base_ms + i64::from(p.offset_ms);
                    ts < start_ms || ts > end_ms
                })
                .collect();
            removed += pts.len() - kept.len();
            bytes -= h.heap_bytes();
            points -= h.len();
            if kept.is_empty() {
                hours -= 1;
                return false;
            }
            *h = HourData::from_points(h.base, &kept);
            bytes += h.heap_bytes();
            points += h.len();
            true
        });
        (self.bytes, self.points, self.hours) = (bytes, points, hours);
        removed
    }

    /// Takes hours out for a flush; they stay readable (frozen) until
    /// [`Head::unfreeze`].
    pub fn take(&mut self, take: Take) -> Arc<Frozen> {
        self.take_some(take, usize::MAX).0
    }

    /// Starts a new round of looking for closed hours; returns the round
    /// that ends, for [`Take::Closed`].
    pub fn next_round(&mut self) -> u16 {
        let ended = self.round;
        self.round = self.round.wrapping_add(1);
        ended
    }

    /// The base hour below which taking every hour frees at least `want`
    /// bytes, oldest hours first (`None`: the head holds no hour).
    pub fn bytes_cutoff(&self, want: usize) -> Option<u32> {
        let mut by_base: Vec<(u32, usize)> = self
            .slots
            .iter()
            .flatten()
            .flat_map(|e| e.hours.iter().map(|h| (h.base, h.heap_bytes())))
            .collect();
        by_base.sort_unstable();
        let mut acc = 0;
        let mut cut = None;
        for (base, b) in by_base {
            if acc >= want {
                break;
            }
            acc += b;
            cut = Some(base.saturating_add(1));
        }
        cut
    }

    /// The data-time second before which at least `count` series wrote
    /// their newest point (the `count` longest silent): what
    /// [`Take::Idle`] takes to bring the registry down by `count`.
    pub fn idle_cutoff(&self, count: usize) -> Option<u32> {
        if count == 0 {
            return None;
        }
        let mut last: Vec<u32> = self.slots.iter().flatten().map(|e| e.last_secs).collect();
        let k = count.min(last.len()).checked_sub(1)?;
        let (_, nth, _) = last.select_nth_unstable(k);
        Some(nth.saturating_add(1))
    }

    /// [`Head::take`] of at most about `max_rows` rows: whole series are
    /// taken (a flush writes a series' tier rows once, from all its hours),
    /// so the last one may pass the bound. True as well if hours that
    /// `take` picks were left for another piece.
    pub fn take_some(&mut self, take: Take, max_rows: usize) -> (Arc<Frozen>, bool) {
        let mut frozen = Frozen::default();
        // Stopped series give every hour; the others none.
        let idle_before = match take {
            Take::Idle(before) => Some(before),
            _ => None,
        };
        let cutoff = match take {
            Take::Before(b) | Take::Closed { before: b, .. } => Some(b),
            Take::All | Take::Idle(_) => Some(u32::MAX),
            Take::Bytes(want) => self.bytes_cutoff(want),
        };
        let written_in = match take {
            Take::Closed { round, .. } => Some(round),
            _ => None,
        };
        let Some(cutoff) = cutoff else {
            return (Arc::new(frozen), false);
        };
        let (mut bytes, mut points, mut hours) = (self.bytes, self.points, self.hours);
        let mut taken_rows = 0;
        let mut more = false;
        for e in self.slots.iter_mut().flatten() {
            if e.hours.first().is_none_or(|h| h.base >= cutoff) {
                continue;
            }
            if idle_before.is_some_and(|before| e.last_secs >= before) {
                continue;
            }
            let mut keep_from = e.hours.partition_point(|h| h.base < cutoff);
            // Written in the round that ended or in the one this flush
            // runs in (a flush in pieces takes a while): still being
            // written, its newest hour waits for a round without points.
            let still_written = written_in.is_some_and(|ended| {
                e.written_round == ended || e.written_round == ended.wrapping_add(1)
            });
            if keep_from == e.hours.len() && still_written {
                keep_from -= 1;
                if keep_from == 0 {
                    continue;
                }
            }
            // A series the store holds nothing of that has just moved into
            // its second hour keeps the first too, once: taking it alone
            // would make the series known to the store, and the flush of
            // its next hour would read its tier rows back (at an hour's
            // turn under churn, every live series at once). Both go in one
            // flush when it stops or its second hour closes as well; the
            // head holds at most one hour more per series, once.
            if written_in.is_some() && e.absent_from_store && keep_from == 1 && e.hours.len() == 2 {
                continue;
            }
            if taken_rows >= max_rows {
                more = true;
                break;
            }
            let rest = e.hours.split_off(keep_from);
            let taken = std::mem::replace(&mut e.hours, rest);
            if std::mem::take(&mut e.absent_from_store) {
                frozen.absent.insert(Arc::clone(&e.key));
            }
            let rows = frozen.rows.entry(e.metric).or_default();
            for h in taken {
                bytes -= h.heap_bytes();
                points -= h.len();
                hours -= 1;
                taken_rows += 1;
                rows.push((Arc::clone(&e.key), h));
            }
        }
        (self.bytes, self.points, self.hours) = (bytes, points, hours);
        let frozen = Arc::new(frozen);
        if !frozen.is_empty() {
            self.frozen.push(Arc::clone(&frozen));
        }
        (frozen, more)
    }

    /// Drops frozen rows once the store has them.
    pub fn unfreeze(&mut self, frozen: &Arc<Frozen>) {
        self.frozen.retain(|f| !Arc::ptr_eq(f, frozen));
    }

    /// Puts frozen rows back after a failed flush, under anything newer.
    pub fn restore(&mut self, frozen: &Arc<Frozen>) {
        self.unfreeze(frozen);
        for (metric, rows) in &frozen.rows {
            for (key, h) in rows {
                let (id, _) = self.register(Arc::clone(key), *metric);
                let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
                    continue;
                };
                let old = h.points();
                let (new, replaced) = match e.hours.binary_search_by_key(&h.base, |x| x.base) {
                    Ok(i) => {
                        let newer = e.hours[i].points();
                        self.bytes -= e.hours[i].heap_bytes();
                        self.points -= e.hours[i].len();
                        (
                            HourData::from_points(h.base, &merge_points(&old, &newer)),
                            Some(i),
                        )
                    }
                    Err(_) => (HourData::from_points(h.base, &old), None),
                };
                self.bytes += new.heap_bytes();
                self.points += new.len();
                match replaced {
                    Some(i) => e.hours[i] = new,
                    None => {
                        let i = e.hours.partition_point(|x| x.base < h.base);
                        insert_hour(&mut e.hours, i, new);
                        self.hours += 1;
                    }
                }
            }
        }
    }

    /// Series of `metric` (for reads); may include idle ones.
    pub fn series_of(&self, metric: u64) -> impl Iterator<Item = &SeriesEntry> + '_ {
        self.by_metric
            .get(&metric)
            .into_iter()
            .flat_map(|ids| ids.iter())
            .filter_map(|&id| self.entry(id))
            .filter(move |e| e.metric == metric)
    }

    /// Every series with open hours (checkpoints).
    pub fn all_series(&self) -> impl Iterator<Item = &SeriesEntry> + '_ {
        self.slots.iter().flatten().filter(|e| !e.hours.is_empty())
    }

    /// Highest UID referenced by the keys of series with points, per kind.
    pub fn referenced_uids(&self, layout: &KeyLayout) -> [u64; 3] {
        let mut out = [0u64; 3];
        let uid = crate::codec::rowkey::uid_from_bytes;
        let p = layout.prefix_width();
        for e in self.slots.iter().flatten() {
            if let Some(m) = e.key.get(layout.salt_width..p) {
                out[0] = out[0].max(uid(m));
            }
            for (k, v) in layout.tag_pairs(e.key.get(p..).unwrap_or_default()) {
                out[1] = out[1].max(uid(k));
                out[2] = out[2].max(uid(v));
            }
        }
        out
    }

    /// Loads one hour from a checkpoint: `cell` holds the chunk's points,
    /// `ooo` (possibly empty) the out-of-order ones that win over them.
    pub fn load_hour(
        &mut self,
        key: Arc<[u8]>,
        metric: u64,
        base: u32,
        cell: &[u8],
        ooo: &[u8],
    ) -> Result<(), native::NativeError> {
        let chunk = Chunk::from_cell(cell)?;
        let mut late = Vec::new();
        if !ooo.is_empty() {
            native::decode_cell(ooo, &mut late)?;
        }
        let (id, _) = self.register(key, metric);
        let Some(e) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return Ok(());
        };
        e.newest_base = e.newest_base.max(base);
        let mut h = HourData {
            base,
            chunk,
            ooo: late,
            range: (f64::NAN, f64::NAN),
        };
        // One decode now (a few ns per point at startup) spares one per
        // query that wants an hourly max or min.
        h.range = h.chunk_range();
        self.bytes += h.heap_bytes();
        self.points += h.len();
        match e.hours.binary_search_by_key(&base, |x| x.base) {
            Ok(i) => {
                // Two checkpoint entries for one hour cannot happen; merge
                // rather than lose either.
                let merged = merge_points(&e.hours[i].points(), &h.points());
                self.bytes -= e.hours[i].heap_bytes() + h.heap_bytes();
                self.points -= e.hours[i].len() + h.len();
                let new = HourData::from_points(base, &merged);
                self.bytes += new.heap_bytes();
                self.points += new.len();
                e.hours[i] = new;
            }
            Err(i) => {
                insert_hour(&mut e.hours, i, h);
                self.hours += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Arc<[u8]> {
        Arc::from(vec![0, 0, 0, 1, 0, 0, 1, 0, 0, n])
    }

    fn int(p: &DecodedPoint) -> i64 {
        match p.value {
            StoredValue::Int(v) => v,
            _ => -1,
        }
    }

    #[test]
    fn in_order_out_of_order_and_rewrites() {
        let mut h = Head::default();
        let (id, _) = h.register(key(1), 1);
        for (ts, v) in [(3600, 1), (3610, 2), (3605, 3), (3610, 4), (7200, 5)] {
            h.insert(id, ts, StoredValue::Int(v));
        }
        let e = h.entry(id).unwrap();
        assert_eq!(e.hours.len(), 2);
        let pts = e.hours[0].points();
        let vals: Vec<(u32, i64)> = pts.iter().map(|p| (p.offset_ms / 1000, int(p))).collect();
        assert_eq!(vals, vec![(0, 1), (5, 3), (10, 4)]);
        assert_eq!(h.points, 5);
        assert_eq!(h.hours, 2);
    }

    #[test]
    fn an_hours_range_keeps_the_earliest_of_equal_extremes_and_skips_nan() {
        let mut h = Head::default();
        let (id, _) = h.register(key(1), 1);
        for (ts, v) in [(3600, 0.0), (3601, -0.0), (3602, f64::NAN), (3603, 0.0)] {
            h.insert(id, ts, StoredValue::Double(v));
        }
        let (lo, hi) = h.entry(id).unwrap().hours[0].value_range().unwrap();
        assert_eq!(
            (lo.to_bits(), hi.to_bits()),
            (0.0f64.to_bits(), 0.0f64.to_bits())
        );
        let (id, _) = h.register(key(2), 1);
        for (ts, v) in [(3600, -0.0), (3601, 0.0)] {
            h.insert(id, ts, StoredValue::Double(v));
        }
        let (lo, hi) = h.entry(id).unwrap().hours[0].value_range().unwrap();
        assert_eq!(
            (lo.to_bits(), hi.to_bits()),
            ((-0.0f64).to_bits(), (-0.0f64).to_bits())
        );
    }

    #[test]
    fn take_freeze_restore_and_delete() {
        let mut h = Head::default();
        let (a, _) = h.register(key(1), 1);
        for i in 0..10u64 {
            h.insert(a, 3600 * i + 5, StoredValue::Int(i as i64));
        }
        let before = h.bytes;
        let frozen = h.take(Take::Before(3 * 3600));
        assert_eq!(frozen.row_count(), 3);
        assert_eq!(h.hours, 7);
        assert!(h.bytes < before);
        assert_eq!(h.frozen.len(), 1);
        // New points for a frozen hour, then the flush fails: both kept.
        h.insert(a, 3600 + 6, StoredValue::Int(99));
        h.restore(&frozen);
        assert!(h.frozen.is_empty());
        assert_eq!(h.hours, 10);
        let e = h.entry(a).unwrap();
        assert_eq!(e.hours[1].points().len(), 2);
        assert_eq!(h.delete(&key(1), 3600 * 1000, 3600 * 1000 + 5_500), 1);
        assert_eq!(h.entry(a).unwrap().hours[1].points().len(), 1);
        assert_eq!(h.delete(&key(1), 0, i64::MAX), 10);
        assert_eq!((h.points, h.hours, h.bytes), (0, 0, 0));
    }

    #[test]
    fn take_oldest_by_bytes() {
        let mut h = Head::default();
        let (a, _) = h.register(key(1), 1);
        for i in 0..100u64 {
            h.insert(a, 3600 * (i % 10) + i, StoredValue::Double(i as f64 * 0.37));
        }
        let f = h.take(Take::Bytes(1));
        assert_eq!(f.row_count(), 1);
        assert_eq!(f.rows[&1][0].1.base, 0);
    }

    #[test]
    fn a_flush_takes_whole_series_in_pieces() {
        let mut h = Head::default();
        for n in 1..=5 {
            let (id, _) = h.register(key(n), 1);
            h.insert(id, 5, StoredValue::Int(1));
            h.insert(id, 3605, StoredValue::Int(2));
        }
        let mut pieces = Vec::new();
        loop {
            let (frozen, more) = h.take_some(Take::All, 3);
            pieces.push(frozen.row_count());
            let keys: HashSet<&Arc<[u8]>> = frozen.rows[&1].iter().map(|(k, _)| k).collect();
            assert_eq!(keys.len() * 2, frozen.row_count(), "whole series");
            if !more {
                break;
            }
        }
        assert_eq!(pieces, vec![4, 4, 2]);
        assert_eq!((h.hours, h.points, h.bytes), (0, 0, 0));
    }

    #[test]
    fn a_look_keeps_the_newest_hour_of_series_written_since_the_last_one() {
        let mut h = Head::default();
        let ids: Vec<u32> = (1..=3).map(|n| h.register(key(n), 1).0).collect();
        for &id in &ids {
            h.insert(id, 5, StoredValue::Int(1));
        }
        h.next_round();
        // The second series takes a point before the look, the first while
        // it runs (a flush in pieces takes a while); the third stopped.
        h.insert(ids[1], 6, StoredValue::Int(2));
        let ended = h.next_round();
        h.insert(ids[0], 7, StoredValue::Int(3));
        let frozen = h.take(Take::Closed {
            before: 3600,
            round: ended,
        });
        assert_eq!(frozen.row_count(), 1);
        assert_eq!(*frozen.rows[&1][0].0, *key(3));
        assert!(
            ids[..2]
                .iter()
                .all(|&id| h.entry(id).unwrap().hours.len() == 1)
        );
    }

    #[test]
    fn the_longest_silent_series_and_series_texts() {
        let mut h = Head::with_seed(7);
        let ids: Vec<u32> = (1..=3).map(|n| h.register(key(n), 1).0).collect();
        for (n, secs) in [(1u8, 30), (2, 10), (3, 20)] {
            let id = ids[n as usize - 1];
            h.insert(id, secs, StoredValue::Int(1));
            h.set_text(id, u128::from(n) << 70);
        }
        assert_eq!(h.idle_cutoff(2), Some(21), "the two longest silent");
        assert_eq!(h.idle_cutoff(0), None);
        let (id, generation) = h.id_of_text(1 << 70).unwrap();
        assert_eq!(h.id_of(&key(1)), Some(id));
        assert!(h.is_current(id, generation));
        assert!(h.id_of_text(4 << 70).is_none());
        // Forgotten: neither its key nor its text finds it; the removal is
        // remembered for writers that looked before it.
        let since = h.removed;
        h.take(Take::Idle(21));
        assert_eq!(h.evict_idle(21), 2);
        assert!(h.id_of_text(2 << 70).is_none());
        assert!(h.id_of(&key(2)).is_none());
        assert!(h.removed_since(&key(2), since));
        assert!(!h.removed_since(&key(1), since));
        assert!(!h.removed_since(&key(2), h.removed));
        h.drop_texts();
        assert!(h.id_of_text(1 << 70).is_none());
        assert_eq!(h.id_of(&key(1)), Some(id));
    }

    #[test]
    fn idle_series_are_evicted_and_slots_reused() {
        let mut h = Head::default();
        let (a, ga) = h.register(key(1), 1);
        let (b, _) = h.register(key(2), 1);
        h.insert(b, 5, StoredValue::Int(1));
        assert_eq!(h.evict(1), 1, "the idle one goes");
        assert!(!h.is_current(a, ga));
        assert!(h.id_of(&key(1)).is_none());
        assert_eq!(h.evict(0), 0, "a series with points stays");
        let (c, gc) = h.register(key(3), 2);
        assert_eq!(c, a, "slot reused");
        assert_ne!(gc, ga);
        assert_eq!(h.series_of(1).count(), 1);
        assert_eq!(h.series_of(2).count(), 1);
    }
}
