//! The head's series slots ([`Slots`]): entries by series id, kept in pages
//! of a fixed size.
//!
//! The registry grows a page at a time. One vector grown by doubling copied
//! every entry into fresh memory at each power of two and held both copies
//! meanwhile: at 524,288 → 1,048,576 series of 96 bytes, 50 MB copied into a
//! 100 MB allocation while the old 50 MB was still held, a spike in the
//! peak RSS of a churn that passes the bound (issue 18).

/// Slots per page: 4,096 entries of ~100 bytes, some 400 KB.
const PAGE: usize = 4096;

/// Entries by index, appended one at a time, never moved once placed.
#[derive(Debug)]
pub struct Slots<T> {
    /// Each page holds up to [`PAGE`] slots and was made with that capacity,
    /// so it is never reallocated; only the last one is not full.
    pages: Vec<Vec<Option<T>>>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self { pages: Vec::new() }
    }
}

impl<T> Slots<T> {
    /// Slots placed (taken or free).
    pub fn len(&self) -> usize {
        match self.pages.last() {
            Some(last) => (self.pages.len() - 1) * PAGE + last.len(),
            None => 0,
        }
    }

    /// Slots the pages have room for.
    pub fn capacity(&self) -> usize {
        self.pages.len() * PAGE
    }

    pub fn get(&self, index: usize) -> Option<&Option<T>> {
        self.pages.get(index / PAGE)?.get(index % PAGE)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut Option<T>> {
        self.pages.get_mut(index / PAGE)?.get_mut(index % PAGE)
    }

    /// Places `slot` after the last one; returns its index.
    pub fn push(&mut self, slot: Option<T>) -> usize {
        let index = self.len();
        match self.pages.last_mut() {
            Some(last) if last.len() < PAGE => last.push(slot),
            _ => {
                let mut page = Vec::with_capacity(PAGE);
                page.push(slot);
                self.pages.push(page);
            }
        }
        index
    }

    pub fn iter(&self) -> impl Iterator<Item = &Option<T>> + '_ {
        self.pages.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Option<T>> + '_ {
        self.pages.iter_mut().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_placed_in_order_across_pages_and_never_move() {
        let mut slots: Slots<u64> = Slots::default();
        assert_eq!((slots.len(), slots.capacity()), (0, 0));
        assert!(slots.get(0).is_none());
        let n = 2 * PAGE + 3;
        for i in 0..n {
            assert_eq!(slots.push(Some(i as u64 * 10)), i);
        }
        assert_eq!(slots.len(), n);
        assert_eq!(slots.capacity(), 3 * PAGE);
        let first_of_page = slots.get(PAGE).map(|s| s as *const Option<u64>);
        for _ in 0..PAGE {
            slots.push(None);
        }
        // A page never reallocates: an entry's address holds.
        assert_eq!(
            slots.get(PAGE).map(|s| s as *const Option<u64>),
            first_of_page
        );
        assert_eq!(slots.get(PAGE + 1), Some(&Some((PAGE as u64 + 1) * 10)));
        assert_eq!(slots.get(n), Some(&None));
        assert!(slots.get(n + PAGE).is_none());
        if let Some(slot) = slots.get_mut(5) {
            *slot = None;
        }
        assert_eq!(slots.iter().flatten().count(), n - 1);
        for slot in slots.iter_mut().flatten() {
            *slot += 1;
        }
        assert_eq!(slots.get(6), Some(&Some(61)));
        assert_eq!(slots.iter().count(), n + PAGE);
    }
}
