//! Name ↔ UID mapping for metrics, tag keys and tag values, stored in the
//! UID table exactly as OpenTSDB lays it out (reference §1.12):
//!
//! | row | column | value |
//! |---|---|---|
//! | name bytes | `id:<kind>` | UID (width bytes) — forward map |
//! | UID bytes | `name:<kind>` | name bytes — reverse map |
//! | `00` | `id:<kind>` | 8-byte counter = highest UID assigned |
//!
//! Assignment increments the counter, writes the reverse mapping first
//! (check-and-put on an empty cell), then the forward mapping; if another
//! writer won the forward mapping its UID is read back and ours is leaked,
//! so concurrent nodes on a shared backend always agree. Both directions are
//! cached in memory, in bounded caches (`uid.cache_entries` per kind and
//! direction): name → UID as names are looked up or assigned, UID → name
//! only as readers ask for names; a miss reads the UID table, whose bloom
//! filters make a miss for an unknown name cheap.
//!
//! On open, [`Uids::ensure_counters`] checks that no stored row refers to a
//! UID above its counter (which would mean a damaged UID table and UIDs
//! about to be handed out twice).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use quick_cache::sync::Cache;

use crate::codec::rowkey::{self, KeyLayout};
use crate::storage::{Durability, Mutation, StorageError, Store, Table, column, family};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UidKind {
    Metric = 0,
    TagK = 1,
    TagV = 2,
}

impl UidKind {
    pub const ALL: [UidKind; 3] = [UidKind::Metric, UidKind::TagK, UidKind::TagV];

    /// Qualifier in the UID table and the kind name in OpenTSDB messages.
    pub fn as_str(self) -> &'static str {
        match self {
            UidKind::Metric => "metrics",
            UidKind::TagK => "tagk",
            UidKind::TagV => "tagv",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "metrics" => Some(UidKind::Metric),
            "tagk" => Some(UidKind::TagK),
            "tagv" => Some(UidKind::TagV),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UidError {
    #[error("No such name for '{}': '{name}'", kind.as_str())]
    NoSuchName { kind: UidKind, name: String },
    #[error("All Unique IDs for {} on {width} bytes are already assigned!", kind.as_str())]
    Exhausted { kind: UidKind, width: usize },
    #[error("Name already exists with UID: {uid}")]
    Exists {
        kind: UidKind,
        name: String,
        uid: String,
    },
    #[error("UID assignment for {} '{name}' failed after repeated conflicts", kind.as_str())]
    Conflict { kind: UidKind, name: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("{0}")]
    Damaged(String),
}

/// Both directions of one kind's mapping.
struct Caches {
    forward: Cache<Arc<str>, u64>,
    reverse: Cache<u64, Arc<str>>,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("forward", &self.forward.len())
            .field("reverse", &self.reverse.len())
            .finish()
    }
}

/// The UID tables with their caches.
#[derive(Debug)]
pub struct Uids {
    store: Arc<dyn Store>,
    widths: [usize; 3],
    auto_create: [bool; 3],
    caches: [Caches; 3],
    assign: Mutex<()>,
    /// Set (before the new mapping is cached) by every assignment not yet
    /// fsynced.
    unsynced: AtomicBool,
    /// Held across clear-and-fsync, so a caller that finds the flag clear
    /// waits for an fsync another caller has started.
    sync_lock: Mutex<()>,
}

const COUNTER_ROW: &[u8] = &[0];

impl Uids {
    pub fn new(
        store: Arc<dyn Store>,
        layout: &KeyLayout,
        auto_create: [bool; 3],
        cache_entries: usize,
    ) -> Self {
        let n = cache_entries.max(16);
        let caches = [(); 3].map(|()| Caches {
            forward: Cache::new(n),
            reverse: Cache::new(n),
        });
        Self {
            store,
            widths: [layout.metric_width, layout.tagk_width, layout.tagv_width],
            auto_create,
            caches,
            assign: Mutex::new(()),
            unsynced: AtomicBool::new(false),
            sync_lock: Mutex::new(()),
        }
    }

    fn cache(&self, kind: UidKind) -> &Caches {
        &self.caches[kind as usize]
    }

    pub fn width(&self, kind: UidKind) -> usize {
        self.widths[kind as usize]
    }

    /// Caches a name's UID only: the write path's lookups and assignments,
    /// whose names a reader may never ask for (under churn, most of the
    /// names assigned); [`Uids::name_of`] caches the reverse direction when
    /// a reader does.
    fn remember_uid(&self, kind: UidKind, name: &str, uid: u64) {
        self.cache(kind).forward.insert(Arc::from(name), uid);
    }

    /// Caches both directions of a mapping.
    fn remember(&self, kind: UidKind, name: &str, uid: u64) -> Arc<str> {
        let c = self.cache(kind);
        let name: Arc<str> = c.reverse.get(&uid).unwrap_or_else(|| Arc::from(name));
        c.forward.insert(Arc::clone(&name), uid);
        c.reverse.insert(uid, Arc::clone(&name));
        name
    }

    fn uid_bytes(&self, kind: UidKind, uid: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(8);
        rowkey::uid_bytes(uid, self.width(kind), &mut b);
        b
    }

    /// The UID of a name, if it has one.
    pub fn lookup(&self, kind: UidKind, name: &str) -> Result<Option<u64>, UidError> {
        if let Some(uid) = self.cache(kind).forward.get(name) {
            return Ok(Some(uid));
        }
        let col = column(family::ID, kind.as_str().as_bytes());
        let cells = self.store.get_row(Table::Uid, name.as_bytes())?;
        match cells.into_iter().find(|c| c.column == col) {
            Some(c) => {
                let uid = rowkey::uid_from_bytes(&c.value);
                self.remember_uid(kind, name, uid);
                Ok(Some(uid))
            }
            None => Ok(None),
        }
    }

    /// The UID of a name, assigning one if allowed. New assignments are
    /// handed to the OS but not fsynced: call [`Uids::sync_if_needed`]
    /// before acknowledging anything that refers to them.
    pub fn get_or_create(&self, kind: UidKind, name: &str) -> Result<u64, UidError> {
        self.get_or_create_noting_new(kind, name)
            .map(|(uid, _)| uid)
    }

    /// [`Uids::get_or_create`], and whether this call assigned the UID: no
    /// row in the store can refer to a UID assigned just now (nothing is
    /// written with a UID before it is durable, and a durable UID is never
    /// assigned again), so a series named with it is new to the store.
    pub fn get_or_create_noting_new(
        &self,
        kind: UidKind,
        name: &str,
    ) -> Result<(u64, bool), UidError> {
        if let Some(uid) = self.lookup(kind, name)? {
            return Ok((uid, false));
        }
        if !self.auto_create[kind as usize] {
            return Err(UidError::NoSuchName {
                kind,
                name: name.to_string(),
            });
        }
        self.assign_new(kind, name)
    }

    /// `/api/uid/assign`: a UID for a name that has none, whatever the
    /// auto-create settings (an explicit request). Not fsynced: call
    /// [`Uids::sync_if_needed`] before answering.
    pub fn assign(&self, kind: UidKind, name: &str) -> Result<u64, UidError> {
        if let Some(uid) = self.lookup(kind, name)? {
            return Err(UidError::Exists {
                kind,
                name: name.to_string(),
                uid: self.uid_hex(kind, uid),
            });
        }
        self.assign_new(kind, name).map(|(uid, _)| uid)
    }

    /// The UID as OpenTSDB prints it: upper-case hex on the kind's width.
    pub fn uid_hex(&self, kind: UidKind, uid: u64) -> String {
        crate::codec::hex::encode(&self.uid_bytes(kind, uid))
    }

    /// Renames a UID's name (OpenTSDB's order: reverse map to the new name,
    /// forward map new → UID, delete the old forward map), durably. Names
    /// cached elsewhere (the engine's series cache) must be dropped by the
    /// caller.
    pub fn rename(&self, kind: UidKind, old: &str, new: &str) -> Result<(), UidError> {
        let _guard = self
            .assign
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let uid = self
            .lookup(kind, old)?
            .ok_or_else(|| UidError::NoSuchName {
                kind,
                name: old.to_string(),
            })?;
        if let Some(other) = self.lookup(kind, new)? {
            return Err(UidError::Exists {
                kind,
                name: new.to_string(),
                uid: self.uid_hex(kind, other),
            });
        }
        let id_col = column(family::ID, kind.as_str().as_bytes());
        let name_col = column(family::NAME, kind.as_str().as_bytes());
        let uid_bytes = self.uid_bytes(kind, uid);
        self.store.write(
            vec![Mutation::Put {
                table: Table::Uid,
                row: uid_bytes.clone(),
                column: name_col,
                value: new.as_bytes().to_vec(),
            }],
            Durability::Buffered,
        )?;
        if !self.store.check_and_put(
            Table::Uid,
            new.as_bytes(),
            &id_col,
            None,
            uid_bytes,
            Durability::Buffered,
        )? {
            return Err(UidError::Conflict {
                kind,
                name: new.to_string(),
            });
        }
        self.store.write(
            vec![Mutation::Delete {
                table: Table::Uid,
                row: old.as_bytes().to_vec(),
                column: id_col,
            }],
            Durability::Sync,
        )?;
        let c = self.cache(kind);
        c.forward.remove(old);
        c.reverse.remove(&uid);
        self.remember(kind, new, uid);
        Ok(())
    }

    /// Assigns a new UID (the name has none, or had none when looked up);
    /// true if this call assigned it, false if another assigner won.
    fn assign_new(&self, kind: UidKind, name: &str) -> Result<(u64, bool), UidError> {
        let _guard = self
            .assign
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Another assigner may have won while we waited for the lock; it
        // remembered its UID before releasing the lock. (Should the cache
        // have dropped it meanwhile, the forward check-and-put below still
        // finds it.)
        if let Some(uid) = self.cache(kind).forward.get(name) {
            return Ok((uid, false));
        }
        let id_col = column(family::ID, kind.as_str().as_bytes());
        let name_col = column(family::NAME, kind.as_str().as_bytes());
        let width = self.width(kind);
        for _ in 0..3 {
            let id =
                self.store
                    .increment(Table::Uid, COUNTER_ROW, &id_col, 1, Durability::Buffered)?;
            let id = u64::try_from(id).map_err(|_| UidError::Exhausted { kind, width })?;
            if id == 0 || id > KeyLayout::max_uid(width) {
                return Err(UidError::Exhausted { kind, width });
            }
            let uid_bytes = self.uid_bytes(kind, id);
            // Reverse first: a crash after this burns the UID but never
            // leaves a forward mapping without its reverse.
            if !self.store.check_and_put(
                Table::Uid,
                &uid_bytes,
                &name_col,
                None,
                name.as_bytes().to_vec(),
                Durability::Buffered,
            )? {
                tracing::error!(
                    kind = kind.as_str(),
                    uid = id,
                    "reverse UID mapping already taken; the UID counter is behind the table, retrying"
                );
                continue;
            }
            if self.store.check_and_put(
                Table::Uid,
                name.as_bytes(),
                &id_col,
                None,
                uid_bytes,
                Durability::Buffered,
            )? {
                // After the assignment's last write, before the UID is
                // known to anyone: a sync that ran between the writes above
                // did not cover this one. (A UID burnt on the way, by a
                // taken reverse row or a lost race, is never used: its
                // writes may be lost.)
                self.note_unsynced();
                self.remember_uid(kind, name, id);
                return Ok((id, true));
            }
            // Another writer assigned this name first: use its UID.
            if let Some(uid) = self.lookup(kind, name)? {
                return Ok((uid, false));
            }
        }
        Err(UidError::Conflict {
            kind,
            name: name.to_string(),
        })
    }

    /// Notes buffered writes of the UID table, after they are in the
    /// store: a [`Uids::sync_if_needed`] that runs after this covers them
    /// (the store's sync makes every earlier write durable). Noted after an
    /// assignment's last write, not at its start, so that a sync running
    /// between two of its writes cannot clear the note while a later write
    /// is still unsynced.
    fn note_unsynced(&self) {
        self.unsynced.store(true, Ordering::Release);
    }

    /// Makes UID assignments durable (fsync) if any happened since the last
    /// call.
    pub fn sync_if_needed(&self) -> Result<(), UidError> {
        let _guard = self
            .sync_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.unsynced.swap(false, Ordering::AcqRel)
            && let Err(e) = self.store.sync()
        {
            self.unsynced.store(true, Ordering::Release);
            return Err(e.into());
        }
        Ok(())
    }

    /// The name of a UID.
    pub fn name_of(&self, kind: UidKind, uid: u64) -> Result<Option<Arc<str>>, UidError> {
        if let Some(n) = self.cache(kind).reverse.get(&uid) {
            return Ok(Some(n));
        }
        let col = column(family::NAME, kind.as_str().as_bytes());
        let cells = self.store.get_row(Table::Uid, &self.uid_bytes(kind, uid))?;
        Ok(cells
            .into_iter()
            .find(|c| c.column == col)
            .map(|c| self.remember(kind, &String::from_utf8_lossy(&c.value), uid)))
    }

    /// Names of `kind` starting with `prefix`, in byte order, at most `max`.
    pub fn suggest(
        &self,
        kind: UidKind,
        prefix: &str,
        max: usize,
    ) -> Result<Vec<String>, UidError> {
        let col = column(family::ID, kind.as_str().as_bytes());
        let start: Vec<u8> = if prefix.is_empty() {
            vec![1]
        } else {
            prefix.as_bytes().to_vec()
        };
        let end = crate::storage::prefix_end(prefix.as_bytes());
        let mut out = Vec::new();
        self.store
            .scan(Table::Uid, &start, &end, &mut |row, cells| {
                if row != COUNTER_ROW && cells.iter().any(|c| c.column == col) {
                    out.push(String::from_utf8_lossy(row).into_owned());
                }
                Ok(out.len() < max)
            })?;
        Ok(out)
    }

    /// Highest UID assigned per kind (for stats).
    pub fn ids_used(&self, kind: UidKind) -> Result<u64, UidError> {
        let col = column(family::ID, kind.as_str().as_bytes());
        let cells = self.store.get_row(Table::Uid, COUNTER_ROW)?;
        Ok(cells
            .into_iter()
            .find(|c| c.column == col)
            .and_then(|c| <[u8; 8]>::try_from(c.value.as_ref()).ok())
            .map_or(0, |b| u64::try_from(i64::from_be_bytes(b)).unwrap_or(0)))
    }

    pub fn cache_size(&self, kind: UidKind) -> usize {
        self.cache(kind).forward.len()
    }

    /// Forgets every cached mapping (telnet `dropcaches`, `/api/dropcaches`).
    pub fn drop_caches(&self) {
        for c in &self.caches {
            c.forward.clear();
            c.reverse.clear();
        }
    }

    /// Makes sure no counter is below the highest UID stored rows refer to
    /// (`referenced`, per kind). A counter that is behind means the UID
    /// table lost assignments (a damaged store log): refused, unless
    /// `repair`, which raises the counter so no UID is handed out twice (the
    /// lost names then show as hex UIDs).
    pub fn ensure_counters(&self, referenced: [u64; 3], repair: bool) -> Result<(), UidError> {
        for kind in UidKind::ALL {
            let want = referenced[kind as usize];
            let have = self.ids_used(kind)?;
            if want <= have {
                continue;
            }
            if !repair {
                return Err(UidError::Damaged(format!(
                    "the UID counter for {} is {have}, but stored rows use UID {want}: the UID table lost assignments (damaged or truncated store log?). Refusing to start, since new names would get UIDs that old rows already use. Restore the store log, or set `storage.repair = true` to raise the counter (the lost names then read as hex UIDs)",
                    kind.as_str()
                )));
            }
            let col = column(family::ID, kind.as_str().as_bytes());
            let delta = i64::try_from(want - have).unwrap_or(i64::MAX);
            self.store
                .increment(Table::Uid, COUNTER_ROW, &col, delta, Durability::Sync)?;
            tracing::error!(
                kind = kind.as_str(),
                from = have,
                to = want,
                "repair: raised the UID counter past the UIDs stored rows use"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::embedded::{EmbeddedOptions, EmbeddedStore};

    fn uids(dir: &std::path::Path, auto: bool) -> Uids {
        let store = EmbeddedStore::open(EmbeddedOptions::new(
            dir.to_path_buf(),
            KeyLayout::default(),
        ))
        .unwrap();
        Uids::new(Arc::new(store), &KeyLayout::default(), [auto; 3], 1000)
    }

    #[test]
    fn assigns_sequentially_and_persists_both_directions() {
        let dir = tempfile::tempdir().unwrap();
        {
            let u = uids(dir.path(), true);
            assert_eq!(u.get_or_create(UidKind::Metric, "sys.cpu.user").unwrap(), 1);
            assert_eq!(
                u.get_or_create(UidKind::Metric, "sys.cpu.system").unwrap(),
                2
            );
            assert_eq!(u.get_or_create(UidKind::Metric, "sys.cpu.user").unwrap(), 1);
            assert_eq!(u.get_or_create(UidKind::TagK, "host").unwrap(), 1);
            u.sync_if_needed().unwrap();
        }
        let u = uids(dir.path(), false);
        assert_eq!(
            u.lookup(UidKind::Metric, "sys.cpu.system").unwrap(),
            Some(2)
        );
        assert_eq!(
            u.name_of(UidKind::Metric, 1).unwrap().as_deref(),
            Some("sys.cpu.user")
        );
        assert_eq!(u.ids_used(UidKind::Metric).unwrap(), 2);
        assert!(matches!(
            u.get_or_create(UidKind::Metric, "new.metric"),
            Err(UidError::NoSuchName {
                kind: UidKind::Metric,
                ..
            })
        ));
        assert_eq!(
            u.get_or_create(UidKind::TagV, "web01")
                .unwrap_err()
                .to_string(),
            "No such name for 'tagv': 'web01'"
        );
    }

    #[test]
    fn uid_table_layout_is_opentsdbs() {
        let dir = tempfile::tempdir().unwrap();
        let u = uids(dir.path(), true);
        u.get_or_create(UidKind::TagV, "web01").unwrap();
        let fwd = u.store.get_row(Table::Uid, b"web01").unwrap();
        assert_eq!(
            fwd,
            vec![crate::storage::Cell {
                column: b"itagv".to_vec(),
                value: bytes::Bytes::from_static(&[0, 0, 1])
            }]
        );
        let rev = u.store.get_row(Table::Uid, &[0, 0, 1]).unwrap();
        assert_eq!(
            rev,
            vec![crate::storage::Cell {
                column: b"ntagv".to_vec(),
                value: bytes::Bytes::from_static(b"web01")
            }]
        );
        let ctr = u.store.get_row(Table::Uid, &[0]).unwrap();
        assert_eq!(ctr[0].value, &1i64.to_be_bytes()[..]);
    }

    #[test]
    fn suggest_by_prefix_in_byte_order() {
        let dir = tempfile::tempdir().unwrap();
        let u = uids(dir.path(), true);
        for m in [
            "sys.mem.free",
            "sys.cpu.0.system",
            "net.bytes",
            "sys.cpu.1.user",
        ] {
            u.get_or_create(UidKind::Metric, m).unwrap();
        }
        u.get_or_create(UidKind::TagV, "sys.not.a.metric").unwrap();
        assert_eq!(
            u.suggest(UidKind::Metric, "sys", 25).unwrap(),
            ["sys.cpu.0.system", "sys.cpu.1.user", "sys.mem.free"]
        );
        assert_eq!(
            u.suggest(UidKind::Metric, "sys", 1).unwrap(),
            ["sys.cpu.0.system"]
        );
        assert_eq!(u.suggest(UidKind::Metric, "", 25).unwrap().len(), 4);
        assert_eq!(
            u.suggest(UidKind::TagV, "sys", 25).unwrap(),
            ["sys.not.a.metric"]
        );
        assert!(u.suggest(UidKind::TagK, "", 25).unwrap().is_empty());
    }

    #[test]
    fn counters_behind_stored_rows_are_refused_or_raised() {
        let dir = tempfile::tempdir().unwrap();
        let u = uids(dir.path(), true);
        u.get_or_create(UidKind::TagV, "a").unwrap();
        u.ensure_counters([0, 0, 1], false).unwrap();
        let err = u.ensure_counters([5, 0, 1], false).unwrap_err().to_string();
        assert!(
            err.contains("counter for metrics is 0") && err.contains("UID 5"),
            "{err}"
        );
        u.ensure_counters([5, 0, 1], true).unwrap();
        assert_eq!(u.ids_used(UidKind::Metric).unwrap(), 5);
        assert_eq!(u.get_or_create(UidKind::Metric, "next").unwrap(), 6);
    }

    #[test]
    fn exhaustion_on_one_byte_width() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(EmbeddedOptions::new(
            dir.path().to_path_buf(),
            KeyLayout::default(),
        ))
        .unwrap();
        let layout = KeyLayout {
            metric_width: 1,
            ..KeyLayout::default()
        };
        let u = Uids::new(Arc::new(store), &layout, [true; 3], 1000);
        for i in 0..255 {
            u.get_or_create(UidKind::Metric, &format!("m{i}")).unwrap();
        }
        assert_eq!(
            u.get_or_create(UidKind::Metric, "one.too.many")
                .unwrap_err()
                .to_string(),
            "All Unique IDs for metrics on 1 bytes are already assigned!"
        );
    }
}
