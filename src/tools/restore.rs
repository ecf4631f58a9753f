//! `hourglass restore --from DEST --data-dir DIR`: a new data directory
//! from a backup (`DEST/CURRENT`'s, or DEST itself when it is a snapshot or
//! a backup), copied file by file and synced, then checked as `hourglass
//! fsck` checks a directory. DIR must not exist or be empty: a restore
//! never mixes into live data.

use std::path::{Path, PathBuf};

use super::Report;
use crate::config::Config;

/// Why a restore could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RestoreError + '_ {
    move |source| RestoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The directory a restore copies from.
pub fn source_of(from: &Path) -> Result<PathBuf, RestoreError> {
    let current = from.join(crate::client::backup::CURRENT);
    if current.is_file() {
        let name = std::fs::read_to_string(&current).map_err(io(&current))?;
        let name = name.trim();
        if !crate::engine::snapshot::valid_name(name) {
            return Err(RestoreError::Refused(format!(
                "{} names no backup ({name:?})",
                current.display()
            )));
        }
        return Ok(from.join(name));
    }
    if from.join("store").join("MANIFEST").is_file() {
        return Ok(from.to_path_buf());
    }
    Err(RestoreError::Refused(format!(
        "{} is neither a backup directory (no CURRENT) nor a snapshot (no store/MANIFEST)",
        from.display()
    )))
}

/// Copies the backup into `cfg.storage.data_dir` and checks the result.
/// Returns the copied bytes and the check's report.
pub fn run(from: &Path, cfg: &Config) -> Result<(u64, Report), RestoreError> {
    let src = source_of(from)?;
    let dst = &cfg.storage.data_dir;
    if let Ok(mut entries) = std::fs::read_dir(dst)
        && entries.next().is_some()
    {
        return Err(RestoreError::Refused(format!(
            "{} is not empty: restore into a new directory (a restore never mixes into live data)",
            dst.display()
        )));
    }
    std::fs::create_dir_all(dst).map_err(io(dst))?;
    let bytes = copy_tree(&src, dst)?;
    Ok((bytes, super::fsck::check(cfg)))
}

fn copy_tree(src: &Path, dst: &Path) -> Result<u64, RestoreError> {
    let mut bytes = 0;
    for entry in std::fs::read_dir(src).map_err(io(src))? {
        let entry = entry.map_err(io(src))?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&from))?;
        if kind.is_dir() {
            std::fs::create_dir(&to).map_err(io(&to))?;
            bytes += copy_tree(&from, &to)?;
        } else if kind.is_file() {
            // A stale lock of the server the snapshot came from means nothing here.
            if entry.file_name() == "LOCK" {
                continue;
            }
            bytes += std::fs::copy(&from, &to).map_err(io(&to))?;
            std::fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(io(&to))?;
        }
    }
    crate::logfile::sync_dir(dst).map_err(|e| RestoreError::Refused(e.to_string()))?;
    Ok(bytes)
}
