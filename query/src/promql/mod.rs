//! PromQL with Prometheus 2.42's semantics (issue 21), over any
//! [`PromSource`]: expressions parsed by `promql-parser` (Prometheus' own
//! grammar), evaluated here.
//!
//! * [`value`] — label sets, samples, vectors and range series.
//! * [`eval`] — selection (the 5-minute lookback, offsets, `@`, staleness
//!   markers), instant and range evaluation.
//! * [`functions`], [`aggregate`], [`binary`] — what an expression
//!   computes, pure; [`failure`] — the evaluator's errors; [`float_text`]
//!   — floats written as Go writes them; [`go_regex`] — Go's `\Q…\E`.
//!
//! What is not there answers an execution error that names it ("… is not
//! supported yet"), never a wrong answer (`docs/promql.md`).

pub mod aggregate;
pub mod binary;
pub mod eval;
pub mod failure;
pub mod float_text;
pub mod functions;
pub mod go_regex;
pub mod value;

pub use eval::{LOOKBACK_MS, PromSource, eval_instant, eval_range};
pub use value::{Labels, RangeSeries, Sample, Value};

use crate::error::QueryError;

/// Parses a PromQL expression; the error is the parser's text.
/// `promql-parser` follows Prometheus 3, which renamed `holt_winters` to
/// `double_exponential_smoothing`: the 2.42 name is mapped to the new one
/// here (and the new one, unknown to 2.42, refused).
pub fn parse(text: &str) -> Result<promql_parser::parser::Expr, QueryError> {
    let bad = |message: String| QueryError::BadRequest {
        message,
        details: None,
    };
    let text = rename_holt_winters(text).map_err(bad)?;
    let text = go_regex::rewrite_matchers(&text);
    promql_parser::parser::parse(&text).map_err(bad)
}

/// `holt_winters(` as `double_exponential_smoothing(`, outside strings
/// and comments; `double_exponential_smoothing` refused as Prometheus
/// 2.42 refuses it.
fn rename_holt_winters(text: &str) -> Result<std::borrow::Cow<'_, str>, String> {
    const OLD: &str = "holt_winters";
    const NEW: &str = "double_exponential_smoothing";
    if !text.contains(OLD) && !text.contains(NEW) {
        return Ok(std::borrow::Cow::Borrowed(text));
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = String::with_capacity(text.len() + 16);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut comment = false;
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let len = c.len_utf8();
        if comment {
            comment = c != '\n';
        } else if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q != '`' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
        } else if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
        } else if c == '#' {
            comment = true;
        } else if !text[..i].chars().next_back().is_some_and(ident) {
            let rest = &text[i..];
            let word_end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            let word = &rest[..word_end];
            let called = rest[word_end..].trim_start().starts_with('(');
            if called && word == NEW {
                return Err(format!("unknown function with name \"{NEW}\""));
            }
            if called && word == OLD {
                out.push_str(NEW);
                i += OLD.len();
                continue;
            }
        }
        out.push(c);
        i += len;
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// A sample value as Prometheus writes it in an answer.
pub fn format_value(v: f64) -> String {
    float_text::json_text(v)
}

#[cfg(test)]
mod tests;
