//! [`TierRow`]: the values of one rollup tier row (one series, one span:
//! a day of hours, 32 days, …) packed into one cell, so that a scan reads
//! one entry per row rather than one per interval.
//!
//! Byte layout (version 1, drawn in `docs/format/rollup-tier.md`):
//!
//! ```text
//! row cell = version u8 (0x01) ‖ (uvarint index ‖ tier value)*
//! ```
//!
//! Indexes (the interval's position in the span) strictly increase; a row
//! without values is not stored.

use super::error::NativeError;
use super::rollup::TierValue;
use super::varint::{Reader, put_uvarint};

/// The version byte this build writes.
pub const TIER_ROW_V1: u8 = 0x01;

/// Most intervals a row may hold (a span of 32 days of hours is 768).
const MAX_INDEX: u64 = 1 << 16;

/// A tier row's values by interval index, in index order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TierRow {
    pub values: Vec<(u32, TierValue)>,
}

impl TierRow {
    /// The row cell's bytes (`values` in index order).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + self.values.len() * 16);
        out.push(TIER_ROW_V1);
        for (index, value) in &self.values {
            put_uvarint(&mut out, u64::from(*index));
            value.encode(&mut out);
        }
        out
    }

    /// Reads a row cell; hostile bytes give an error, never a panic.
    pub fn decode(bytes: &[u8]) -> Result<TierRow, NativeError> {
        let mut r = Reader::new(bytes, 0);
        match r.u8("tier row version")? {
            TIER_ROW_V1 => {}
            _ => return Err(r.corrupt("unknown tier row version")),
        }
        let mut values: Vec<(u32, TierValue)> = Vec::new();
        while !r.at_end() {
            let index = r.uvarint("tier row index")?;
            if index >= MAX_INDEX || values.last().is_some_and(|(i, _)| u64::from(*i) >= index) {
                return Err(r.corrupt("tier row indexes out of order"));
            }
            values.push((index as u32, TierValue::read(&mut r)?));
        }
        Ok(TierRow { values })
    }

    /// Sets (or, with `None`, removes) the value at `index`.
    pub fn set(&mut self, index: u32, value: Option<TierValue>) {
        match (self.values.binary_search_by_key(&index, |(i, _)| *i), value) {
            (Ok(at), Some(v)) => self.values[at].1 = v,
            (Ok(at), None) => {
                self.values.remove(at);
            }
            (Err(at), Some(v)) => self.values.insert(at, (index, v)),
            (Err(_), None) => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use hourglass_query::partial::Partial;

    fn value(v: f64) -> TierValue {
        let mut p = Partial::EMPTY;
        p.push(v);
        TierValue {
            points: 1,
            partial: p,
        }
    }

    #[test]
    fn rows_come_back_and_updates_keep_the_order() {
        let mut row = TierRow::default();
        for (i, v) in [(5, 1.5), (0, 2.0), (23, -0.0), (5, 7.25)] {
            row.set(i, Some(value(v)));
        }
        row.set(9, None);
        assert_eq!(
            row.values.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [0, 5, 23]
        );
        assert_eq!(row.values[1].1.partial.max, 7.25);
        let bytes = row.encode();
        assert_eq!(bytes[0], TIER_ROW_V1);
        assert_eq!(TierRow::decode(&bytes).unwrap(), row);
        row.set(0, None);
        assert_eq!(TierRow::decode(&row.encode()).unwrap().values.len(), 2);
        assert_eq!(TierRow::decode(&[TIER_ROW_V1]).unwrap(), TierRow::default());
    }

    #[test]
    fn malformed_rows_are_errors() {
        let one = {
            let mut b = Vec::new();
            value(1.0).encode(&mut b);
            b
        };
        let row = |indexes: &[u8]| {
            let mut b = vec![TIER_ROW_V1];
            for i in indexes {
                b.push(*i);
                b.extend_from_slice(&one);
            }
            b
        };
        assert!(TierRow::decode(&row(&[1, 2])).is_ok());
        for bad in [
            vec![],
            vec![2],
            row(&[2, 2]),
            row(&[3, 1]),
            {
                let mut b = row(&[1]);
                b.pop();
                b
            },
            vec![
                TIER_ROW_V1,
                0x80,
                0x80,
                0x04,
                1,
                0,
                0,
                1,
                0,
                1,
                0,
                1,
                0,
                1,
                0,
                1,
            ],
        ] {
            assert!(TierRow::decode(&bad).is_err(), "{bad:02X?}");
        }
    }
}
