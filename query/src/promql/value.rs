//! PromQL values: label sets, samples, instant vectors, range series, and
//! what one evaluation step yields.

use std::sync::Arc;

/// The metric-name label.
pub const METRIC_NAME: &str = "__name__";

/// A label set, sorted by name, names unique (Prometheus' `labels.Labels`),
/// shared, with its hash computed once: a range query groups and keys the
/// same sets at every step, and hashing the names and values each time
/// was most of its work.
#[derive(Debug, Clone)]
pub struct Labels(Arc<LabelSet>);

#[derive(Debug)]
struct LabelSet {
    hash: u64,
    pairs: Vec<(String, String)>,
}

impl Labels {
    /// From pairs in any order; a later pair of the same name wins, an
    /// empty value is no label (Prometheus' rule).
    pub fn new(mut pairs: Vec<(String, String)>) -> Self {
        pairs.reverse();
        pairs.sort_by(|x, y| x.0.cmp(&y.0));
        pairs.dedup_by(|later, earlier| later.0 == earlier.0);
        pairs.retain(|(_, v)| !v.is_empty());
        Self::sorted(pairs)
    }

    /// From pairs already sorted, unique and without empty values.
    fn sorted(pairs: Vec<(String, String)>) -> Self {
        use std::hash::BuildHasher;
        // One random key for the process: equal sets hash equal, and
        // label values (which writers choose) cannot be made to collide.
        static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let hash = KEY
            .get_or_init(std::collections::hash_map::RandomState::new)
            .hash_one(&pairs);
        Labels(Arc::new(LabelSet { hash, pairs }))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        let pairs = &self.0.pairs;
        pairs
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| pairs[i].1.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The labels without the metric name.
    pub fn without_name(&self) -> Self {
        if self.get(METRIC_NAME).is_none() {
            return self.clone();
        }
        Self::sorted(
            self.0
                .pairs
                .iter()
                .filter(|(n, _)| n != METRIC_NAME)
                .cloned()
                .collect(),
        )
    }

    /// Only the labels named (`keep`) or all but those (`!keep`).
    pub fn project(&self, names: &[String], keep: bool) -> Self {
        Self::sorted(
            self.0
                .pairs
                .iter()
                .filter(|(n, _)| names.iter().any(|x| x == n) == keep)
                .cloned()
                .collect(),
        )
    }

    /// The labels with `name` set to `value` (removed when empty).
    pub fn with(&self, name: &str, value: &str) -> Self {
        let mut pairs: Vec<(String, String)> = self
            .0
            .pairs
            .iter()
            .filter(|(n, _)| n != name)
            .cloned()
            .collect();
        pairs.push((name.to_string(), value.to_string()));
        Labels::new(pairs)
    }
}

impl Default for Labels {
    fn default() -> Self {
        Self::sorted(Vec::new())
    }
}

impl PartialEq for Labels {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && self.0.pairs == other.0.pairs)
    }
}

impl Eq for Labels {}

impl std::hash::Hash for Labels {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl PartialOrd for Labels {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Labels {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.pairs.cmp(&other.0.pairs)
    }
}

/// One value of an instant vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Labels,
    pub value: f64,
}

/// A series with its samples in time order (ms, value): what a selector
/// reads, and a matrix's element.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    pub labels: Labels,
    pub samples: Vec<(i64, f64)>,
}

/// What an expression gives at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(f64),
    String(String),
    Vector(Vec<Sample>),
    /// A range vector (a matrix selector or subquery at one instant).
    Matrix(Vec<RangeSeries>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Scalar(_) => "scalar",
            Value::String(_) => "string",
            Value::Vector(_) => "vector",
            Value::Matrix(_) => "matrix",
        }
    }
}

/// Prometheus' staleness marker: a NaN with these bits ends a series.
pub use hourglass_ingest::prom::{STALE_NAN_BITS, is_stale_marker as is_stale};

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Labels {
        Labels::new(
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn labels_are_sorted_unique_and_never_empty() {
        let x = l(&[("b", "2"), ("a", "1"), ("b", "3"), ("c", "")]);
        assert_eq!(x.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "3")]);
        assert_eq!(x.get("b"), Some("3"));
        assert_eq!(x.get("c"), None);
        let named = l(&[("__name__", "up"), ("job", "x")]);
        assert_eq!(named.without_name(), l(&[("job", "x")]));
        assert_eq!(named.project(&["job".into()], true), l(&[("job", "x")]));
        assert_eq!(
            named.project(&["job".into()], false),
            l(&[("__name__", "up")])
        );
        assert_eq!(named.with("job", ""), l(&[("__name__", "up")]));
    }
}
