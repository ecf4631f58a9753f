//! What each connection task gets ([`ConnCtx`]) and gives back
//! ([`ConnResult`]), whatever its protocol.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::options::RunOptions;
use super::pacing::{Lockstep, Pacer};

/// How many server error replies each connection keeps verbatim.
pub const MAX_ERROR_SAMPLES: usize = 5;

/// What one connection did.
#[derive(Debug, Clone, Default)]
pub struct ConnResult {
    pub id: usize,
    pub hosts: usize,
    /// Points sent and acknowledged (HTTP: in 2xx responses).
    pub points: u64,
    /// Points in requests the server refused (HTTP non-2xx).
    pub points_refused: u64,
    pub bytes: u64,
    /// From the common start until the server confirmed the last point.
    pub elapsed: Duration,
    /// TCP: error lines; HTTP: non-2xx responses.
    pub errors: u64,
    pub first_errors: Vec<String>,
    pub server_version: Option<String>,
    /// HTTP: requests and their statuses.
    pub requests: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub reconnects: u64,
    /// Time spent waiting for the generator (streaming only).
    pub generator_wait: Duration,
}

/// What every connection task shares.
#[derive(Debug, Clone)]
pub struct ConnCtx {
    pub id: usize,
    pub hosts: usize,
    pub start: Instant,
    pub pacer: Pacer,
    pub lockstep: Option<Arc<Lockstep>>,
    pub progress: ProgressBar,
    pub opts: Arc<RunOptions>,
}
