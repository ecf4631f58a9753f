//! Point qualifiers (column names).
//!
//! ```text
//! seconds (2 bytes):       [ offset_s : 12 bits ][ flags : 4 ]
//! milliseconds (4 bytes):  [ 1111 ][ offset_ms : 22 bits ][ 00 ][ flags : 4 ]
//! ```
//! A second offset is at most 3599, so the first nibble of a 2-byte
//! qualifier is never `F`: that is what tells the two forms apart.

/// One decoded point qualifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointQualifier {
    /// Offset from the row's base hour, in milliseconds.
    pub offset_ms: u32,
    /// Written with millisecond precision (4-byte form).
    pub ms: bool,
    pub flags: u8,
}

/// Appends the qualifier of a point at `offset_ms` into the hour. Second
/// precision writes `offset_ms / 1000` on 2 bytes.
pub fn encode_qualifier(offset_ms: u32, ms: bool, flags: u8, out: &mut Vec<u8>) {
    if ms {
        let q: u32 = 0xF000_0000 | (offset_ms << 6) | u32::from(flags & 0x0F);
        out.extend_from_slice(&q.to_be_bytes());
    } else {
        let q: u16 = (((offset_ms / 1000) as u16) << 4) | u16::from(flags & 0x0F);
        out.extend_from_slice(&q.to_be_bytes());
    }
}

/// True if the qualifier element starting with `first` is a 4-byte ms one.
pub fn is_ms(first: u8) -> bool {
    first & 0xF0 == 0xF0
}

/// Decodes one qualifier element from the front of `q` (2 or 4 bytes).
pub fn decode_one(q: &[u8]) -> Option<(PointQualifier, usize)> {
    let first = *q.first()?;
    if is_ms(first) {
        let b: [u8; 4] = q.get(..4)?.try_into().ok()?;
        let v = u32::from_be_bytes(b);
        Some((
            PointQualifier {
                offset_ms: (v & 0x0FFF_FFC0) >> 6,
                ms: true,
                flags: (v & 0x0F) as u8,
            },
            4,
        ))
    } else {
        let b: [u8; 2] = q.get(..2)?.try_into().ok()?;
        let v = u16::from_be_bytes(b);
        Some((
            PointQualifier {
                offset_ms: u32::from(v >> 4) * 1000,
                ms: false,
                flags: (v & 0x0F) as u8,
            },
            2,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(ts_raw: u64, flags: u8) -> Vec<u8> {
        let base = crate::codec::rowkey::base_time(ts_raw);
        let ms = ts_raw > u64::from(u32::MAX);
        let offset_ms = if ms {
            (ts_raw - u64::from(base) * 1000) as u32
        } else {
            ((ts_raw - u64::from(base)) * 1000) as u32
        };
        let mut out = Vec::new();
        encode_qualifier(offset_ms, ms, flags, &mut out);
        out
    }

    /// TestInternal.buildQualifier vectors (reference §1.5).
    #[test]
    fn reference_vectors() {
        assert_eq!(q(1_356_998_403, 7), [0x00, 0x37]);
        assert_eq!(q(1_357_001_999, 7), [0xE0, 0xF7]);
        for (f, want) in [
            (5, 0x35),
            (3, 0x33),
            (1, 0x31),
            (0, 0x30),
            (0xF, 0x3F),
            (0xB, 0x3B),
        ] {
            assert_eq!(q(1_356_998_403, f), [0x00, want]);
        }
        for (f, want) in [
            (5, 0xF5),
            (3, 0xF3),
            (1, 0xF1),
            (0, 0xF0),
            (0xF, 0xFF),
            (0xB, 0xFB),
        ] {
            assert_eq!(q(1_357_001_999, f), [0xE0, want]);
        }
        for (f, last) in [
            (7, 0x07),
            (5, 0x05),
            (3, 0x03),
            (1, 0x01),
            (0, 0x00),
            (0xF, 0x0F),
            (0xB, 0x0B),
        ] {
            assert_eq!(q(1_356_998_400_008, f), [0xF0, 0x00, 0x02, last]);
        }
        for (f, last) in [
            (7, 0xC7),
            (5, 0xC5),
            (3, 0xC3),
            (1, 0xC1),
            (0, 0xC0),
            (0xF, 0xCF),
        ] {
            assert_eq!(q(1_357_001_999_999, f), [0xFD, 0xBB, 0x9F, last]);
        }
        // Timestamp limits (reference §1.11).
        assert_eq!(q(4_294_967_295, 0), [0x69, 0xF0]);
        assert_eq!(q(4_294_967_296, 0), [0xF0, 0xA3, 0x60, 0x00]);
        assert_eq!(q(4_294_967_295_000, 0), [0xF6, 0x77, 0x46, 0x00]);
    }

    #[test]
    fn decoding_vectors() {
        let (p, n) = decode_one(&[0xF0, 0x00, 0x02, 0x07]).unwrap();
        assert_eq!((p.offset_ms, p.ms, p.flags, n), (8, true, 7, 4));
        let (p, n) = decode_one(&[0x00, 0x37]).unwrap();
        assert_eq!((p.offset_ms, p.ms, p.flags, n), (3000, false, 7, 2));
        let (p, _) = decode_one(&[0x00, 0x1B]).unwrap();
        assert_eq!(p.flags, 11);
        assert!(decode_one(&[0xF0, 0x00]).is_none());
    }
}
