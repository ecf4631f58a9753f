//! Append-only log files of checksummed frames, shared by the write-ahead
//! log and the embedded store's log. This module owns framing only; what a
//! payload means belongs to its user.
//!
//! ```text
//! file   := header frame*
//! header := magic (8 bytes) | format version (u32 LE) | reserved (u32 LE, 0)
//! frame  := payload length (u32 LE) | xxh3-64 of payload (u64 LE)
//!           | low 32 bits of xxh3-64 of the previous 12 bytes (u32 LE) | payload
//! ```
//!
//! Recovery reads frames until the end. A frame that is cut short (its
//! header or payload runs past the end of the file) or a tail of zero bytes
//! is a torn tail — the write that produced it was never acknowledged — and
//! is truncated away. A *complete* frame whose checksum fails, or a bad
//! frame header (its own checksum guards the length), is corruption and is
//! reported with the file and offset, never skipped silently: acknowledged
//! data may sit in or after it. [`cut_and_move_aside`] is the documented
//! repair.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::checksum;

pub const HEADER_LEN: usize = 16;
pub const FRAME_HEADER_LEN: usize = 16;
/// Frames above this size are refused on write and treated as corruption
/// on read, so garbage lengths never cause huge allocations.
pub const MAX_FRAME_LEN: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a log of this kind (bad magic or version)")]
    BadHeader { path: PathBuf },
    #[error(
        "{path} is corrupt at offset {offset}: {reason}; refusing to continue (acknowledged data follows the damage)"
    )]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: &'static str,
    },
    #[error("frame of {0} bytes exceeds the {MAX_FRAME_LEN}-byte limit")]
    FrameTooLarge(usize),
    #[error(
        "{path} is corrupt at offset {offset}: a record inside a checksummed frame is malformed ({reason}); refusing to guess"
    )]
    BadRecord {
        path: PathBuf,
        offset: u64,
        reason: &'static str,
    },
}

impl LogError {
    /// Where in the file the damage is, when the error names a place.
    pub fn offset(&self) -> Option<u64> {
        match self {
            LogError::Corrupt { offset, .. } | LogError::BadRecord { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Starts a frame in `buf`: reserves the frame header. Returns the position
/// to pass to [`finish_frame`] after the payload has been appended.
pub fn begin_frame(buf: &mut Vec<u8>) -> usize {
    let pos = buf.len();
    buf.extend_from_slice(&[0u8; FRAME_HEADER_LEN]);
    pos
}

/// Fills in the header of the frame started at `pos`.
pub fn finish_frame(buf: &mut [u8], pos: usize) -> Result<(), LogError> {
    let payload_len = buf.len() - pos - FRAME_HEADER_LEN;
    if payload_len > MAX_FRAME_LEN {
        return Err(LogError::FrameTooLarge(payload_len));
    }
    let checksum = checksum::of(&buf[pos + FRAME_HEADER_LEN..]);
    buf[pos..pos + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    buf[pos + 4..pos + 12].copy_from_slice(&checksum.to_le_bytes());
    let header_check = checksum::of(&buf[pos..pos + 12]) as u32;
    buf[pos + 12..pos + 16].copy_from_slice(&header_check.to_le_bytes());
    Ok(())
}

/// fsync of a directory, so that a create, rename or delete inside it is
/// durable.
pub fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Creates a directory and its missing parents, each only its owner may
/// enter (0700): the token file's directory, snapshots, backups.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// An open log file being appended to.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    len: u64,
    /// Appended frames not yet written to the file (see
    /// [`LogWriter::buffered`]); always empty for an unbuffered writer.
    pending: Vec<u8>,
    /// Most bytes kept in `pending` (0 = write every append at once).
    buffer: usize,
}

impl LogWriter {
    /// Creates a new log (fails if it exists), writes and syncs its header
    /// and the directory entry.
    pub fn create(path: &Path, magic: &[u8; 8], version: u32) -> Result<Self, LogError> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io(path))?;
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(magic);
        header[8..12].copy_from_slice(&version.to_le_bytes());
        file.write_all(&header).map_err(io(path))?;
        file.sync_all().map_err(io(path))?;
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
            len: HEADER_LEN as u64,
            pending: Vec::new(),
            buffer: 0,
        })
    }

    /// Reopens a log after recovery, truncated to `valid_len` (the end of the
    /// last good frame).
    pub fn reopen(path: &Path, valid_len: u64) -> Result<Self, LogError> {
        let mut file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io(path))?;
        file.set_len(valid_len).map_err(io(path))?;
        file.seek(SeekFrom::End(0)).map_err(io(path))?;
        file.sync_all().map_err(io(path))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            len: valid_len,
            pending: Vec::new(),
            buffer: 0,
        })
    }

    /// Keeps up to `bytes` of appended frames in memory, written out when
    /// full, by [`LogWriter::flush`] and by [`LogWriter::sync`]: one write
    /// system call for many small appends. Frames in the buffer are lost if
    /// the process dies, so only for logs whose unsynced appends nothing
    /// durable depends on (the store log's UID assignments, synced before
    /// any point that uses them is logged).
    pub fn buffered(mut self, bytes: usize) -> Self {
        self.buffer = bytes;
        self
    }

    /// Writes already-framed bytes (see [`begin_frame`]). Not durable until
    /// [`LogWriter::sync`].
    pub fn append(&mut self, framed: &[u8]) -> Result<(), LogError> {
        self.len += framed.len() as u64;
        if self.buffer == 0 {
            return self.file.write_all(framed).map_err(io(&self.path));
        }
        self.pending.extend_from_slice(framed);
        if self.pending.len() >= self.buffer {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes buffered frames to the file (the OS), not durably.
    pub fn flush(&mut self) -> Result<(), LogError> {
        if !self.pending.is_empty() {
            let res = self.file.write_all(&self.pending).map_err(io(&self.path));
            self.pending.clear();
            res?;
        }
        Ok(())
    }

    /// Cuts the log back to its first `len` bytes (dropping anything
    /// buffered) and syncs: the frames after `len` are gone.
    pub fn truncate(&mut self, len: u64) -> Result<(), LogError> {
        self.pending.clear();
        self.file.set_len(len).map_err(io(&self.path))?;
        self.file
            .seek(SeekFrom::Start(len))
            .map_err(io(&self.path))?;
        self.len = len;
        self.file.sync_all().map_err(io(&self.path))
    }

    /// fdatasync: the appended frames survive power loss once this returns.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.flush()?;
        self.file.sync_data().map_err(io(&self.path))
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// Another handle on the file, to fsync it without holding whatever
    /// guards the writer: fsync makes every byte written to the file so far
    /// durable, whichever handle asks. Call [`LogWriter::flush`] first.
    pub fn sync_handle(&self) -> Result<File, LogError> {
        self.file.try_clone().map_err(io(&self.path))
    }

    pub fn is_empty(&self) -> bool {
        self.len <= HEADER_LEN as u64
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LogWriter {
    /// Hands buffered frames to the OS (a clean close loses nothing that was
    /// appended); durability still needs [`LogWriter::sync`].
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Result of reading a log.
#[derive(Debug)]
pub struct Recovered {
    /// Length of the valid prefix (header plus whole, checksummed frames).
    pub valid_len: u64,
    /// Bytes dropped from a torn tail.
    pub torn_bytes: u64,
}

/// Reads every frame of a log, calling `visit` with each frame's offset and
/// payload, in order.
pub fn read_log<E: From<LogError>>(
    path: &Path,
    magic: &[u8; 8],
    version: u32,
    visit: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<Recovered, E> {
    read_log_versions(path, &[(magic, version)], visit).map(|(r, _)| r)
}

/// [`read_log`] for a log kind with several readable format versions:
/// `accepted` lists each version's magic and number. Also returns the index
/// in `accepted` of the file's version (`None` for a file too short to hold
/// its header: a crash between create and the header sync, whose content
/// was never acknowledged).
pub fn read_log_versions<E: From<LogError>>(
    path: &Path,
    accepted: &[(&[u8; 8], u32)],
    mut visit: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<(Recovered, Option<usize>), E> {
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(io(path))?;
    let data = data;
    if data.len() < HEADER_LEN {
        return Ok((
            Recovered {
                valid_len: 0,
                torn_bytes: data.len() as u64,
            },
            None,
        ));
    }
    let version = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    let Some(format) = accepted
        .iter()
        .position(|(m, v)| &data[..8] == *m && version == *v)
    else {
        return Err(LogError::BadHeader {
            path: path.to_path_buf(),
        }
        .into());
    };
    let mut pos = HEADER_LEN;
    let end = data.len();
    while pos < end {
        let corrupt = |reason| LogError::Corrupt {
            path: path.to_path_buf(),
            offset: pos as u64,
            reason,
        };
        if end - pos < FRAME_HEADER_LEN {
            break; // torn frame header
        }
        let len =
            u32::from_le_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as usize;
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&data[pos + 4..pos + 12]);
        let expected = u64::from_le_bytes(sum);
        let header_check = u32::from_le_bytes([
            data[pos + 12],
            data[pos + 13],
            data[pos + 14],
            data[pos + 15],
        ]);
        if !checksum::matches_low32(&data[pos..pos + 12], header_check) {
            if data[pos..].iter().all(|&b| b == 0) {
                break; // zero-filled tail left by a crash during an append
            }
            return Err(corrupt("frame header checksum mismatch").into());
        }
        let body = pos + FRAME_HEADER_LEN;
        if len > MAX_FRAME_LEN {
            return Err(corrupt("frame length out of range").into());
        }
        if body + len > end {
            break; // torn payload
        }
        if !checksum::matches(&data[body..body + len], expected) {
            if data[pos..].iter().all(|&b| b == 0) {
                break; // zero-filled tail
            }
            return Err(corrupt("checksum mismatch in a complete frame").into());
        }
        visit(pos as u64, &data[body..body + len])?;
        pos = body + len;
    }
    Ok((
        Recovered {
            valid_len: pos as u64,
            torn_bytes: (end - pos) as u64,
        },
        Some(format),
    ))
}

/// The documented repair of a damaged log: truncates `path` at `offset`
/// (the start of the first bad frame) after copying every byte from there on
/// into `lost_dir`, so nothing is destroyed. Returns the copy's path.
pub fn cut_and_move_aside(path: &Path, offset: u64, lost_dir: &Path) -> Result<PathBuf, LogError> {
    std::fs::create_dir_all(lost_dir).map_err(io(lost_dir))?;
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(offset))?;
            f.read_to_end(&mut data)
        })
        .map_err(io(path))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "log".into());
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dst = lost_dir.join(format!("{name}.from-{offset}.{stamp}"));
    {
        let mut f = File::create(&dst).map_err(io(&dst))?;
        f.write_all(&data).map_err(io(&dst))?;
        f.sync_all().map_err(io(&dst))?;
    }
    sync_dir(lost_dir)?;
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io(path))?;
    f.set_len(offset).map_err(io(path))?;
    f.sync_all().map_err(io(path))?;
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: &[u8; 8] = b"HGTEST01";

    fn write_frames(path: &Path, payloads: &[&[u8]]) {
        let mut w = LogWriter::create(path, MAGIC, 1).unwrap();
        for p in payloads {
            let mut buf = Vec::new();
            let pos = begin_frame(&mut buf);
            buf.extend_from_slice(p);
            finish_frame(&mut buf, pos).unwrap();
            w.append(&buf).unwrap();
        }
        w.sync().unwrap();
    }

    fn read_all(path: &Path) -> Result<(Vec<Vec<u8>>, Recovered), LogError> {
        let mut out = Vec::new();
        let r = read_log(path, MAGIC, 1, |_, p| -> Result<(), LogError> {
            out.push(p.to_vec());
            Ok(())
        })?;
        Ok((out, r))
    }

    #[test]
    fn round_trip_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        write_frames(&path, &[b"one", b"two", b"three"]);
        let full = std::fs::read(&path).unwrap();
        let (frames, r) = read_all(&path).unwrap();
        assert_eq!(
            frames,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        assert_eq!(r.valid_len, full.len() as u64);
        // Every truncation point inside the last frame is a torn tail.
        let last_start = full.len() - (FRAME_HEADER_LEN + 5);
        for cut in last_start..full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            let (frames, r) = read_all(&path).unwrap();
            assert_eq!(frames.len(), 2, "cut at {cut}");
            assert_eq!(r.valid_len, last_start as u64);
        }
        // A flipped bit in the last, complete frame is corruption, not a
        // torn tail: that frame may have been acknowledged.
        let mut bad = full.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        match read_all(&path) {
            Err(LogError::Corrupt { offset, .. }) => assert_eq!(offset, last_start as u64),
            other => panic!("expected corruption, got {other:?}"),
        }
        // The repair keeps the frames before it and moves the rest aside.
        let lost = dir.path().join("lost");
        let moved = cut_and_move_aside(&path, last_start as u64, &lost).unwrap();
        assert_eq!(std::fs::read(&moved).unwrap(), bad[last_start..]);
        assert_eq!(read_all(&path).unwrap().0.len(), 2);
        // A zero-filled tail is torn too.
        let mut zeros = full.clone();
        zeros.extend_from_slice(&[0u8; 40]);
        std::fs::write(&path, &zeros).unwrap();
        assert_eq!(read_all(&path).unwrap().0.len(), 3);
        // A corrupted length in a middle frame is corruption, not a torn tail.
        let mut bad = full.clone();
        bad[HEADER_LEN + 1] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        assert!(matches!(read_all(&path), Err(LogError::Corrupt { .. })));
        // ... and so is a bad payload in the middle.
        let mut bad = full.clone();
        bad[HEADER_LEN + FRAME_HEADER_LEN] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        assert!(matches!(read_all(&path), Err(LogError::Corrupt { .. })));
        // Reopen truncates to the valid prefix and appends after it.
        std::fs::write(&path, &full[..full.len() - 2]).unwrap();
        let (_, r) = read_all(&path).unwrap();
        let mut w = LogWriter::reopen(&path, r.valid_len).unwrap();
        let mut buf = Vec::new();
        let pos = begin_frame(&mut buf);
        buf.extend_from_slice(b"four");
        finish_frame(&mut buf, pos).unwrap();
        w.append(&buf).unwrap();
        w.sync().unwrap();
        let (frames, _) = read_all(&path).unwrap();
        assert_eq!(
            frames,
            vec![b"one".to_vec(), b"two".to_vec(), b"four".to_vec()]
        );
    }

    #[test]
    fn bad_magic_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        write_frames(&path, &[b"x"]);
        assert!(matches!(
            read_log(&path, b"OTHERMAG", 1, |_, _| Ok::<(), LogError>(())),
            Err(LogError::BadHeader { .. })
        ));
    }
}
