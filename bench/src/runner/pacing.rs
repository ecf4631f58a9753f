//! Pacing for soak-style runs: a rate limit and a wall-clock limit per
//! connection ([`Pacer`]), and a bound on how far apart in data time the
//! connections may drift ([`Lockstep`], needed by Prometheus, which refuses
//! samples older than its head's window).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

/// Per-connection pacing: rate limit and deadline. Kept on tokio's clock
/// (not `std::time`) so that tests can run it on a paused clock.
#[derive(Debug, Clone)]
pub struct Pacer {
    start: tokio::time::Instant,
    /// Points per second for this connection.
    rate: Option<f64>,
    deadline: Option<tokio::time::Instant>,
}

impl Pacer {
    pub fn new(start: Instant, rate: Option<f64>, max_time: Option<Duration>) -> Self {
        let start = tokio::time::Instant::from_std(start);
        Pacer {
            start,
            rate,
            deadline: max_time.map(|d| start + d),
        }
    }

    /// Waits until `sent` points are allowed by the rate; false once the
    /// deadline has passed (stop sending).
    pub async fn admit(&self, sent: u64) -> bool {
        if let Some(rate) = self.rate {
            let due = self.start + Duration::from_secs_f64(sent as f64 / rate);
            if let Some(deadline) = self.deadline
                && due >= deadline
            {
                tokio::time::sleep_until(deadline).await;
                return false;
            }
            tokio::time::sleep_until(due).await;
        }
        self.deadline
            .is_none_or(|d| tokio::time::Instant::now() < d)
    }
}

/// Keeps connections within `skew_ms` of data time of each other.
#[derive(Debug)]
pub struct Lockstep {
    progress: Vec<AtomicI64>,
    skew_ms: i64,
}

impl Lockstep {
    pub fn new(connections: usize, skew_ms: i64) -> Self {
        Lockstep {
            progress: (0..connections).map(|_| AtomicI64::new(i64::MIN)).collect(),
            skew_ms,
        }
    }

    /// Records that connection `me` is about to send data from `ts_ms` and
    /// waits while that is more than the skew ahead of the slowest one. The
    /// slowest connection never waits, so this cannot deadlock.
    pub async fn wait(&self, me: usize, ts_ms: i64) {
        self.progress[me].store(ts_ms, Ordering::SeqCst);
        loop {
            let min = self
                .progress
                .iter()
                .map(|p| p.load(Ordering::SeqCst))
                // A connection that has not sent yet holds nobody back.
                .filter(|&p| p != i64::MIN)
                .min()
                .unwrap_or(i64::MAX);
            if ts_ms <= min.saturating_add(self.skew_ms) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Connection `me` has nothing more to send.
    pub fn done(&self, me: usize) {
        self.progress[me].store(i64::MAX, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn pacer_limits_rate_and_stops_at_deadline() {
        let start = tokio::time::Instant::now();
        let pacer = Pacer::new(start.into_std(), Some(1000.0), Some(Duration::from_secs(2)));
        assert!(pacer.admit(0).await);
        assert!(pacer.admit(1000).await);
        assert!(start.elapsed() >= Duration::from_secs(1));
        assert!(!pacer.admit(5000).await);
        let free = Pacer::new(Instant::now(), None, None);
        assert!(free.admit(u64::MAX).await);
    }

    #[tokio::test(start_paused = true)]
    async fn lockstep_holds_the_fastest_back() {
        let l = Arc::new(Lockstep::new(2, 100));
        l.wait(0, 0).await;
        l.wait(1, 50).await;
        let ahead = {
            let l = Arc::clone(&l);
            tokio::spawn(async move { l.wait(1, 500).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!ahead.is_finished());
        l.wait(0, 450).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(ahead.is_finished());
        l.done(0);
        l.wait(1, 10_000).await;
    }
}
