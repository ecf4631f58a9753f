//! The write-ahead log of the series head: numbered segment files of
//! checksummed frames (framing in [`crate::logfile`]), written by one sync
//! thread with group commit.
//!
//! Writers append whole frames to an in-memory buffer under a mutex and get
//! a log sequence number (LSN, bytes appended so far); the sync thread
//! writes the buffer, fsyncs according to the [`FsyncPolicy`], and publishes
//! the durable LSN. A writer is acknowledged when the durable LSN reaches
//! its own. The buffer is bounded: a writer that finds it full waits, which
//! slows ingest down instead of growing memory. A failed write or fsync
//! poisons the log for good (no retry after fsync failure).
//!
//! Record schema (payload of a frame), drawn in `docs/format/wal.md`:
//! ```text
//! record := 0x01 series_id:varint series_key:bytes          (series definition)
//!         | 0x02 series_id:varint timestamp:varint value     (point)
//! value  := 0x00 zigzag-varint | 0x01 f32 LE | 0x02 f64 LE
//! ```
//! Series ids are local to a segment: every segment defines the series it
//! uses before their points, so any suffix of segments replays on its own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::codec::StoredValue;
use crate::config::FsyncPolicy;
use crate::logfile::{self, LogError, LogWriter, varint};

pub const MAGIC: &[u8; 8] = b"HGWAL001";
pub const VERSION: u32 = 1;
const REC_SERIES: u8 = 1;
const REC_POINT: u8 = 2;

#[derive(Debug, thiserror::Error, Clone)]
pub enum WalError {
    #[error("write-ahead log failed and refuses further writes: {0}")]
    Poisoned(String),
    #[error("write-ahead log is shut down")]
    Closed,
}

/// Durable progress published by the sync thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Durable {
    pub lsn: u64,
    pub failed: bool,
    /// The segment the sync thread is writing to: a rotation has happened
    /// once this reaches the segment it returned.
    pub segment: u64,
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

#[derive(Debug)]
pub struct Wal {
    dir: PathBuf,
    policy: FsyncPolicy,
    interval: Duration,
    max_pending: usize,
    inner: Mutex<Inner>,
    work: Condvar,
    space: Condvar,
    durable_tx: watch::Sender<Durable>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Encodes records into one frame.
#[derive(Debug, Default)]
pub struct FrameBuilder {
    buf: Vec<u8>,
    pos: usize,
}

impl FrameBuilder {
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(4096);
        let pos = logfile::begin_frame(&mut buf);
        Self { buf, pos }
    }

    pub fn series(&mut self, id: u32, key: &[u8]) {
        self.buf.push(REC_SERIES);
        varint::put(&mut self.buf, u64::from(id));
        varint::put_bytes(&mut self.buf, key);
    }

    pub fn point(&mut self, id: u32, raw_ts: u64, value: StoredValue) {
        self.buf.push(REC_POINT);
        varint::put(&mut self.buf, u64::from(id));
        varint::put(&mut self.buf, raw_ts);
        match value {
            StoredValue::Int(v) => {
                self.buf.push(0);
                varint::put(&mut self.buf, ((v << 1) ^ (v >> 63)) as u64);
            }
            StoredValue::Float(f) => {
                self.buf.push(1);
                self.buf.extend_from_slice(&f.to_le_bytes());
            }
            StoredValue::Double(d) => {
                self.buf.push(2);
                self.buf.extend_from_slice(&d.to_le_bytes());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.pos + logfile::FRAME_HEADER_LEN
    }

    fn finish(mut self) -> Result<Vec<u8>, LogError> {
        logfile::finish_frame(&mut self.buf, self.pos)?;
        Ok(self.buf)
    }
}

/// One replayed point.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedPoint<'a> {
    pub series_key: &'a [u8],
    pub raw_ts: u64,
    pub value: StoredValue,
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

fn decode_frame(
    payload: &[u8],
    path: &Path,
    visit: &mut dyn FnMut(ReplayedPoint<'_>),
    defs: &mut HashMap<u64, Vec<u8>>,
) -> Result<(), LogError> {
    let bad = |reason| LogError::Corrupt {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    };
    let mut r = varint::Reader::new(payload);
    while !r.is_empty() {
        match r.u8() {
            Some(REC_SERIES) => {
                let id = r.varint().ok_or_else(|| bad("bad series record"))?;
                let key = r.bytes().ok_or_else(|| bad("bad series record"))?;
                defs.insert(id, key.to_vec());
            }
            Some(REC_POINT) => {
                let id = r.varint().ok_or_else(|| bad("bad point record"))?;
                let raw_ts = r.varint().ok_or_else(|| bad("bad point record"))?;
                let value = match r.u8() {
                    Some(0) => {
                        let z = r.varint().ok_or_else(|| bad("bad point value"))?;
                        StoredValue::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
                    }
                    Some(1) => StoredValue::Float(f32::from_le_bytes(
                        r.take(4)
                            .and_then(|b| b.try_into().ok())
                            .ok_or_else(|| bad("bad point value"))?,
                    )),
                    Some(2) => StoredValue::Double(f64::from_le_bytes(
                        r.take(8)
                            .and_then(|b| b.try_into().ok())
                            .ok_or_else(|| bad("bad point value"))?,
                    )),
                    _ => return Err(bad("bad point value kind")),
                };
                let key = defs
                    .get(&id)
                    .ok_or_else(|| bad("point of an undefined series"))?;
                visit(ReplayedPoint {
                    series_key: key,
                    raw_ts,
                    value,
                });
            }
            _ => return Err(bad("unknown record type")),
        }
    }
    Ok(())
}

impl Wal {
    /// Replays every segment in `dir` through `visit`, then opens a fresh
    /// segment for appending. Old segments stay until [`Wal::remove_before`].
    pub fn open(
        dir: &Path,
        policy: FsyncPolicy,
        interval: Duration,
        max_pending: usize,
        mut visit: impl FnMut(ReplayedPoint<'_>),
    ) -> Result<Arc<Self>, LogError> {
        std::fs::create_dir_all(dir).map_err(|source| LogError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let segments = list_segments(dir)?;
        let mut total = 0u64;
        for (i, &n) in segments.iter().enumerate() {
            let path = segment_path(dir, n);
            let mut defs: HashMap<u64, Vec<u8>> = HashMap::new();
            let rec = logfile::read_log(&path, MAGIC, VERSION, |payload| {
                decode_frame(payload, &path, &mut visit, &mut defs)
            })?;
            if rec.torn_bytes > 0 {
                let last = i + 1 == segments.len();
                tracing::warn!(segment = %path.display(), bytes = rec.torn_bytes, last, "dropped a torn write-ahead log tail (never acknowledged under fsync=always)");
            }
            total += rec.valid_len;
        }
        let next = segments.last().map_or(1, |n| n + 1);
        let writer = LogWriter::create(&segment_path(dir, next), MAGIC, VERSION)?;
        total += writer.len();
        let (durable_tx, _) = watch::channel(Durable {
            lsn: 0,
            failed: false,
            segment: next,
        });
        let wal = Arc::new(Self {
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
            thread: Mutex::new(None),
        });
        let w = Arc::clone(&wal);
        let handle = std::thread::Builder::new()
            .name("hourglass-wal".into())
            .spawn(move || w.sync_loop(writer))
            .map_err(|source| LogError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        *wal.thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
        Ok(wal)
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

    /// Appends one frame; returns its LSN. Blocks while the buffer is full.
    pub fn append(&self, frame: FrameBuilder) -> Result<u64, WalError> {
        let bytes = frame
            .finish()
            .map_err(|e| WalError::Poisoned(e.to_string()))?;
        let mut g = self.lock();
        loop {
            if let Some(p) = &g.poisoned {
                return Err(WalError::Poisoned(p.clone()));
            }
            if g.closed {
                return Err(WalError::Closed);
            }
            if g.pending.is_empty() || g.pending.len() + bytes.len() <= self.max_pending {
                break;
            }
            g = self
                .space
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let res = rx.wait_for(|d| d.lsn >= lsn || d.failed).await;
        match res {
            Ok(d) if d.lsn >= lsn && !d.failed => Ok(()),
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
            if d.failed {
                return Err(self
                    .lock()
                    .poisoned
                    .clone()
                    .map_or(WalError::Closed, WalError::Poisoned));
            }
            if d.lsn >= lsn && d.segment >= segment {
                return Ok(());
            }
            let g = self.lock();
            if g.closed && g.pending.is_empty() {
                return Err(WalError::Closed);
            }
            drop(g);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Writes and fsyncs everything pending, then stops the sync thread.
    pub fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
        self.space.notify_all();
        if let Some(h) = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = h.join();
        }
    }

    fn sync_loop(self: Arc<Self>, mut writer: LogWriter) {
        let mut segment = self.lock().segment;
        let mut last_sync = Instant::now();
        let mut dirty = false;
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
                let mut rest: &[u8] = &buf;
                if let Some((split, next)) = rotate {
                    writer.append(&rest[..split])?;
                    if self.policy != FsyncPolicy::Never {
                        writer.sync()?;
                    }
                    rest = &rest[split..];
                    writer = LogWriter::create(&segment_path(&self.dir, next), MAGIC, VERSION)?;
                    segment = next;
                    self.lock().total_bytes += logfile::HEADER_LEN as u64;
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
                    writer.sync()?;
                    dirty = false;
                    last_sync = Instant::now();
                }
                Ok(())
            })();
            match res {
                Ok(()) => {
                    self.durable_tx.send_replace(Durable {
                        lsn: end_lsn,
                        failed: false,
                        segment,
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "write-ahead log write failed; refusing further writes");
                    self.lock().poisoned = Some(e.to_string());
                    let last = *self.durable_tx.borrow();
                    self.durable_tx.send_replace(Durable {
                        failed: true,
                        ..last
                    });
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

    type Replayed = Vec<(Vec<u8>, u64, StoredValue)>;

    fn collect(dir: &Path) -> (Arc<Wal>, Replayed) {
        let mut out = Vec::new();
        let wal = Wal::open(
            dir,
            FsyncPolicy::Always,
            Duration::from_millis(10),
            1 << 20,
            |p| out.push((p.series_key.to_vec(), p.raw_ts, p.value)),
        )
        .unwrap();
        (wal, out)
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
}
