//! What each [`Operation`] does to the series of its parameters (each
//! parameter a list of [`QueryResult`]s: a sub query's groups, or a nested
//! call's output). Functions of one series apply to every series of every
//! parameter, in order, and keep its metric, tags, TSUIDs and annotations
//! (OpenTSDB's `PostAggregatedDataPoints`).
//!
//! Deliberate differences from OpenTSDB 2.4 (its bugs, not reproduced):
//!
//! * `alias` keeps the values (OpenTSDB's copies them through `Math.abs`);
//! * `sumSeries` and friends align the joined series on the union of their
//!   timestamps, a missing point counting 0 (OpenTSDB pairs the k-th points
//!   of each series whatever their times, and fails when the counts
//!   differ);
//! * `highestCurrent` ranks by each series' latest value and `highestMax`
//!   by its largest, NaN values ignored (OpenTSDB's aggregator mixes up
//!   series once one has ended, starts maxima at `Double.MIN_VALUE` and
//!   ranks NaN first);
//! * `timeShift` keeps integer values integers (OpenTSDB's fails on
//!   doubles).

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::exec::QueryResult;
use crate::expression::align::{Cursor, Points, union_timestamps};
use crate::expression::gexp::functions::{Operation, Rank};
use crate::expression::gexp::moving_average::moving_average;
use crate::expression::jexl::Value;
use crate::expression::join::{JoinKey, Joined, KeyOptions, SetOperator, join};
use crate::expression::script::ArithOp;
use crate::expression::series::SeriesMeta;
use crate::num::Num;

/// What every operation may need besides its inputs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub budget: &'a QueryBudget,
    /// The query range (ms, inclusive).
    pub start_ms: i64,
    pub end_ms: i64,
    /// The sub query index combined series report (OpenTSDB: 0, the first
    /// sub query).
    pub combined_sub_query: usize,
}

/// Applies `operation` to its parameters' series.
pub(crate) fn apply(
    operation: &Operation,
    inputs: Vec<Vec<QueryResult>>,
    ctx: Context<'_>,
) -> Result<Vec<QueryResult>, QueryError> {
    match operation {
        Operation::Nothing => Ok(Vec::new()),
        Operation::Absolute => each(inputs, |mut r| {
            for (_, v) in &mut r.dps {
                *v = match *v {
                    Num::Int(i) => Num::Int(i.wrapping_abs()),
                    Num::Float(f) => Num::Float(f.abs()),
                };
            }
            Ok(r)
        }),
        Operation::Scale(factor) => {
            let factor = *factor;
            // Integers stay integers when the factor is integral.
            let integral = factor == factor.floor() && factor.is_finite();
            each(inputs, |mut r| {
                for (_, v) in &mut r.dps {
                    *v = match *v {
                        Num::Int(i) if integral => Num::Int((factor as i64).wrapping_mul(i)),
                        other => Num::Float(factor * other.as_f64()),
                    };
                }
                Ok(r)
            })
        }
        Operation::Alias(template) => each(inputs, |mut r| {
            r.metric = alias(template, &r);
            r.tags.clear();
            r.aggregate_tags.clear();
            Ok(r)
        }),
        Operation::FirstDiff => each(inputs, |mut r| {
            let mut previous: Option<f64> = None;
            for (_, v) in &mut r.dps {
                let value = v.as_f64();
                *v = Num::Float(previous.map_or(0.0, |p| value - p));
                previous = Some(value);
            }
            Ok(r)
        }),
        Operation::MovingAverage(window) => each(inputs, |mut r| {
            clip(&mut r, ctx);
            r.dps = moving_average(&r.dps, *window, ctx.budget)?;
            Ok(r)
        }),
        Operation::TimeShift(shift) => {
            // Only the first parameter is shifted.
            Ok(inputs
                .into_iter()
                .next()
                .unwrap_or_default()
                .into_iter()
                .map(|mut r| {
                    for (ts, _) in &mut r.dps {
                        *ts = ts.saturating_add(*shift);
                    }
                    r
                })
                .collect())
        }
        Operation::Highest { n, rank } => Ok(highest(inputs, *n, *rank, ctx)),
        Operation::Combine(op) => combine(*op, inputs, ctx),
    }
}

/// `f` applied to every series of every parameter, in order.
fn each(
    inputs: Vec<Vec<QueryResult>>,
    f: impl FnMut(QueryResult) -> Result<QueryResult, QueryError>,
) -> Result<Vec<QueryResult>, QueryError> {
    inputs.into_iter().flatten().map(f).collect()
}

/// Keeps the points in the query range (what OpenTSDB's aggregation
/// iterators see, and what its serializer writes).
pub(crate) fn clip(result: &mut QueryResult, ctx: Context<'_>) {
    result
        .dps
        .retain(|(ts, _)| *ts >= ctx.start_ms && *ts <= ctx.end_ms);
}

/// The alias with `@tagk` replaced by the series' tag values (longer keys
/// first, so `@host` does not eat `@hostname`).
fn alias(template: &str, result: &QueryResult) -> String {
    let mut name = template.to_string();
    if name.contains('@') {
        let mut tags: Vec<(&String, &String)> = result.tags.iter().collect();
        tags.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
        for (k, v) in tags {
            name = name.replace(&format!("@{k}"), v);
        }
    }
    name
}

/// The top `n` series by `rank`, highest first (ties keep their order).
fn highest(
    inputs: Vec<Vec<QueryResult>>,
    n: usize,
    rank: Rank,
    ctx: Context<'_>,
) -> Vec<QueryResult> {
    let mut ranked: Vec<(f64, QueryResult)> = inputs
        .into_iter()
        .flatten()
        .filter_map(|mut r| {
            clip(&mut r, ctx);
            let mut values = r
                .dps
                .iter()
                .map(|(_, v)| v.as_f64())
                .filter(|v| !v.is_nan());
            let key = match rank {
                // OpenTSDB skips a series without points here.
                Rank::Current if r.dps.is_empty() => return None,
                Rank::Current => values.next_back(),
                Rank::Max => values.reduce(f64::max),
            };
            Some((key.unwrap_or(f64::NEG_INFINITY), r))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranked.into_iter().take(n).map(|(_, r)| r).collect()
}

/// `sumSeries` / `diffSeries` / `multiplySeries` / `divideSeries`: a union
/// of the parameters on all tags (aggregated tags left out), then per
/// joined series `a op b op …` at each of their timestamps, a missing
/// series or point counting 0 (as does a NaN), with JEXL's arithmetic
/// (division by zero is 0).
fn combine(
    op: ArithOp,
    inputs: Vec<Vec<QueryResult>>,
    ctx: Context<'_>,
) -> Result<Vec<QueryResult>, QueryError> {
    let options = KeyOptions {
        use_query_tags: false,
        include_agg_tags: false,
    };
    let no_tagks = Default::default();
    let metas: Vec<Vec<SeriesMeta>> = inputs
        .iter()
        .map(|set| set.iter().map(SeriesMeta::of_result).collect())
        .collect();
    let keys: Vec<Vec<JoinKey>> = metas
        .iter()
        .map(|set| {
            set.iter()
                .map(|m| JoinKey::of(m, &no_tagks, options))
                .collect()
        })
        .collect();
    let Joined::Rows(rows) = join(&keys, SetOperator::Union) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(rows.len());
    let mut tick = 0;
    for row in rows {
        let members: Vec<(usize, &QueryResult)> = row
            .iter()
            .enumerate()
            .filter_map(|(s, i)| i.and_then(|i| inputs[s].get(i)).map(|r| (s, r)))
            .collect();
        let Some((_, first)) = members.first() else {
            continue;
        };
        let points: Vec<Points<'_>> = members.iter().map(|(_, r)| Points::Raw(&r.dps)).collect();
        let timestamps = union_timestamps(&points, ctx.budget)?;
        let mut cursors = vec![Cursor::default(); members.len()];
        let mut dps = Vec::with_capacity(timestamps.len());
        for ts in timestamps {
            ctx.budget.tick(&mut tick)?;
            let mut acc: Option<Value> = None;
            for s in 0..inputs.len() {
                let value = match members.iter().position(|(set, _)| *set == s) {
                    Some(m) => cursors[m]
                        .take(&points[m], ts)
                        .filter(|v| !v.is_nan())
                        .unwrap_or(0.0),
                    None => 0.0,
                };
                let value = Value::Double(value);
                acc = Some(match acc {
                    None => value,
                    Some(left) => match op {
                        // Doubles never fail JEXL's + - *.
                        ArithOp::Add => left.add(value).unwrap_or(value),
                        ArithOp::Subtract => left.subtract(value).unwrap_or(value),
                        ArithOp::Multiply => left.multiply(value).unwrap_or(value),
                        ArithOp::Divide => left.divide(value),
                        ArithOp::Modulo => left.modulo(value),
                    },
                });
            }
            dps.push((ts, Num::Float(acc.map_or(0.0, Value::to_double))));
        }
        let meta = SeriesMeta::combine(members.iter().map(|(s, _)| {
            // The meta of this member (same position in its set).
            let i = row[*s].unwrap_or_default();
            &metas[*s][i]
        }));
        out.push(QueryResult {
            sub_query: ctx.combined_sub_query,
            metric: first.metric.clone(),
            tags: meta.tags,
            aggregate_tags: meta.aggregated_tags.into_iter().collect(),
            tsuids: Vec::new(),
            annotations: Vec::new(),
            global_annotations: first.global_annotations.clone(),
            dps,
        });
    }
    Ok(out)
}
