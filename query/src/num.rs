//! [`Num`], the integer-or-double value that flows through the whole pipeline.
//!
//! OpenTSDB keeps the integer/floating distinction all the way to the JSON
//! output (integers print as JSON integers, doubles with Java formatting), and
//! the cross-series iterator's integer mode depends on it, so values are never
//! collapsed to `f64` early.

/// A data point value: a 64-bit integer or a double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An integer value.
    Int(i64),
    /// A floating-point value (may be NaN after fill policies).
    Float(f64),
}

impl Num {
    /// The value as a double (Java's `toDouble`).
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(v) => v as f64,
            Num::Float(v) => v,
        }
    }

    /// Whether this is an integer value.
    pub fn is_int(self) -> bool {
        matches!(self, Num::Int(_))
    }
}

impl From<i64> for Num {
    fn from(v: i64) -> Self {
        Num::Int(v)
    }
}

impl From<f64> for Num {
    fn from(v: f64) -> Self {
        Num::Float(v)
    }
}
