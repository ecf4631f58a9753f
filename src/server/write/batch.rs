//! [`WriteBatch`]: the points of one write as the engine takes them, and
//! what came of them, mapped back to the items of the request.

use hourglass_ingest::{Point, Value};

use super::sink::PointSink;
use crate::engine::{Engine, EngineError, Entry, PointError, SeriesRef};
use crate::server::series_cache::CacheKey;

/// The points of one write. Blocking to write (UID assignment and index
/// rows may do storage I/O): call [`WriteBatch::write`] on a blocking
/// thread, then wait for the log position it returns to be durable.
#[derive(Debug, Default)]
pub struct WriteBatch<'a> {
    entries: Vec<Entry<'a>>,
    /// The request item of each entry.
    origins: Vec<u32>,
    /// Entries whose series the caller caches once resolved, with its key.
    new_series: Vec<(usize, CacheKey)>,
    /// What brought the points (`hourglass_points_received_total`).
    protocol: Protocol,
}

/// The protocol a write came by, as `/metrics` labels it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// The line protocol's `put` (and `rollup`: see [`Protocol::Rollup`]).
    #[default]
    Telnet,
    /// `/api/put`.
    Put,
    /// InfluxDB's line protocol over HTTP.
    Influx,
    /// Prometheus remote write.
    Prometheus,
    /// `/api/v1/import`.
    Import,
    /// Rollup points (`/api/rollup`, the `rollup` line).
    Rollup,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Telnet => "telnet",
            Protocol::Put => "put",
            Protocol::Influx => "influx",
            Protocol::Prometheus => "prometheus",
            Protocol::Import => "import",
            Protocol::Rollup => "rollup",
        }
    }

    /// Counts `points` accepted by this protocol.
    pub fn count(self, metrics: &crate::metrics::Metrics, points: usize) {
        metrics
            .points_received
            .with_label_values(&[self.as_str()])
            .inc_by(points as u64);
    }
}

/// What a write did.
#[derive(Debug, Default)]
pub struct Written {
    /// Log position to wait for before acknowledging (0 = none).
    pub lsn: u64,
    pub accepted: usize,
    /// Refused points.
    pub errors: Vec<Refused>,
    /// Series resolved for the cache keys given with named points.
    pub new_series: Vec<(CacheKey, SeriesRef)>,
    /// Series given by index (`known`) whose head slot had been given up,
    /// registered again: the index and the new series.
    pub refreshed: Vec<(u32, SeriesRef)>,
    /// The series of named points, by request item (once per run of
    /// points of one series), for callers that resolve in several steps.
    pub series: Vec<(u32, SeriesRef)>,
}

/// A point the engine refused.
#[derive(Debug)]
pub struct Refused {
    /// The request item it came from.
    pub origin: u32,
    /// Its metric, if it was named (a point of a known series has none at
    /// hand).
    pub metric: Option<String>,
    pub error: PointError,
}

impl<'a> PointSink<'a> for WriteBatch<'a> {
    fn named(&mut self, point: Point<'a>, origin: u32, cache_key: Option<CacheKey>) {
        if let Some(key) = cache_key {
            self.new_series.push((self.entries.len(), key));
        }
        self.entries.push(Entry::Point(point));
        self.origins.push(origin);
    }

    fn known(&mut self, series: u32, timestamp: u64, value: Value, origin: u32) {
        self.entries.push(Entry::Known {
            series,
            timestamp,
            value,
        });
        self.origins.push(origin);
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

impl<'a> WriteBatch<'a> {
    /// An empty batch of points that came by `protocol`.
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            ..Self::default()
        }
    }

    /// An empty batch with room for `points` points: a writer that knows
    /// its count up front spares the doubling growth of the batch's lists,
    /// each step of which was fresh memory to fault in (issue 18).
    pub fn with_capacity(protocol: Protocol, points: usize) -> Self {
        Self {
            entries: Vec::with_capacity(points),
            origins: Vec::with_capacity(points),
            protocol,
            ..Self::default()
        }
    }

    /// A point named by metric and tags, and the digest of the text its
    /// series was sent as ([`Entry::SentAs`]).
    pub fn named_as(&mut self, point: Point<'a>, origin: u32, text: u128) {
        self.entries.push(Entry::SentAs { point, text });
        self.origins.push(origin);
    }

    /// The request item of each point taken.
    pub fn origins(&self) -> &[u32] {
        &self.origins
    }

    /// Drops the points taken since `len` (a request item taken back).
    pub fn truncate(&mut self, len: usize) {
        self.entries.truncate(len);
        self.origins.truncate(len);
        while self.new_series.last().is_some_and(|(i, _)| *i >= len) {
            self.new_series.pop();
        }
    }

    /// Writes the points (not waiting for durability) and empties the
    /// batch; `refs` are the series the `known` points index. Blocking.
    /// On an error the batch keeps its points, so the caller may retry.
    pub fn write(&mut self, engine: &Engine, refs: &[SeriesRef]) -> Result<Written, EngineError> {
        if self.entries.is_empty() {
            return Ok(Written::default());
        }
        let receipt = engine.write_entries(refs, &self.entries)?;
        self.protocol.count(engine.metrics(), receipt.accepted);
        let origin = |i: usize| self.origins.get(i).copied().unwrap_or(u32::MAX);
        let errors = receipt
            .errors
            .into_iter()
            .map(|(i, error)| Refused {
                origin: origin(i),
                metric: match self.entries.get(i) {
                    Some(Entry::Point(p) | Entry::SentAs { point: p, .. }) => {
                        Some(p.metric.to_string())
                    }
                    _ => None,
                },
                error,
            })
            .collect();
        // Both lists are in entry order.
        let mut new_series = Vec::with_capacity(self.new_series.len());
        let mut keys = std::mem::take(&mut self.new_series).into_iter().peekable();
        for (i, series) in &receipt.series {
            while keys.peek().is_some_and(|(k, _)| k < i) {
                keys.next();
            }
            if let Some((_, key)) = keys.next_if(|(k, _)| k == i) {
                new_series.push((key, series.clone()));
            }
        }
        let series = receipt
            .series
            .into_iter()
            .map(|(i, s)| (origin(i), s))
            .collect();
        self.entries.clear();
        self.origins.clear();
        Ok(Written {
            lsn: receipt.lsn,
            accepted: receipt.accepted,
            errors,
            new_series,
            refreshed: receipt.refreshed,
            series,
        })
    }
}
