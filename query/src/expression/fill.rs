//! OpenTSDB's `NumericFillPolicy`: what a missing point (or a NaN) of a
//! series counts as inside an expression. A metric's policy defaults to
//! `zero`, an expression's (used when another expression reads it) to
//! `nan`.

use crate::expression::error::ExpressionError;

/// The policy names (`FillPolicy` in OpenTSDB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FillKind {
    /// `none`: NaN inside expressions.
    None,
    /// `zero`.
    Zero,
    /// `nan`.
    Nan,
    /// `null`: NaN while computing.
    Null,
    /// `scalar`: a given value.
    Scalar,
}

impl FillKind {
    /// Looks a name up, ignoring case (OpenTSDB's `FillPolicy.fromString`).
    pub(crate) fn parse(name: &str) -> Result<FillKind, ExpressionError> {
        [
            FillKind::None,
            FillKind::Zero,
            FillKind::Nan,
            FillKind::Null,
            FillKind::Scalar,
        ]
        .into_iter()
        .find(|kind| kind.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| ExpressionError::UnknownFillPolicy(name.to_string()))
    }

    /// The name OpenTSDB writes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FillKind::None => "none",
            FillKind::Zero => "zero",
            FillKind::Nan => "nan",
            FillKind::Null => "null",
            FillKind::Scalar => "scalar",
        }
    }
}

/// A validated policy and the value it fills with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NumericFillPolicy {
    pub kind: FillKind,
    pub value: f64,
}

impl NumericFillPolicy {
    /// Fills with 0 (a metric's default).
    pub(crate) const ZERO: NumericFillPolicy = NumericFillPolicy {
        kind: FillKind::Zero,
        value: 0.0,
    };
    /// Fills with NaN (an expression's default).
    pub(crate) const NAN: NumericFillPolicy = NumericFillPolicy {
        kind: FillKind::Nan,
        value: f64::NAN,
    };

    /// `NumericFillPolicy.validate`: without a policy the value picks one
    /// (0 → zero, NaN → nan, else scalar); with one, the value must suit it.
    pub(crate) fn new(kind: Option<FillKind>, value: f64) -> Result<Self, ExpressionError> {
        let nan_or_zero = value == 0.0 || value.is_nan();
        let (kind, value) = match kind {
            None if value == 0.0 => (FillKind::Zero, value),
            None if value.is_nan() => (FillKind::Nan, value),
            None => (FillKind::Scalar, value),
            Some(kind @ (FillKind::None | FillKind::Nan)) if nan_or_zero => (kind, f64::NAN),
            Some(FillKind::None | FillKind::Nan) => return Err(ExpressionError::NanFillValue),
            Some(FillKind::Zero) if value == 0.0 => (FillKind::Zero, 0.0),
            Some(FillKind::Zero) => return Err(ExpressionError::ZeroFillValue),
            Some(FillKind::Null) if nan_or_zero => (FillKind::Null, f64::NAN),
            Some(FillKind::Null) => return Err(ExpressionError::NullFillValue),
            Some(FillKind::Scalar) => (FillKind::Scalar, value),
        };
        Ok(NumericFillPolicy { kind, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_as_opentsdb() {
        let p = NumericFillPolicy::new(None, 0.0).unwrap();
        assert_eq!(p.kind, FillKind::Zero);
        let p = NumericFillPolicy::new(None, f64::NAN).unwrap();
        assert_eq!(p.kind, FillKind::Nan);
        let p = NumericFillPolicy::new(None, 42.0).unwrap();
        assert_eq!((p.kind, p.value), (FillKind::Scalar, 42.0));
        // a missing value reads as 0, which nan and null turn into NaN
        let p = NumericFillPolicy::new(Some(FillKind::Nan), 0.0).unwrap();
        assert!(p.value.is_nan());
        let p = NumericFillPolicy::new(Some(FillKind::Null), 0.0).unwrap();
        assert!(p.value.is_nan());
        let p = NumericFillPolicy::new(Some(FillKind::Scalar), 0.0).unwrap();
        assert_eq!(p.value, 0.0);
        assert_eq!(
            NumericFillPolicy::new(Some(FillKind::Nan), 1.0),
            Err(ExpressionError::NanFillValue)
        );
        assert_eq!(
            NumericFillPolicy::new(Some(FillKind::None), 1.0),
            Err(ExpressionError::NanFillValue)
        );
        assert_eq!(
            NumericFillPolicy::new(Some(FillKind::Zero), 1.0),
            Err(ExpressionError::ZeroFillValue)
        );
        assert_eq!(
            NumericFillPolicy::new(Some(FillKind::Null), 1.0),
            Err(ExpressionError::NullFillValue)
        );
        assert_eq!(FillKind::parse("SCALAR"), Ok(FillKind::Scalar));
        assert_eq!(
            FillKind::parse("bogus"),
            Err(ExpressionError::UnknownFillPolicy("bogus".into()))
        );
    }
}
