//! Evaluation: each expression joins its inputs' series sets
//! (`IntersectionIterator` / `UnionIterator`), steps them in lock step over
//! the union of their timestamps (`TimeSyncedIterator`) and runs its script
//! per row and timestamp (`ExpressionIterator`). The result is a
//! [`Matrix`]: the series share the timestamps, as the response's `dps`
//! arrays do.
//!
//! What a variable reads at a timestamp: the series' point; its set's fill
//! value when the series has no point there or the point is NaN; `0` when
//! the series is missing from the set (a union's filler, whatever the fill
//! policy).
//!
//! OpenTSDB steps a nested expression once per outer timestamp whether or
//! not it has a value there, which shifts its values in time when the
//! timestamps differ; here a nested expression is a series like a metric,
//! read at its own timestamps and filled where it has none.
//!
//! Memory: the values, the timestamps, the join's keys and rows, the
//! per-row cursors and every combined meta are charged to the query's
//! budget before they are allocated. Metas are shared ([`Arc`]): a row with
//! one member reuses its input's, so many expressions over the same large
//! set do not copy its names once each.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::exec::QueryResult;
use crate::expression::align::{Cursor, Points, union_timestamps};
use crate::expression::error::ExpressionError;
use crate::expression::exp::plan::{CompiledExpression, Plan, Source};
use crate::expression::jexl::Value;
use crate::expression::join::{JoinKey, Joined, join};
use crate::expression::series::SeriesMeta;

/// Series (columns) over shared timestamps (rows).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Matrix {
    pub series: Vec<Arc<SeriesMeta>>,
    pub timestamps: Vec<i64>,
    /// Row-major: `values[row * series.len() + column]`.
    pub values: Vec<f64>,
}

impl Matrix {
    fn column(&self, column: usize) -> Points<'_> {
        Points::Column {
            timestamps: &self.timestamps,
            values: &self.values,
            stride: self.series.len(),
            column,
        }
    }
}

/// The series one variable reads.
struct InputSet<'a> {
    metas: &'a [Arc<SeriesMeta>],
    points: Vec<Points<'a>>,
    fill: f64,
    query_tagks: &'a BTreeSet<String>,
}

/// Evaluates every expression of `plan` (OpenTSDB compiles them all, so an
/// expression that is not output can still fail the query) over the
/// metrics' results (`metrics[i]` answers metric `i`).
pub(crate) fn evaluate_all(
    plan: &Plan,
    metrics: &[Vec<QueryResult>],
    budget: &QueryBudget,
) -> Result<Vec<Matrix>, QueryError> {
    let metric_metas = metas_of(metrics, budget)?;
    let no_tagks = BTreeSet::new();
    let mut done: Vec<Option<Matrix>> = vec![None; plan.expressions.len()];
    for &index in &plan.order {
        let expression = &plan.expressions[index];
        let mut sets = Vec::with_capacity(expression.inputs.len());
        for input in &expression.inputs {
            sets.push(match *input {
                Source::Metric(m) => InputSet {
                    metas: metric_metas.get(m).map_or(&[], Vec::as_slice),
                    points: metrics
                        .get(m)
                        .map(|rs| rs.iter().map(|r| Points::Raw(&r.dps)).collect())
                        .unwrap_or_default(),
                    fill: plan.metric_fills.get(m).copied().unwrap_or(0.0),
                    query_tagks: plan.metric_tagks.get(m).unwrap_or(&no_tagks),
                },
                Source::Expression(x) => {
                    // The plan orders nested expressions first, so a missing
                    // input is our bug, not the request's: `Source` is the
                    // variant the server answers with a 500.
                    let matrix = done.get(x).and_then(Option::as_ref).ok_or_else(|| {
                        QueryError::Source(format!(
                            "Internal error: expression {} was evaluated before its input",
                            expression.id
                        ))
                    })?;
                    InputSet {
                        metas: &matrix.series,
                        points: (0..matrix.series.len()).map(|c| matrix.column(c)).collect(),
                        fill: plan.expressions.get(x).map_or(f64::NAN, |e| e.fill),
                        query_tagks: &no_tagks,
                    }
                }
            });
        }
        let matrix = evaluate(expression, &sets, budget)?;
        done[index] = Some(matrix);
    }
    Ok(done.into_iter().map(Option::unwrap_or_default).collect())
}

/// Every metric's series metas, shared by every expression that reads the
/// metric (charged once, here).
fn metas_of(
    metrics: &[Vec<QueryResult>],
    budget: &QueryBudget,
) -> Result<Vec<Vec<Arc<SeriesMeta>>>, QueryError> {
    let mut out = Vec::with_capacity(metrics.len());
    for results in metrics {
        let mut metas = Vec::with_capacity(results.len());
        for result in results {
            let meta = SeriesMeta::of_result(result);
            budget.hold(meta.held_values())?;
            metas.push(Arc::new(meta));
        }
        out.push(metas);
    }
    Ok(out)
}

/// What joining `sets` holds at most while an expression is evaluated, in
/// values: per series its key (two per tag pair, one per aggregated key,
/// two for the key's and the map entry's records), its row and its cursors
/// (a row has one slot per set, and there are at most as many rows as
/// series), and its entry among the active points.
fn join_values(sets: &[InputSet<'_>]) -> usize {
    let per_series = sets.len().saturating_mul(2).saturating_add(3);
    sets.iter()
        .flat_map(|set| set.metas.iter())
        .map(|meta| {
            per_series
                .saturating_add(2 * meta.tags.len())
                .saturating_add(meta.aggregated_tags.len())
        })
        .fold(0usize, usize::saturating_add)
}

fn evaluate(
    expression: &CompiledExpression,
    sets: &[InputSet<'_>],
    budget: &QueryBudget,
) -> Result<Matrix, QueryError> {
    // Keys, rows and cursors live until the matrix is done; charged before
    // any is built, released at the end.
    let bookkeeping = join_values(sets);
    budget.hold(bookkeeping)?;
    let matrix = evaluate_joined(expression, sets, budget)?;
    budget.release(bookkeeping);
    Ok(matrix)
}

fn evaluate_joined(
    expression: &CompiledExpression,
    sets: &[InputSet<'_>],
    budget: &QueryBudget,
) -> Result<Matrix, QueryError> {
    let keys: Vec<Vec<JoinKey<'_>>> = sets
        .iter()
        .map(|set| {
            set.metas
                .iter()
                .map(|meta| JoinKey::of(meta, set.query_tagks, expression.keys))
                .collect()
        })
        .collect();
    let rows = match join(&keys, expression.operator) {
        Joined::Rows(rows) => rows,
        Joined::NoIntersection => {
            return Err(ExpressionError::NoIntersection {
                id: expression.id.clone(),
                use_query_tags: expression.keys.use_query_tags,
                include_agg_tags: expression.keys.include_agg_tags,
            }
            .into());
        }
    };
    let members = |row: &Vec<Option<usize>>| {
        row.iter()
            .enumerate()
            .filter_map(|(s, member)| member.map(|i| (s, i)))
            .collect::<Vec<_>>()
    };
    let active: Vec<Points<'_>> = rows
        .iter()
        .flat_map(|row| members(row).into_iter().map(|(s, i)| sets[s].points[i]))
        .collect();
    let timestamps = union_timestamps(&active, budget)?;
    let mut series = Vec::with_capacity(rows.len());
    for row in &rows {
        let inputs: Vec<&Arc<SeriesMeta>> = members(row)
            .into_iter()
            .map(|(s, i)| &sets[s].metas[i])
            .collect();
        // A shared meta costs its pointer; a combined one at most the
        // names of its inputs.
        let cost = match inputs.as_slice() {
            [_] => 1,
            many => many.iter().map(|m| m.held_values()).sum::<usize>(),
        };
        budget.hold(cost)?;
        series.push(SeriesMeta::combine_shared(&inputs));
    }

    let cells = timestamps.len().saturating_mul(rows.len());
    budget.hold(cells)?;
    let mut values = Vec::with_capacity(cells);
    let mut cursors = vec![vec![Cursor::default(); sets.len()]; rows.len()];
    let mut slots = vec![0.0; sets.len()];
    let mut tick = 0;
    for &ts in &timestamps {
        for (row, row_cursors) in rows.iter().zip(cursors.iter_mut()) {
            budget.tick(&mut tick)?;
            for (s, set) in sets.iter().enumerate() {
                slots[s] = match row[s] {
                    None => 0.0,
                    Some(i) => match row_cursors[s].take(&set.points[i], ts) {
                        Some(v) if !v.is_nan() => v,
                        _ => set.fill,
                    },
                };
            }
            values.push(result_value(expression, &slots)?);
        }
    }
    Ok(Matrix {
        series,
        timestamps,
        values,
    })
}

/// Runs the script; a double is the value, a boolean 1 or 0, anything else
/// OpenTSDB's error.
fn result_value(expression: &CompiledExpression, slots: &[f64]) -> Result<f64, QueryError> {
    let value = expression.script.evaluate(slots).map_err(|e| {
        QueryError::from(ExpressionError::Arithmetic {
            detail: e.to_string(),
            expr: expression.expr.clone(),
        })
    })?;
    match value {
        Value::Double(d) => Ok(d),
        Value::Bool(b) => Ok(f64::from(u8::from(b))),
        other => Err(ExpressionError::ResultType {
            type_name: other.type_name(),
            id: expression.id.clone(),
            expr: expression.expr.clone(),
        }
        .into()),
    }
}

/// A metric as an output (OpenTSDB's `SerializeSubIterator`): its series
/// in lock step, a missing point written as `0` (the default fill, not the
/// metric's policy), NaN values as they are.
pub(crate) fn metric_matrix(
    results: &[QueryResult],
    budget: &QueryBudget,
) -> Result<Matrix, QueryError> {
    let points: Vec<Points<'_>> = results.iter().map(|r| Points::Raw(&r.dps)).collect();
    let timestamps = union_timestamps(&points, budget)?;
    let cells = timestamps.len().saturating_mul(points.len());
    budget.hold(cells)?;
    let mut values = Vec::with_capacity(cells);
    let mut cursors = vec![Cursor::default(); points.len()];
    let mut tick = 0;
    for &ts in &timestamps {
        for (series, cursor) in points.iter().zip(cursors.iter_mut()) {
            budget.tick(&mut tick)?;
            values.push(cursor.take(series, ts).unwrap_or(0.0));
        }
    }
    let mut series = Vec::with_capacity(results.len());
    for result in results {
        let meta = SeriesMeta::of_result(result);
        budget.hold(meta.held_values())?;
        series.push(Arc::new(meta));
    }
    Ok(Matrix {
        series,
        timestamps,
        values,
    })
}
