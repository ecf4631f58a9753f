//! The last stage of the group commit: the writes the log has made durable
//! are applied (the [`DurableHook`]: the engine's head takes them in) and the
//! durable LSN is published, which wakes their writers. It runs on a thread
//! of its own, so that the sync thread writes and fsyncs the next group while
//! the head takes in the last one: visibility still follows durability (a
//! write is applied only once its frame is durable, a writer is woken only
//! once its write is visible), but applying no longer adds to the time
//! between two fsyncs.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

use tokio::sync::watch;

/// Durable progress, published once the head has applied it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Durable {
    pub lsn: u64,
    pub failed: bool,
    /// The segment the sync thread is writing to: a rotation has happened
    /// once this reaches the segment it returned.
    pub segment: u64,
}

impl Durable {
    /// What a writer waiting for `lsn` learns from this: `Some(true)` it is
    /// durable (also after a later failure, which keeps the last durable
    /// LSN: that write is fsynced and applied), `Some(false)` it never will
    /// be, `None` not yet.
    pub fn outcome(&self, lsn: u64) -> Option<bool> {
        if self.lsn >= lsn {
            Some(true)
        } else if self.failed {
            Some(false)
        } else {
            None
        }
    }
}

/// Told by the publishing thread what the log has made durable, before any writer
/// waiting for it is woken.
pub trait DurableHook: Send + Sync + std::fmt::Debug {
    /// Every frame up to `lsn` is durable under the fsync policy.
    fn durable(&self, lsn: u64);
    /// The log failed: no frame after the last durable one will ever be.
    fn failed(&self);
}

/// Hands durable progress from the sync thread to the publishing thread.
#[derive(Debug, Default)]
pub(super) struct Publisher {
    stage: Mutex<Stage>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct Stage {
    /// The newest durable progress not yet published; a later one replaces
    /// an earlier one (one apply covers both, in log order).
    durable: Option<Durable>,
    /// The log failed after `durable`: nothing later will be durable.
    failed: bool,
    /// The sync thread has stopped.
    closed: bool,
}

impl Publisher {
    fn lock(&self) -> MutexGuard<'_, Stage> {
        self.stage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every frame up to `durable.lsn` is durable.
    pub(super) fn durable(&self, durable: Durable) {
        self.lock().durable = Some(durable);
        self.ready.notify_one();
    }

    /// The log failed: what was handed over before is still published, then
    /// the failure.
    pub(super) fn failed(&self) {
        self.lock().failed = true;
        self.ready.notify_one();
    }

    /// The sync thread stopped: what was handed over is published, then the
    /// publishing thread ends.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// The publishing thread: runs until the log fails or closes.
    pub(super) fn run(&self, hook: &OnceLock<Box<dyn DurableHook>>, tx: &watch::Sender<Durable>) {
        loop {
            let (durable, failed, closed) = {
                let mut stage = self.lock();
                while stage.durable.is_none() && !stage.failed && !stage.closed {
                    stage = self
                        .ready
                        .wait(stage)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                (stage.durable.take(), stage.failed, stage.closed)
            };
            if let Some(durable) = durable {
                if let Some(hook) = hook.get() {
                    hook.durable(durable.lsn);
                }
                tx.send_replace(durable);
            }
            if failed {
                if let Some(hook) = hook.get() {
                    hook.failed();
                }
                let last = *tx.borrow();
                tx.send_replace(Durable {
                    failed: true,
                    ..last
                });
                return;
            }
            if closed {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Records the LSNs it is told, and whether it was told of a failure.
    #[derive(Debug, Default)]
    struct Seen {
        lsn: AtomicU64,
        failed: AtomicU64,
    }

    /// The hook sees what is published: it must be told before it.
    #[derive(Debug)]
    struct Hook(Arc<Seen>, watch::Receiver<Durable>);

    impl DurableHook for Hook {
        fn durable(&self, lsn: u64) {
            assert!(
                lsn >= self.0.lsn.load(Ordering::SeqCst),
                "applied out of log order"
            );
            assert!(self.1.borrow().lsn < lsn, "published before it was applied");
            self.0.lsn.store(lsn, Ordering::SeqCst);
        }
        fn failed(&self) {
            self.0.failed.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn progress_is_applied_before_it_is_published_and_a_failure_comes_last() {
        let seen = Arc::new(Seen::default());
        let hook = OnceLock::new();
        let (tx, mut rx) = watch::channel(Durable::default());
        let _ = hook.set(Box::new(Hook(Arc::clone(&seen), tx.subscribe())) as Box<dyn DurableHook>);
        let publisher = Publisher::default();
        std::thread::scope(|s| {
            s.spawn(|| publisher.run(&hook, &tx));
            for lsn in 1..=1000 {
                publisher.durable(Durable {
                    lsn,
                    failed: false,
                    segment: 1,
                });
            }
            publisher.failed();
        });
        // The last progress handed over before the failure is applied and
        // published first; then the failure.
        assert_eq!(seen.lsn.load(Ordering::SeqCst), 1000);
        assert_eq!(seen.failed.load(Ordering::SeqCst), 1);
        assert_eq!(
            *rx.borrow_and_update(),
            Durable {
                lsn: 1000,
                failed: true,
                segment: 1
            }
        );
    }

    #[test]
    fn a_write_made_durable_before_a_failure_stays_acknowledged() {
        let failed = Durable {
            lsn: 1000,
            failed: true,
            segment: 1,
        };
        assert_eq!(failed.outcome(1000), Some(true));
        assert_eq!(failed.outcome(999), Some(true));
        assert_eq!(failed.outcome(1001), Some(false));
        let running = Durable {
            failed: false,
            ..failed
        };
        assert_eq!(running.outcome(1000), Some(true));
        assert_eq!(running.outcome(1001), None);
    }

    #[test]
    fn closing_publishes_what_was_handed_over() {
        let hook = OnceLock::new();
        let (tx, rx) = watch::channel(Durable::default());
        let publisher = Publisher::default();
        publisher.durable(Durable {
            lsn: 7,
            failed: false,
            segment: 2,
        });
        publisher.close();
        publisher.run(&hook, &tx);
        assert_eq!(rx.borrow().lsn, 7);
        assert!(!rx.borrow().failed);
    }
}
