//! Hashing of byte keys for in-memory maps (series keys, raw series text):
//! xxh3 of the whole key in one call, instead of SipHash's per-byte rounds
//! or a streaming hasher's state. Not for keys an attacker chooses to
//! collide on purpose without bound: every map using it is bounded.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// xxh3 of a byte key in one call (a `[u8]` key hashes its length, then its
/// bytes).
#[derive(Default, Debug, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }

    fn write_usize(&mut self, n: usize) {
        self.0 ^= n as u64;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by bytes, hashed with [`KeyHasher`].
pub type BytesMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;
