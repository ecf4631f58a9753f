//! PromQL aggregation operators over an instant vector, grouped `by` or
//! `without` labels, with Prometheus 2.42's arithmetic (the running mean
//! of `avg`, Welford's `stddev`/`stdvar`, `topk` keeping the samples'
//! own labels).

use std::collections::HashMap;

use promql_parser::parser::LabelModifier;

use super::failure::unsupported;
use super::float_text::{go_v, label_text};
use super::functions::{quantile, valid_label_name};
use super::value::{Labels, METRIC_NAME, Sample};
use crate::error::QueryError;

/// One group's running state.
#[derive(Default)]
struct Group {
    labels: Labels,
    count: f64,
    value: f64,
    mean: f64,
    values: Vec<f64>,
    members: Vec<Sample>,
}

/// The labels that name a sample's group.
fn group_labels(labels: &Labels, modifier: &Option<LabelModifier>) -> Labels {
    match modifier {
        None => Labels::default(),
        Some(LabelModifier::Include(by)) => labels.project(&by.labels, true),
        Some(LabelModifier::Exclude(without)) => {
            let mut drop = without.labels.clone();
            drop.push(METRIC_NAME.to_string());
            labels.project(&drop, false)
        }
    }
}

/// `op` of `input`, grouped by `modifier` (`param`: `topk`'s k,
/// `quantile`'s φ, `count_values`' label).
/// Input label sets and their group's, kept by the evaluator across the
/// steps of a range query (the same series come back at every step).
pub(super) type GroupCache = HashMap<Labels, Labels>;

/// Entries a [`GroupCache`] keeps at most (past it, groups are computed
/// again: the cache only saves work).
const GROUP_CACHE_MAX: usize = 1 << 20;

pub(super) fn aggregate(
    op: &str,
    param: &Param,
    input: Vec<Sample>,
    modifier: &Option<LabelModifier>,
    cache: &mut GroupCache,
) -> Result<Vec<Sample>, QueryError> {
    if let ("topk" | "bottomk", &Param::Number(k)) = (op, param)
        // Go's convertibleToInt64 (NaN fails it too).
        && !(-9.223_372_036_854_776e18..=9.223_372_036_854_776e18).contains(&k)
    {
        return Err(QueryError::Execution(format!(
            "Scalar value {} overflows int64",
            go_v(k)
        )));
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<Labels, usize> = HashMap::new();
    for s in input {
        let mut key = match cache.get(&s.labels) {
            Some(group) => group.clone(),
            None => {
                let group = group_labels(&s.labels, modifier);
                if cache.len() < GROUP_CACHE_MAX {
                    cache.insert(s.labels.clone(), group.clone());
                }
                group
            }
        };
        if let Param::Label(label) = param
            && op == "count_values"
        {
            if !valid_label_name(label) {
                return Err(QueryError::Execution(format!(
                    "invalid label name {label:?}"
                )));
            }
            key = key.with(label, &label_text(s.value));
        }
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push(Group {
                labels: key,
                ..Group::default()
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        let v = s.value;
        let first = g.count == 0.0;
        g.count += 1.0;
        match op {
            "sum" => g.value += v,
            "avg" => {
                if first {
                    g.mean = v;
                } else if g.mean.is_infinite()
                    && (v.is_finite() || (v.is_infinite() && (g.mean > 0.0) == (v > 0.0)))
                {
                    // An infinite mean stays so unless an opposite
                    // infinity or a NaN comes.
                } else {
                    g.mean += v / g.count - g.mean / g.count;
                }
            }
            "min" => {
                if first || v < g.value || g.value.is_nan() {
                    g.value = v;
                }
            }
            "max" => {
                if first || v > g.value || g.value.is_nan() {
                    g.value = v;
                }
            }
            "stddev" | "stdvar" => {
                let delta = v - g.mean;
                g.mean += delta / g.count;
                g.value += delta * (v - g.mean);
            }
            "count" | "group" | "count_values" => {}
            "quantile" => g.values.push(v),
            "topk" | "bottomk" => g.members.push(s),
            other => return Err(unsupported(format!("the aggregation {other}"))),
        }
    }
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        match op {
            "topk" | "bottomk" => {
                let &Param::Number(k) = param else {
                    return Err(QueryError::Execution(format!("{op}: k must be a number")));
                };
                if k < 1.0 || k.is_nan() {
                    continue;
                }
                let mut members = g.members;
                // NaN last for both, as Prometheus' heaps order them.
                members.sort_by(|x, y| {
                    let (a, b) = (x.value, y.value);
                    match (a.is_nan(), b.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ if op == "topk" => b.total_cmp(&a),
                        _ => a.total_cmp(&b),
                    }
                });
                let keep = if k >= members.len() as f64 {
                    members.len()
                } else {
                    k as usize
                };
                out.extend(members.into_iter().take(keep));
            }
            _ => {
                let value = match op {
                    "sum" | "min" | "max" => g.value,
                    "avg" => g.mean,
                    "count" | "count_values" => g.count,
                    "group" => 1.0,
                    "stdvar" => g.value / g.count,
                    "stddev" => (g.value / g.count).sqrt(),
                    "quantile" => {
                        let &Param::Number(q) = param else {
                            return Err(QueryError::Execution(
                                "quantile: φ must be a number".into(),
                            ));
                        };
                        let mut values = g.values;
                        quantile(q, &mut values)
                    }
                    _ => f64::NAN,
                };
                out.push(Sample {
                    labels: g.labels,
                    value,
                });
            }
        }
    }
    Ok(out)
}

/// An aggregation's parameter.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Param {
    None,
    Number(f64),
    Label(String),
}
