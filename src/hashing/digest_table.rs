//! [`DigestTable`]: an open-addressing table from a [`TextDigest`](super::TextDigest)
//! to a `u32`, whose slot for a key can be asked of memory ahead of the
//! lookup ([`DigestTable::prefetch`]).
//!
//! A line-protocol connection looks its series up once per line, with
//! thousands of instructions of parsing between two lookups: the CPU cannot
//! overlap one lookup's cache miss with the next, and a table of a few
//! hundred thousand series (tens of MB) misses on nearly every line. A
//! connection that knows its next line's key prefetches its slot while it
//! handles the current line; `HashMap` has no way to name the slot a key
//! will probe, so the table is our own.
//!
//! Linear probing over 32-byte slots (a slot never straddles a cache line),
//! at most three quarters full, indexed by the digest's low bits (a digest
//! is uniform already). No removal: the one user clears the table whole.

/// A slot: a digest and its value; `value == EMPTY` marks it free. Aligned
/// to its size, so that no slot straddles a cache line whatever the
/// allocator hands out.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Slot {
    digest: u128,
    value: u32,
}

const EMPTY: u32 = u32::MAX;
const FREE: Slot = Slot {
    digest: 0,
    value: EMPTY,
};
/// Slots of the first allocation.
const FIRST_CAPACITY: usize = 1024;

/// Digest → `u32` (any value but `u32::MAX`).
#[derive(Default)]
pub struct DigestTable {
    slots: Vec<Slot>,
    len: usize,
}

impl std::fmt::Debug for DigestTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestTable")
            .field("len", &self.len)
            .field("capacity", &self.slots.len())
            .finish()
    }
}

impl DigestTable {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the table holds (its slots).
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    fn home(&self, digest: u128) -> usize {
        // The length is a power of two; the digest's bits are uniform.
        (digest as u64 as usize) & (self.slots.len() - 1)
    }

    pub fn get(&self, digest: u128) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(digest);
        loop {
            let slot = &self.slots[at];
            if slot.value == EMPTY {
                return None;
            }
            if slot.digest == digest {
                return Some(slot.value);
            }
            at = (at + 1) & mask;
        }
    }

    /// Asks memory for the slot `digest` starts probing at, without waiting
    /// for it: a later [`DigestTable::get`] of it then finds it in cache.
    pub fn prefetch(&self, digest: u128) {
        if !self.slots.is_empty() {
            prefetch_line(&self.slots[self.home(digest)]);
        }
    }

    /// Sets `digest`'s value (replacing one it had). `value` must not be
    /// `u32::MAX`.
    pub fn insert(&mut self, digest: u128, value: u32) {
        debug_assert_ne!(value, EMPTY);
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(digest);
        loop {
            let slot = &mut self.slots[at];
            if slot.value == EMPTY {
                *slot = Slot { digest, value };
                self.len += 1;
                return;
            }
            if slot.digest == digest {
                slot.value = value;
                return;
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(FIRST_CAPACITY);
        let old = std::mem::replace(&mut self.slots, vec![FREE; capacity]);
        self.len = 0;
        for slot in old.into_iter().filter(|s| s.value != EMPTY) {
            self.insert(slot.digest, slot.value);
        }
    }

    /// Empties the table and gives its memory back.
    pub fn clear(&mut self) {
        self.slots = Vec::new();
        self.len = 0;
    }
}

/// A prefetch of the cache line holding `slot` into every cache level.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn prefetch_line(slot: &Slot) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: a prefetch is a hint that never faults, whatever the address
    // (here a live reference); SSE, which it needs, is part of every
    // x86_64 CPU.
    unsafe { _mm_prefetch::<_MM_HINT_T0>((slot as *const Slot).cast::<i8>()) }
}

/// Elsewhere a prefetch is left to the hardware.
#[cfg(not(target_arch = "x86_64"))]
fn prefetch_line(_slot: &Slot) {}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn agrees_with_a_map_through_growth_and_collisions() {
        let mut table = DigestTable::default();
        let mut model = HashMap::new();
        assert_eq!(table.get(7), None);
        table.prefetch(7);
        // Digests that share their low bits probe past each other; the
        // rest spread as real digests do.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let digest = if i % 3 == 0 {
                (u128::from(i) << 64) | 5
            } else {
                (u128::from(state) << 64) | u128::from(state.rotate_left(17))
            };
            table.insert(digest, i);
            model.insert(digest, i);
            if i % 1000 == 0 {
                // Replacing keeps one entry.
                table.insert(digest, i + 1);
                model.insert(digest, i + 1);
            }
        }
        assert_eq!(table.len(), model.len());
        for (&digest, &value) in &model {
            table.prefetch(digest);
            assert_eq!(table.get(digest), Some(value));
        }
        assert_eq!(table.get(u128::MAX), None);
        assert_eq!(table.get((1u128 << 70) | 5), None);
        assert!(table.slots.len().is_power_of_two());
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert!(table.len() * 4 <= table.slots.len() * 3);
        table.clear();
        assert!(table.is_empty());
        assert_eq!(table.get(5), None);
        assert_eq!(table.bytes(), 0);
    }
}
