//! A consistent copy of the store while writes go on: under the state lock
//! the store log is synced and the manifest, the live files and the log's
//! length are captured (a memcpy's worth of work); then, without the lock,
//! every live table file is hard-linked (they are immutable) or copied from
//! its open descriptor if compaction has removed its name since, the log's
//! captured prefix is copied, and a manifest naming exactly those files is
//! written last. The copy opens as a store of its own.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::file_set::{log_path, table_path};
use super::manifest;
use super::store::EmbeddedStore;
use super::table::io_err;
use crate::logfile;
use crate::storage::Result;
use crate::storage::copy::{CopyStats, copy_prefix, link_or_copy};

impl EmbeddedStore {
    pub(super) fn snapshot_into(&self, dest: &Path) -> Result<CopyStats> {
        let (mut manifest, files, log_file, log_len) = {
            let mut st = self.lock();
            // Whole frames on disk: the prefix copied below ends at one.
            Self::sync_log(&mut st)?;
            let path = st.log.path().to_path_buf();
            let log_file = File::open(&path).map_err(io_err(&path))?;
            (
                st.manifest.clone(),
                Arc::clone(&st.files),
                log_file,
                st.log.len(),
            )
        };
        std::fs::create_dir(dest).map_err(io_err(dest))?;
        let mut stats = CopyStats::default();
        for table in files.all() {
            let dst = table_path(dest, table.number);
            let linked =
                link_or_copy(table.path(), table.file(), table.size, &dst).map_err(io_err(&dst))?;
            stats.add(table.size, linked);
        }
        let log_dst = log_path(dest, manifest.log_number);
        copy_prefix(&log_file, log_len, &log_dst).map_err(io_err(&log_dst))?;
        stats.add(log_len, false);
        // Files compaction replaced are not in the copy: nothing to remove.
        manifest.obsolete.clear();
        manifest::write(dest, &manifest)?;
        logfile::sync_dir(dest)?;
        stats.add(manifest::encode(&manifest).len() as u64, false);
        Ok(stats)
    }
}
