//! The `/api/query` JSON response (spec §4.4.4).
//!
//! This module owns the byte-exact output: field order
//! (`metric`, `tags`, `aggregateTags`, `query`, `tsuids`, `annotations`,
//! `globalAnnotations`, `dps`), the two
//! `dps` shapes (object keyed by timestamp, or `[[ts, v], ...]` with
//! `arrays`), second vs millisecond keys, and value formatting: integers as
//! JSON integers, doubles exactly like Java's `Double.toString` (which is what
//! Jackson writes), NaN as the string `"NaN"` — or `null` when the sub query's
//! fill policy is `null`, and always in the array form (`arrays`), which
//! Grafana's backend cannot decode otherwise.
//!
//! Written by hand rather than through serde so that number formatting and
//! duplicate `dps` keys (several ms points in one second without `ms`) come
//! out exactly as OpenTSDB produces them.

use std::fmt::Write as _;

use crate::annotation::in_query_range;
use crate::downsample::FillPolicy;
use crate::exec::QueryResult;
use crate::num::Num;
use crate::request::{SubQuery, TsQuery};

/// Renders the full response body for `results` of query `q`.
pub fn render_json(q: &TsQuery, results: &[QueryResult]) -> Vec<u8> {
    let mut out =
        String::with_capacity(64 + results.iter().map(|r| r.dps.len() * 24).sum::<usize>());
    out.push('[');
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let sub = q.queries.iter().find(|s| s.index == r.sub_query);
        render_result(&mut out, q, sub, r);
    }
    out.push(']');
    out.into_bytes()
}

fn render_result(out: &mut String, q: &TsQuery, sub: Option<&SubQuery>, r: &QueryResult) {
    out.push_str("{\"metric\":");
    push_str_lit(out, &r.metric);
    out.push_str(",\"tags\":{");
    for (i, (k, v)) in r.tags.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str_lit(out, k);
        out.push(':');
        push_str_lit(out, v);
    }
    out.push_str("},\"aggregateTags\":[");
    push_str_list(out, &r.aggregate_tags);
    out.push(']');
    if q.show_query
        && let Some(sub) = sub
    {
        out.push_str(",\"query\":");
        render_sub_query(out, sub);
    }
    if q.show_tsuids {
        out.push_str(",\"tsuids\":[");
        push_str_list(out, &r.tsuids);
        out.push(']');
    }
    if !q.no_annotations {
        // Like OpenTSDB, the array is written when the group has any note in
        // the scan window, even if none falls inside [start, end].
        for (name, notes) in [
            ("annotations", &r.annotations),
            ("globalAnnotations", &r.global_annotations),
        ] {
            if notes.is_empty() {
                continue;
            }
            let _ = write!(out, ",\"{name}\":[");
            for (i, n) in in_query_range(notes, q.start_ms, q.end_ms)
                .iter()
                .enumerate()
            {
                if i > 0 {
                    out.push(',');
                }
                n.push_response_json(out);
            }
            out.push(']');
        }
    }
    // The array form is what Grafana's backend asks for (`?arrays=true`),
    // and its decoder fails on the string "NaN": write null there (a
    // deliberate difference from OpenTSDB).
    let nan_as_null = q.arrays
        || sub
            .and_then(|s| s.downsample.as_ref())
            .is_some_and(|d| d.fill == FillPolicy::Null);
    out.push_str(",\"dps\":");
    if q.arrays {
        out.push('[');
        for (i, (ts, v)) in r.dps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "[{},", output_ts(q, *ts));
            push_value(out, *v, nan_as_null);
            out.push(']');
        }
        out.push(']');
    } else {
        out.push('{');
        for (i, (ts, v)) in r.dps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{}\":", output_ts(q, *ts));
            push_value(out, *v, nan_as_null);
        }
        out.push('}');
    }
    out.push('}');
}

fn output_ts(q: &TsQuery, ts_ms: i64) -> i64 {
    if q.ms_resolution { ts_ms } else { ts_ms / 1000 }
}

/// The `query` object echoed with `showQuery` (OpenTSDB's serialised
/// `TSSubQuery`; Grafana needs `index`).
fn render_sub_query(out: &mut String, sub: &SubQuery) {
    out.push_str("{\"aggregator\":");
    push_str_lit(out, sub.aggregator.name());
    out.push_str(",\"metric\":");
    push_str_lit(out, &sub.metric);
    out.push_str(",\"tsuids\":");
    if sub.tsuids.is_empty() {
        out.push_str("null");
    } else {
        out.push('[');
        push_str_list(out, &sub.tsuids);
        out.push(']');
    }
    out.push_str(",\"downsample\":");
    match &sub.downsample {
        Some(d) => push_str_lit(out, &d.spec),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"rate\":{}", sub.rate.is_some());
    out.push_str(",\"filters\":[");
    for (i, f) in sub.filters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"tagk\":");
        push_str_lit(out, &f.tagk);
        out.push_str(",\"filter\":");
        push_str_lit(out, f.expression());
        let _ = write!(out, ",\"group_by\":{},\"type\":", f.group_by);
        push_str_lit(out, f.type_name());
        out.push('}');
    }
    let _ = write!(out, "],\"index\":{},\"tags\":{{", sub.index);
    let mut first = true;
    for f in sub.filters.iter().filter(|f| f.group_by) {
        if !first {
            out.push(',');
        }
        first = false;
        push_str_lit(out, &f.tagk);
        out.push(':');
        push_str_lit(out, &format!("{}({})", f.type_name(), f.expression()));
    }
    out.push_str("},\"rateOptions\":");
    match &sub.rate {
        Some(r) => {
            let _ = write!(
                out,
                "{{\"counter\":{},\"counterMax\":{},\"resetValue\":{},\"dropResets\":{}}}",
                r.counter, r.counter_max, r.reset_value, r.drop_resets
            );
        }
        None => out.push_str("null"),
    }
    let _ = write!(
        out,
        ",\"explicitTags\":{},\"useFuzzyFilter\":true,\"useMultiGets\":true,\
         \"preAggregate\":false,\"showHistogramBuckets\":false,\"percentiles\":null}}",
        sub.explicit_tags
    );
}

fn push_value(out: &mut String, v: Num, nan_as_null: bool) {
    match v {
        Num::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Num::Float(f) if f.is_nan() => {
            out.push_str(if nan_as_null { "null" } else { "\"NaN\"" });
        }
        // Jackson quotes non-finite numbers; execution rejects infinities
        // anyway, this is only for completeness.
        Num::Float(f) if f.is_infinite() => {
            out.push_str(if f > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            });
        }
        Num::Float(f) => push_java_double(out, f),
    }
}

fn push_str_list(out: &mut String, items: &[String]) {
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str_lit(out, s);
    }
}

/// A JSON string literal with the mandatory escapes.
pub(crate) fn push_str_lit(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
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
pub fn java_double(v: f64) -> String {
    let mut out = String::with_capacity(24);
    push_java_double(&mut out, v);
    out
}

/// [`java_double`] appended to `out`, without allocating: Rust's shortest
/// round-trip digits (`{:e}`) are written to a stack buffer and laid out
/// from there (this runs for every value of every answer).
pub fn push_java_double(out: &mut String, v: f64) {
    if v.is_nan() {
        return out.push_str("NaN");
    }
    if v.is_infinite() {
        return out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if v == 0.0 {
        return out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    }
    let mut buf = StackText::default();
    if write!(buf, "{:e}", v.abs()).is_err() {
        return out.push_str(&java_double_slow(v));
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
    if n == 1 && v.abs() < f64::MIN_POSITIVE {
        // Java never prints fewer than two significant digits and then picks
        // the two-digit decimal closest to the value; that only differs from
        // "<d>.0" for subnormals (4.9E-324 for the smallest double).
        return out.push_str(&java_double_slow(v));
    }
    // The digits are ASCII by construction.
    let digits = std::str::from_utf8(&digits[..n]).unwrap_or("0");
    write_java(out, v.is_sign_negative(), v.abs(), digits, exp);
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
fn java_double_slow(v: f64) -> String {
    let (mut digits, mut exp) = sci_parts(&format!("{:e}", v.abs()));
    if digits.len() == 1 {
        let two = format!("{:.1e}", v.abs());
        if two.parse::<f64>().ok() == Some(v.abs()) {
            (digits, exp) = sci_parts(&two);
            let trimmed = digits.trim_end_matches('0').len().max(1);
            digits.truncate(trimmed);
        }
    }
    let mut out = String::with_capacity(digits.len() + 8);
    write_java(&mut out, v.is_sign_negative(), v.abs(), &digits, exp);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::request::parse_query_string;

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

    fn query(extra: &[(&str, &str)], m: &str) -> TsQuery {
        let mut p = vec![
            ("start".to_string(), "1356998400".to_string()),
            ("end".to_string(), "1357041600".to_string()),
            ("m".to_string(), m.to_string()),
        ];
        p.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        parse_query_string(&p, 0).unwrap()
    }

    fn result(dps: Vec<(i64, Num)>) -> QueryResult {
        let mut tags = BTreeMap::new();
        tags.insert("host".to_string(), "web\"01".to_string());
        QueryResult {
            sub_query: 0,
            metric: "sys.cpu.user".into(),
            tags,
            aggregate_tags: vec!["dc".into()],
            tsuids: vec!["000001000001000001".into()],
            annotations: Vec::new(),
            global_annotations: Vec::new(),
            dps,
        }
    }

    fn text(q: &TsQuery, r: &[QueryResult]) -> String {
        String::from_utf8(render_json(q, r)).unwrap()
    }

    #[test]
    fn empty_is_empty_array() {
        assert_eq!(text(&query(&[], "sum:m"), &[]), "[]");
    }

    #[test]
    fn object_form_in_seconds() {
        let q = query(&[], "sum:m");
        let r = result(vec![
            (1_356_998_430_000, Num::Int(1)),
            (1_356_998_460_500, Num::Float(2.5)),
            (1_356_998_460_900, Num::Float(f64::NAN)),
        ]);
        assert_eq!(
            text(&q, &[r]),
            "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web\\\"01\"},\
             \"aggregateTags\":[\"dc\"],\"dps\":{\"1356998430\":1,\"1356998460\":2.5,\
             \"1356998460\":\"NaN\"}}]"
        );
    }

    #[test]
    fn arrays_ms_tsuids_and_null_fill() {
        let q = query(
            &[("arrays", "true"), ("ms", ""), ("show_tsuids", "")],
            "sum:1m-avg-null:m",
        );
        let r = result(vec![
            (1_356_998_430_000, Num::Float(f64::NAN)),
            (1_356_998_490_000, Num::Int(-3)),
        ]);
        assert_eq!(
            text(&q, &[r]),
            "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web\\\"01\"},\
             \"aggregateTags\":[\"dc\"],\"tsuids\":[\"000001000001000001\"],\
             \"dps\":[[1356998430000,null],[1356998490000,-3]]}]"
        );
    }

    #[test]
    fn show_query_object() {
        let q = query(
            &[("show_query", "")],
            "sum:rate{counter,100}:1m-avg:m{host=*}{dc=lga}",
        );
        let body = text(&q, &[result(vec![])]);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let qo = &v[0]["query"];
        assert_eq!(qo["index"], 0);
        assert_eq!(qo["aggregator"], "sum");
        assert_eq!(qo["metric"], "m");
        assert_eq!(qo["downsample"], "1m-avg");
        assert_eq!(qo["rate"], true);
        assert_eq!(qo["rateOptions"]["counterMax"], 100);
        assert_eq!(qo["explicitTags"], false);
        assert_eq!(qo["tags"]["host"], "wildcard(*)");
        assert_eq!(qo["filters"][0]["tagk"], "dc");
        assert_eq!(qo["filters"][0]["type"], "literal_or");
        assert_eq!(qo["filters"][0]["group_by"], false);
        assert_eq!(qo["filters"][1]["group_by"], true);
        // field order: query comes before dps
        assert!(body.find("\"query\"").unwrap() < body.find("\"dps\"").unwrap());
    }

    #[test]
    fn control_characters_are_escaped() {
        let mut s = String::new();
        push_str_lit(&mut s, "a\u{1}b\nc\\");
        assert_eq!(s, "\"a\\u0001b\\nc\\\\\"");
    }
}
