//! LEB128 varints and zigzag: the integer coding of every byte format of
//! hourglass (native cells, the WAL's records, head checkpoints, the store
//! log, table-file entries, the series index). One writer, one decoder, and
//! a bounds-checked cursor over untrusted bytes.

/// Maps signed to unsigned so that small magnitudes get small codes
/// (0, -1, 1, -2, … → 0, 1, 2, 3, …).
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Appends `v` as LEB128 (7 bits per byte, low group first).
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes `v` as LEB128 at the front of `out` (at least [`len`]`(v)`
/// bytes long); returns the bytes written.
#[inline]
pub fn put_slice(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

/// Bytes [`put`] writes for `v`.
#[inline]
pub fn len(v: u64) -> usize {
    // 1 + floor(bits / 7), with 0 taking one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Decodes the LEB128 value at `buf[pos..]`: the value and the position
/// after it, or `None` if it is cut short or does not fit 64 bits (at most
/// 10 bytes, the tenth at most 1).
#[inline]
pub fn decode(buf: &[u8], mut pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(pos)?;
        pos += 1;
        if i == 9 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, pos));
        }
    }
    None
}

/// A cursor over encoded bytes; every read is bounds-checked and a short
/// or malformed read is `None`.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// A cursor at `pos` of `buf`.
    pub fn at(buf: &'a [u8], pos: usize) -> Self {
        Self { buf, pos }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub fn varint(&mut self) -> Option<u64> {
        let (v, next) = decode(self.buf, self.pos)?;
        self.pos = next;
        Some(v)
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.take(n)
    }

    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub fn u64_le(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub fn u32_le(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn position(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, v);
            assert_eq!(b.len(), len(v), "{v}");
            let mut fixed = [0u8; 10];
            let n = put_slice(&mut fixed, v);
            assert_eq!(&fixed[..n], &b[..]);
            let mut r = Reader::new(&b);
            assert_eq!(r.varint(), Some(v));
            assert!(r.is_empty());
        }
        let over: Vec<u8> = [0xFF; 9].iter().copied().chain([0x02]).collect();
        assert_eq!(decode(&over, 0), None);
        assert_eq!(decode(&[0x80], 0), None);
        assert_eq!(Reader::new(&[0xFF; 11]).varint(), None);
        let mut r = Reader::new(b"\x03abcd");
        assert_eq!(r.bytes(), Some(&b"abc"[..]));
        assert_eq!(r.bytes(), None);
    }
}
