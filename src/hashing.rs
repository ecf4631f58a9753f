//! Hashing of byte keys for in-memory maps (series keys, raw series text):
//! xxh3 of the whole key in one call, instead of SipHash's per-byte rounds
//! or a streaming hasher's state. Not for keys an attacker chooses to
//! collide on purpose without bound: every map using it is bounded.

mod digest_table;

pub use digest_table::DigestTable;

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

    /// A `u128` key is a [`TextDigest`] ([`DigestMap`]): its bits are
    /// already uniform, so its low 64 serve as they are.
    fn write_u128(&mut self, n: u128) {
        self.0 ^= n as u64;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by bytes, hashed with [`KeyHasher`].
pub type BytesMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// A 128-bit digest of a series' text, seeded per process: the engine's
/// series cache is keyed by it instead of the text (16 bytes a series
/// instead of an allocation of the text). The seed is random, so texts
/// cannot be chosen ahead to collide; by chance, two of a billion series
/// collide with a probability below 10⁻²¹.
#[derive(Debug, Clone, Copy)]
pub struct TextDigest {
    seed: u64,
}

impl TextDigest {
    /// A digest with a random seed (a fixed one if the system has no
    /// random source: still collision-free by chance).
    pub fn random() -> Self {
        TextDigest {
            seed: random_seed(),
        }
    }

    pub fn of(&self, text: &str) -> u128 {
        self.of_bytes(text.as_bytes())
    }

    /// The digest of raw bytes (a series' text as a client sent it).
    pub fn of_bytes(&self, bytes: &[u8]) -> u128 {
        xxhash_rust::xxh3::xxh3_128_with_seed(bytes, self.seed)
    }
}

/// A map keyed by [`TextDigest`]s.
pub type DigestMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

/// A random hash seed (a fixed one if the system has no random source).
pub fn random_seed() -> u64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => 0x9e37_79b9_7f4a_7c15,
    }
}
