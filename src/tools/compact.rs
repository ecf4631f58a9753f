//! `hourglass compact --data-dir D`: offline full compaction of a stopped
//! server's data directory. Flushes every closed hour, then merges every
//! time window into as few files as the window layout allows (open windows
//! included) and applies retention. Prints the sizes before and after.

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
