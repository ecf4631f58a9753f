//! The live table files (meta files newest first, data files by window),
//! replaced whole on every publish; the names of a store directory's files;
//! and a file's manifest entry.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::table::{FileKind, TableReader};
use crate::fb::TableFileData;

/// The live files: meta files newest first, data files by window.
#[derive(Debug, Default)]
pub(super) struct FileSet {
    pub(super) meta: Vec<Arc<TableReader>>,
    pub(super) data: Vec<Arc<TableReader>>,
}

impl FileSet {
    pub(super) fn with(&self, added: &[Arc<TableReader>], removed: &HashSet<u64>) -> Self {
        let mut meta: Vec<Arc<TableReader>> = Vec::new();
        let mut data: Vec<Arc<TableReader>> = Vec::new();
        for t in self.meta.iter().chain(&self.data).chain(added) {
            if removed.contains(&t.number) {
                continue;
            }
            match t.kind() {
                FileKind::Meta => meta.push(Arc::clone(t)),
                FileKind::Data => data.push(Arc::clone(t)),
            }
        }
        meta.sort_by_key(|t| Reverse(t.meta.max_seq));
        data.sort_by_key(|t| (t.meta.window_start, t.meta.max_seq));
        Self { meta, data }
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &Arc<TableReader>> {
        self.meta.iter().chain(&self.data)
    }
}

pub(super) fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:08}.sst"))
}

pub(super) fn tmp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:08}.sst.tmp"))
}

pub(super) fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("log-{number:08}.log"))
}

pub(super) fn file_data(t: &TableReader) -> TableFileData {
    TableFileData {
        number: t.number,
        kind: t.meta.kind,
        min_seq: t.meta.min_seq,
        max_seq: t.meta.max_seq,
        size: t.size,
        window_start: t.meta.window_start,
        window_end: t.meta.window_end,
        point_count: t.meta.point_count,
    }
}
