//! The ingest data model: [`Point`], [`Timestamp`], [`Value`] and the per-point error [`PutError`].
//!
//! [`Value`] also knows OpenTSDB's storage encoding (smallest big-endian integer width, 4-byte
//! float, 8-byte double and their qualifier flags), which the "bad timestamp" message needs.

use std::borrow::Cow;
use std::fmt;

use crate::messages::MSG_BAD_NUMBER;

/// Raw timestamp as sent.
///
/// OpenTSDB rule: a value greater than 4294967295 (`u32::MAX`) is milliseconds, otherwise seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// `true` when the raw value is a millisecond timestamp (`> 4294967295`).
    pub fn is_ms(self) -> bool {
        self.0 > u64::from(u32::MAX)
    }

    /// The timestamp in milliseconds: seconds × 1000, or the raw value when it already is ms.
    pub fn as_millis(self) -> u64 {
        if self.is_ms() {
            self.0
        } else {
            // Cannot overflow: at most 4294967295 * 1000.
            self.0 * 1000
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A data point value, classified the way OpenTSDB classifies the text it was sent
/// (see [`crate::number::parse_value`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A Java `long` (text without `.`, `e`, `E`).
    Int(i64),
    /// A double that is exactly representable as a 4-byte float.
    Float(f32),
    /// Any other finite double.
    Double(f64),
}

impl Value {
    /// A finite double as OpenTSDB stores it: a 4-byte [`Value::Float`] when the double is
    /// exactly representable as one, else an 8-byte [`Value::Double`].
    pub fn from_double(double: f64) -> Value {
        let float = double as f32;
        if f64::from(float) == double {
            Value::Float(float)
        } else {
            Value::Double(double)
        }
    }

    /// OpenTSDB's value bytes: integers big-endian on the smallest of 1/2/4/8 bytes,
    /// floats as 4-byte and doubles as 8-byte big-endian IEEE-754.
    pub fn encode(self) -> Vec<u8> {
        match self {
            Value::Int(v) => {
                if let Ok(b) = i8::try_from(v) {
                    b.to_be_bytes().to_vec()
                } else if let Ok(s) = i16::try_from(v) {
                    s.to_be_bytes().to_vec()
                } else if let Ok(i) = i32::try_from(v) {
                    i.to_be_bytes().to_vec()
                } else {
                    v.to_be_bytes().to_vec()
                }
            }
            Value::Float(f) => f.to_bits().to_be_bytes().to_vec(),
            Value::Double(d) => d.to_bits().to_be_bytes().to_vec(),
        }
    }

    /// The low 4 bits of the qualifier: `len - 1` for integers, `0xB` for floats, `0xF` for doubles.
    pub fn flags(self) -> u8 {
        match self {
            Value::Int(v) => {
                if i8::try_from(v).is_ok() {
                    0
                } else if i16::try_from(v).is_ok() {
                    1
                } else if i32::try_from(v).is_ok() {
                    3
                } else {
                    7
                }
            }
            Value::Float(_) => 0xB,
            Value::Double(_) => 0xF,
        }
    }

    /// The value as an `f64` (integers may lose precision beyond 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Int(v) => v as f64,
            Value::Float(f) => f64::from(f),
            Value::Double(d) => d,
        }
    }
}

/// Canonical text whose classification by [`crate::number::parse_value`] yields the same value:
/// integers in decimal, floats and doubles as the shortest `f64` text that round-trips
/// (always containing `.` or `e`).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(x) => write!(f, "{:?}", f64::from(*x)),
            Value::Double(d) => write!(f, "{d:?}"),
        }
    }
}

/// One validated data point. Strings borrow from the input where possible.
#[derive(Clone, Debug, PartialEq)]
pub struct Point<'a> {
    /// Metric name (validated).
    pub metric: Cow<'a, str>,
    /// Raw timestamp (> 0; ms values <= [`crate::timestamp::MAX_TIMESTAMP_MS`]).
    pub timestamp: Timestamp,
    /// Classified value.
    pub value: Value,
    /// In input order; an exact duplicate `k=v` appears once.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl Point<'_> {
    /// Detaches the point from the buffer it was parsed from.
    pub fn into_owned(self) -> Point<'static> {
        Point {
            metric: Cow::Owned(self.metric.into_owned()),
            timestamp: self.timestamp,
            value: self.value,
            tags: self
                .tags
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
        }
    }
}

/// Semantic or parse failure of one data point.
///
/// The variants carry OpenTSDB's message *without* the `put: ...` prefix; [`fmt::Display`] and
/// [`PutError::telnet_line`] add it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PutError {
    /// Java `IllegalArgumentException`. Telnet: `put: illegal argument: {msg}`; HTTP: `{msg}`.
    #[error("put: illegal argument: {0}")]
    IllegalArgument(String),
    /// Java `NumberFormatException`. Telnet: `put: invalid value: {msg}`;
    /// HTTP: `Unable to parse value to a number`.
    #[error("put: invalid value: {0}")]
    InvalidValue(String),
}

impl PutError {
    /// The full telnet reply line, without the trailing newline.
    pub fn telnet_line(&self) -> String {
        self.to_string()
    }

    /// The telnet reply line of another command that parses as `put` does (`rollup`):
    /// `<command>: illegal argument: …`.
    pub fn line_of(&self, command: &str) -> String {
        match self {
            PutError::IllegalArgument(m) => format!("{command}: illegal argument: {m}"),
            PutError::InvalidValue(m) => format!("{command}: invalid value: {m}"),
        }
    }

    /// The bare message (no prefix).
    pub fn message(&self) -> &str {
        match self {
            PutError::IllegalArgument(m) | PutError::InvalidValue(m) => m,
        }
    }

    /// The per-point `error` text `/api/put` reports for this failure.
    pub fn http_message(&self) -> &str {
        match self {
            PutError::IllegalArgument(m) => m,
            PutError::InvalidValue(_) => MSG_BAD_NUMBER,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::number::parse_value;

    #[test]
    fn timestamp_seconds_vs_ms() {
        assert!(!Timestamp(4_294_967_295).is_ms());
        assert!(Timestamp(4_294_967_296).is_ms());
        assert_eq!(Timestamp(1_479_496_100).as_millis(), 1_479_496_100_000);
        assert_eq!(Timestamp(1_364_410_924_250).as_millis(), 1_364_410_924_250);
        assert_eq!(Timestamp(4_294_967_295).as_millis(), 4_294_967_295_000);
    }

    #[test]
    fn value_encoding_matches_opentsdb_vectors() {
        assert_eq!(Value::Int(42).encode(), vec![0x2A]);
        assert_eq!(Value::Int(42).flags(), 0);
        assert_eq!(Value::Int(-42).encode(), vec![0xD6]);
        assert_eq!(Value::Int(257).encode(), vec![0x01, 0x01]);
        assert_eq!(Value::Int(257).flags(), 1);
        assert_eq!(Value::Int(65537).encode(), vec![0, 1, 0, 1]);
        assert_eq!(Value::Int(65537).flags(), 3);
        assert_eq!(
            Value::Int(4_294_967_296).encode(),
            vec![0, 0, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(Value::Int(4_294_967_296).flags(), 7);
        assert_eq!(Value::Float(42.5).encode(), vec![0x42, 0x2A, 0, 0]);
        assert_eq!(Value::Float(42.5).flags(), 0xB);
        assert_eq!(
            Value::Double(0.1).encode(),
            0.1f64.to_bits().to_be_bytes().to_vec()
        );
        assert_eq!(Value::Double(0.1).flags(), 0xF);
    }

    #[test]
    fn value_display_round_trips_classification() {
        for v in [
            Value::Int(-5),
            Value::Float(1300.0),
            Value::Float(0.1),
            Value::Double(0.1),
            Value::Double(1e300),
            Value::Float(-0.0),
        ] {
            assert_eq!(parse_value(&v.to_string()), Ok(v), "{v}");
        }
    }

    #[test]
    fn put_error_texts() {
        let e = PutError::IllegalArgument("invalid tag: ab".into());
        assert_eq!(e.telnet_line(), "put: illegal argument: invalid tag: ab");
        assert_eq!(e.http_message(), "invalid tag: ab");
        let e = PutError::InvalidValue("Invalid character 'N' in NaN".into());
        assert_eq!(
            e.telnet_line(),
            "put: invalid value: Invalid character 'N' in NaN"
        );
        assert_eq!(e.http_message(), "Unable to parse value to a number");
        assert_eq!(e.message(), "Invalid character 'N' in NaN");
    }
}
