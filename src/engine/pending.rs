//! Writes the WAL holds but has not yet made durable. A batch is logged and
//! queued here under the head lock, so the queue is in log order; the WAL's
//! publishing thread applies what it has made durable to the head before it
//! wakes any writer ([`super::write::ApplyDurable`]). A point therefore becomes visible
//! exactly when it becomes durable: a batch whose log write fails (a full
//! disk, a failed fsync), and whose client is told so, is dropped from here
//! and never read back; and the head applies writes in the order a replay
//! of the log would.

use std::collections::VecDeque;

use crate::codec::StoredValue;

/// One point waiting for its frame to be durable: head slot, timestamp as
/// sent, value.
pub type PendingPoint = (u32, u64, StoredValue);

/// One logged write.
#[derive(Debug)]
pub enum PendingWrite {
    Points(Vec<PendingPoint>),
    /// Points of these series (full keys) with `start_ms <= ts <= end_ms`
    /// are deleted.
    Delete {
        keys: Vec<Vec<u8>>,
        start_ms: i64,
        end_ms: i64,
    },
}

/// Logged writes in log order, each with the log position that makes it
/// durable.
#[derive(Debug, Default)]
pub struct PendingQueue {
    queue: VecDeque<(u64, PendingWrite)>,
    points: usize,
}

impl PendingQueue {
    /// Queues a write logged at `lsn` (the position its frame ends at).
    pub fn push(&mut self, lsn: u64, write: PendingWrite) {
        if let PendingWrite::Points(p) = &write {
            self.points += p.len();
        }
        self.queue.push_back((lsn, write));
    }

    /// Takes the writes the log has made durable (`lsn` and before), in order.
    pub fn take_through(&mut self, lsn: u64) -> Vec<PendingWrite> {
        let n = self.queue.partition_point(|(at, _)| *at <= lsn);
        let taken: Vec<PendingWrite> = self.queue.drain(..n).map(|(_, w)| w).collect();
        for w in &taken {
            if let PendingWrite::Points(p) = w {
                self.points -= p.len();
            }
        }
        taken
    }

    /// Takes every write (the log failed: none of them will be durable).
    pub fn take_all(&mut self) -> Vec<PendingWrite> {
        self.points = 0;
        self.queue.drain(..).map(|(_, w)| w).collect()
    }

    /// Points waiting.
    pub fn points(&self) -> usize {
        self.points
    }

    /// Memory the waiting points hold (counted in the head's bound).
    pub fn bytes(&self) -> usize {
        self.points * std::mem::size_of::<PendingPoint>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_come_out_in_log_order_up_to_the_durable_position() {
        let mut q = PendingQueue::default();
        q.push(10, PendingWrite::Points(vec![(0, 1, StoredValue::Int(1))]));
        q.push(
            20,
            PendingWrite::Delete {
                keys: vec![vec![1]],
                start_ms: 0,
                end_ms: 5,
            },
        );
        q.push(
            30,
            PendingWrite::Points(vec![(0, 2, StoredValue::Int(2)); 3]),
        );
        assert_eq!(q.points(), 4);
        assert!(q.take_through(9).is_empty());
        let first = q.take_through(25);
        assert_eq!(first.len(), 2);
        assert!(matches!(first[1], PendingWrite::Delete { .. }));
        assert_eq!(q.points(), 3);
        assert_eq!(q.take_all().len(), 1);
        assert_eq!(q.points(), 0);
    }
}
