//! From a validated request to what runs, as OpenTSDB's `QueryExecutor`
//! prepares it: one [`SubQuery`] per metric (its filter set, the global
//! downsampler without fill policy, the global rate flag, its own or the
//! global aggregator), each expression compiled against its inputs, the
//! evaluation order (nested expressions first; self references and cycles
//! rejected) and the outputs (the listed ones that exist, else every
//! expression, else every metric).
//!
//! OpenTSDB finds cycles only after fetching the data; here they are found
//! before anything is fetched.

use std::collections::BTreeSet;

use crate::aggregate::Aggregator;
use crate::downsample::DownsampleSpec;
use crate::error::QueryError;
use crate::expression::error::ExpressionError;
use crate::expression::exp::request::{ExpRequest, MetricSpec};
use crate::expression::exp::validate::Window;
use crate::expression::fill::NumericFillPolicy;
use crate::expression::join::{KeyOptions, SetOperator};
use crate::expression::script::Script;
use crate::request::{SubQuery, TsQuery};
use crate::time::is_supported_timezone;

/// Where a variable (or an output) takes its series from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A metric, by its position in `metrics` (= its sub query index).
    Metric(usize),
    /// An expression, by its position in `expressions`.
    Expression(usize),
}

/// An expression ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) struct CompiledExpression {
    pub id: String,
    pub expr: String,
    pub script: Script,
    /// The source of each script variable, slot by slot.
    pub inputs: Vec<Source>,
    pub operator: SetOperator,
    pub keys: KeyOptions,
    /// What this expression's missing points count as where another
    /// expression reads it.
    pub fill: f64,
}

/// One output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedOutput {
    pub id: String,
    pub alias: Option<String>,
    pub source: Source,
}

/// Everything [`super::run`] needs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// One sub query per metric, in `metrics` order.
    pub ts_query: TsQuery,
    /// Each metric's fill value inside expressions.
    pub metric_fills: Vec<f64>,
    /// Each metric's filtered tag keys (`useQueryTags` joins on these).
    pub metric_tagks: Vec<BTreeSet<String>>,
    pub expressions: Vec<CompiledExpression>,
    /// Expression indexes, each after every expression it reads.
    pub order: Vec<usize>,
    pub outputs: Vec<PlannedOutput>,
}

/// Plans a request [`super::validate::validate`] accepted.
pub(crate) fn plan(req: &ExpRequest, window: Window, now_ms: i64) -> Result<Plan, QueryError> {
    let metrics = req.metrics.as_deref().unwrap_or_default();
    let time = req.time.as_ref().ok_or(ExpressionError::MissingTime)?;

    // The metrics' filter sets (QueryExecutor's constructor).
    let mut filter_sets = Vec::with_capacity(metrics.len());
    for m in metrics {
        filter_sets.push(filter_set_of(req, m)?);
    }
    // The expressions' iterators.
    let mut expressions = Vec::new();
    for e in req.expressions.iter().flatten() {
        let join = e
            .join
            .unwrap_or(crate::expression::exp::request::JoinSpec::DEFAULT);
        let operator = join.operator.ok_or(ExpressionError::MissingSetOperator)?;
        let script = e.script.clone().ok_or(ExpressionError::NoVariables)?;
        if script.variables().is_empty() {
            return Err(ExpressionError::NoVariables.into());
        }
        let mut inputs = Vec::with_capacity(script.variables().len());
        for var in script.variables() {
            inputs.push(
                source_of(req, var).ok_or_else(|| ExpressionError::MissingInput {
                    expr: e.expr.clone().unwrap_or_default(),
                    variable: var.clone(),
                })?,
            );
        }
        expressions.push(CompiledExpression {
            id: e.id.clone().unwrap_or_default(),
            expr: e.expr.clone().unwrap_or_default(),
            script,
            inputs,
            operator,
            keys: KeyOptions {
                use_query_tags: join.use_query_tags,
                include_agg_tags: join.include_agg_tags,
            },
            fill: e.fill_policy.unwrap_or(NumericFillPolicy::NAN).value,
        });
    }

    // TSQuery.validateAndSetQuery.
    let end_ms = window.end_ms.unwrap_or(now_ms);
    if end_ms < window.start_ms {
        return Err(QueryError::BadRequest {
            message: format!(
                "End time [{end_ms}] must be greater than or equal to the start time [{}]",
                window.start_ms
            ),
            details: None,
        });
    }
    let timezone = time.timezone.clone().filter(|t| !t.is_empty());
    let downsample = time
        .downsampler
        .as_ref()
        .map(|d| {
            // OpenTSDB leaves the downsampler's fill policy out of the spec.
            format!(
                "{}-{}",
                d.interval.as_deref().unwrap_or_default(),
                d.aggregator.as_deref().unwrap_or_default()
            )
        })
        .map(|spec| DownsampleSpec::parse(&spec, false))
        .transpose()?;
    if downsample.is_some()
        && let Some(tz) = timezone.as_deref()
        && !is_supported_timezone(tz)
    {
        return Err(QueryError::BadRequest {
            message: "The timezone specification could not be found".to_string(),
            details: None,
        });
    }
    let mut queries = Vec::with_capacity(metrics.len());
    for (index, (m, (filters, explicit_tags))) in metrics.iter().zip(filter_sets).enumerate() {
        let name = m
            .aggregator
            .as_deref()
            .or(time.aggregator.as_deref())
            .unwrap_or_default();
        if name.is_empty() {
            return Err(QueryError::BadRequest {
                message: "Missing the aggregation function".to_string(),
                details: None,
            });
        }
        let aggregator = Aggregator::from_name(name).ok_or_else(|| QueryError::BadRequest {
            message: format!("No such aggregation function: {name}"),
            details: None,
        })?;
        queries.push(SubQuery {
            index,
            aggregator,
            metric: m.metric.clone().unwrap_or_default(),
            tsuids: Vec::new(),
            downsample: downsample.clone(),
            rate: time.rate.then(crate::rate::RateOptions::default),
            filters,
            explicit_tags,
            rollup_usage: crate::rollup::RollupUsage::default(),
        });
    }
    let metric_tagks = queries
        .iter()
        .map(|q| q.filters.iter().map(|f| f.tagk.clone()).collect())
        .collect();
    let ts_query = TsQuery {
        start_ms: window.start_ms,
        end_ms,
        queries,
        ms_resolution: true,
        show_tsuids: false,
        show_query: false,
        arrays: false,
        no_annotations: true,
        global_annotations: false,
        use_calendar: false,
        timezone,
        delete: false,
        show_stats: false,
        show_summary: false,
    };

    let order = evaluation_order(&expressions)?;
    let outputs = outputs_of(req, &expressions);
    Ok(Plan {
        ts_query,
        metric_fills: metrics
            .iter()
            .map(|m| m.fill_policy.unwrap_or(NumericFillPolicy::ZERO).value)
            .collect(),
        metric_tagks,
        expressions,
        order,
        outputs,
    })
}

/// A metric's filters (copied from its filter set) and `explicitTags`.
fn filter_set_of(
    req: &ExpRequest,
    metric: &MetricSpec,
) -> Result<(Vec<crate::filter::TagFilter>, bool), QueryError> {
    let Some(id) = metric.filter.as_deref().filter(|f| !f.is_empty()) else {
        return Ok((Vec::new(), false));
    };
    let sets = match &req.filters {
        Some(sets) if !sets.is_empty() => sets,
        _ => return Err(ExpressionError::NoFilterDefined(id.to_string()).into()),
    };
    Ok(sets
        .iter()
        .find(|set| set.id.as_deref() == Some(id))
        .map(|set| (set.tags.clone().unwrap_or_default(), set.explicit_tags))
        .unwrap_or_default())
}

fn source_of(req: &ExpRequest, id: &str) -> Option<Source> {
    let metric = req
        .metrics
        .iter()
        .flatten()
        .position(|m| m.id.as_deref() == Some(id));
    let expression = || {
        req.expressions
            .iter()
            .flatten()
            .position(|e| e.id.as_deref() == Some(id))
    };
    metric
        .map(Source::Metric)
        .or_else(|| expression().map(Source::Expression))
}

/// Nested expressions first. Edges are added in declaration order and a
/// cycle is reported at the expression whose edge closes it (OpenTSDB
/// builds the same graph, in its hash map's order).
fn evaluation_order(expressions: &[CompiledExpression]) -> Result<Vec<usize>, QueryError> {
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); expressions.len()];
    for (i, e) in expressions.iter().enumerate() {
        for input in &e.inputs {
            let Source::Expression(j) = *input else {
                continue;
            };
            if i == j {
                return Err(ExpressionError::SelfReference(e.id.clone()).into());
            }
            if reaches(&edges, j, i) {
                return Err(ExpressionError::CircularReference(e.id.clone()).into());
            }
            if !edges[i].contains(&j) {
                edges[i].push(j);
            }
        }
    }
    // Post-order depth-first walk: dependencies before dependents.
    let mut order = Vec::with_capacity(expressions.len());
    let mut done = vec![false; expressions.len()];
    for root in 0..expressions.len() {
        let mut stack = vec![(root, 0usize)];
        while let Some((node, next_edge)) = stack.pop() {
            if done[node] {
                continue;
            }
            if let Some(&child) = edges[node].get(next_edge) {
                stack.push((node, next_edge + 1));
                if !done[child] {
                    stack.push((child, 0));
                }
            } else {
                done[node] = true;
                order.push(node);
            }
        }
    }
    Ok(order)
}

/// Whether `to` is reachable from `from` along `edges`.
fn reaches(edges: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = vec![false; edges.len()];
    let mut stack = vec![from];
    while let Some(node) = stack.pop() {
        if node == to {
            return true;
        }
        if std::mem::replace(&mut seen[node], true) {
            continue;
        }
        stack.extend(edges[node].iter().copied());
    }
    false
}

/// The listed outputs that name a metric or an expression (others are
/// skipped, as OpenTSDB does); without a list every expression, or every
/// metric when there are none.
fn outputs_of(req: &ExpRequest, expressions: &[CompiledExpression]) -> Vec<PlannedOutput> {
    match req.outputs.as_deref() {
        Some(listed) if !listed.is_empty() => listed
            .iter()
            .filter_map(|o| {
                let id = o.id.as_deref()?;
                let source = expressions
                    .iter()
                    .position(|e| e.id == id)
                    .map(Source::Expression)
                    .or_else(|| {
                        req.metrics
                            .iter()
                            .flatten()
                            .position(|m| m.id.as_deref() == Some(id))
                            .map(Source::Metric)
                    })?;
                Some(PlannedOutput {
                    id: id.to_string(),
                    alias: o.alias.clone(),
                    source,
                })
            })
            .collect(),
        _ if !expressions.is_empty() => expressions
            .iter()
            .enumerate()
            .map(|(i, e)| PlannedOutput {
                id: e.id.clone(),
                alias: None,
                source: Source::Expression(i),
            })
            .collect(),
        _ => req
            .metrics
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, m)| PlannedOutput {
                id: m.id.clone().unwrap_or_default(),
                alias: None,
                source: Source::Metric(i),
            })
            .collect(),
    }
}
