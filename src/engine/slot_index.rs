//! An open-addressing index of series slot ids: the series registry's
//! lookup by series key and by series-text digest. The table holds bare
//! `u32` ids (plus hashbrown's control byte: 5 bytes a bucket); a probe
//! compares the candidate's entry through the caller's closure, and growth
//! rehashes through it, so no key is stored twice.

use hashbrown::HashTable;

/// Slot ids found by a hash and an equality on the slot's entry.
#[derive(Debug, Default)]
pub struct SlotIndex {
    table: HashTable<u32>,
}

impl SlotIndex {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Bytes the table holds (buckets and control bytes).
    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * (std::mem::size_of::<u32>() + 1)
    }

    /// The id with hash `hash` whose entry `is` accepts.
    pub fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.table.find(hash, |&id| is(id)).copied()
    }

    /// Adds `id` under `hash`; `hash_of` gives the hash of any id already
    /// in the table (to move them when the table grows).
    pub fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        self.table.insert_unique(hash, id, |&other| hash_of(other));
    }

    /// Removes `id` (filed under `hash`); false if it was not there.
    pub fn remove(&mut self, hash: u64, id: u32) -> bool {
        match self.table.find_entry(hash, |&other| other == id) {
            Ok(entry) => {
                entry.remove();
                true
            }
            Err(_) => false,
        }
    }

    pub fn clear(&mut self) {
        self.table.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_insert_remove_and_grow() {
        // Keys are the ids' squares; a weak hash makes collisions common.
        let hash = |id: u32| u64::from(id * id) % 7;
        let mut index = SlotIndex::default();
        for id in 0..1000u32 {
            index.insert(hash(id), id, hash);
        }
        assert_eq!(index.len(), 1000);
        for id in (0..1000u32).step_by(37) {
            assert_eq!(index.find(hash(id), |other| other == id), Some(id));
        }
        assert!(index.remove(hash(5), 5));
        assert!(!index.remove(hash(5), 5));
        assert_eq!(index.find(hash(5), |other| other == 5), None);
        assert_eq!(index.len(), 999);
        assert!(index.heap_bytes() >= 999 * 5);
    }
}
