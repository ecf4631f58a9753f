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
//! An output id listed more than once is written each time, and every
//! copy after the first is charged to the [`QueryBudget`] like a new
//! matrix (OpenTSDB writes the later copies without data points: its
//! first output consumes the shared iterator). With every set of an
//! intersection empty the expression has no series and no error, as in
//! OpenTSDB (its `IntersectionIterator` stops before intersecting when no
//! set has a series).
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
#[cfg(test)]
mod tests_bounds;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::exec::{QueryResult, SeriesSource, execute_with_budget};
use crate::request::TsQuery;

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

/// The answer of [`run`]: the body, written while the budget could still
/// stop it.
#[derive(Debug, Clone)]
pub struct ExpAnswer {
    body: String,
}

impl ExpAnswer {
    /// The response body. It was written by [`run`] (under the budget's
    /// deadline and cancellation), so this hands it over instead of
    /// copying it.
    pub fn to_json(self) -> String {
        self.body
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
    // Each output's matrix, by index into `matrices`. A metric output is
    // built once however often it is listed. An id listed again is written
    // again (OpenTSDB writes later duplicates empty, having consumed its
    // iterator on the first), and each further copy is charged to the
    // budget as if it were a new matrix: the response grows with it.
    let expressions = plan.expressions.len();
    let mut metric_matrix: Vec<Option<usize>> = vec![None; metrics.len()];
    // Whether a source's matrix was written already (expressions, then
    // metrics).
    let mut used = vec![false; expressions + metrics.len()];
    let mut outputs = Vec::with_capacity(plan.outputs.len());
    for output in &plan.outputs {
        let (slot, built) = match output.source {
            Source::Expression(i) => (i, Some(i)),
            Source::Metric(m) => (expressions + m, metric_matrix.get(m).copied().flatten()),
        };
        let index = match built {
            Some(index) => index,
            None => {
                let m = slot - expressions;
                matrices.push(eval::metric_matrix(
                    metrics.get(m).map_or(&[], Vec::as_slice),
                    budget,
                )?);
                if let Some(known) = metric_matrix.get_mut(m) {
                    *known = Some(matrices.len() - 1);
                }
                matrices.len() - 1
            }
        };
        let again = used
            .get_mut(slot)
            .is_some_and(|flag| std::mem::replace(flag, true));
        if again && let Some(matrix) = matrices.get(index) {
            budget.hold(matrix.values.len().saturating_add(matrix.timestamps.len()))?;
        }
        outputs.push((output, index));
    }

    // Room for what is written (about 12 bytes a value, 16 a timestamp):
    // every written value was charged above, so this is bounded too.
    let mut body = String::with_capacity(
        outputs
            .iter()
            .filter_map(|(_, index)| matrices.get(*index))
            .map(|m| {
                m.values
                    .len()
                    .saturating_mul(12)
                    .saturating_add(m.timestamps.len().saturating_mul(16))
            })
            .fold(256, usize::saturating_add),
    );
    body.push_str("{\"outputs\":[");
    let mut tick = 0;
    for (i, (output, index)) in outputs.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        if let Some(matrix) = matrices.get(*index) {
            response::push_output(
                &mut body,
                &output.id,
                output.alias.as_deref(),
                matrix,
                budget,
                &mut tick,
            )?;
        }
    }
    body.push_str("],\"query\":");
    response::push_query_echo(&mut body, &query.request);
    body.push('}');
    Ok(ExpAnswer { body })
}
