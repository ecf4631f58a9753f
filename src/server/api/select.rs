//! Series chosen by label matchers (`=`, `!=`, `=~`, `!~`, with
//! Prometheus's semantics: regular expressions fully anchored, an empty
//! value matching an absent label), as Prometheus remote read,
//! `/api/v1/export` and the Prometheus series API (`prom_api`) choose
//! them. `label="value"` matchers are pushed down to
//! the storage scan as `literal_or` filters; every matcher is then applied
//! to each series. A selection without `__name__="…"` looks at every metric
//! name, at most [`MAX_METRICS`].
//!
//! Remote read matches regular expressions against names as Prometheus
//! shows them ([`Names::Prometheus`]: `.` as `:`, escapes decoded); the
//! export matches the names as stored ([`Names::Stored`]), which is what
//! it writes out.

use axum::http::StatusCode;
use hourglass_ingest::prom::{self, MatchTarget, OpenTsdbMatcher, pb};
use hourglass_query::QueryBudget;
use hourglass_query::exec::{FetchRequest, Series, SeriesSource, SourceError, ValueNames};
use hourglass_query::filter::TagFilter;
use hourglass_query::lookup::{LookupMatch, LookupQuery};
use regex::Regex;

use crate::engine::{Engine, IndexError};
use crate::server::http::error::ApiError;
use crate::uid::UidKind;

/// Metric names one selection without `__name__="…"` may look at.
pub const MAX_METRICS: usize = 10_000;

/// How regular expressions see names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    Prometheus,
    Stored,
}

/// A matcher ready to apply: the OpenTSDB form plus its anchored regex.
#[derive(Debug)]
struct Matcher {
    m: OpenTsdbMatcher,
    re: Option<Regex>,
}

impl Matcher {
    fn new(m: OpenTsdbMatcher) -> Result<Self, ApiError> {
        let re = match m.op {
            pb::MatchType::Re | pb::MatchType::Nre => {
                Some(Regex::new(&format!("^(?:{})$", m.value)).map_err(|e| {
                    ApiError::bad_request(format!("invalid regular expression {:?}: {e}", m.value))
                })?)
            }
            _ => None,
        };
        Ok(Self { m, re })
    }

    /// Whether a value (OpenTSDB form; `None` when the label is absent)
    /// passes.
    fn matches(&self, stored: Option<&str>, decoded: impl FnOnce(&str) -> String) -> bool {
        match self.m.op {
            pb::MatchType::Eq => stored.unwrap_or("") == self.m.value,
            pb::MatchType::Neq => stored.unwrap_or("") != self.m.value,
            pb::MatchType::Re | pb::MatchType::Nre => {
                let text = stored.map(decoded).unwrap_or_default();
                let hit = self.re.as_ref().is_some_and(|re| re.is_match(&text));
                hit == (self.m.op == pb::MatchType::Re)
            }
        }
    }
}

/// Why a fetch gave nothing.
#[derive(Debug)]
pub enum FetchError {
    /// More points than the budget allows: a narrower time range may pass.
    TooManyPoints(String),
    Api(ApiError),
}

impl From<FetchError> for ApiError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::TooManyPoints(msg) => {
                ApiError::from(hourglass_query::error::QueryError::Limit(msg))
            }
            FetchError::Api(e) => e,
        }
    }
}

/// The matchers of one selector.
#[derive(Debug)]
pub struct Selection {
    names: Names,
    metric: Vec<Matcher>,
    tags: Vec<Matcher>,
    filters: Vec<TagFilter>,
}

impl Selection {
    pub fn new(matchers: Vec<OpenTsdbMatcher>, names: Names) -> Result<Self, ApiError> {
        let mut metric = Vec::new();
        let mut tags = Vec::new();
        let mut filters = Vec::new();
        for m in matchers {
            if let (pb::MatchType::Eq, MatchTarget::Tag(k)) = (m.op, &m.target)
                && !m.value.is_empty()
            {
                filters.push(
                    TagFilter::new("literal_or", k, &m.value, false).map_err(ApiError::from)?,
                );
            }
            match m.target {
                MatchTarget::Metric => metric.push(Matcher::new(m)?),
                MatchTarget::Tag(_) => tags.push(Matcher::new(m)?),
            }
        }
        Ok(Selection {
            names,
            metric,
            tags,
            filters,
        })
    }

    fn decode_metric(&self, name: &str) -> String {
        match self.names {
            Names::Prometheus => prom::opentsdb_metric_to_prom(name).into_owned(),
            Names::Stored => name.to_string(),
        }
    }

    fn decode_tag(&self, value: &str) -> String {
        match self.names {
            Names::Prometheus => hourglass_ingest::decode_name(value).into_owned(),
            Names::Stored => value.to_string(),
        }
    }

    /// The metric names the selection's metric matchers pass, sorted.
    pub fn metrics(&self, engine: &Engine) -> Result<Vec<String>, ApiError> {
        let candidates = match self.metric.iter().find(|m| m.m.op == pb::MatchType::Eq) {
            Some(m) => vec![m.m.value.clone()],
            None => {
                let names = engine
                    .uids()
                    .suggest(UidKind::Metric, "", MAX_METRICS + 1)
                    .map_err(ApiError::from)?;
                if names.len() > MAX_METRICS {
                    return Err(ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!(
                            "a selector without a __name__=\"...\" matcher may look at no more than {MAX_METRICS} metrics, and there are more; add a metric name to the selector"
                        ),
                    ));
                }
                names
            }
        };
        let mut out: Vec<String> = candidates
            .into_iter()
            .filter(|name| {
                self.metric
                    .iter()
                    .all(|m| m.matches(Some(name), |s| self.decode_metric(s)))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// The series of `metric` the tag matchers pass, with their points in
    /// `[start_ms, end_ms]` (series left without a point are dropped), with
    /// Prometheus' staleness markers if `stale_markers`.
    pub fn fetch(
        &self,
        engine: &Engine,
        metric: &str,
        (start_ms, end_ms): (i64, i64),
        stale_markers: bool,
        budget: &QueryBudget,
    ) -> Result<Vec<Series>, FetchError> {
        let api = |e: ApiError| FetchError::Api(e);
        budget.check().map_err(|e| api(e.into()))?;
        let req = FetchRequest {
            metric,
            filters: &self.filters,
            explicit_tags: false,
            rollup_usage: hourglass_query::rollup::RollupUsage::Raw,
            tsuids: None,
            scan_start_ms: start_ms,
            scan_end_ms: end_ms.saturating_add(1),
            downsample: None,
            stale_markers,
            value_names: ValueNames::All,
            budget,
        };
        let mut series: Vec<Series> = match engine.fetch(&req) {
            Ok(s) => s,
            // An unknown metric or tag value: nothing matches.
            Err(SourceError::NoSuchName { .. }) => return Ok(Vec::new()),
            Err(e @ SourceError::TooManyPoints { .. }) => {
                return Err(FetchError::TooManyPoints(e.to_string()));
            }
            Err(e) => {
                return Err(api(ApiError::from(
                    hourglass_query::error::QueryError::Source(e.to_string()),
                )));
            }
        };
        budget.check_points().map_err(|e| api(e.into()))?;
        series.retain_mut(|s| {
            let tags: Vec<_> = s.named_tags().collect();
            let keep = self.tags_pass(|k| {
                tags.iter()
                    .find(|(key, _)| &**key == k)
                    .map(|(_, value)| &**value)
            });
            s.points.retain(|(t, _)| (start_ms..=end_ms).contains(t));
            keep && !s.points.is_empty()
        });
        Ok(series)
    }

    /// Whether a series' tags (`value_of` a key, as stored) pass every tag
    /// matcher.
    fn tags_pass<'a>(&self, value_of: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.tags.iter().all(|m| {
            let MatchTarget::Tag(k) = &m.m.target else {
                return true;
            };
            m.matches(value_of(k), |v| self.decode_tag(v))
        })
    }

    /// The series of `metric` the tag matchers pass, from the series index
    /// (no data rows are read; no time range applies), at most `limit`.
    pub fn series_from_index(
        &self,
        engine: &Engine,
        metric: &str,
        limit: usize,
        budget: &QueryBudget,
    ) -> Result<Vec<LookupMatch>, ApiError> {
        let q = LookupQuery {
            metric: Some(metric.to_string()),
            tags: self
                .tags
                .iter()
                .filter_map(|m| match (&m.m.target, m.m.op) {
                    (MatchTarget::Tag(k), pb::MatchType::Eq) if !m.m.value.is_empty() => {
                        Some((k.clone(), m.m.value.clone()))
                    }
                    _ => None,
                })
                .collect(),
            limit: 0,
            use_meta: true,
        };
        let mut found = match engine.lookup_series(&q, budget) {
            Ok(found) => found,
            // A name without a UID: nothing has it.
            Err(IndexError::Unresolved { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        found.retain(|s| self.tags_pass(|k| s.tags.get(k).map(String::as_str)));
        found.truncate(limit);
        Ok(found)
    }
}
