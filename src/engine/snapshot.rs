//! Online snapshots: `<data_dir>/snapshots/<name>/`, a data directory of
//! its own (`hourglass serve --data-dir` serves it) holding every point
//! acknowledged before the call, taken while writes go on.
//!
//! Under the flush lock (no hour leaves the head meanwhile) the head is
//! checkpointed as a regular checkpoint is, and that checkpoint is
//! hard-linked into the snapshot at once (the next checkpoint deletes it);
//! then the store copies its cut (`Store::snapshot`: table files linked,
//! the store log's synced prefix copied, a manifest naming them). Every
//! acknowledged point is durable and applied to the head before it is
//! acknowledged, so it is in the checkpoint or in a published table file;
//! no WAL segment is needed, and a WAL written after the snapshot's
//! checkpoint starts at its segment. The files the caller names (the token
//! file) are copied as they are. The snapshot is built as `<name>.tmp` and
//! renamed when complete: a listed snapshot is always whole.
//!
//! ```text
//! snapshots/<name>/SNAPSHOT            JSON: name, created_ms, version, files, bytes, linked
//! snapshots/<name>/head/ckpt-NNNNNNNN  the head when the snapshot was taken (link)
//! snapshots/<name>/store/…             MANIFEST, NNNNNNNN.sst (links), log-NNNNNNNN.log (copy)
//! snapshots/<name>/auth/tokens.json    copied
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::{Engine, EngineError, checkpoint};
use crate::storage::copy::{CopyStats, fingerprint, link_or_copy};

/// The snapshots' directory under the data directory.
pub const DIR: &str = "snapshots";
/// A snapshot's own description, written last.
pub const MARKER: &str = "SNAPSHOT";

/// One snapshot, as `SNAPSHOT` describes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub name: String,
    pub path: PathBuf,
    pub created_ms: u64,
    /// The hourglass version that wrote it.
    pub version: String,
    pub files: u64,
    pub bytes: u64,
    /// Files shared with the live data directory by hard links.
    pub linked: u64,
}

/// One file of a snapshot, by its path relative to the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SnapshotFile {
    pub path: String,
    pub size: u64,
    /// Never rewritten under this name (table files and head checkpoints).
    pub immutable: bool,
    /// An immutable file's identity ([`crate::storage::copy::fingerprint`],
    /// hex): a copy with the same one is the same file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// Tells snapshots taken within the same second apart.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// One snapshot at a time: each removes what interrupted ones left.
static TAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Engine {
    fn snapshots_dir(&self) -> PathBuf {
        self.data_dir.join(DIR)
    }

    /// Takes a snapshot (blocking: checkpoint and file I/O). `extra` are
    /// files of the data directory, by relative path, copied as they are if
    /// they exist.
    pub fn snapshot(&self, extra: &[&str]) -> Result<SnapshotInfo, EngineError> {
        let Some(log) = &self.log else {
            return Err(crate::storage::StorageError::Unsupported(format!(
                "the {} backend takes no snapshots: use its own backups",
                self.store.backend_name()
            ))
            .into());
        };
        let _taking = TAKING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let root = self.snapshots_dir();
        // Snapshots hold the token file: the directory is the server user's.
        private_dir(&root)?;
        remove_unfinished(&root);
        let now = self.clock.now_ms().max(0) as u64;
        let name = loop {
            let name = format!(
                "{}-{}",
                utc_stamp(now),
                SEQUENCE.fetch_add(1, Ordering::Relaxed)
            );
            if !root.join(&name).exists() {
                break name;
            }
        };
        let tmp = root.join(format!("{name}.tmp"));
        let result = self.snapshot_into(log, &tmp, extra);
        let stats = match result {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        let path = root.join(&name);
        let info = SnapshotInfo {
            name,
            path: path.clone(),
            created_ms: now,
            version: env!("CARGO_PKG_VERSION").to_string(),
            files: stats.files + 1,
            bytes: stats.bytes,
            linked: stats.linked,
        };
        let marker = tmp.join(MARKER);
        let text = serde_json::to_vec_pretty(&info).unwrap_or_default();
        write_synced(&marker, &text)?;
        crate::logfile::sync_dir(&tmp)?;
        std::fs::rename(&tmp, &path).map_err(|e| dir_err(&path, e))?;
        crate::logfile::sync_dir(&root)?;
        tracing::info!(snapshot = %path.display(), files = info.files, bytes = info.bytes, linked = info.linked, "snapshot taken");
        Ok(info)
    }

    fn snapshot_into(
        &self,
        log: &super::LocalLog,
        dest: &Path,
        extra: &[&str],
    ) -> Result<CopyStats, EngineError> {
        std::fs::create_dir(dest).map_err(|e| dir_err(dest, e))?;
        let head_dst = dest.join("head");
        std::fs::create_dir(&head_dst).map_err(|e| dir_err(&head_dst, e))?;
        let mut stats = CopyStats::default();
        {
            let _flush = self
                .flush_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (segment, ckpt) = self.checkpoint_locked(log)?;
            let open = std::fs::File::open(&ckpt).map_err(|e| dir_err(&ckpt, e))?;
            let len = open.metadata().map_err(|e| dir_err(&ckpt, e))?.len();
            let dst = checkpoint::path(&head_dst, segment);
            let linked = link_or_copy(&ckpt, &open, len, &dst).map_err(|e| dir_err(&dst, e))?;
            stats.add(len, linked);
            // Still under the flush lock: an hour flushed after the head was
            // copied would otherwise be in neither.
            stats.merge(self.store.snapshot(&dest.join("store"))?);
        }
        for rel in extra {
            // Only a path inside the data directory (a configured file
            // elsewhere is not the snapshot's to copy).
            if !Path::new(rel)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
            {
                continue;
            }
            let src = self.data_dir.join(rel);
            let dst = dest.join(rel);
            match std::fs::read(&src) {
                Ok(bytes) => {
                    if let Some(parent) = dst.parent() {
                        private_dir(parent)?;
                        write_synced(&dst, &bytes)?;
                        crate::logfile::sync_dir(parent)?;
                    }
                    stats.add(bytes.len() as u64, false);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(dir_err(&src, e)),
            }
        }
        crate::logfile::sync_dir(&head_dst)?;
        crate::logfile::sync_dir(dest)?;
        Ok(stats)
    }

    /// The complete snapshots, oldest first.
    pub fn snapshots(&self) -> Result<Vec<SnapshotInfo>, EngineError> {
        let root = self.snapshots_dir();
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(dir_err(&root, e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if name.ends_with(".tmp") {
                continue;
            }
            if let Ok(info) = self.snapshot_info(&name) {
                out.push(info);
            }
        }
        out.sort_by(|a, b| (a.created_ms, &a.name).cmp(&(b.created_ms, &b.name)));
        Ok(out)
    }

    /// One snapshot's description.
    pub fn snapshot_info(&self, name: &str) -> Result<SnapshotInfo, EngineError> {
        let dir = self.snapshot_dir(name)?;
        let marker = dir.join(MARKER);
        let bytes = std::fs::read(&marker).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => EngineError::NoSuchSnapshot(name.to_string()),
            _ => dir_err(&marker, e),
        })?;
        let mut info: SnapshotInfo = serde_json::from_slice(&bytes).map_err(|e| {
            EngineError::Damaged(format!(
                "{} is not a snapshot description: {e}",
                marker.display()
            ))
        })?;
        info.path = dir;
        Ok(info)
    }

    /// Every file of a snapshot, sorted by path.
    pub fn snapshot_files(&self, name: &str) -> Result<Vec<SnapshotFile>, EngineError> {
        let dir = self.snapshot_info(name)?.path;
        let mut out = Vec::new();
        walk(&dir, "", &mut out)?;
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// The file `rel` of snapshot `name`: only a regular file inside it
    /// (no `..`, no absolute path, no symbolic link).
    pub fn snapshot_file(&self, name: &str, rel: &str) -> Result<PathBuf, EngineError> {
        let dir = self.snapshot_info(name)?.path;
        let bad = || EngineError::BadSnapshotPath(rel.to_string());
        let relative = Path::new(rel);
        if rel.is_empty()
            || !relative
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(bad());
        }
        let path = dir.join(relative);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| bad())?;
        if !meta.file_type().is_file() {
            return Err(bad());
        }
        Ok(path)
    }

    /// Deletes a snapshot (the live data directory keeps its own links),
    /// also one whose description cannot be read.
    pub fn delete_snapshot(&self, name: &str) -> Result<(), EngineError> {
        let _taking = TAKING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = self.snapshot_dir(name)?;
        if !dir.is_dir() {
            return Err(EngineError::NoSuchSnapshot(name.to_string()));
        }
        // Renamed first, so a half-deleted snapshot is never listed.
        let doomed = self.snapshots_dir().join(format!("{name}.deleting.tmp"));
        std::fs::rename(&dir, &doomed).map_err(|e| dir_err(&dir, e))?;
        std::fs::remove_dir_all(&doomed).map_err(|e| dir_err(&doomed, e))?;
        Ok(())
    }

    fn snapshot_dir(&self, name: &str) -> Result<PathBuf, EngineError> {
        if !valid_name(name) {
            return Err(EngineError::NoSuchSnapshot(name.to_string()));
        }
        Ok(self.snapshots_dir().join(name))
    }
}

/// Whether `name` can name a snapshot (or a backup of one): letters,
/// digits, `-`, `_`, `.`, not starting with `.`, not a temporary or
/// partial name — safe in a path and a URL as it is.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && !name.ends_with(".tmp")
        && !name.ends_with(".partial")
        && !matches!(name, "CURRENT" | "LOCK")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Removes what an interrupted snapshot or deletion left (`*.tmp`).
fn remove_unfinished(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(".tmp"))
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<SnapshotFile>) -> Result<(), EngineError> {
    let entries = std::fs::read_dir(dir).map_err(|e| dir_err(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| dir_err(dir, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let kind = entry.file_type().map_err(|e| dir_err(&entry.path(), e))?;
        if kind.is_dir() {
            walk(&entry.path(), &rel, out)?;
        } else if kind.is_file() {
            // A file gone since the listing (a server serving the snapshot
            // directory replaced it) is not listed.
            let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
            let size = match entry.metadata() {
                Ok(m) => m.len(),
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(dir_err(&entry.path(), e)),
            };
            let immutable = (rel.starts_with("store/") && name.ends_with(".sst"))
                || (rel.starts_with("head/") && name.starts_with("ckpt-"));
            let fingerprint = if immutable {
                match fingerprint(&entry.path()) {
                    Ok(print) => Some(format!("{print:016x}")),
                    Err(e) if gone(&e) => continue,
                    Err(e) => return Err(dir_err(&entry.path(), e)),
                }
            } else {
                None
            };
            out.push(SnapshotFile {
                path: rel,
                size,
                immutable,
                fingerprint,
            });
        }
    }
    Ok(())
}

/// Writes a small file, readable by the server's user only (the token
/// file's hashes), and fsyncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| dir_err(path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| dir_err(path, e))
}

/// A directory only the server's user may enter.
fn private_dir(dir: &Path) -> Result<(), EngineError> {
    crate::logfile::private_dir(dir).map_err(|e| dir_err(dir, e))
}

fn dir_err(path: &Path, source: std::io::Error) -> EngineError {
    EngineError::DataDir {
        path: path.to_path_buf(),
        source,
    }
}

/// `20261126T053512Z` for a time in milliseconds.
fn utc_stamp(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, m, d) = hourglass_query::civil::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc_stamp;

    #[test]
    fn stamps_are_utc() {
        assert_eq!(utc_stamp(1_764_135_312_000), "20251126T053512Z");
        assert_eq!(utc_stamp(0), "19700101T000000Z");
    }
}
