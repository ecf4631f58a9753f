//! The block encoder: for each block of up to 128 points it evaluates the
//! timestamp modes, the value classes (integer, decimal at a few candidate
//! exponents, XOR, raw), every integer transform chained and reset, the
//! kind/ms modes and the exceptions, and writes the smallest layout, chained
//! on the state the previous block left (see `block.rs` for the format).
//!
//! The choosing is `plan.rs`'s; this file writes the chosen layout and
//! advances the chain state exactly as the decoder will.

use super::bitpack::{self, BLOCK, BitWriter};
use super::block::*;
use super::decimal::KIND_INT;
pub(crate) use super::plan::DecHint;
use super::plan::{ExcVal, Planner};
use super::varint::{put_uvarint, zigzag};
use super::xor;
use crate::codec::StoredValue;
use crate::codec::cell::DecodedPoint;

/// Whether the block wrote its own header byte or is covered by the
/// previous header's repeat count (then the caller adds 0x10 to that byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    New,
    Repeat,
}

/// Block encoder: the chain state plus the repeat count of the last header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoder {
    pub(crate) st: State,
    /// Repeat count of the last header written; `None` before the first block.
    pub(crate) h_repeat: Option<u8>,
    /// 1000 when every offset of the cell is a whole second, else 1.
    pub(crate) unit: i64,
}

impl Encoder {
    pub(crate) fn new(unit: i64) -> Self {
        Encoder {
            st: State::new(),
            h_repeat: None,
            unit,
        }
    }

    /// Encodes one block (1..=128 sorted points) onto `out`.
    pub(crate) fn encode_block(&mut self, pts: &[DecodedPoint], out: &mut Vec<u8>) -> Head {
        self.encode_block_hinted(pts, None, out)
    }

    /// [`Encoder::encode_block`] given some points' decimal mantissas at one
    /// exponent, already verified (the head's tail has them), so they are
    /// not divided again. The output is identical.
    pub(crate) fn encode_block_hinted(
        &mut self,
        pts: &[DecodedPoint],
        hint: Option<&DecHint>,
        out: &mut Vec<u8>,
    ) -> Head {
        let n = pts.len();
        debug_assert!((1..=BLOCK).contains(&n));
        let planner = Planner {
            st: &self.st,
            unit: self.unit,
        };
        let ts = planner.plan_ts(pts);

        let ms_mode = if pts.iter().all(|p| p.ms == derived_ms(p.offset_ms)) {
            MS_DERIVED
        } else if pts.iter().all(|p| p.ms) {
            MS_ALL
        } else {
            MS_MAP
        };
        let v = planner.plan_values(pts, hint);
        let extra =
            ms_mode != self.st.ms_mode || v.kind_mode != self.st.kind_mode || !v.exc.is_empty();
        let h = ts.mode | if v.same { H_SAME } else { 0 } | if extra { H_EXTRA } else { 0 };

        let head = match self.h_repeat {
            Some(rep) if h == H_REPEATED && rep < MAX_REPEAT => {
                self.h_repeat = Some(rep + 1);
                Head::Repeat
            }
            _ => {
                out.push(h);
                self.h_repeat = Some(0);
                Head::New
            }
        };

        // Header fields.
        match ts.mode {
            TS_RUN => {}
            TS_REG => {
                put_uvarint(out, ts.gap);
                put_uvarint(out, ts.base as u64);
            }
            TS_DELTA => {
                put_uvarint(out, ts.gap);
                put_uvarint(out, ts.base as u64);
                out.push(ts.width);
            }
            _ => {
                put_uvarint(out, ts.gap);
                put_uvarint(out, zigzag(ts.base));
                out.push(ts.width);
            }
        }
        if !v.same {
            let p = v.params;
            let bits = u16::from(p.class)
                | u16::from(p.transform) << 5
                | u16::from(p.width) << 7
                | if v.reset { PARAM_RESET } else { 0 }
                | if p.radix != 0 { PARAM_RADIX } else { 0 };
            out.extend_from_slice(&bits.to_le_bytes());
            if p.has_base() {
                put_uvarint(out, zigzag(p.base));
            }
            if p.radix != 0 {
                put_uvarint(out, u64::from(p.radix));
            }
        }
        if extra {
            out.push(ms_mode | v.kind_mode << 2 | if v.exc.is_empty() { 0 } else { X_EXC });
        }
        if v.reset && is_int_like(v.params.class) {
            put_uvarint(out, zigzag(v.first));
        }

        // Data sections.
        if ts.mode >= TS_DELTA {
            bitpack::pack(&ts.packed[..ts.count], ts.width, out);
        }
        match v.params.class {
            CLASS_XOR => {
                let prev = (!v.reset).then_some(self.st.x as u64);
                let mut w = BitWriter::new(out);
                xor::encode(&v.vals[..n], prev, &mut w);
                w.finish();
            }
            CLASS_RAW => {
                for &b in &v.vals[..n] {
                    out.extend_from_slice(&b.to_le_bytes());
                }
            }
            _ if v.params.radix != 0 => {
                bitpack::pack_radix(&v.vals[..v.count], u64::from(v.params.radix), out)
            }
            _ => bitpack::pack(&v.vals[..v.count], v.params.width, out),
        }
        if ms_mode == MS_MAP {
            let mut w = BitWriter::new(out);
            for p in pts {
                w.write(u64::from(p.ms), 1);
            }
            w.finish();
        }
        if v.params.class != CLASS_INT {
            if v.kind_mode & 3 == IR_MAP {
                let mut w = BitWriter::new(out);
                for &k in &v.kinds[..n] {
                    w.write(u64::from(k == KIND_INT), 1);
                }
                w.finish();
            } else if v.kind_mode & 3 == IR_EXPLICIT {
                let mut w = BitWriter::new(out);
                for &k in &v.kinds[..n] {
                    w.write(u64::from(k), 2);
                }
                w.finish();
            }
        }
        if !v.exc.is_empty() {
            put_uvarint(out, v.exc.len() as u64);
            out.extend(v.exc.iter().map(|e| e.pos));
            let mut w = BitWriter::new(out);
            for e in &v.exc {
                w.write(u64::from(e.code()), 2);
            }
            w.finish();
            for e in &v.exc {
                match e.what {
                    ExcVal::X(x) | ExcVal::V(StoredValue::Int(x)) => put_uvarint(out, zigzag(x)),
                    ExcVal::V(StoredValue::Float(f)) => {
                        out.extend_from_slice(&f.to_bits().to_le_bytes())
                    }
                    ExcVal::V(StoredValue::Double(d)) => {
                        out.extend_from_slice(&d.to_bits().to_le_bytes())
                    }
                }
            }
        }

        // Advance the chain state exactly as the decoder will.
        self.st.last_t = i64::from(pts[n - 1].offset_ms) / self.unit;
        self.st.step = ts.new_step;
        self.st.params = Some(v.params);
        self.st.x = v.new_x;
        self.st.delta = v.new_delta;
        self.st.ms_mode = ms_mode;
        self.st.kind_mode = v.kind_mode;
        head
    }
}
