//! Salt computation, as OpenTSDB's `RowKey.prefixKeyWithSalt` does it.
//!
//! The salt spreads series over `buckets` key ranges so that writes are not
//! concentrated on one region. It hashes the metric UID and the tag bytes but
//! never the timestamp, so a series always lands in the same bucket.

/// Java's `Arrays.hashCode(byte[])`: seed 1, `h = 31*h + (signed byte)`,
/// wrapping 32-bit arithmetic.
pub fn java_bytes_hash<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> i32 {
    let mut h: i32 = 1;
    for part in parts {
        for &b in part {
            h = h.wrapping_mul(31).wrapping_add(i32::from(b as i8));
        }
    }
    h
}

/// The salt bucket of a series: Java remainder of the hash, negated when
/// negative.
pub fn bucket(metric: &[u8], tags: &[u8], buckets: u32) -> u32 {
    let h = java_bytes_hash([metric, tags]);
    // `buckets` is validated to be in 1..=i32::MAX at config load.
    let m = i32::try_from(buckets.max(1)).unwrap_or(i32::MAX);
    (h % m).unsigned_abs()
}

/// Writes `bucket` big-endian into `out` (the low-order bytes of the int, as
/// OpenTSDB's `getSaltBytes`).
pub fn write_salt(bucket: u32, out: &mut [u8]) {
    let be = u64::from(bucket).to_be_bytes();
    let n = out.len().min(8);
    let start = out.len() - n;
    out[start..].copy_from_slice(&be[8 - n..]);
    for b in &mut out[..start] {
        *b = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::codec::hex;

    /// Keys from reference §1.3 (TestRowKey), salt byte first, width 1,
    /// 20 buckets. The salt hashes metric ‖ bytes after the timestamp.
    #[test]
    fn reference_vectors() {
        let cases = [
            ("00 000001 50E22700 000001 000001", 0x08),
            ("00 000001 50E22700 000001 000001 000001 000001", 0x10),
            (
                "00 000001 50E22700 000001 000001 000001 000001 000001 000001",
                0x00,
            ),
            ("00 000001 50E22700 000001 000002", 0x09),
            ("00 000001 50E22700 000001 000001 000002 000003", 0x03),
            ("00 000001 50E22700 00", 0x0C),
            ("00 000002 50E22700 000001 000001", 0x09),
            ("00 000003 50E22700 000001 000001", 0x06),
            ("00 0B1420 50E22700 000001 000001", 0x06),
            ("00 000001 50E23510 000001 000001", 0x08),
            ("00 000001 510B1390 000001 000001", 0x08),
            ("00 000001 00000000 000001 000001", 0x08),
            ("00 000001 50E22700 000001", 0x0D),
        ];
        for (key, want) in cases {
            let k = hex(key);
            let metric = &k[1..4];
            let tags = &k[8..];
            assert_eq!(bucket(metric, tags, 20), want, "key {key}");
        }
    }

    #[test]
    fn salt_bytes_width() {
        let mut two = [0xFFu8; 2];
        write_salt(20, &mut two);
        assert_eq!(two, [0x00, 0x14]);
        let mut four = [0xFFu8; 4];
        write_salt(20, &mut four);
        assert_eq!(four, [0, 0, 0, 0x14]);
        let mut one = [0u8; 1];
        write_salt(8, &mut one);
        assert_eq!(one, [8]);
    }
}
