//! One block of a native cell (up to 128 points): the format's constants
//! (header byte, timestamp modes, value classes and transforms, ms/kind
//! modes, exceptions), the chain [`State`], and the decoder, which trusts
//! nothing. The encoder, which picks the cheapest layout, is `encode.rs`.
//!
//! Blocks are chained: each starts from the [`State`] the previous one left
//! (last timestamp and step, value parameters, last value and delta, flag
//! modes), which is what lets a steady block cost a single header byte, or
//! no byte at all when an earlier header's repeat count covers it.
//! The byte layout is drawn in `docs/format/native-cell.md`.

use super::bitpack::{self, BLOCK, BitReader};
use super::decimal::{
    self, KIND_DOUBLE, KIND_FLOAT, KIND_INT, MAX_E, bits_integral, bits_value, dec_integral,
    dec_value_d, derive_float_kind,
};
use super::error::NativeError;
use super::varint::{Reader, unzigzag};
use super::xor;
use crate::codec::StoredValue;
use crate::codec::cell::DecodedPoint;

/// Last millisecond offset of an hour.
pub(crate) const MAX_OFFSET_MS: u32 = 3_599_999;

// Header byte: bits 0-1 timestamp mode, bit 2 SAME, bit 3 EXTRA, bits 4-7 repeat.
pub(crate) const TS_RUN: u8 = 0;
pub(crate) const TS_REG: u8 = 1;
pub(crate) const TS_DELTA: u8 = 2;
pub(crate) const TS_DOD: u8 = 3;
pub(crate) const H_SAME: u8 = 1 << 2;
pub(crate) const H_EXTRA: u8 = 1 << 3;
/// The header a block covered by an earlier header's repeat count has.
pub(crate) const H_REPEATED: u8 = TS_RUN | H_SAME;
pub(crate) const MAX_REPEAT: u8 = 15;

// Value classes (params bits 0-4); 3 + e is decimal with exponent e.
pub(crate) const CLASS_INT: u8 = 0;
pub(crate) const CLASS_XOR: u8 = 1;
pub(crate) const CLASS_RAW: u8 = 2;
pub(crate) const CLASS_DEC0: u8 = 3;
pub(crate) const CLASS_MAX: u8 = CLASS_DEC0 + MAX_E;

// Integer transforms (params bits 5-6).
pub(crate) const TR_FOR: u8 = 0;
pub(crate) const TR_DELTA: u8 = 1;
pub(crate) const TR_DELTA_FOR: u8 = 2;
pub(crate) const TR_DOD_FOR: u8 = 3;
pub(crate) const PARAM_RESET: u16 = 1 << 14;
/// Params bit 15: values are packed three to a word below a radix (a
/// varint after the base) instead of at `width` bits.
pub(crate) const PARAM_RADIX: u16 = 1 << 15;

// Extra byte: bits 0-1 ms mode, bits 2-5 kind mode, bit 6 exceptions.
pub(crate) const MS_DERIVED: u8 = 0;
pub(crate) const MS_ALL: u8 = 1;
pub(crate) const MS_MAP: u8 = 2;
// Kind mode = int rule | float rule << 2 (ignored by INT blocks).
/// No point is an Int.
pub(crate) const IR_NONE: u8 = 0;
/// A point is an Int iff its value is integral ("100" in a float series).
pub(crate) const IR_INTEGRAL: u8 = 1;
/// A point is an Int iff its bit in the block's bitmap is set.
pub(crate) const IR_MAP: u8 = 2;
/// Two bits per point give every kind (0 Int, 1 Float, 2 Double).
pub(crate) const IR_EXPLICIT: u8 = 3;
/// A non-Int point is a Float iff its double is an exact f32.
pub(crate) const FR_DERIVE: u8 = 0;
/// Every non-Int point is a Double (e.g. written through a double API).
pub(crate) const FR_DOUBLE: u8 = 1;
/// Every non-Int point is a Float.
pub(crate) const FR_FLOAT: u8 = 2;
pub(crate) const K_DEFAULT: u8 = IR_NONE | FR_DERIVE << 2;
pub(crate) const X_EXC: u8 = 1 << 6;

/// Kind of a non-Int point under float rule `fr`.
#[inline]
pub(crate) fn float_kind(fr: u8, d: f64) -> u8 {
    match fr {
        FR_DOUBLE => KIND_DOUBLE,
        FR_FLOAT => KIND_FLOAT,
        _ => derive_float_kind(d),
    }
}

/// The `ms` flag a point gets by default: OpenTSDB writes a millisecond
/// qualifier exactly when the offset is not a whole second.
#[inline]
pub(crate) fn derived_ms(offset_ms: u32) -> bool {
    !offset_ms.is_multiple_of(1000)
}

#[inline]
pub(crate) fn is_dec(class: u8) -> bool {
    class >= CLASS_DEC0
}

#[inline]
pub(crate) fn is_int_like(class: u8) -> bool {
    class == CLASS_INT || is_dec(class)
}

/// Value parameters a block may inherit from the previous one (SAME).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) class: u8,
    pub(crate) transform: u8,
    pub(crate) width: u8,
    pub(crate) base: i64,
    /// Mixed-radix packing below this range (0: binary packing at `width`).
    pub(crate) radix: u32,
}

impl Params {
    pub(crate) fn has_base(&self) -> bool {
        is_int_like(self.class) && self.transform != TR_DELTA
    }
}

/// What one block leaves for the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    /// Last timestamp, in the cell's unit; -1 before the first block.
    pub(crate) last_t: i64,
    pub(crate) step: i64,
    pub(crate) params: Option<Params>,
    /// Last integer (INT/DEC) or f64 bits (XOR/RAW) of the value stream.
    pub(crate) x: i64,
    pub(crate) delta: i64,
    pub(crate) ms_mode: u8,
    pub(crate) kind_mode: u8,
}

impl State {
    pub(crate) const fn new() -> Self {
        State {
            last_t: -1,
            step: 0,
            params: None,
            x: 0,
            delta: 0,
            ms_mode: MS_DERIVED,
            kind_mode: K_DEFAULT,
        }
    }
}

/// One decoded block, as columns.
#[derive(Debug)]
pub(crate) struct BlockOut {
    pub(crate) n: usize,
    pub(crate) off: [u32; BLOCK],
    pub(crate) val: [StoredValue; BLOCK],
    pub(crate) ms: [bool; BLOCK],
    raw: [u64; BLOCK],
    x: [i64; BLOCK],
}

impl BlockOut {
    pub(crate) fn new() -> Box<Self> {
        Box::new(BlockOut {
            n: 0,
            off: [0; BLOCK],
            val: [StoredValue::Int(0); BLOCK],
            ms: [false; BLOCK],
            raw: [0; BLOCK],
            x: [0; BLOCK],
        })
    }

    pub(crate) fn point(&self, i: usize) -> DecodedPoint {
        DecodedPoint {
            offset_ms: self.off[i],
            ms: self.ms[i],
            value: self.val[i],
        }
    }
}

#[inline]
fn bit_at(map: &[u8], i: usize) -> bool {
    map[i >> 3] >> (i & 7) & 1 == 1
}

/// Decodes one block of `n` points whose header byte is `h` (repeat bits
/// already stripped) into `out`, advancing `st`.
pub(crate) fn decode_block(
    r: &mut Reader<'_>,
    st: &mut State,
    h: u8,
    n: usize,
    unit: i64,
    want_ms: bool,
    out: &mut BlockOut,
) -> Result<(), NativeError> {
    debug_assert!((1..=BLOCK).contains(&n));
    let max_t = i64::from(MAX_OFFSET_MS) / unit;
    let ts_mode = h & 3;
    let same = h & H_SAME != 0;
    let extra = h & H_EXTRA != 0;

    // --- header fields: timestamps.
    let (mut gap, mut tsa, mut tsw) = (0i64, 0i64, 0u8);
    match ts_mode {
        TS_RUN => {
            if st.step < 1 {
                return Err(r.corrupt("regular run without a step"));
            }
        }
        _ => {
            gap = r.uvarint("timestamp gap")?.min(u64::MAX >> 2) as i64;
            if gap > max_t {
                return Err(r.corrupt("timestamp gap beyond the hour"));
            }
            if ts_mode == TS_DOD {
                tsa = r.ivarint("timestamp dod base")?;
                if tsa.unsigned_abs() > max_t as u64 {
                    return Err(r.corrupt("timestamp dod base beyond the hour"));
                }
            } else {
                let a = r.uvarint("timestamp step")?;
                if a > max_t as u64 {
                    return Err(r.corrupt("timestamp step beyond the hour"));
                }
                tsa = a as i64;
            }
            if ts_mode != TS_REG {
                tsw = r.u8("timestamp width")?;
                if tsw > 32 {
                    return Err(r.corrupt("timestamp width above 32"));
                }
            }
        }
    }

    // --- header fields: values.
    let mut reset = false;
    let p = if same {
        st.params
            .ok_or_else(|| r.corrupt("SAME value parameters in the first block"))?
    } else {
        let lo = r.u8("value parameters")?;
        let hi = r.u8("value parameters")?;
        let bits = u16::from_le_bytes([lo, hi]);
        let class = (bits & 31) as u8;
        let transform = ((bits >> 5) & 3) as u8;
        let width = ((bits >> 7) & 127) as u8;
        reset = bits & PARAM_RESET != 0;
        if class > CLASS_MAX {
            return Err(r.corrupt("unknown value class"));
        }
        if width > 64 {
            return Err(r.corrupt("value width above 64"));
        }
        if !is_int_like(class) && (transform != 0 || width != 0) {
            return Err(r.corrupt("XOR/raw block with integer parameters"));
        }
        if (class == CLASS_RAW || (is_int_like(class) && transform == TR_FOR)) && reset {
            return Err(r.corrupt("reset flag on a block that does not chain"));
        }
        let mut p = Params {
            class,
            transform,
            width,
            base: 0,
            radix: 0,
        };
        if p.has_base() {
            p.base = r.ivarint("value base")?;
        }
        if bits & PARAM_RADIX != 0 {
            let radix = r.uvarint("value radix")?;
            if !is_int_like(class) || width != 0 || !(2..=bitpack::MAX_RADIX).contains(&radix) {
                return Err(r.corrupt("bad radix parameters"));
            }
            p.radix = radix as u32;
        }
        st.params = Some(p);
        p
    };
    let mut exc = false;
    if extra {
        let x = r.u8("extra flags")?;
        if x & 0x80 != 0 || x & 3 == 3 || (x >> 4) & 3 == 3 {
            return Err(r.corrupt("reserved extra flag bits set"));
        }
        st.ms_mode = x & 3;
        st.kind_mode = (x >> 2) & 15;
        exc = x & X_EXC != 0;
    }
    let first = if reset && is_int_like(p.class) {
        r.ivarint("first value")?
    } else {
        0
    };

    // --- timestamps.
    let t_prev;
    match ts_mode {
        TS_RUN | TS_REG => {
            let step = if ts_mode == TS_RUN { st.step } else { tsa };
            let t0 = if ts_mode == TS_RUN {
                st.last_t + step
            } else {
                st.last_t + 1 + gap
            };
            if n > 1 && step < 1 {
                return Err(r.corrupt("regular timestamps with step 0"));
            }
            // t0 ≤ 2·max_t and step ≤ max_t, so no overflow.
            let last = t0 + step * (n as i64 - 1);
            if t0 < 0 || last > max_t {
                return Err(r.corrupt("timestamp beyond the hour"));
            }
            let (mut t, ustep) = (t0 * unit, step * unit);
            for o in &mut out.off[..n] {
                *o = t as u32;
                t += ustep;
            }
            t_prev = last;
            st.step = step;
        }
        _ => {
            let t0 = st.last_t + 1 + gap;
            if t0 > max_t {
                return Err(r.corrupt("timestamp beyond the hour"));
            }
            out.off[0] = (t0 * unit) as u32;
            let deltas = &mut out.raw[..n - 1];
            bitpack::unpack(r, tsw, deltas, "timestamp deltas")?;
            let mut t = t0;
            let mut dprev = st.step;
            for (o, &u) in out.off[1..n].iter_mut().zip(deltas.iter()) {
                // u < 2^32 and bases are bounded, so i64 cannot overflow.
                let d = if ts_mode == TS_DELTA {
                    tsa + u as i64
                } else {
                    dprev + tsa + u as i64
                };
                if d < 1 || d > max_t {
                    return Err(r.corrupt("timestamps not increasing within the hour"));
                }
                t += d;
                if t > max_t {
                    return Err(r.corrupt("timestamp beyond the hour"));
                }
                dprev = d;
                *o = (t * unit) as u32;
            }
            if n > 1 {
                st.step = dprev;
            }
            t_prev = t;
        }
    }
    if t_prev <= st.last_t {
        return Err(r.corrupt("timestamps not increasing"));
    }
    st.last_t = t_prev;

    // --- values.
    let old_x = st.x;
    match p.class {
        CLASS_XOR => {
            let prev = (!reset).then_some(old_x as u64);
            let rest = r.buf.get(r.pos..).unwrap_or(&[]);
            let mut br = BitReader::new(rest);
            xor::decode(&mut br, prev, &mut out.raw[..n])
                .ok_or_else(|| r.corrupt("truncated XOR stream"))?;
            r.pos += br.bytes_used();
            st.x = out.raw[n - 1] as i64;
            st.delta = 0;
        }
        CLASS_RAW => {
            for o in &mut out.raw[..n] {
                *o = r.u64_le("raw value")?;
            }
            st.x = out.raw[n - 1] as i64;
            st.delta = 0;
        }
        _ => {
            decode_ints(r, st, &p, reset, first, n, out)?;
            let x = &out.x[..n];
            st.delta = if n >= 2 {
                x[n - 1].wrapping_sub(x[n - 2])
            } else if reset {
                0
            } else {
                x[0].wrapping_sub(old_x)
            };
            st.x = x[n - 1];
        }
    }

    // --- flags.
    let ms_map = if st.ms_mode == MS_MAP {
        Some(r.take(n.div_ceil(8), "ms bitmap")?)
    } else {
        None
    };
    let (ir, fr) = (st.kind_mode & 3, st.kind_mode >> 2);
    let kind_map = match (p.class, ir) {
        (CLASS_INT, _) | (_, IR_NONE) | (_, IR_INTEGRAL) => &[][..],
        (_, IR_MAP) => r.take(n.div_ceil(8), "kind bitmap")?,
        _ => r.take((2 * n).div_ceil(8), "kind map")?,
    };

    let mut exc_n = 0usize;
    let mut exc_pos = [0u8; BLOCK];
    let mut exc_val = [StoredValue::Int(0); BLOCK];
    let mut exc_x = [false; BLOCK];
    if exc {
        let count = r.uvarint("exception count")?;
        if count == 0 || count > n as u64 {
            return Err(r.corrupt("exception count out of range"));
        }
        exc_n = count as usize;
        let pos = r.take(exc_n, "exception positions")?;
        if pos.windows(2).any(|w| w[0] >= w[1]) || usize::from(pos[exc_n - 1]) >= n {
            return Err(r.corrupt("exception positions not increasing within the block"));
        }
        exc_pos[..exc_n].copy_from_slice(pos);
        let kinds = r.take(exc_n.div_ceil(4), "exception kinds")?;
        for j in 0..exc_n {
            let k = (kinds[j >> 2] >> ((j & 3) * 2)) & 3;
            exc_val[j] = match k {
                KIND_INT => StoredValue::Int(r.ivarint("exception value")?),
                KIND_FLOAT => StoredValue::Float(f32::from_bits(r.u32_le("exception value")?)),
                KIND_DOUBLE => StoredValue::Double(f64::from_bits(r.u64_le("exception value")?)),
                _ => {
                    let x = r.ivarint("exception override")?;
                    exc_x[j] = true;
                    let pi = usize::from(exc_pos[j]);
                    out.x[pi] = x;
                    out.raw[pi] = x as u64;
                    StoredValue::Int(x)
                }
            };
        }
    }

    // --- materialise values.
    if p.class == CLASS_INT {
        for (v, &x) in out.val[..n].iter_mut().zip(&out.x[..n]) {
            *v = StoredValue::Int(x);
        }
    } else if is_dec(p.class) {
        let e = p.class - CLASS_DEC0;
        let pf = decimal::POW10_F[usize::from(e)];
        match (ir, fr) {
            // The hot paths: plain decimal gauges.
            (IR_NONE, FR_DERIVE) => {
                for (v, &x) in out.val[..n].iter_mut().zip(&out.x[..n]) {
                    let d = x as f64 / pf;
                    let f = d as f32;
                    *v = if f64::from(f).to_bits() == d.to_bits() {
                        StoredValue::Float(f)
                    } else {
                        StoredValue::Double(d)
                    };
                }
            }
            (IR_NONE, FR_DOUBLE) => {
                for (v, &x) in out.val[..n].iter_mut().zip(&out.x[..n]) {
                    *v = StoredValue::Double(x as f64 / pf);
                }
            }
            _ => {
                for i in 0..n {
                    let x = out.x[i];
                    let d = x as f64 / pf;
                    let k = match ir {
                        IR_INTEGRAL if dec_integral(x, e) => KIND_INT,
                        IR_MAP if bit_at(kind_map, i) => KIND_INT,
                        IR_EXPLICIT => match (kind_map[i >> 2] >> ((i & 3) * 2)) & 3 {
                            3 => return Err(r.corrupt("invalid kind code")),
                            k => k,
                        },
                        _ => float_kind(fr, d),
                    };
                    out.val[i] = dec_value_d(x, e, k, d);
                }
            }
        }
    } else {
        for i in 0..n {
            let b = out.raw[i];
            let k = match ir {
                IR_INTEGRAL if bits_integral(b) => KIND_INT,
                IR_MAP if bit_at(kind_map, i) => KIND_INT,
                IR_EXPLICIT => match (kind_map[i >> 2] >> ((i & 3) * 2)) & 3 {
                    3 => return Err(r.corrupt("invalid kind code")),
                    k => k,
                },
                _ => float_kind(fr, f64::from_bits(b)),
            };
            out.val[i] = bits_value(b, k);
        }
    }

    // --- exceptions: whole values, applied last, and stream overrides
    // (spikes), applied before the kind rules run.
    for j in 0..exc_n {
        let pi = usize::from(exc_pos[j]);
        if !exc_x[j] {
            out.val[pi] = exc_val[j];
        }
    }

    if want_ms {
        match (st.ms_mode, ms_map) {
            (MS_ALL, _) => out.ms[..n].fill(true),
            (_, Some(m)) => {
                for (i, o) in out.ms[..n].iter_mut().enumerate() {
                    *o = bit_at(m, i);
                }
            }
            _ => {
                for (o, &off) in out.ms[..n].iter_mut().zip(&out.off[..n]) {
                    *o = derived_ms(off);
                }
            }
        }
    }
    out.n = n;
    Ok(())
}

/// Rebuilds the integer stream of an INT/DEC block into `out.x`.
fn decode_ints(
    r: &mut Reader<'_>,
    st: &State,
    p: &Params,
    reset: bool,
    first: i64,
    n: usize,
    out: &mut BlockOut,
) -> Result<(), NativeError> {
    let skip = usize::from(reset);
    let k = n - skip;
    let raw = &mut out.raw[..k];
    if p.radix != 0 {
        bitpack::unpack_radix(r, u64::from(p.radix), raw, "packed values")?;
    } else {
        bitpack::unpack(r, p.width, raw, "packed values")?;
    }
    let x = &mut out.x[..n];
    if p.transform == TR_FOR {
        for (o, &u) in x.iter_mut().zip(raw.iter()) {
            *o = p.base.wrapping_add(u as i64);
        }
        return Ok(());
    }
    let (mut xp, mut dp) = if reset { (first, 0) } else { (st.x, st.delta) };
    if reset {
        x[0] = first;
    }
    let xs = &mut x[skip..];
    match p.transform {
        TR_DELTA => {
            for (o, &u) in xs.iter_mut().zip(raw.iter()) {
                xp = xp.wrapping_add(unzigzag(u));
                *o = xp;
            }
        }
        TR_DELTA_FOR => {
            for (o, &u) in xs.iter_mut().zip(raw.iter()) {
                xp = xp.wrapping_add(p.base.wrapping_add(u as i64));
                *o = xp;
            }
        }
        _ => {
            for (o, &u) in xs.iter_mut().zip(raw.iter()) {
                dp = dp.wrapping_add(p.base.wrapping_add(u as i64));
                xp = xp.wrapping_add(dp);
                *o = xp;
            }
        }
    }
    Ok(())
}
