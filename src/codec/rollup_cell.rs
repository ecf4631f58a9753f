//! OpenTSDB 2.4's rollup rows and cells (reference §1.15), in which
//! hourglass keeps the rollups an external job writes (`/api/rollup`,
//! telnet `rollup`): a row per series and row span ([`RowSpan`]), keyed as
//! a data row with the span's start as base time, and one cell per
//! aggregator and interval of the row.
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

use hourglass_query::civil::{civil_from_days, days_from_civil};

use super::value::{StoredValue, decode_value, value_len};

/// Interval indexes a qualifier can hold.
pub const MAX_INDEX: u32 = 1 << 12;

/// The prefix of these rows in the embedded store's rollup table (followed
/// by the interval in hours, `u16` BE, then the data row key); a shared
/// store keeps them in OpenTSDB's rollup table of that interval instead,
/// keyed by the data row key alone.
pub const EXTERNAL_ROW_PREFIX: [u8; 2] = [0xFF, 0xFD];

const DAY: u32 = 86_400;

/// The prefix of the rows of `interval`-second values:
/// [`EXTERNAL_ROW_PREFIX`] and the interval in hours (`u16` BE).
pub fn external_row_prefix(interval: u32) -> [u8; 4] {
    let [hi, lo] = u16::try_from(interval / 3600)
        .unwrap_or(u16::MAX)
        .to_be_bytes();
    [EXTERNAL_ROW_PREFIX[0], EXTERNAL_ROW_PREFIX[1], hi, lo]
}

/// How much time one rollup row holds (OpenTSDB's `rowSpan`): a fixed
/// number of seconds from the epoch (`1d`: UTC days), or a calendar month
/// or year in UTC (`1n`, `1y`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSpan {
    Secs(u32),
    Month,
    Year,
}

impl RowSpan {
    /// OpenTSDB's `rowSpan` text for rows of `interval`-second values:
    /// `<n>h` or `<n>d` (a whole number of intervals), `1n` or `1y`; at most
    /// [`MAX_INDEX`] intervals a row.
    pub fn parse(text: &str, interval: u32) -> Result<RowSpan, String> {
        let t = text.trim();
        let span = match t {
            "1n" => RowSpan::Month,
            "1y" => RowSpan::Year,
            _ => {
                let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
                let n: u32 = t[..digits].parse().map_err(|_| {
                    format!("invalid row span {text:?}: expected <n>h, <n>d, 1n or 1y")
                })?;
                let unit = match &t[digits..] {
                    "h" => 3600,
                    "d" => DAY,
                    _ => {
                        return Err(format!(
                            "invalid row span {text:?}: expected <n>h, <n>d, 1n or 1y"
                        ));
                    }
                };
                let secs = n
                    .checked_mul(unit)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("invalid row span {text:?}"))?;
                if interval == 0 || !secs.is_multiple_of(interval) {
                    return Err(format!(
                        "row span {text:?} is not a whole number of {interval}s intervals"
                    ));
                }
                RowSpan::Secs(secs)
            }
        };
        // Calendar spans: months and years in whole days.
        if matches!(span, RowSpan::Month | RowSpan::Year)
            && !interval.is_multiple_of(DAY)
            && !DAY.is_multiple_of(interval)
        {
            return Err(format!(
                "row span {text:?} needs an interval that divides a day or is whole days"
            ));
        }
        let most = match span {
            RowSpan::Secs(s) => s / interval.max(1),
            RowSpan::Month => (31 * DAY).div_ceil(interval.max(1)),
            RowSpan::Year => (366 * DAY).div_ceil(interval.max(1)),
        };
        if most > MAX_INDEX {
            return Err(format!(
                "row span {text:?} holds {most} intervals, more than the {MAX_INDEX} a qualifier can"
            ));
        }
        Ok(span)
    }

    /// The default for rows of `interval`-second values: a day under a day
    /// and a year for days (OpenTSDB's usual `1d` and `1y`); 32 intervals
    /// for longer ones, whose intervals a calendar span would not keep on
    /// epoch-aligned bounds.
    pub fn default_for(interval: u32) -> RowSpan {
        match interval {
            i if i < DAY => RowSpan::Secs(DAY),
            DAY => RowSpan::Year,
            i => RowSpan::Secs(i.saturating_mul(32)),
        }
    }

    /// The start (seconds) of the row holding `t`.
    pub fn base(self, t: u32) -> u32 {
        match self {
            RowSpan::Secs(s) => t - t % s,
            RowSpan::Month | RowSpan::Year => {
                let (y, m, _) = civil_from_days(i64::from(t / DAY));
                let m = if self == RowSpan::Year { 1 } else { m };
                secs_of_day(days_from_civil(y, m, 1))
            }
        }
    }

    /// The start of the row after the one starting at `base` (`None` past
    /// 2106).
    pub fn next(self, base: u32) -> Option<u32> {
        match self {
            RowSpan::Secs(s) => base.checked_add(s),
            RowSpan::Month | RowSpan::Year => {
                let (y, m, _) = civil_from_days(i64::from(base / DAY));
                let (y, m) = match self {
                    RowSpan::Year => (y + 1, 1),
                    _ if m == 12 => (y + 1, 1),
                    _ => (y, m + 1),
                };
                u32::try_from(i64::from(DAY) * days_from_civil(y, m, 1)).ok()
            }
        }
    }
}

fn secs_of_day(days: i64) -> u32 {
    u32::try_from(days.saturating_mul(i64::from(DAY))).unwrap_or(0)
}

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
    if value.len() != value_len(flags) {
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

    #[test]
    fn row_spans_follow_opentsdb() {
        const H: u32 = 3600;
        assert_eq!(RowSpan::parse("1d", H), Ok(RowSpan::Secs(DAY)));
        assert_eq!(RowSpan::parse("6h", H), Ok(RowSpan::Secs(6 * H)));
        assert_eq!(RowSpan::parse("1n", DAY), Ok(RowSpan::Month));
        assert_eq!(RowSpan::parse("1y", DAY), Ok(RowSpan::Year));
        assert!(RowSpan::parse("90m", H).is_err());
        assert!(
            RowSpan::parse("1d", 7 * H)
                .unwrap_err()
                .contains("whole number")
        );
        // 1h values over a year would need 8,784 indexes.
        assert!(RowSpan::parse("1y", H).unwrap_err().contains("4096"));
        assert_eq!(RowSpan::default_for(H), RowSpan::Secs(DAY));
        assert_eq!(RowSpan::default_for(DAY), RowSpan::Year);
        assert_eq!(RowSpan::default_for(7 * DAY), RowSpan::Secs(224 * DAY));
        // 2024-02-29T12:00:00Z: its month starts 2024-02-01, its year 2024-01-01.
        let t = 1_709_208_000;
        assert_eq!(RowSpan::Month.base(t), 1_706_745_600);
        assert_eq!(RowSpan::Year.base(t), 1_704_067_200);
        assert_eq!(RowSpan::Month.next(1_706_745_600), Some(1_709_251_200));
        assert_eq!(RowSpan::Year.next(1_704_067_200), Some(1_735_689_600));
        assert_eq!(RowSpan::Month.next(1_701_388_800), Some(1_704_067_200));
        assert_eq!(RowSpan::Secs(DAY).base(t), t - t % DAY);
    }
}
