//! `hourglass compact --data-dir D`: offline full compaction of a stopped
//! server's data directory. Flushes every closed hour, then merges every
//! time window into as few files as the window layout allows (open windows
//! included) and applies retention. Prints the sizes before and after.
//!
//! On a shared store (Bigtable) it packs every closed row that holds more
//! than one cell, whoever wrote it; nodes may keep running meanwhile.

use std::path::Path;

use crate::config::Config;
use crate::engine::{Engine, EngineError};
use crate::metrics::Metrics;

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// What a compaction did.
#[derive(Debug)]
pub enum Outcome {
    /// Embedded: data directory bytes before and after, merges run.
    Merged {
        before: u64,
        after: u64,
        jobs: usize,
    },
    /// Shared store: rows packed.
    Packed { rows: usize },
}

/// Compacts the configured backend.
pub fn run_any(cfg: &Config) -> Result<Outcome, EngineError> {
    if cfg.storage.backend == crate::config::Backend::Embedded {
        let (before, after, jobs) = run(cfg)?;
        return Ok(Outcome::Merged {
            before,
            after,
            jobs,
        });
    }
    let engine = Engine::open(cfg, Metrics::new())?;
    let rows = engine.pack_stored_rows()?;
    engine.shutdown()?;
    Ok(Outcome::Packed { rows })
}

/// Returns (bytes before, bytes after, compaction jobs run).
pub fn run(cfg: &Config) -> Result<(u64, u64, usize), EngineError> {
    let dir = cfg.storage.data_dir.clone();
    let before = dir_bytes(&dir);
    let engine = Engine::open(cfg, Metrics::new())?;
    engine.flush_closed()?;
    let jobs = engine.compact(true)?;
    engine.shutdown()?;
    drop(engine);
    Ok((before, dir_bytes(&dir), jobs))
}
