//! Head checkpoints (`<data_dir>/head/ckpt-NNNNNNNN`): the open hours of
//! the head in their compressed form, so that the write-ahead log before
//! segment `N` can be deleted and a restart replays only what came after.
//! A checkpoint costs what the head costs (a few bytes per point); it never
//! writes open hours into table rows.
//!
//! ```text
//! file    := logfile header ("HGHEADC1", v1) | frame*        (crate::logfile framing)
//! payload := 0x01 wal_segment varint | created_ms varint      first frame
//!          | 0x02 count varint | series{count}
//!          | 0x03 series varint | points varint               last frame
//! series  := key bytes | metric varint | hours varint | hour*
//! hour    := base u32 LE | cell bytes | ooo bytes             native cells; ooo may be empty
//! ```
//! Written to a `.tmp` file, fsynced, renamed, directory fsynced; a file
//! without its end frame, or with any bad frame, is an error naming the
//! file and offset (never loaded in part), unless repair is on.
//!
//! The snapshot is taken after the WAL has rotated to segment `N` and
//! while writes go on, a piece of at most [`BATCH`] series at a time with
//! the head's lock let go between pieces (writers never wait for the whole
//! head to be copied, and no copy of the whole head is held), so it may
//! already hold some points that segment `N` also holds. Replaying those
//! again is harmless: a point at an existing timestamp is the same write,
//! and the newest write wins.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::head::Head;
use crate::codec::varint;
use crate::logfile::{self, LogError, LogWriter};

pub const MAGIC: &[u8; 8] = b"HGHEADC1";
pub const VERSION: u32 = 1;
const META: u8 = 1;
const SERIES: u8 = 2;
const END: u8 = 3;
/// Series per frame: frames stay well under the frame size limit.
const BATCH: usize = 4096;

pub fn path(dir: &Path, segment: u64) -> PathBuf {
    dir.join(format!("ckpt-{segment:08}"))
}

/// Checkpoint files in `dir`, newest (highest segment) first.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, LogError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LogError::Io {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut v: Vec<(u64, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("ckpt-")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(v)
}

/// One series of a snapshot.
#[derive(Debug)]
pub struct SeriesSnapshot {
    pub key: Arc<[u8]>,
    pub metric: u64,
    /// (base, chunk cell, out-of-order cell or empty).
    pub hours: Vec<(u32, Vec<u8>, Vec<u8>)>,
}

/// Copies the open hours of the series in slots `from..` (under the head
/// lock), at most [`BATCH`] series: one piece of a checkpoint. Returns them,
/// their points, and the slot to go on from (`None`: the last piece).
pub fn snapshot_from(head: &Head, from: usize) -> (Vec<SeriesSnapshot>, u64, Option<usize>) {
    let mut out = Vec::new();
    let mut points = 0u64;
    let end = head.slot_count();
    let mut slot = from;
    while slot < end && out.len() < BATCH {
        let entry = head.entry(slot as u32).filter(|e| !e.hours.is_empty());
        slot += 1;
        let Some(e) = entry else {
            continue;
        };
        let mut hours = Vec::with_capacity(e.hours.len());
        for h in &e.hours {
            let mut cell = Vec::new();
            h.chunk.to_cell(&mut cell);
            let mut ooo = Vec::new();
            if !h.ooo.is_empty() {
                let pts = crate::codec::cell::merge_points(&h.ooo, &[]);
                if let Err(err) = crate::codec::native::encode_cell(&pts, &mut ooo) {
                    tracing::error!(error = %err, "cannot encode out-of-order points for a checkpoint");
                }
            }
            points += (h.chunk.len() + h.ooo.len()) as u64;
            hours.push((h.base, cell, ooo));
        }
        out.push(SeriesSnapshot {
            key: Arc::clone(&e.key),
            metric: e.metric,
            hours,
        });
    }
    (out, points, (slot < end).then_some(slot))
}

/// The whole head at once (tests).
#[cfg(test)]
pub fn snapshot(head: &Head) -> (Vec<SeriesSnapshot>, u64) {
    let (mut all, mut points, mut next) = (Vec::new(), 0, Some(0));
    while let Some(from) = next {
        let (piece, n, rest) = snapshot_from(head, from);
        all.extend(piece);
        points += n;
        next = rest;
    }
    (all, points)
}

/// Writes a checkpoint valid from WAL segment `segment` from the pieces
/// `next` gives (series and their points; `None` when done) and makes it
/// durable. Returns its path.
pub fn write(
    dir: &Path,
    segment: u64,
    now_ms: u64,
    next: &mut dyn FnMut() -> Option<(Vec<SeriesSnapshot>, u64)>,
) -> Result<PathBuf, LogError> {
    std::fs::create_dir_all(dir).map_err(|source| LogError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let dst = path(dir, segment);
    let tmp = dst.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut w = LogWriter::create(&tmp, MAGIC, VERSION)?;
    let frame = |fill: &mut dyn FnMut(&mut Vec<u8>)| -> Result<Vec<u8>, LogError> {
        let mut buf = Vec::new();
        let pos = logfile::begin_frame(&mut buf);
        fill(&mut buf);
        logfile::finish_frame(&mut buf, pos)?;
        Ok(buf)
    };
    let result = (|| -> Result<(), LogError> {
        w.append(&frame(&mut |b| {
            b.push(META);
            varint::put(b, segment);
            varint::put(b, now_ms);
        })?)?;
        let (mut series, mut points) = (0u64, 0u64);
        while let Some((piece, piece_points)) = next() {
            series += piece.len() as u64;
            points += piece_points;
            for chunk in piece.chunks(BATCH) {
                w.append(&frame(&mut |b| {
                    b.push(SERIES);
                    varint::put(b, chunk.len() as u64);
                    for s in chunk {
                        varint::put_bytes(b, &s.key);
                        varint::put(b, s.metric);
                        varint::put(b, s.hours.len() as u64);
                        for (base, cell, ooo) in &s.hours {
                            b.extend_from_slice(&base.to_le_bytes());
                            varint::put_bytes(b, cell);
                            varint::put_bytes(b, ooo);
                        }
                    }
                })?)?;
            }
        }
        w.append(&frame(&mut |b| {
            b.push(END);
            varint::put(b, series);
            varint::put(b, points);
        })?)?;
        w.sync()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &dst).map_err(|source| LogError::Io {
        path: dst.clone(),
        source,
    })?;
    logfile::sync_dir(dir)?;
    Ok(dst)
}

/// What a loaded checkpoint held.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    pub segment: u64,
    pub series: u64,
    pub points: u64,
}

/// Receives one hour of a checkpoint: series key, metric UID, base hour,
/// chunk cell, out-of-order cell (possibly empty).
pub type HourSink<'a> = dyn FnMut(Arc<[u8]>, u64, u32, &[u8], &[u8]) -> Result<(), String> + 'a;

/// One hour as read from a frame, with the frame's offset.
type Entry = (u64, Arc<[u8]>, u64, u32, Vec<u8>, Vec<u8>);

/// Loads a checkpoint through `load`. The whole file is verified before
/// anything is handed over.
pub fn read(file: &Path, load: &mut HourSink<'_>) -> Result<Loaded, LogError> {
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let rec = logfile::read_log(file, MAGIC, VERSION, |offset, payload| {
        frames.push((offset, payload.to_vec()));
        Ok::<(), LogError>(())
    })?;
    let bad = |offset: u64, reason: &'static str| LogError::BadRecord {
        path: file.to_path_buf(),
        offset,
        reason,
    };
    if rec.torn_bytes > 0 {
        return Err(bad(
            rec.valid_len,
            "checkpoint cut short (it was renamed complete)",
        ));
    }
    let mut loaded = Loaded::default();
    let mut ended = false;
    let mut entries: Vec<Entry> = Vec::new();
    for (i, (offset, payload)) in frames.iter().enumerate() {
        let mut r = varint::Reader::new(payload);
        let kind = r.u8().ok_or_else(|| bad(*offset, "empty frame"))?;
        match (i, kind) {
            (0, META) => {
                loaded.segment = r.varint().ok_or_else(|| bad(*offset, "bad meta frame"))?;
                r.varint().ok_or_else(|| bad(*offset, "bad meta frame"))?;
            }
            (0, _) => return Err(bad(*offset, "no meta frame")),
            (_, SERIES) if !ended => {
                let n = r.varint().ok_or_else(|| bad(*offset, "bad series frame"))?;
                for _ in 0..n {
                    let e = || bad(*offset, "bad series entry");
                    let key: Arc<[u8]> = Arc::from(r.bytes().ok_or_else(e)?);
                    let metric = r.varint().ok_or_else(e)?;
                    let hours = r.varint().ok_or_else(e)?;
                    loaded.series += 1;
                    for _ in 0..hours {
                        let base = r.u32_le().ok_or_else(e)?;
                        let cell = r.bytes().ok_or_else(e)?.to_vec();
                        let ooo = r.bytes().ok_or_else(e)?.to_vec();
                        entries.push((*offset, Arc::clone(&key), metric, base, cell, ooo));
                    }
                }
            }
            (_, END) if !ended => {
                let series = r.varint().ok_or_else(|| bad(*offset, "bad end frame"))?;
                loaded.points = r.varint().ok_or_else(|| bad(*offset, "bad end frame"))?;
                if series != loaded.series {
                    return Err(bad(*offset, "series count does not match the end frame"));
                }
                ended = true;
            }
            _ => return Err(bad(*offset, "unexpected frame")),
        }
        if !r.is_empty() {
            return Err(bad(*offset, "trailing bytes in a frame"));
        }
    }
    if !ended {
        return Err(bad(
            rec.valid_len,
            "no end frame: the checkpoint is incomplete",
        ));
    }
    for (offset, key, metric, base, cell, ooo) in entries {
        load(key, metric, base, &cell, &ooo).map_err(|_| bad(offset, "undecodable cell"))?;
    }
    Ok(loaded)
}

/// Verifies the checkpoints in `dir` (`hourglass fsck`). Returns the
/// highest UIDs their series refer to.
pub fn check(
    dir: &Path,
    layout: &crate::codec::KeyLayout,
    report: &mut crate::findings::Report,
) -> [u64; 3] {
    use crate::findings::Severity::{Error, Info};
    let mut uids = [0u64; 3];
    let files = match list(dir) {
        Ok(f) => f,
        Err(e) => {
            report.push(Error, dir, None, e.to_string());
            return uids;
        }
    };
    for (i, (_, file)) in files.iter().enumerate() {
        let mut head = Head::default();
        let res = read(file, &mut |key, metric, base, cell, ooo| {
            head.load_hour(key, metric, base, cell, ooo)
                .map_err(|e| e.to_string())
        });
        match res {
            Ok(l) => {
                if i > 0 {
                    report.push(
                        Info,
                        file,
                        None,
                        "superseded by a newer checkpoint; removed on open",
                    );
                }
                for (u, h) in uids.iter_mut().zip(head.referenced_uids(layout)) {
                    *u = (*u).max(h);
                }
                report.checked.push(format!(
                    "head checkpoint {}: {} series, {} points",
                    file.display(),
                    l.series,
                    l.points
                ));
            }
            Err(e) => report.log_error(file, &e),
        }
    }
    uids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::StoredValue;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let mut head = Head::default();
        let key: Arc<[u8]> = Arc::from(vec![1, 0, 0, 1, 0, 0, 1, 0, 0, 2]);
        let (id, _) = head.register(Arc::clone(&key), 1);
        for i in 0..500u64 {
            head.insert(
                id,
                1_700_000_000 + i * 10,
                StoredValue::Double(i as f64 / 100.0),
            );
        }
        head.insert(id, 1_700_000_005, StoredValue::Int(7)); // out of order
        let (snap, points) = snapshot(&head);
        assert_eq!(points, 501);
        let mut pieces = vec![(snap, points)];
        let file = write(dir.path(), 9, 1, &mut || pieces.pop()).unwrap();
        assert_eq!(list(dir.path()).unwrap(), vec![(9, file.clone())]);
        let mut back = Head::default();
        let loaded = read(&file, &mut |k, m, b, c, o| {
            back.load_hour(k, m, b, c, o).map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!((loaded.segment, loaded.series, loaded.points), (9, 1, 501));
        let a: Vec<_> = head
            .entry(id)
            .unwrap()
            .hours
            .iter()
            .map(|h| h.points())
            .collect();
        let bid = back.id_of(&key).unwrap();
        let b: Vec<_> = back
            .entry(bid)
            .unwrap()
            .hours
            .iter()
            .map(|h| h.points())
            .collect();
        assert_eq!(a, b);
        // Any flipped byte or cut is an error, never a partial load.
        let good = std::fs::read(&file).unwrap();
        for i in (logfile::HEADER_LEN..good.len()).step_by(7) {
            let mut bytes = good.clone();
            bytes[i] ^= 0x10;
            std::fs::write(&file, &bytes).unwrap();
            let mut n = 0;
            assert!(
                read(&file, &mut |_, _, _, _, _| {
                    n += 1;
                    Ok(())
                })
                .is_err()
            );
            assert_eq!(n, 0, "flip at {i} loaded something");
        }
        std::fs::write(&file, &good[..good.len() - 5]).unwrap();
        assert!(read(&file, &mut |_, _, _, _, _| Ok(())).is_err());
    }
}
