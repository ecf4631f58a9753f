//! Copies of files a running store keeps using: a hard link where the file
//! is immutable and still has its name, else a copy read through a
//! descriptor the store holds open (a compaction may unlink the name at any
//! moment; the descriptor keeps the bytes). What snapshots are made of.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What a snapshot took: files, bytes, and how many of them are hard links
/// (they cost no disk until the live copy is compacted away).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub files: u64,
    pub bytes: u64,
    pub linked: u64,
}

impl CopyStats {
    pub fn add(&mut self, bytes: u64, linked: bool) {
        self.files += 1;
        self.bytes += bytes;
        self.linked += u64::from(linked);
    }

    pub fn merge(&mut self, other: CopyStats) {
        self.files += other.files;
        self.bytes += other.bytes;
        self.linked += other.linked;
    }
}

/// Hard-links the immutable file `src` at `dst`; when its name is gone (a
/// compaction removed it after the caller captured it) or `dst` is on
/// another filesystem, copies the first `len` bytes of `open`, the same
/// file opened before. Returns whether it linked.
pub fn link_or_copy(src: &Path, open: &File, len: u64, dst: &Path) -> std::io::Result<bool> {
    match std::fs::hard_link(src, dst) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => copy_prefix(open, len, dst).map(|()| false),
    }
}

/// Writes the first `len` bytes of `src` to the new file `dst` and syncs it
/// (a log's prefix: the frames that were whole when it was captured).
pub fn copy_prefix(src: &File, len: u64, dst: &Path) -> std::io::Result<()> {
    let mut out = OpenOptions::new().write(true).create_new(true).open(dst)?;
    let mut buf = vec![
        0u8;
        (1usize << 20)
            .min(usize::try_from(len).unwrap_or(usize::MAX))
            .max(1)
    ];
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from(len - at).map_or(buf.len(), |left| left.min(buf.len()));
        src.read_exact_at(&mut buf[..n], at)?;
        out.write_all(&buf[..n])?;
        at += n as u64;
    }
    out.sync_all()
}

/// Bytes read from each end of a file for its fingerprint.
const FINGERPRINT_EDGE: u64 = 4096;

/// A cheap identity of an immutable file: a checksum of its size and its
/// first and last 4 KiB. A table file's last bytes hold the checksum of its
/// metadata (sequence numbers, window, counts) and a head checkpoint's
/// first frame its creation time, so two different files of the same name
/// and size do not share one: a backup reuses a file only when they match.
pub fn fingerprint(path: &Path) -> std::io::Result<u64> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let head_len = size.min(FINGERPRINT_EDGE);
    let tail_at = size.saturating_sub(FINGERPRINT_EDGE).max(head_len);
    let mut bytes = size.to_le_bytes().to_vec();
    let mut head = vec![0u8; head_len as usize];
    file.read_exact_at(&mut head, 0)?;
    bytes.extend_from_slice(&head);
    let mut tail = vec![0u8; (size - tail_at) as usize];
    file.read_exact_at(&mut tail, tail_at)?;
    bytes.extend_from_slice(&tail);
    Ok(crate::checksum::of(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_name_is_copied_from_the_open_file() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a");
        std::fs::write(&src, b"immutable bytes").unwrap();
        let open = File::open(&src).unwrap();
        assert!(link_or_copy(&src, &open, 15, &dir.path().join("b")).unwrap());
        std::fs::remove_file(&src).unwrap();
        assert!(!link_or_copy(&src, &open, 9, &dir.path().join("c")).unwrap());
        assert_eq!(
            std::fs::read(dir.path().join("b")).unwrap(),
            b"immutable bytes"
        );
        assert_eq!(std::fs::read(dir.path().join("c")).unwrap(), b"immutable");
        assert!(link_or_copy(&src, &open, 9, &dir.path().join("c")).is_err());
    }

    #[test]
    fn fingerprints_tell_files_of_one_size_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        let mut big = vec![7u8; 20_000];
        std::fs::write(&a, &big).unwrap();
        std::fs::write(&b, &big).unwrap();
        big[19_999] = 8;
        std::fs::write(&c, &big).unwrap();
        assert_eq!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap());
        assert_ne!(fingerprint(&a).unwrap(), fingerprint(&c).unwrap());
        std::fs::write(&c, b"short").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), fingerprint(&c).unwrap());
    }
}
