//! What a block's encoding will be: the smallest timestamp layout and value
//! layout for its points, chosen from the points and the chain state the
//! previous block left (the candidates are described in `encode.rs`).
//! Choices are deterministic functions of those two, which is what makes
//! `Chunk::to_cell` byte-identical to `encode_cell`.

use super::bitpack::{self, BLOCK, packed_len};
use super::block::*;
use super::decimal::{
    self, KIND_DOUBLE, KIND_FLOAT, KIND_INT, MAX_E, bits_integral, dec_integral, derive_float_kind,
    kind_of, to_bits, to_decimal_d,
};
use super::stream::{Stats, to_packed, transform_stream};
use super::varint::{uvarint_len, zigzag};
use super::xor;
use crate::codec::StoredValue;
use crate::codec::cell::DecodedPoint;

/// Verified decimal forms of a block's points at exponent `e`: where `ok`,
/// `to_decimal_d(point, e) == Some((m, d))`.
#[derive(Debug)]
pub(crate) struct DecHint {
    pub(crate) e: u8,
    pub(crate) ok: [bool; BLOCK],
    pub(crate) m: [i64; BLOCK],
    pub(crate) d: [f64; BLOCK],
}

impl DecHint {
    pub(crate) fn new(e: u8) -> Self {
        DecHint {
            e,
            ok: [false; BLOCK],
            m: [0; BLOCK],
            d: [0.0; BLOCK],
        }
    }
}

/// The timestamp layout of a block.
pub(crate) struct TsPlan {
    pub(crate) mode: u8,
    /// Timestamps skipped between the previous block's last and this
    /// block's first, minus one.
    pub(crate) gap: u64,
    /// The step (`TS_REG`) or the frame-of-reference base of the packed
    /// deltas (`TS_DELTA`) or delta-of-deltas (`TS_DOD`).
    pub(crate) base: i64,
    /// Bits per packed value.
    pub(crate) width: u8,
    /// Packed values (timestamps after the first).
    pub(crate) count: usize,
    pub(crate) packed: [u64; BLOCK],
    /// The step the chain continues with after this block.
    pub(crate) new_step: i64,
}

/// Exception code 3: the point's stream integer is replaced (a spike in an
/// otherwise steady stream); its kind follows the block's rules.
const EXC_OVERRIDE: u8 = 3;

#[derive(Clone, Copy)]
pub(crate) enum ExcVal {
    /// The whole value, kind included.
    V(StoredValue),
    /// A stream override.
    X(i64),
}

#[derive(Clone, Copy)]
pub(crate) struct Exc {
    pub(crate) pos: u8,
    pub(crate) what: ExcVal,
}

impl Exc {
    pub(crate) fn code(&self) -> u8 {
        match self.what {
            ExcVal::V(v) => kind_of(v),
            ExcVal::X(_) => EXC_OVERRIDE,
        }
    }
}

pub(crate) struct ValPlan {
    pub(crate) params: Params,
    pub(crate) same: bool,
    pub(crate) reset: bool,
    pub(crate) first: i64,
    /// Packed integers (INT/DEC) or f64 bits (XOR/RAW).
    pub(crate) vals: [u64; BLOCK],
    /// Packed values (the stream after a reset's explicit first point).
    pub(crate) count: usize,
    pub(crate) kind_mode: u8,
    pub(crate) kinds: [u8; BLOCK],
    pub(crate) exc: Vec<Exc>,
    pub(crate) new_x: i64,
    pub(crate) new_delta: i64,
    pub(crate) bits: usize,
}

/// A candidate representation of a block's values.
#[derive(Clone)]
struct Repr {
    class: u8,
    x: [i64; BLOCK],
    ok: [bool; BLOCK],
    kind: [u8; BLOCK],
    /// Kind under the "Float iff f32-exact" default.
    default_kind: [u8; BLOCK],
    /// Integral value (only computed when the block has Int points).
    integral: [bool; BLOCK],
    has_int: bool,
}

#[inline]
fn exc_bits(v: StoredValue) -> usize {
    10 + match v {
        StoredValue::Int(i) => 8 * uvarint_len(zigzag(i)),
        StoredValue::Float(_) => 32,
        StoredValue::Double(_) => 64,
    }
}

/// Plans blocks against the chain state of the cell so far.
pub(crate) struct Planner<'a> {
    pub(crate) st: &'a State,
    /// 1000 when every offset of the cell is a whole second, else 1.
    pub(crate) unit: i64,
}

impl Planner<'_> {
    pub(crate) fn plan_ts(&self, pts: &[DecodedPoint]) -> TsPlan {
        let n = pts.len();
        let unit = self.unit;
        let mut t = [0i64; BLOCK];
        for (o, p) in t.iter_mut().zip(pts) {
            *o = i64::from(p.offset_ms) / unit;
        }
        let t = &t[..n];
        let st = &self.st;
        let mut plan = TsPlan {
            mode: TS_RUN,
            gap: (t[0] - st.last_t - 1) as u64,
            base: 0,
            width: 0,
            count: 0,
            packed: [0; BLOCK],
            new_step: st.step,
        };
        if st.step >= 1
            && t.iter()
                .enumerate()
                .all(|(i, &ti)| ti == st.last_t + st.step * (i as i64 + 1))
        {
            return plan;
        }
        let step = if n >= 2 { t[1] - t[0] } else { st.step };
        if t.windows(2).all(|w| w[1] - w[0] == step) {
            plan.mode = TS_REG;
            plan.base = step;
            plan.new_step = step;
            return plan;
        }
        // Irregular: deltas with a frame of reference, or delta-of-deltas
        // chained on the previous step, whichever packs smaller.
        let mut d = [0i64; BLOCK];
        let mut dd = [0i64; BLOCK];
        let mut prev = st.step;
        for i in 1..n {
            d[i - 1] = t[i] - t[i - 1];
            dd[i - 1] = d[i - 1] - prev;
            prev = d[i - 1];
        }
        let k = n - 1;
        let (wd, bd) = Stats::of(&d[..k]).layout(TR_DELTA_FOR);
        let (wdd, bdd) = Stats::of(&dd[..k]).layout(TR_DOD_FOR);
        let cost_d = uvarint_len(bd as u64) + packed_len(k, wd);
        let cost_dd = uvarint_len(zigzag(bdd)) + packed_len(k, wdd);
        plan.count = k;
        plan.new_step = d[k - 1];
        if cost_dd < cost_d {
            plan.mode = TS_DOD;
            plan.base = bdd;
            plan.width = wdd;
            to_packed(TR_DOD_FOR, bdd, &dd[..k], &mut plan.packed);
        } else {
            plan.mode = TS_DELTA;
            plan.base = bd;
            plan.width = wd;
            to_packed(TR_DELTA_FOR, bd, &d[..k], &mut plan.packed);
        }
        plan
    }

    pub(crate) fn plan_values(&self, pts: &[DecodedPoint], hint: Option<&DecHint>) -> ValPlan {
        let n = pts.len();
        if pts.iter().all(|p| p.value.is_integer()) {
            let mut r = Repr::empty(CLASS_INT);
            for (i, p) in pts.iter().enumerate() {
                if let StoredValue::Int(v) = p.value {
                    r.x[i] = v;
                    r.ok[i] = true;
                    r.kind[i] = KIND_INT;
                }
            }
            return self.plan_repr(pts, &r);
        }
        let mut best: Option<ValPlan> = None;
        let mut tried = self.exponent_candidates(pts);
        for &e in &tried {
            let plan = self.plan_repr(pts, &Repr::decimal(pts, e, hint));
            if best.as_ref().is_none_or(|b| plan.bits < b.bits) {
                best = Some(plan);
            }
        }
        // The sample can miss rare values that need more decimals (spikes
        // of a mostly-zero gauge): if the best plan made exceptions of
        // decimals, also try the exponent they need.
        if let Some(b) = &best {
            let need = b
                .exc
                .iter()
                .filter_map(|x| match x.what {
                    ExcVal::V(v) if !v.is_integer() => decimal::min_exponent(v),
                    _ => None,
                })
                .max();
            if let Some(e) = need
                && !tried.contains(&e)
            {
                tried.push(e);
                let plan = self.plan_repr(pts, &Repr::decimal(pts, e, hint));
                if plan.bits < b.bits {
                    best = Some(plan);
                }
            }
        }
        // Decimals that mostly fail: try f64 bits (Gorilla XOR or raw).
        if best.as_ref().is_none_or(|b| b.bits > 16 * n) {
            let mut r = Repr::bits(pts);
            for class in [CLASS_XOR, CLASS_RAW] {
                r.class = class;
                let plan = self.plan_repr(pts, &r);
                if best.as_ref().is_none_or(|b| plan.bits < b.bits) {
                    best = Some(plan);
                }
            }
        }
        match best {
            Some(b) => b,
            // Unreachable (XOR and raw are tried when nothing else was), but
            // a total fallback beats a panic.
            None => self.plan_repr(pts, &Repr::bits(pts)),
        }
    }

    /// Decimal exponents worth a full evaluation: from a sample of the
    /// block's non-integer values (the largest exponent they need and the
    /// most common one), the previous block's (so it can be inherited), and
    /// 0 when integers are present.
    fn exponent_candidates(&self, pts: &[DecodedPoint]) -> Vec<u8> {
        let mut hist = [0u8; MAX_E as usize + 1];
        let floats: usize = pts.iter().filter(|p| !p.value.is_integer()).count();
        let stride = floats.div_ceil(16).max(1);
        let mut any = false;
        for p in pts.iter().filter(|p| !p.value.is_integer()).step_by(stride) {
            if let Some(e) = decimal::min_exponent(p.value) {
                hist[usize::from(e)] += 1;
                any = true;
            }
        }
        let mut c = Vec::with_capacity(4);
        if any {
            let max = hist.iter().rposition(|&h| h > 0).unwrap_or(0) as u8;
            let mut mode = 0u8;
            for (e, &h) in hist.iter().enumerate() {
                if h > hist[usize::from(mode)] {
                    mode = e as u8;
                }
            }
            c.push(max);
            if mode != max {
                c.push(mode);
            }
        }
        if let Some(p) = self.st.params
            && is_dec(p.class)
        {
            let e = p.class - CLASS_DEC0;
            if !c.contains(&e) {
                c.push(e);
            }
        }
        if floats < pts.len() && !c.contains(&0) {
            c.push(0);
        }
        c
    }

    /// Chooses kind mode, exceptions and transform for one representation.
    fn plan_repr(&self, pts: &[DecodedPoint], r: &Repr) -> ValPlan {
        let n = pts.len();
        let st = &self.st;
        // Kind mode: the derivable defaults cost nothing; a bitmap or an
        // exception per misfit otherwise. INT blocks are all integers.
        let (kind_mode, is_exc) = if r.class == CLASS_INT {
            let mut ex = [false; BLOCK];
            for (e, &ok) in ex.iter_mut().zip(&r.ok[..n]) {
                *e = !ok;
            }
            (st.kind_mode, ex)
        } else {
            let mut best = (usize::MAX, K_DEFAULT, [false; BLOCK]);
            // Without Int points the integral rule can only add misfits.
            let irs: &[u8] = if r.has_int {
                &[IR_NONE, IR_INTEGRAL, IR_MAP, IR_EXPLICIT]
            } else {
                &[IR_NONE, IR_EXPLICIT]
            };
            for &ir in irs {
                for fr in [FR_DERIVE, FR_DOUBLE, FR_FLOAT] {
                    if ir == IR_EXPLICIT && fr != FR_DERIVE {
                        continue;
                    }
                    let mode = ir | fr << 2;
                    let mut bits = match ir {
                        IR_MAP => n.div_ceil(8) * 8,
                        IR_EXPLICIT => (2 * n).div_ceil(8) * 8,
                        _ => 0,
                    };
                    if mode != st.kind_mode {
                        bits += 8;
                    }
                    if bits >= best.0 {
                        continue;
                    }
                    let mut ex = [false; BLOCK];
                    for i in 0..n {
                        let fk = match fr {
                            FR_DERIVE => r.default_kind[i],
                            FR_DOUBLE => KIND_DOUBLE,
                            _ => KIND_FLOAT,
                        };
                        let k = r.kind[i];
                        let fits = r.ok[i]
                            && match ir {
                                IR_NONE => k == fk,
                                IR_INTEGRAL => k == if r.integral[i] { KIND_INT } else { fk },
                                IR_MAP => k == KIND_INT || k == fk,
                                _ => true,
                            };
                        if !fits {
                            ex[i] = true;
                            bits += exc_bits(pts[i].value);
                            if bits >= best.0 {
                                break;
                            }
                        }
                    }
                    if bits < best.0 {
                        best = (bits, mode, ex);
                    }
                }
            }
            (best.1, best.2)
        };
        let plain = self.finish_plan(pts, r, kind_mode, &is_exc, &[false; BLOCK]);
        if r.class == CLASS_XOR || r.class == CLASS_RAW {
            return plain;
        }
        // Spikes: when most of the stream is one value (a mostly-zero gauge),
        // storing the others as overrides packs the rest at width 0.
        let mut repeats = 0;
        let mut last: Option<i64> = None;
        for (&x, _) in r.x[..n].iter().zip(&is_exc[..n]).filter(|(_, e)| !**e) {
            {
                if last == Some(x) {
                    repeats += 1;
                }
                last = Some(x);
            }
        }
        if repeats * 2 < n {
            return plain;
        }
        let mut vals: Vec<i64> = (0..n).filter(|&i| !is_exc[i]).map(|i| r.x[i]).collect();
        vals.sort_unstable();
        let (mut mode, mut best_run, mut run) = (0i64, 0usize, 0usize);
        for (j, &v) in vals.iter().enumerate() {
            run = if j > 0 && vals[j - 1] == v {
                run + 1
            } else {
                1
            };
            if run > best_run {
                best_run = run;
                mode = v;
            }
        }
        if best_run == vals.len() || (vals.len() - best_run) * 4 > n {
            return plain;
        }
        let mut spikes = [false; BLOCK];
        for i in 0..n {
            spikes[i] = !is_exc[i] && r.x[i] != mode;
        }
        let spiky = self.finish_plan(pts, r, kind_mode, &is_exc, &spikes);
        if spiky.bits < plain.bits {
            spiky
        } else {
            plain
        }
    }

    /// Builds the plan for a fixed kind mode, value exceptions (`is_exc`)
    /// and stream overrides (`spikes`).
    fn finish_plan(
        &self,
        pts: &[DecodedPoint],
        r: &Repr,
        kind_mode: u8,
        is_exc: &[bool; BLOCK],
        spikes: &[bool; BLOCK],
    ) -> ValPlan {
        let n = pts.len();
        let st = &self.st;
        let mut exc = Vec::new();
        let mut exc_total = 0usize;
        for i in 0..n {
            if is_exc[i] {
                exc.push(Exc {
                    pos: i as u8,
                    what: ExcVal::V(pts[i].value),
                });
                exc_total += exc_bits(pts[i].value);
            } else if spikes[i] {
                exc.push(Exc {
                    pos: i as u8,
                    what: ExcVal::X(r.x[i]),
                });
                exc_total += 10 + 8 * uvarint_len(zigzag(r.x[i]));
            }
        }
        if !exc.is_empty() {
            exc_total += 8 * uvarint_len(exc.len() as u64);
        }
        let map_bits = if r.class == CLASS_INT {
            0
        } else {
            match kind_mode & 3 {
                IR_MAP => n.div_ceil(8) * 8,
                IR_EXPLICIT => (2 * n).div_ceil(8) * 8,
                _ => 0,
            }
        };

        // Exceptions hold a placeholder in the stream that keeps it smooth:
        // the previous real value (before the first one, the first one).
        let prev_params = st.params.filter(|p| p.class == r.class);
        let chain = prev_params.is_some();
        let real = |i: usize| !is_exc[i] && !spikes[i];
        let mut x = [0i64; BLOCK];
        let mut last = match (0..n).find(|&i| real(i)) {
            Some(i) => r.x[i],
            None if chain => st.x,
            None => 0,
        };
        for (i, xi) in x[..n].iter_mut().enumerate() {
            if real(i) {
                last = r.x[i];
            }
            *xi = last;
        }
        let x = &x[..n];

        let mut plan = ValPlan {
            params: Params {
                class: r.class,
                transform: 0,
                width: 0,
                base: 0,
                radix: 0,
            },
            same: false,
            reset: false,
            first: 0,
            vals: [0; BLOCK],
            count: n,
            kind_mode,
            kinds: r.kind,
            exc,
            new_x: x[n - 1],
            new_delta: 0,
            bits: 0,
        };
        let fixed = exc_total + map_bits;

        match r.class {
            CLASS_XOR | CLASS_RAW => {
                for (o, &v) in plan.vals.iter_mut().zip(x) {
                    *o = v as u64;
                }
                let reset_bits = if r.class == CLASS_XOR {
                    xor::size_bits(&plan.vals[..n], None).div_ceil(8) * 8
                } else {
                    64 * n
                };
                let chained_bits = if r.class == CLASS_XOR && chain {
                    xor::size_bits(&plan.vals[..n], Some(st.x as u64)).div_ceil(8) * 8
                } else {
                    usize::MAX
                };
                if r.class == CLASS_RAW && chain {
                    plan.same = true;
                    plan.bits = fixed + reset_bits;
                } else if chained_bits <= reset_bits {
                    plan.same = true;
                    plan.bits = fixed + chained_bits;
                } else {
                    plan.reset = r.class == CLASS_XOR;
                    plan.bits = fixed + 16 + reset_bits;
                }
            }
            _ => {
                self.plan_ints(&mut plan, x, prev_params, fixed);
                plan.new_delta = if n >= 2 {
                    x[n - 1].wrapping_sub(x[n - 2])
                } else if plan.reset {
                    0
                } else {
                    x[0].wrapping_sub(st.x)
                };
            }
        }
        plan
    }

    /// Picks the cheapest integer transform — inheriting the previous
    /// block's parameters when the data fits them — and fills `plan`.
    /// Widths come from min/max/zigzag statistics computed once per stream;
    /// the chained and reset variants differ only in their first elements.
    fn plan_ints(&self, plan: &mut ValPlan, x: &[i64], prev: Option<Params>, fixed: usize) {
        let n = x.len();
        let (cx, cd) = (self.st.x, self.st.delta);
        // Deltas d[i] = x[i] - x[i-1] for i ≥ 1, and dd[i] = d[i] - d[i-1] for i ≥ 2.
        let mut d_tail = Stats::EMPTY;
        let mut dd_tail = Stats::EMPTY;
        for i in 1..n {
            let d = x[i].wrapping_sub(x[i - 1]);
            d_tail.add(d);
            if i >= 2 {
                dd_tail.add(d.wrapping_sub(x[i - 1].wrapping_sub(x[i - 2])));
            }
        }
        let d0 = x[0].wrapping_sub(cx);
        let d1 = if n >= 2 {
            Some(x[1].wrapping_sub(x[0]))
        } else {
            None
        };
        let for_stats = Stats::of(x);
        // Stats of each (transform, reset) stream.
        let stream = |tr: u8, reset: bool| -> Stats {
            match (tr, reset) {
                (TR_FOR, _) => for_stats,
                (TR_DOD_FOR, false) => {
                    let s = dd_tail.with(d0.wrapping_sub(cd));
                    match d1 {
                        Some(d1) => s.with(d1.wrapping_sub(d0)),
                        None => s,
                    }
                }
                (TR_DOD_FOR, true) => match d1 {
                    Some(d1) => dd_tail.with(d1),
                    None => dd_tail,
                },
                (_, false) => d_tail.with(d0),
                (_, true) => d_tail,
            }
        };
        // (bits, same, tr, reset, width, base, radix)
        let mut best: (usize, bool, u8, bool, u8, i64, u32) =
            (usize::MAX, false, 0, false, 0, 0, 0);
        if let Some(p) = prev
            && stream(p.transform, false).fits(&p)
        {
            let bytes = if p.radix != 0 {
                bitpack::radix_len(n, u64::from(p.radix))
            } else {
                packed_len(n, p.width)
            };
            best = (
                bytes * 8,
                true,
                p.transform,
                false,
                p.width,
                p.base,
                p.radix,
            );
        }
        let chain = prev.is_some();
        for tr in [TR_DELTA, TR_DELTA_FOR, TR_DOD_FOR, TR_FOR] {
            for reset in [false, true] {
                if (tr == TR_FOR && reset) || (!reset && !chain && tr != TR_FOR) {
                    continue;
                }
                let st = stream(tr, reset);
                let (w, base) = st.layout(tr);
                let k = if reset { n - 1 } else { n };
                let mut bits = 16;
                if tr != TR_DELTA {
                    bits += 8 * uvarint_len(zigzag(base));
                }
                if reset {
                    bits += 8 * uvarint_len(zigzag(x[0]));
                }
                let plain = packed_len(k, w) * 8;
                // Mixed radix when the range wastes part of a bit per value,
                // except at byte-aligned widths, which zstd's Huffman stage
                // compresses better than any fixed packing.
                let range = st.max_packed(tr).saturating_add(1);
                let radix = if w != 8
                    && w != 16
                    && (3..=bitpack::MAX_RADIX).contains(&range)
                    && !range.is_power_of_two()
                {
                    let r = bitpack::radix_headroom(range);
                    let rbits = (bitpack::radix_len(k, r) + uvarint_len(r)) * 8;
                    (rbits < plain).then_some((rbits, r as u32))
                } else {
                    None
                };
                let (data_bits, radix) = radix.unwrap_or((plain, 0));
                bits += data_bits;
                if bits < best.0 {
                    best = (
                        bits,
                        false,
                        tr,
                        reset,
                        if radix != 0 { 0 } else { w },
                        base,
                        radix,
                    );
                }
            }
        }
        let (bits, same, tr, reset, w, base, radix) = best;
        let mut s = [0i64; BLOCK];
        let k = transform_stream(tr, reset, x, cx, cd, &mut s);
        to_packed(tr, base, &s[..k], &mut plan.vals);
        plan.count = k;
        plan.same = same;
        plan.reset = reset;
        plan.first = x[0];
        plan.params = Params {
            class: plan.params.class,
            transform: tr,
            width: w,
            base: if tr == TR_DELTA { 0 } else { base },
            radix,
        };
        plan.bits = fixed + bits;
    }
}

impl Repr {
    fn empty(class: u8) -> Self {
        Repr {
            class,
            x: [0; BLOCK],
            ok: [false; BLOCK],
            kind: [0; BLOCK],
            default_kind: [0; BLOCK],
            integral: [false; BLOCK],
            has_int: false,
        }
    }

    fn decimal(pts: &[DecodedPoint], e: u8, hint: Option<&DecHint>) -> Self {
        let mut r = Repr::empty(CLASS_DEC0 + e);
        r.has_int = pts.iter().any(|p| p.value.is_integer());
        let hint = hint.filter(|h| h.e == e);
        for (i, p) in pts.iter().enumerate() {
            r.kind[i] = kind_of(p.value);
            let md = match hint {
                Some(h) if h.ok[i] => Some((h.m[i], h.d[i])),
                _ => to_decimal_d(p.value, e),
            };
            if let Some((m, d)) = md {
                r.x[i] = m;
                r.ok[i] = true;
                r.default_kind[i] = derive_float_kind(d);
                if r.has_int {
                    r.integral[i] = dec_integral(m, e);
                }
            }
        }
        r
    }

    fn bits(pts: &[DecodedPoint]) -> Self {
        let mut r = Repr::empty(CLASS_XOR);
        r.has_int = pts.iter().any(|p| p.value.is_integer());
        for (i, p) in pts.iter().enumerate() {
            r.kind[i] = kind_of(p.value);
            if let Some(b) = to_bits(p.value) {
                r.x[i] = b as i64;
                r.ok[i] = true;
                r.default_kind[i] = derive_float_kind(f64::from_bits(b));
                r.integral[i] = bits_integral(b);
            }
        }
        r
    }
}
