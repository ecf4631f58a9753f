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

/// The key a series joins on: its tag pairs (in key order), then its
/// aggregated tag keys. The two parts stay apart so that tags `{a=b}` with
/// aggregated `[c, d]` never equal tags `{a=b, c=d}` (a flattened list of
/// strings would make them the same key). The strings are borrowed from
/// the series' meta: keying copies no names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct JoinKey<'a> {
    tags: Vec<(&'a str, &'a str)>,
    aggregated: Vec<&'a str>,
}

impl<'a> JoinKey<'a> {
    /// The key of `meta` in a set whose query filters on `query_tagks`.
    pub(crate) fn of(
        meta: &'a SeriesMeta,
        query_tagks: &BTreeSet<String>,
        options: KeyOptions,
    ) -> Self {
        let mut key = JoinKey {
            tags: Vec::new(),
            aggregated: Vec::new(),
        };
        if meta.tags.is_empty() {
            return key;
        }
        key.tags = meta
            .tags
            .iter()
            .filter(|(k, _)| !options.use_query_tags || query_tagks.contains(*k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if options.include_agg_tags {
            key.aggregated = meta.aggregated_tags.iter().map(String::as_str).collect();
        }
        key
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
pub(crate) fn join(sets: &[Vec<JoinKey<'_>>], operator: SetOperator) -> Joined {
    let mut by_key: BTreeMap<&JoinKey<'_>, Row> = BTreeMap::new();
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
    // With every set empty OpenTSDB's IntersectionIterator returns before
    // computing the intersection (`max_series < 1`): no rows, no error.
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

    fn keys(metas: &[SeriesMeta], options: KeyOptions) -> Vec<JoinKey<'_>> {
        let none = BTreeSet::new();
        metas
            .iter()
            .map(|m| JoinKey::of(m, &none, options))
            .collect()
    }

    #[test]
    fn intersection_and_union_with_a_missing_host() {
        let a = [
            meta(&[("host", "web01")], &[]),
            meta(&[("host", "web02")], &[]),
            meta(&[("host", "web03")], &[]),
        ];
        let b = [
            meta(&[("host", "web02")], &[]),
            meta(&[("host", "web01")], &[]),
        ];
        let (a, b) = (keys(&a, ALL), keys(&b, ALL));
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
        let (a, b) = ([meta(&[("host", "a")], &[])], [meta(&[("host", "b")], &[])]);
        let (a, b) = (keys(&a, ALL), keys(&b, ALL));
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
        let key = JoinKey::of(&m, &none, ALL);
        assert_eq!(key.tags, [("dc", "lga"), ("host", "web01")]);
        assert_eq!(key.aggregated, ["cpu"]);
        let q = KeyOptions {
            use_query_tags: true,
            include_agg_tags: false,
        };
        assert_eq!(JoinKey::of(&m, &host, q).tags, [("host", "web01")]);
        assert!(JoinKey::of(&m, &none, q).tags.is_empty());
        // no tags: the empty key, aggregated tags or not
        let bare = meta(&[], &["host"]);
        let key = JoinKey::of(&bare, &none, ALL);
        assert!(key.tags.is_empty() && key.aggregated.is_empty());
        // the last series of a set wins a repeated key
        let dup = [meta(&[], &[]), meta(&[], &[])];
        let dup = keys(&dup, ALL);
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

    #[test]
    fn aggregated_keys_never_pass_for_tags() {
        // {a=b} aggregated over [c, d] and {a=b, c=d}: flattened, both were
        // "a b c d"; structured, they differ and do not join.
        let aggregated = [meta(&[("a", "b")], &["c", "d"])];
        let tagged = [meta(&[("a", "b"), ("c", "d")], &[])];
        assert_ne!(keys(&aggregated, ALL)[0], keys(&tagged, ALL)[0]);
        assert_eq!(
            join(
                &[keys(&aggregated, ALL), keys(&tagged, ALL)],
                SetOperator::Intersection
            ),
            Joined::NoIntersection
        );
    }
}
