//! Decimal ("ALP-style") value arithmetic and the per-point kind rules.
//!
//! A decimal block stores a value `v` as the integer `m = round(v·10^e)` and
//! decodes it as `m as f64 / 10^e`. Division (not multiplication by
//! `10^-e`) is used because both it and parsing the decimal text are
//! correctly rounded: for `|m| ≤ 2^53` the decoded double *is* the double the
//! text "37.21" parses to. The encoder still verifies every value bit for bit
//! (f32 bits for `Float` points); a value that fails is an exception.

use crate::codec::StoredValue;

/// Largest decimal exponent a block may use (10^18 < 2^63).
pub(crate) const MAX_E: u8 = 18;

pub(crate) const POW10_F: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];

pub(crate) const POW10_I: [i64; 19] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    100_000_000_000,
    1_000_000_000_000,
    10_000_000_000_000,
    100_000_000_000_000,
    1_000_000_000_000_000,
    10_000_000_000_000_000,
    100_000_000_000_000_000,
    1_000_000_000_000_000_000,
];

// Generous bounds for the pre-check in `to_decimal_d` (a necessary
// condition only: the division decides).
const TOL_F64: f64 = 1.0 / (1u64 << 50) as f64;
const TOL_F32: f64 = 1.0 / (1u64 << 21) as f64;

/// Point kinds as coded in kind maps and exception records.
pub(crate) const KIND_INT: u8 = 0;
pub(crate) const KIND_FLOAT: u8 = 1;
pub(crate) const KIND_DOUBLE: u8 = 2;

#[inline]
pub(crate) fn kind_of(v: StoredValue) -> u8 {
    match v {
        StoredValue::Int(_) => KIND_INT,
        StoredValue::Float(_) => KIND_FLOAT,
        StoredValue::Double(_) => KIND_DOUBLE,
    }
}

/// True if `d` survives a round trip through f32 bit for bit. NaN never
/// does: float-to-float casts of NaN do not promise a payload, so a NaN
/// `Float` is always stored as an exception with its own 4 bytes.
#[inline]
pub(crate) fn f32_exact(d: f64) -> bool {
    !d.is_nan() && f64::from(d as f32).to_bits() == d.to_bits()
}

/// The default kind of a non-integer point: `Float` when the double is an
/// exact f32 (how OpenTSDB classifies "37.25"), else `Double`.
#[inline]
pub(crate) fn derive_float_kind(d: f64) -> u8 {
    if f32_exact(d) {
        KIND_FLOAT
    } else {
        KIND_DOUBLE
    }
}

/// `round(x)` as i64 when `|x| < 2^62` (so deltas of two such values cannot
/// overflow in the common case), else `None`.
#[inline]
pub(crate) fn round_i64(x: f64) -> Option<i64> {
    const LIMIT: f64 = 4_611_686_018_427_387_904.0; // 2^62
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52
    let a = x.abs();
    if a.is_nan() || a >= LIMIT {
        return None; // also NaN
    }
    // Round-half-even via the magic constant while the sum stays exact; the
    // caller verifies the round trip, so the tie rule does not matter.
    let r = if a < 2_251_799_813_685_248.0 {
        (x + MAGIC) - MAGIC
    } else {
        x.round()
    };
    Some(r as i64)
}

/// Decodes a decimal mantissa.
#[inline]
pub(crate) fn dec_f64(m: i64, e: u8) -> f64 {
    m as f64 / POW10_F[usize::from(e)]
}

/// The mantissa of `v` at exponent `e` if the decimal decode gives back `v`
/// exactly (compared as f64 bits, f32 bits for `Float`, i64 for `Int`).
#[inline]
pub(crate) fn to_decimal(v: StoredValue, e: u8) -> Option<i64> {
    to_decimal_d(v, e).map(|(m, _)| m)
}

/// [`to_decimal`], also returning the decoded double `m / 10^e` (so callers
/// deriving the kind from it do not divide twice).
#[inline]
pub(crate) fn to_decimal_d(v: StoredValue, e: u8) -> Option<(i64, f64)> {
    let ei = usize::from(e);
    match v {
        StoredValue::Int(i) => {
            let m = i.checked_mul(POW10_I[ei])?;
            Some((m, dec_f64(m, e)))
        }
        StoredValue::Double(d) => {
            let p = d * POW10_F[ei];
            let m = round_i64(p)?;
            // Necessary condition, checked without dividing: if m / 10^e
            // rounds to d then |d·10^e − m| ≤ |d·10^e|·2^-52 (half an ulp of d,
            // scaled, plus the product's rounding). Most failing exponents
            // of a search stop here.
            if (p - m as f64).abs() > p.abs() * TOL_F64 {
                return None;
            }
            let back = dec_f64(m, e);
            (back.to_bits() == d.to_bits()).then_some((m, back))
        }
        StoredValue::Float(f) => {
            if f.is_nan() {
                return None;
            }
            let p = f64::from(f) * POW10_F[ei];
            let m = round_i64(p)?;
            // As above with f32's half ulp (2^-24) plus the f64 roundings.
            if (p - m as f64).abs() > p.abs() * TOL_F32 {
                return None;
            }
            let back = dec_f64(m, e);
            ((back as f32).to_bits() == f.to_bits()).then_some((m, back))
        }
    }
}

/// Smallest exponent at which `v` (a `Float` or `Double`) is an exact decimal.
pub(crate) fn min_exponent(v: StoredValue) -> Option<u8> {
    let d = v.as_f64();
    if !d.is_finite() {
        return None;
    }
    (0..=MAX_E).find(|&e| to_decimal(v, e).is_some())
}

/// The value a decimal point decodes to, given its kind and
/// `d = dec_f64(m, e)` (computed once by the caller).
#[inline]
pub(crate) fn dec_value_d(m: i64, e: u8, kind: u8, d: f64) -> StoredValue {
    match kind {
        KIND_INT => StoredValue::Int(if e == 0 {
            m
        } else {
            m / POW10_I[usize::from(e)]
        }),
        KIND_FLOAT => StoredValue::Float(d as f32),
        _ => StoredValue::Double(d),
    }
}

/// True if a decimal mantissa is an integral value (the "ints in a float
/// series" default: Telegraf writes 100.0 as `100`).
#[inline]
pub(crate) fn dec_integral(m: i64, e: u8) -> bool {
    m % POW10_I[usize::from(e)] == 0
}

/// The value an f64-bits point (XOR and raw modes) decodes to.
#[inline]
pub(crate) fn bits_value(bits: u64, kind: u8) -> StoredValue {
    let d = f64::from_bits(bits);
    match kind {
        KIND_INT => StoredValue::Int(d as i64),
        KIND_FLOAT => StoredValue::Float(d as f32),
        _ => StoredValue::Double(d),
    }
}

/// Integral test of the f64-bits modes' "ints in a float series" default.
#[inline]
pub(crate) fn bits_integral(bits: u64) -> bool {
    let d = f64::from_bits(bits);
    d.is_finite() && d.fract() == 0.0
}

/// The f64 bits that represent `v` in the XOR and raw modes, when decoding
/// them as `v`'s kind gives back exactly `v`.
#[inline]
pub(crate) fn to_bits(v: StoredValue) -> Option<u64> {
    match v {
        StoredValue::Double(d) => Some(d.to_bits()),
        StoredValue::Float(f) => (!f.is_nan()).then(|| f64::from(f).to_bits()),
        StoredValue::Int(i) => {
            let d = i as f64;
            (d as i64 == i).then(|| d.to_bits())
        }
    }
}

/// Bitwise equality of stored values (what "lossless" means here).
#[cfg(test)]
pub(crate) fn same_value(a: StoredValue, b: StoredValue) -> bool {
    match (a, b) {
        (StoredValue::Int(x), StoredValue::Int(y)) => x == y,
        (StoredValue::Float(x), StoredValue::Float(y)) => x.to_bits() == y.to_bits(),
        (StoredValue::Double(x), StoredValue::Double(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_decimal_values_round_trip_at_e2() {
        for cents in -100_000i64..=100_000 {
            let d: f64 = format!("{}.{:02}", cents / 100, (cents % 100).abs())
                .parse()
                .unwrap();
            let d = if cents < 0 && cents > -100 { -d } else { d };
            let m = to_decimal(StoredValue::Double(d), 2).unwrap();
            assert_eq!(dec_f64(m, 2).to_bits(), d.to_bits());
        }
    }

    #[test]
    fn exponents_and_failures() {
        assert_eq!(min_exponent(StoredValue::Double(37.21)), Some(2));
        assert_eq!(min_exponent(StoredValue::Double(37.0)), Some(0));
        assert_eq!(min_exponent(StoredValue::Float(37.25)), Some(2));
        // f32 37.21 compares as f32 bits: e = 2 suffices.
        assert_eq!(min_exponent(StoredValue::Float(37.21)), Some(2));
        assert_eq!(min_exponent(StoredValue::Double(f64::NAN)), None);
        assert_eq!(min_exponent(StoredValue::Double(1e300)), None);
        assert_eq!(min_exponent(StoredValue::Double(1e-25)), None);
        // Most doubles of moderate size are 17-digit decimals.
        assert_eq!(
            min_exponent(StoredValue::Double(std::f64::consts::PI)),
            Some(15)
        );
        // -0.0 decodes as +0.0 from m = 0: not an exact decimal.
        assert_eq!(to_decimal(StoredValue::Double(-0.0), 0), None);
        assert_eq!(to_decimal(StoredValue::Int(i64::MAX), 1), None);
        assert_eq!(to_decimal(StoredValue::Int(i64::MIN), 0), Some(i64::MIN));
    }

    /// The division-free pre-check in `to_decimal_d` never rejects a value
    /// the division would accept.
    #[test]
    fn precheck_is_only_a_necessary_condition() {
        fn reference(v: StoredValue, e: u8) -> Option<i64> {
            let ei = usize::from(e);
            match v {
                StoredValue::Double(d) => {
                    let m = round_i64(d * POW10_F[ei])?;
                    (dec_f64(m, e).to_bits() == d.to_bits()).then_some(m)
                }
                StoredValue::Float(f) => {
                    let m = round_i64(f64::from(f) * POW10_F[ei])?;
                    ((dec_f64(m, e) as f32).to_bits() == f.to_bits()).then_some(m)
                }
                StoredValue::Int(_) => None,
            }
        }
        let mut x = 0x1234_5678_9ABC_DEF0u64;
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let digits = (x >> 60) as i32; // 0..=15
            let mant = (x >> 8) as i64 % 10i64.pow((digits as u32 % 16).max(1));
            let scale = 10f64.powi((x % 23) as i32 - 11);
            let d = mant as f64 * scale;
            let v = if i % 3 == 0 {
                StoredValue::Float(d as f32)
            } else {
                StoredValue::Double(if i % 7 == 0 { f64::from_bits(x) } else { d })
            };
            if matches!(v, StoredValue::Float(f) if f.is_nan()) {
                continue;
            }
            for e in 0..=MAX_E {
                assert_eq!(to_decimal(v, e), reference(v, e), "{v:?} e={e}");
            }
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(derive_float_kind(37.25), KIND_FLOAT);
        assert_eq!(derive_float_kind(37.21), KIND_DOUBLE);
        assert_eq!(derive_float_kind(f64::NAN), KIND_DOUBLE);
        assert_eq!(derive_float_kind(-0.0), KIND_FLOAT);
        assert!(dec_integral(3700, 2));
        assert!(!dec_integral(3721, 2));
        assert!(bits_integral(100f64.to_bits()));
        assert!(!bits_integral(f64::INFINITY.to_bits()));
        assert_eq!(
            to_bits(StoredValue::Int(1 << 60)),
            Some(((1i64 << 60) as f64).to_bits())
        );
        assert_eq!(to_bits(StoredValue::Int((1 << 60) + 1)), None);
        assert_eq!(to_bits(StoredValue::Float(f32::NAN)), None);
    }
}
