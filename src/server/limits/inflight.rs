//! [`Inflight`]: bytes of request bodies and line-protocol input being
//! decoded and written at once, across all connections
//! (`server.max_inflight_bytes`), and within it each client address's share
//! (`server.max_inflight_bytes_per_address`). HTTP requests that find it
//! full get 503 with `Retry-After`; line-protocol connections wait (stop
//! reading, so TCP slows the client down).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
