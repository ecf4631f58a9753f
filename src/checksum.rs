//! The checksum of every on-disk byte range (WAL and store-log frames,
//! table-file blocks, index, bloom filters and metadata): xxh3-64.
//!
//! Under `cfg(fuzzing)` (set by `cargo fuzz` for every crate it builds)
//! [`matches`] accepts any checksum, so the fuzz targets in `tests/fuzz`
//! reach the parsers behind the checksums instead of stopping at the first
//! one; a fuzzer cannot forge xxh3. Release and test builds never set it.

use xxhash_rust::xxh3::xxh3_64;

/// The checksum of `bytes`.
pub fn of(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

/// Whether `bytes` have the checksum `expected`.
pub fn matches(bytes: &[u8], expected: u64) -> bool {
    cfg!(fuzzing) || xxh3_64(bytes) == expected
}

/// Whether `bytes` have the 32-bit header check `expected` (the low half of
/// their xxh3-64).
pub fn matches_low32(bytes: &[u8], expected: u32) -> bool {
    cfg!(fuzzing) || xxh3_64(bytes) as u32 == expected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_bit_does_not_match() {
        let data = b"hourglass".to_vec();
        let sum = of(&data);
        assert!(matches(&data, sum));
        let mut bad = data.clone();
        bad[3] ^= 1;
        assert!(!matches(&bad, sum));
        assert!(matches_low32(&data, sum as u32));
        assert!(!matches_low32(&bad, sum as u32));
    }
}
