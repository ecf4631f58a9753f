//! The JSON output pieces every response writes byte for byte like OpenTSDB (Jackson): string
//! literals and lists, string maps, and doubles exactly as Java's `Double.toString`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The items as JSON string literals separated by commas (the caller writes the brackets).
pub(crate) fn push_str_list(out: &mut String, items: &[String]) {
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str_lit(out, s);
    }
}

/// A JSON object of string values, in the map's (sorted) key order: tags, custom fields.
pub(crate) fn push_str_map(out: &mut String, map: &BTreeMap<String, String>) {
    out.push('{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str_lit(out, key);
        out.push(':');
        push_str_lit(out, value);
    }
    out.push('}');
}

/// A JSON string literal with the mandatory escapes.
pub(crate) fn push_str_lit(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Splits Rust's `{:e}` output ("1.25e-7") into significant digits and exponent.
fn sci_parts(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Formats a finite double exactly like Java's `Double.toString`: the
/// shortest digits that round-trip, in plain notation with at least one
/// fractional digit when `1e-3 <= |v| < 1e7`, otherwise as
/// `<d>.<ddd>E<exp>` (e.g. `2.0`, `0.03333333333333333`, `1.0E10`, `1.0E-5`).
pub fn java_double(value: f64) -> String {
    let mut out = String::with_capacity(24);
    push_java_double(&mut out, value);
    out
}

/// A double as Jackson writes it: [`java_double`]'s text, the non-finite
/// values (`NaN`, `Infinity`, `-Infinity`) quoted as strings.
pub(crate) fn push_jackson_double(out: &mut String, value: f64) {
    if value.is_finite() {
        push_java_double(out, value);
    } else {
        out.push('"');
        push_java_double(out, value);
        out.push('"');
    }
}

/// [`java_double`] appended to `out`, without allocating: Rust's shortest
/// round-trip digits (`{:e}`) are written to a stack buffer and laid out
/// from there (this runs for every value of every answer).
pub fn push_java_double(out: &mut String, value: f64) {
    if value.is_nan() {
        return out.push_str("NaN");
    }
    if value.is_infinite() {
        return out.push_str(if value > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if value == 0.0 {
        return out.push_str(if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        });
    }
    let mut buf = StackText::default();
    if write!(buf, "{:e}", value.abs()).is_err() {
        return out.push_str(&java_double_slow(value));
    }
    // "1.2345e-7": significant digits and the exponent of the first one.
    let text = buf.as_str();
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits = [0u8; 24];
    let mut n = 0;
    for b in mantissa.bytes().filter(u8::is_ascii_digit) {
        if n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    if n == 1 && value.abs() < f64::MIN_POSITIVE {
        // Java never prints fewer than two significant digits and then picks
        // the two-digit decimal closest to the value; that only differs from
        // "<d>.0" for subnormals (4.9E-324 for the smallest double).
        return out.push_str(&java_double_slow(value));
    }
    // The digits are ASCII by construction.
    let digits = std::str::from_utf8(&digits[..n]).unwrap_or("0");
    write_java(out, value.is_sign_negative(), value.abs(), digits, exp);
}

/// A small text buffer on the stack for one formatted number.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        Self {
            buf: [0; 40],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Java's layout of significant `digits` with decimal exponent `exp`.
fn write_java(out: &mut String, negative: bool, abs: f64, digits: &str, exp: i32) {
    if negative {
        out.push('-');
    }
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        let _ = write!(out, "E{exp}");
    }
}

/// The general (allocating) form, through Rust's `{:e}` digits: one-digit
/// values, where Java's two-digit rule needs a second look.
fn java_double_slow(value: f64) -> String {
    let (mut digits, mut exp) = sci_parts(&format!("{:e}", value.abs()));
    if digits.len() == 1 {
        let two = format!("{:.1e}", value.abs());
        if two.parse::<f64>().ok() == Some(value.abs()) {
            (digits, exp) = sci_parts(&two);
            let trimmed = digits.trim_end_matches('0').len().max(1);
            digits.truncate(trimmed);
        }
    }
    let mut out = String::with_capacity(digits.len() + 8);
    write_java(
        &mut out,
        value.is_sign_negative(),
        value.abs(),
        &digits,
        exp,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_double_formatting() {
        let cases: &[(f64, &str)] = &[
            (2.0, "2.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-0.5, "-0.5"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1.0 / 30.0, "0.03333333333333333"),
            (2.0 / 60.0, "0.03333333333333333"),
            (0.025, "0.025"),
            (301.5, "301.5"),
            (45150.0, "45150.0"),
            (1e10, "1.0E10"),
            (1e-5, "1.0E-5"),
            (1.0e-4, "1.0E-4"),
            (0.001, "0.001"),
            (0.0009999, "9.999E-4"),
            (1234567.0, "1234567.0"),
            (9999999.0, "9999999.0"),
            (1e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (-1.5e-10, "-1.5E-10"),
            (123.456, "123.456"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (5e-324, "4.9E-324"),
            (1e-323, "9.9E-324"),
            (38.125, "38.125"),
            (76.25, "76.25"),
            (1.0 / 3.0, "0.3333333333333333"),
            (100.0, "100.0"),
            (1e21, "1.0E21"),
            (2.9476e-5, "2.9476E-5"),
        ];
        for (v, want) in cases {
            assert_eq!(java_double(*v), *want, "{v:e}");
        }
        assert_eq!(java_double(f64::NAN), "NaN");
        assert_eq!(java_double(f64::INFINITY), "Infinity");
    }

    #[test]
    fn jackson_quotes_only_non_finite_doubles() {
        let mut out = String::new();
        for v in [1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0] {
            push_jackson_double(&mut out, v);
            out.push(' ');
        }
        assert_eq!(out, "1.5 \"NaN\" \"Infinity\" \"-Infinity\" -0.0 ");
    }

    proptest::proptest! {
        /// The allocation-free path agrees with the `{:e}`-based one for
        /// every double (any bit pattern, and round-ish decimals).
        #[test]
        fn java_double_fast_path_matches_the_reference(
            bits in proptest::prelude::any::<u64>(),
            k in -100_000i64..100_000,
            scale in 0i32..12,
        ) {
            for v in [f64::from_bits(bits), k as f64 / 10f64.powi(scale)] {
                if v.is_finite() && v != 0.0 {
                    proptest::prop_assert_eq!(java_double(v), java_double_slow(v), "{:e}", v);
                }
            }
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let mut s = String::new();
        push_str_lit(&mut s, "a\u{1}b\nc\\");
        assert_eq!(s, "\"a\\u0001b\\nc\\\\\"");
    }
}
