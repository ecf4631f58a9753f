//! [`QueryGate`]: queries running at once (`query.max_concurrent`), a
//! bounded queue in front of it, the memory pool all running queries share
//! (`query.max_memory_bytes`), and the list of running and recent queries
//! (`/api/stats/query`, cancelled at shutdown).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hourglass_query::MemoryPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
