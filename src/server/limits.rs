//! Server-wide bounds that no single request may break:
//!
//! * [`Inflight`] — bytes of request bodies and line-protocol input being
//!   decoded and written at once, across all connections
//!   (`server.max_inflight_bytes`). HTTP requests that find it full get 503
//!   with `Retry-After`; line-protocol connections wait (stop reading, so TCP
//!   slows the client down).
//! * [`AddressLimits`] — connections per client address
//!   (`server.max_connections_per_address`), so one host cannot take every
//!   connection slot.
//! * [`QueryGate`] — queries running at once (`query.max_concurrent`), a
//!   bounded queue in front of it, the memory pool all running queries share
//!   (`query.max_memory_bytes`), and the list of running and recent queries
//!   (`/api/stats/query`, cancelled at shutdown).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hourglass_query::MemoryPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Memory is counted in units of this many bytes.
const UNIT: usize = 1024;

fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// In-flight ingest memory: a budget for the whole server and, inside it, a
/// share per client address, so that the connections of one address (or one
/// attacker) can never hold all of it and starve the others.
#[derive(Debug)]
pub struct Inflight {
    sem: Arc<Semaphore>,
    total: u32,
    per_address: u32,
    /// The share each address has left; an entry lives while some guard or
    /// waiter of that address holds it.
    shares: Arc<Shares>,
}

type Shares = Mutex<HashMap<IpAddr, Arc<Semaphore>>>;

fn lock(shares: &Shares) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Arc<Semaphore>>> {
    shares
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Memory held by one request or read (from the server's budget and from its
/// address's share); returned on drop.
#[derive(Debug)]
pub struct InflightGuard {
    shares: Arc<Shares>,
    addr: IpAddr,
    share: Option<Arc<Semaphore>>,
    global: Option<OwnedSemaphorePermit>,
    local: Option<OwnedSemaphorePermit>,
}

impl InflightGuard {
    pub fn units(&self) -> u32 {
        self.global
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits) as u32
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.global = None;
        self.local = None;
        let Some(share) = self.share.take() else {
            return;
        };
        // Forget the address's share once nobody holds or waits on it (its
        // permits hold their own reference, so the count says who does).
        let mut shares = lock(&self.shares);
        drop(share);
        if shares
            .get(&self.addr)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            shares.remove(&self.addr);
        }
    }
}

impl Inflight {
    /// `per_address_bytes` is clamped to the budget.
    pub fn new(max_bytes: usize, per_address_bytes: usize) -> Self {
        let total = u32::try_from(max_bytes / UNIT)
            .unwrap_or(u32::MAX)
            .clamp(1, Semaphore::MAX_PERMITS as u32);
        let per_address = u32::try_from(per_address_bytes / UNIT)
            .unwrap_or(u32::MAX)
            .clamp(1, total);
        Self {
            sem: Arc::new(Semaphore::new(total as usize)),
            total,
            per_address,
            shares: Arc::default(),
        }
    }

    /// Bytes in use.
    pub fn used_bytes(&self) -> usize {
        (self.total as usize - self.sem.available_permits()) * UNIT
    }

    /// Bytes in use by one address.
    pub fn used_by(&self, addr: IpAddr) -> usize {
        lock(&self.shares).get(&addr).map_or(0, |s| {
            (self.per_address as usize - s.available_permits()) * UNIT
        })
    }

    fn share_of(&self, addr: IpAddr) -> Arc<Semaphore> {
        Arc::clone(
            lock(&self.shares)
                .entry(addr)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_address as usize))),
        )
    }

    /// An empty guard for `addr`, to be grown as bytes arrive.
    pub fn guard(&self, addr: IpAddr) -> InflightGuard {
        InflightGuard {
            shares: Arc::clone(&self.shares),
            addr,
            share: Some(self.share_of(addr)),
            global: None,
            local: None,
        }
    }

    /// Takes `bytes` for `addr` now or fails (HTTP: answer 503).
    pub fn try_take(&self, addr: IpAddr, bytes: usize) -> Option<InflightGuard> {
        let mut guard = self.guard(addr);
        self.try_grow(&mut guard, bytes).then_some(guard)
    }

    /// Grows a guard to `bytes` in all now, or fails and leaves it as it was.
    pub fn try_grow(&self, guard: &mut InflightGuard, bytes: usize) -> bool {
        let have = guard.units();
        let want = units(bytes).min(self.total);
        if want <= have {
            return true;
        }
        let Some(share) = guard.share.as_ref() else {
            return false;
        };
        let more = want - have;
        let Ok(local) = Arc::clone(share).try_acquire_many_owned(more) else {
            return false;
        };
        let Ok(global) = Arc::clone(&self.sem).try_acquire_many_owned(more) else {
            return false;
        };
        merge(&mut guard.local, local);
        merge(&mut guard.global, global);
        true
    }

    /// Takes `bytes` for `addr`, waiting for room (line protocol:
    /// backpressure). The address's share is taken before the server's
    /// budget, so an address waiting on its own share holds nothing of the
    /// others'.
    pub async fn take(&self, addr: IpAddr, bytes: usize) -> InflightGuard {
        let mut guard = self.guard(addr);
        let n = units(bytes).min(self.per_address);
        if let Some(share) = guard.share.as_ref() {
            guard.local = Arc::clone(share).acquire_many_owned(n).await.ok();
            guard.global = Arc::clone(&self.sem).acquire_many_owned(n).await.ok();
        }
        guard
    }
}

fn merge(into: &mut Option<OwnedSemaphorePermit>, more: OwnedSemaphorePermit) {
    match into {
        Some(held) => held.merge(more),
        None => *into = Some(more),
    }
}

/// Open connections per client address.
#[derive(Debug)]
pub struct AddressLimits {
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's slot; released on drop.
#[derive(Debug)]
pub struct AddressSlot {
    addr: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.addr);
            }
        }
    }
}

impl AddressLimits {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            open: Arc::default(),
        }
    }

    /// A slot for a new connection from `addr`, or `None` if it holds its
    /// share already.
    pub fn admit(&self, addr: IpAddr) -> Option<AddressSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(addr).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            addr,
            open: Arc::clone(&self.open),
        })
    }
}

/// One query, running or finished, for `/api/stats/query`.
#[derive(Debug, Clone)]
pub struct QueryRecord {
    pub id: u64,
    pub query: String,
    pub remote: String,
    pub started: SystemTime,
    pub elapsed: Option<Duration>,
    /// HTTP status of the answer, once finished.
    pub status: Option<u16>,
    pub error: Option<String>,
    pub points: u64,
}

#[derive(Debug)]
struct Running {
    record: QueryRecord,
    started: Instant,
    cancel: Arc<AtomicBool>,
}

/// Admission and bookkeeping of queries.
#[derive(Debug)]
pub struct QueryGate {
    slots: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
    queue_timeout: Duration,
    pub pool: Arc<MemoryPool>,
    next_id: AtomicU64,
    running: Mutex<HashMap<u64, Running>>,
    completed: Mutex<VecDeque<QueryRecord>>,
}

/// Why a query was not admitted.
#[derive(Debug, Clone, Copy)]
pub enum Refused {
    QueueFull,
    Waited,
}

/// A running query's slot; ends the record and frees the slot on drop.
#[derive(Debug)]
pub struct QueryTicket {
    gate: Arc<QueryGate>,
    id: u64,
    _permit: OwnedSemaphorePermit,
    pub cancel: Arc<AtomicBool>,
    outcome: Option<(u16, Option<String>, u64)>,
}

impl QueryTicket {
    /// Records how the query ended (status, error text, points read).
    pub fn finish(&mut self, status: u16, error: Option<String>, points: u64) {
        self.outcome = Some((status, error, points));
    }
}

impl Drop for QueryTicket {
    fn drop(&mut self) {
        // Dropped without an outcome: the client went away; stop the work.
        if self.outcome.is_none() {
            self.cancel.store(true, Ordering::Relaxed);
        }
        let running = self
            .gate
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
        if let Some(r) = running {
            let mut rec = r.record;
            rec.elapsed = Some(r.started.elapsed());
            let (status, error, points) = self.outcome.take().unwrap_or((
                499,
                Some("cancelled: the client went away".into()),
                0,
            ));
            rec.status = Some(status);
            rec.error = error;
            rec.points = points;
            let mut done = self
                .gate
                .completed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if done.len() >= 256 {
                done.pop_front();
            }
            done.push_back(rec);
        }
    }
}

impl QueryGate {
    pub fn new(
        max_concurrent: usize,
        max_queued: usize,
        queue_timeout: Duration,
        max_memory_bytes: usize,
    ) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            queued: AtomicUsize::new(0),
            max_queued,
            queue_timeout,
            pool: Arc::new(MemoryPool::new(max_memory_bytes as u64)),
            next_id: AtomicU64::new(1),
            running: Mutex::new(HashMap::new()),
            completed: Mutex::new(VecDeque::new()),
        }
    }

    /// Waits for a slot (bounded queue, bounded wait).
    pub async fn admit(
        self: &Arc<Self>,
        query: String,
        remote: String,
    ) -> Result<QueryTicket, Refused> {
        let permit = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if self.queued.fetch_add(1, Ordering::AcqRel) >= self.max_queued {
                    self.queued.fetch_sub(1, Ordering::AcqRel);
                    return Err(Refused::QueueFull);
                }
                let waited = tokio::time::timeout(
                    self.queue_timeout,
                    Arc::clone(&self.slots).acquire_owned(),
                )
                .await;
                self.queued.fetch_sub(1, Ordering::AcqRel);
                match waited {
                    Ok(Ok(p)) => p,
                    _ => return Err(Refused::Waited),
                }
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let cancel = Arc::new(AtomicBool::new(false));
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                id,
                Running {
                    record: QueryRecord {
                        id,
                        query,
                        remote,
                        started: SystemTime::now(),
                        elapsed: None,
                        status: None,
                        error: None,
                        points: 0,
                    },
                    started: Instant::now(),
                    cancel: Arc::clone(&cancel),
                },
            );
        Ok(QueryTicket {
            gate: Arc::clone(self),
            id,
            _permit: permit,
            cancel,
            outcome: None,
        })
    }

    /// Cancels every running query (shutdown).
    pub fn cancel_all(&self) {
        for r in self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
        {
            r.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Running queries (with their elapsed time so far) and recent ones.
    pub fn snapshot(&self) -> (Vec<QueryRecord>, Vec<QueryRecord>) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(|r| QueryRecord {
                elapsed: Some(r.started.elapsed()),
                ..r.record.clone()
            })
            .collect();
        let done = self
            .completed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        (running, done)
    }

    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflight_memory_is_bounded_and_returned() {
        let f = Inflight::new(10 * 1024, 10 * 1024);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let a = f.try_take(ip, 6 * 1024).unwrap();
        assert!(f.try_take(ip, 5 * 1024).is_none());
        let mut b = f.try_take(ip, 1024).unwrap();
        assert!(f.try_grow(&mut b, 4 * 1024));
        assert!(!f.try_grow(&mut b, 5 * 1024));
        drop(a);
        assert!(f.try_grow(&mut b, 5 * 1024));
        drop(b);
        assert_eq!(f.used_bytes(), 0);
        assert!(lock(&f.shares).is_empty(), "shares are forgotten when free");
    }

    #[test]
    fn one_address_cannot_hold_the_whole_budget() {
        let f = Inflight::new(16 * 1024, 8 * 1024);
        let greedy: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let mut held: Vec<_> = (0..8).filter_map(|_| f.try_take(greedy, 1024)).collect();
        assert_eq!(held.len(), 8);
        assert!(f.try_take(greedy, 1024).is_none(), "its share is spent");
        assert!(!f.try_grow(&mut held[0], 2048));
        assert_eq!(f.used_by(greedy), 8 * 1024);
        // Another address still gets the rest of the budget.
        let o = f.try_take(other, 8 * 1024).unwrap();
        assert_eq!(f.used_bytes(), 16 * 1024);
        drop(o);
        held.clear();
        assert_eq!(f.used_bytes(), 0);
    }

    #[tokio::test]
    async fn a_waiting_line_protocol_read_holds_nothing_of_the_budget() {
        let f = Arc::new(Inflight::new(16 * 1024, 8 * 1024));
        let greedy: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let first = f.take(greedy, 8 * 1024).await;
        let waiting = {
            let f = Arc::clone(&f);
            tokio::spawn(async move {
                let g = f.take(greedy, 1024).await;
                g.units()
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        assert!(f.try_take(other, 8 * 1024).is_some());
        drop(first);
        assert_eq!(waiting.await.unwrap(), 1);
    }

    #[test]
    fn one_address_cannot_take_every_slot() {
        let l = AddressLimits::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let s1 = l.admit(a).unwrap();
        let _s2 = l.admit(a).unwrap();
        assert!(l.admit(a).is_none());
        assert!(l.admit(b).is_some());
        drop(s1);
        assert!(l.admit(a).is_some());
    }

    #[tokio::test]
    async fn queries_queue_then_are_refused() {
        let g = Arc::new(QueryGate::new(1, 1, Duration::from_millis(50), 0));
        let mut t1 = g.admit("a".into(), "x".into()).await.unwrap();
        // One may wait; it times out.
        assert!(matches!(
            g.admit("b".into(), "x".into()).await,
            Err(Refused::Waited)
        ));
        t1.finish(200, None, 5);
        let cancel = Arc::clone(&t1.cancel);
        drop(t1);
        assert!(!cancel.load(Ordering::Relaxed), "finished, not cancelled");
        let t2 = g.admit("c".into(), "x".into()).await.unwrap();
        let c2 = Arc::clone(&t2.cancel);
        drop(t2); // dropped unfinished: the client went away
        assert!(c2.load(Ordering::Relaxed));
        let (running, done) = g.snapshot();
        assert!(running.is_empty());
        assert_eq!(done.len(), 2);
        assert_eq!(done[1].status, Some(499));
    }
}
