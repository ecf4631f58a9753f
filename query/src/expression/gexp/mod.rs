//! `/api/query/gexp` (OpenTSDB 2.3+): Graphite-style functions whose series
//! parameters are `m`-style sub queries (`sum:1m-avg:if.bytes_in{host=*}`)
//! or other function calls, e.g.
//! `exp=scale(sum:if.bytes_in{host=*},1024)`, plus the query-string
//! parameters of `/api/query` (`start`, `end`, `ms`, `arrays`,
//! `show_query`, …). The answer is `/api/query`'s: render the results of
//! [`run`] with [`crate::render::render_json`] and [`GexpQuery::ts_query`].
//!
//! [`parse`] reads every `exp=` (several give their results one after the
//! other), checks each call's parameters and builds one [`TsQuery`] whose
//! sub queries are the metric parameters (parsed and validated exactly as
//! `m=`); [`run`] executes it through
//! [`crate::exec::execute_with_budget`] and applies the functions.
//!
//! * `grammar` — the `exp=` grammar.
//! * `functions` — the function names and parameter checks.
//! * `apply` — what each function computes.
//! * `moving_average` — `movingAverage`'s windows.
//!
//! Deliberate differences from OpenTSDB 2.4, besides those of `apply`:
//! syntax and parameter errors are 400s (OpenTSDB: 500s) and parameters
//! are checked before the data is fetched; `m=` and `tsuid=` parameters
//! are validated but not run (OpenTSDB runs them, answers only the
//! expressions, and then picks wrong results because its indexes count
//! them); identical metric parameters each get their own results
//! (OpenTSDB de-duplicates the sub queries and then fails); `firstDiff`
//! (OpenTSDB 2.5) is available; the metric parameters under a `timeShift`
//! fetch the window the shift moves into the query range (OpenTSDB fetches
//! the query range and shifts it out of itself, answering nothing for a
//! shift longer than the range).

mod apply;
mod functions;
mod grammar;
mod moving_average;

#[cfg(test)]
mod tests;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::exec::{QueryResult, SeriesSource, execute_with_budget};
use crate::expression::error::ExpressionError;
use crate::expression::limits::{MAX_GEXP_CHARS, MAX_GEXP_EXPRESSIONS};
use crate::request::{TsQuery, parse_query_string};

use self::apply::{Context, Series, apply, clip};
use self::functions::{Operation, check};
use self::grammar::{Arg, Call};

/// A parsed and checked `/api/query/gexp` request.
#[derive(Debug, Clone)]
pub struct GexpQuery {
    ts_query: TsQuery,
    /// One tree per `exp=`, in order.
    trees: Vec<Node>,
    /// The sub query index of the first metric parameter.
    first_metric: usize,
    /// Per metric parameter, how far the `timeShift`s around it move its
    /// points forward (ms, 0 for most).
    shifts: Vec<i64>,
}

impl GexpQuery {
    /// The query [`run`] executes (the metric parameters' sub queries and
    /// the flags), also what [`crate::render::render_json`] needs.
    pub fn ts_query(&self) -> &TsQuery {
        &self.ts_query
    }
}

/// A checked call.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    operation: Operation,
    inputs: Vec<Input>,
}

#[derive(Debug, Clone, PartialEq)]
enum Input {
    Call(Node),
    /// A metric parameter, by its position among all metric parameters.
    Metric(usize),
}

/// Parses the query string `params` (pairs in request order). `now_ms`
/// resolves relative times and a missing `end`.
pub fn parse(params: &[(String, String)], now_ms: i64) -> Result<GexpQuery, QueryError> {
    // OpenTSDB asks for `start` before anything else.
    if !params.iter().any(|(k, v)| k == "start" && !v.is_empty()) {
        return Err(QueryError::BadRequest {
            message: "Missing parameter <code>start</code>".to_string(),
            details: None,
        });
    }
    let texts: Vec<&str> = params
        .iter()
        .filter(|(k, _)| k == "exp")
        .map(|(_, v)| v.as_str())
        .collect();
    if texts.len() > MAX_GEXP_EXPRESSIONS {
        return Err(ExpressionError::TooMany {
            what: "exp parameters",
            count: texts.len(),
            max: MAX_GEXP_EXPRESSIONS,
        }
        .into());
    }
    let mut metrics = Vec::new();
    let mut trees = Vec::with_capacity(texts.len());
    for text in texts {
        let len = text.chars().count();
        if len > MAX_GEXP_CHARS {
            return Err(ExpressionError::TooLong {
                what: "exp parameter",
                len,
                max: MAX_GEXP_CHARS,
            }
            .into());
        }
        if text.is_empty() {
            return Err(ExpressionError::Syntax {
                expr: String::new(),
                detail: "Expression may not be null or empty".to_string(),
            }
            .into());
        }
        let call = grammar::parse(text, &mut metrics)?;
        trees.push(node_of(&call)?);
    }
    // The metric parameters become `m=` sub queries after any the request
    // has itself (validated like OpenTSDB, not run: only expressions are
    // answered).
    let mut query_params: Vec<(String, String)> =
        params.iter().filter(|(k, _)| k != "exp").cloned().collect();
    query_params.extend(metrics.iter().map(|m| ("m".to_string(), m.clone())));
    let mut ts_query = parse_query_string(&query_params, now_ms)?;
    let first_metric = ts_query.queries.len().saturating_sub(metrics.len());
    ts_query.queries.retain(|q| q.index >= first_metric);
    let mut shifts = vec![0; metrics.len()];
    for tree in &trees {
        shifts_of(tree, 0, &mut shifts);
    }
    Ok(GexpQuery {
        ts_query,
        trees,
        first_metric,
        shifts,
    })
}

/// Records, per metric parameter under `node`, the sum of the `timeShift`s
/// around it (`shift` so far). Every series parameter of a `timeShift` is
/// evaluated in the shifted window, though only the first is answered.
fn shifts_of(node: &Node, shift: i64, shifts: &mut [i64]) {
    let shift = match node.operation {
        Operation::TimeShift(by) => shift.saturating_add(by),
        _ => shift,
    };
    for input in &node.inputs {
        match input {
            Input::Call(inner) => shifts_of(inner, shift, shifts),
            Input::Metric(m) => {
                if let Some(slot) = shifts.get_mut(*m) {
                    *slot = shift;
                }
            }
        }
    }
}

/// A call's series parameters must come first (OpenTSDB fails on a
/// function parameter before a series one: "Unknown parameter type").
fn node_of(call: &Call) -> Result<Node, QueryError> {
    let series = call
        .args
        .iter()
        .take_while(|a| !matches!(a, Arg::Param(_)))
        .count();
    let mut inputs = Vec::with_capacity(series);
    let mut params = Vec::new();
    for (i, arg) in call.args.iter().enumerate() {
        match arg {
            Arg::Param(p) => params.push(p.clone()),
            _ if i >= series => {
                return Err(ExpressionError::ParameterOrder(call.text.clone()).into());
            }
            Arg::Call(inner) => inputs.push(Input::Call(node_of(inner)?)),
            Arg::Metric(m) => inputs.push(Input::Metric(*m)),
        }
    }
    Ok(Node {
        operation: check(call.function, inputs.len(), &params)?,
        inputs,
    })
}

/// Runs `query` against `source` within `budget`: the results of every
/// `exp=`, in order, clipped to the query range.
pub fn run(
    query: &GexpQuery,
    source: &dyn SeriesSource,
    budget: &QueryBudget,
) -> Result<Vec<QueryResult>, QueryError> {
    let mut per_metric: Vec<Vec<QueryResult>> = vec![Vec::new(); query.ts_query.queries.len()];
    for result in fetch(query, source, budget)? {
        if let Some(set) = result
            .sub_query
            .checked_sub(query.first_metric)
            .and_then(|m| per_metric.get_mut(m))
        {
            set.push(result);
        }
    }
    let ctx = Context {
        budget,
        start_ms: query.ts_query.start_ms,
        end_ms: query.ts_query.end_ms,
        combined_sub_query: query.first_metric,
    };
    let mut out = Vec::new();
    for tree in &query.trees {
        for series in evaluate(tree, &mut per_metric, ctx)? {
            let mut result = series.into_answer();
            clip(&mut result, ctx);
            out.push(result);
        }
    }
    Ok(out)
}

/// Every metric parameter's results: those without a shift over the query
/// range, the others (one execution per distinct shift) over the range
/// moved back by their shift.
fn fetch(
    query: &GexpQuery,
    source: &dyn SeriesSource,
    budget: &QueryBudget,
) -> Result<Vec<QueryResult>, QueryError> {
    let shift_of = |index: usize| {
        index
            .checked_sub(query.first_metric)
            .and_then(|m| query.shifts.get(m))
            .copied()
            .unwrap_or(0)
    };
    if query
        .ts_query
        .queries
        .iter()
        .all(|q| shift_of(q.index) == 0)
    {
        return execute_with_budget(&query.ts_query, source, budget);
    }
    let mut distinct: Vec<i64> = query
        .ts_query
        .queries
        .iter()
        .map(|q| shift_of(q.index))
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let mut out = Vec::new();
    for shift in distinct {
        let mut shifted = query.ts_query.clone();
        shifted.queries.retain(|q| shift_of(q.index) == shift);
        shifted.start_ms = shifted.start_ms.saturating_sub(shift).max(0);
        shifted.end_ms = shifted.end_ms.saturating_sub(shift).max(0);
        out.extend(execute_with_budget(&shifted, source, budget)?);
    }
    Ok(out)
}

/// Evaluates a call: its parameters first (each metric parameter's results
/// are used once, so they are moved out), then the function.
fn evaluate(
    node: &Node,
    per_metric: &mut [Vec<QueryResult>],
    ctx: Context<'_>,
) -> Result<Vec<Series>, QueryError> {
    ctx.budget.check()?;
    // Under a `timeShift` the parameters live in the window it moves into
    // the query range: functions that clip (`movingAverage`, `highest…`)
    // clip there.
    let inner = match node.operation {
        Operation::TimeShift(shift) => Context {
            start_ms: ctx.start_ms.saturating_sub(shift).max(0),
            end_ms: ctx.end_ms.saturating_sub(shift).max(0),
            ..ctx
        },
        _ => ctx,
    };
    let mut inputs = Vec::with_capacity(node.inputs.len());
    for input in &node.inputs {
        inputs.push(match input {
            Input::Call(call) => evaluate(call, per_metric, inner)?,
            Input::Metric(m) => per_metric
                .get_mut(*m)
                .map(std::mem::take)
                .unwrap_or_default()
                .into_iter()
                .map(Series::of)
                .collect(),
        });
    }
    apply(&node.operation, inputs, ctx)
}
