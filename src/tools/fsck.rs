//! `hourglass fsck --data-dir D [--repair]`: verifies a stopped server's
//! data directory and reports every problem with its file and offset.
//!
//! Checked: the store manifest; every block checksum, entry order, count
//! and time window of every listed table file; files nobody lists; the live
//! store log; every write-ahead log segment and every record in it; the head
//! checkpoints; and that no UID counter is behind the UIDs rows use.
//! Nothing is changed.
//!
//! With `--repair`, fsck then opens the directory with `storage.repair =
//! true` — the documented repairs: torn log tails are truncated, damaged
//! log tails, unreadable table files and stray files are moved to
//! `lost+found/`, a lost manifest is rebuilt from the table files, UID
//! counters are raised — shuts it down cleanly and checks again.

use std::path::Path;

use super::{Report, Severity};
use crate::config::Config;
use crate::engine::Engine;
use crate::metrics::Metrics;

/// Runs the read-only checks.
pub fn check(cfg: &Config) -> Report {
    let mut report = Report::default();
    let dir = &cfg.storage.data_dir;
    let layout = cfg.layout();
    if !dir.exists() {
        report.push(Severity::Error, dir, None, "no such data directory");
        return report;
    }
    if let Some(msg) = lock_probe(dir) {
        report.push(Severity::Error, dir.join("LOCK"), None, msg);
        return report;
    }
    let store = crate::storage::embedded::check(&dir.join("store"), &layout, &mut report);
    let wal = crate::engine::wal::check(&dir.join("wal"), &layout, &mut report);
    let head = crate::engine::checkpoint::check(&dir.join("head"), &layout, &mut report);
    // Without a readable manifest the UID table cannot be read, so there is
    // no counter to compare (the manifest's own finding says why).
    for (i, kind) in ["metrics", "tagk", "tagv"].iter().enumerate() {
        let Some(counters) = store.counters else {
            break;
        };
        let used = store.referenced[i].max(wal[i]).max(head[i]);
        if used > counters[i] {
            report.push(
                Severity::Error,
                dir.join("store"),
                None,
                format!(
                    "the UID counter for {kind} is {}, but rows use UID {used}: the UID table lost assignments",
                    counters[i]
                ),
            );
        }
    }
    let lost = dir
        .join("store")
        .join(crate::storage::embedded::LOST_AND_FOUND);
    if let Ok(rd) = std::fs::read_dir(&lost) {
        let n = rd.count();
        if n > 0 {
            report.push(
                Severity::Info,
                &lost,
                None,
                format!(
                    "{n} file(s) set aside by earlier repairs (inspect, then delete when done)"
                ),
            );
        }
    }
    report
}

/// `Some(reason)` if another process holds the directory.
fn lock_probe(dir: &Path) -> Option<String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("LOCK"))
        .ok()?;
    match f.try_lock() {
        Ok(()) => None,
        Err(_) => Some("the directory is in use by a running hourglass; stop it first".into()),
    }
}

/// Runs the documented repairs, then checks again.
pub fn repair(cfg: &Config) -> Result<Report, crate::engine::EngineError> {
    let mut cfg = cfg.clone();
    cfg.storage.repair = true;
    let engine = Engine::open(&cfg, Metrics::new())?;
    engine.shutdown()?;
    drop(engine);
    Ok(check(&cfg))
}

/// Prints a report; returns whether it found no error.
pub fn print(report: &Report) -> bool {
    for c in &report.checked {
        println!("checked {c}");
    }
    for f in &report.findings {
        println!("{f}");
    }
    let errors = report.errors();
    if errors == 0 {
        println!("fsck: no damage found");
    } else {
        println!(
            "fsck: {errors} problem(s); `hourglass fsck --repair` runs the documented repairs"
        );
    }
    errors == 0
}
