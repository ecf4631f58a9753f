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
//!
//! Like OpenTSDB, `alias` only renames: joins further up still key on the
//! series' tags (OpenTSDB's on the tag UIDs, which an alias keeps); the
//! tags are dropped from the answer only ([`Series::aliased`]).

use crate::budget::{BYTES_PER_VALUE, QueryBudget};
use crate::error::QueryError;
use crate::exec::QueryResult;
use crate::expression::align::{Cursor, Points, union_timestamps};
use crate::expression::error::ExpressionError;
use crate::expression::gexp::functions::{Operation, Rank};
use crate::expression::gexp::moving_average::moving_average;
use crate::expression::jexl::Value;
use crate::expression::join::{JoinKey, Joined, KeyOptions, SetOperator, join};
use crate::expression::limits::MAX_ALIAS_BYTES;
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

/// A series between functions.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub result: QueryResult,
    /// Renamed by `alias`: its tags are still what it joins on, and are
    /// dropped when the answer is written ([`Series::into_answer`]).
    pub aliased: bool,
}

impl Series {
    /// A sub query's result, as is.
    pub(crate) fn of(result: QueryResult) -> Series {
        Series {
            result,
            aliased: false,
        }
    }

    /// The result as the answer shows it: an aliased series without tags
    /// (OpenTSDB's `PostAggregatedDataPoints` hides them behind an alias).
    pub(crate) fn into_answer(self) -> QueryResult {
        let mut result = self.result;
        if self.aliased {
            result.tags.clear();
            result.aggregate_tags.clear();
        }
        result
    }
}

/// Applies `operation` to its parameters' series.
pub(crate) fn apply(
    operation: &Operation,
    inputs: Vec<Vec<Series>>,
    ctx: Context<'_>,
) -> Result<Vec<Series>, QueryError> {
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
        Operation::Alias(template) => inputs
            .into_iter()
            .flatten()
            .map(|mut series| -> Result<Series, QueryError> {
                let name = alias(template, &series.result)?;
                // The name outlives the query's evaluation: charged like
                // the values it is written with.
                ctx.budget
                    .hold(name.len().div_ceil(BYTES_PER_VALUE as usize))?;
                series.result.metric = name;
                series.aliased = true;
                Ok(series)
            })
            .collect(),
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
            // Only the first parameter is shifted. Its sub queries fetched
            // the window `shift` earlier (see `super::run`), so moving the
            // points forward lands them in the query range.
            Ok(inputs
                .into_iter()
                .next()
                .unwrap_or_default()
                .into_iter()
                .map(|mut series| {
                    for (ts, _) in &mut series.result.dps {
                        *ts = ts.saturating_add(*shift);
                    }
                    series
                })
                .collect())
        }
        Operation::Highest { n, rank } => Ok(highest(inputs, *n, *rank, ctx)),
        Operation::Combine(op) => combine(*op, inputs, ctx),
    }
}

/// `f` applied to every series of every parameter, in order (an alias
/// stays).
fn each(
    inputs: Vec<Vec<Series>>,
    mut f: impl FnMut(QueryResult) -> Result<QueryResult, QueryError>,
) -> Result<Vec<Series>, QueryError> {
    inputs
        .into_iter()
        .flatten()
        .map(|series| {
            Ok(Series {
                result: f(series.result)?,
                aliased: series.aliased,
            })
        })
        .collect()
}

/// Keeps the points in the query range (what OpenTSDB's aggregation
/// iterators see, and what its serializer writes).
pub(crate) fn clip(result: &mut QueryResult, ctx: Context<'_>) {
    result
        .dps
        .retain(|(ts, _)| *ts >= ctx.start_ms && *ts <= ctx.end_ms);
}

/// The alias with each `@tagk` replaced by the series' tag value, in one
/// pass over the template: at each `@` the longest tag key that follows
/// wins (`@hostname` is not `@host` + `name`), and inserted values are never
/// searched again (a value containing `@dc` stays as it is). Fails once the
/// name exceeds [`MAX_ALIAS_BYTES`].
fn alias(template: &str, result: &QueryResult) -> Result<String, QueryError> {
    let too_long = || {
        QueryError::from(ExpressionError::AliasTooLong {
            max: MAX_ALIAS_BYTES,
        })
    };
    if template.len() > MAX_ALIAS_BYTES {
        return Err(too_long());
    }
    if !template.contains('@') || result.tags.is_empty() {
        return Ok(template.to_string());
    }
    let mut tags: Vec<(&str, &str)> = result
        .tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    tags.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    let mut name = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('@') {
        name.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match tags.iter().find(|(k, _)| after.starts_with(k)) {
            Some((k, v)) => {
                name.push_str(v);
                rest = &after[k.len()..];
            }
            None => {
                name.push('@');
                rest = after;
            }
        }
        if name.len() > MAX_ALIAS_BYTES {
            return Err(too_long());
        }
    }
    name.push_str(rest);
    if name.len() > MAX_ALIAS_BYTES {
        return Err(too_long());
    }
    Ok(name)
}

/// The top `n` series by `rank`, highest first (ties keep their order).
fn highest(inputs: Vec<Vec<Series>>, n: usize, rank: Rank, ctx: Context<'_>) -> Vec<Series> {
    let mut ranked: Vec<(f64, Series)> = inputs
        .into_iter()
        .flatten()
        .filter_map(|mut series| {
            clip(&mut series.result, ctx);
            let r = &series.result;
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
            Some((key.unwrap_or(f64::NEG_INFINITY), series))
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
    inputs: Vec<Vec<Series>>,
    ctx: Context<'_>,
) -> Result<Vec<Series>, QueryError> {
    let options = KeyOptions {
        use_query_tags: false,
        include_agg_tags: false,
    };
    let no_tagks = Default::default();
    // The metas, keys, rows and cursors live until the sums are done:
    // charged before they are built (as `/api/query/exp`'s evaluation
    // does), released at the end.
    let per_series = inputs.len().saturating_mul(2).saturating_add(3);
    let bookkeeping = inputs
        .iter()
        .flatten()
        .map(|s| {
            per_series
                .saturating_add(4 * s.result.tags.len())
                .saturating_add(2 * s.result.aggregate_tags.len())
                .saturating_add(2)
        })
        .fold(0usize, usize::saturating_add);
    ctx.budget.hold(bookkeeping)?;
    let out = combine_joined(op, &inputs, ctx, &no_tagks, options)?;
    ctx.budget.release(bookkeeping);
    Ok(out)
}

fn combine_joined(
    op: ArithOp,
    inputs: &[Vec<Series>],
    ctx: Context<'_>,
    no_tagks: &std::collections::BTreeSet<String>,
    options: KeyOptions,
) -> Result<Vec<Series>, QueryError> {
    let metas: Vec<Vec<SeriesMeta>> = inputs
        .iter()
        .map(|set| {
            set.iter()
                .map(|s| SeriesMeta::of_result(&s.result))
                .collect()
        })
        .collect();
    let keys: Vec<Vec<JoinKey<'_>>> = metas
        .iter()
        .map(|set| {
            set.iter()
                .map(|m| JoinKey::of(m, no_tagks, options))
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
            .filter_map(|(s, i)| i.and_then(|i| inputs[s].get(i)).map(|r| (s, &r.result)))
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
        out.push(Series::of(QueryResult {
            sub_query: ctx.combined_sub_query,
            metric: first.metric.clone(),
            tags: meta.tags,
            aggregate_tags: meta.aggregated_tags.into_iter().collect(),
            tsuids: Vec::new(),
            annotations: Vec::new(),
            global_annotations: first.global_annotations.clone(),
            dps,
        }));
    }
    Ok(out)
}
