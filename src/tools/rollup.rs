//! `hourglass rollup rebuild --data-dir D [--from T]`: computes the rollup
//! tiers of a stopped server's stored hours (data written before the
//! tiers were configured, or with rollups off), then records the tiers
//! complete from `T` (default: the beginning), so that queries read them.

use crate::config::Config;
use crate::engine::{Engine, EngineError};
use crate::metrics::Metrics;

/// Rebuilds the tiers from `from` (seconds); returns the hours rolled up.
pub fn rebuild(cfg: &Config, from: u32) -> Result<u64, EngineError> {
    let engine = Engine::open(cfg, Metrics::new())?;
    let hours = engine.rebuild_rollups(from)?;
    engine.shutdown()?;
    Ok(hours)
}
