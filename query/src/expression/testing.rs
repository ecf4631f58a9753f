//! An in-memory [`SeriesSource`] for the expression tests: series by metric
//! and tags, UIDs assigned in order of first appearance (so UID order is
//! name order when names are added in order), points clipped to the scan
//! window like storage would.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::exec::{FetchRequest, Series, SeriesSource, SeriesTag, SourceError};
use crate::num::Num;

/// Series of several metrics.
#[derive(Debug, Default)]
pub(crate) struct MemorySource {
    series: Vec<(String, Series)>,
    uids: BTreeMap<(u8, String), u8>,
}

impl MemorySource {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn uid(&mut self, kind: u8, name: &str) -> u8 {
        let next = u8::try_from(self.uids.len() + 1).unwrap_or(u8::MAX);
        *self.uids.entry((kind, name.to_string())).or_insert(next)
    }

    /// Adds a series of `metric` with `tags` and `(ms, value)` points.
    pub(crate) fn add(
        &mut self,
        metric: &str,
        tags: &[(&str, &str)],
        points: &[(i64, Num)],
    ) -> &mut Self {
        let metric_uid = self.uid(0, metric);
        let mut series_tags: Vec<SeriesTag> = tags
            .iter()
            .map(|(k, v)| {
                SeriesTag::named(
                    Arc::from(*k),
                    Arc::from(*v),
                    u64::from(self.uid(1, k)),
                    u64::from(self.uid(2, v)),
                )
            })
            .collect();
        series_tags.sort_by_key(|t| t.key_uid);
        let mut tsuid = vec![0, 0, metric_uid];
        for t in &series_tags {
            tsuid.extend_from_slice(&t.key_uid.to_be_bytes()[5..]);
            tsuid.extend_from_slice(&t.value_uid.to_be_bytes()[5..]);
        }
        self.series.push((
            metric.to_string(),
            Series {
                tsuid,
                tags: series_tags.into(),
                points: points.to_vec(),
                annotations: Vec::new(),
                downsampled: false,
            },
        ));
        self
    }

    /// Adds a series with integer values.
    pub(crate) fn ints(
        &mut self,
        metric: &str,
        tags: &[(&str, &str)],
        points: &[(i64, i64)],
    ) -> &mut Self {
        let points: Vec<(i64, Num)> = points.iter().map(|(t, v)| (*t, Num::Int(*v))).collect();
        self.add(metric, tags, &points)
    }

    /// Adds a series with double values.
    pub(crate) fn floats(
        &mut self,
        metric: &str,
        tags: &[(&str, &str)],
        points: &[(i64, f64)],
    ) -> &mut Self {
        let points: Vec<(i64, Num)> = points.iter().map(|(t, v)| (*t, Num::Float(*v))).collect();
        self.add(metric, tags, &points)
    }
}

impl SeriesSource for MemorySource {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        if !self.series.iter().any(|(m, _)| m == req.metric) {
            return Err(SourceError::NoSuchName {
                kind: "metrics",
                name: req.metric.to_string(),
            });
        }
        Ok(self
            .series
            .iter()
            .filter(|(m, _)| m == req.metric)
            .map(|(_, s)| Series {
                points: s
                    .points
                    .iter()
                    .copied()
                    .filter(|(ts, _)| *ts >= req.scan_start_ms && *ts < req.scan_end_ms)
                    .collect(),
                ..s.clone()
            })
            .collect())
    }
}
