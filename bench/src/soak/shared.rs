//! The state every soak task shares: the server and the timeouts, the
//! clock the soak started on, the counters of what was sent and answered,
//! and the record of refusals and of the first errors.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Errors kept verbatim.
const MAX_ERRORS_KEPT: usize = 10;

/// Counters every soak task updates.
#[derive(Debug, Default)]
pub struct Counters {
    pub points_acked: AtomicU64,
    pub queries_sent: AtomicU64,
    pub queries_ok: AtomicU64,
    pub oversized_sent: AtomicU64,
    pub oversized_answered: AtomicU64,
    pub oversized_refused: AtomicU64,
    pub bad_sent: AtomicU64,
    pub bad_refused: AtomicU64,
    pub held_now: AtomicU64,
    pub errors: AtomicU64,
}

/// State shared by the soak's tasks.
#[derive(Debug)]
pub struct Shared {
    pub addr: String,
    pub start: Instant,
    pub duration: Duration,
    pub timeout: Duration,
    pub query_timeout: Duration,
    pub counters: Counters,
    /// Refusals: (what, HTTP status) → count.
    refused: Mutex<BTreeMap<(String, u16), u64>>,
    first_errors: Mutex<Vec<String>>,
}

impl Shared {
    /// The state of a soak whose clock started at `start`.
    pub fn new(
        addr: String,
        start: Instant,
        duration: Duration,
        timeout: Duration,
        query_timeout: Duration,
    ) -> Self {
        Shared {
            addr,
            start,
            duration,
            timeout,
            query_timeout,
            counters: Counters::default(),
            refused: Mutex::new(BTreeMap::new()),
            first_errors: Mutex::new(Vec::new()),
        }
    }

    /// Records something that must not happen.
    pub fn error(&self, what: String) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        let mut e = self.first_errors.lock().unwrap_or_else(|e| e.into_inner());
        if e.len() < MAX_ERRORS_KEPT {
            e.push(what);
        }
    }

    /// Records a clear refusal (an HTTP status the request deserved).
    pub fn refused(&self, what: &str, status: u16, _body: &str) {
        let mut r = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        *r.entry((what.to_string(), status)).or_default() += 1;
    }

    /// Refusals by status, summed over what was refused.
    pub fn refused_by_status(&self) -> BTreeMap<u16, u64> {
        let mut out = BTreeMap::new();
        for ((_, status), n) in self
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            *out.entry(*status).or_default() += n;
        }
        out
    }

    /// Refusals as `what status` → count.
    pub fn refused_detail(&self) -> BTreeMap<String, u64> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((what, status), n)| (format!("{what} {status}"), *n))
            .collect()
    }

    pub fn first_errors(&self) -> Vec<String> {
        self.first_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
