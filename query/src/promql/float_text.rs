//! Floats as Prometheus (Go) writes them: sample values in JSON answers
//! ([`json_text`]), `count_values`' label values ([`label_text`]), and
//! `%v` in error messages ([`go_v`]).

/// Special values as Go's `strconv` writes them, if `v` is one.
fn special(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v == f64::INFINITY {
        Some("+Inf")
    } else if v == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// Shortest round-trip digits and decimal exponent (`d.ddd × 10^exp`),
/// sign apart.
fn shortest(v: f64) -> (String, i32) {
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// `digits × 10^(exp - len + 1)` laid out as `%e` (`d.ddde±XX`) or `%f`.
fn lay_out(negative: bool, digits: &str, exp: i32, scientific: bool) -> String {
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if scientific {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if exp < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// A sample value in an answer, as Prometheus' `marshalValue` writes it:
/// `%e` below 1e-6 or from 1e21 on, `%f` otherwise, shortest digits.
pub fn json_text(v: f64) -> String {
    if let Some(s) = special(v) {
        return s.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, exp) = shortest(v);
    let abs = v.abs();
    lay_out(v < 0.0, &digits, exp, !(1e-6..1e21).contains(&abs))
}

/// `strconv.FormatFloat(v, 'f', -1, 64)`: shortest digits, and of two
/// equally short ones equally near `v`, the even one, as Go picks (Rust
/// picks the other).
pub fn label_text(v: f64) -> String {
    if let Some(s) = special(v) {
        return s.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (mut digits, exp) = shortest(v);
    // A tie needs 16 digits at least (15 always name one double), and an
    // odd last one to differ from Go's choice.
    let odd = digits.bytes().last().is_some_and(|d| d % 2 == 1);
    if digits.len() >= 16 && odd {
        let n = digits.len();
        // The exact value to 40 digits past the candidate's: a tie is
        // `…5` then zeros (a double's distance to a near-tie decimal is
        // far above 10^-40 of it).
        let exact = format!("{:.*e}", n + 40, v.abs());
        let exact_digits: String = exact
            .split_once('e')
            .map_or("", |(m, _)| m)
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let same_exp = exact
            .split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            == Some(exp);
        let tail = exact_digits.get(n..).unwrap_or("");
        if same_exp && tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0') {
            // v is halfway between `head` and `head + 1` (in the last
            // digit); the even one of the two is what Go writes.
            let head = &exact_digits[..n];
            let last = head.as_bytes()[n - 1] - b'0';
            digits = if last.is_multiple_of(2) {
                head.to_string()
            } else if last < 9 {
                format!("{}{}", &head[..n - 1], last + 1)
            } else {
                // A carry would make a shorter number, which both would
                // have written.
                digits
            };
        }
    }
    lay_out(v < 0.0, &digits, exp, false)
}

/// Go's `%v` of a float64 (shortest digits; `%e` form from exponent 6 on
/// or below -4, two exponent digits at least).
pub fn go_v(v: f64) -> String {
    if let Some(s) = special(v) {
        return s.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let (digits, exp) = shortest(v);
    lay_out(v < 0.0, &digits, exp, !(-4..21).contains(&exp) || exp >= 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_write_floats_as_prometheus_does() {
        for (v, want) in [
            (1.0, "1"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e-6, "0.0000015"),
            (7.105427357601002e-15, "7.105427357601002e-15"),
            (-1e-7, "-1e-07"),
            (123456.789, "123456.789"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (0.0, "0"),
        ] {
            assert_eq!(json_text(v), want, "{v:e}");
        }
    }

    #[test]
    fn labels_pick_the_even_digit_of_a_tie_as_go_does() {
        // 1500000000066085.25 lies halfway between …085.2 and …085.3.
        assert_eq!(
            label_text(1_500_000_000_066_085.0 + 0.25),
            "1500000000066085.2"
        );
        assert_eq!(
            label_text(1_500_000_000_066_085.0 + 0.75),
            "1500000000066085.8"
        );
        assert_eq!(label_text(0.1), "0.1");
        assert_eq!(label_text(1e21), "1000000000000000000000");
        assert_eq!(label_text(1e-7), "0.0000001");
        assert_eq!(label_text(-3.5), "-3.5");
        // Not ties: Rust's and Go's shortest agree.
        for v in [
            0.1 + 0.2,
            1.0 / 3.0,
            2f64.sqrt() * 1e10,
            123_456_789.123_456_79,
        ] {
            assert_eq!(label_text(v), format!("{v}"), "{v}");
        }
    }

    #[test]
    fn error_messages_print_floats_as_go_v() {
        assert_eq!(go_v(1e19), "1e+19");
        assert_eq!(go_v(-9.3e18), "-9.3e+18");
        assert_eq!(go_v(123456.0), "123456");
        assert_eq!(go_v(1234567.0), "1.234567e+06");
        assert_eq!(go_v(0.0001), "0.0001");
        assert_eq!(go_v(0.00001), "1e-05");
        assert_eq!(go_v(f64::NAN), "NaN");
    }
}
