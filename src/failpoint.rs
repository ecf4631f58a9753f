//! Failpoints for fault-injection tests: named places in the I/O paths
//! (`wal_fsync`, `table_fsync`, `store_log_fsync`, `manifest_write`,
//! `delete_store`) that
//! can be told to fail, so tests can show what the engine does when a disk
//! refuses a write or an fsync, and places where the process can be made
//! to die (`rollup_before`, `rollup_between`: [`crash`]).
//!
//! Configured by the environment variable `HOURGLASS_FAILPOINTS`, read once:
//! `name=N[,name=N…]` lets the first `N` calls of `name` succeed and fails
//! every later one with an I/O error. Tests in the same process can also
//! arm a point with [`arm`]. With nothing configured, [`check`] is one
//! atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};

static ANY: AtomicBool = AtomicBool::new(false);
static POINTS: OnceLock<RwLock<HashMap<String, AtomicU64>>> = OnceLock::new();

fn points() -> &'static RwLock<HashMap<String, AtomicU64>> {
    POINTS.get_or_init(|| {
        let mut map = HashMap::new();
        if let Ok(spec) = std::env::var("HOURGLASS_FAILPOINTS") {
            for item in spec.split(',').filter(|s| !s.trim().is_empty()) {
                if let Some((name, n)) = item.split_once('=')
                    && let Ok(n) = n.trim().parse::<u64>()
                {
                    map.insert(name.trim().to_string(), AtomicU64::new(n));
                }
            }
        }
        if !map.is_empty() {
            ANY.store(true, Ordering::Release);
        }
        RwLock::new(map)
    })
}

/// Arms `name`: the next `successes` calls pass, later ones fail.
pub fn arm(name: &str, successes: u64) {
    let mut map = points()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.insert(name.to_string(), AtomicU64::new(successes));
    ANY.store(true, Ordering::Release);
}

/// Disarms every failpoint armed with [`arm`] or the environment.
pub fn disarm_all() {
    points()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
}

/// Fails if the failpoint `name` is armed and has used up its successes.
pub fn check(name: &str) -> std::io::Result<()> {
    // The first call reads the environment; later calls cost one load.
    if !ANY.load(Ordering::Acquire) && POINTS.get().is_some() {
        return Ok(());
    }
    let map = points()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(left) = map.get(name) else {
        return Ok(());
    };
    let ok = left
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok();
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "injected failure at failpoint {name} (HOURGLASS_FAILPOINTS)"
        )))
    }
}

/// Ends the process at once, as `kill -9` would, if the failpoint `name`
/// is armed and has used up its successes, after running `before` (to make
/// some writes durable first): for crash tests that must stop the server
/// between two writes no signal could be timed to fall between.
pub fn crash(name: &str, before: impl FnOnce()) {
    if check(name).is_err() {
        before();
        eprintln!("failpoint {name}: aborting the process (HOURGLASS_FAILPOINTS)");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_point_fails_after_its_successes() {
        arm("unit_test_point", 2);
        assert!(check("unit_test_point").is_ok());
        assert!(check("unit_test_point").is_ok());
        assert!(check("unit_test_point").is_err());
        assert!(check("unit_test_point").is_err());
        assert!(check("some_other_point").is_ok());
    }
}
