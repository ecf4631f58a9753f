//! [`TierValue`]: one rollup tier value, the aggregates of one series over
//! one tier interval (an hour, a day), as `engine::rollup` stores it in
//! the rollup table (packed by row: [`super::TierRow`]) and the read path
//! folds it into a downsample bucket.
//!
//! Byte layout (drawn in `docs/format/rollup-tier.md`):
//!
//! ```text
//! value = uvarint points ‖ flags u8 ‖ [uvarint valid]
//!         ‖ [val min ‖ val max ‖ val sum] ‖ val first ‖ val last
//! ```
//!
//! `points` (> 0) counts every point, NaN included; `flags` bit 0 says some
//! are NaN and `valid` (< points) follows; min, max and sum are absent when
//! `valid` is 0. `val` is the native cell summary's value form
//! (`docs/format/native-cell.md`): the exact or near decimal, or the raw
//! bits, whichever is shortest.

use super::error::NativeError;
use super::summary::{put_val, read_val};
use super::varint::{Reader, put_uvarint};
use hourglass_query::partial::Partial;

const FLAG_NAN: u8 = 1;

/// A decoded tier value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierValue {
    /// Points in the interval, NaN included.
    pub points: u64,
    /// Their aggregates, folded per hour and merged in time order.
    pub partial: Partial,
}

impl TierValue {
    /// Appends the value's bytes; nothing for an empty partial (an interval
    /// without points has no value).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let (Some(first), Some(last)) = (self.partial.first, self.partial.last) else {
            return;
        };
        let points = self.points.max(self.partial.valid).max(1);
        put_uvarint(out, points);
        let nan = self.partial.valid < points;
        out.push(if nan { FLAG_NAN } else { 0 });
        if nan {
            put_uvarint(out, self.partial.valid);
        }
        if self.partial.valid > 0 {
            put_val(out, self.partial.min);
            put_val(out, self.partial.max);
            put_val(out, self.partial.sum);
        }
        put_val(out, first);
        put_val(out, last);
    }

    /// Reads a value that is all of `bytes`; hostile bytes give an error,
    /// never a panic.
    pub fn decode(bytes: &[u8]) -> Result<TierValue, NativeError> {
        let mut r = Reader::new(bytes, 0);
        let v = TierValue::read(&mut r)?;
        if !r.at_end() {
            return Err(r.corrupt("trailing bytes after a tier value"));
        }
        Ok(v)
    }

    /// Reads one value from `r`.
    pub(super) fn read(r: &mut Reader<'_>) -> Result<TierValue, NativeError> {
        let points = r.uvarint("tier value points")?;
        if points == 0 {
            return Err(r.corrupt("tier value without points"));
        }
        let flags = r.u8("tier value flags")?;
        if flags & !FLAG_NAN != 0 {
            return Err(r.corrupt("unknown tier value flags"));
        }
        let valid = if flags & FLAG_NAN != 0 {
            let v = r.uvarint("tier value count")?;
            if v >= points {
                return Err(r.corrupt("tier value count not below the point count"));
            }
            v
        } else {
            points
        };
        let (min, max, sum) = if valid > 0 {
            (read_val(r)?, read_val(r)?, read_val(r)?)
        } else {
            (f64::NAN, f64::NAN, f64::NAN)
        };
        let first = read_val(r)?;
        let last = read_val(r)?;
        Ok(TierValue {
            points,
            partial: Partial {
                valid,
                min,
                max,
                sum,
                first: Some(first),
                last: Some(last),
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    fn same(a: &Partial, b: &Partial) -> bool {
        a.valid == b.valid
            && [a.min, a.max, a.sum, a.first.unwrap(), a.last.unwrap()]
                .iter()
                .zip([b.min, b.max, b.sum, b.first.unwrap(), b.last.unwrap()])
                .all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn values_come_back_bit_for_bit() {
        for values in [
            vec![37.21, 36.9, 38.15],
            vec![f64::NAN, 2.0, f64::NAN],
            vec![f64::NAN],
            vec![-0.0, f64::INFINITY, 5e-324, 0.1 + 0.2],
        ] {
            let mut p = Partial::EMPTY;
            for v in &values {
                p.push(*v);
            }
            let tv = TierValue {
                points: values.len() as u64,
                partial: p,
            };
            let mut out = Vec::new();
            tv.encode(&mut out);
            let back = TierValue::decode(&out).unwrap();
            assert_eq!(back.points, tv.points);
            assert!(same(&back.partial, &p), "{values:?}");
        }
        // Three two-decimal values: version, count, flags, five short values.
        let mut p = Partial::EMPTY;
        for v in [37.21, 36.9, 38.15] {
            p.push(v);
        }
        let mut out = Vec::new();
        TierValue {
            points: 3,
            partial: p,
        }
        .encode(&mut out);
        assert!(out.len() <= 20, "{out:02X?}");
        let mut none = Vec::new();
        TierValue {
            points: 0,
            partial: Partial::EMPTY,
        }
        .encode(&mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn malformed_values_are_errors() {
        for bad in [
            &[][..],
            &[0, 0],
            &[1, 2],
            &[3, 1, 3],
            &[1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 9],
            &[1, 0, 0xFF, 0],
        ] {
            assert!(TierValue::decode(bad).is_err(), "{bad:?}");
        }
        assert!(TierValue::decode(&[1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]).is_ok());
    }
}
