//! The UIDs this process assigned lately, each with the head's removal
//! count ([`super::head::Head::removed`]) taken before it was assigned.
//!
//! No row in the store refers to a UID before it is assigned, so the rows
//! of a series named with one are the rows this process flushed of it since:
//! none, unless the head registered the series, flushed it and forgot it,
//! which the head's record of removals since that count tells
//! ([`super::head::Head::removed_since`]). A series named with a fresh UID
//! is therefore new to the store without asking the bloom filters, whose
//! false positives would have its index and tier rows read back at its
//! first flush. This is what lets a pod's series that arrive in different
//! requests (Prometheus shards remote write by series) all be known new,
//! not only the one whose write assigned the pod's UID.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use crate::uid::UidKind;

/// UIDs remembered: a pod's series come within seconds of its first, and
/// the head forgets at most [`super::head`]'s recent-removals window
/// meanwhile; about 3 MB.
const REMEMBERED: usize = 1 << 16;

#[derive(Debug, Default)]
pub(super) struct FreshUids {
    /// The removal count before each UID was assigned.
    removed_before: HashMap<(UidKind, u64), u64>,
    /// The same UIDs, oldest first, to forget them in order.
    order: VecDeque<(UidKind, u64)>,
}

impl FreshUids {
    /// Notes that `uid` was assigned after the head's removal count was
    /// `removed`.
    pub(super) fn note(&mut self, kind: UidKind, uid: u64, removed: u64) {
        match self.removed_before.entry((kind, uid)) {
            Entry::Occupied(_) => return,
            Entry::Vacant(slot) => {
                slot.insert(removed);
            }
        }
        if self.order.len() == REMEMBERED
            && let Some(oldest) = self.order.pop_front()
        {
            self.removed_before.remove(&oldest);
        }
        self.order.push_back((kind, uid));
    }

    /// The removal count before `uid` was assigned, if this process
    /// assigned it lately.
    pub(super) fn removed_before(&self, kind: UidKind, uid: u64) -> Option<u64> {
        self.removed_before.get(&(kind, uid)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_latest_uids_with_their_removal_counts() {
        let mut fresh = FreshUids::default();
        fresh.note(UidKind::TagV, 7, 3);
        fresh.note(UidKind::TagV, 7, 9);
        assert_eq!(
            fresh.removed_before(UidKind::TagV, 7),
            Some(3),
            "the first count stays"
        );
        assert_eq!(fresh.removed_before(UidKind::TagK, 7), None, "per kind");
        for uid in 100..100 + REMEMBERED as u64 {
            fresh.note(UidKind::Metric, uid, uid);
        }
        assert_eq!(
            fresh.removed_before(UidKind::TagV, 7),
            None,
            "the oldest forgotten"
        );
        assert_eq!(fresh.removed_before(UidKind::Metric, 100), Some(100));
        assert_eq!(fresh.order.len(), REMEMBERED);
        assert_eq!(fresh.removed_before.len(), REMEMBERED);
    }
}
