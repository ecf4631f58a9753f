//! OpenTSDB's number rules, reproduced exactly: `Tags.parseLong` ([`parse_long`]) and the
//! string-based value classification shared by telnet `put` and HTTP `/api/put` ([`parse_value`]).
//!
//! Deliberate deviations from OpenTSDB (documented here so callers know):
//! * **Integers outside `i64`.** An integer-looking value that `parseLong` rejects but whose
//!   magnitude fits in `u64` — all digits after an optional sign — is accepted as the nearest
//!   [`Value::Double`], whatever its sign (collectd COUNTER/ABSOLUTE and Telegraf uint64 send
//!   such positive values; a negative one is treated the same way, so `9223372036854775808` and
//!   `-9223372036854775809` behave alike). OpenTSDB refuses both (`Overflow`). A wider integer is
//!   refused with `parseLong`'s message, on either side.
//! * **Double grammar.** Java's `Double.parseDouble` grammar is followed for decimal forms
//!   (surrounding chars `<= ' '` trimmed, optional sign, optional exponent, optional `f`/`F`/`d`/`D`
//!   suffix); Java's hexadecimal float literals (`0x1.0p3`) are *not* supported and are reported
//!   as malformed.

use crate::point::Value;

/// Why a value text is not a storable number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Java `NumberFormatException` with its message (`Invalid character 'N' in NaN`,
    /// `For input string: "1.2abc"`, ...).
    #[error("{0}")]
    NotANumber(String),
    /// The number parsed but is not finite: carries Java's text for it
    /// (`Infinity`, `-Infinity` or `NaN`).
    #[error("value is NaN or Infinite: {0}")]
    NonFinite(&'static str),
}

/// OpenTSDB's `Tags.parseLong`, with its exact error messages.
///
/// Optional leading `+`/`-`, then ASCII digits only; at most 19 digits (20 characters with a sign,
/// lengths counted in UTF-16 units like Java); no overflow (`-9223372036854775808` is valid,
/// `+9223372036854775808` is not).
pub fn parse_long(text: &str) -> Result<i64, String> {
    let utf16_len: usize = text.chars().map(char::len_utf16).sum();
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return Err("Empty string".to_owned());
    };
    let signed = first == '+' || first == '-';
    if signed {
        if utf16_len == 1 {
            return Err(format!("Just a sign, no value: {text}"));
        } else if utf16_len > 20 {
            return Err(format!("Value too long: {text}"));
        }
    } else if utf16_len > 19 {
        return Err(format!("Value too long: {text}"));
    }
    // Accumulate negatively (so i64::MIN fits) with Java's wrapping arithmetic; for at most 19
    // digits an overflow always shows up as a positive accumulator.
    let mut v: i64 = 0;
    let digits = if signed { chars } else { text.chars() };
    for (i, c) in digits.enumerate() {
        let Some(d) = c.to_digit(10) else {
            return Err(format!("Invalid character '{c}' in {text}"));
        };
        if i > 0 {
            v = v.wrapping_mul(10);
        }
        v = v.wrapping_sub(i64::from(d));
    }
    if v > 0 {
        Err(format!("Overflow in {text}"))
    } else if first == '-' {
        Ok(v)
    } else if v == i64::MIN {
        Err(format!("Overflow in {text}"))
    } else {
        Ok(-v)
    }
}

/// Classifies a value text the way OpenTSDB does (§3.4 step 6).
///
/// * No `.`, `e` or `E` → [`parse_long`] → [`Value::Int`]; on failure an integer whose
///   magnitude fits in `u64` (see the module doc) becomes [`Value::Double`], anything else is
///   [`ValueError::NotANumber`] with `parseLong`'s message.
/// * Otherwise a Java double: malformed → `For input string: "<text>"`; NaN or ±Infinity
///   (e.g. `1e400`) → [`ValueError::NonFinite`]; exactly representable as `f32` →
///   [`Value::Float`], else [`Value::Double`].
pub fn parse_value(text: &str) -> Result<Value, ValueError> {
    if !text.contains(['.', 'e', 'E']) {
        return match parse_long(text) {
            Ok(v) => Ok(Value::Int(v)),
            Err(msg) => match parse_wide_integer(text) {
                Some(d) => Ok(Value::Double(d)),
                None => Err(ValueError::NotANumber(msg)),
            },
        };
    }
    let d = parse_java_double(text)?;
    if d.is_nan() {
        return Err(ValueError::NonFinite("NaN"));
    }
    if d.is_infinite() {
        return Err(ValueError::NonFinite(if d > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }));
    }
    Ok(Value::from_double(d))
}

/// An optional sign, then digits whose value fits in a `u64`: the nearest double.
fn parse_wide_integer(text: &str) -> Option<f64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.parse::<u64>().ok()? as f64;
    Some(if negative { -magnitude } else { magnitude })
}

/// Java `Double.parseDouble` restricted to decimal literals.
fn parse_java_double(text: &str) -> Result<f64, ValueError> {
    let t = text.trim_matches(|c: char| c <= ' ');
    let malformed = || ValueError::NotANumber(format!("For input string: \"{t}\""));
    let body = t.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(t);
    let b = body.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let count_digits = |mut i: usize| {
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i, i - start)
    };
    let (next, int_digits) = count_digits(i);
    i = next;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        (i, frac_digits) = count_digits(i + 1);
    }
    if int_digits + frac_digits == 0 {
        return Err(malformed());
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (next, exp_digits) = count_digits(i);
        if exp_digits == 0 {
            return Err(malformed());
        }
        i = next;
    }
    if i != b.len() {
        return Err(malformed());
    }
    body.parse::<f64>().map_err(|_| malformed())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use super::*;

    fn nan(msg: &str) -> Result<Value, ValueError> {
        Err(ValueError::NotANumber(msg.to_owned()))
    }

    #[test]
    fn parse_long_accepts() {
        assert_eq!(parse_long("0"), Ok(0));
        assert_eq!(parse_long("42"), Ok(42));
        assert_eq!(parse_long("+42"), Ok(42));
        assert_eq!(parse_long("-42"), Ok(-42));
        assert_eq!(parse_long("007"), Ok(7));
        assert_eq!(parse_long("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_long("+9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_long("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_long("-0000000000000000001"), Ok(-1));
    }

    #[test]
    fn parse_long_messages() {
        let err = |s: &str| parse_long(s).err();
        assert_eq!(err(""), Some("Empty string".into()));
        assert_eq!(err("+"), Some("Just a sign, no value: +".into()));
        assert_eq!(err("-"), Some("Just a sign, no value: -".into()));
        assert_eq!(
            err("notatime"),
            Some("Invalid character 'n' in notatime".into())
        );
        assert_eq!(err("NaN"), Some("Invalid character 'N' in NaN".into()));
        assert_eq!(err("-nan"), Some("Invalid character 'n' in -nan".into()));
        assert_eq!(err("inf"), Some("Invalid character 'i' in inf".into()));
        assert_eq!(err("0x10"), Some("Invalid character 'x' in 0x10".into()));
        assert_eq!(err("--1"), Some("Invalid character '-' in --1".into()));
        assert_eq!(err("1-"), Some("Invalid character '-' in 1-".into()));
        assert_eq!(err(" 1"), Some("Invalid character ' ' in  1".into()));
        assert_eq!(
            err("12345678901234567890"),
            Some("Value too long: 12345678901234567890".into())
        );
        assert_eq!(
            err("-123456789012345678901"),
            Some("Value too long: -123456789012345678901".into())
        );
        // Too long wins over invalid characters (length is checked first).
        assert_eq!(
            err("abcdefghijklmnopqrstu"),
            Some("Value too long: abcdefghijklmnopqrstu".into())
        );
        assert_eq!(
            err("9223372036854775808"),
            Some("Overflow in 9223372036854775808".into())
        );
        assert_eq!(
            err("+9223372036854775808"),
            Some("Overflow in +9223372036854775808".into())
        );
        assert_eq!(
            err("-9223372036854775809"),
            Some("Overflow in -9223372036854775809".into())
        );
        assert_eq!(
            err("9999999999999999999"),
            Some("Overflow in 9999999999999999999".into())
        );
        // Java counts UTF-16 units: 10 astral chars are 20 units.
        let astral = "😀".repeat(10);
        assert_eq!(err(&astral), Some(format!("Value too long: {astral}")));
        assert_eq!(err("é"), Some("Invalid character 'é' in é".into()));
    }

    #[test]
    fn classify_ints() {
        assert_eq!(parse_value("42"), Ok(Value::Int(42)));
        assert_eq!(parse_value("-42"), Ok(Value::Int(-42)));
        assert_eq!(parse_value("745590784"), Ok(Value::Int(745_590_784)));
        assert_eq!(parse_value("21580140544"), Ok(Value::Int(21_580_140_544)));
    }

    #[test]
    fn classify_floats() {
        for (s, f) in [
            ("42.5", 42.5f32),
            ("1.3E3", 1300.0),
            ("1e3", 1000.0),
            ("1.3e3", 1300.0),
            ("0.6116398572921753", 0.611_639_857_292_175_3),
            ("1.01417856E9", 1.014_178_56e9),
            ("3.400390625", 3.400_390_625),
            ("1.40771484375", 1.407_714_843_75),
            ("12.500000", 12.5),
            ("42.22e3", 42220.0),
            ("0.0", 0.0),
            ("-0.0", -0.0),
            ("1e-400", 0.0),
            ("5.", 5.0),
            (".5", 0.5),
            ("+1.5", 1.5),
            ("1.5f", 1.5),
            ("1.5D", 1.5),
            (" 1.5\t", 1.5),
        ] {
            assert_eq!(parse_value(s), Ok(Value::Float(f)), "{s}");
        }
    }

    #[test]
    fn classify_doubles() {
        for (s, d) in [
            ("0.1", 0.1f64),
            ("12.3", 12.3),
            ("1.234556789123456", 1.234_556_789_123_456),
            ("4.508277154265837E7", 4.508_277_154_265_837e7),
            ("8.208611994536002E8", 8.208_611_994_536_002e8),
            ("42.22e-3", 0.04222),
            ("1e-05", 1e-5),
            ("1e-07", 1e-7),
            ("1e+20", 1e20),
            ("3.5e38", 3.5e38),
        ] {
            assert_eq!(parse_value(s), Ok(Value::Double(d)), "{s}");
        }
    }

    #[test]
    fn classify_u64_counters() {
        assert_eq!(
            parse_value("18446744073709551615"),
            Ok(Value::Double(1.844_674_407_370_955_2e19))
        );
        assert_eq!(
            parse_value("9223372036854775808"),
            Ok(Value::Double(9_223_372_036_854_775_808.0))
        );
        assert_eq!(
            parse_value("+18446744073709551615"),
            Ok(Value::Double(18_446_744_073_709_551_615u64 as f64))
        );
        assert_eq!(
            parse_value("18446744073709551616"),
            nan("Value too long: 18446744073709551616")
        );
        // Issue 22, defect 8: the same rule on both sides of i64.
        assert_eq!(
            parse_value("-9223372036854775809"),
            Ok(Value::Double(-9_223_372_036_854_775_809.0))
        );
        assert_eq!(
            parse_value("-18446744073709551615"),
            Ok(Value::Double(-1.844_674_407_370_955_2e19))
        );
        assert_eq!(
            parse_value("-18446744073709551616"),
            nan("Value too long: -18446744073709551616")
        );
        assert_eq!(
            parse_value("-9223372036854775808"),
            Ok(Value::Int(i64::MIN))
        );
    }

    #[test]
    fn classify_errors() {
        assert_eq!(parse_value("NaN"), nan("Invalid character 'N' in NaN"));
        assert_eq!(parse_value("-nan"), nan("Invalid character 'n' in -nan"));
        assert_eq!(parse_value("inf"), nan("Invalid character 'i' in inf"));
        assert_eq!(parse_value("-inf"), nan("Invalid character 'i' in -inf"));
        assert_eq!(
            parse_value("Infinity"),
            nan("Invalid character 'I' in Infinity")
        );
        assert_eq!(parse_value("true"), nan("For input string: \"true\""));
        assert_eq!(parse_value("false"), nan("For input string: \"false\""));
        assert_eq!(parse_value(""), nan("Empty string"));
        assert_eq!(parse_value("1.2abc"), nan("For input string: \"1.2abc\""));
        assert_eq!(parse_value("."), nan("For input string: \".\""));
        assert_eq!(parse_value("1e"), nan("For input string: \"1e\""));
        assert_eq!(parse_value("e5"), nan("For input string: \"e5\""));
        assert_eq!(parse_value("1.2.3"), nan("For input string: \"1.2.3\""));
        assert_eq!(parse_value("0x1.0p3"), nan("For input string: \"0x1.0p3\""));
        assert_eq!(parse_value("1.5ff"), nan("For input string: \"1.5ff\""));
        assert_eq!(parse_value("inf.0"), nan("For input string: \"inf.0\""));
        assert_eq!(parse_value("1e400"), Err(ValueError::NonFinite("Infinity")));
        assert_eq!(
            parse_value("-1e400"),
            Err(ValueError::NonFinite("-Infinity"))
        );
    }
}
