//! OpenTSDB 2.4's writes of rollups computed elsewhere: the telnet `rollup` command
//! (`rollup <spec> <metric> <timestamp> <value> <tags…>`) and the `/api/rollup` body (the
//! `/api/put` body plus `interval`, `aggregator` and `groupByAggregator`), checked as far as
//! that needs no configuration ([`RollupPoint::check`]). Which intervals exist and where a value
//! is stored is the engine's.
//!
//! A spec is `<interval>-<agg>` (a rollup of raw data, e.g. `1h-SUM`), `<groupby agg>` (a raw
//! pre-aggregate, e.g. `SUM`) or `<interval>-<agg>:<groupby agg>` (a rolled-up
//! pre-aggregate), split as OpenTSDB's `RollupDataPointRpc` splits it. A pre-aggregate's series
//! carries the tag `_aggregate=<GROUPBY AGG>` (OpenTSDB's `tsd.rollups.agg_tag_key` default);
//! a rollup of raw data has no such tag (`tsd.rollups.tag_raw` off, OpenTSDB's default).

use std::borrow::Cow;

use crate::java::{java_bytes, java_map};
use crate::limits::Limits;
use crate::point::{Point, PutError};
use crate::validate::check_series;

/// The tag key naming a pre-aggregate's group-by aggregator.
pub const AGG_TAG_KEY: &str = "_aggregate";

/// What a rollup value is: the interval and aggregator it was rolled up with, and the
/// aggregator a pre-aggregate was grouped with, as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RollupSpec {
    /// `1h`, `1d`, …; `None` for a raw pre-aggregate.
    pub interval: Option<String>,
    /// The rollup (temporal) aggregator, e.g. `SUM`.
    pub aggregator: Option<String>,
    /// The group-by (spatial) aggregator of a pre-aggregate.
    pub group_by: Option<String>,
}

impl RollupSpec {
    /// The spec word of a telnet `rollup` line, split as OpenTSDB splits it: a `-` in the part
    /// before the first `:` separates interval and aggregator; a part after the `:` is the
    /// group-by aggregator; a word with neither is a group-by aggregator, which then is the
    /// rollup aggregator too.
    pub fn parse(word: &str) -> RollupSpec {
        // Java's `split(":")` drops trailing empty parts: `SUM:` is `SUM`.
        let mut parts: Vec<&str> = word.split(':').collect();
        while parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
        let head = parts.first().copied().unwrap_or("");
        let tail = parts.get(1).copied();
        let (interval, mut aggregator) = match head.split_once('-') {
            Some((interval, agg)) => (Some(interval.to_owned()), Some(agg.to_owned())),
            None => (None, None),
        };
        let group_by = match tail {
            Some(g) => Some(g.to_owned()),
            None if interval.is_none() => Some(head.to_owned()),
            None => None,
        };
        if aggregator.is_none() {
            aggregator.clone_from(&group_by);
        }
        RollupSpec {
            interval,
            aggregator,
            group_by,
        }
    }

    /// True if the value was rolled up over an interval (else a raw pre-aggregate).
    pub fn is_rolled_up(&self) -> bool {
        self.interval.as_deref().is_some_and(|i| !i.is_empty())
    }

    /// The group-by aggregator, if one was given (a pre-aggregate).
    pub fn group_by(&self) -> Option<&str> {
        self.group_by.as_deref().filter(|g| !g.is_empty())
    }
}

/// A checked rollup write: the point (its tags holding [`AGG_TAG_KEY`] for a pre-aggregate)
/// and its spec.
#[derive(Clone, Debug, PartialEq)]
pub struct RollupPoint<'a> {
    pub point: Point<'a>,
    pub spec: RollupSpec,
}

impl<'a> RollupPoint<'a> {
    /// OpenTSDB's checks of `TSDB.addAggregatePointInternal` that need no configuration, in its
    /// order: second timestamps only; the `_aggregate` tag agrees with the group-by aggregator
    /// (and is added, upper-case, for a pre-aggregate); the group-by aggregator is known
    /// (`is_aggregator`, given the lower-case name) and not derived (`avg`, `dev`); then the
    /// series checks of every write with that tag counted.
    pub fn check(
        point: Point<'a>,
        spec: RollupSpec,
        limits: &Limits,
        is_aggregator: impl Fn(&str) -> bool,
    ) -> Result<RollupPoint<'a>, PutError> {
        let illegal = PutError::IllegalArgument;
        let mut point = point;
        if point.timestamp.is_ms() {
            return Err(illegal(format!(
                "bad timestamp={} when trying to add value={}/{} to metric={}, tags={}",
                point.timestamp.0,
                java_bytes(&point.value.encode()),
                point.value.flags(),
                point.metric,
                java_map(&point.tags)
            )));
        }
        let group_by = spec.group_by().map(str::to_owned);
        let series = |p: &Point<'_>| format!("{} {}", p.metric, java_map(&p.tags));
        match point.tags.iter().position(|(k, _)| k == AGG_TAG_KEY) {
            Some(i) => {
                let given = &point.tags[i].1;
                if !group_by
                    .as_deref()
                    .is_some_and(|g| g.eq_ignore_ascii_case(given))
                {
                    return Err(illegal(format!(
                        "Given tag value for {AGG_TAG_KEY} of {given} did not match the group by \
                         aggregator of {} for {}",
                        group_by.as_deref().unwrap_or("null"),
                        series(&point)
                    )));
                }
                point.tags[i].1 = Cow::Owned(given.to_ascii_uppercase());
            }
            None => {
                if let Some(g) = &group_by {
                    point.tags.push((
                        Cow::Borrowed(AGG_TAG_KEY),
                        Cow::Owned(g.to_ascii_uppercase()),
                    ));
                }
            }
        }
        if let Some(g) = &group_by {
            if !is_aggregator(&g.to_ascii_lowercase()) {
                return Err(illegal(format!(
                    "Invalid group by aggregator {g} with metric {}",
                    series(&point)
                )));
            }
            if is_derived(g) {
                return Err(illegal(format!(
                    "Derived group by aggregations are not allowed {g} with metric {}",
                    series(&point)
                )));
            }
        }
        check_series(&point.metric, &point.tags, limits).map_err(|e| illegal(e.to_string()))?;
        if !spec.is_rolled_up() && group_by.is_none() {
            return Err(illegal(
                "Interval cannot be null for a non-group by point".to_string(),
            ));
        }
        Ok(RollupPoint { point, spec })
    }

    /// Detaches the point from the buffer it was parsed from.
    pub fn into_owned(self) -> RollupPoint<'static> {
        RollupPoint {
            point: self.point.into_owned(),
            spec: self.spec,
        }
    }
}

/// True for the aggregators OpenTSDB refuses as rollups or pre-aggregates by default
/// (`tsd.rollups.block_derived`): they cannot be combined from stored values.
pub fn is_derived(aggregator: &str) -> bool {
    aggregator.eq_ignore_ascii_case("avg") || aggregator.eq_ignore_ascii_case("dev")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::point::{Timestamp, Value};

    fn spec(i: Option<&str>, a: Option<&str>, g: Option<&str>) -> RollupSpec {
        RollupSpec {
            interval: i.map(str::to_owned),
            aggregator: a.map(str::to_owned),
            group_by: g.map(str::to_owned),
        }
    }

    fn point(ts: u64, tags: &[(&'static str, &'static str)]) -> Point<'static> {
        Point {
            metric: Cow::Borrowed("sys.cpu"),
            timestamp: Timestamp(ts),
            value: Value::Int(42),
            tags: tags
                .iter()
                .map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(*v)))
                .collect(),
        }
    }

    fn known(name: &str) -> bool {
        ["sum", "count", "min", "max", "avg", "dev"].contains(&name)
    }

    #[test]
    fn specs_split_as_opentsdb() {
        assert_eq!(
            RollupSpec::parse("1h-SUM"),
            spec(Some("1h"), Some("SUM"), None)
        );
        assert_eq!(
            RollupSpec::parse("SUM"),
            spec(None, Some("SUM"), Some("SUM"))
        );
        assert_eq!(
            RollupSpec::parse("1h-MAX:SUM"),
            spec(Some("1h"), Some("MAX"), Some("SUM"))
        );
        assert_eq!(
            RollupSpec::parse("SUM:COUNT"),
            spec(None, Some("COUNT"), Some("COUNT"))
        );
        assert_eq!(RollupSpec::parse("SUM:"), RollupSpec::parse("SUM"));
        assert_eq!(RollupSpec::parse(":SUM").group_by(), Some("SUM"));
        assert!(RollupSpec::parse("1h-SUM").is_rolled_up());
        assert!(!RollupSpec::parse("SUM").is_rolled_up());
    }

    #[test]
    fn pre_aggregates_carry_their_tag() {
        let limits = Limits::default();
        let p = RollupPoint::check(
            point(1_700_000_000, &[("host", "a")]),
            RollupSpec::parse("1h-SUM:sum"),
            &limits,
            known,
        )
        .unwrap();
        assert_eq!(p.point.tags[1], (Cow::Borrowed("_aggregate"), "SUM".into()));
        // A rollup of raw data gets none.
        let p = RollupPoint::check(
            point(1_700_000_000, &[("host", "a")]),
            RollupSpec::parse("1h-SUM"),
            &limits,
            known,
        )
        .unwrap();
        assert_eq!(p.point.tags.len(), 1);
        // A tag that agrees is upper-cased; one that does not is refused.
        let p = RollupPoint::check(
            point(1_700_000_000, &[("host", "a"), ("_aggregate", "sum")]),
            RollupSpec::parse("SUM"),
            &limits,
            known,
        )
        .unwrap();
        assert_eq!(p.point.tags[1].1, "SUM");
        let e = RollupPoint::check(
            point(1_700_000_000, &[("host", "a"), ("_aggregate", "MAX")]),
            RollupSpec::parse("SUM"),
            &limits,
            known,
        )
        .unwrap_err();
        assert_eq!(
            e.message(),
            "Given tag value for _aggregate of MAX did not match the group by aggregator of SUM \
             for sys.cpu {host=a, _aggregate=MAX}"
        );
        let e = RollupPoint::check(
            point(1_700_000_000, &[("_aggregate", "MAX")]),
            RollupSpec::parse("1h-SUM"),
            &limits,
            known,
        )
        .unwrap_err();
        assert!(e.message().contains("group by aggregator of null"), "{e}");
    }

    #[test]
    fn refusals_use_opentsdb_words() {
        let limits = Limits::default();
        let check = |ts, s: &str| {
            RollupPoint::check(
                point(ts, &[("host", "a")]),
                RollupSpec::parse(s),
                &limits,
                known,
            )
            .unwrap_err()
            .message()
            .to_owned()
        };
        assert_eq!(
            check(1_700_000_000_123, "1h-SUM"),
            "bad timestamp=1700000000123 when trying to add value=[42]/0 to metric=sys.cpu, \
             tags={host=a}"
        );
        assert_eq!(
            check(1_700_000_000, "BOGUS"),
            "Invalid group by aggregator BOGUS with metric sys.cpu {host=a, _aggregate=BOGUS}"
        );
        for spec in ["-SUM", ":", ""] {
            assert_eq!(
                check(1_700_000_000, spec),
                "Interval cannot be null for a non-group by point",
                "{spec:?}"
            );
        }
        assert_eq!(
            check(1_700_000_000, "avg"),
            "Derived group by aggregations are not allowed avg with metric sys.cpu \
             {host=a, _aggregate=AVG}"
        );
        // The added tag counts against the tag limit.
        let one_tag = Limits {
            max_tags: 1,
            ..Limits::default()
        };
        let e = RollupPoint::check(
            point(1_700_000_000, &[("host", "a")]),
            RollupSpec::parse("SUM"),
            &one_tag,
            known,
        )
        .unwrap_err();
        assert!(e.message().starts_with("Too many tags: 2"), "{e}");
    }
}
