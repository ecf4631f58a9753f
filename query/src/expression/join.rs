//! The joins of OpenTSDB's `IntersectionIterator` and `UnionIterator`:
//! which series of several sets (one set per variable) are computed
//! together.
//!
//! A series joins on its tag pairs (only the query's filter keys with
//! `useQueryTags`; a series without tags has the empty key whatever the
//! other options) followed, with `includeAggTags`, by its aggregated tag
//! keys. Rows come out in key order. Within one set a repeated key keeps
//! the last series (OpenTSDB overwrites its map entry).
//!
//! OpenTSDB orders keys by the UID bytes of tag keys and values; the
//! results here carry names only, so keys order by names (element by
//! element), which is the same order whenever UIDs were assigned in name
//! order.

use std::collections::{BTreeMap, BTreeSet};

use crate::expression::error::ExpressionError;
use crate::expression::series::SeriesMeta;

/// `union` or `intersection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetOperator {
    Union,
    Intersection,
}

impl SetOperator {
    /// OpenTSDB's `SetOperator.fromString` (case-insensitive).
    pub(crate) fn parse(name: &str) -> Result<SetOperator, ExpressionError> {
        if name.eq_ignore_ascii_case("union") {
            Ok(SetOperator::Union)
        } else if name.eq_ignore_ascii_case("intersection") {
            Ok(SetOperator::Intersection)
        } else {
            Err(ExpressionError::UnknownSetOperator(name.to_string()))
        }
    }

    /// The name OpenTSDB writes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SetOperator::Union => "union",
            SetOperator::Intersection => "intersection",
        }
    }
}

/// How series are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyOptions {
    /// Only tags whose keys the set's query filters on.
    pub use_query_tags: bool,
    /// Append the aggregated tag keys.
    pub include_agg_tags: bool,
}

/// The flattened key a series joins on: `k1, v1, k2, v2, …, agg1, agg2, …`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct JoinKey(Vec<String>);

impl JoinKey {
    /// The key of `meta` in a set whose query filters on `query_tagks`.
    pub(crate) fn of(
        meta: &SeriesMeta,
        query_tagks: &BTreeSet<String>,
        options: KeyOptions,
    ) -> Self {
        if meta.tags.is_empty() {
            return JoinKey(Vec::new());
        }
        let mut parts = Vec::new();
        for (k, v) in &meta.tags {
            if options.use_query_tags && !query_tagks.contains(k) {
                continue;
            }
            parts.push(k.clone());
            parts.push(v.clone());
        }
        if options.include_agg_tags {
            parts.extend(meta.aggregated_tags.iter().cloned());
        }
        JoinKey(parts)
    }
}

/// One joined row: for each set, the index of its member (`None`: the set
/// has none, a union only).
pub(crate) type Row = Vec<Option<usize>>;

/// The joined rows, or that an intersection of non-empty sets is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Joined {
    Rows(Vec<Row>),
    NoIntersection,
}

/// Joins `sets` (each the keys of one set's series, in series order).
pub(crate) fn join(sets: &[Vec<JoinKey>], operator: SetOperator) -> Joined {
    let mut by_key: BTreeMap<&JoinKey, Row> = BTreeMap::new();
    for (s, keys) in sets.iter().enumerate() {
        for (i, key) in keys.iter().enumerate() {
            by_key.entry(key).or_insert_with(|| vec![None; sets.len()])[s] = Some(i);
        }
    }
    let any_series = sets.iter().any(|keys| !keys.is_empty());
    let rows: Vec<Row> = match operator {
        SetOperator::Union => by_key.into_values().collect(),
        SetOperator::Intersection => by_key
            .into_values()
            .filter(|row| row.iter().all(Option::is_some))
            .collect(),
    };
    if operator == SetOperator::Intersection && rows.is_empty() && any_series && sets.len() > 1 {
        return Joined::NoIntersection;
    }
    Joined::Rows(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(tags: &[(&str, &str)], agg: &[&str]) -> SeriesMeta {
        SeriesMeta {
            metrics: BTreeSet::new(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            aggregated_tags: agg.iter().map(|s| s.to_string()).collect(),
        }
    }

    const ALL: KeyOptions = KeyOptions {
        use_query_tags: false,
        include_agg_tags: true,
    };

    fn keys(metas: &[SeriesMeta], options: KeyOptions) -> Vec<JoinKey> {
        let none = BTreeSet::new();
        metas
            .iter()
            .map(|m| JoinKey::of(m, &none, options))
            .collect()
    }

    #[test]
    fn intersection_and_union_with_a_missing_host() {
        let a = keys(
            &[
                meta(&[("host", "web01")], &[]),
                meta(&[("host", "web02")], &[]),
                meta(&[("host", "web03")], &[]),
            ],
            ALL,
        );
        let b = keys(
            &[
                meta(&[("host", "web02")], &[]),
                meta(&[("host", "web01")], &[]),
            ],
            ALL,
        );
        assert_eq!(
            join(&[a.clone(), b.clone()], SetOperator::Intersection),
            Joined::Rows(vec![vec![Some(0), Some(1)], vec![Some(1), Some(0)]])
        );
        assert_eq!(
            join(&[a, b], SetOperator::Union),
            Joined::Rows(vec![
                vec![Some(0), Some(1)],
                vec![Some(1), Some(0)],
                vec![Some(2), None]
            ])
        );
    }

    #[test]
    fn empty_intersections() {
        let a = keys(&[meta(&[("host", "a")], &[])], ALL);
        let b = keys(&[meta(&[("host", "b")], &[])], ALL);
        assert_eq!(
            join(&[a.clone(), b], SetOperator::Intersection),
            Joined::NoIntersection
        );
        // an empty set intersects to nothing
        assert_eq!(
            join(&[a.clone(), vec![]], SetOperator::Intersection),
            Joined::NoIntersection
        );
        // all sets empty: no rows, no error
        assert_eq!(
            join(&[vec![], vec![]], SetOperator::Intersection),
            Joined::Rows(vec![])
        );
        // one set: every series
        assert_eq!(
            join(&[a], SetOperator::Intersection),
            Joined::Rows(vec![vec![Some(0)]])
        );
    }

    #[test]
    fn key_options() {
        let m = meta(&[("host", "web01"), ("dc", "lga")], &["cpu"]);
        let none = BTreeSet::new();
        let host = BTreeSet::from(["host".to_string()]);
        assert_eq!(
            JoinKey::of(&m, &none, ALL).0,
            ["dc", "lga", "host", "web01", "cpu"]
        );
        let q = KeyOptions {
            use_query_tags: true,
            include_agg_tags: false,
        };
        assert_eq!(JoinKey::of(&m, &host, q).0, ["host", "web01"]);
        assert!(JoinKey::of(&m, &none, q).0.is_empty());
        // no tags: the empty key, aggregated tags or not
        assert!(JoinKey::of(&meta(&[], &["host"]), &none, ALL).0.is_empty());
        // the last series of a set wins a repeated key
        let dup = keys(&[meta(&[], &[]), meta(&[], &[])], ALL);
        assert_eq!(
            join(&[dup], SetOperator::Union),
            Joined::Rows(vec![vec![Some(1)]])
        );
        assert_eq!(SetOperator::parse("UNION"), Ok(SetOperator::Union));
        assert_eq!(
            SetOperator::parse("outer"),
            Err(ExpressionError::UnknownSetOperator("outer".into()))
        );
    }
}
