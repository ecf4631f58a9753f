//! [`CellSummary`]: the aggregates a native cell (codec `0x02`) carries
//! after its point count, so that a downsample bucket covering the whole
//! cell reads them instead of decoding the points.
//!
//! Each aggregate is defined as the query layer's double-mode fold over the
//! cell's values in time order (`StoredValue::as_f64`), so that folding the
//! summaries of consecutive cells gives the bits the points would:
//!
//! ```text
//! summary = flags u8 ‖ [varint valid] ‖ [val min ‖ val max ‖ val sum] ‖ val first ‖ val last
//! flags   bit 0: some values are NaN: `valid` (the non-NaN count, < n) follows;
//!                otherwise valid = n; other bits are 0
//! val     u8 e ≤ 18 ‖ zvarint m               the double m / 10^e, exactly
//!       | u8 0x40|e ‖ zvarint m ‖ zvarint d    the double whose bits are m / 10^e's plus d
//!       | 0xFF ‖ 8 bytes LE                   the double's bits
//!         (the shortest form is written; raw unless another is under 9 bytes)
//! ```
//!
//! `min`, `max` and `sum` are absent when `valid` is 0 (every value NaN).
//! An empty cell has no summary.

use super::decimal::{MAX_E, POW10_F, dec_f64, round_i64, to_decimal};
use super::error::NativeError;
use super::varint::{Reader, put_uvarint, uvarint_len, zigzag};
use crate::codec::StoredValue;
use hourglass_query::partial::Partial;

const FLAG_NAN: u8 = 1;
const VAL_RAW: u8 = 0xFF;
const VAL_NEAR: u8 = 0x40;

/// The aggregates of a non-empty native cell's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellSummary {
    /// Points whose value is not NaN.
    pub valid: u32,
    /// Smallest non-NaN value, the earliest of equal ones (NaN if none).
    pub min: f64,
    /// Largest non-NaN value, the earliest of equal ones (NaN if none).
    pub max: f64,
    /// `0.0 + v₀ + v₁ + …` over the non-NaN values in time order (NaN if
    /// none).
    pub sum: f64,
    /// The first value (may be NaN).
    pub first: f64,
    /// The last value (may be NaN).
    pub last: f64,
}

impl CellSummary {
    /// The summary of values in time order; `None` when there are none.
    /// The fold is the query layer's ([`Partial`]), so that the summary of
    /// an hour is exactly what reading its points would give.
    pub fn of(values: impl IntoIterator<Item = StoredValue>) -> Option<CellSummary> {
        let mut p = Partial::EMPTY;
        for v in values {
            p.push(v.as_f64());
        }
        Some(CellSummary {
            // A cell holds at most MAX_POINTS (3.6 M) values.
            valid: u32::try_from(p.valid).unwrap_or(u32::MAX),
            min: p.min,
            max: p.max,
            sum: p.sum,
            first: p.first?,
            last: p.last?,
        })
    }

    /// Whether the first or last value is NaN, which may be a staleness
    /// marker (a reader that skips markers must then decode the points:
    /// NaN is otherwise left out of every aggregate but these two).
    pub fn may_hold_stale_ends(&self) -> bool {
        self.first.is_nan() || self.last.is_nan()
    }

    /// The summary as the query layer's partial of its hour.
    pub fn partial(&self) -> Partial {
        Partial {
            valid: u64::from(self.valid),
            min: self.min,
            max: self.max,
            sum: self.sum,
            first: Some(self.first),
            last: Some(self.last),
        }
    }

    /// Appends the summary of a cell of `n` points.
    pub(crate) fn write(&self, n: usize, out: &mut Vec<u8>) {
        let nan = (self.valid as usize) < n;
        out.push(if nan { FLAG_NAN } else { 0 });
        if nan {
            put_uvarint(out, u64::from(self.valid));
        }
        if self.valid > 0 {
            put_val(out, self.min);
            put_val(out, self.max);
            put_val(out, self.sum);
        }
        put_val(out, self.first);
        put_val(out, self.last);
    }

    /// Reads the summary of a cell of `n > 0` points.
    pub(crate) fn read(r: &mut Reader<'_>, n: usize) -> Result<CellSummary, NativeError> {
        let flags = r.u8("summary flags")?;
        if flags & !FLAG_NAN != 0 {
            return Err(r.corrupt("unknown summary flags"));
        }
        let valid = if flags & FLAG_NAN != 0 {
            let v = r.uvarint("summary count")?;
            if v >= n as u64 {
                return Err(r.corrupt("summary count not below the point count"));
            }
            v as u32
        } else {
            n as u32
        };
        let (min, max, sum) = if valid > 0 {
            (read_val(r)?, read_val(r)?, read_val(r)?)
        } else {
            (f64::NAN, f64::NAN, f64::NAN)
        };
        Ok(CellSummary {
            valid,
            min,
            max,
            sum,
            first: read_val(r)?,
            last: read_val(r)?,
        })
    }
}

/// Largest exponent tried for a near decimal (a sum of values with up to
/// six decimals).
const NEAR_MAX_E: u8 = 6;

/// A double in the shortest of its forms: an exact decimal (`e`, `m`), a
/// near decimal (`0x40 | e`, `m`, and the distance of its bits from
/// `m / 10^e`'s: a sum of two-decimal values is a few ulps off one), or
/// its raw bits.
pub(super) fn put_val(out: &mut Vec<u8>, v: f64) {
    let mut best: Option<(usize, [u64; 2], u8)> = None;
    let consider =
        |best: &mut Option<(usize, [u64; 2], u8)>, tag: u8, codes: [u64; 2], n: usize| {
            let len = 1 + (0..n).map(|i| uvarint_len(codes[i])).sum::<usize>();
            if len < 1 + 8 && best.is_none_or(|(l, _, _)| len < l) {
                *best = Some((len, codes, tag));
            }
        };
    if let Some((e, m)) =
        (0..=MAX_E).find_map(|e| to_decimal(StoredValue::Double(v), e).map(|m| (e, m)))
    {
        consider(&mut best, e, [zigzag(m), 0], 1);
    }
    if v.is_finite() {
        for e in 0..=NEAR_MAX_E {
            // |m| grows with e (out of range stays out), so once a near
            // form's least length (its tag, m, one byte of distance) is
            // no shorter than the best, no later one is.
            let Some(m) = round_i64(v * POW10_F[usize::from(e)]) else {
                break;
            };
            if best.is_some_and(|(len, _, _)| 2 + uvarint_len(zigzag(m)) >= len) {
                break;
            }
            let near = dec_f64(m, e).to_bits() as i64;
            let d = (v.to_bits() as i64).wrapping_sub(near);
            consider(&mut best, VAL_NEAR | e, [zigzag(m), zigzag(d)], 2);
        }
    }
    match best {
        Some((_, codes, tag)) => {
            out.push(tag);
            put_uvarint(out, codes[0]);
            if tag & VAL_NEAR != 0 {
                put_uvarint(out, codes[1]);
            }
        }
        None => {
            out.push(VAL_RAW);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }
}

pub(super) fn read_val(r: &mut Reader<'_>) -> Result<f64, NativeError> {
    match r.u8("summary value")? {
        VAL_RAW => Ok(f64::from_bits(r.u64_le("summary value")?)),
        e if e <= MAX_E => Ok(dec_f64(r.ivarint("summary value")?, e)),
        t if t & !VAL_NEAR <= MAX_E && t & VAL_NEAR != 0 => {
            let near = dec_f64(r.ivarint("summary value")?, t & !VAL_NEAR).to_bits() as i64;
            let d = r.ivarint("summary value")?;
            Ok(f64::from_bits(near.wrapping_add(d) as u64))
        }
        _ => Err(r.corrupt("unknown summary value form")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The form `put_val` must choose, found by trying every one.
    fn shortest_by_trying_all(v: f64) -> Vec<u8> {
        let mut best: Option<Vec<u8>> = None;
        let mut consider = |form: Vec<u8>| {
            if form.len() < 1 + 8 && best.as_ref().is_none_or(|b| form.len() < b.len()) {
                best = Some(form);
            }
        };
        if let Some((e, m)) =
            (0..=MAX_E).find_map(|e| to_decimal(StoredValue::Double(v), e).map(|m| (e, m)))
        {
            let mut form = vec![e];
            put_uvarint(&mut form, zigzag(m));
            consider(form);
        }
        if v.is_finite() {
            for e in 0..=NEAR_MAX_E {
                if let Some(m) = round_i64(v * POW10_F[usize::from(e)]) {
                    let near = dec_f64(m, e).to_bits() as i64;
                    let d = (v.to_bits() as i64).wrapping_sub(near);
                    let mut form = vec![VAL_NEAR | e];
                    put_uvarint(&mut form, zigzag(m));
                    put_uvarint(&mut form, zigzag(d));
                    consider(form);
                }
            }
        }
        best.unwrap_or_else(|| {
            let mut raw = vec![VAL_RAW];
            raw.extend_from_slice(&v.to_bits().to_le_bytes());
            raw
        })
    }

    fn check_shortest(v: f64) {
        let mut out = Vec::new();
        put_val(&mut out, v);
        assert_eq!(out, shortest_by_trying_all(v), "{v}");
        let mut r = Reader::new(&out, 0);
        assert_eq!(read_val(&mut r).unwrap().to_bits(), v.to_bits());
    }

    proptest! {
        #[test]
        fn put_val_writes_the_shortest_form(
            bits in any::<u64>(),
            m in -10_000_000i64..10_000_000,
            e in 0u32..8,
            sum_of in proptest::collection::vec(-100_000i64..100_000, 1..20),
        ) {
            check_shortest(f64::from_bits(bits));
            check_shortest(m as f64 / 10f64.powi(e as i32));
            // Sums of two-decimal values: a few ulps off a decimal.
            check_shortest(sum_of.iter().map(|&c| c as f64 / 100.0).sum());
        }
    }

    #[test]
    fn put_val_writes_the_shortest_form_of_edge_values() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.3,
            1e300,
            -1e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            4.611686018427388e18,
            0.1 + 0.2,
        ] {
            check_shortest(v);
        }
    }

    fn round_trip(s: &CellSummary, n: usize) -> (Vec<u8>, CellSummary) {
        let mut out = Vec::new();
        s.write(n, &mut out);
        let mut r = Reader::new(&out, 0);
        let back = CellSummary::read(&mut r, n).unwrap();
        assert!(r.at_end());
        (out, back)
    }

    fn same(a: &CellSummary, b: &CellSummary) -> bool {
        a.valid == b.valid
            && [a.min, a.max, a.sum, a.first, a.last]
                .iter()
                .zip([b.min, b.max, b.sum, b.first, b.last])
                .all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn decimals_are_short_and_every_double_comes_back_bit_for_bit() {
        let s = CellSummary::of([37.21, 36.9, 38.15].map(StoredValue::Double)).unwrap();
        assert_eq!((s.min, s.max, s.first, s.last), (36.9, 38.15, 37.21, 38.15));
        assert_eq!(s.sum, 0.0 + 37.21 + 36.9 + 38.15);
        let (bytes, back) = round_trip(&s, 3);
        assert!(same(&s, &back));
        // flags, then min 36.9 as the shortest decimal: e = 1, zvarint(369).
        assert_eq!(&bytes[..4], &[0, 1, 0xE2, 0x05], "{bytes:02X?}");
        assert!(bytes.len() <= 1 + 5 * 9, "{bytes:02X?}");
        for odd in [
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            5e-324,
            0.1 + 0.2,
        ] {
            let s = CellSummary::of([StoredValue::Double(odd)]).unwrap();
            assert!(same(&s, &round_trip(&s, 1).1), "{odd}");
        }
    }

    #[test]
    fn a_sum_a_few_ulps_off_a_decimal_is_a_near_decimal() {
        let sum = 0.0 + 37.21 + 37.25 + 36.9 + 37.0 + 38.15;
        assert_ne!(sum, 186.51);
        let mut out = Vec::new();
        put_val(&mut out, sum);
        assert_eq!(out, [0x42, 0xB6, 0xA3, 0x02, 0x02], "{out:02X?}");
        let mut r = Reader::new(&out, 0);
        assert_eq!(read_val(&mut r).unwrap().to_bits(), sum.to_bits());
        // Far from any decimal: raw.
        let mut out = Vec::new();
        put_val(&mut out, std::f64::consts::PI);
        assert_eq!(out.len(), 9);
        // Hostile near-decimal fields decode to some double, never panic.
        for bytes in [
            &[0x52, 0x01, 0x01][..],
            &[
                0x40, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x01,
            ],
        ] {
            let _ = read_val(&mut Reader::new(bytes, 0));
        }
        assert!(
            read_val(&mut Reader::new(&[0x53, 0, 0], 0)).is_err(),
            "exponent 19"
        );
    }

    #[test]
    fn nan_values_are_counted_out_and_first_and_last_keep_them() {
        let v = [f64::NAN, 2.0, f64::NAN].map(StoredValue::Double);
        let s = CellSummary::of(v).unwrap();
        assert_eq!((s.valid, s.min, s.max, s.sum), (1, 2.0, 2.0, 2.0));
        assert!(s.first.is_nan() && s.last.is_nan());
        assert!(same(&s, &round_trip(&s, 3).1));
        let all = CellSummary::of([StoredValue::Double(f64::NAN)]).unwrap();
        assert_eq!(all.valid, 0);
        assert!(all.min.is_nan() && all.max.is_nan() && all.sum.is_nan());
        let (bytes, back) = round_trip(&all, 1);
        assert!(same(&all, &back));
        assert_eq!(bytes.len(), 1 + 1 + 9 + 9);
        assert_eq!(CellSummary::of(std::iter::empty()), None);
    }

    #[test]
    fn the_earliest_of_equal_extremes_is_kept() {
        let s = CellSummary::of([0.0, -0.0, 0.0].map(StoredValue::Double)).unwrap();
        assert_eq!(s.min.to_bits(), 0.0f64.to_bits());
        let s = CellSummary::of([-0.0, 0.0].map(StoredValue::Double)).unwrap();
        assert_eq!(s.max.to_bits(), (-0.0f64).to_bits());
        let ints = CellSummary::of([StoredValue::Int(i64::MAX), StoredValue::Float(0.5)]).unwrap();
        assert_eq!(ints.max, i64::MAX as f64);
        assert_eq!(ints.min, 0.5);
    }

    #[test]
    fn malformed_summaries_are_errors() {
        let mut r = Reader::new(&[2], 0);
        assert!(CellSummary::read(&mut r, 1).is_err(), "unknown flag");
        let mut r = Reader::new(&[1, 3], 0);
        assert!(CellSummary::read(&mut r, 3).is_err(), "count not below n");
        let mut r = Reader::new(&[0, 19, 0], 0);
        assert!(CellSummary::read(&mut r, 1).is_err(), "exponent 19");
        let mut r = Reader::new(&[0, 0xFF, 0, 0], 0);
        assert!(CellSummary::read(&mut r, 1).is_err(), "short raw value");
    }
}
