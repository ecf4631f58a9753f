//! The write-ahead log of the series head: numbered segment files of
//! checksummed frames (framing in [`crate::logfile`], record schema in
//! [`record`]), written by one sync thread with group commit.
//!
//! Writers append whole frames to an in-memory buffer under a mutex and get
//! a log sequence number (LSN, bytes appended so far); the sync thread
//! writes the buffer and fsyncs according to the [`FsyncPolicy`]; the
//! publishing thread ([`publish`]) then tells the [`DurableHook`] (the
//! engine applies those writes to its head) and publishes the durable LSN,
//! while the sync thread writes the next group. A writer is acknowledged when the durable LSN
//! reaches its own. The buffer is bounded: a writer waits for room
//! ([`Wal::wait_for_room`]) before it appends, which slows ingest down
//! instead of growing memory; [`Wal::append`] itself never waits, so it may
//! be called under the head lock the hook takes. A failed write or fsync
//! poisons the log for good (no retry after fsync failure); the frames it
//! refused are cut from the segment where possible, so a restart does not
//! replay what the clients were told failed.
//!
//! Segments are numbered; a head checkpoint names the segment from which
//! replay starts, and older segments are deleted once it is durable. Every
//! segment that another follows ends with an end-of-segment record (sealed
//! at rotation and, for the last segment of an earlier run, on open, before
//! a new segment is created), so only the last segment can end torn: a torn
//! tail there (a frame cut short by a crash) is truncated on open, while a
//! non-last segment that ends early — inside a frame, or at a frame boundary
//! without its end record — was truncated or damaged after it was written.
//! That, a complete frame that fails its checksum, or one that does not
//! decode stops `open` with the file and offset, unless repair is on, which
//! keeps the frames before the damage and moves the rest to `lost+found/`.

mod publish;
pub mod record;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::FsyncPolicy;
use crate::logfile::{self, LogError, LogWriter};

use publish::Publisher;
pub use publish::{Durable, DurableHook};

pub use record::{Event, FrameBuilder};

pub const MAGIC: &[u8; 8] = b"HGWAL003";
pub const VERSION: u32 = 3;
/// Version 2 segments (no end-of-segment records) stay readable.
pub const MAGIC_V2: &[u8; 8] = b"HGWAL002";

/// The readable formats, the one written first.
const FORMATS: [(&[u8; 8], u32); 2] = [(MAGIC, VERSION), (MAGIC_V2, 2)];

/// What reading one segment found.
#[derive(Debug, Clone, Copy)]
pub struct SegmentRead {
    /// Header plus whole frames.
    pub valid_len: u64,
    /// Bytes after them (a torn tail, if the segment is the last one).
    pub torn_bytes: u64,
    /// It ends with an end-of-segment record.
    pub sealed: bool,
    /// Its format version (`None`: too short to hold a header).
    pub version: Option<u32>,
}

impl SegmentRead {
    /// Damage a segment shows given whether it is the last one: the offset
    /// where it starts and why. Only the last segment can be cut short by a
    /// crash, since a segment is sealed before the next one is created.
    pub fn damage(&self, last: bool) -> Option<(u64, &'static str)> {
        if self.sealed && self.torn_bytes > 0 {
            return Some((self.valid_len, "bytes after the segment's end record"));
        }
        if last {
            return None;
        }
        if self.torn_bytes > 0 || self.version.is_none() {
            return Some((
                self.valid_len,
                "the segment ends inside a frame but a later segment exists (only the last segment can be torn by a crash): it was truncated or damaged, and acknowledged points it held are missing",
            ));
        }
        if self.version == Some(VERSION) && !self.sealed {
            return Some((
                self.valid_len,
                "the segment has no end record but a later segment exists: it was truncated, and acknowledged points it held are missing",
            ));
        }
        None
    }
}

/// Reads one segment, passing every change to `visit`.
pub fn read_segment(
    path: &Path,
    defs: &mut record::Defs,
    visit: &mut dyn FnMut(Event<'_>),
) -> Result<SegmentRead, LogError> {
    let mut end_at: Option<u64> = None;
    let (rec, format) = logfile::read_log_versions(path, &FORMATS, |offset, payload| {
        let bad = |reason| LogError::BadRecord {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        if end_at.is_some() {
            return Err(bad("a frame after the segment's end record"));
        }
        match record::decode(payload, defs, visit).map_err(bad)? {
            Some(named) if named != offset => Err(bad("the end record names another offset")),
            Some(_) => {
                end_at = Some(offset);
                Ok(())
            }
            None => Ok(()),
        }
    })?;
    Ok(SegmentRead {
        valid_len: rec.valid_len,
        torn_bytes: rec.torn_bytes,
        sealed: end_at.is_some(),
        version: format.map(|i| FORMATS[i].1),
    })
}

/// Ends the segment at `path` after its first `valid_len` bytes (dropping
/// a torn tail) with an end record, durably. Returns its new length.
fn seal(path: &Path, valid_len: u64) -> Result<u64, LogError> {
    let mut writer = if valid_len < logfile::HEADER_LEN as u64 {
        // Not even a header survived: nothing in it was acknowledged.
        std::fs::remove_file(path).map_err(|source| LogError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        LogWriter::create(path, MAGIC, VERSION)?
    } else {
        LogWriter::reopen(path, valid_len)?
    };
    writer.append(&record::end_frame(writer.len())?)?;
    writer.sync()?;
    Ok(writer.len())
}

#[derive(Debug, thiserror::Error, Clone)]
pub enum WalError {
    #[error("write-ahead log failed and refuses further writes: {0}")]
    Poisoned(String),
    #[error("write-ahead log is shut down")]
    Closed,
}

/// Verifies every segment without changing anything (`hourglass fsck`).
/// Returns the highest UIDs the logged series refer to, per kind.
pub fn check(
    dir: &Path,
    layout: &crate::codec::KeyLayout,
    report: &mut crate::findings::Report,
) -> [u64; 3] {
    use crate::findings::Severity::Error;
    let mut uids = [0u64; 3];
    let segments = match list_segments(dir) {
        Ok(s) => s,
        Err(e) => {
            if dir.exists() {
                report.push(Error, dir, None, e.to_string());
            }
            return uids;
        }
    };
    let mut points = 0u64;
    for (i, &n) in segments.iter().enumerate() {
        let path = segment_path(dir, n);
        let mut defs = record::Defs::default();
        let read = read_segment(&path, &mut defs, &mut |_| points += 1);
        let last = i + 1 == segments.len();
        match read.as_ref().map(|r| (r, r.damage(last))) {
            Ok((_, Some((offset, reason)))) => report.push(Error, &path, Some(offset), reason),
            Ok((r, None)) if r.torn_bytes > 0 => report.torn_tail(&path, r.valid_len, r.torn_bytes),
            Ok(_) => {}
            Err(e) => report.log_error(&path, e),
        }
        let uid = crate::codec::rowkey::uid_from_bytes;
        for key in defs.values().map(|d| &d.key) {
            if let Some(m) = key.get(layout.salt_width..layout.prefix_width()) {
                uids[0] = uids[0].max(uid(m));
            }
            for (k, v) in layout.tag_pairs(key.get(layout.prefix_width()..).unwrap_or_default()) {
                uids[1] = uids[1].max(uid(k));
                uids[2] = uids[2].max(uid(v));
            }
        }
    }
    report.checked.push(format!(
        "write-ahead log: {} segments, {points} records",
        segments.len()
    ));
    uids
}

/// Run when a log thread ends: the sync thread closes the publisher (what
/// it handed over is still published), and a thread that panicked poisons
/// the log (see [`Wal::thread_panicked`]).
struct OnExit(Arc<Wal>, &'static str);

impl Drop for OnExit {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.thread_panicked(self.1);
        } else if self.1 == "sync" {
            self.0.publisher.close();
        }
    }
}

/// How the log is written.
#[derive(Debug, Clone)]
pub struct WalOptions {
    pub policy: FsyncPolicy,
    /// fsync interval of [`FsyncPolicy::Interval`].
    pub interval: Duration,
    /// Bytes of frames waiting to be written before appends wait.
    pub max_pending: usize,
    /// Cut a damaged segment at the damage instead of refusing to open.
    pub repair: bool,
}

#[derive(Debug)]
struct Inner {
    pending: Vec<u8>,
    appended: u64,
    /// Requested rotation: bytes of `pending` that still belong to the old
    /// segment, and the new segment's number.
    rotate: Option<(usize, u64)>,
    segment: u64,
    epoch: u64,
    poisoned: Option<String>,
    closed: bool,
    /// Bytes in all live segments (checkpoint trigger).
    total_bytes: u64,
}

/// What the sync thread makes durable before it hands a group of frames to
/// the log file: the store's new UID rows, which the frames' series name
/// (their writers assigned them before they appended). One sync per group,
/// on the log's own thread, instead of one per write on the writers'
/// threads, which would otherwise wait on it.
pub trait BeforeWrite: Send + Sync + std::fmt::Debug {
    fn before_write(&self) -> Result<(), String>;
}

#[derive(Debug)]
pub struct Wal {
    hook: std::sync::OnceLock<Box<dyn DurableHook>>,
    before_write: std::sync::OnceLock<Box<dyn BeforeWrite>>,
    dir: PathBuf,
    policy: FsyncPolicy,
    interval: Duration,
    max_pending: usize,
    inner: Mutex<Inner>,
    work: Condvar,
    space: Condvar,
    durable_tx: watch::Sender<Durable>,
    publisher: Publisher,
    /// The sync thread, then the publishing thread (joined in that order).
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:08}.wal"))
}

/// Live segment numbers in order.
fn list_segments(dir: &Path) -> Result<Vec<u64>, LogError> {
    let rd = std::fs::read_dir(dir).map_err(|source| LogError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut v: Vec<u64> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".wal")?.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

impl Wal {
    /// Replays the segments numbered `replay_from` and later through
    /// `visit` (older ones are covered by a head checkpoint and deleted),
    /// then opens a fresh segment for appending. Replayed segments stay
    /// until [`Wal::remove_before`].
    pub fn open(
        dir: &Path,
        opts: &WalOptions,
        replay_from: u64,
        visit: &mut dyn FnMut(Event<'_>),
    ) -> Result<Arc<Self>, LogError> {
        std::fs::create_dir_all(dir).map_err(|source| LogError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut segments = list_segments(dir)?;
        for &n in segments.iter().filter(|&&n| n < replay_from) {
            let path = segment_path(dir, n);
            std::fs::remove_file(&path).map_err(|source| LogError::Io { path, source })?;
        }
        segments.retain(|&n| n >= replay_from);
        let lost = dir
            .parent()
            .unwrap_or(dir)
            .join(crate::storage::embedded::LOST_AND_FOUND);
        let mut total = 0u64;
        for (i, &n) in segments.iter().enumerate() {
            let path = segment_path(dir, n);
            let last = i + 1 == segments.len();
            let mut defs = record::Defs::default();
            let damage = match read_segment(&path, &mut defs, visit) {
                Ok(read) => match read.damage(last) {
                    Some(damage) => Err(damage),
                    None => Ok(read),
                },
                Err(
                    LogError::Corrupt { offset, reason, .. }
                    | LogError::BadRecord { offset, reason, .. },
                ) => Err((offset, reason)),
                Err(e) => return Err(e),
            };
            let read = match damage {
                Ok(read) => read,
                Err((offset, reason)) if opts.repair => {
                    let moved = logfile::cut_and_move_aside(&path, offset, &lost)?;
                    tracing::error!(segment = %path.display(), offset, reason, moved = %moved.display(), "repair: damaged write-ahead log segment cut at the damage; the rest was moved aside and is not replayed");
                    SegmentRead {
                        valid_len: offset,
                        torn_bytes: 0,
                        sealed: false,
                        version: Some(VERSION),
                    }
                }
                Err((offset, reason)) => {
                    return Err(LogError::Corrupt {
                        path,
                        offset,
                        reason,
                    });
                }
            };
            if read.torn_bytes > 0 {
                tracing::warn!(segment = %path.display(), bytes = read.torn_bytes, "dropped a torn write-ahead log tail (a write that was never acknowledged)");
            }
            // Sealed before the next segment is created, so that only the
            // newest segment can ever end torn.
            total += if read.sealed {
                read.valid_len
            } else {
                seal(&path, read.valid_len)?
            };
        }
        let (policy, interval, max_pending) = (
            opts.policy,
            opts.interval.max(Duration::from_millis(1)),
            opts.max_pending.max(1 << 16),
        );
        let next = segments.last().map_or(replay_from.max(1), |n| n + 1);
        let writer = LogWriter::create(&segment_path(dir, next), MAGIC, VERSION)?;
        total += writer.len();
        let (durable_tx, _) = watch::channel(Durable {
            lsn: 0,
            failed: false,
            segment: next,
        });
        let wal = Arc::new(Self {
            hook: std::sync::OnceLock::new(),
            before_write: std::sync::OnceLock::new(),
            dir: dir.to_path_buf(),
            policy,
            interval,
            max_pending,
            inner: Mutex::new(Inner {
                pending: Vec::new(),
                appended: 0,
                rotate: None,
                segment: next,
                epoch: 1,
                poisoned: None,
                closed: false,
                total_bytes: total,
            }),
            work: Condvar::new(),
            space: Condvar::new(),
            durable_tx,
            publisher: Publisher::default(),
            threads: Mutex::new(Vec::new()),
        });
        let spawn_error = |source| LogError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let publishing = Arc::clone(&wal);
        let publish = std::thread::Builder::new()
            .name("hourglass-wal-publish".into())
            .spawn(move || {
                let _on_exit = OnExit(Arc::clone(&publishing), "publishing");
                publishing
                    .publisher
                    .run(&publishing.hook, &publishing.durable_tx)
            })
            .map_err(spawn_error)?;
        let syncing = Arc::clone(&wal);
        let sync = std::thread::Builder::new()
            .name("hourglass-wal".into())
            .spawn(move || {
                let _on_exit = OnExit(Arc::clone(&syncing), "sync");
                Arc::clone(&syncing).sync_loop(writer);
            });
        let sync = match sync {
            Ok(handle) => handle,
            Err(source) => {
                wal.publisher.close();
                let _ = publish.join();
                return Err(spawn_error(source));
            }
        };
        *wal.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = vec![sync, publish];
        Ok(wal)
    }

    /// A log thread ended by a panic: the log is poisoned and waiting
    /// writers are told, rather than left waiting (and a close joining the
    /// threads hanging).
    fn thread_panicked(&self, thread: &str) {
        let why = format!("the write-ahead log's {thread} thread panicked");
        self.lock().poisoned.get_or_insert(why);
        if thread == "sync" {
            // The publishing thread publishes what it was handed, then
            // the failure.
            self.publisher.failed();
        } else {
            // Nobody publishes any more: the failure goes out from here.
            let last = *self.durable_tx.borrow();
            self.durable_tx.send_replace(Durable {
                failed: true,
                ..last
            });
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Current segment epoch: changes at every rotation, when every series
    /// must be defined again before its next point.
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Sets what the publishing thread tells about durable frames (once).
    pub fn set_hook(&self, hook: Box<dyn DurableHook>) {
        let _ = self.hook.set(hook);
    }

    /// Sets what the sync thread makes durable before each group of frames
    /// reaches the file (once); a failure poisons the log, as a failed
    /// write of its own would.
    pub fn set_before_write(&self, before: Box<dyn BeforeWrite>) {
        let _ = self.before_write.set(before);
    }

    /// Waits while the buffer of frames not yet written is full; call before
    /// taking locks that [`DurableHook`] needs, then [`Wal::append`]. (Writers
    /// that pass together may take the buffer past its bound by a batch
    /// each.)
    pub fn wait_for_room(&self) -> Result<(), WalError> {
        let mut g = self.lock();
        loop {
            if let Some(p) = &g.poisoned {
                return Err(WalError::Poisoned(p.clone()));
            }
            if g.closed {
                return Err(WalError::Closed);
            }
            if g.pending.len() < self.max_pending {
                return Ok(());
            }
            g = self
                .space
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Appends one frame; returns its LSN. Never waits (see
    /// [`Wal::wait_for_room`]).
    pub fn append(&self, frame: FrameBuilder) -> Result<u64, WalError> {
        let bytes = frame
            .finish()
            .map_err(|e| WalError::Poisoned(e.to_string()))?;
        let mut g = self.lock();
        if let Some(p) = &g.poisoned {
            return Err(WalError::Poisoned(p.clone()));
        }
        if g.closed {
            return Err(WalError::Closed);
        }
        g.pending.extend_from_slice(&bytes);
        g.appended += bytes.len() as u64;
        g.total_bytes += bytes.len() as u64;
        let lsn = g.appended;
        drop(g);
        self.work.notify_one();
        Ok(lsn)
    }

    /// Starts a new segment after everything appended so far. Returns the
    /// new segment number and the LSN at which the old one ends.
    pub fn rotate(&self) -> (u64, u64) {
        let mut g = self.lock();
        // One rotation at a time: a second request must not overwrite a
        // first one the sync thread has not taken yet.
        while g.rotate.is_some() && g.poisoned.is_none() && !g.closed {
            g = self
                .space
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        let next = g.segment + 1;
        let split = g.pending.len();
        g.rotate = Some((split, next));
        g.segment = next;
        g.epoch += 1;
        let lsn = g.appended;
        drop(g);
        self.work.notify_one();
        (next, lsn)
    }

    /// Deletes segments numbered below `segment` (their data is in storage).
    pub fn remove_before(&self, segment: u64) -> Result<(), LogError> {
        for n in list_segments(&self.dir)? {
            if n < segment {
                let path = segment_path(&self.dir, n);
                let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                std::fs::remove_file(&path).map_err(|source| LogError::Io {
                    path: path.clone(),
                    source,
                })?;
                let mut g = self.lock();
                g.total_bytes = g.total_bytes.saturating_sub(len);
            }
        }
        logfile::sync_dir(&self.dir)
    }

    pub fn total_bytes(&self) -> u64 {
        self.lock().total_bytes
    }

    pub fn subscribe(&self) -> watch::Receiver<Durable> {
        self.durable_tx.subscribe()
    }

    /// Waits (async) until `lsn` is durable under the fsync policy.
    pub async fn wait_durable(&self, lsn: u64) -> Result<(), WalError> {
        let mut rx = self.subscribe();
        let res = rx.wait_for(|d| d.outcome(lsn).is_some()).await;
        match res {
            Ok(d) if d.outcome(lsn) == Some(true) => Ok(()),
            _ => Err(self
                .lock()
                .poisoned
                .clone()
                .map_or(WalError::Closed, WalError::Poisoned)),
        }
    }

    /// Blocking variant of [`Wal::wait_durable`] for background threads.
    /// Also waits until the sync thread writes to `segment` or a later one,
    /// so that a checkpoint never deletes the segment still being written.
    pub fn wait_durable_blocking(&self, lsn: u64, segment: u64) -> Result<(), WalError> {
        let mut rx = self.subscribe();
        loop {
            let d = *rx.borrow_and_update();
            if d.outcome(lsn) == Some(true) && d.segment >= segment {
                return Ok(());
            }
            if d.failed {
                return Err(self
                    .lock()
                    .poisoned
                    .clone()
                    .map_or(WalError::Closed, WalError::Poisoned));
            }
            let g = self.lock();
            if g.closed && g.pending.is_empty() {
                return Err(WalError::Closed);
            }
            drop(g);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Writes and fsyncs everything pending, publishes it, then stops the
    /// sync and publishing threads.
    pub fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
        self.space.notify_all();
        let threads = std::mem::take(
            &mut *self
                .threads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for handle in threads {
            let _ = handle.join();
        }
    }

    fn fsync(writer: &mut LogWriter) -> Result<(), LogError> {
        crate::failpoint::check("wal_fsync").map_err(|source| LogError::Io {
            path: writer.path().to_path_buf(),
            source,
        })?;
        writer.sync()
    }

    /// Segment number the next appends go to.
    pub fn segment(&self) -> u64 {
        self.lock().segment
    }

    /// True once a write or fsync failed (the log refuses writes).
    pub fn poisoned(&self) -> Option<String> {
        self.lock().poisoned.clone()
    }

    fn sync_loop(self: Arc<Self>, mut writer: LogWriter) {
        let mut segment = self.lock().segment;
        let mut last_sync = Instant::now();
        let mut dirty = false;
        // The end of what has been acknowledged in the current segment: on
        // failure, what follows it is cut off.
        let mut acked_len = writer.len();
        loop {
            let (buf, end_lsn, rotate, closed) = {
                let mut g = self.lock();
                loop {
                    if !g.pending.is_empty() || g.rotate.is_some() || g.closed {
                        break;
                    }
                    if dirty && self.policy == FsyncPolicy::Interval {
                        let wait = self.interval.saturating_sub(last_sync.elapsed());
                        if wait.is_zero() {
                            break;
                        }
                        g = self
                            .work
                            .wait_timeout(g, wait)
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .0;
                    } else {
                        g = self
                            .work
                            .wait(g)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                    }
                }
                (
                    std::mem::take(&mut g.pending),
                    g.appended,
                    g.rotate.take(),
                    g.closed,
                )
            };
            self.space.notify_all();
            let res = (|| -> Result<(), LogError> {
                if !buf.is_empty()
                    && let Some(before) = self.before_write.get()
                {
                    before.before_write().map_err(|why| LogError::Io {
                        path: self.dir.clone(),
                        source: std::io::Error::other(format!(
                            "what the log's frames name could not be made durable first: {why}"
                        )),
                    })?;
                }
                let mut rest: &[u8] = &buf;
                if let Some((split, next)) = rotate {
                    writer.append(&rest[..split])?;
                    // The old segment is sealed and durable before the new
                    // one exists, under every fsync policy (once per
                    // segment), so only the newest segment can end torn.
                    let end = record::end_frame(writer.len())?;
                    writer.append(&end)?;
                    Self::fsync(&mut writer)?;
                    rest = &rest[split..];
                    writer = LogWriter::create(&segment_path(&self.dir, next), MAGIC, VERSION)?;
                    acked_len = writer.len();
                    segment = next;
                    self.lock().total_bytes += (end.len() + logfile::HEADER_LEN) as u64;
                }
                if !rest.is_empty() {
                    writer.append(rest)?;
                    dirty = true;
                }
                let must_sync = match self.policy {
                    FsyncPolicy::Always => dirty,
                    FsyncPolicy::Interval => {
                        dirty && (closed || last_sync.elapsed() >= self.interval)
                    }
                    FsyncPolicy::Never => false,
                };
                if must_sync {
                    Self::fsync(&mut writer)?;
                    dirty = false;
                    last_sync = Instant::now();
                }
                Ok(())
            })();
            match res {
                Ok(()) => {
                    acked_len = writer.len();
                    self.publisher.durable(Durable {
                        lsn: end_lsn,
                        failed: false,
                        segment,
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "write-ahead log write failed; refusing further writes");
                    self.lock().poisoned = Some(e.to_string());
                    self.publisher.failed();
                    // Best effort: a restart must not replay frames whose
                    // writers were told they failed (their bytes may sit in
                    // the file, or in the page cache after a failed fsync).
                    if let Err(cut) = writer.truncate(acked_len) {
                        tracing::error!(error = %cut, offset = acked_len, segment = %writer.path().display(), "could not cut the refused frames off the write-ahead log; a restart may replay writes that were refused");
                    }
                    self.space.notify_all();
                    return;
                }
            }
            if closed && self.lock().pending.is_empty() {
                if dirty && self.policy != FsyncPolicy::Never {
                    let _ = writer.sync();
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::StoredValue;

    type Replayed = Vec<(Vec<u8>, u64, StoredValue)>;

    fn options(repair: bool) -> WalOptions {
        WalOptions {
            policy: FsyncPolicy::Always,
            interval: Duration::from_millis(10),
            max_pending: 1 << 20,
            repair,
        }
    }

    fn open(dir: &Path, repair: bool) -> Result<(Arc<Wal>, Replayed), LogError> {
        let mut out = Vec::new();
        let wal = Wal::open(dir, &options(repair), 0, &mut |e| {
            if let Event::Point {
                series_key,
                raw_ts,
                value,
                ..
            } = e
            {
                out.push((series_key.to_vec(), raw_ts, value));
            }
        })?;
        Ok((wal, out))
    }

    fn collect(dir: &Path) -> (Arc<Wal>, Replayed) {
        open(dir, false).unwrap()
    }

    #[test]
    fn append_replay_rotate_remove() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (wal, got) = collect(dir.path());
            assert!(got.is_empty());
            let mut f = FrameBuilder::new();
            f.series(0, b"key-a");
            f.point(0, 1_356_998_400, StoredValue::Int(-42));
            f.point(0, 1_356_998_401_500, StoredValue::Double(0.1));
            let lsn = wal.append(f).unwrap();
            wal.wait_durable_blocking(lsn, 0).unwrap();
            let (seg, _) = wal.rotate();
            let mut f = FrameBuilder::new();
            f.series(0, b"key-b");
            f.point(0, 7, StoredValue::Float(1.5));
            let lsn = wal.append(f).unwrap();
            wal.wait_durable_blocking(lsn, 0).unwrap();
            assert_eq!(seg, 2);
            wal.close();
        }
        let (wal, got) = collect(dir.path());
        assert_eq!(
            got,
            vec![
                (b"key-a".to_vec(), 1_356_998_400, StoredValue::Int(-42)),
                (
                    b"key-a".to_vec(),
                    1_356_998_401_500,
                    StoredValue::Double(0.1)
                ),
                (b"key-b".to_vec(), 7, StoredValue::Float(1.5)),
            ]
        );
        wal.remove_before(2).unwrap();
        wal.close();
        let (_wal, got) = collect(dir.path());
        assert_eq!(got, vec![(b"key-b".to_vec(), 7, StoredValue::Float(1.5))]);
    }

    /// A hook that panics, as a bug in applying a batch would.
    #[derive(Debug)]
    struct PanickingHook;

    impl DurableHook for PanickingHook {
        fn durable(&self, _lsn: u64) {
            panic!("applying failed (test)");
        }
        fn failed(&self) {}
    }

    #[test]
    fn a_log_thread_that_panics_poisons_the_log_instead_of_hanging_its_writers() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = collect(dir.path());
        wal.set_hook(Box::new(PanickingHook));
        let mut f = FrameBuilder::new();
        f.series(0, b"key-a");
        f.point(0, 1, StoredValue::Int(1));
        let lsn = wal.append(f).unwrap();
        match wal.wait_durable_blocking(lsn, 0) {
            Err(WalError::Poisoned(why)) => assert!(why.contains("publishing thread"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(wal.poisoned().is_some());
        // Closing joins the threads: it returns.
        wal.close();
    }

    /// Records the log's length on disk when asked, and fails once told to.
    #[derive(Debug)]
    struct RecordingBefore {
        dir: PathBuf,
        seen: Arc<Mutex<Vec<u64>>>,
        fail: Arc<std::sync::atomic::AtomicBool>,
    }

    impl BeforeWrite for RecordingBefore {
        fn before_write(&self) -> Result<(), String> {
            let len = std::fs::metadata(segment_path(&self.dir, 1)).map_or(0, |m| m.len());
            self.seen.lock().unwrap().push(len);
            if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("store sync failed (test)".into());
            }
            Ok(())
        }
    }

    #[test]
    fn what_frames_name_is_made_durable_before_they_are_written_or_none_are() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = collect(dir.path());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        wal.set_before_write(Box::new(RecordingBefore {
            dir: dir.path().to_path_buf(),
            seen: Arc::clone(&seen),
            fail: Arc::clone(&fail),
        }));
        let segment = wal.segment();
        assert_eq!(segment, 1);
        let empty_len = std::fs::metadata(segment_path(dir.path(), 1))
            .unwrap()
            .len();
        let mut f = FrameBuilder::new();
        f.series(0, b"key-a");
        f.point(0, 1, StoredValue::Int(1));
        let lsn = wal.append(f).unwrap();
        wal.wait_durable_blocking(lsn, segment).unwrap();
        // Asked before the frame reached the file, while it held none.
        assert_eq!(*seen.lock().unwrap(), vec![empty_len]);
        let written_len = std::fs::metadata(segment_path(dir.path(), 1))
            .unwrap()
            .len();
        assert!(written_len > empty_len);
        // A failure refuses the frame: its writer hears so, the log takes
        // no more, and the frame is not in the file.
        fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut f = FrameBuilder::new();
        f.point(0, 2, StoredValue::Int(2));
        let lsn = wal.append(f).unwrap();
        assert!(wal.wait_durable_blocking(lsn, segment).is_err());
        let why = wal.poisoned().unwrap();
        assert!(why.contains("store sync failed (test)"), "{why}");
        let mut f = FrameBuilder::new();
        f.point(0, 3, StoredValue::Int(3));
        assert!(wal.append(f).is_err());
        wal.close();
        let (_w, got) = collect(dir.path());
        assert_eq!(got, vec![(b"key-a".to_vec(), 1, StoredValue::Int(1))]);
    }

    #[test]
    fn quick_rotations_never_lose_frames() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = collect(dir.path());
        let (_, _) = wal.rotate();
        let (seg, lsn) = wal.rotate();
        wal.wait_durable_blocking(lsn, seg).unwrap();
        wal.remove_before(seg).unwrap();
        let mut f = FrameBuilder::new();
        f.series(0, b"k");
        f.point(0, 9, StoredValue::Int(9));
        let lsn = wal.append(f).unwrap();
        wal.wait_durable_blocking(lsn, seg).unwrap();
        wal.close();
        let (_w, got) = collect(dir.path());
        assert_eq!(got, vec![(b"k".to_vec(), 9, StoredValue::Int(9))]);
    }

    #[tokio::test]
    async fn async_ack() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = collect(dir.path());
        let mut f = FrameBuilder::new();
        f.series(3, b"k");
        f.point(3, 1, StoredValue::Int(i64::MIN));
        let lsn = wal.append(f).unwrap();
        wal.wait_durable(lsn).await.unwrap();
        wal.close();
        let (_w, got) = collect(dir.path());
        assert_eq!(got[0].2, StoredValue::Int(i64::MIN));
    }

    #[test]
    fn a_flipped_byte_in_the_last_frame_is_an_error_unless_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        {
            let (wal, _) = collect(&wal_dir);
            for i in 0..3u64 {
                let mut f = FrameBuilder::new();
                f.series(0, b"k");
                f.point(0, 100 + i, StoredValue::Int(i as i64));
                let lsn = wal.append(f).unwrap();
                wal.wait_durable_blocking(lsn, 0).unwrap();
            }
            wal.close();
        }
        let seg = segment_path(&wal_dir, 1);
        let mut bytes = std::fs::read(&seg).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&seg, &bytes).unwrap();
        let err = open(&wal_dir, false).unwrap_err().to_string();
        assert!(
            err.contains("00000001.wal") && err.contains("offset"),
            "{err}"
        );
        let (_w, got) = open(&wal_dir, true).unwrap();
        assert_eq!(got.len(), 2, "frames before the damage are kept");
        assert_eq!(
            std::fs::read_dir(dir.path().join(crate::storage::embedded::LOST_AND_FOUND))
                .unwrap()
                .count(),
            1
        );
    }

    /// Writes `frames` one-point frames to the WAL in `dir`, then closes it.
    fn write_frames(dir: &Path, first: u64, frames: u64) {
        let (wal, _) = collect(dir);
        for i in first..first + frames {
            let mut f = FrameBuilder::new();
            f.series(0, b"k");
            f.point(0, 100 + i, StoredValue::Int(i as i64));
            let lsn = wal.append(f).unwrap();
            wal.wait_durable_blocking(lsn, 0).unwrap();
        }
        wal.close();
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }

    /// Issue 22, defect 2: a non-last segment cut short was taken for a
    /// torn tail and its acknowledged points silently dropped. Every cut
    /// point of segment 1 (inside the header, inside a frame, at a frame
    /// boundary, just before the end record) is damage, unless repaired.
    #[test]
    fn a_truncated_segment_that_is_not_the_last_is_damage_unless_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        write_frames(&wal_dir, 0, 3); // segment 1
        write_frames(&wal_dir, 3, 1); // sealed 1 on open; segment 2
        let seg1 = std::fs::read(segment_path(&wal_dir, 1)).unwrap();
        let (_w, all) = open(&wal_dir, false).unwrap();
        assert_eq!(all.len(), 4);
        drop(_w);
        for cut in 0..seg1.len() {
            let case = dir.path().join(format!("cut{cut}"));
            let case_wal = case.join("wal");
            copy_dir(&wal_dir, &case_wal);
            std::fs::write(segment_path(&case_wal, 1), &seg1[..cut]).unwrap();
            let err = open(&case_wal, false).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains("00000001.wal"), "cut at {cut}: {err}");
            let (w, kept) = open(&case_wal, true).unwrap();
            // What segment 1 kept is a prefix of it; segment 2 is whole.
            let (before, after) = kept.split_at(kept.len() - 1);
            assert!(
                all[..3].starts_with(before) && after == &all[3..],
                "cut at {cut}"
            );
            w.close();
            // Repaired once, it opens cleanly from then on.
            let (w, again) = open(&case_wal, false).unwrap();
            assert_eq!(again.len(), kept.len(), "cut at {cut}");
            w.close();
        }
    }

    #[test]
    fn a_torn_tail_of_the_last_segment_is_dropped_and_then_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        write_frames(&wal_dir, 0, 2);
        let seg = segment_path(&wal_dir, 1);
        let mut bytes = std::fs::read(&seg).unwrap();
        bytes.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3]); // a frame cut short
        std::fs::write(&seg, &bytes).unwrap();
        let (w, got) = open(&wal_dir, false).unwrap();
        assert_eq!(got.len(), 2);
        w.close();
        // Now segment 1 is sealed and no longer the last: still no damage.
        let (w, got) = open(&wal_dir, false).unwrap();
        assert_eq!(got.len(), 2);
        w.close();
        let mut report = crate::findings::Report::default();
        let layout = crate::config::Config::default().layout();
        check(&wal_dir, &layout, &mut report);
        assert_eq!(report.errors(), 0, "{report:?}");
    }

    #[test]
    fn version_2_segments_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        std::fs::create_dir_all(&wal_dir).unwrap();
        for (n, ts) in [(1u64, 100u64), (2, 200)] {
            let mut w = LogWriter::create(&segment_path(&wal_dir, n), MAGIC_V2, 2).unwrap();
            let mut f = FrameBuilder::new();
            f.series(0, b"k");
            f.point(0, ts, StoredValue::Int(1));
            w.append(&f.finish().unwrap()).unwrap();
            w.sync().unwrap();
        }
        let (w, got) = open(&wal_dir, false).unwrap();
        assert_eq!(got.iter().map(|p| p.1).collect::<Vec<_>>(), vec![100, 200]);
        w.close();
    }
}
