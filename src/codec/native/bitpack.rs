//! Bit-packing of one block's integers at a fixed width (frame-of-reference
//! output), and the LSB-first bit stream used by the XOR value mode.
//!
//! Bits are little-endian: value `i` occupies bits `i·w .. (i+1)·w` of the
//! section, bit 0 being the low bit of byte 0. At width 8 every value is
//! exactly one byte, which keeps zstd's Huffman stage effective on the
//! common two-decimal gauges (see `docs/format/native-cell.md`).

use super::error::NativeError;
use super::varint::Reader;

/// Most values one block holds (and so one packed section).
pub(crate) const BLOCK: usize = 128;

/// Bits needed to hold `max` (0 for 0).
#[inline]
pub(crate) fn width_of(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// Bytes of `n` values packed at width `w`.
#[inline]
pub(crate) fn packed_len(n: usize, w: u8) -> usize {
    (n * usize::from(w)).div_ceil(8)
}

/// Appends `vals` packed at width `w`. Every value must fit in `w` bits.
pub(crate) fn pack(vals: &[u64], w: u8, out: &mut Vec<u8>) {
    match w {
        0 => {}
        8 => out.extend(vals.iter().map(|&v| v as u8)),
        64 => {
            for &v in vals {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            let w = u32::from(w);
            let mut acc: u128 = 0;
            let mut nbits = 0u32;
            for &v in vals {
                acc |= u128::from(v) << nbits;
                nbits += w;
                while nbits >= 8 {
                    out.push(acc as u8);
                    acc >>= 8;
                    nbits -= 8;
                }
            }
            if nbits > 0 {
                out.push(acc as u8);
            }
        }
    }
}

// Largest packed section plus slack for the 16-byte window reads below.
const SCRATCH: usize = BLOCK * 8 + 16;

/// Reads `out.len()` (≤ [`BLOCK`]) values of width `w` from `r`.
pub(crate) fn unpack(
    r: &mut Reader<'_>,
    w: u8,
    out: &mut [u64],
    what: &'static str,
) -> Result<(), NativeError> {
    let n = out.len();
    if w > 64 || n > BLOCK {
        return Err(r.corrupt(what));
    }
    let src = r.take(packed_len(n, w), what)?;
    match w {
        0 => out.fill(0),
        8 => {
            for (o, &b) in out.iter_mut().zip(src) {
                *o = u64::from(b);
            }
        }
        16 => {
            for (o, c) in out.iter_mut().zip(src.chunks_exact(2)) {
                *o = u64::from(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        _ => {
            // Copy into a zero-padded window so every read is an 8- or
            // 16-byte load with no per-value bounds juggling.
            let mut buf = [0u8; SCRATCH];
            buf[..src.len()].copy_from_slice(src);
            let wu = usize::from(w);
            let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            if w <= 56 {
                for (i, o) in out.iter_mut().enumerate() {
                    let bit = i * wu;
                    let byte = bit >> 3;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(&buf[byte..byte + 8]);
                    *o = (u64::from_le_bytes(a) >> (bit & 7)) & mask;
                }
            } else {
                for (i, o) in out.iter_mut().enumerate() {
                    let bit = i * wu;
                    let byte = bit >> 3;
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&buf[byte..byte + 16]);
                    *o = ((u128::from_le_bytes(a) >> (bit & 7)) as u64) & mask;
                }
            }
        }
    }
    Ok(())
}

// Mixed-radix packing. Values below a range `r` that is not a power of two
// waste up to a bit each at a binary width; packing them three to a word
// (`u0 + r·u1 + r²·u2`, at the width of `r³ − 1`) loses less than a third of
// a bit. The decoder splits words with a multiply by a precomputed inverse,
// exact because words stay below `r³ ≤ 2^48` and `r ≤ 2^16`.

/// Largest radix the mixed-radix packing accepts.
pub(crate) const MAX_RADIX: u64 = 1 << 16;

/// Bits of a word holding `j` (1..=3) values below `r`.
#[inline]
pub(crate) fn radix_word_bits(r: u64, j: usize) -> u32 {
    let mut m = 1u64;
    for _ in 0..j {
        m *= r;
    }
    u32::from(width_of(m - 1))
}

/// The largest radix whose three-value words are as wide as `range`'s: the
/// encoder stores it instead of `range` itself, so later blocks with a
/// slightly wider range still fit (and inherit the parameters) for free.
pub(crate) fn radix_headroom(range: u64) -> u64 {
    let bits = radix_word_bits(range, 3);
    let cap = (1u64 << bits) - 1;
    let mut r = (cap as f64).cbrt() as u64;
    while r > 0 && r * r * r > cap {
        r -= 1;
    }
    while (r + 1) * (r + 1) * (r + 1) <= cap {
        r += 1;
    }
    r.clamp(range, MAX_RADIX)
}

/// Bytes of `n` values below `r` packed three to a word.
pub(crate) fn radix_len(n: usize, r: u64) -> usize {
    let full = n / 3;
    let rest = n % 3;
    let bits = full * radix_word_bits(r, 3) as usize
        + if rest > 0 {
            radix_word_bits(r, rest) as usize
        } else {
            0
        };
    bits.div_ceil(8)
}

/// Appends `vals` (each below `r`, 2 ≤ r ≤ [`MAX_RADIX`]) packed three to a word.
pub(crate) fn pack_radix(vals: &[u64], r: u64, out: &mut Vec<u8>) {
    let b3 = radix_word_bits(r, 3);
    let mut w = BitWriter::new(out);
    for g in vals.chunks(3) {
        let word = g.iter().rev().fold(0u64, |acc, &v| acc * r + v);
        let bits = if g.len() == 3 {
            b3
        } else {
            radix_word_bits(r, g.len())
        };
        w.write(word, bits);
    }
    w.finish();
}

/// Reads `out.len()` (≤ [`BLOCK`]) values packed by [`pack_radix`].
pub(crate) fn unpack_radix(
    rd: &mut Reader<'_>,
    r: u64,
    out: &mut [u64],
    what: &'static str,
) -> Result<(), NativeError> {
    if !(2..=MAX_RADIX).contains(&r) || out.len() > BLOCK {
        return Err(rd.corrupt(what));
    }
    let src = rd.take(radix_len(out.len(), r), what)?;
    // Words are at most 48 bits (r³ ≤ 2^48): one 8-byte window read each,
    // from a zero-padded copy.
    let mut buf = [0u8; SCRATCH];
    buf[..src.len()].copy_from_slice(src);
    // ⌈2^64 / r⌉: q = (word · inv) >> 64 is word / r for every word < 2^64 / r.
    let inv = u128::from(u64::MAX / r + 1);
    let (b3, r3) = (radix_word_bits(r, 3), r * r * r);
    let mut bit = 0usize;
    for g in out.chunks_mut(3) {
        let j = g.len();
        let (bits, lim) = if j == 3 {
            (b3, r3)
        } else {
            (radix_word_bits(r, j), r.pow(j as u32))
        };
        let byte = bit >> 3;
        let mut a = [0u8; 8];
        a.copy_from_slice(&buf[byte..byte + 8]);
        let mut word = (u64::from_le_bytes(a) >> (bit & 7)) & ((1u64 << bits) - 1);
        bit += bits as usize;
        if word >= lim {
            return Err(rd.corrupt("radix word out of range"));
        }
        for o in g.iter_mut() {
            let q = ((u128::from(word) * inv) >> 64) as u64;
            *o = word - q * r;
            word = q;
        }
    }
    Ok(())
}

/// Appends bits LSB-first; [`BitWriter::finish`] pads the last byte with zeros.
#[derive(Debug)]
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl<'a> BitWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            nbits: 0,
        }
    }

    /// Writes the low `bits` (0..=64) bits of `v`.
    #[inline]
    pub(crate) fn write(&mut self, v: u64, bits: u32) {
        if bits == 0 {
            return;
        }
        let v = if bits == 64 {
            v
        } else {
            v & ((1u64 << bits) - 1)
        };
        if self.nbits + bits <= 64 {
            if self.nbits < 64 {
                self.acc |= v << self.nbits;
            }
            self.nbits += bits;
        } else {
            let room = 64 - self.nbits;
            self.acc |= v << self.nbits;
            self.flush_full();
            self.acc = v >> room;
            self.nbits = bits - room;
        }
        if self.nbits == 64 {
            self.flush_full();
            self.acc = 0;
            self.nbits = 0;
        }
    }

    #[inline]
    fn flush_full(&mut self) {
        self.out.extend_from_slice(&self.acc.to_le_bytes());
    }

    pub(crate) fn finish(self) {
        let bytes = self.nbits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
    }
}

/// Reads bits LSB-first from a byte slice; never reads past its end.
#[derive(Debug)]
pub(crate) struct BitReader<'a> {
    buf: &'a [u8],
    bit: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        BitReader { buf, bit: 0 }
    }

    /// Bytes touched so far (the section length once decoding is done).
    pub(crate) fn bytes_used(&self) -> usize {
        self.bit.div_ceil(8)
    }

    /// Reads `bits` (0..=64) bits; `None` past the end of the slice.
    #[inline]
    pub(crate) fn read(&mut self, bits: u32) -> Option<u64> {
        if bits == 0 {
            return Some(0);
        }
        let end = self.bit.checked_add(bits as usize)?;
        if end > self.buf.len() * 8 {
            return None;
        }
        let byte = self.bit >> 3;
        let sh = (self.bit & 7) as u32;
        // Up to 9 bytes hold the window; copy what exists.
        let mut a = [0u8; 16];
        let avail = (self.buf.len() - byte).min(16);
        a[..avail].copy_from_slice(&self.buf[byte..byte + avail]);
        let v = (u128::from_le_bytes(a) >> sh) as u64;
        self.bit = end;
        Some(if bits == 64 {
            v
        } else {
            v & ((1u64 << bits) - 1)
        })
    }

    #[inline]
    pub(crate) fn bit(&mut self) -> Option<bool> {
        self.read(1).map(|b| b == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_every_width() {
        for w in 0..=64u8 {
            for n in [0usize, 1, 7, 8, 9, 127, 128] {
                let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                let vals: Vec<u64> = (0..n as u64)
                    .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) & mask)
                    .collect();
                let mut b = vec![0xAA];
                pack(&vals, w, &mut b);
                assert_eq!(b.len(), 1 + packed_len(n, w), "w={w} n={n}");
                let mut r = Reader::new(&b, 1);
                let mut got = vec![0u64; n];
                unpack(&mut r, w, &mut got, "t").unwrap();
                assert_eq!(got, vals, "w={w} n={n}");
                assert!(r.at_end());
            }
        }
    }

    #[test]
    fn unpack_short_input_is_an_error() {
        let b = [1u8, 2, 3];
        let mut out = [0u64; 8];
        assert!(unpack(&mut Reader::new(&b, 0), 7, &mut out, "t").is_err());
        assert!(unpack(&mut Reader::new(&b, 0), 65, &mut out[..1], "t").is_err());
    }

    #[test]
    fn radix_round_trips_and_divides_exactly() {
        for r in [
            2u64, 3, 5, 100, 101, 201, 255, 257, 401, 1000, 65_535, 65_536,
        ] {
            for n in [0usize, 1, 2, 3, 4, 5, 127, 128] {
                let vals: Vec<u64> = (0..n as u64)
                    .map(|i| {
                        if i % 5 == 0 {
                            r - 1
                        } else {
                            i.wrapping_mul(0x9E37_79B9) % r
                        }
                    })
                    .collect();
                let mut b = Vec::new();
                pack_radix(&vals, r, &mut b);
                assert_eq!(b.len(), radix_len(n, r));
                let mut got = vec![0u64; n];
                unpack_radix(&mut Reader::new(&b, 0), r, &mut got, "t").unwrap();
                assert_eq!(got, vals, "r={r} n={n}");
            }
        }
        assert_eq!(radix_len(127, 401), (42 * 26 + 9usize).div_ceil(8));
        // The inverse multiply equals division for every word below r³.
        for r in [3u64, 7, 201, 401, 1001, 40_000, 65_536] {
            let inv = u128::from(u64::MAX / r + 1);
            let r3 = r * r * r;
            let mut w = 0u64;
            while w < r3 {
                for x in [w, r3 - 1 - w.min(r3 - 1)] {
                    assert_eq!(((u128::from(x) * inv) >> 64) as u64, x / r, "{x}/{r}");
                }
                w = w * 3 + 1;
            }
        }
        assert_eq!(radix_headroom(401), 406);
        assert_eq!(radix_headroom(101), 101);
        for range in 3..=MAX_RADIX {
            let r = radix_headroom(range);
            assert!(r >= range && r <= MAX_RADIX);
            assert_eq!(radix_word_bits(r, 3), radix_word_bits(range, 3), "{range}");
        }
        let b = [0xFFu8; 8];
        let mut got = [0u64; 3];
        assert!(unpack_radix(&mut Reader::new(&b, 0), 3, &mut got, "t").is_err());
        assert!(unpack_radix(&mut Reader::new(&b, 0), 1, &mut got, "t").is_err());
    }

    #[test]
    fn bit_stream_round_trips() {
        let fields: Vec<(u64, u32)> = (0..500u64)
            .map(|i| {
                let bits = (i * 7 % 65) as u32;
                let v = i.wrapping_mul(0x2545_F491_4F6C_DD1D);
                (
                    if bits == 64 {
                        v
                    } else if bits == 0 {
                        0
                    } else {
                        v & ((1 << bits) - 1)
                    },
                    bits,
                )
            })
            .collect();
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        for &(v, b) in &fields {
            w.write(v, b);
        }
        w.finish();
        let total: u32 = fields.iter().map(|f| f.1).sum();
        assert_eq!(out.len(), total.div_ceil(8) as usize);
        let mut r = BitReader::new(&out);
        for &(v, b) in &fields {
            assert_eq!(r.read(b), Some(v));
        }
        assert_eq!(r.bytes_used(), out.len());
        assert_eq!(r.read(64), None);
    }
}
