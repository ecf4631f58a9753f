//! JEXL 2.1.1's values and lenient arithmetic (`JexlArithmetic` with a
//! default, non-strict `JexlEngine`), as OpenTSDB's expressions compute:
//!
//! * variables are doubles; integer literals are `Integer`/`Long`, decimal
//!   literals `Float` unless suffixed `d`;
//! * `+ - * / %` use doubles as soon as one side is a `Float` or `Double`,
//!   otherwise integers (so `1 / 2` is `0`);
//! * a division or modulo that JEXL rejects (by zero, an integer modulus
//!   that is not positive, a boolean operand) is `0.0` in lenient mode,
//!   while `+ - *` on a boolean and an integer is an error;
//! * comparisons treat NaN as equal to NaN and smaller than any number.
//!
//! Integer overflow, which JEXL widens to `BigInteger`, continues in
//! doubles here (only expressions made of literals can reach it).

use std::cmp::Ordering;

use thiserror::Error;

/// A JEXL value of the kinds an OpenTSDB expression can produce.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    /// `java.lang.Integer` or `java.lang.Long`.
    Int(i64),
    /// `java.lang.Float`, held as the double JEXL converts it to (through
    /// its decimal text, so `1.1` is exactly `1.1`).
    Float(f64),
    /// `java.lang.Double`.
    Double(f64),
    /// `java.lang.Boolean`.
    Bool(bool),
}

/// Arithmetic JEXL refuses even in lenient mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub(crate) enum ArithmeticError {
    /// `+` or `-` on a boolean in integer arithmetic.
    #[error("+/- error")]
    AddSubtract,
    /// `*` on a boolean in integer arithmetic.
    #[error("* error")]
    Multiply,
}

/// An integer-path operand: JEXL's `toBigInteger`, which refuses booleans.
fn integer(v: Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(i),
        _ => None,
    }
}

impl Value {
    /// The Java class name, for OpenTSDB's "result of type" error.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Value::Int(i) if i32::try_from(i).is_ok() => "java.lang.Integer",
            Value::Int(_) => "java.lang.Long",
            Value::Float(_) => "java.lang.Float",
            Value::Double(_) => "java.lang.Double",
            Value::Bool(_) => "java.lang.Boolean",
        }
    }

    /// JEXL's `toDouble`.
    pub(crate) fn to_double(self) -> f64 {
        match self {
            Value::Int(i) => i as f64,
            Value::Float(f) | Value::Double(f) => f,
            Value::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// JEXL's `toBoolean`: numbers are true unless zero or NaN.
    pub(crate) fn truthy(self) -> bool {
        match self {
            Value::Bool(b) => b,
            other => {
                let d = other.to_double();
                !d.is_nan() && d != 0.0
            }
        }
    }

    fn is_floating(self) -> bool {
        matches!(self, Value::Float(_) | Value::Double(_))
    }

    /// `self + right`.
    pub(crate) fn add(self, right: Value) -> Result<Value, ArithmeticError> {
        if self.is_floating() || right.is_floating() {
            return Ok(Value::Double(self.to_double() + right.to_double()));
        }
        let (l, r) = integer(self)
            .zip(integer(right))
            .ok_or(ArithmeticError::AddSubtract)?;
        Ok(l.checked_add(r)
            .map_or(Value::Double(l as f64 + r as f64), Value::Int))
    }

    /// `self - right`.
    pub(crate) fn subtract(self, right: Value) -> Result<Value, ArithmeticError> {
        if self.is_floating() || right.is_floating() {
            return Ok(Value::Double(self.to_double() - right.to_double()));
        }
        let (l, r) = integer(self)
            .zip(integer(right))
            .ok_or(ArithmeticError::AddSubtract)?;
        Ok(l.checked_sub(r)
            .map_or(Value::Double(l as f64 - r as f64), Value::Int))
    }

    /// `self * right`.
    pub(crate) fn multiply(self, right: Value) -> Result<Value, ArithmeticError> {
        if self.is_floating() || right.is_floating() {
            return Ok(Value::Double(self.to_double() * right.to_double()));
        }
        let (l, r) = integer(self)
            .zip(integer(right))
            .ok_or(ArithmeticError::Multiply)?;
        Ok(l.checked_mul(r)
            .map_or(Value::Double(l as f64 * r as f64), Value::Int))
    }

    /// `self / right`; whatever JEXL refuses is `0.0` (lenient mode).
    pub(crate) fn divide(self, right: Value) -> Value {
        if self.is_floating() || right.is_floating() {
            let r = right.to_double();
            if r == 0.0 {
                return Value::Double(0.0);
            }
            return Value::Double(self.to_double() / r);
        }
        match integer(self).zip(integer(right)) {
            Some((_, 0)) | None => Value::Double(0.0),
            Some((l, r)) => l
                .checked_div(r)
                .map_or(Value::Double(l as f64 / r as f64), Value::Int),
        }
    }

    /// `self % right`; whatever JEXL refuses is `0.0` (lenient mode).
    /// Integers use `BigInteger.mod`: never negative, and a modulus that
    /// is not positive is refused.
    pub(crate) fn modulo(self, right: Value) -> Value {
        if self.is_floating() || right.is_floating() {
            let r = right.to_double();
            if r == 0.0 {
                return Value::Double(0.0);
            }
            return Value::Double(self.to_double() % r);
        }
        match integer(self).zip(integer(right)) {
            Some((l, r)) if r > 0 => Value::Int(l.rem_euclid(r)),
            _ => Value::Double(0.0),
        }
    }

    /// Unary minus; a boolean is negated.
    pub(crate) fn negate(self) -> Value {
        match self {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Float(f) => Value::Float(-f),
            Value::Double(d) => Value::Double(-d),
            Value::Bool(b) => Value::Bool(!b),
        }
    }

    /// `==`: booleans compare by truth, everything else by [`Value::compare`].
    pub(crate) fn equals(self, right: Value) -> bool {
        if matches!(self, Value::Bool(_)) || matches!(right, Value::Bool(_)) {
            return self.truthy() == right.truthy();
        }
        self.compare(right) == Ordering::Equal
    }

    /// JEXL's `compare`: doubles when either side is floating (NaN equal to
    /// NaN and below everything), longs when either is an integer
    /// (booleans as 1/0), else booleans (false below true).
    pub(crate) fn compare(self, right: Value) -> Ordering {
        if self.is_floating() || right.is_floating() {
            let (l, r) = (self.to_double(), right.to_double());
            return match (l.is_nan(), r.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => l.partial_cmp(&r).unwrap_or(Ordering::Equal),
            };
        }
        let as_long = |v: Value| match v {
            Value::Int(i) => i,
            Value::Bool(b) => i64::from(b),
            Value::Float(f) | Value::Double(f) => f as i64,
        };
        as_long(self).cmp(&as_long(right))
    }
}

/// The double a `Float` literal stands for: JEXL reads the digits as a
/// `float` and converts it through its shortest decimal text.
pub(crate) fn float_literal(text: &str) -> Option<f64> {
    let f: f32 = text.parse().ok()?;
    if !f.is_finite() {
        return Some(f64::from(f));
    }
    format!("{f}").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_division_and_modulo() {
        let d = Value::Double;
        assert_eq!(d(1.0).divide(Value::Int(0)), d(0.0));
        assert_eq!(d(1.0).divide(d(0.0)), d(0.0));
        assert_eq!(d(1.0).divide(d(-0.0)), d(0.0));
        assert_eq!(d(1.0).modulo(d(0.0)), d(0.0));
        assert!(d(1.0).divide(d(f64::NAN)).to_double().is_nan());
        assert_eq!(d(7.5).modulo(d(2.0)), d(1.5));
        assert_eq!(d(-7.5).modulo(d(2.0)), d(-1.5));
        assert_eq!(Value::Int(1).divide(Value::Int(2)), Value::Int(0));
        assert_eq!(Value::Int(-7).divide(Value::Int(2)), Value::Int(-3));
        assert_eq!(Value::Int(-7).modulo(Value::Int(3)), Value::Int(2));
        assert_eq!(Value::Int(7).modulo(Value::Int(-3)), d(0.0));
        assert_eq!(Value::Bool(true).divide(Value::Int(2)), d(0.0));
    }

    #[test]
    fn types_and_errors() {
        assert_eq!(
            Value::Int(1).add(Value::Int(2)).map(Value::type_name),
            Ok("java.lang.Integer")
        );
        assert_eq!(Value::Int(1).add(Value::Float(2.5)), Ok(Value::Double(3.5)));
        assert_eq!(
            Value::Bool(true).add(Value::Int(1)),
            Err(ArithmeticError::AddSubtract)
        );
        assert_eq!(
            Value::Bool(true).add(Value::Double(1.0)),
            Ok(Value::Double(2.0))
        );
        assert_eq!(
            Value::Bool(true).multiply(Value::Int(1)),
            Err(ArithmeticError::Multiply)
        );
        assert_eq!(Value::Int(i64::MAX).type_name(), "java.lang.Long");
        assert_eq!(Value::Float(1.5).type_name(), "java.lang.Float");
        assert_eq!(float_literal("1.1"), Some(1.1));
        // a float keeps only a float's precision
        assert_eq!(float_literal("0.1234567891"), Some(0.12345679));
    }

    #[test]
    fn comparisons() {
        let nan = Value::Double(f64::NAN);
        assert!(nan.equals(nan));
        assert_eq!(nan.compare(Value::Double(-1e300)), Ordering::Less);
        assert!(Value::Bool(true).equals(Value::Double(2.0)));
        assert_eq!(Value::Bool(true).compare(Value::Int(0)), Ordering::Greater);
        assert!(!Value::Double(f64::NAN).truthy());
        assert!(Value::Double(-1.0).truthy());
    }
}
