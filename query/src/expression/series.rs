//! [`SeriesMeta`]: what a series inside an expression is known by — the
//! metrics it was computed from, the tags its inputs share and the tag
//! keys aggregated away — and how combining series combines it.
//!
//! OpenTSDB keeps the tags of whichever input it happens to visit first
//! (a hash map's order; an empty set when that input is a union's filler)
//! and marks the intersection as a TODO; here the tags are the pairs every
//! contributing input shares, which is the same whenever the join key
//! covers all tags (the default).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::exec::QueryResult;

/// Names and tags of one series inside an expression.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SeriesMeta {
    /// Metric names the series was computed from.
    pub metrics: BTreeSet<String>,
    /// Tag pairs every input shares.
    pub tags: BTreeMap<String, String>,
    /// Tag keys aggregated away in any input.
    pub aggregated_tags: BTreeSet<String>,
}

impl SeriesMeta {
    /// The meta of one sub query result.
    pub(crate) fn of_result(result: &QueryResult) -> SeriesMeta {
        SeriesMeta {
            metrics: BTreeSet::from([result.metric.clone()]),
            tags: result.tags.clone(),
            aggregated_tags: result.aggregate_tags.iter().cloned().collect(),
        }
    }

    /// The meta of a series computed from `inputs`: metrics and aggregated
    /// tags united, tags intersected.
    pub(crate) fn combine<'a>(inputs: impl IntoIterator<Item = &'a SeriesMeta>) -> SeriesMeta {
        let mut out: Option<SeriesMeta> = None;
        for input in inputs {
            match &mut out {
                None => out = Some(input.clone()),
                Some(acc) => {
                    acc.metrics.extend(input.metrics.iter().cloned());
                    acc.aggregated_tags
                        .extend(input.aggregated_tags.iter().cloned());
                    acc.tags.retain(|k, v| input.tags.get(k) == Some(v));
                }
            }
        }
        out.unwrap_or_default()
    }

    /// [`SeriesMeta::combine`] for shared metas: a single input is shared,
    /// not copied, so an expression over one set (or a union row with one
    /// member) adds no copy of its inputs' names.
    pub(crate) fn combine_shared(inputs: &[&Arc<SeriesMeta>]) -> Arc<SeriesMeta> {
        match inputs {
            [single] => Arc::clone(single),
            _ => Arc::new(SeriesMeta::combine(
                inputs.iter().map(|m| -> &SeriesMeta { m }),
            )),
        }
    }

    /// Values (of [`crate::budget::BYTES_PER_VALUE`] bytes) a copy of this
    /// meta holds: one per name, two per tag pair, one for the record.
    pub(crate) fn held_values(&self) -> usize {
        1 + self.metrics.len() + 2 * self.tags.len() + self.aggregated_tags.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(metric: &str, tags: &[(&str, &str)], agg: &[&str]) -> SeriesMeta {
        SeriesMeta {
            metrics: BTreeSet::from([metric.to_string()]),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            aggregated_tags: agg.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn combining() {
        let a = meta("a", &[("host", "web01"), ("dc", "lga")], &["rack"]);
        let b = meta("b", &[("host", "web01"), ("dc", "sjc")], &["cpu"]);
        let c = SeriesMeta::combine([&a, &b]);
        assert_eq!(c.metrics.iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(c.tags.len(), 1);
        assert_eq!(c.tags["host"], "web01");
        assert_eq!(c.aggregated_tags.len(), 2);
        assert_eq!(SeriesMeta::combine([]), SeriesMeta::default());
    }

    #[test]
    fn a_single_input_is_shared_not_copied() {
        let a = Arc::new(meta("a", &[("host", "web01")], &[]));
        let b = Arc::new(meta("b", &[("host", "web01")], &[]));
        assert!(Arc::ptr_eq(&SeriesMeta::combine_shared(&[&a]), &a));
        let both = SeriesMeta::combine_shared(&[&a, &b]);
        assert_eq!(both.metrics.len(), 2);
        assert_eq!(both.held_values(), 1 + 2 + 2);
    }
}
