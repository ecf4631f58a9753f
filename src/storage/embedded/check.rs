//! Read-only verification of a store directory (`hourglass fsck`): the
//! manifest, every block of every listed file, files nobody lists, and the
//! live store log. Nothing is changed.

use std::collections::HashSet;
use std::path::Path;

use super::file_set::{log_path, table_path, tmp_path};
use super::keys::{internal_row, schema_of};
use super::manifest;
use super::open::list_dir;
use super::store_log::{LOG_MAGIC, LOG_VERSION, decode_log_batch};
use super::table::{FileKind, TableReader};
use crate::codec::KeyLayout;
use crate::logfile;
use crate::storage::{StorageError, Table};

/// What a read-only check of a store directory learned.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    /// UID counters (metric, tagk, tagv) as stored; `None` when the UID
    /// table could not be read (no readable manifest names its files).
    pub counters: Option<[u64; 3]>,
    /// Highest UIDs the data files refer to.
    pub referenced: [u64; 3],
    pub files: usize,
    pub entries: u64,
    pub points: u64,
}
/// Verifies a store directory without changing it (`hourglass fsck`): the
/// manifest, every block of every listed file, files nobody lists, and the
/// live store log.
pub fn check(dir: &Path, layout: &KeyLayout, report: &mut crate::findings::Report) -> Checked {
    use crate::findings::Severity::{Error, Info, Warning};
    let mut out = Checked::default();
    let listing = match list_dir(dir) {
        Ok(l) => l,
        Err(e) => {
            report.push(Error, dir, None, e.to_string());
            return out;
        }
    };
    let m = match manifest::read(dir) {
        Ok(Some(m)) => m,
        Ok(None) => {
            if !(listing.tables.is_empty() && listing.logs.is_empty()) {
                report.push(
                    Error,
                    dir.join(manifest::NAME),
                    None,
                    "missing, but table files or logs exist (repair rebuilds it from the files)",
                );
            }
            return out;
        }
        Err(e) => {
            let (offset, reason) = match &e {
                StorageError::Corrupt { offset, reason, .. } => (*offset, reason.clone()),
                other => (None, other.to_string()),
            };
            report.push(Error, dir.join(manifest::NAME), offset, reason);
            return out;
        }
    };
    if m.schema != schema_of(layout) {
        report.push(
            Error,
            dir.join(manifest::NAME),
            None,
            format!("key layout {:?} differs from the configured one", m.schema),
        );
    }
    // The counter row of the UID table, newest version wins.
    let counter_row = internal_row(Table::Uid, &[0]);
    let mut counters: [(u64, u64); 3] = [(0, 0); 3];
    let mut note_counter = |col: &[u8], seq: u64, value: Option<&[u8]>| {
        for (i, kind) in ["metrics", "tagk", "tagv"].iter().enumerate() {
            if col.first() == Some(&b'i') && &col[1..] == kind.as_bytes() && seq >= counters[i].0 {
                let v = value
                    .and_then(|v| <[u8; 8]>::try_from(v).ok())
                    .map_or(0, |b| i64::from_be_bytes(b).max(0) as u64);
                counters[i] = (seq, v);
            }
        }
    };
    let listed: HashSet<u64> = m.files.iter().map(|f| f.number).collect();
    for f in &m.files {
        let path = table_path(dir, f.number);
        if !path.exists() {
            if listing.tmps.contains(&f.number) {
                report.push(
                    Info,
                    tmp_path(dir, f.number),
                    None,
                    "listed but not yet renamed (finished on open)",
                );
            } else {
                report.push(Error, &path, None, "listed in the manifest but missing");
                continue;
            }
        }
        let path = if path.exists() {
            path
        } else {
            tmp_path(dir, f.number)
        };
        let t = match TableReader::open(&path, f.number) {
            Ok(t) => t,
            Err(e) => {
                let offset = match &e {
                    StorageError::Corrupt { offset, .. } => *offset,
                    _ => None,
                };
                report.push(Error, &path, offset, e.to_string());
                continue;
            }
        };
        match t.verify() {
            Ok(n) => out.entries += n,
            Err(e) => {
                let offset = match &e {
                    StorageError::Corrupt { offset, .. } => *offset,
                    _ => None,
                };
                report.push(Error, &path, offset, e.to_string());
                continue;
            }
        }
        if t.kind() == FileKind::Data {
            if t.meta.min_hour < t.meta.window_start
                || (t.meta.row_count > 0 && t.meta.max_hour >= t.meta.window_end)
            {
                report.push(
                    Error,
                    &path,
                    None,
                    format!(
                        "rows of hours {}..={} outside the file's window {}..{}",
                        t.meta.min_hour, t.meta.max_hour, t.meta.window_start, t.meta.window_end
                    ),
                );
            }
            for (o, &u) in out.referenced.iter_mut().zip(&t.meta.max_uids) {
                *o = (*o).max(u);
            }
            out.points += t.meta.point_count;
        } else {
            let mut end = counter_row.clone();
            end.push(0);
            for e in t.range(&counter_row, &end, None).flatten() {
                note_counter(&e.col, e.seq, e.value.as_deref());
            }
        }
        out.files += 1;
    }
    let obsolete: HashSet<u64> = m.obsolete.iter().copied().collect();
    for &n in &listing.tables {
        if !listed.contains(&n) {
            if obsolete.contains(&n) {
                report.push(
                    Info,
                    table_path(dir, n),
                    None,
                    "replaced by a compaction; removed on open",
                );
            } else {
                report.push(
                    Warning,
                    table_path(dir, n),
                    None,
                    "not named by the manifest; moved to lost+found/ on open",
                );
            }
        }
    }
    for &n in &listing.tmps {
        if !listed.contains(&n) {
            report.push(
                Info,
                tmp_path(dir, n),
                None,
                "an unpublished write; removed on open",
            );
        }
    }
    let log = log_path(dir, m.log_number);
    let read = logfile::read_log(&log, LOG_MAGIC, LOG_VERSION, |offset, payload| {
        let (seq, ops) = decode_log_batch(payload).ok_or(logfile::LogError::BadRecord {
            path: log.clone(),
            offset,
            reason: "malformed store log batch",
        })?;
        for (row, col, value) in &ops {
            if *row == counter_row {
                note_counter(col, seq, value.as_deref());
            }
        }
        Ok::<(), logfile::LogError>(())
    });
    match read {
        Ok(r) if r.torn_bytes > 0 => report.torn_tail(&log, r.valid_len, r.torn_bytes),
        Ok(_) => {}
        Err(e) => report.log_error(&log, &e),
    }
    for &n in &listing.logs {
        let path = log_path(dir, n);
        let has_writes =
            std::fs::metadata(&path).is_ok_and(|meta| meta.len() > logfile::HEADER_LEN as u64);
        let what = if n > m.log_number && has_writes {
            "newer than the live store log (a memtable write-out cut short; its writes are also in the live log); moved to lost+found on open"
        } else if n != m.log_number {
            "not the live store log; removed on open"
        } else {
            continue;
        };
        report.push(Info, path, None, what);
    }
    out.counters = Some([counters[0].1, counters[1].1, counters[2].1]);
    report.checked.push(format!(
        "store: {} table files, {} entries, {} points",
        out.files, out.entries, out.points
    ));
    out
}
