//! OpenTSDB 2.4's rollup cells (reference §1.15), in which hourglass keeps
//! the rollups an external job writes (`/api/rollup`, telnet `rollup`):
//! one cell per aggregator and interval of a row.
//!
//! ```text
//! qualifier (3 bytes): [ aggregator id : 8 ][ interval index : 12 ][ flags : 4 ]
//! value:               a data point's value for those flags (§1.6)
//! ```
//!
//! The interval index counts intervals from the row's base time; the
//! flags are a data point's (`len - 1` for integers, `0xB` a float,
//! `0xF` a double). OpenTSDB's legacy `"<agg>:"`-prefixed qualifiers are
//! not written by hourglass and not read.

use super::value::{StoredValue, decode_value, value_len};

/// Interval indexes a qualifier can hold.
pub const MAX_INDEX: u32 = 1 << 12;

/// One decoded rollup cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RollupCell {
    pub aggregator: u8,
    pub index: u32,
    pub value: StoredValue,
}

/// The qualifier of the value of aggregator `aggregator` for the interval
/// at `index` (below [`MAX_INDEX`]).
pub fn rollup_qualifier(aggregator: u8, index: u32, flags: u8) -> [u8; 3] {
    let packed = ((index.min(MAX_INDEX - 1) as u16) << 4) | u16::from(flags & 0x0F);
    let [hi, lo] = packed.to_be_bytes();
    [aggregator, hi, lo]
}

/// The interval index of a rollup qualifier (without the family byte).
pub fn rollup_index(qualifier: &[u8]) -> Option<u32> {
    let [_, hi, lo] = <[u8; 3]>::try_from(qualifier).ok()?;
    Some(u32::from(u16::from_be_bytes([hi, lo]) >> 4))
}

/// Decodes a rollup cell from its qualifier (without the family byte) and
/// value; `None` for bytes OpenTSDB does not write (a wrong length).
pub fn decode_rollup_cell(qualifier: &[u8], value: &[u8]) -> Option<RollupCell> {
    let [aggregator, hi, lo] = <[u8; 3]>::try_from(qualifier).ok()?;
    let packed = u16::from_be_bytes([hi, lo]);
    let flags = (packed & 0x0F) as u8;
    if value.len() != value_len(flags) && !(flags & 0x08 != 0 && value.len() == 8) {
        return None;
    }
    Some(RollupCell {
        aggregator,
        index: u32::from(packed >> 4),
        value: decode_value(flags, value)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_follow_opentsdb() {
        // Aggregator 0 (sum), interval 5 of a row, an 8-byte integer.
        assert_eq!(rollup_qualifier(0, 5, 7), [0x00, 0x00, 0x57]);
        assert_eq!(rollup_qualifier(3, 23, 0xB), [0x03, 0x01, 0x7B]);
        let c = decode_rollup_cell(&[0x01, 0x01, 0x77], &42i64.to_be_bytes()).unwrap();
        assert_eq!(
            c,
            RollupCell {
                aggregator: 1,
                index: 23,
                value: StoredValue::Int(42)
            }
        );
        let c = decode_rollup_cell(&[0x00, 0x00, 0x0B], &1.5f32.to_bits().to_be_bytes()).unwrap();
        assert_eq!(c.value, StoredValue::Float(1.5));
        assert_eq!(rollup_index(&[0x03, 0x01, 0x7B]), Some(23));
        let c = decode_rollup_cell(&[0x00, 0x00, 0x0F], &2.5f64.to_bits().to_be_bytes()).unwrap();
        assert_eq!(c.value, StoredValue::Double(2.5));
        // Wrong lengths and qualifiers are refused, not misread.
        assert!(decode_rollup_cell(&[0x00, 0x00, 0x07], &[1, 2]).is_none());
        assert!(decode_rollup_cell(&[0x00, 0x00], &[1]).is_none());
        assert!(decode_rollup_cell(&[0x00, 0x00, 0x0B], &[1, 2, 3]).is_none());
    }
}
