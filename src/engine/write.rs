//! The write path: a batch of points becomes series, log records and head
//! points (or, on a shared store, cells written before the answer).
//!
//! A point reaches the engine either named ([`Entry::Point`]: metric and
//! tags, found by the digest of their text, or through the UID table on a
//! miss) or by a series the caller resolved before ([`Entry::Known`]: a
//! [`SeriesRef`] from an earlier receipt — a telnet connection keeps one per
//! raw series text, so its steady state parses no tags and looks up nothing
//! but its own table).
//!
//! 1. Series of named points: by the digest of their text, which the head
//!    keeps for the series written by name (one lookup under the head lock
//!    for the batch). A caller may give the digest of the text as it was
//!    sent instead ([`Entry::SentAs`]: a remote-write series' label bytes),
//!    and find the series by it before it makes names of that text
//!    ([`Engine::series_of_texts`]).
//! 2. Misses: UIDs fetched or assigned (storage I/O, no lock); series new to
//!    the head get their index rows. New UIDs are made durable by the WAL's
//!    sync thread before it writes the frames that name them
//!    ([`SyncNewUids`]; on a shared store, here).
//! 3. Under the head lock, so that the head and the WAL see writes in one
//!    order: series whose head slot was given up since they were resolved
//!    are registered again (by key for known series; named ones are
//!    resolved again after dropping the lock, then every series is checked
//!    again), then one WAL frame for the batch, queued in the head's
//!    pending writes (`pending`).
//! 4. The WAL's publishing thread applies the batch to the head once its frame
//!    is durable ([`ApplyDurable`]), before the writer is acknowledged: a
//!    point is visible exactly when it is durable.

use std::collections::HashSet;
use std::sync::Arc;

use hourglass_ingest::{Point, Value};

use super::head::Head;
use super::pending::PendingWrite;
use super::wal::{BeforeWrite, DurableHook, FrameBuilder};
use super::{Engine, EngineError, PointError};
use crate::codec::StoredValue;
use crate::uid::{UidError, UidKind};

/// A series as the head knows it, for callers that keep their own cache of
/// resolved series (valid while the head keeps the slot; the engine checks
/// and, if need be, registers it again by key).
#[derive(Clone, Debug)]
pub struct SeriesRef {
    id: u32,
    generation: u32,
    key: Arc<[u8]>,
    metric: u64,
}

impl SeriesRef {
    /// The bytes of the series key this handle keeps alive (with its
    /// reference counts), for caches that charge what they hold.
    pub fn key_bytes(&self) -> usize {
        self.key.len() + 2 * std::mem::size_of::<usize>()
    }
}

/// One point of [`Engine::write_entries`].
#[derive(Clone, Debug)]
pub enum Entry<'a> {
    /// A point named by metric and tags.
    Point(Point<'a>),
    /// A point named by metric and tags, with the caller's digest of the
    /// text its series was sent as: the head keeps it for the series in
    /// place of the digest of the canonical text, so that the caller's
    /// next request finds the series by it ([`Engine::series_of_texts`])
    /// without making names of its text.
    SentAs { point: Point<'a>, text: u128 },
    /// A point of a series resolved before: `series` indexes the `refs`
    /// slice passed with the entries.
    Known {
        series: u32,
        timestamp: u64,
        value: Value,
    },
}

/// Outcome of a write.
#[derive(Debug, Default)]
pub struct WriteReceipt {
    /// WAL position to await before acknowledging (0 = nothing to await).
    pub lsn: u64,
    pub accepted: usize,
    /// Index in the batch and reason, for points that were not written.
    pub errors: Vec<(usize, PointError)>,
    /// From [`Engine::write_entries`]: the series of each written
    /// [`Entry::Point`] or [`Entry::SentAs`] (entry index, series), for the
    /// caller's cache.
    pub series: Vec<(usize, SeriesRef)>,
    /// From [`Engine::write_entries`]: known series registered again (their
    /// slot had been given up), as (refs index, new series).
    pub refreshed: Vec<(u32, SeriesRef)>,
}

pub(super) fn stored(v: Value) -> StoredValue {
    match v {
        Value::Int(i) => StoredValue::Int(i),
        Value::Float(f) => StoredValue::Float(f),
        Value::Double(d) => StoredValue::Double(d),
    }
}

/// Writes the canonical text of a point's series (metric and tags sorted by
/// key) into `buf`.
fn series_text(p: &Point<'_>, buf: &mut String, order: &mut Vec<usize>) {
    buf.clear();
    order.clear();
    order.extend(0..p.tags.len());
    order.sort_unstable_by(|&a, &b| p.tags[a].0.cmp(&p.tags[b].0));
    buf.push_str(&p.metric);
    for &i in order.iter() {
        buf.push('\0');
        buf.push_str(&p.tags[i].0);
        buf.push('=');
        buf.push_str(&p.tags[i].1);
    }
}

/// Largest raw timestamp whose base hour fits a row key.
const MAX_RAW_TS_MS: u64 = 4_294_967_295_999;

fn ts_fits(raw: u64) -> bool {
    raw <= MAX_RAW_TS_MS
}

/// One point as the write path reads it.
enum Item<'p, 'a> {
    /// A named point, and its text's digest if the caller gave one.
    Named(&'p Point<'a>, Option<u128>),
    /// The series, its index in the caller's refs, timestamp and value.
    Known(&'p SeriesRef, u32, u64, Value),
}

impl Item<'_, '_> {
    fn timestamp(&self) -> u64 {
        match self {
            Item::Named(p, _) => p.timestamp.0,
            Item::Known(_, _, ts, _) => *ts,
        }
    }

    fn value(&self) -> StoredValue {
        match self {
            Item::Named(p, _) => stored(p.value),
            Item::Known(_, _, _, v) => stored(*v),
        }
    }
}

/// A named point's series, resolved: the point's index in the write, the
/// series key, its metric UID, and whether the series index certainly held
/// no row of it before this write (its first flush need not read one).
struct Resolved {
    item: usize,
    key: Arc<[u8]>,
    metric: u64,
    unindexed: bool,
    /// `Head::removed` when the head was found not to know the series:
    /// if a series was forgotten since, this one may have been registered,
    /// flushed and forgotten meanwhile, and `unindexed` may be stale.
    removed: u64,
}

/// Where a point's series stands during a write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Refused (its error is in the receipt).
    Skip,
    /// Not resolved yet.
    Unresolved,
    /// Head slot and generation.
    At(u32, u32),
}

impl Engine {
    /// Logs and buffers a batch of validated points. Blocking (UID I/O, a
    /// full WAL buffer): call from a blocking context. The points are
    /// durable once the WAL reaches the returned LSN
    /// ([`Engine::wait_durable`] waits for it).
    pub fn write(&self, points: &[Point<'_>]) -> Result<WriteReceipt, EngineError> {
        self.write_items(points.len(), false, |i| Item::Named(&points[i], None))
    }

    /// [`Engine::write`] for entries that may name a series resolved
    /// before (`refs`); the receipt tells the series of the named entries
    /// and of the known ones registered again, for the caller's cache.
    pub fn write_entries(
        &self,
        refs: &[SeriesRef],
        entries: &[Entry<'_>],
    ) -> Result<WriteReceipt, EngineError> {
        for (i, e) in entries.iter().enumerate() {
            if let Entry::Known { series, .. } = e
                && *series as usize >= refs.len()
            {
                return Err(EngineError::Damaged(format!(
                    "internal error: write entry {i} names series {series} of {}",
                    refs.len()
                )));
            }
        }
        self.write_items(entries.len(), true, |i| match &entries[i] {
            Entry::Point(p) => Item::Named(p, None),
            Entry::SentAs { point, text } => Item::Named(point, Some(*text)),
            Entry::Known {
                series,
                timestamp,
                value,
            } => Item::Known(&refs[*series as usize], *series, *timestamp, *value),
        })
    }

    /// The series the head knows by the digests of the texts they were
    /// sent as ([`Entry::SentAs`]), one lookup under the head lock for all.
    pub fn series_of_texts(&self, texts: &[u128]) -> Vec<Option<SeriesRef>> {
        let head = self.head();
        texts
            .iter()
            .map(|&text| {
                let (id, generation) = head.id_of_text(text)?;
                let e = head.entry(id)?;
                Some(SeriesRef {
                    id,
                    generation,
                    key: Arc::clone(&e.key),
                    metric: e.metric,
                })
            })
            .collect()
    }

    fn write_items<'p, 'a: 'p>(
        &self,
        n: usize,
        want_series: bool,
        mut item: impl FnMut(usize) -> Item<'p, 'a>,
    ) -> Result<WriteReceipt, EngineError> {
        let mut receipt = WriteReceipt::default();
        if n == 0 {
            return Ok(receipt);
        }
        let items: Vec<Item<'p, 'a>> = (0..n).map(&mut item).collect();
        let mut text = String::with_capacity(128);
        let mut order = Vec::new();
        // Phase 1: the series of named points by their text's digest (the
        // digests computed without the head lock, looked up under it once).
        let mut slots: Vec<Slot> = Vec::with_capacity(n);
        // Only batches with named points need them (one of known series
        // would zero 16 bytes a point for nothing).
        let mut digests: Vec<u128> = Vec::new();
        let mut named: Vec<usize> = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if !ts_fits(it.timestamp()) {
                receipt
                    .errors
                    .push((i, PointError::Timestamp(it.timestamp())));
                slots.push(Slot::Skip);
                continue;
            }
            match it {
                Item::Known(r, ..) => slots.push(Slot::At(r.id, r.generation)),
                Item::Named(p, sent) => {
                    if digests.is_empty() {
                        digests.resize(n, 0);
                    }
                    digests[i] = match sent {
                        Some(digest) => *digest,
                        None => {
                            series_text(p, &mut text, &mut order);
                            self.series_digest.of(&text)
                        }
                    };
                    named.push(i);
                    slots.push(Slot::Unresolved);
                }
            }
        }
        let mut misses: Vec<usize> = Vec::new();
        if !named.is_empty() {
            let head = self.head();
            for i in named {
                match head.id_of_text(digests[i]) {
                    Some((id, generation)) => slots[i] = Slot::At(id, generation),
                    None => misses.push(i),
                }
            }
        }
        // Phase 2: resolve misses without the lock (may do storage I/O).
        let mut resolved = self.resolve_named(&items, &misses, &mut receipt)?;
        // The log's buffer must have room before the head lock is taken:
        // waiting under it would stall the readers, and the log's
        // publishing thread that applies durable writes.
        if let Some(log) = &self.log {
            log.wal.wait_for_room()?;
        }
        // Phase 3: register, log, queue — under the head lock.
        let mut head = self.head();
        loop {
            let hard_limit = self.settings.head_max_bytes.saturating_mul(2);
            let bytes = head.bytes + head.pending.bytes();
            if bytes >= hard_limit {
                drop(head);
                self.wake_flusher();
                return Err(EngineError::Overloaded {
                    bytes,
                    limit: hard_limit,
                });
            }
            let series_limit = self.series_limit();
            if head.series_count() >= series_limit
                && resolved.iter().any(|r| head.id_of(&r.key).is_none())
            {
                let series = head.series_count();
                drop(head);
                self.wake_flusher();
                return Err(EngineError::TooManySeries {
                    series,
                    limit: series_limit,
                });
            }
            for Resolved {
                item: i,
                key,
                metric,
                unindexed,
                removed,
            } in resolved.drain(..)
            {
                let created = head.created;
                // Only an entry this call creates, and only if the series
                // was not forgotten since the index was asked: one
                // registered meanwhile may have been flushed (and
                // forgotten).
                let unindexed = unindexed && !head.removed_since(&key, removed);
                let (id, generation) = head.register(key, metric);
                if unindexed && head.created != created {
                    head.new_to_store(id);
                }
                if let Item::Named(..) = &items[i] {
                    head.set_text(id, digests[i]);
                }
                slots[i] = Slot::At(id, generation);
            }
            // Series whose slot was given up since they were resolved:
            // known ones are registered again by key here; named ones are
            // resolved again without the lock, and then every series is
            // checked again (the lock was let go).
            let mut again = Vec::new();
            for (i, slot) in slots.iter_mut().enumerate() {
                let Slot::At(id, generation) = *slot else {
                    continue;
                };
                if head.is_current(id, generation) {
                    continue;
                }
                match &items[i] {
                    Item::Known(r, ..) => {
                        let (id, generation) = head.register(Arc::clone(&r.key), r.metric);
                        *slot = Slot::At(id, generation);
                    }
                    Item::Named(..) => {
                        *slot = Slot::Unresolved;
                        again.push(i);
                    }
                }
            }
            if again.is_empty() {
                break;
            }
            drop(head);
            resolved = self.resolve_named(&items, &again, &mut receipt)?;
            head = self.head();
        }
        if want_series {
            self.report_series(&head, &items, &slots, &mut receipt);
        }
        let head_bytes = match &self.log {
            Some(log) => {
                let epoch = log.wal.epoch();
                let mut frame = FrameBuilder::new();
                // Counted pending as they are framed (one pass over the
                // head's entries), and uncounted should the log refuse them.
                let mut points = Vec::with_capacity(n);
                for (it, slot) in items.iter().zip(&slots) {
                    let Slot::At(id, _) = *slot else { continue };
                    let Some(e) = head.entry_mut(id) else {
                        continue;
                    };
                    if e.wal_epoch != epoch {
                        frame.series(id, &e.key);
                        e.wal_epoch = epoch;
                    }
                    frame.point(id, it.timestamp(), it.value());
                    e.pending += 1;
                    points.push((id, it.timestamp(), it.value()));
                }
                if frame.is_empty() {
                    return Ok(receipt);
                }
                receipt.lsn = match log.wal.append(frame) {
                    Ok(lsn) => lsn,
                    Err(e) => {
                        for &(id, ..) in &points {
                            if let Some(entry) = head.entry_mut(id) {
                                entry.pending = entry.pending.saturating_sub(1);
                            }
                        }
                        return Err(e.into());
                    }
                };
                receipt.accepted = points.len();
                head.pending.push(receipt.lsn, PendingWrite::Points(points));
                self.note_head(&mut head)
            }
            None => {
                let mut cells = Vec::with_capacity(n);
                let mut at = Vec::with_capacity(n);
                for (it, slot) in items.iter().zip(&slots) {
                    if let Slot::At(id, generation) = *slot
                        && let Some(e) = head.entry(id)
                    {
                        cells.push((Arc::clone(&e.key), it.timestamp(), it.value()));
                        at.push((id, generation));
                    }
                }
                // The store round trip runs without the head lock.
                drop(head);
                receipt.accepted = self.write_shared(&cells, &at)?;
                if receipt.accepted == 0 {
                    return Ok(receipt);
                }
                self.note_head(&mut self.head())
            }
        };
        self.metrics.points_written.inc_by(receipt.accepted as u64);
        let wal_bytes = self.wal_bytes();
        self.metrics.wal_bytes.set(wal_bytes as i64);
        if head_bytes > self.settings.head_max_bytes || wal_bytes > self.settings.checkpoint_bytes {
            self.wake_flusher();
        }
        Ok(receipt)
    }

    /// Resolves the named points at `which` (UID lookups or assignments);
    /// writes index rows for series the head does not know (noting which
    /// the index did not hold before) and makes new UIDs durable.
    fn resolve_named(
        &self,
        items: &[Item<'_, '_>],
        which: &[usize],
        receipt: &mut WriteReceipt,
    ) -> Result<Vec<Resolved>, EngineError> {
        let mut resolved = Vec::new();
        // Before any UID is assigned: a series named with a UID assigned
        // below is new to the store only until someone else registers,
        // flushes and forgets it, which this tells (`Head::removed_since`).
        let removed = self.head().removed;
        // Which of `resolved` were named with a UID this call assigned,
        // and the UIDs of each (`uids[uid_ranges[j]]`).
        let mut new_uid = Vec::new();
        let mut assigned = HashSet::new();
        let mut uids = Vec::new();
        let mut uid_ranges = Vec::new();
        for &i in which {
            let Item::Named(p, _) = &items[i] else {
                continue;
            };
            let start = uids.len();
            match self.resolve_noting_new(p, &mut assigned, &mut uids) {
                Ok((key, metric, new)) => {
                    new_uid.push(new);
                    uid_ranges.push(start..uids.len());
                    resolved.push(Resolved {
                        item: i,
                        key,
                        metric,
                        unindexed: false,
                        removed,
                    });
                }
                Err(e) => {
                    uids.truncate(start);
                    self.metrics
                        .points_rejected
                        .with_label_values(&["unknown_name"])
                        .inc();
                    receipt.errors.push((i, e.into()));
                }
            }
        }
        if !resolved.is_empty() {
            // Series the head does not know get their index rows before
            // their WAL frame exists (see `index` for the crash argument).
            let fresh: Vec<usize> = {
                let head = self.head();
                (0..resolved.len())
                    .filter(|&j| head.id_of(&resolved[j].key).is_none())
                    .collect()
            };
            // A series with a UID assigned just now, by this call or
            // lately by another (`fresh_uids`), is new to the store
            // without asking the bloom filters, whose false positives
            // would have its rows read back at its first flush. Not on a
            // shared store: another node may write it as soon as it
            // learns the UID.
            let local = self.log.is_some();
            if local {
                let mut fresh_uids = self.fresh_uids();
                for &(kind, uid) in &assigned {
                    fresh_uids.note(kind, uid, removed);
                }
                for &j in &fresh {
                    if new_uid[j] {
                        continue;
                    }
                    let assigned_after = uids[uid_ranges[j].clone()]
                        .iter()
                        .filter_map(|&(kind, uid)| fresh_uids.removed_before(kind, uid))
                        .min();
                    if let Some(count) = assigned_after {
                        // Forgotten since that UID was assigned, the
                        // series may have rows: checked at registration.
                        new_uid[j] = true;
                        resolved[j].removed = resolved[j].removed.min(count);
                    }
                }
            }
            let (known_new, ask): (Vec<usize>, Vec<usize>) =
                fresh.iter().partition(|&&j| new_uid[j] && local);
            let asked: Vec<&[u8]> = ask.iter().map(|&j| &resolved[j].key[..]).collect();
            let new = self.not_indexed(&asked)?;
            self.index_series(fresh.iter().map(|&j| &resolved[j].key[..]))?;
            for (j, new) in ask.into_iter().zip(new) {
                resolved[j].unindexed = new;
            }
            for j in known_new {
                resolved[j].unindexed = true;
            }
            // New UIDs must be durable before any logged point refers to
            // them: the log's sync thread makes them so before it writes
            // this write's frame (`SyncNewUids`), once for every write in
            // its group. A shared store has no log: here, then.
            if self.log.is_none() {
                self.uids.sync_if_needed().map_err(EngineError::Uid)?;
            }
        }
        Ok(resolved)
    }

    /// The series of named points, and of known series registered again,
    /// for the receipt (one entry per series, not per point).
    fn report_series(
        &self,
        head: &Head,
        items: &[Item<'_, '_>],
        slots: &[Slot],
        receipt: &mut WriteReceipt,
    ) {
        let mut last: Option<(u32, u32)> = None;
        for (i, (it, slot)) in items.iter().zip(slots).enumerate() {
            let Slot::At(id, generation) = *slot else {
                continue;
            };
            let Some(e) = head.entry(id) else { continue };
            let sref = || SeriesRef {
                id,
                generation,
                key: Arc::clone(&e.key),
                metric: e.metric,
            };
            match it {
                Item::Named(..) if last != Some((id, generation)) => {
                    receipt.series.push((i, sref()));
                    last = Some((id, generation));
                }
                Item::Known(r, index, ..)
                    if (r.id, r.generation) != (id, generation)
                        && receipt.refreshed.last().is_none_or(|(j, _)| j != index) =>
                {
                    receipt.refreshed.push((*index, sref()));
                }
                _ => {}
            }
        }
    }

    /// UIDs and series key of a point (assigning UIDs if allowed).
    pub(in crate::engine) fn resolve(&self, p: &Point<'_>) -> Result<(Arc<[u8]>, u64), UidError> {
        self.resolve_noting_new(p, &mut HashSet::new(), &mut Vec::new())
            .map(|(key, metric, _)| (key, metric))
    }

    /// [`Engine::resolve`], and whether one of the point's UIDs is among
    /// `assigned`, the UIDs assigned by the caller's batch so far (those
    /// this call assigns are added: [`crate::uid::Uids::get_or_create_noting_new`]).
    /// A pod's first series assigns its UID and its other series, later
    /// in the same batch, find it: all of them are new to the store. The
    /// point's UIDs are pushed on `uids`.
    fn resolve_noting_new(
        &self,
        p: &Point<'_>,
        assigned: &mut HashSet<(UidKind, u64)>,
        uids: &mut Vec<(UidKind, u64)>,
    ) -> Result<(Arc<[u8]>, u64, bool), UidError> {
        let mut new = false;
        let mut uid_of = |kind: UidKind, name: &str| -> Result<u64, UidError> {
            let (uid, created) = self.uids.get_or_create_noting_new(kind, name)?;
            if created {
                assigned.insert((kind, uid));
            }
            uids.push((kind, uid));
            new |= created || (!assigned.is_empty() && assigned.contains(&(kind, uid)));
            Ok(uid)
        };
        let metric = uid_of(UidKind::Metric, &p.metric)?;
        let mut tags = Vec::with_capacity(p.tags.len());
        for (k, v) in &p.tags {
            tags.push((uid_of(UidKind::TagK, k)?, uid_of(UidKind::TagV, v)?));
        }
        tags.sort_unstable();
        Ok((
            Arc::from(self.layout.series_key(metric, &tags)),
            metric,
            new,
        ))
    }
}

/// Applies the writes the WAL has made durable to the head, on the WAL's
/// publishing thread, before any writer waiting for them is woken.
#[derive(Debug)]
pub(super) struct ApplyDurable(pub(super) std::sync::Weak<Engine>);

impl DurableHook for ApplyDurable {
    fn durable(&self, lsn: u64) {
        let Some(engine) = self.0.upgrade() else {
            return;
        };
        let mut head = engine.head();
        let writes = head.pending.take_through(lsn);
        if writes.is_empty() {
            return;
        }
        head.apply(writes);
        let bytes = engine.note_head(&mut head);
        drop(head);
        if bytes > engine.settings.head_max_bytes {
            engine.wake_flusher();
        }
    }

    fn failed(&self) {
        if let Some(engine) = self.0.upgrade() {
            engine.head().discard_pending();
        }
    }
}

/// Makes the UIDs writers assigned durable before the WAL's sync thread
/// writes the frames that name them (every such frame was appended after
/// its UIDs were written to the store and noted unsynced). Weak, as
/// [`ApplyDurable`] is: the log's threads must not keep the engine's store
/// open after the engine is dropped.
#[derive(Debug)]
pub(super) struct SyncNewUids(pub(super) std::sync::Weak<crate::uid::Uids>);

impl BeforeWrite for SyncNewUids {
    fn before_write(&self) -> Result<(), String> {
        match self.0.upgrade() {
            Some(uids) => uids.sync_if_needed().map_err(|e| e.to_string()),
            // The engine is gone, and every writer with it (a write holds
            // the engine); dropping its store handed the store's log to
            // the OS.
            None => Ok(()),
        }
    }
}
