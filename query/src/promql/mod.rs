//! PromQL with Prometheus 2.42's semantics (issue 21), over any
//! [`PromSource`]: expressions parsed by `promql-parser` (Prometheus' own
//! grammar), evaluated here.
//!
//! * [`value`] — label sets, samples, vectors and range series.
//! * [`eval`] — selection (the 5-minute lookback, offsets, `@`, staleness
//!   markers), instant and range evaluation.
//! * [`functions`], [`aggregate`], [`binary`] — what an expression
//!   computes, pure; [`failure`] — the evaluator's errors.
//!
//! What is not there yet answers an execution error that names it
//! ("… is not supported yet"), never a wrong answer: `timestamp`,
//! `holt_winters`, `fill()` in vector matching (`docs/promql.md`).

pub mod aggregate;
pub mod binary;
pub mod eval;
pub mod failure;
pub mod functions;
pub mod value;

pub use eval::{LOOKBACK_MS, PromSource, eval_instant, eval_range};
pub use value::{Labels, RangeSeries, Sample, Value};

use crate::error::QueryError;

/// Parses a PromQL expression; the error is the parser's text.
pub fn parse(text: &str) -> Result<promql_parser::parser::Expr, QueryError> {
    promql_parser::parser::parse(text).map_err(|e| QueryError::BadRequest {
        message: e,
        details: None,
    })
}

/// Prometheus' float text (`strconv.FormatFloat(v, 'f', -1, 64)`).
pub fn format_value(v: f64) -> String {
    aggregate::format_value(v)
}

#[cfg(test)]
mod tests;
