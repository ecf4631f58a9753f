//! The evaluator: an expression at one instant (instant queries), or at
//! every step of a range (range queries, one instant after another as
//! Prometheus 2.x defines them). Each selector's series are read once for
//! the whole range (the window every step needs) and sliced per step.
//!
//! Prometheus 2.42's selection rules: an instant selector takes each
//! series' newest sample in `[t - offset - 5m, t - offset]` (a staleness
//! marker ends the series there); a range selector `[r]` the samples in
//! `[t - offset - r, t - offset]`; `@` pins `t`.

use std::collections::HashMap;

use promql_parser::parser::{
    AggregateExpr, AtModifier, Call, Expr, MatrixSelector, Offset, SubqueryExpr, VectorSelector,
};

use super::aggregate::{Param, aggregate};
use super::binary::binary;
use super::failure::{execution, unsupported};
use super::functions;
use super::value::{Labels, RangeSeries, Sample, Value, is_stale};
use crate::budget::QueryBudget;
use crate::error::QueryError;

/// Where series come from: the storage, or a test's memory.
pub trait PromSource {
    /// The series `selector` chooses (name and matchers; its offset and
    /// `@` are the evaluator's), with their samples in `[start_ms,
    /// end_ms]` in time order, labels as Prometheus shows them (the metric
    /// name as `__name__`).
    fn select(
        &self,
        selector: &VectorSelector,
        start_ms: i64,
        end_ms: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<RangeSeries>, QueryError>;
}

/// Prometheus' default lookback (`--query.lookback-delta`).
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// The step of a subquery that names none: Prometheus' default
/// `global.evaluation_interval`.
pub const SUBQUERY_STEP_MS: i64 = 60 * 1000;

fn offset_ms(offset: &Option<Offset>) -> i64 {
    match offset {
        None => 0,
        Some(Offset::Pos(d)) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Some(Offset::Neg(d)) => i64::try_from(d.as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// One query's evaluation.
pub struct Evaluator<'a, S: PromSource> {
    source: &'a S,
    pub(super) budget: &'a QueryBudget,
    /// The first and last instants (ms) this evaluator is asked about:
    /// the range its selectors read for.
    start: i64,
    end: i64,
    /// The query's own first and last instants: what `@ start()` and
    /// `@ end()` name, in subqueries too.
    query_start: i64,
    query_end: i64,
    /// Selector reads, by the selector node's address, each in label order
    /// (the order Prometheus evaluates series created in that order: sums
    /// of floats depend on it in their last bits).
    fetched: HashMap<usize, Vec<RangeSeries>>,
    /// Per selector and series, where the last step's window started and
    /// ended in its samples: a range query's steps move forward, so the
    /// next window is found from there instead of by a binary search of
    /// every series at every step.
    cursors: HashMap<usize, Vec<(usize, usize)>>,
    /// Each aggregation's groups of the label sets it has seen, by the
    /// aggregation node's address.
    groups: HashMap<usize, super::aggregate::GroupCache>,
    /// Each subquery's evaluator (its own range and reads) and its inner
    /// expression's values by step, by the subquery node's address.
    subqueries: HashMap<usize, Subquery<'a, S>>,
}

/// A subquery's evaluation, kept across the outer steps.
struct Subquery<'a, S: PromSource> {
    evaluator: Box<Evaluator<'a, S>>,
    steps: HashMap<i64, Vec<Sample>>,
}

impl<S: PromSource> std::fmt::Debug for Evaluator<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("start", &self.start)
            .field("end", &self.end)
            .field("selectors_read", &self.fetched.len())
            .finish()
    }
}

impl<'a, S: PromSource> Evaluator<'a, S> {
    pub fn new(source: &'a S, budget: &'a QueryBudget, start_ms: i64, end_ms: i64) -> Self {
        Self {
            source,
            budget,
            start: start_ms,
            end: end_ms,
            query_start: start_ms,
            query_end: end_ms,
            fetched: HashMap::new(),
            cursors: HashMap::new(),
            groups: HashMap::new(),
            subqueries: HashMap::new(),
        }
    }

    /// The instant a selector's `@` and offset make of `t`.
    fn reference(&self, at: &Option<AtModifier>, offset: &Option<Offset>, t: i64) -> i64 {
        let base = match at {
            None => t,
            Some(AtModifier::Start) => self.query_start,
            Some(AtModifier::End) => self.query_end,
            Some(AtModifier::At(time)) => match time.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_millis() as i64,
                Err(e) => -(e.duration().as_millis() as i64),
            },
        };
        // Huge offsets or `@` times from a query saturate, never wrap.
        base.saturating_sub(offset_ms(offset))
    }

    /// The series of `vs` over every instant this query may ask of it,
    /// `window` ms back from each, read once (see `fetched`), with their
    /// cursors; the key of both.
    fn series_of(&mut self, vs: &VectorSelector, window: i64) -> Result<usize, QueryError> {
        let key = vs as *const VectorSelector as usize;
        if !self.fetched.contains_key(&key) {
            let first = self.reference(&vs.at, &vs.offset, self.start);
            let last = self.reference(&vs.at, &vs.offset, self.end);
            let mut series = self.source.select(
                vs,
                first.min(last).saturating_sub(window),
                first.max(last),
                self.budget,
            )?;
            series.sort_by(|x, y| x.labels.cmp(&y.labels));
            self.cursors.insert(key, vec![(0, 0); series.len()]);
            self.fetched.insert(key, series);
        }
        Ok(key)
    }

    /// An instant selector at `t`.
    fn instant(&mut self, vs: &VectorSelector, t: i64) -> Result<Vec<Sample>, QueryError> {
        Ok(self
            .instant_samples(vs, t)?
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    /// An instant selector at `t`, each sample with its own time.
    fn instant_samples(
        &mut self,
        vs: &VectorSelector,
        t: i64,
    ) -> Result<Vec<(Sample, i64)>, QueryError> {
        let at = self.reference(&vs.at, &vs.offset, t);
        let key = self.series_of(vs, LOOKBACK_MS)?;
        let (Some(series), Some(cursors)) = (self.fetched.get(&key), self.cursors.get_mut(&key))
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(series.len());
        for (s, (_, end)) in series.iter().zip(cursors.iter_mut()) {
            let upto = seek(&s.samples, end, |ts| ts <= at);
            if let Some(&(ts, value)) = upto.checked_sub(1).and_then(|i| s.samples.get(i))
                && ts >= at.saturating_sub(LOOKBACK_MS)
                && !is_stale(value)
            {
                out.push((
                    Sample {
                        labels: s.labels.clone(),
                        value,
                    },
                    ts,
                ));
            }
        }
        self.budget.hold(out.len())?;
        Ok(out)
    }

    /// A range selector at `t`: every series with a sample in its window.
    pub(super) fn range(
        &mut self,
        ms: &MatrixSelector,
        t: i64,
    ) -> Result<Vec<RangeSeries>, QueryError> {
        let range = ms.range.as_millis() as i64;
        let at = self.reference(&ms.vs.at, &ms.vs.offset, t);
        let from_ts = at.saturating_sub(range);
        let key = self.series_of(&ms.vs, range)?;
        let (Some(series), Some(cursors)) = (self.fetched.get(&key), self.cursors.get_mut(&key))
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut held = 0;
        for (s, (start, end)) in series.iter().zip(cursors.iter_mut()) {
            let from = seek(&s.samples, start, |ts| ts < from_ts);
            let to = seek(&s.samples, end, |ts| ts <= at).max(from);
            let samples: Vec<(i64, f64)> = s.samples[from..to]
                .iter()
                .copied()
                .filter(|&(_, v)| !is_stale(v))
                .collect();
            if !samples.is_empty() {
                held += samples.len();
                out.push(RangeSeries {
                    labels: s.labels.clone(),
                    samples,
                });
            }
        }
        self.budget.hold(held)?;
        Ok(out)
    }

    /// `expr` at instant `t` (ms).
    pub fn eval(&mut self, expr: &Expr, t: i64) -> Result<Value, QueryError> {
        self.budget.check()?;
        match expr {
            Expr::NumberLiteral(n) => Ok(Value::Scalar(n.val)),
            Expr::StringLiteral(s) => Ok(Value::String(s.val.clone())),
            Expr::Paren(p) => self.eval(&p.expr, t),
            Expr::Unary(u) => unique(match self.eval(&u.expr, t)? {
                Value::Scalar(v) => Ok(Value::Scalar(-v)),
                Value::Vector(samples) => Ok(Value::Vector(
                    samples
                        .into_iter()
                        .map(|s| Sample {
                            labels: s.labels.without_name(),
                            value: -s.value,
                        })
                        .collect(),
                )),
                other => Err(execution(format!(
                    "unary expression only allowed on expressions of type scalar or instant vector, got {:?}",
                    other.type_name()
                ))),
            }),
            Expr::VectorSelector(vs) => Ok(Value::Vector(self.instant(vs, t)?)),
            Expr::MatrixSelector(ms) => Ok(Value::Matrix(self.range(ms, t)?)),
            Expr::Call(call) => unique(self.call(call, t)),
            Expr::Aggregate(agg) => self.aggregate(agg, t),
            Expr::Binary(bin) => {
                let lhs = self.eval(&bin.lhs, t)?;
                let rhs = self.eval(&bin.rhs, t)?;
                unique(binary(&bin.op.to_string(), bin.modifier.as_ref(), lhs, rhs))
            }
            Expr::Subquery(sq) => Ok(Value::Matrix(self.subquery(sq, t)?)),
            Expr::Extension(_) => Err(unsupported("an extension expression")),
        }
    }

    /// `expr` as an instant vector at `t`.
    fn vector(&mut self, expr: &Expr, t: i64) -> Result<Vec<Sample>, QueryError> {
        match self.eval(expr, t)? {
            Value::Vector(v) => Ok(v),
            other => Err(execution(format!(
                "expected an instant vector, got {}",
                other.type_name()
            ))),
        }
    }

    /// `expr` as a scalar at `t`.
    fn scalar(&mut self, expr: &Expr, t: i64) -> Result<f64, QueryError> {
        match self.eval(expr, t)? {
            Value::Scalar(v) => Ok(v),
            other => Err(execution(format!(
                "expected a scalar, got {}",
                other.type_name()
            ))),
        }
    }

    /// A subquery at `t`: its expression at every multiple of its step in
    /// `[t - offset - range, t - offset]`, as range series. Each step is
    /// evaluated once however many outer steps see it.
    fn subquery(&mut self, sq: &SubqueryExpr, t: i64) -> Result<Vec<RangeSeries>, QueryError> {
        let step = sq
            .step
            .map_or(SUBQUERY_STEP_MS, |d| d.as_millis() as i64)
            .max(1);
        let range = sq.range.as_millis() as i64;
        let end = self.reference(&sq.at, &sq.offset, t);
        let key = sq as *const SubqueryExpr as usize;
        if !self.subqueries.contains_key(&key) {
            let first = self
                .reference(&sq.at, &sq.offset, self.start)
                .saturating_sub(range);
            let last = self.reference(&sq.at, &sq.offset, self.end);
            let mut inner =
                Evaluator::new(self.source, self.budget, first.min(last), first.max(last));
            inner.query_start = self.query_start;
            inner.query_end = self.query_end;
            self.subqueries.insert(
                key,
                Subquery {
                    evaluator: Box::new(inner),
                    steps: HashMap::new(),
                },
            );
        }
        let Some(sub) = self.subqueries.get_mut(&key) else {
            return Ok(Vec::new());
        };
        // The first multiple of the step at or after the window's start.
        let start = end.saturating_sub(range);
        let mut s = start.div_euclid(step) * step;
        if s < start {
            s += step;
        }
        let mut by_labels: HashMap<Labels, Vec<(i64, f64)>> = HashMap::new();
        while s <= end {
            if !sub.steps.contains_key(&s) {
                let samples = match sub.evaluator.eval(&sq.expr, s)? {
                    Value::Vector(v) => v,
                    Value::Scalar(v) => vec![Sample {
                        labels: Labels::default(),
                        value: v,
                    }],
                    other => {
                        return Err(execution(format!(
                            "subquery is only allowed on instant vector, got {}",
                            other.type_name()
                        )));
                    }
                };
                self.budget.hold(samples.len())?;
                sub.steps.insert(s, samples);
            }
            for sample in sub.steps.get(&s).map_or(&[][..], Vec::as_slice) {
                by_labels
                    .entry(sample.labels.clone())
                    .or_default()
                    .push((s, sample.value));
            }
            s += step;
        }
        Ok(in_label_order(by_labels))
    }

    fn aggregate(&mut self, agg: &AggregateExpr, t: i64) -> Result<Value, QueryError> {
        let op = agg.op.to_string();
        let param = match &agg.param {
            Some(p) if op == "count_values" => match unparen(p) {
                Expr::StringLiteral(s) => Param::Label(s.val.clone()),
                _ => return Err(execution("count_values: the label must be a string")),
            },
            Some(p) => Param::Number(self.scalar(p, t)?),
            None => Param::None,
        };
        let input = self.vector(&agg.expr, t)?;
        let cache = self
            .groups
            .entry(agg as *const AggregateExpr as usize)
            .or_default();
        Ok(Value::Vector(aggregate(
            &op,
            &param,
            input,
            &agg.modifier,
            cache,
        )?))
    }

    /// A function call: its arguments evaluated, then computed by
    /// `functions`.
    fn call(&mut self, call: &Call, t: i64) -> Result<Value, QueryError> {
        let name = call.func.name;
        let vector = |v: Vec<Sample>| Ok(Value::Vector(v));
        match name {
            "time" => Ok(Value::Scalar(t as f64 / 1000.0)),
            "pi" => Ok(Value::Scalar(std::f64::consts::PI)),
            "vector" => vector(vec![Sample {
                labels: Labels::default(),
                value: self.scalar(arg(call, 0)?, t)?,
            }]),
            "scalar" => {
                let v = self.vector(arg(call, 0)?, t)?;
                Ok(Value::Scalar(if v.len() == 1 {
                    v[0].value
                } else {
                    f64::NAN
                }))
            }
            _ if functions::is_range_function(name) => self.range_function(call, t),
            "round" => {
                let to = match call.args.args.get(1) {
                    Some(e) => self.scalar(e, t)?,
                    None => 1.0,
                };
                let inverse = 1.0 / to;
                self.map_vector(call, t, |v| (v * inverse + 0.5).floor() / inverse)
            }
            "clamp" => {
                let (min, max) = (
                    self.scalar(arg(call, 1)?, t)?,
                    self.scalar(arg(call, 2)?, t)?,
                );
                if max < min {
                    return vector(Vec::new());
                }
                self.map_vector(call, t, |v| go_min(go_max(v, min), max))
            }
            "clamp_min" => {
                let min = self.scalar(arg(call, 1)?, t)?;
                self.map_vector(call, t, |v| go_max(v, min))
            }
            "clamp_max" => {
                let max = self.scalar(arg(call, 1)?, t)?;
                self.map_vector(call, t, |v| go_min(v, max))
            }
            "timestamp" => {
                // Of a selector itself, each sample's own time; of
                // anything else (parentheses too), the evaluation time, as
                // Prometheus 2.42 special-cases only a bare selector.
                let input = match arg(call, 0)? {
                    Expr::VectorSelector(vs) => self.instant_samples(vs, t)?,
                    other => self.vector(other, t)?.into_iter().map(|s| (s, t)).collect(),
                };
                vector(
                    input
                        .into_iter()
                        .map(|(s, ts)| Sample {
                            labels: s.labels.without_name(),
                            value: ts as f64 / 1000.0,
                        })
                        .collect(),
                )
            }
            "sort" | "sort_desc" => {
                let mut v = self.vector(arg(call, 0)?, t)?;
                functions::sort_samples(name == "sort_desc", &mut v);
                vector(v)
            }
            "absent" => {
                let present = !self.vector(arg(call, 0)?, t)?.is_empty();
                vector(absent_sample(present, arg(call, 0)?))
            }
            "absent_over_time" => {
                let present = match unparen(arg(call, 0)?) {
                    Expr::MatrixSelector(ms) => !self.range(ms, t)?.is_empty(),
                    Expr::Subquery(sq) => !self.subquery(sq, t)?.is_empty(),
                    _ => return Err(execution("absent_over_time(): expected a range vector")),
                };
                vector(absent_sample(present, arg(call, 0)?))
            }
            "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month" | "hour"
            | "minute" | "month" | "year" => {
                let input = match call.args.args.first() {
                    Some(e) => self.vector(e, t)?,
                    None => vec![Sample {
                        labels: Labels::default(),
                        value: t as f64 / 1000.0,
                    }],
                };
                vector(
                    input
                        .into_iter()
                        .map(|s| Sample {
                            labels: s.labels.without_name(),
                            value: functions::date_part(name, s.value),
                        })
                        .collect(),
                )
            }
            "histogram_count" | "histogram_sum" | "histogram_fraction" => {
                // Functions of native histograms: no stored series holds
                // one (remote write's are not kept), and of float samples
                // Prometheus answers nothing. The arguments are still
                // evaluated, for their errors.
                for e in &call.args.args {
                    self.eval(e, t)?;
                }
                vector(Vec::new())
            }
            "histogram_quantile" => {
                let q = self.scalar(arg(call, 0)?, t)?;
                let v = self.vector(arg(call, 1)?, t)?;
                vector(functions::histogram_quantile(q, v))
            }
            "label_replace" => {
                let v = self.vector(arg(call, 0)?, t)?;
                vector(functions::label_replace(
                    v,
                    &string_arg(call, 1)?,
                    &string_arg(call, 2)?,
                    &string_arg(call, 3)?,
                    &string_arg(call, 4)?,
                )?)
            }
            "label_join" => {
                let v = self.vector(arg(call, 0)?, t)?;
                let sources = (3..call.args.args.len())
                    .map(|i| string_arg(call, i))
                    .collect::<Result<Vec<_>, _>>()?;
                vector(functions::label_join(
                    v,
                    &string_arg(call, 1)?,
                    &string_arg(call, 2)?,
                    &sources,
                )?)
            }
            _ if functions::math(name, 0.0).is_some() => {
                self.map_vector(call, t, |v| functions::math(name, v).unwrap_or(f64::NAN))
            }
            _ => Err(unsupported(format!("the function {name}()"))),
        }
    }

    /// An element-wise function of the first argument (the metric name
    /// goes).
    fn map_vector(
        &mut self,
        call: &Call,
        t: i64,
        f: impl Fn(f64) -> f64,
    ) -> Result<Value, QueryError> {
        let v = self.vector(arg(call, 0)?, t)?;
        Ok(Value::Vector(
            v.into_iter()
                .map(|s| Sample {
                    labels: s.labels.without_name(),
                    value: f(s.value),
                })
                .collect(),
        ))
    }

    /// A function of a range selector, series by series (the metric name
    /// goes, except from `last_over_time`).
    fn range_function(&mut self, call: &Call, t: i64) -> Result<Value, QueryError> {
        let name = call.func.name;
        // quantile_over_time(φ, m) has its scalar first.
        let (param, matrix_arg) = match name {
            "quantile_over_time" => (self.scalar(arg(call, 0)?, t)?, arg(call, 1)?),
            "predict_linear" => (self.scalar(arg(call, 1)?, t)?, arg(call, 0)?),
            _ => (f64::NAN, arg(call, 0)?),
        };
        // holt_winters, by the name the parser knows (see `parse`).
        let factors = if name == "double_exponential_smoothing" {
            Some((
                self.scalar(arg(call, 1)?, t)?,
                self.scalar(arg(call, 2)?, t)?,
            ))
        } else {
            None
        };
        let (series, range_start, range_end) = match unparen(matrix_arg) {
            Expr::MatrixSelector(ms) => {
                let end = self.reference(&ms.vs.at, &ms.vs.offset, t);
                (
                    self.range(ms, t)?,
                    end.saturating_sub(ms.range.as_millis() as i64),
                    end,
                )
            }
            Expr::Subquery(sq) => {
                let end = self.reference(&sq.at, &sq.offset, t);
                (
                    self.subquery(sq, t)?,
                    end.saturating_sub(sq.range.as_millis() as i64),
                    end,
                )
            }
            _ => {
                return Err(execution(format!("{name}(): expected a range vector")));
            }
        };
        let mut out = Vec::with_capacity(series.len());
        for RangeSeries { labels, samples } in series {
            let value = match factors {
                // Checked only for a series with samples, as Prometheus
                // calls the function only then.
                Some((sf, tf)) => {
                    if !(sf > 0.0 && sf < 1.0) {
                        return Err(execution(format!(
                            "invalid smoothing factor. Expected: 0 < sf < 1, got: {}",
                            functions::go_f(sf)
                        )));
                    }
                    if !(tf > 0.0 && tf < 1.0) {
                        return Err(execution(format!(
                            "invalid trend factor. Expected: 0 < tf < 1, got: {}",
                            functions::go_f(tf)
                        )));
                    }
                    functions::holt_winters(&samples, sf, tf)
                }
                None => functions::range_value(name, &samples, range_start, range_end, t, param),
            };
            if let Some(value) = value {
                out.push(Sample {
                    labels: if name == "last_over_time" {
                        labels
                    } else {
                        labels.without_name()
                    },
                    value,
                });
            }
        }
        Ok(Value::Vector(out))
    }
}

/// A range query's answer: each series' values at the steps it had one.
pub fn eval_range<S: PromSource>(
    source: &S,
    expr: &Expr,
    start_ms: i64,
    end_ms: i64,
    step_ms: i64,
    budget: &QueryBudget,
) -> Result<Vec<RangeSeries>, QueryError> {
    if step_ms <= 0 {
        return Err(execution(
            "zero or negative query resolution step widths are not accepted",
        ));
    }
    // Refused before anything is read, as Prometheus refuses it.
    let kind = match expr.value_type() {
        promql_parser::parser::value::ValueType::Matrix => Some("range vector"),
        promql_parser::parser::value::ValueType::String => Some("string"),
        _ => None,
    };
    if let Some(kind) = kind {
        return Err(QueryError::BadRequest {
            message: format!(
                "invalid expression type \"{kind}\" for range query, must be Scalar or instant Vector"
            ),
            details: None,
        });
    }
    let mut ev = Evaluator::new(source, budget, start_ms, end_ms);
    let mut by_labels: HashMap<Labels, Vec<(i64, f64)>> = HashMap::new();
    let mut t = start_ms;
    while t <= end_ms {
        match ev.eval(expr, t)? {
            Value::Scalar(v) => by_labels.entry(Labels::default()).or_default().push((t, v)),
            Value::Vector(samples) => {
                for s in samples {
                    by_labels.entry(s.labels).or_default().push((t, s.value));
                }
            }
            other => {
                return Err(QueryError::BadRequest {
                    message: format!(
                        "invalid expression type \"{}\" for range query, must be Scalar or instant Vector",
                        match other {
                            Value::Matrix(_) => "range vector",
                            _ => other.type_name(),
                        }
                    ),
                    details: None,
                });
            }
        }
        t += step_ms;
    }
    Ok(in_label_order(by_labels))
}

/// Values gathered step by step, as range series in label order.
fn in_label_order(by_labels: HashMap<Labels, Vec<(i64, f64)>>) -> Vec<RangeSeries> {
    let mut out: Vec<RangeSeries> = by_labels
        .into_iter()
        .map(|(labels, samples)| RangeSeries { labels, samples })
        .collect();
    out.sort_by(|x, y| x.labels.cmp(&y.labels));
    out
}

/// An instant query's answer at `t_ms`.
pub fn eval_instant<S: PromSource>(
    source: &S,
    expr: &Expr,
    t_ms: i64,
    budget: &QueryBudget,
) -> Result<Value, QueryError> {
    let mut ev = Evaluator::new(source, budget, t_ms, t_ms);
    let mut value = ev.eval(expr, t_ms)?;
    // In label order, unless the expression orders it (`sort`).
    let mut top = expr;
    while let Expr::Paren(p) = top {
        top = &p.expr;
    }
    let ordered = match top {
        Expr::Call(c) => matches!(c.func.name, "sort" | "sort_desc"),
        Expr::Aggregate(a) => matches!(a.op.to_string().as_str(), "topk" | "bottomk"),
        _ => false,
    };
    if let Value::Vector(samples) = &mut value
        && !ordered
    {
        samples.sort_by(|x, y| x.labels.cmp(&y.labels));
    }
    Ok(value)
}

/// The number of leading samples whose time passes `before` (a predicate
/// true up to some point, then false), found from `hint`, the answer for
/// the previous step: a few samples forward, then a binary search of the
/// rest; from scratch when the window moved back. Updates `hint`.
fn seek(samples: &[(i64, f64)], hint: &mut usize, before: impl Fn(i64) -> bool) -> usize {
    let mut i = (*hint).min(samples.len());
    if i > 0 && !before(samples[i - 1].0) {
        i = samples[..i].partition_point(|&(ts, _)| before(ts));
    } else {
        let mut walked = 0;
        while i < samples.len() && before(samples[i].0) {
            i += 1;
            walked += 1;
            if walked == 8 {
                i += samples[i..].partition_point(|&(ts, _)| before(ts));
                break;
            }
        }
    }
    *hint = i;
    i
}

fn unparen(mut e: &Expr) -> &Expr {
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    e
}

fn arg(call: &Call, i: usize) -> Result<&Expr, QueryError> {
    call.args
        .args
        .get(i)
        .map(|b| &**b)
        .ok_or_else(|| execution(format!("{}: missing argument {}", call.func.name, i + 1)))
}

fn string_arg(call: &Call, i: usize) -> Result<String, QueryError> {
    match unparen(arg(call, i)?) {
        Expr::StringLiteral(s) => Ok(s.val.clone()),
        _ => Err(execution(format!(
            "{}: argument {} must be a string",
            call.func.name,
            i + 1
        ))),
    }
}

/// `absent`'s answer: nothing when the argument had samples, else one
/// sample of 1 labelled as Prometheus 2.42 labels it
/// (`createLabelsForAbsentFunction`): from a selector's first `=` matcher
/// of each label, a label matched again or otherwise left out, and no
/// labels for anything but a bare selector.
fn absent_sample(present: bool, arg: &Expr) -> Vec<Sample> {
    if present {
        return Vec::new();
    }
    let selector = match arg {
        Expr::VectorSelector(vs) => Some(vs),
        Expr::MatrixSelector(ms) => Some(&ms.vs),
        _ => None,
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut has: Vec<&str> = Vec::new();
    for m in selector.map_or(&[][..], |vs| vs.matchers.matchers.as_slice()) {
        if m.name == super::value::METRIC_NAME {
            continue;
        }
        let equal = matches!(m.op, promql_parser::label::MatchOp::Equal);
        if equal && !has.contains(&m.name.as_str()) {
            pairs.push((m.name.clone(), m.value.clone()));
            has.push(&m.name);
        } else {
            pairs.retain(|(n, _)| *n != m.name);
        }
    }
    vec![Sample {
        labels: Labels::new(pairs),
        value: 1.0,
    }]
}

/// Prometheus refuses a vector with two series of one label set (after a
/// function or an operator dropped the metric name, say).
fn unique(value: Result<Value, QueryError>) -> Result<Value, QueryError> {
    if let Ok(Value::Vector(samples)) = &value {
        functions::check_unique(samples)?;
    }
    value
}

/// Go's `math.Max`: NaN if either is.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Go's `math.Min`: NaN if either is.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}
