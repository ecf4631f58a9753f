//! The per-query resource budget ([`QueryBudget`]): points read from
//! storage, values held in memory, a deadline (`tsd.query.timeout`) and a
//! cancellation flag, shared by every sub query and by the source's scan
//! threads.
//!
//! Counters are relaxed atomics: the source may call
//! [`QueryBudget::take_points`] from several threads, and an overshoot by one
//! batch is fine. Hot loops call [`QueryBudget::tick`] per step; it looks at
//! the clock and the cancellation flag only every [`CHECK_EVERY`] steps, so
//! the cost per step is one local counter increment.
//!
//! A budget may also draw on a [`MemoryPool`] shared by every running
//! query, so that many queries at once cannot exceed the server's query
//! memory even when each stays within its own limits: points read cost
//! [`BYTES_PER_POINT`], series fetched [`BYTES_PER_SERIES`], values held
//! [`BYTES_PER_VALUE`], returned to the pool when the budget is dropped.
//!
//! "Values held" counts what execution keeps at once: output points,
//! per-bucket buffers of the downsampler and the merge's per-step buffers
//! (released when done). Values merely *produced* on the fly (fill buckets,
//! rates) are counted separately in [`QueryBudget::values_produced`], for
//! statistics and tests, and never limited: they are never stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::QueryError;

/// How many steps a hot loop makes between two deadline/cancel checks.
pub const CHECK_EVERY: u32 = 4096;

/// Memory a point read from storage costs while the query runs (timestamp
/// and value, with vector slack).
pub const BYTES_PER_POINT: u64 = 32;
/// Memory a held value costs.
pub const BYTES_PER_VALUE: u64 = 16;
/// Memory a fetched series costs besides its points while the query runs
/// (its key, tags and entries in the source's and the query's tables;
/// about 480 bytes measured on a read of 720 k series of five tags).
pub const BYTES_PER_SERIES: u64 = 512;

/// Query memory shared by every running query.
#[derive(Debug)]
pub struct MemoryPool {
    limit: u64,
    used: AtomicU64,
}

impl MemoryPool {
    /// A pool of `limit` bytes (0 = unlimited).
    pub fn new(limit: u64) -> Self {
        MemoryPool {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Bytes in use by running queries.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn take(&self, n: u64) -> bool {
        if self.limit == 0 {
            self.used.fetch_add(n, Ordering::Relaxed);
            return true;
        }
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                let next = u.saturating_add(n);
                (next <= self.limit).then_some(next)
            })
            .is_ok()
    }

    fn give_back(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(n))
            });
    }
}

/// Configured limits; 0 / `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryLimits {
    /// Data points a query may read from storage
    /// (`tsd.query.limits.data_points.default`).
    pub max_points: u64,
    /// Values a query may hold in memory at once.
    pub max_values: u64,
    /// `tsd.query.timeout`.
    pub timeout: Option<Duration>,
}

/// The budget of one query. Create one per request; share it by reference.
#[derive(Debug)]
pub struct QueryBudget {
    limits: QueryLimits,
    started: Instant,
    deadline: Option<Instant>,
    cancelled: Arc<AtomicBool>,
    points: AtomicU64,
    held: AtomicU64,
    peak_held: AtomicU64,
    produced: AtomicU64,
    pool: Option<Arc<MemoryPool>>,
    /// Bytes this budget holds in the pool.
    pooled: AtomicU64,
    pool_exhausted: AtomicBool,
}

impl Drop for QueryBudget {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.give_back(self.pooled.load(Ordering::Relaxed));
        }
    }
}

impl Default for QueryBudget {
    fn default() -> Self {
        QueryBudget::unlimited()
    }
}

impl QueryBudget {
    /// A budget with `limits`, starting now.
    pub fn new(limits: QueryLimits) -> Self {
        let started = Instant::now();
        QueryBudget {
            limits,
            started,
            deadline: limits.timeout.map(|t| started + t),
            cancelled: Arc::new(AtomicBool::new(false)),
            points: AtomicU64::new(0),
            held: AtomicU64::new(0),
            peak_held: AtomicU64::new(0),
            produced: AtomicU64::new(0),
            pool: None,
            pooled: AtomicU64::new(0),
            pool_exhausted: AtomicBool::new(false),
        }
    }

    /// Draws on `pool` for the memory this query uses.
    pub fn with_pool(mut self, pool: Arc<MemoryPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Charges `bytes` to the shared pool; false (and remembered) if the
    /// pool has no room.
    fn charge(&self, bytes: u64) -> bool {
        let Some(pool) = &self.pool else { return true };
        if pool.take(bytes) {
            self.pooled.fetch_add(bytes, Ordering::Relaxed);
            true
        } else {
            self.pool_exhausted.store(true, Ordering::Relaxed);
            false
        }
    }

    fn uncharge(&self, bytes: u64) {
        let Some(pool) = &self.pool else { return };
        let taken = self
            .pooled
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                Some(p.saturating_sub(bytes))
            })
            .unwrap_or(0)
            .min(bytes);
        pool.give_back(taken);
    }

    fn overloaded(&self) -> QueryError {
        let (used, limit) = self.pool.as_ref().map_or((0, 0), |p| (p.used(), p.limit()));
        QueryError::Overloaded(format!(
            "Sorry, the server is out of query memory ({} of {} MiB in use by running queries). Please try again later.",
            used >> 20,
            limit >> 20
        ))
    }

    /// No limits (still counts, still cancellable).
    pub fn unlimited() -> Self {
        QueryBudget::new(QueryLimits::default())
    }

    /// Uses `flag` as the cancellation flag (e.g. shared with the
    /// connection: set it when the client goes away or the server stops).
    pub fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancelled = flag;
        self
    }

    /// The cancellation flag.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }

    /// Cancels the query; running loops stop at their next check.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// The configured limits.
    pub fn limits(&self) -> QueryLimits {
        self.limits
    }

    /// Records `n` points read from storage; false once the point limit is
    /// exceeded (the source should stop scanning then; execution reports the
    /// error). Cheap and thread-safe.
    pub fn take_points(&self, n: usize) -> bool {
        let n = n as u64;
        let total = self
            .points
            .fetch_add(n, Ordering::Relaxed)
            .saturating_add(n);
        (self.limits.max_points == 0 || total <= self.limits.max_points)
            && self.charge(n.saturating_mul(BYTES_PER_POINT))
    }

    /// Records `n` series held (their keys and tags; their points are
    /// [`Self::take_points`]'); fails when the shared pool has no room.
    pub fn take_series(&self, n: usize) -> Result<(), QueryError> {
        let bytes = (n as u64).saturating_mul(BYTES_PER_SERIES);
        if self.charge(bytes) {
            return Ok(());
        }
        let limit = self.pool.as_ref().map_or(0, |p| p.limit());
        if self.pooled.load(Ordering::Relaxed).saturating_add(bytes) > limit {
            // This query alone needs more than the whole pool: waiting for
            // other queries to finish would not help.
            return Err(QueryError::Limit(format!(
                "Sorry, the {n} series this query reads need more than the server's query \
                 memory of {} MiB. Please try filtering using more tags or decrease your time range.",
                limit >> 20
            )));
        }
        Err(self.overloaded())
    }

    /// Points recorded so far.
    pub fn points_taken(&self) -> u64 {
        self.points.load(Ordering::Relaxed)
    }

    /// Fails with OpenTSDB's 413 text if the point limit was exceeded.
    pub fn check_points(&self) -> Result<(), QueryError> {
        if self.pool_exhausted.load(Ordering::Relaxed) {
            return Err(self.overloaded());
        }
        let limit = self.limits.max_points;
        if limit > 0 && self.points_taken() > limit {
            return Err(QueryError::Limit(format!(
                "Sorry, you have attempted to fetch more than our limit of {limit} data points. \
                 Please try filtering using more tags or decrease your time range."
            )));
        }
        Ok(())
    }

    /// Records `n` more values held in memory; fails once over the limit.
    pub fn hold(&self, n: usize) -> Result<(), QueryError> {
        let n = n as u64;
        let now = self.held.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        self.peak_held.fetch_max(now, Ordering::Relaxed);
        let limit = self.limits.max_values;
        if limit > 0 && now > limit {
            // The caller will not hold them: undo.
            self.unhold(n);
            return Err(QueryError::Limit(format!(
                "Sorry, you have attempted to hold more than our limit of {limit} values in \
                 memory. Please try filtering using more tags or decrease your time range."
            )));
        }
        if !self.charge(n.saturating_mul(BYTES_PER_VALUE)) {
            self.unhold(n);
            return Err(self.overloaded());
        }
        Ok(())
    }

    fn unhold(&self, n: u64) {
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                Some(h.saturating_sub(n))
            });
    }

    /// Releases `n` held values.
    pub fn release(&self, n: usize) {
        let n = n as u64;
        self.unhold(n);
        self.uncharge(n.saturating_mul(BYTES_PER_VALUE));
    }

    /// Values held right now.
    pub fn values_held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// The most values held at once so far.
    pub fn peak_values_held(&self) -> u64 {
        self.peak_held.load(Ordering::Relaxed)
    }

    /// Records `n` values produced on the fly (never limited).
    pub fn produced(&self, n: u64) {
        self.produced.fetch_add(n, Ordering::Relaxed);
    }

    /// Values produced so far.
    pub fn values_produced(&self) -> u64 {
        self.produced.load(Ordering::Relaxed)
    }

    /// Fails if the query was cancelled or its deadline passed.
    pub fn check(&self) -> Result<(), QueryError> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Err(QueryError::Cancelled);
        }
        if let Some(deadline) = self.deadline {
            let now = Instant::now();
            if now >= deadline {
                let limit = self.limits.timeout.map_or(0, |t| t.as_millis());
                let elapsed = now.duration_since(self.started).as_millis();
                return Err(QueryError::Timeout(format!(
                    "Sorry, your query timed out. Time limit: {limit} ms, fetch time: {elapsed} ms. \
                     Please try filtering using more tags or decrease your time range."
                )));
            }
        }
        Ok(())
    }

    /// One step of a hot loop: checks every [`CHECK_EVERY`] calls (`counter`
    /// is the loop's own).
    pub fn tick(&self, counter: &mut u32) -> Result<(), QueryError> {
        *counter += 1;
        if *counter >= CHECK_EVERY {
            *counter = 0;
            self.check()?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    #[test]
    fn a_shared_pool_bounds_queries_together() {
        let pool = Arc::new(MemoryPool::new(100 * BYTES_PER_POINT));
        let a = QueryBudget::unlimited().with_pool(Arc::clone(&pool));
        let b = QueryBudget::unlimited().with_pool(Arc::clone(&pool));
        assert!(a.take_points(60));
        assert!(b.take_points(40));
        assert!(!b.take_points(1), "the pool is full");
        assert!(matches!(b.check_points(), Err(QueryError::Overloaded(_))));
        assert!(a.check_points().is_ok());
        drop(a);
        assert_eq!(pool.used(), 40 * BYTES_PER_POINT, "a's memory went back");
        let c = QueryBudget::unlimited().with_pool(Arc::clone(&pool));
        assert!(c.take_points(60));
        c.hold(0).unwrap();
        assert!(c.hold(1).is_err());
        drop((b, c));
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn series_are_charged_and_a_query_larger_than_the_pool_is_a_limit() {
        let pool = Arc::new(MemoryPool::new(1000 * BYTES_PER_SERIES));
        let a = QueryBudget::unlimited().with_pool(Arc::clone(&pool));
        a.take_series(600).unwrap();
        assert_eq!(pool.used(), 600 * BYTES_PER_SERIES);
        // Room for it once `a` is done: try again later (503).
        let b = QueryBudget::unlimited().with_pool(Arc::clone(&pool));
        assert!(matches!(b.take_series(500), Err(QueryError::Overloaded(_))));
        // More than the whole pool on its own: a limit (413), not a retry.
        let e = b.take_series(1001).unwrap_err();
        assert!(matches!(e, QueryError::Limit(_)));
        assert!(e.message().starts_with(
            "Sorry, the 1001 series this query reads need more than the server's query memory of 0 MiB."
        ));
        drop(a);
        b.take_series(1000).unwrap();
        drop(b);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn limits_and_messages() {
        let b = QueryBudget::new(QueryLimits {
            max_points: 10,
            max_values: 5,
            timeout: None,
        });
        assert!(b.take_points(10));
        assert!(b.check_points().is_ok());
        assert!(!b.take_points(1));
        assert_eq!(
            b.check_points().unwrap_err().message(),
            "Sorry, you have attempted to fetch more than our limit of 10 data points. \
             Please try filtering using more tags or decrease your time range."
        );
        b.hold(5).unwrap();
        b.release(2);
        b.hold(2).unwrap();
        let e = b.hold(1).unwrap_err();
        assert!(matches!(e, QueryError::Limit(_)));
        assert_eq!(b.peak_values_held(), 6);
        assert_eq!(b.values_held(), 5);
        assert!(b.check().is_ok());
        b.cancel();
        assert_eq!(b.check().unwrap_err(), QueryError::Cancelled);
    }

    #[test]
    fn deadline() {
        let b = QueryBudget::new(QueryLimits {
            timeout: Some(Duration::ZERO),
            ..QueryLimits::default()
        });
        let e = b.check().unwrap_err();
        assert!(
            e.message()
                .starts_with("Sorry, your query timed out. Time limit: 0 ms, fetch time: ")
        );
        // tick only looks every CHECK_EVERY steps
        let mut c = 0;
        for _ in 0..CHECK_EVERY - 1 {
            b.tick(&mut c).unwrap();
        }
        assert!(b.tick(&mut c).is_err());
    }
}
