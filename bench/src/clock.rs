//! The wall clock: the current time in milliseconds since the epoch, which
//! anchors relative `--start` values, the soak's data and its queries.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::BenchError;

/// The current time, milliseconds since the epoch.
pub fn now_ms() -> Result<i64, BenchError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| BenchError::Config(format!("system clock is before 1970: {e}")))?
        .as_millis();
    i64::try_from(now)
        .map_err(|_| BenchError::Config("system clock is too far in the future".into()))
}
