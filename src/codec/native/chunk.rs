//! [`Chunk`]: the appendable, in-memory form of a native cell for the series
//! head, where up to ~1 M series each hold an open hour at once.
//!
//! A chunk is one byte buffer: sealed blocks in their final native encoding
//! (exactly the bytes [`encode_cell`](super::encode_cell) writes for those
//! points), followed by the *tail*, the < 128 points of the open block as
//! compact records. Every 128th push seals the tail into a block. The tail
//! record of a point is usually a single byte:
//!
//! ```text
//! normal  pvarint(token)                       timestamp = previous + step, flags derived
//! run     0xFE n                               n more points repeating the last token
//! escape  0xFF F [ts] (token | raw value)      F: bit0 ts, bit1 ms flipped,
//!                                               bits2-3 kind (0 derived, 1 Int, 2 Float, 3 Double),
//!                                               bit4 raw value
//! token   INT domain:   zigzag(v − previous)
//!         DEC(E):       zigzag(m − previous m), m = v·10^E (verified like the cell codec)
//!         RAW domain:   f64 bits XOR previous bits
//! ```
//! The tail's domain is chosen by its first point and widened in place (the
//! tail re-encoded) when a value needs more decimals or the first decimal
//! arrives after integers; values that fit no domain are raw escapes. A
//! tail also picks, from its first point, the default kind of its decimal
//! and raw tokens (Float-if-exact, all Double, or all Float). The first
//! record of a tail predicts its timestamp from the sealed blocks' state, so
//! a regular series pays no timestamp bytes at all.

use std::fmt;

use super::bitpack::BLOCK;
use super::block::{
    BlockOut, FR_DERIVE, FR_DOUBLE, FR_FLOAT, H_REPEATED, MAX_OFFSET_MS, Params, State,
    decode_block, derived_ms, float_kind,
};
use super::cell::{Header, put_header, read_header, walk_blocks};
use super::decimal::{
    KIND_DOUBLE, KIND_FLOAT, KIND_INT, MAX_E, dec_f64, dec_value_d, kind_of, min_exponent, to_bits,
    to_decimal_d,
};
use super::encode::{DecHint, Encoder, Head};
use super::error::NativeError;
use super::summary::CellSummary;
use super::varint::{PV_ESCAPE, PV_RUN, Reader, put_pvarint, put_uvarint_slice, unzigzag, zigzag};
use crate::codec::StoredValue;
use crate::codec::cell::DecodedPoint;

const DOM_NONE: u32 = 0;
const DOM_INT: u32 = 1;
const DOM_RAW: u32 = 2;
const DOM_DEC0: u32 = 3;

// `meta` bit layout.
const STEP_BITS: u32 = 22;
const STEP_MASK: u32 = (1 << STEP_BITS) - 1;
const DOM_SHIFT: u32 = STEP_BITS;
const DOM_MASK: u32 = 31;
const MS_UNIT: u32 = 1 << 27;
const FR_SHIFT: u32 = 28;
// Run state of the tail's last records (bits 30-31), for run-length records:
// nothing useful, one 1-byte token, two equal-or-not 1-byte tokens, or a
// 1-byte token followed by a run of it.
const RUN_SHIFT: u32 = 30;
const RS_NONE: u32 = 0;
const RS_ONE: u32 = 1;
const RS_TWO: u32 = 2;
const RS_RUN: u32 = 3;

// Escape flag bits.
const F_TS: u8 = 1;
const F_MS: u8 = 2;
const F_KIND_SHIFT: u8 = 2;
const F_RAW: u8 = 16;

/// The appendable head form of a native cell: points arrive one at a time in
/// increasing offset order.
///
/// Memory: `size_of::<Chunk>()` is 48 bytes; an empty chunk holds no heap,
/// a 1-point chunk 16 bytes, and a chunk of 360 points of a two-decimal
/// gauge about 440 (see [`Chunk::heap_bytes`]). Sealed blocks are the
/// final encoding, so [`Chunk::to_cell`] only encodes the open tail.
///
/// Appending costs O(1) amortised, plus one block encoding per 128 points;
/// a chunk whose offsets were all whole seconds re-encodes its sealed blocks
/// once if a millisecond offset arrives (the cell's time unit changes).
#[derive(Clone)]
pub struct Chunk {
    /// Sealed blocks ‖ tail records; its length is the capacity.
    data: Box<[u8]>,
    used: u32,
    len: u32,
    last_offset: u32,
    /// Tail step (22 bits) | tail domain (5 bits) | MS_UNIT | tail float rule (2 bits).
    meta: u32,
    /// The tail's previous value token base.
    prev_x: i64,
    sealed: Option<Box<Sealed>>,
}

/// Encoder state after the last sealed block, stored compactly (48 bytes).
#[derive(Clone, Copy, Debug)]
struct Sealed {
    x: i64,
    delta: i64,
    base: i64,
    /// Last timestamp (22 bits) | step (22 bits) << 22 | radix (17 bits) << 44:
    /// timestamps and steps are below 3.6 M and a radix at most 2^16.
    packed: u64,
    /// Bytes of sealed blocks at the front of `data`.
    len: u32,
    /// Position of the last block header in `data`.
    last_h: u32,
    class: u8,
    transform: u8,
    width: u8,
    ms_mode: u8,
    kind_mode: u8,
    h_repeat: u8,
    unit_ms: bool,
}

const T_BITS: u32 = 22;
const T_MASK: u64 = (1 << T_BITS) - 1;

impl Sealed {
    fn last_t(&self) -> i64 {
        (self.packed & T_MASK) as i64
    }

    fn step(&self) -> i64 {
        ((self.packed >> T_BITS) & T_MASK) as i64
    }

    fn radix(&self) -> u32 {
        (self.packed >> (2 * T_BITS)) as u32
    }

    fn encoder(&self) -> Encoder {
        Encoder {
            st: State {
                last_t: self.last_t(),
                step: self.step(),
                params: Some(Params {
                    class: self.class,
                    transform: self.transform,
                    width: self.width,
                    base: self.base,
                    radix: self.radix(),
                }),
                x: self.x,
                delta: self.delta,
                ms_mode: self.ms_mode,
                kind_mode: self.kind_mode,
            },
            h_repeat: Some(self.h_repeat),
            unit: if self.unit_ms { 1 } else { 1000 },
        }
    }

    fn store(enc: &Encoder, len: u32, last_h: u32) -> Self {
        let p = enc.st.params.unwrap_or(Params {
            class: 0,
            transform: 0,
            width: 0,
            base: 0,
            radix: 0,
        });
        // A sealed block exists, so last_t ≥ 0; both fit 22 bits.
        let packed = (enc.st.last_t as u64 & T_MASK)
            | (enc.st.step as u64 & T_MASK) << T_BITS
            | u64::from(p.radix) << (2 * T_BITS);
        Sealed {
            x: enc.st.x,
            delta: enc.st.delta,
            base: p.base,
            packed,
            len,
            last_h,
            class: p.class,
            transform: p.transform,
            width: p.width,
            ms_mode: enc.st.ms_mode,
            kind_mode: enc.st.kind_mode,
            h_repeat: enc.h_repeat.unwrap_or(0),
            unit_ms: enc.unit == 1,
        }
    }

    fn unit(&self) -> i64 {
        if self.unit_ms { 1 } else { 1000 }
    }
}

impl Default for Chunk {
    fn default() -> Self {
        Chunk::new()
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("len", &self.len)
            .field("last_offset", &self.last_offset())
            .field("sealed_bytes", &self.sealed_len())
            .field("tail_bytes", &(self.used as usize - self.sealed_len()))
            .field("heap_bytes", &self.heap_bytes())
            .finish()
    }
}

/// A tail record under construction (at most 1 + 1 + 10 + 10 bytes).
struct Rec {
    buf: [u8; 32],
    n: usize,
}

impl Rec {
    fn push(&mut self, b: u8) {
        self.buf[self.n] = b;
        self.n += 1;
    }
    fn uvarint(&mut self, v: u64) {
        self.n += put_uvarint_slice(&mut self.buf[self.n..], v);
    }
    fn pvarint(&mut self, v: u64) {
        self.n += put_pvarint(&mut self.buf[self.n..], v);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.n..self.n + b.len()].copy_from_slice(b);
        self.n += b.len();
    }
}

impl Chunk {
    pub fn new() -> Self {
        Chunk {
            data: Box::default(),
            used: 0,
            len: 0,
            last_offset: 0,
            meta: 0,
            prev_x: 0,
            sealed: None,
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn last_offset(&self) -> Option<u32> {
        (self.len > 0).then_some(self.last_offset)
    }

    /// Heap bytes held: the buffer's capacity plus the sealed-state box.
    pub fn heap_bytes(&self) -> usize {
        self.data.len() + self.sealed.as_ref().map_or(0, |_| size_of::<Sealed>())
    }

    fn sealed_len(&self) -> usize {
        self.sealed.as_ref().map_or(0, |s| s.len as usize)
    }

    fn tail_count(&self) -> usize {
        self.len as usize % BLOCK
    }

    fn step(&self) -> u32 {
        self.meta & STEP_MASK
    }

    fn domain(&self) -> u32 {
        (self.meta >> DOM_SHIFT) & DOM_MASK
    }

    fn set_step(&mut self, s: u32) {
        self.meta = (self.meta & !STEP_MASK) | (s & STEP_MASK);
    }

    fn set_domain(&mut self, d: u32) {
        self.meta = (self.meta & !(DOM_MASK << DOM_SHIFT)) | (d << DOM_SHIFT);
    }

    /// Kind of non-Int tokens in the tail (a block float rule, `FR_*`).
    fn float_rule(&self) -> u8 {
        ((self.meta >> FR_SHIFT) & 3) as u8
    }

    fn set_float_rule(&mut self, fr: u8) {
        self.meta = (self.meta & !(3 << FR_SHIFT)) | (u32::from(fr & 3) << FR_SHIFT);
    }

    fn run_state(&self) -> u32 {
        self.meta >> RUN_SHIFT
    }

    fn set_run_state(&mut self, rs: u32) {
        self.meta = (self.meta & !(3 << RUN_SHIFT)) | (rs << RUN_SHIFT);
    }

    /// Appends a plain one-byte token, folding repeats into a run record
    /// (`FE count`): a constant gauge or a steady counter then costs about
    /// nothing per point in the tail, as it does in sealed blocks. A run
    /// starts at the third equal token, so it never costs more than the
    /// tokens it replaces.
    fn push_small_token(&mut self, t: u8) {
        let used = self.used as usize;
        match self.run_state() {
            RS_RUN if self.data[used - 3] == t && self.data[used - 1] < u8::MAX => {
                self.data[used - 1] += 1;
            }
            RS_TWO if self.data[used - 1] == t && self.data[used - 2] == t => {
                self.reserve(1);
                self.data[used - 1] = PV_RUN;
                self.data[used] = 2;
                self.used += 1;
                self.set_run_state(RS_RUN);
            }
            rs => {
                self.reserve(1);
                self.data[used] = t;
                self.used += 1;
                self.set_run_state(if rs == RS_ONE || rs == RS_TWO {
                    RS_TWO
                } else {
                    RS_ONE
                });
            }
        }
    }

    fn unit_ms(&self) -> bool {
        self.meta & MS_UNIT != 0
    }

    /// Timestamp prediction context at the start of the tail.
    fn tail_start(&self) -> (Option<u32>, u32) {
        match &self.sealed {
            Some(s) => (
                Some((s.last_t() * s.unit()) as u32),
                (s.step() * s.unit()) as u32,
            ),
            None => (None, 0),
        }
    }

    /// Appends a point; gives it back (and changes nothing) unless its
    /// offset is after the last one and inside the hour.
    pub fn push(&mut self, p: DecodedPoint) -> Result<(), DecodedPoint> {
        if p.offset_ms > MAX_OFFSET_MS || (self.len > 0 && p.offset_ms <= self.last_offset) {
            return Err(p);
        }
        // Fast path, the steady state of a regular series: the point lands
        // where the tail predicts, with derived flags, as a plain token.
        if self.tail_count() != 0
            && p.offset_ms == self.last_offset + self.step()
            && p.ms == derived_ms(p.offset_ms)
            && (self.unit_ms() || p.offset_ms.is_multiple_of(1000))
            && let Some((t, x, k)) =
                Self::token(self.domain(), self.float_rule(), self.prev_x, p.value)
            && k == kind_of(p.value)
        {
            if t < 0xF0 {
                self.push_small_token(t as u8);
            } else {
                let mut buf = [0u8; 9];
                let n = put_pvarint(&mut buf, t);
                self.reserve(n);
                let at = self.used as usize;
                self.data[at..at + n].copy_from_slice(&buf[..n]);
                self.used += n as u32;
                self.set_run_state(RS_NONE);
            }
            self.len += 1;
            self.last_offset = p.offset_ms;
            self.prev_x = x;
            if self.tail_count() == 0 {
                self.seal();
            }
            return Ok(());
        }
        if !self.unit_ms() && !p.offset_ms.is_multiple_of(1000) {
            self.meta |= MS_UNIT;
            if self.sealed.is_some() {
                // Sealed blocks count whole seconds; re-encode them in ms.
                // Happens at most once per chunk.
                let mut pts = Vec::with_capacity(self.len() + 1);
                if self.decode(&mut pts).is_err() {
                    self.meta &= !MS_UNIT;
                    return Err(p);
                }
                pts.push(p);
                let mut fresh = Chunk::new();
                fresh.meta |= MS_UNIT;
                for q in pts {
                    if fresh.push(q).is_err() {
                        self.meta &= !MS_UNIT;
                        return Err(p);
                    }
                }
                *self = fresh;
                return Ok(());
            }
        }
        self.append(p);
        if self.tail_count() == 0 {
            self.seal();
        }
        Ok(())
    }

    /// The token of `v` in domain `dom` with base `prev`: (token, new base,
    /// derived kind).
    fn token(dom: u32, fr: u8, prev: i64, v: StoredValue) -> Option<(u64, i64, u8)> {
        match dom {
            DOM_INT => match v {
                StoredValue::Int(i) => Some((zigzag(i.wrapping_sub(prev)), i, KIND_INT)),
                _ => None,
            },
            DOM_RAW => {
                let b = to_bits(v)?;
                Some((b ^ prev as u64, b as i64, float_kind(fr, f64::from_bits(b))))
            }
            DOM_NONE => None,
            _ => {
                let e = (dom - DOM_DEC0) as u8;
                let (m, d) = to_decimal_d(v, e)?;
                Some((zigzag(m.wrapping_sub(prev)), m, float_kind(fr, d)))
            }
        }
    }

    fn preferred_domain(v: StoredValue) -> u32 {
        match v {
            StoredValue::Int(_) => DOM_INT,
            _ => match min_exponent(v) {
                Some(e) => DOM_DEC0 + u32::from(e),
                None => DOM_RAW,
            },
        }
    }

    /// Appends `p` as a tail record (the offset checks are done), first
    /// choosing or widening the tail's domain when `p` asks for it.
    fn append(&mut self, p: DecodedPoint) {
        let tail_empty = self.tail_count() == 0;
        if !tail_empty {
            // Fast path: the value is a plain token of the current domain.
            let tok = Self::token(self.domain(), self.float_rule(), self.prev_x, p.value);
            if tok.is_some_and(|t| t.2 == kind_of(p.value)) {
                self.append_record(p, tok);
                return;
            }
        }
        let dom = self.domain();
        let want = Self::preferred_domain(p.value);
        if dom != want {
            if tail_empty {
                // Nothing to re-encode: keep the domain only if it takes the
                // value as a plain token.
                let fr = self.float_rule();
                let keep = dom != DOM_NONE
                    && dom != DOM_RAW
                    && Self::token(dom, fr, 0, p.value).is_some_and(|t| t.2 == kind_of(p.value));
                if !keep {
                    self.set_domain(want);
                    self.prev_x = 0;
                }
            } else if want >= DOM_DEC0 && (dom == DOM_INT || (dom >= DOM_DEC0 && want > dom)) {
                self.reencode_tail(want);
            }
        }
        if tail_empty {
            // A new tail picks the float rule its first point needs, so a
            // series written as all-Double (0.5 stored on 8 bytes) or all-Float
            // (f32 37.21) does not escape every point.
            let fr = match Self::token(self.domain(), FR_DERIVE, 0, p.value) {
                Some((_, _, k)) if k != kind_of(p.value) => match kind_of(p.value) {
                    KIND_DOUBLE => FR_DOUBLE,
                    KIND_FLOAT => FR_FLOAT,
                    _ => FR_DERIVE,
                },
                _ => FR_DERIVE,
            };
            self.set_float_rule(fr);
        }
        let tok = Self::token(self.domain(), self.float_rule(), self.prev_x, p.value);
        self.append_record(p, tok);
    }

    /// Re-encodes the tail's points in value domain `dom` (the decimal
    /// exponent or raw bits their tokens are written in).
    fn reencode_tail(&mut self, dom: u32) {
        let mut pts = Vec::with_capacity(self.tail_count());
        if self.decode_tail(&mut pts).is_err() {
            return; // keep the current domain; the point goes in as a raw escape
        }
        self.used = self.sealed_len() as u32;
        self.len -= pts.len() as u32;
        let (prev, step) = self.tail_start();
        self.last_offset = prev.unwrap_or(0);
        self.set_step(step);
        self.set_domain(dom);
        self.set_run_state(RS_NONE);
        self.prev_x = 0;
        for q in pts {
            let tok = Self::token(dom, self.float_rule(), self.prev_x, q.value);
            self.append_record(q, tok);
        }
    }

    /// Writes the record of `p`, whose token in the current domain is `tok`.
    fn append_record(&mut self, p: DecodedPoint, tok: Option<(u64, i64, u8)>) {
        let mut rec = Rec { buf: [0; 32], n: 0 };
        let has_prev = self.len > 0;
        let predicted = self.last_offset.wrapping_add(self.step());
        let ts_explicit = !has_prev || p.offset_ms != predicted;
        let ms_flip = p.ms != derived_ms(p.offset_ms);
        let kind = kind_of(p.value);
        let kind_ok = tok.is_some_and(|(_, _, k)| k == kind);
        if ts_explicit || ms_flip || !kind_ok {
            rec.push(PV_ESCAPE);
            let f = if ts_explicit { F_TS } else { 0 }
                | if ms_flip { F_MS } else { 0 }
                | if kind_ok {
                    0
                } else {
                    (kind + 1) << F_KIND_SHIFT
                }
                | if tok.is_none() { F_RAW } else { 0 };
            rec.push(f);
            if ts_explicit {
                if has_prev {
                    rec.uvarint(zigzag(i64::from(p.offset_ms) - i64::from(predicted)));
                } else {
                    rec.uvarint(u64::from(p.offset_ms));
                }
            }
        }
        match tok {
            Some((t, x, _)) => {
                rec.pvarint(t);
                self.prev_x = x;
            }
            None => match p.value {
                StoredValue::Int(i) => rec.uvarint(zigzag(i)),
                StoredValue::Float(f) => rec.bytes(&f.to_bits().to_le_bytes()),
                StoredValue::Double(d) => rec.bytes(&d.to_bits().to_le_bytes()),
            },
        }
        if ts_explicit && has_prev {
            self.set_step(p.offset_ms - self.last_offset);
        }
        if rec.n == 1 && rec.buf[0] < 0xF0 {
            // A plain one-byte token.
            self.push_small_token(rec.buf[0]);
        } else {
            self.reserve(rec.n);
            let at = self.used as usize;
            self.data[at..at + rec.n].copy_from_slice(&rec.buf[..rec.n]);
            self.used += rec.n as u32;
            self.set_run_state(RS_NONE);
        }
        self.len += 1;
        self.last_offset = p.offset_ms;
    }

    /// Makes room for `extra` more bytes after `used`. Growth is small
    /// because a million chunks are live at once: a quarter while the first
    /// block fills, then 1/32 under 4 KiB (seal time reserves the next
    /// tail's room in one step, see [`Chunk::seal`]), then 1/8 so long chunks
    /// still append in amortised O(1).
    fn reserve(&mut self, extra: usize) {
        let used = self.used as usize;
        let need = used + extra;
        if need <= self.data.len() {
            return;
        }
        let grow = if self.sealed.is_none() {
            used / 4 + 16
        } else if used < 4096 {
            used / 32 + 16
        } else {
            used / 8
        };
        self.realloc(need.max(used + grow));
    }

    fn realloc(&mut self, cap: usize) {
        let used = self.used as usize;
        let mut v = Vec::with_capacity(cap);
        v.extend_from_slice(&self.data[..used]);
        v.resize(cap, 0);
        self.data = v.into_boxed_slice();
    }

    /// Decodes the tail records, appending their points.
    fn decode_tail(&self, out: &mut Vec<DecodedPoint>) -> Result<(), NativeError> {
        self.decode_tail_hinted(out, None)
    }

    /// [`Chunk::decode_tail`], also filling `hint` with the decimal
    /// mantissas of the tail's plain tokens (for sealing without dividing
    /// again).
    fn decode_tail_hinted(
        &self,
        out: &mut Vec<DecodedPoint>,
        mut hint: Option<&mut DecHint>,
    ) -> Result<(), NativeError> {
        let first = out.len();
        let (mut prev, mut step) = self.tail_start();
        let dom = self.domain();
        let fr = self.float_rule();
        let mut prev_x = 0i64;
        // The token of the last record that had one (what a run repeats).
        let mut last_tok: Option<u64> = None;
        let mut r = Reader::new(&self.data[..self.used as usize], self.sealed_len());
        while !r.at_end() {
            let mut f = 0u8;
            let mut reps = 1usize;
            let mut run_tok = None;
            match r.buf[r.pos] {
                PV_ESCAPE => {
                    r.pos += 1;
                    f = r.u8("tail flags")?;
                    if f & 0xE0 != 0 || (f & F_RAW != 0 && (f >> F_KIND_SHIFT) & 3 == 0) {
                        return Err(r.corrupt("bad tail flags"));
                    }
                }
                PV_RUN => {
                    r.pos += 1;
                    reps = usize::from(r.u8("tail run length")?);
                    run_tok = Some(last_tok.ok_or_else(|| r.corrupt("tail run without a token"))?);
                    if reps == 0 {
                        return Err(r.corrupt("empty tail run"));
                    }
                }
                _ => {}
            }
            for _ in 0..reps {
                let off = match prev {
                    Some(pv) => {
                        let predicted = i64::from(pv) + i64::from(step);
                        let o = if f & F_TS != 0 {
                            predicted + unzigzag(r.uvarint("tail timestamp")?)
                        } else {
                            predicted
                        };
                        if o <= i64::from(pv) || o > i64::from(MAX_OFFSET_MS) {
                            return Err(r.corrupt("tail timestamp out of order"));
                        }
                        if f & F_TS != 0 {
                            step = (o - i64::from(pv)) as u32;
                        }
                        o as u32
                    }
                    None => {
                        if f & F_TS == 0 {
                            return Err(r.corrupt("first tail point without a timestamp"));
                        }
                        let o = r.uvarint("tail timestamp")?;
                        if o > u64::from(MAX_OFFSET_MS) {
                            return Err(r.corrupt("tail timestamp beyond the hour"));
                        }
                        o as u32
                    }
                };
                prev = Some(off);
                let explicit = (f >> F_KIND_SHIFT) & 3;
                let value = if f & F_RAW != 0 {
                    last_tok = None;
                    match explicit - 1 {
                        KIND_INT => StoredValue::Int(r.ivarint("tail value")?),
                        KIND_FLOAT => StoredValue::Float(f32::from_bits(r.u32_le("tail value")?)),
                        _ => StoredValue::Double(f64::from_bits(r.u64_le("tail value")?)),
                    }
                } else {
                    let t = match run_tok {
                        Some(t) => t,
                        None => r.pvarint("tail token")?,
                    };
                    last_tok = Some(t);
                    let (x, derived, v) = match dom {
                        DOM_INT => {
                            let x = prev_x.wrapping_add(unzigzag(t));
                            (x, KIND_INT, None)
                        }
                        DOM_RAW => {
                            let b = t ^ prev_x as u64;
                            (b as i64, float_kind(fr, f64::from_bits(b)), None)
                        }
                        DOM_NONE => return Err(r.corrupt("tail token without a domain")),
                        d => {
                            let e = (d - DOM_DEC0) as u8;
                            if e > MAX_E {
                                return Err(r.corrupt("bad tail domain"));
                            }
                            let x = prev_x.wrapping_add(unzigzag(t));
                            let d = dec_f64(x, e);
                            if let Some(h) = hint.as_deref_mut() {
                                let i = out.len() - first;
                                if i < BLOCK && h.e == e {
                                    h.ok[i] = true;
                                    h.m[i] = x;
                                    h.d[i] = d;
                                }
                            }
                            (x, float_kind(fr, d), Some((e, d)))
                        }
                    };
                    prev_x = x;
                    let kind = if explicit == 0 { derived } else { explicit - 1 };
                    match v {
                        Some((e, d)) => dec_value_d(x, e, kind, d),
                        None if dom == DOM_INT => match kind {
                            KIND_INT => StoredValue::Int(x),
                            _ => {
                                return Err(r.corrupt("non-integer kind in the integer domain"));
                            }
                        },
                        None => super::decimal::bits_value(x as u64, kind),
                    }
                };
                let ms = derived_ms(off) != (f & F_MS != 0);
                out.push(DecodedPoint {
                    offset_ms: off,
                    ms,
                    value,
                });
            }
        }
        Ok(())
    }

    /// Encodes the full tail (128 points) into a sealed block.
    fn seal(&mut self) {
        let mut pts = Vec::with_capacity(BLOCK);
        let dom = self.domain();
        let mut hint = (dom >= DOM_DEC0).then(|| DecHint::new((dom - DOM_DEC0) as u8));
        if self.decode_tail_hinted(&mut pts, hint.as_mut()).is_err() || pts.len() != BLOCK {
            debug_assert!(false, "tail of a chunk failed to decode");
            return;
        }
        let mut enc = match &self.sealed {
            Some(s) => s.encoder(),
            None => Encoder::new(if self.unit_ms() { 1 } else { 1000 }),
        };
        let mut blk = Vec::with_capacity(BLOCK + 16);
        let head = enc.encode_block_hinted(&pts, hint.as_ref(), &mut blk);
        let start = self.sealed_len();
        let tail_len = self.used as usize - start;
        let mut last_h = self.sealed.as_ref().map_or(0, |s| s.last_h);
        self.used = start as u32;
        // Room for the block and the next tail (assumed the size of this
        // one) in one step: exact while small, geometric beyond 4 KiB.
        let want = start + blk.len() + tail_len;
        if self.data.len() < want {
            self.realloc(if start < 4096 {
                want
            } else {
                want.max(start + start / 8)
            });
        }
        self.data[start..start + blk.len()].copy_from_slice(&blk);
        match head {
            Head::New => last_h = start as u32,
            Head::Repeat => self.data[last_h as usize] += 0x10,
        }
        let len = (start + blk.len()) as u32;
        self.used = len;
        let s = Sealed::store(&enc, len, last_h);
        self.sealed = Some(Box::new(s));
        // The next tail predicts from the sealed state, as its decoder will.
        let (_, step) = self.tail_start();
        self.set_step(step);
        self.set_run_state(RS_NONE);
        self.prev_x = 0;
    }

    /// A valid native cell holding exactly the pushed points, byte-identical
    /// to [`encode_cell`](super::encode_cell) on the same points.
    pub fn to_cell(&self, out: &mut Vec<u8>) {
        let mut tail = Vec::with_capacity(self.tail_count());
        let sealed_pts = self.len() - self.tail_count();
        if self.decode_tail(&mut tail).is_err() {
            // Cannot happen for a tail this chunk wrote; stay valid anyway.
            debug_assert!(false, "tail of a chunk failed to decode");
            tail.clear();
        }
        let n = sealed_pts + tail.len();
        let summary = self.summary(&tail);
        put_header(out, n, n > 0 && !self.unit_ms(), summary.as_ref());
        let base = out.len();
        out.extend_from_slice(&self.data[..self.sealed_len()]);
        if !tail.is_empty() {
            let mut enc = match &self.sealed {
                Some(s) => s.encoder(),
                None => Encoder::new(if self.unit_ms() { 1 } else { 1000 }),
            };
            if enc.encode_block(&tail, out) == Head::Repeat
                && let Some(s) = &self.sealed
            {
                out[base + s.last_h as usize] += 0x10;
            }
        }
    }

    /// The summary of every pushed point, `tail` being the decoded tail. The
    /// sealed blocks are decoded for it: a flush or checkpoint pays a decode
    /// per chunk, where running aggregates would cost every series in the
    /// head memory.
    fn summary(&self, tail: &[DecodedPoint]) -> Option<CellSummary> {
        let mut values = Vec::with_capacity(self.len());
        if let Some(s) = &self.sealed {
            let sealed_pts = self.len() - self.tail_count();
            let mut r = Reader::new(&self.data[..s.len as usize], 0);
            let walked = walk_blocks(
                &mut r,
                sealed_pts,
                s.unit(),
                &mut State::new(),
                false,
                &mut BlockOut::new(),
                |b| values.extend_from_slice(&b.val[..b.n]),
            );
            // Cannot fail for blocks this chunk sealed.
            debug_assert!(walked.is_ok(), "sealed blocks of a chunk failed to decode");
        }
        CellSummary::of(values.into_iter().chain(tail.iter().map(|p| p.value)))
    }

    /// Decodes every pushed point, appending to `out` (left as it was on error).
    pub fn decode(&self, out: &mut Vec<DecodedPoint>) -> Result<(), NativeError> {
        let start = out.len();
        out.reserve(self.len());
        let r = self.decode_into(out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn decode_into(&self, out: &mut Vec<DecodedPoint>) -> Result<(), NativeError> {
        if let Some(s) = &self.sealed {
            let sealed_pts = self.len() - self.tail_count();
            let mut r = Reader::new(&self.data[..s.len as usize], 0);
            let mut blk = BlockOut::new();
            walk_blocks(
                &mut r,
                sealed_pts,
                s.unit(),
                &mut State::new(),
                true,
                &mut blk,
                |b| {
                    for i in 0..b.n {
                        out.push(b.point(i));
                    }
                },
            )?;
        }
        self.decode_tail(out)
    }

    /// Rebuilds an appendable chunk from a native cell; further pushes
    /// continue after its last point.
    ///
    /// The whole cell is decoded (so a corrupt one is an error), but its
    /// full blocks are then copied as the chunk's sealed blocks — the
    /// decoder's chain state *is* the encoder's — and only the last,
    /// partial block is pushed again: loading a head checkpoint costs about
    /// a decode, not an encode.
    pub fn from_cell(cell: &[u8]) -> Result<Self, NativeError> {
        let Header {
            n,
            unit,
            blocks: mut r,
            ..
        } = read_header(cell)?;
        let start = r.pos;
        let full = n / BLOCK;
        let mut st = State::new();
        let mut blk = BlockOut::new();
        let (mut repeat, mut last_h, mut h_count) = (0u8, 0usize, 0u8);
        // End of the full blocks, the chain state there, the last header and
        // how many blocks after it are sealed, and the last sealed offset.
        let mut sealed: Option<(usize, State, usize, u8, u32)> = None;
        let mut tail = Vec::with_capacity(n % BLOCK);
        for b in 0..n.div_ceil(BLOCK) {
            let cnt = (n - b * BLOCK).min(BLOCK);
            let h = if repeat > 0 {
                repeat -= 1;
                H_REPEATED
            } else {
                last_h = r.pos - start;
                let x = r.u8("block header")?;
                repeat = x >> 4;
                h_count = repeat;
                x & 0x0F
            };
            decode_block(&mut r, &mut st, h, cnt, unit, true, &mut blk)?;
            if b + 1 == full {
                let covered = h_count - repeat;
                sealed = Some((r.pos, st, last_h, covered, blk.off[BLOCK - 1]));
            } else if b >= full {
                tail.extend((0..blk.n).map(|i| blk.point(i)));
            }
        }
        if repeat != 0 {
            return Err(r.corrupt("header repeat count runs past the last block"));
        }
        if !r.at_end() {
            return Err(r.corrupt("trailing bytes after the last block"));
        }
        let mut c = Chunk::new();
        if let Some((end, st, last_h, covered, last_offset)) = sealed {
            let mut data = cell[start..end].to_vec();
            // The partial block, if the last header covered it, is now the
            // open tail: that header counts only the sealed blocks.
            data[last_h] = (data[last_h] & 0x0F) | covered << 4;
            c.used = data.len() as u32;
            c.data = data.into_boxed_slice();
            c.len = (full * BLOCK) as u32;
            c.last_offset = last_offset;
            if unit == 1 {
                c.meta |= MS_UNIT;
            }
            let enc = Encoder {
                st,
                h_repeat: Some(covered),
                unit,
            };
            c.sealed = Some(Box::new(Sealed::store(&enc, c.used, last_h as u32)));
            let (_, step) = c.tail_start();
            c.set_step(step);
        }
        for p in tail {
            c.push(p).map_err(|_| NativeError::Corrupt {
                offset: 0,
                reason: "cell points out of order",
            })?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_is_small() {
        assert!(size_of::<Chunk>() <= 48, "{}", size_of::<Chunk>());
        assert_eq!(size_of::<Sealed>(), 48);
        assert_eq!(Chunk::new().heap_bytes(), 0);
    }
}
