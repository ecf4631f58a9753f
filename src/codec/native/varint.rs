//! Byte-level primitives of the native cell format: the tail's prefix varint
//! (LEB128 and zigzag are [`crate::codec::varint`]'s), and a bounds-checked reader that turns every
//! short read into [`NativeError::Corrupt`] instead of a panic.

use super::error::NativeError;

pub(crate) use crate::codec::varint::{
    len as uvarint_len, put as put_uvarint, put_slice as put_uvarint_slice, unzigzag, zigzag,
};

// Prefix varint of the Chunk tail: the first byte says how long the code is,
// so small values (< 240, e.g. every zigzag delta of a two-decimal random walk
// with steps ≤ ±1.00) take one byte where LEB128 would take two, and 0xFF is
// free to mark an escape record.
const PV_ONE_MAX: u64 = 0xEF; // 0x00..=0xEF: the value itself
const PV_TWO_BASE: u64 = 0xF0; // 0xF0..=0xF7: 240 + (b0 & 7) << 8 | b1
const PV_TWO_MAX: u64 = PV_TWO_BASE + 0x7FF;
/// First byte of an escape record in the Chunk tail (never starts a prefix varint).
pub(crate) const PV_ESCAPE: u8 = 0xFF;
/// First byte of a run record in the Chunk tail (never starts a prefix varint).
pub(crate) const PV_RUN: u8 = 0xFE;

/// Writes `v` as a prefix varint (1–9 bytes, never starting with 0xFE or 0xFF) at
/// the front of `out` (at least 9 bytes long); returns the length.
#[inline]
pub(crate) fn put_pvarint(out: &mut [u8], v: u64) -> usize {
    if v <= PV_ONE_MAX {
        out[0] = v as u8;
        1
    } else if v <= PV_TWO_MAX {
        let r = v - PV_TWO_BASE;
        out[0] = 0xF0 | (r >> 8) as u8;
        out[1] = r as u8;
        2
    } else {
        // 0xF8..=0xFC: 2..=6 little-endian bytes follow; 0xFD: 8 bytes.
        let nbytes = (8 - (v.leading_zeros() / 8) as usize).max(2);
        let nbytes = if nbytes > 6 { 8 } else { nbytes };
        out[0] = if nbytes == 8 {
            0xFD
        } else {
            0xF6 + nbytes as u8
        };
        out[1..=nbytes].copy_from_slice(&v.to_le_bytes()[..nbytes]);
        1 + nbytes
    }
}

/// A cursor over untrusted bytes. Every accessor checks bounds and reports
/// the byte offset of the failure.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Reader { buf, pos }
    }

    #[inline]
    pub(crate) fn corrupt(&self, reason: &'static str) -> NativeError {
        NativeError::Corrupt {
            offset: self.pos,
            reason,
        }
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    #[inline]
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, NativeError> {
        let b = *self.buf.get(self.pos).ok_or_else(|| self.corrupt(what))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], NativeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.corrupt(what))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.corrupt(what))?;
        self.pos = end;
        Ok(s)
    }

    /// LEB128 ([`crate::codec::varint::decode`]).
    #[inline]
    pub(crate) fn uvarint(&mut self, what: &'static str) -> Result<u64, NativeError> {
        let (v, next) =
            crate::codec::varint::decode(self.buf, self.pos).ok_or_else(|| self.corrupt(what))?;
        self.pos = next;
        Ok(v)
    }

    #[inline]
    pub(crate) fn ivarint(&mut self, what: &'static str) -> Result<i64, NativeError> {
        self.uvarint(what).map(unzigzag)
    }

    #[inline]
    pub(crate) fn u64_le(&mut self, what: &'static str) -> Result<u64, NativeError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    #[inline]
    pub(crate) fn u32_le(&mut self, what: &'static str) -> Result<u32, NativeError> {
        let s = self.take(4, what)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(s);
        Ok(u32::from_le_bytes(a))
    }

    /// A prefix varint (see [`put_pvarint`]); the caller handles 0xFF.
    #[inline]
    pub(crate) fn pvarint(&mut self, what: &'static str) -> Result<u64, NativeError> {
        let b0 = self.u8(what)?;
        match b0 {
            0x00..=0xEF => Ok(u64::from(b0)),
            0xF0..=0xF7 => {
                let b1 = self.u8(what)?;
                Ok(PV_TWO_BASE + ((u64::from(b0 & 7) << 8) | u64::from(b1)))
            }
            0xF8..=0xFD => {
                let n = if b0 == 0xFD {
                    8
                } else {
                    usize::from(b0 - 0xF6)
                };
                let s = self.take(n, what)?;
                let mut a = [0u8; 8];
                a[..n].copy_from_slice(s);
                Ok(u64::from_le_bytes(a))
            }
            _ => Err(self.corrupt(what)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_round_trips_and_rejects_overflow() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            put_uvarint(&mut b, v);
            assert_eq!(b.len(), uvarint_len(v), "{v}");
            let mut r = Reader::new(&b, 0);
            assert_eq!(r.uvarint("v").unwrap(), v);
            assert!(r.at_end());
        }
        let over = [0xFF; 9].iter().copied().chain([0x02]).collect::<Vec<_>>();
        assert!(Reader::new(&over, 0).uvarint("v").is_err());
        assert!(Reader::new(&[0x80], 0).uvarint("v").is_err());
    }

    #[test]
    fn pvarint_round_trips_and_never_starts_with_escape() {
        for v in [
            0,
            200,
            239,
            240,
            2287,
            2288,
            65535,
            1 << 40,
            1 << 50,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut b = [0u8; 9];
            let n = put_pvarint(&mut b, v);
            let b = &b[..n];
            assert!(b[0] != PV_ESCAPE && b[0] != PV_RUN);
            let mut r = Reader::new(b, 0);
            assert_eq!(r.pvarint("v").unwrap(), v, "{v}");
            assert!(r.at_end());
        }
        assert_eq!(put_pvarint(&mut [0u8; 9], 200), 1);
    }
}
