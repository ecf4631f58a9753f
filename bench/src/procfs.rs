//! Measurements of the server process and its data directory: resident
//! memory (`VmRSS`, peak `VmHWM`) and CPU time from `/proc/<pid>`, and the
//! bytes of the files under a data directory.
//!
//! CPU time comes in clock ticks; Linux's user-visible tick (`USER_HZ`) is
//! 100 per second on every architecture it supports, so no libc call (and no
//! `unsafe`) is needed to read it.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::error::BenchError;

/// Linux's `USER_HZ`.
const TICKS_PER_SEC: u64 = 100;

/// A snapshot of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ProcSample {
    /// Resident set size now (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// Peak resident set size since the process started (`VmHWM`), bytes.
    pub peak_rss_bytes: u64,
    /// User + system CPU time, in clock ticks.
    pub cpu_ticks: u64,
}

impl ProcSample {
    /// CPU time between two samples.
    pub fn cpu_since(&self, earlier: &ProcSample) -> Duration {
        let ticks = self.cpu_ticks.saturating_sub(earlier.cpu_ticks);
        Duration::from_millis(ticks * 1000 / TICKS_PER_SEC)
    }
}

/// Reads `/proc/<pid>/status` and `/proc/<pid>/stat`.
pub fn sample(pid: u32) -> Result<ProcSample, BenchError> {
    let read = |file: &str| {
        let path = format!("/proc/{pid}/{file}");
        std::fs::read_to_string(&path)
            .map_err(|e| BenchError::io(format!("reading {path} (is --server-pid right?)"), e))
    };
    let status = read("status")?;
    let stat = read("stat")?;
    Ok(ProcSample {
        rss_bytes: status_kb(&status, "VmRSS:").unwrap_or(0) * 1024,
        peak_rss_bytes: status_kb(&status, "VmHWM:").unwrap_or(0) * 1024,
        cpu_ticks: stat_cpu_ticks(&stat).unwrap_or(0),
    })
}

/// The `kB` value of a `/proc/<pid>/status` field.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// utime + stime of a `/proc/<pid>/stat` line (fields 14 and 15; the command
/// name in parentheses may contain spaces, so fields are counted after `)`).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Total bytes of the regular files under `dir` (symlinks not followed).
pub fn dir_bytes(dir: &Path) -> Result<u64, BenchError> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| BenchError::io(format!("reading directory {}", d.display()), e))?;
        for entry in entries {
            // Files may disappear under a running server (compaction): skip them.
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_stat() {
        let status = "Name:\thourglass\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n";
        assert_eq!(status_kb(status, "VmHWM:"), Some(204_800));
        assert_eq!(status_kb(status, "VmRSS:"), Some(102_400));
        let stat = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0";
        assert_eq!(stat_cpu_ticks(stat), Some(300));
    }

    #[test]
    fn samples_this_process() {
        let me = sample(std::process::id()).expect("own /proc");
        assert!(me.rss_bytes > 0 && me.peak_rss_bytes >= me.rss_bytes);
    }

    #[test]
    fn sums_a_directory() {
        let dir = std::env::temp_dir().join(format!("hgbench-dir-{}", std::process::id()));
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(dir.join("a"), [0u8; 100]).expect("write");
        std::fs::write(sub.join("b"), [0u8; 23]).expect("write");
        assert_eq!(dir_bytes(&dir).expect("walk"), 123);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
