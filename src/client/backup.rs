//! `hourglass backup`: a snapshot of a running server copied into a backup
//! directory, incrementally, and safe to kill at any moment.
//!
//! ```text
//! DEST/CURRENT          the name of the newest complete backup (one line)
//! DEST/<name>/          complete backups: each a data directory
//! DEST/<name>.partial/  a backup being copied (resumed by the next run)
//! ```
//! The server takes a snapshot (`POST /api/admin/snapshot`) and lists its
//! files; each file goes into `<name>.partial/`: an immutable file (a table
//! file, a head checkpoint) that an earlier backup or the interrupted run
//! already holds with the same name and fingerprint (size and both ends'
//! checksum: `storage::copy::fingerprint`) is hard-linked or kept, not
//! copied again; every other file is downloaded to a temporary name,
//! fsynced and renamed. Only when every file is there is the directory
//! renamed to a name no backup has (`<name>`, else `<name>-2`…) and
//! `CURRENT` replaced (written, fsynced, renamed): a kill at any moment
//! leaves the previous backup complete and named by `CURRENT`. Then the
//! oldest backups beyond `--keep` are removed, and the server's snapshot is
//! deleted (it pins disk space there). `DEST/LOCK` keeps two backups from
//! writing into one directory at once.

use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;

use super::{ClientError, Remote};
use crate::engine::snapshot::{SnapshotFile, SnapshotInfo, valid_name};
use crate::storage::copy::fingerprint;

/// The file naming the newest complete backup.
pub const CURRENT: &str = "CURRENT";
const PARTIAL: &str = ".partial";

/// What a backup did.
#[derive(Debug, Default)]
pub struct BackupReport {
    pub name: String,
    pub path: PathBuf,
    pub files: u64,
    pub bytes: u64,
    /// Files and bytes downloaded (the rest were already in DEST).
    pub copied_files: u64,
    pub copied_bytes: u64,
    pub removed_backups: Vec<String>,
}

/// The options of one backup.
#[derive(Debug, Clone)]
pub struct BackupOptions {
    pub dest: PathBuf,
    /// Copy this existing snapshot instead of taking a new one.
    pub snapshot: Option<String>,
    /// Complete backups kept in DEST (at least 1).
    pub keep: usize,
    /// Leave the server's snapshot in place afterwards.
    pub keep_snapshot: bool,
}

/// Runs one backup.
pub async fn run(remote: &mut Remote, opts: &BackupOptions) -> Result<BackupReport, ClientError> {
    let dest = &opts.dest;
    private_dir(dest)?;
    let lock_path = dest.join("LOCK");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(ClientError::io(&lock_path))?;
    if lock.try_lock().is_err() {
        return Err(ClientError::Usage(format!(
            "another backup is writing into {} (it holds {})",
            dest.display(),
            lock_path.display()
        )));
    }
    let taken_here = opts.snapshot.is_none();
    let name = match &opts.snapshot {
        Some(n) => n.clone(),
        None => {
            let info = remote.json(Method::POST, "/api/admin/snapshot").await?;
            let info: SnapshotInfo = serde_json::from_value(info)
                .map_err(|e| ClientError::Protocol(format!("the snapshot's description: {e}")))?;
            info.name
        }
    };
    if !valid_name(&name) {
        return Err(ClientError::Protocol(format!("bad snapshot name {name:?}")));
    }
    let described = remote
        .json(Method::GET, &format!("/api/admin/snapshots/{name}"))
        .await?;
    let files: Vec<SnapshotFile> = serde_json::from_value(described["files"].clone())
        .map_err(|e| ClientError::Protocol(format!("the snapshot's file list: {e}")))?;
    let partial = dest.join(format!("{name}{PARTIAL}"));
    // Files an interrupted run finished are as good as a backup's.
    let mut earlier = complete_backups(dest)?;
    earlier.extend(partial_backups(dest)?.into_iter().filter(|p| *p != partial));
    let mut report = BackupReport {
        name: name.clone(),
        ..BackupReport::default()
    };
    for file in &files {
        let rel = safe_relative(&file.path)?;
        let dst = partial.join(rel);
        if let Some(parent) = dst.parent() {
            private_dir(parent)?;
        }
        report.files += 1;
        report.bytes += file.size;
        if let (true, Some(print)) = (file.immutable, file.fingerprint.as_deref())
            && reuse(
                &dst,
                print,
                &earlier.iter().map(|b| b.join(rel)).collect::<Vec<_>>(),
            )?
        {
            continue;
        }
        crate::failpoint::crash("backup_file", || {});
        download(remote, &name, file, &dst).await?;
        report.copied_files += 1;
        report.copied_bytes += file.size;
    }
    sync_tree(&partial)?;
    // A new name: the backup CURRENT names is never touched before CURRENT
    // names another.
    let mut done = dest.join(&name);
    let mut n = 1;
    while done.exists() {
        n += 1;
        done = dest.join(format!("{name}-{n}"));
    }
    let done_name = done
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(&name)
        .to_string();
    std::fs::rename(&partial, &done).map_err(ClientError::io(&done))?;
    set_current(dest, &done_name)?;
    report.path = done;
    // Older complete backups beyond `keep`, oldest first; unfinished ones
    // of other snapshots too (this run superseded them).
    let mut complete = complete_backups(dest)?;
    complete.retain(|p| p.file_name().and_then(|n| n.to_str()) != Some(done_name.as_str()));
    let excess = (complete.len() + 1).saturating_sub(opts.keep.max(1));
    for old in complete.iter().take(excess) {
        std::fs::remove_dir_all(old).map_err(ClientError::io(old))?;
        report.removed_backups.push(
            old.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string(),
        );
    }
    for stale in partial_backups(dest)? {
        let _ = std::fs::remove_dir_all(stale);
    }
    if taken_here && !opts.keep_snapshot {
        remote
            .send(
                Method::DELETE,
                &format!("/api/admin/snapshots/{name}"),
                None,
                Bytes::new(),
            )
            .await?;
    }
    Ok(report)
}

/// The backup `CURRENT` names in `dest`, if any.
pub fn current(dest: &Path) -> Result<Option<PathBuf>, ClientError> {
    let path = dest.join(CURRENT);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let name = text.trim();
            if !valid_name(name) {
                return Err(ClientError::Damaged(format!(
                    "{} names no backup ({name:?})",
                    path.display()
                )));
            }
            Ok(Some(dest.join(name)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ClientError::io(&path)(e)),
    }
}

/// Complete backups in `dest`, oldest first (their names start with the
/// snapshot's UTC time).
fn complete_backups(dest: &Path) -> Result<Vec<PathBuf>, ClientError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dest)
        .map_err(ClientError::io(dest))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| !n.ends_with(PARTIAL) && !n.starts_with('.'))
        })
        .filter(|e| e.path().join("store").is_dir())
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

/// Unfinished backups in `dest` (of any snapshot).
fn partial_backups(dest: &Path) -> Result<Vec<PathBuf>, ClientError> {
    Ok(std::fs::read_dir(dest)
        .map_err(ClientError::io(dest))?
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(PARTIAL)))
        .map(|e| e.path())
        .collect())
}

/// Keeps `dst` if the interrupted run finished it, else hard-links (or
/// copies) the same file from an earlier backup; false if neither has it.
/// Same means the same fingerprint, not only the same name.
fn reuse(dst: &Path, print: &str, earlier: &[PathBuf]) -> Result<bool, ClientError> {
    let same = |p: &Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
            && fingerprint(p).is_ok_and(|f| format!("{f:016x}") == print)
    };
    if same(dst) {
        return Ok(true);
    }
    for src in earlier.iter().rev() {
        if !same(src) {
            continue;
        }
        let _ = std::fs::remove_file(dst);
        if std::fs::hard_link(src, dst).is_ok() {
            return Ok(true);
        }
        let tmp = tmp_name(dst);
        std::fs::copy(src, &tmp).map_err(ClientError::io(&tmp))?;
        sync_file(&tmp)?;
        std::fs::rename(&tmp, dst).map_err(ClientError::io(dst))?;
        return Ok(true);
    }
    Ok(false)
}

/// Downloads one file of the snapshot to `dst` (a temporary name first).
async fn download(
    remote: &mut Remote,
    snapshot: &str,
    file: &SnapshotFile,
    dst: &Path,
) -> Result<(), ClientError> {
    let resp = remote
        .send(
            Method::GET,
            &format!("/api/admin/snapshots/{snapshot}/files/{}", file.path),
            None,
            Bytes::new(),
        )
        .await?;
    let tmp = tmp_name(dst);
    let mut out = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(ClientError::io(&tmp))?
    };
    let mut body = resp.into_body();
    let mut got = 0u64;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ClientError::Protocol(format!("downloading {}: {e}", file.path)))?;
        if let Ok(data) = frame.into_data() {
            got += data.len() as u64;
            if got > file.size {
                let _ = std::fs::remove_file(&tmp);
                return Err(ClientError::Protocol(format!(
                    "{}: more bytes than the listing's {}",
                    file.path, file.size
                )));
            }
            out.write_all(&data).map_err(ClientError::io(&tmp))?;
        }
    }
    if got != file.size {
        let _ = std::fs::remove_file(&tmp);
        return Err(ClientError::Protocol(format!(
            "{}: got {got} bytes, the listing said {}",
            file.path, file.size
        )));
    }
    out.sync_all().map_err(ClientError::io(&tmp))?;
    drop(out);
    std::fs::rename(&tmp, dst).map_err(ClientError::io(dst))
}

/// A backup holds the data and the token hashes: only its owner may read
/// it.
fn private_dir(dir: &Path) -> Result<(), ClientError> {
    crate::logfile::private_dir(dir).map_err(ClientError::io(dir))
}

fn tmp_name(dst: &Path) -> PathBuf {
    let mut name = dst
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".download");
    dst.with_file_name(name)
}

/// A listed path, refused unless it stays inside the backup.
fn safe_relative(path: &str) -> Result<&Path, ClientError> {
    let p = Path::new(path);
    if path.is_empty()
        || !p
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err(ClientError::Protocol(format!(
            "the server listed the file {path:?}, which is not inside the snapshot"
        )));
    }
    Ok(p)
}

fn set_current(dest: &Path, name: &str) -> Result<(), ClientError> {
    let tmp = dest.join(format!("{CURRENT}.tmp"));
    std::fs::write(&tmp, format!("{name}\n")).map_err(ClientError::io(&tmp))?;
    sync_file(&tmp)?;
    let path = dest.join(CURRENT);
    std::fs::rename(&tmp, &path).map_err(ClientError::io(&path))?;
    sync_dir(dest)
}

fn sync_file(path: &Path) -> Result<(), ClientError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(ClientError::io(path))
}

fn sync_dir(dir: &Path) -> Result<(), ClientError> {
    crate::logfile::sync_dir(dir).map_err(|e| ClientError::Damaged(e.to_string()))
}

/// fsyncs every directory of a tree (files were synced as written).
fn sync_tree(dir: &Path) -> Result<(), ClientError> {
    for entry in std::fs::read_dir(dir)
        .map_err(ClientError::io(dir))?
        .flatten()
    {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            sync_tree(&entry.path())?;
        }
    }
    sync_dir(dir)
}
