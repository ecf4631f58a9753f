//! `/api/query/exp` (OpenTSDB 2.3+): a JSON body with a `time` section,
//! tag filter sets, metrics, expressions over metric and expression ids,
//! and outputs.
//!
//! [`parse`] reads and validates the body (OpenTSDB's `Query.validate` and
//! the checks of its `QueryExecutor`, in their order) and plans the sub
//! queries; [`run`] fetches every metric through
//! [`crate::exec::execute_with_budget`], evaluates every expression and
//! returns an [`ExpAnswer`] whose [`ExpAnswer::to_json`] is the body.
//!
//! * `request` — the body as OpenTSDB's Jackson pojos read it.
//! * `validate` — `Query.validate`.
//! * `plan` — sub queries, compiled expressions, evaluation order, outputs.
//! * `eval` — joins, lock-step iteration, the scripts: one matrix per expression.
//! * `response` — the JSON writer (outputs and the `query` echo).
//!
//! Deliberate differences from OpenTSDB 2.4 (its bugs, not reproduced):
//!
//! * Validation errors are 400s ([`crate::QueryError::BadRequest`]); OpenTSDB
//!   lets the `IllegalArgumentException` become a 500.
//! * A variable whose id has upper-case letters works; OpenTSDB looks
//!   results up by the lower-cased name and fails ("Missing results for
//!   variable").
//! * A nested expression is read at its own timestamps (see `eval`).
//! * A metric output is clipped to `[start, end]` like everything else;
//!   OpenTSDB writes the whole hour-aligned scan window for raw metrics.
//! * Cycles between expressions are found before the data is fetched.
//! * `dpsMeta` and `meta` corner cases (see `response`).
//! * Scripts are limited to JEXL's numeric subset (see
//!   [`crate::expression`]'s `script`); OpenTSDB hands them to JEXL whole.
//!
//! Like OpenTSDB 2.4: a metric's `timeOffset` is validated and ignored, the
//! downsampler's `fillPolicy` is validated and ignored, unknown output ids
//! are skipped, and every expression is evaluated even if not output.

mod eval;
mod plan;
mod request;
mod response;
mod validate;

#[cfg(test)]
mod tests;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::exec::{QueryResult, SeriesSource, execute_with_budget};
use crate::request::TsQuery;

use self::eval::Matrix;
use self::plan::{Plan, Source};
use self::request::ExpRequest;

/// A parsed, validated and planned `/api/query/exp` request.
#[derive(Debug, Clone)]
pub struct ExpQuery {
    request: ExpRequest,
    plan: Plan,
}

impl ExpQuery {
    /// The sub queries that [`run`] executes (one per metric, in order),
    /// for admission decisions such as the scan window
    /// ([`crate::exec::scan_window`]).
    pub fn ts_query(&self) -> &TsQuery {
        &self.plan.ts_query
    }
}

/// The answer of [`run`].
#[derive(Debug, Clone)]
pub struct ExpAnswer {
    /// Every expression's result, then the metric outputs' matrices.
    matrices: Vec<Matrix>,
    /// `(id, alias, index into matrices)` per output.
    outputs: Vec<(String, Option<String>, usize)>,
    /// The `query` object.
    query_echo: String,
}

impl ExpAnswer {
    /// The response body.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(
            64 + self.query_echo.len()
                + self
                    .matrices
                    .iter()
                    .map(|m| m.values.len() * 12 + m.timestamps.len() * 16)
                    .sum::<usize>(),
        );
        out.push_str("{\"outputs\":[");
        for (i, (id, alias, matrix)) in self.outputs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if let Some(matrix) = self.matrices.get(*matrix) {
                response::push_output(&mut out, id, alias.as_deref(), matrix);
            }
        }
        out.push_str("],\"query\":");
        out.push_str(&self.query_echo);
        out.push('}');
        out
    }
}

/// Parses and validates a body. `now_ms` resolves relative times
/// (`1h-ago`) and a missing `end`.
pub fn parse(body: &[u8], now_ms: i64) -> Result<ExpQuery, QueryError> {
    let mut request = request::parse(body)?;
    let window = validate::validate(&mut request, now_ms)?;
    let plan = plan::plan(&request, window, now_ms)?;
    Ok(ExpQuery { request, plan })
}

/// Runs `query` against `source` within `budget` (shared by every metric's
/// sub query and the expression evaluation).
pub fn run(
    query: &ExpQuery,
    source: &dyn SeriesSource,
    budget: &QueryBudget,
) -> Result<ExpAnswer, QueryError> {
    let plan = &query.plan;
    let results = execute_with_budget(&plan.ts_query, source, budget)?;
    let mut metrics: Vec<Vec<QueryResult>> = vec![Vec::new(); plan.ts_query.queries.len()];
    for result in results {
        if let Some(set) = metrics.get_mut(result.sub_query) {
            set.push(result);
        }
    }
    let mut matrices = eval::evaluate_all(plan, &metrics, budget)?;
    let mut outputs = Vec::with_capacity(plan.outputs.len());
    for output in &plan.outputs {
        let index = match output.source {
            Source::Expression(i) => i,
            Source::Metric(m) => {
                matrices.push(eval::metric_matrix(
                    metrics.get(m).map_or(&[], Vec::as_slice),
                    budget,
                )?);
                matrices.len() - 1
            }
        };
        outputs.push((output.id.clone(), output.alias.clone(), index));
    }
    let mut query_echo = String::new();
    response::push_query_echo(&mut query_echo, &query.request);
    Ok(ExpAnswer {
        matrices,
        outputs,
        query_echo,
    })
}
