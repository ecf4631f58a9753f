//! Fuzz target: the readers of the frame-log files recovered on startup —
//! WAL segments (`engine::wal`), the store log (UID writes), head
//! checkpoints and the manifest. The first input byte picks the file kind;
//! the rest is the file. No byte pattern may panic a reader or make it
//! allocate beyond what the file justifies; a torn tail is reported as such
//! and what was read before it stays valid.
//!
//! Frame checksums are not checked under `cfg(fuzzing)` (src/checksum.rs),
//! so mutations reach the record decoders behind them. Seeds are real files.
#![no_main]

use std::path::PathBuf;
use std::sync::Arc;

use hourglass::engine::head::Head;
use hourglass::engine::{checkpoint, wal};
use hourglass::logfile::{self, LogError};
use hourglass::storage::embedded::{self as store, manifest};
use libfuzzer_sys::fuzz_target;

fn scratch() -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("hourglass-fuzz-log-{}", std::process::id()))
}

fn wal_segment(path: &std::path::Path, len: usize) {
    let mut defs = wal::record::Defs::default();
    let mut events = 0usize;
    if let Ok(r) = wal::read_segment(path, &mut defs, &mut |_| events += 1) {
        assert_eq!(r.valid_len + r.torn_bytes, len as u64);
        // The rules for a segment never panic, last or not.
        let _ = (r.damage(true), r.damage(false));
    }
    // Every event costs at least one byte of the file.
    assert!(events <= len);
}

fn store_log(path: &std::path::Path, len: usize) {
    let mut ops = 0usize;
    let read = logfile::read_log(
        path,
        store::LOG_MAGIC,
        store::LOG_VERSION,
        |offset, payload| {
            let (_, batch) = store::decode_log_batch(payload).ok_or(LogError::BadRecord {
                path: path.to_path_buf(),
                offset,
                reason: "malformed store log batch",
            })?;
            ops += batch.len();
            Ok::<(), LogError>(())
        },
    );
    if let Ok(r) = read {
        assert_eq!(r.valid_len + r.torn_bytes, len as u64);
    }
    assert!(ops <= len);
}

fn head_checkpoint(path: &std::path::Path) {
    let mut head = Head::default();
    let mut load = |key: Arc<[u8]>, metric: u64, base: u32, cell: &[u8], ooo: &[u8]| {
        head.load_hour(key, metric, base, cell, ooo)
            .map_err(|e| e.to_string())
    };
    if let Ok(loaded) = checkpoint::read(path, &mut load) {
        // Every series the head now knows came from a series entry.
        assert!(head.series_count() as u64 <= loaded.series);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, file)) = data.split_first() else {
        return;
    };
    let path = scratch();
    match kind % 4 {
        0 | 1 | 2 => {
            if std::fs::write(&path, file).is_err() {
                return;
            }
            match kind % 4 {
                0 => wal_segment(&path, file.len()),
                1 => store_log(&path, file.len()),
                _ => head_checkpoint(&path),
            }
        }
        _ => {
            let _ = manifest::decode(file);
        }
    }
});
