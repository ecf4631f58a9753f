//! Bloom filters of table files: one over whole row keys (point reads such
//! as UID lookups and single-row gets skip files that cannot hold the row)
//! and one over row-key prefixes (a data scan of one metric in one salt
//! bucket skips files without that metric).
//!
//! ```text
//! filter := k u8 | nbits u32 LE | bits[ceil(nbits / 8)]
//! ```
//! Keys are hashed once with xxh3-64; the `k` probes are derived by double
//! hashing (Kirsch–Mitzenmacher), so building and probing cost one hash per
//! key. An empty filter (nbits = 0) answers "maybe" to everything.

use xxhash_rust::xxh3::xxh3_64;

/// Probes per key for `bits_per_key`: `bits_per_key · ln 2`, at least 1.
fn probes(bits_per_key: usize) -> u8 {
    ((bits_per_key as f64 * std::f64::consts::LN_2).round() as usize).clamp(1, 30) as u8
}

/// The hash a filter is built from and probed with.
pub fn key_hash(key: &[u8]) -> u64 {
    xxh3_64(key)
}

/// Builds a filter over `hashes` at `bits_per_key` bits each.
pub fn build(hashes: &[u64], bits_per_key: usize, out: &mut Vec<u8>) {
    if hashes.is_empty() || bits_per_key == 0 {
        out.push(1);
        out.extend_from_slice(&0u32.to_le_bytes());
        return;
    }
    let k = probes(bits_per_key);
    // Keep tiny filters useful: at least 64 bits.
    let nbits = (hashes.len().saturating_mul(bits_per_key)).clamp(64, u32::MAX as usize - 7) as u32;
    let mut bits = vec![0u8; (nbits as usize).div_ceil(8)];
    for &h in hashes {
        for bit in positions(h, k, nbits) {
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    out.push(k);
    out.extend_from_slice(&nbits.to_le_bytes());
    out.extend_from_slice(&bits);
}

fn positions(h: u64, k: u8, nbits: u32) -> impl Iterator<Item = u32> {
    let h1 = h as u32;
    let h2 = ((h >> 32) as u32) | 1;
    (0..u32::from(k)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % nbits)
}

/// A filter read from a table file.
#[derive(Debug, Clone, Default)]
pub struct Bloom {
    k: u8,
    nbits: u32,
    bits: Vec<u8>,
}

impl Bloom {
    /// Parses a filter from the front of `buf`; returns it and the bytes
    /// used. `None` if `buf` is malformed.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let k = *buf.first()?;
        let nbits = u32::from_le_bytes(buf.get(1..5)?.try_into().ok()?);
        let len = (nbits as usize).div_ceil(8);
        let bits = buf.get(5..5 + len)?.to_vec();
        if k == 0 || k > 30 {
            return None;
        }
        Some((Self { k, nbits, bits }, 5 + len))
    }

    /// False only if the key was certainly not added.
    pub fn may_contain(&self, hash: u64) -> bool {
        if self.nbits == 0 {
            return true;
        }
        positions(hash, self.k, self.nbits)
            .all(|bit| self.bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    pub fn heap_bytes(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<u64> = (0u32..10_000).map(|i| key_hash(&i.to_be_bytes())).collect();
        let mut buf = Vec::new();
        build(&keys, 10, &mut buf);
        let (bloom, used) = Bloom::parse(&buf).unwrap();
        assert_eq!(used, buf.len());
        assert!(keys.iter().all(|&h| bloom.may_contain(h)));
        let fp = (10_000u32..110_000)
            .filter(|i| bloom.may_contain(key_hash(&i.to_be_bytes())))
            .count();
        // 10 bits per key: about 1% false positives.
        assert!(fp < 2_000, "{fp} false positives in 100000");
    }

    #[test]
    fn empty_and_malformed() {
        let mut buf = Vec::new();
        build(&[], 10, &mut buf);
        let (bloom, _) = Bloom::parse(&buf).unwrap();
        assert!(bloom.may_contain(42));
        assert!(Bloom::parse(&[7, 255, 255, 255, 255]).is_none());
        assert!(Bloom::parse(&[]).is_none());
        assert!(Bloom::parse(&[0, 8, 0, 0, 0, 0]).is_none());
    }
}
