//! PromQL binary operators: arithmetic, comparisons (filters, or 0/1 with
//! `bool`) and the set operators, between scalars and instant vectors,
//! with Prometheus' vector matching (`on`/`ignoring`, one-to-one,
//! `group_left`/`group_right`, and its errors).

use std::collections::{HashMap, HashSet};

use promql_parser::parser::{BinModifier, LabelModifier, VectorMatchCardinality};

use super::failure::{execution, unsupported};
use super::value::{Labels, METRIC_NAME, Sample, Value};
use crate::error::QueryError;

/// `lhs op rhs`: the value, and whether a comparison holds.
fn apply(op: &str, lhs: f64, rhs: f64) -> Result<(f64, bool), QueryError> {
    Ok(match op {
        "+" => (lhs + rhs, true),
        "-" => (lhs - rhs, true),
        "*" => (lhs * rhs, true),
        "/" => (lhs / rhs, true),
        "%" => (lhs % rhs, true),
        "^" => (lhs.powf(rhs), true),
        "atan2" => (lhs.atan2(rhs), true),
        "==" => (lhs, lhs == rhs),
        "!=" => (lhs, lhs != rhs),
        ">" => (lhs, lhs > rhs),
        "<" => (lhs, lhs < rhs),
        ">=" => (lhs, lhs >= rhs),
        "<=" => (lhs, lhs <= rhs),
        other => return Err(unsupported(format!("the operator {other}"))),
    })
}

fn is_comparison(op: &str) -> bool {
    matches!(op, "==" | "!=" | ">" | "<" | ">=" | "<=")
}

/// Whether the result loses the metric name: the arithmetic operators do,
/// comparisons (without `bool`) and `atan2` do not (Prometheus 2.42's
/// `shouldDropMetricName`).
fn drops_name(op: &str) -> bool {
    matches!(op, "+" | "-" | "*" | "/" | "%" | "^")
}

/// The labels two samples are matched on.
fn signature(labels: &Labels, matching: Option<&LabelModifier>) -> Labels {
    match matching {
        Some(LabelModifier::Include(on)) => labels.project(&on.labels, true),
        Some(LabelModifier::Exclude(ignoring)) => {
            let mut drop = ignoring.labels.clone();
            drop.push(METRIC_NAME.to_string());
            labels.project(&drop, false)
        }
        None => labels.without_name(),
    }
}

/// `lhs op rhs` under `modifier` (`bool`, matching, grouping).
pub(super) fn binary(
    op: &str,
    modifier: Option<&BinModifier>,
    lhs: Value,
    rhs: Value,
) -> Result<Value, QueryError> {
    let return_bool = modifier.is_some_and(|m| m.return_bool);
    if modifier.is_some_and(|m| m.fill_values.lhs.is_some() || m.fill_values.rhs.is_some()) {
        return Err(unsupported("fill() in vector matching"));
    }
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => {
            let (v, keep) = apply(op, l, r)?;
            Ok(Value::Scalar(if is_comparison(op) {
                if keep { 1.0 } else { 0.0 }
            } else {
                v
            }))
        }
        (Value::Vector(v), Value::Scalar(s)) => vector_scalar(op, v, s, false, return_bool),
        (Value::Scalar(s), Value::Vector(v)) => vector_scalar(op, v, s, true, return_bool),
        (Value::Vector(l), Value::Vector(r)) => {
            let matching = modifier.and_then(|m| m.matching.as_ref());
            match op {
                "and" | "or" | "unless" => Ok(Value::Vector(set_op(op, l, r, matching))),
                _ => {
                    let card = modifier.map_or(&VectorMatchCardinality::OneToOne, |m| &m.card);
                    vector_vector(op, l, r, matching, card, return_bool).map(Value::Vector)
                }
            }
        }
        (l, r) => Err(execution(format!(
            "binary expression must contain only scalar and instant vector types, got {} and {}",
            l.type_name(),
            r.type_name()
        ))),
    }
}

fn vector_scalar(
    op: &str,
    v: Vec<Sample>,
    s: f64,
    scalar_first: bool,
    return_bool: bool,
) -> Result<Value, QueryError> {
    let comparison = is_comparison(op);
    let mut out = Vec::with_capacity(v.len());
    for sample in v {
        let (l, r) = if scalar_first {
            (s, sample.value)
        } else {
            (sample.value, s)
        };
        let (mut value, keep) = apply(op, l, r)?;
        // A comparison keeps the vector's value, whichever side it is on.
        if comparison && scalar_first {
            value = sample.value;
        }
        if return_bool {
            value = if keep { 1.0 } else { 0.0 };
        } else if !keep {
            continue;
        }
        let labels = if drops_name(op) || return_bool {
            sample.labels.without_name()
        } else {
            sample.labels
        };
        out.push(Sample { labels, value });
    }
    Ok(Value::Vector(out))
}

fn set_op(
    op: &str,
    l: Vec<Sample>,
    r: Vec<Sample>,
    matching: Option<&LabelModifier>,
) -> Vec<Sample> {
    let right: HashSet<Labels> = r.iter().map(|s| signature(&s.labels, matching)).collect();
    match op {
        "and" => l
            .into_iter()
            .filter(|s| right.contains(&signature(&s.labels, matching)))
            .collect(),
        "unless" => l
            .into_iter()
            .filter(|s| !right.contains(&signature(&s.labels, matching)))
            .collect(),
        _ => {
            let left: HashSet<Labels> = l.iter().map(|s| signature(&s.labels, matching)).collect();
            let mut out = l;
            out.extend(
                r.into_iter()
                    .filter(|s| !left.contains(&signature(&s.labels, matching))),
            );
            out
        }
    }
}

fn vector_vector(
    op: &str,
    l: Vec<Sample>,
    r: Vec<Sample>,
    matching: Option<&LabelModifier>,
    card: &VectorMatchCardinality,
    return_bool: bool,
) -> Result<Vec<Sample>, QueryError> {
    // Nothing to match, nothing to refuse (Prometheus' shortcut).
    if l.is_empty() || r.is_empty() {
        return Ok(Vec::new());
    }
    // The "many" side goes left: group_right swaps the sides.
    let (many, one, swapped) = match card {
        VectorMatchCardinality::OneToMany(_) => (r, l, true),
        _ => (l, r, false),
    };
    let include: &[String] = match card {
        VectorMatchCardinality::ManyToOne(x) | VectorMatchCardinality::OneToMany(x) => &x.labels,
        _ => &[],
    };
    let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
    let mut right: HashMap<Labels, Sample> = HashMap::with_capacity(one.len());
    for s in one {
        let sig = signature(&s.labels, matching);
        if right.contains_key(&sig) {
            return Err(execution(format!(
                "found duplicate series for the match group {} on the {} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                show(&sig),
                if swapped { "left" } else { "right" }
            )));
        }
        right.insert(sig, s);
    }
    let mut out = Vec::new();
    let mut inserted: HashSet<Labels> = HashSet::new();
    let mut matched_one_to_one: HashSet<Labels> = HashSet::new();
    for s in many {
        let sig = signature(&s.labels, matching);
        let Some(other) = right.get(&sig) else {
            continue;
        };
        let (vl, vr) = if swapped {
            (other.value, s.value)
        } else {
            (s.value, other.value)
        };
        let (mut value, keep) = apply(op, vl, vr)?;
        if return_bool {
            value = if keep { 1.0 } else { 0.0 };
        } else if !keep {
            continue;
        }
        if one_to_one && !matched_one_to_one.insert(sig.clone()) {
            return Err(execution(
                "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)",
            ));
        }
        let mut labels = s.labels.clone();
        if drops_name(op) || return_bool {
            labels = labels.without_name();
        }
        if one_to_one {
            labels = match matching {
                Some(LabelModifier::Include(on)) => labels.project(&on.labels, true),
                Some(LabelModifier::Exclude(ignoring)) => labels.project(&ignoring.labels, false),
                None => labels,
            };
        }
        for name in include {
            labels = labels.with(name, other.labels.get(name).unwrap_or(""));
        }
        if !one_to_one && !inserted.insert(labels.clone()) {
            return Err(execution(
                "multiple matches for labels: grouping labels must ensure unique matches",
            ));
        }
        out.push(Sample { labels, value });
    }
    Ok(out)
}

fn show(labels: &Labels) -> String {
    let inner: Vec<String> = labels.iter().map(|(n, v)| format!("{n}=\"{v}\"")).collect();
    format!("{{{}}}", inner.join(", "))
}
