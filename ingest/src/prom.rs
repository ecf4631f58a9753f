//! Prometheus remote write (`POST /api/v1/write`) and remote read (`POST /api/v1/read`): the
//! protobuf messages ([`pb`], hand-derived with the official field numbers of
//! `prompb/remote.proto` and `prompb/types.proto`), snappy *block* decoding with a size bound,
//! the mapping onto OpenTSDB points and back.
//!
//! # Remote write ([`decode_write`])
//!
//! * Body: snappy block format (`snap::raw`) of a `prometheus.WriteRequest`. The declared
//!   uncompressed length is checked against the caller's limit *before* anything is allocated
//!   ([`DEFAULT_MAX_DECODED_LEN`] = 32 MiB, Prometheus's own), and against what the compressed
//!   size can possibly expand to (snappy expands at most ~21×; more is a corrupt header).
//! * Decoding streams over the series: one `TimeSeries` is decoded at a time and converted at
//!   once, so memory is the decoded body plus about 24 bytes per stored sample.
//! * Mapping: `__name__` → metric with `:` → `.` (Prometheus classic names never contain `.`, so
//!   this reverses exactly; a literal `.` — possible in Prometheus 3 UTF-8 names — is written
//!   `%2E`), then the [`crate::names`] `%XX` rule for anything else OpenTSDB forbids. Other labels
//!   → tags, keys and values mapped with [`crate::names::encode_name`]. A label with an empty
//!   value is absent (Prometheus semantics).
//! * Values: finite doubles as OpenTSDB classifies them ([`Value::Float`] when exact in `f32`,
//!   else [`Value::Double`]). Staleness markers (NaN with bits `0x7ff0000000000002`) are dropped
//!   and counted ([`RemoteWrite::stale_markers`]); other NaN/±Inf values are dropped and counted
//!   ([`RemoteWrite::non_finite`]). Neither is an error.
//! * Timestamps: milliseconds, checked with [`crate::timestamp::timestamp_from_millis`].
//! * Exemplars and native histograms are ignored and counted; metadata-only requests (no
//!   series) are fine and yield no points.
//! * Errors: a body that does not decode fails as a whole ([`PromError`], 400 or 413: the
//!   client's fault, Prometheus drops the batch instead of retrying). A series that cannot be
//!   stored (no `__name__`, no other label, too many labels, a duplicate label name) or a sample
//!   whose timestamp is refused is reported in [`RemoteWrite::errors`]; the rest is written and
//!   [`RemoteWrite::status`] answers 400 so that Prometheus logs it and does not resend.
//!
//! # Remote read ([`decode_read`], [`encode_read_response`])
//!
//! * Request: snappy `ReadRequest`; only the `SAMPLES` response type is produced (a request
//!   whose `accepted_response_types` lacks it is refused). An absent list means `SAMPLES`.
//! * Matchers are mapped to OpenTSDB terms by [`map_matcher`]; results are built with
//!   [`series_to_prom`], which maps names back (`.` → `:` in metric names, `%XX` decoded), sorts
//!   labels by name and samples by time.
//! * Prometheus requires exactly one `QueryResult` per query, in query order:
//!   [`encode_read_response`] refuses anything else.

use std::borrow::Cow;

use prost::Message;

use crate::limits::Limits;
use crate::names::{decode_name, encode_name, encode_with};
use crate::point::{Point, Timestamp, Value};
use crate::timestamp::timestamp_from_millis;
use crate::validate::check_series;

/// The protobuf messages of `prompb` (package `prometheus`), with their official field numbers.
pub mod pb {
    /// `WriteRequest{timeseries=1, metadata=3}` (2 is reserved).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        /// Series with their samples.
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
        /// Metric metadata (sent in separate, series-less requests).
        #[prost(message, repeated, tag = "3")]
        pub metadata: Vec<MetricMetadata>,
    }

    /// `TimeSeries{labels=1, samples=2, exemplars=3, histograms=4}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        /// Labels, sorted by name.
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        /// Samples, sorted by time.
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        /// Exemplars (ignored on write).
        #[prost(message, repeated, tag = "3")]
        pub exemplars: Vec<Exemplar>,
        /// Native histograms, kept as their encoded `prometheus.Histogram` bytes (ignored).
        #[prost(bytes = "vec", repeated, tag = "4")]
        pub histograms: Vec<Vec<u8>>,
    }

    /// `Label{name=1, value=2}`.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct Label {
        /// Label name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Label value.
        #[prost(string, tag = "2")]
        pub value: String,
    }

    /// `Sample{value=1 double, timestamp=2 int64 ms}`.
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct Sample {
        /// The value.
        #[prost(double, tag = "1")]
        pub value: f64,
        /// Milliseconds since the epoch.
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }

    /// `Exemplar{labels=1, value=2, timestamp=3}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Exemplar {
        /// Exemplar labels.
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        /// The value.
        #[prost(double, tag = "2")]
        pub value: f64,
        /// Milliseconds since the epoch.
        #[prost(int64, tag = "3")]
        pub timestamp: i64,
    }

    /// `MetricMetadata{type=1, metric_family_name=2, help=4, unit=5}`.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct MetricMetadata {
        /// `MetricType` (UNKNOWN=0, COUNTER=1, GAUGE=2, HISTOGRAM=3, GAUGEHISTOGRAM=4,
        /// SUMMARY=5, INFO=6, STATESET=7).
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        /// Metric family name.
        #[prost(string, tag = "2")]
        pub metric_family_name: String,
        /// Help text.
        #[prost(string, tag = "4")]
        pub help: String,
        /// Unit.
        #[prost(string, tag = "5")]
        pub unit: String,
    }

    /// `ReadRequest{queries=1, accepted_response_types=2}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReadRequest {
        /// The queries; the response has one result per query, in order.
        #[prost(message, repeated, tag = "1")]
        pub queries: Vec<Query>,
        /// Acceptable response types in preference order; empty means `SAMPLES`.
        #[prost(enumeration = "ResponseType", repeated, tag = "2")]
        pub accepted_response_types: Vec<i32>,
    }

    /// `ReadRequest.ResponseType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResponseType {
        /// One `ReadResponse` with raw samples, snappy-compressed.
        Samples = 0,
        /// Streamed XOR chunks (not produced by hourglass).
        StreamedXorChunks = 1,
    }

    /// `Query{start_timestamp_ms=1, end_timestamp_ms=2, matchers=3, hints=4}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Query {
        /// Inclusive start, ms.
        #[prost(int64, tag = "1")]
        pub start_timestamp_ms: i64,
        /// Inclusive end, ms.
        #[prost(int64, tag = "2")]
        pub end_timestamp_ms: i64,
        /// All must match.
        #[prost(message, repeated, tag = "3")]
        pub matchers: Vec<LabelMatcher>,
        /// Optional hints.
        #[prost(message, optional, tag = "4")]
        pub hints: Option<ReadHints>,
    }

    /// `LabelMatcher{type=1, name=2, value=3}`.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct LabelMatcher {
        /// [`MatchType`].
        #[prost(enumeration = "MatchType", tag = "1")]
        pub r#type: i32,
        /// Label name.
        #[prost(string, tag = "2")]
        pub name: String,
        /// Value or regular expression.
        #[prost(string, tag = "3")]
        pub value: String,
    }

    /// `LabelMatcher.Type`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MatchType {
        /// `=`
        Eq = 0,
        /// `!=`
        Neq = 1,
        /// `=~`
        Re = 2,
        /// `!~`
        Nre = 3,
    }

    /// `ReadHints{step_ms=1, func=2, start_ms=3, end_ms=4, grouping=5, by=6, range_ms=7}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReadHints {
        /// Query step, ms.
        #[prost(int64, tag = "1")]
        pub step_ms: i64,
        /// Surrounding function or aggregation.
        #[prost(string, tag = "2")]
        pub func: String,
        /// Start, ms.
        #[prost(int64, tag = "3")]
        pub start_ms: i64,
        /// End, ms.
        #[prost(int64, tag = "4")]
        pub end_ms: i64,
        /// Grouping labels.
        #[prost(string, repeated, tag = "5")]
        pub grouping: Vec<String>,
        /// `by` (true) or `without` (false).
        #[prost(bool, tag = "6")]
        pub by: bool,
        /// Range vector range, ms.
        #[prost(int64, tag = "7")]
        pub range_ms: i64,
    }

    /// `ReadResponse{results=1}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReadResponse {
        /// One per query, in query order.
        #[prost(message, repeated, tag = "1")]
        pub results: Vec<QueryResult>,
    }

    /// `QueryResult{timeseries=1}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct QueryResult {
        /// Matching series; samples ordered by time.
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
    }
}

/// Prometheus's own limit on a decoded remote-write body.
pub const DEFAULT_MAX_DECODED_LEN: usize = 32 << 20;

/// The NaN bit pattern Prometheus writes as a staleness marker.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Snappy cannot expand more than 64 output bytes per 3 input bytes; allow some slack.
const MAX_SNAPPY_RATIO: usize = 32;

/// A request that cannot be served as a whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PromError {
    /// The HTTP status to answer: 400 (undecodable), 413 (too large) or 500 (server side).
    pub status: u16,
    /// Plain-text explanation (the response body).
    pub message: String,
}

impl PromError {
    fn bad(message: impl Into<String>) -> Self {
        Self {
            status: 400,
            message: message.into(),
        }
    }

    /// `true` for 4xx: the client's fault; Prometheus drops the batch instead of retrying.
    pub fn client_fault(&self) -> bool {
        self.status < 500
    }
}

/// The uncompressed length a snappy block body declares (read from its header, nothing is
/// decoded), so that a server can reserve memory for it before [`decode_write`].
pub fn declared_len(body: &[u8]) -> Result<usize, PromError> {
    snap::raw::decompress_len(body).map_err(|e| PromError::bad(format!("snappy: {e}")))
}

/// Decompresses a snappy block body, refusing a declared length above `max` before allocating.
pub fn decompress(body: &[u8], max: usize) -> Result<Vec<u8>, PromError> {
    let len =
        snap::raw::decompress_len(body).map_err(|e| PromError::bad(format!("snappy: {e}")))?;
    if len > max {
        return Err(PromError {
            status: 413,
            message: format!("decoded body of {len} bytes exceeds the limit of {max} bytes"),
        });
    }
    if len > body.len().saturating_mul(MAX_SNAPPY_RATIO) {
        return Err(PromError::bad(format!(
            "snappy: declared length {len} is impossible for {} compressed bytes",
            body.len()
        )));
    }
    let mut out = vec![0; len];
    let n = snap::raw::Decoder::new()
        .decompress(body, &mut out)
        .map_err(|e| PromError::bad(format!("snappy: {e}")))?;
    out.truncate(n);
    Ok(out)
}

// ---- remote write ----

/// One series of a remote-write request, mapped and validated, with its storable samples.
#[derive(Clone, Debug, PartialEq)]
pub struct PromSeries {
    /// OpenTSDB metric name.
    pub metric: String,
    /// OpenTSDB tags, in label order.
    pub tags: Vec<(String, String)>,
    /// Checked timestamp and classified value per stored sample.
    pub samples: Vec<(Timestamp, Value)>,
}

impl PromSeries {
    /// The series' points.
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.samples.iter().map(move |&(timestamp, value)| Point {
            metric: Cow::Borrowed(self.metric.as_str()),
            timestamp,
            value,
            tags: self
                .tags
                .iter()
                .map(|(k, v)| (Cow::Borrowed(k.as_str()), Cow::Borrowed(v.as_str())))
                .collect(),
        })
    }
}

/// A series (or some of its samples) that could not be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesError {
    /// Index of the series in the request.
    pub index: usize,
    /// Why (the first reason for this series).
    pub message: String,
    /// Samples of this series not stored because of it.
    pub samples: usize,
}

/// A decoded remote-write request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemoteWrite {
    /// Series with at least one storable sample.
    pub series: Vec<PromSeries>,
    /// Series or samples refused.
    pub errors: Vec<SeriesError>,
    /// Staleness markers dropped.
    pub stale_markers: usize,
    /// Other NaN and ±Inf samples dropped.
    pub non_finite: usize,
    /// Exemplars ignored.
    pub exemplars: usize,
    /// Native histogram samples ignored.
    pub histograms: usize,
    /// Metadata entries ignored.
    pub metadata: usize,
}

impl RemoteWrite {
    /// Every storable point.
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.series.iter().flat_map(PromSeries::points)
    }

    /// Number of points [`RemoteWrite::points`] yields.
    pub fn point_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// The status to answer once the points are written: 204, or 400 when some series or
    /// samples were refused (resending would not help, so Prometheus must not retry).
    pub fn status(&self) -> u16 {
        if self.errors.is_empty() { 204 } else { 400 }
    }

    /// The refusals, one line each (`series <i>: <message>`), for a 400 body; `None` if none.
    pub fn error_text(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        Some(
            self.errors
                .iter()
                .map(|e| format!("series {}: {}", e.index, e.message))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

/// One protobuf field: number and payload.
enum Field<'a> {
    Varint,
    Fixed,
    Bytes(&'a [u8]),
}

/// A minimal protobuf field reader, so that a request's series can be decoded one at a time.
struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64, PromError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| PromError::bad("protobuf: truncated varint"))?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(PromError::bad("protobuf: varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PromError> {
        if n > self.buf.len() {
            return Err(PromError::bad("protobuf: truncated field"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, PromError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 {
            return Err(PromError::bad("protobuf: field number 0"));
        }
        let field = match key & 7 {
            0 => {
                self.varint()?;
                Field::Varint
            }
            1 => {
                self.take(8)?;
                Field::Fixed
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| PromError::bad("protobuf: length out of range"))?;
                Field::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Field::Fixed
            }
            w => {
                return Err(PromError::bad(format!(
                    "protobuf: unsupported wire type {w}"
                )));
            }
        };
        Ok(Some((number, field)))
    }
}

fn expect_bytes<'a>(message: &str, number: u64, field: Field<'a>) -> Result<&'a [u8], PromError> {
    match field {
        Field::Bytes(b) => Ok(b),
        _ => Err(PromError::bad(format!(
            "protobuf: {message} field {number} has the wrong wire type"
        ))),
    }
}

/// Decodes a remote-write body (snappy block of a `WriteRequest`) into storable series.
/// `max_decoded_len` bounds the uncompressed size ([`DEFAULT_MAX_DECODED_LEN`] is
/// Prometheus's).
pub fn decode_write(
    body: &[u8],
    max_decoded_len: usize,
    limits: &Limits,
) -> Result<RemoteWrite, PromError> {
    let raw = decompress(body, max_decoded_len)?;
    let mut out = RemoteWrite::default();
    let mut fields = Fields { buf: &raw };
    let mut index = 0;
    while let Some((number, field)) = fields.next()? {
        match number {
            1 => {
                let bytes = expect_bytes("WriteRequest", number, field)?;
                decode_series(index, bytes, limits, &mut out)?;
                index += 1;
            }
            3 => {
                let bytes = expect_bytes("WriteRequest", number, field)?;
                pb::MetricMetadata::decode(bytes)
                    .map_err(|e| PromError::bad(format!("protobuf: metadata: {e}")))?;
                out.metadata += 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

fn decode_series(
    index: usize,
    bytes: &[u8],
    limits: &Limits,
    out: &mut RemoteWrite,
) -> Result<(), PromError> {
    let mut labels: Vec<pb::Label> = Vec::new();
    let mut samples: Vec<pb::Sample> = Vec::new();
    let mut fields = Fields { buf: bytes };
    while let Some((number, field)) = fields.next()? {
        match number {
            1 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                labels.push(
                    pb::Label::decode(b)
                        .map_err(|e| PromError::bad(format!("protobuf: label: {e}")))?,
                );
            }
            2 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                samples.push(
                    pb::Sample::decode(b)
                        .map_err(|e| PromError::bad(format!("protobuf: sample: {e}")))?,
                );
            }
            3 => {
                expect_bytes("TimeSeries", number, field)?;
                out.exemplars += 1;
            }
            4 => {
                expect_bytes("TimeSeries", number, field)?;
                out.histograms += 1;
            }
            _ => {}
        }
    }
    let (metric, tags) = match map_labels(&labels, limits) {
        Ok(mapped) => mapped,
        Err(message) => {
            out.errors.push(SeriesError {
                index,
                message,
                samples: samples.len(),
            });
            return Ok(());
        }
    };
    let mut stored = Vec::with_capacity(samples.len());
    let mut refused: Option<SeriesError> = None;
    for s in samples {
        if s.value.to_bits() == STALE_NAN_BITS {
            out.stale_markers += 1;
            continue;
        }
        if !s.value.is_finite() {
            out.non_finite += 1;
            continue;
        }
        match timestamp_from_millis(s.timestamp) {
            Ok(ts) => stored.push((ts, classify(s.value))),
            Err(e) => {
                let r = refused.get_or_insert_with(|| SeriesError {
                    index,
                    message: e.to_string(),
                    samples: 0,
                });
                r.samples += 1;
            }
        }
    }
    out.errors.extend(refused);
    if !stored.is_empty() {
        out.series.push(PromSeries {
            metric,
            tags,
            samples: stored,
        });
    }
    Ok(())
}

/// A finite double as OpenTSDB stores it: 4-byte float when exact, else 8-byte double.
fn classify(d: f64) -> Value {
    let f = d as f32;
    if f64::from(f) == d {
        Value::Float(f)
    } else {
        Value::Double(d)
    }
}

type Mapped = (String, Vec<(String, String)>);

fn map_labels(labels: &[pb::Label], limits: &Limits) -> Result<Mapped, String> {
    let mut names: Vec<&str> = labels.iter().map(|l| l.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("duplicate label name {:?}", w[0]));
    }
    let mut metric = None;
    let mut tags = Vec::with_capacity(labels.len());
    for l in labels {
        if l.value.is_empty() {
            continue;
        }
        if l.name == "__name__" {
            metric = Some(prom_metric_to_opentsdb(&l.value).into_owned());
        } else {
            tags.push((
                encode_name(&l.name).into_owned(),
                encode_name(&l.value).into_owned(),
            ));
        }
    }
    let metric = metric.ok_or_else(|| "missing metric name (no __name__ label)".to_owned())?;
    check_series(&metric, &tags, limits).map_err(|e| e.to_string())?;
    Ok((metric, tags))
}

/// A Prometheus metric name as an OpenTSDB metric: `:` → `.`, a literal `.` → `%2E`, anything
/// else OpenTSDB forbids → `%XX` ([`crate::names`]). Reversed by [`opentsdb_metric_to_prom`].
pub fn prom_metric_to_opentsdb(name: &str) -> Cow<'_, str> {
    encode_with(name, |c| match c {
        ':' => Some("."),
        '.' => Some("%2E"),
        _ => None,
    })
}

/// An OpenTSDB metric as a Prometheus metric name: `.` → `:`, then `%XX` decoded.
pub fn opentsdb_metric_to_prom(metric: &str) -> Cow<'_, str> {
    if !metric.contains('.') {
        return decode_name(metric);
    }
    Cow::Owned(decode_name(&metric.replace('.', ":")).into_owned())
}

// ---- remote read ----

/// Decodes a remote-read body (snappy block of a `ReadRequest`) and checks that a `SAMPLES`
/// response is acceptable to the client.
pub fn decode_read(body: &[u8], max_decoded_len: usize) -> Result<pb::ReadRequest, PromError> {
    let raw = decompress(body, max_decoded_len)?;
    let request = pb::ReadRequest::decode(raw.as_slice())
        .map_err(|e| PromError::bad(format!("protobuf: {e}")))?;
    let samples = pb::ResponseType::Samples as i32;
    if !request.accepted_response_types.is_empty()
        && !request.accepted_response_types.contains(&samples)
    {
        return Err(PromError::bad(
            "none of the accepted response types is supported: hourglass answers SAMPLES only",
        ));
    }
    Ok(request)
}

/// Encodes the `SAMPLES` response (`Content-Type: application/x-protobuf`,
/// `Content-Encoding: snappy`): exactly one result per query of `request`, in order.
pub fn encode_read_response(
    request: &pb::ReadRequest,
    results: Vec<pb::QueryResult>,
) -> Result<Vec<u8>, PromError> {
    if results.len() != request.queries.len() {
        return Err(PromError {
            status: 500,
            message: format!(
                "{} results for {} queries: Prometheus needs exactly one per query",
                results.len(),
                request.queries.len()
            ),
        });
    }
    let bytes = pb::ReadResponse { results }.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&bytes)
        .map_err(|e| PromError {
            status: 500,
            message: format!("snappy: {e}"),
        })
}

/// A stored series as a Prometheus `TimeSeries`: `__name__` from the metric
/// ([`opentsdb_metric_to_prom`]), tag keys and values decoded ([`decode_name`]), labels sorted by
/// name, samples (`(ms, value)`) sorted by time.
pub fn series_to_prom<K: AsRef<str>, V: AsRef<str>>(
    metric: &str,
    tags: &[(K, V)],
    samples: impl IntoIterator<Item = (i64, f64)>,
) -> pb::TimeSeries {
    let mut labels: Vec<pb::Label> = std::iter::once(pb::Label {
        name: "__name__".to_owned(),
        value: opentsdb_metric_to_prom(metric).into_owned(),
    })
    .chain(tags.iter().map(|(k, v)| pb::Label {
        name: decode_name(k.as_ref()).into_owned(),
        value: decode_name(v.as_ref()).into_owned(),
    }))
    .collect();
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    let mut samples: Vec<pb::Sample> = samples
        .into_iter()
        .map(|(timestamp, value)| pb::Sample { value, timestamp })
        .collect();
    samples.sort_by_key(|s| s.timestamp);
    pb::TimeSeries {
        labels,
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

/// Makes a series' labels acceptable to Prometheus, which refuses a whole remote-read answer over
/// one bad label: a label name (or the `__name__` value) with a character Prometheus does not
/// allow in it (`-`, `/`, `.` or a letter outside ASCII, all fine in OpenTSDB names) has each
/// such character written as `_`, and `_` is put before a leading digit; a rewritten label whose
/// name then equals another label's is dropped (the label that needed no rewriting wins). Labels
/// stay sorted by name. Names written by Prometheus itself never change.
pub fn prometheus_safe_labels(series: &mut pb::TimeSeries) {
    fn fix(name: &mut String, colon: bool) {
        let ok = |i: usize, c: char| {
            c.is_ascii_alphabetic()
                || c == '_'
                || (colon && c == ':')
                || (i > 0 && c.is_ascii_digit())
        };
        if name.chars().enumerate().all(|(i, c)| ok(i, c)) && !name.is_empty() {
            return;
        }
        let mut out = String::with_capacity(name.len() + 1);
        if name.starts_with(|c: char| c.is_ascii_digit()) || name.is_empty() {
            out.push('_');
        }
        for c in name.chars() {
            out.push(
                if c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':') {
                    c
                } else {
                    '_'
                },
            );
        }
        *name = out;
    }
    let mut rewritten = vec![false; series.labels.len()];
    for (l, r) in series.labels.iter_mut().zip(&mut rewritten) {
        let before = (l.name.clone(), l.value.clone());
        if l.name == "__name__" {
            fix(&mut l.value, true);
        } else {
            fix(&mut l.name, false);
        }
        *r = before != (l.name.clone(), l.value.clone());
    }
    if rewritten.iter().any(|&r| r) {
        let mut labels: Vec<(pb::Label, bool)> = std::mem::take(&mut series.labels)
            .into_iter()
            .zip(rewritten)
            .collect();
        // Equal names: the label kept as sent sorts first and survives.
        labels.sort_by(|a, b| (&a.0.name, a.1).cmp(&(&b.0.name, b.1)));
        labels.dedup_by(|b, a| a.0.name == b.0.name);
        series.labels = labels.into_iter().map(|(l, _)| l).collect();
    }
}

/// What a matcher applies to on the OpenTSDB side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchTarget {
    /// `__name__`: the metric.
    Metric,
    /// Another label: the tag key, in OpenTSDB (mapped) form.
    Tag(String),
}

/// A remote-read matcher in OpenTSDB terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenTsdbMatcher {
    /// `=`, `!=`, `=~`, `!~`.
    pub op: pb::MatchType,
    /// Metric or tag key.
    pub target: MatchTarget,
    /// For `Eq`/`Neq`: the value in OpenTSDB (mapped) form, to compare with stored names. For
    /// `Re`/`Nre`: the Prometheus regular expression unchanged, to match (fully anchored, as
    /// Prometheus does) against *decoded* names ([`opentsdb_metric_to_prom`],
    /// [`decode_name`]). As in Prometheus, an empty value also matches series without the
    /// label.
    pub value: String,
}

/// Maps a remote-read matcher to OpenTSDB terms; an unknown matcher type is the client's error.
pub fn map_matcher(m: &pb::LabelMatcher) -> Result<OpenTsdbMatcher, PromError> {
    let op = pb::MatchType::try_from(m.r#type)
        .map_err(|_| PromError::bad(format!("unknown matcher type {}", m.r#type)))?;
    let is_metric = m.name == "__name__";
    let value = match op {
        pb::MatchType::Eq | pb::MatchType::Neq if is_metric => {
            prom_metric_to_opentsdb(&m.value).into_owned()
        }
        pb::MatchType::Eq | pb::MatchType::Neq => encode_name(&m.value).into_owned(),
        pb::MatchType::Re | pb::MatchType::Nre => m.value.clone(),
    };
    let target = if is_metric {
        MatchTarget::Metric
    } else {
        MatchTarget::Tag(encode_name(&m.name).into_owned())
    };
    Ok(OpenTsdbMatcher { op, target, value })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn label(name: &str, value: &str) -> pb::Label {
        pb::Label {
            name: name.to_owned(),
            value: value.to_owned(),
        }
    }

    fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> pb::TimeSeries {
        pb::TimeSeries {
            labels: labels.iter().map(|(n, v)| label(n, v)).collect(),
            samples: samples
                .iter()
                .map(|&(timestamp, value)| pb::Sample { value, timestamp })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        }
    }

    fn compress(msg: &impl Message) -> Vec<u8> {
        snap::raw::Encoder::new()
            .compress_vec(&msg.encode_to_vec())
            .unwrap()
    }

    fn write(req: &pb::WriteRequest) -> Result<RemoteWrite, PromError> {
        decode_write(&compress(req), DEFAULT_MAX_DECODED_LEN, &Limits::default())
    }

    const T: i64 = 1_700_000_000_123;

    #[test]
    fn labels_prometheus_cannot_hold_are_rewritten() {
        let mut s = series_to_prom(
            "sys.cpu-user",
            &[
                ("dc-name", "a-b"),
                ("host", "x"),
                ("1x", "y"),
                ("dc_name", "z"),
            ],
            [(T, 1.0)],
        );
        prometheus_safe_labels(&mut s);
        let got: Vec<(&str, &str)> = s
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("_1x", "y"),
                ("__name__", "sys:cpu_user"),
                ("dc_name", "z"),
                ("host", "x"),
            ]
        );
        let mut ok = series_to_prom(
            "up",
            &[("job", "self"), ("instance", "127.0.0.1:9090")],
            [(T, 1.0)],
        );
        let before = ok.clone();
        prometheus_safe_labels(&mut ok);
        assert_eq!(ok, before);
    }

    #[test]
    fn write_maps_series() {
        let req = pb::WriteRequest {
            timeseries: vec![
                series(
                    &[
                        ("__name__", "http_requests_total"),
                        ("instance", "localhost:9090"),
                        ("job", "prometheus"),
                    ],
                    &[(T, 42.0), (T + 1000, 0.1)],
                ),
                series(
                    &[("__name__", "job:rate5m:sum"), ("path", "/a b")],
                    &[(T, 1.5)],
                ),
            ],
            metadata: Vec::new(),
        };
        let w = write(&req).unwrap();
        assert_eq!(w.errors, Vec::new());
        assert_eq!(w.series.len(), 2);
        let s = &w.series[0];
        assert_eq!(s.metric, "http_requests_total");
        assert_eq!(
            s.tags,
            vec![
                ("instance".to_owned(), "localhost%3A9090".to_owned()),
                ("job".to_owned(), "prometheus".to_owned()),
            ]
        );
        assert_eq!(
            s.samples,
            vec![
                (Timestamp(T as u64), Value::Float(42.0)),
                (Timestamp(T as u64 + 1000), Value::Double(0.1)),
            ]
        );
        assert_eq!(w.series[1].metric, "job.rate5m.sum");
        assert_eq!(w.series[1].tags[0].1, "/a%20b");
        assert_eq!(w.point_count(), 3);
        let points: Vec<Point<'_>> = w.points().collect();
        assert_eq!(points.len(), 3);
        for p in &points {
            assert_eq!(crate::check_point(p, &Limits::default()), Ok(()));
        }
        assert_eq!(w.status(), 204);
        assert_eq!(w.error_text(), None);
    }

    #[test]
    fn staleness_markers_and_non_finite_values_are_dropped_and_counted() {
        let stale = f64::from_bits(STALE_NAN_BITS);
        assert!(stale.is_nan());
        let req = pb::WriteRequest {
            timeseries: vec![
                series(
                    &[("__name__", "up"), ("job", "x")],
                    &[
                        (T, 1.0),
                        (T + 1, stale),
                        (T + 2, f64::NAN),
                        (T + 3, f64::INFINITY),
                        (T + 4, f64::NEG_INFINITY),
                    ],
                ),
                // Only a staleness marker: the series disappears without error.
                series(&[("__name__", "gone"), ("job", "x")], &[(T, stale)]),
            ],
            metadata: Vec::new(),
        };
        let w = write(&req).unwrap();
        assert_eq!(w.stale_markers, 2);
        assert_eq!(w.non_finite, 3);
        assert_eq!(w.errors, Vec::new());
        assert_eq!(w.series.len(), 1);
        assert_eq!(
            w.series[0].samples,
            vec![(Timestamp(T as u64), Value::Float(1.0))]
        );
        assert_eq!(w.status(), 204);
    }

    #[test]
    fn metadata_only_request() {
        let req = pb::WriteRequest {
            timeseries: Vec::new(),
            metadata: vec![pb::MetricMetadata {
                r#type: 1,
                metric_family_name: "http_requests_total".to_owned(),
                help: "Total requests.".to_owned(),
                unit: String::new(),
            }],
        };
        let w = write(&req).unwrap();
        assert_eq!(w.metadata, 1);
        assert_eq!(w.point_count(), 0);
        assert_eq!(w.status(), 204);
        // An empty request too.
        let w = write(&pb::WriteRequest::default()).unwrap();
        assert_eq!(w, RemoteWrite::default());
    }

    #[test]
    fn exemplars_and_histograms_are_ignored_and_counted() {
        let mut ts = series(&[("__name__", "h"), ("job", "x")], &[(T, 2.0)]);
        ts.exemplars = vec![pb::Exemplar {
            labels: vec![label("trace_id", "abc")],
            value: 1.0,
            timestamp: T,
        }];
        ts.histograms = vec![vec![0x08, 0x01], Vec::new()];
        let w = write(&pb::WriteRequest {
            timeseries: vec![ts],
            metadata: Vec::new(),
        })
        .unwrap();
        assert_eq!(w.exemplars, 1);
        assert_eq!(w.histograms, 2);
        assert_eq!(w.point_count(), 1);
    }

    #[test]
    fn series_errors() {
        let req = pb::WriteRequest {
            timeseries: vec![
                series(&[("job", "x")], &[(T, 1.0)]),
                series(&[("__name__", "m")], &[(T, 1.0), (T, 2.0)]),
                series(&[("__name__", "m"), ("a", "1"), ("a", "2")], &[(T, 1.0)]),
                series(
                    &[("__name__", "m"), ("job", "x")],
                    &[(T, 1.0), (0, 1.0), (-5, 1.0), (4_294_967_296_000, 1.0)],
                ),
                series(
                    &[("__name__", "m"), ("job", "x"), ("empty", "")],
                    &[(T, 3.0)],
                ),
                series(
                    &[
                        ("__name__", "m"),
                        ("a", "1"),
                        ("b", "2"),
                        ("c", "3"),
                        ("d", "4"),
                        ("e", "5"),
                        ("f", "6"),
                        ("g", "7"),
                        ("h", "8"),
                        ("i", "9"),
                    ],
                    &[(T, 1.0)],
                ),
            ],
            metadata: Vec::new(),
        };
        let w = write(&req).unwrap();
        assert_eq!(
            w.errors,
            vec![
                SeriesError {
                    index: 0,
                    message: "missing metric name (no __name__ label)".to_owned(),
                    samples: 1
                },
                SeriesError {
                    index: 1,
                    message: "Need at least one tag (metric=m, tags={})".to_owned(),
                    samples: 2
                },
                SeriesError {
                    index: 2,
                    message: "duplicate label name \"a\"".to_owned(),
                    samples: 1
                },
                SeriesError {
                    index: 3,
                    message: "invalid timestamp: 0 ms".to_owned(),
                    samples: 3
                },
                SeriesError {
                    index: 5,
                    message: "Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}".to_owned(),
                    samples: 1
                },
            ]
        );
        // Series 3 keeps its good sample, series 4 drops the empty label.
        assert_eq!(w.series.len(), 2);
        assert_eq!(w.series[0].samples.len(), 1);
        assert_eq!(w.series[1].tags, vec![("job".to_owned(), "x".to_owned())]);
        assert_eq!(w.status(), 400);
        assert!(w.error_text().unwrap().starts_with(
            "series 0: missing metric name (no __name__ label)\nseries 1: Need at least one tag"
        ));
    }

    #[test]
    fn oversize_and_garbage_bodies() {
        let req = pb::WriteRequest {
            timeseries: vec![series(&[("__name__", "m"), ("job", "x")], &[(T, 1.0)])],
            metadata: Vec::new(),
        };
        let body = compress(&req);
        let e = decode_write(&body, 10, &Limits::default()).unwrap_err();
        assert_eq!(e.status, 413);
        assert!(e.client_fault());
        assert!(e.message.ends_with("exceeds the limit of 10 bytes"), "{e}");
        // A header declaring 32 MiB in 5 bytes: refused before allocating.
        let mut lying = Vec::new();
        let mut n = 32u64 << 20;
        while n >= 0x80 {
            lying.push((n as u8) | 0x80);
            n >>= 7;
        }
        lying.push(n as u8);
        lying.push(0);
        let e = decode_write(&lying, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e.message.contains("impossible"), "{e}");
        for garbage in [
            &b""[..],
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"hello world",
            b"\x05\x10hello",
        ] {
            let e = decode_write(garbage, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
            assert_eq!(e.status, 400, "{garbage:?}: {e}");
        }
        // Valid snappy, invalid protobuf.
        for payload in [
            &b"\x0a\x05ab"[..],
            b"\x0b",
            b"\x08",
            b"\x0a\x02\x0a\xff",
            b"\x09",
        ] {
            let body = snap::raw::Encoder::new().compress_vec(payload).unwrap();
            let e = decode_write(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
            assert_eq!(e.status, 400, "{payload:?}");
        }
        // Unknown fields are skipped.
        let mut payload = vec![0x10, 0x05, 0x25, 1, 2, 3, 4];
        payload.extend(req.encode_to_vec());
        let body = snap::raw::Encoder::new().compress_vec(&payload).unwrap();
        let w = decode_write(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap();
        assert_eq!(w.point_count(), 1);
    }

    #[test]
    fn metric_name_mapping_round_trips() {
        for (prom, tsdb) in [
            ("up", "up"),
            ("job:rate5m:sum", "job.rate5m.sum"),
            ("http.server.duration", "http%2Eserver%2Eduration"),
            ("a:b.c%", "a.b%2Ec%25"),
            ("with space", "with%20space"),
        ] {
            assert_eq!(prom_metric_to_opentsdb(prom), tsdb);
            assert_eq!(opentsdb_metric_to_prom(tsdb), prom);
        }
    }

    #[test]
    fn read_request_and_response() {
        let req = pb::ReadRequest {
            queries: vec![pb::Query {
                start_timestamp_ms: T - 60_000,
                end_timestamp_ms: T,
                matchers: vec![
                    pb::LabelMatcher {
                        r#type: pb::MatchType::Eq as i32,
                        name: "__name__".to_owned(),
                        value: "job:rate5m:sum".to_owned(),
                    },
                    pb::LabelMatcher {
                        r#type: pb::MatchType::Re as i32,
                        name: "instance".to_owned(),
                        value: "localhost:.*".to_owned(),
                    },
                    pb::LabelMatcher {
                        r#type: pb::MatchType::Neq as i32,
                        name: "path".to_owned(),
                        value: "/a b".to_owned(),
                    },
                ],
                hints: Some(pb::ReadHints {
                    step_ms: 15_000,
                    ..pb::ReadHints::default()
                }),
            }],
            accepted_response_types: Vec::new(),
        };
        let decoded = decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).unwrap();
        assert_eq!(decoded, req);
        let m: Vec<OpenTsdbMatcher> = decoded.queries[0]
            .matchers
            .iter()
            .map(|m| map_matcher(m).unwrap())
            .collect();
        assert_eq!(
            m,
            vec![
                OpenTsdbMatcher {
                    op: pb::MatchType::Eq,
                    target: MatchTarget::Metric,
                    value: "job.rate5m.sum".to_owned()
                },
                OpenTsdbMatcher {
                    op: pb::MatchType::Re,
                    target: MatchTarget::Tag("instance".to_owned()),
                    value: "localhost:.*".to_owned()
                },
                OpenTsdbMatcher {
                    op: pb::MatchType::Neq,
                    target: MatchTarget::Tag("path".to_owned()),
                    value: "/a%20b".to_owned()
                },
            ]
        );
        let bad = pb::LabelMatcher {
            r#type: 7,
            name: "a".to_owned(),
            value: "b".to_owned(),
        };
        assert_eq!(map_matcher(&bad).unwrap_err().status, 400);

        let ts = series_to_prom(
            "job.rate5m.sum",
            &[("path", "/a%20b"), ("Zone", "eu")],
            [(T, 2.0), (T - 1000, 1.0)],
        );
        assert_eq!(
            ts.labels,
            vec![
                label("Zone", "eu"),
                label("__name__", "job:rate5m:sum"),
                label("path", "/a b")
            ]
        );
        assert_eq!(
            ts.samples,
            vec![
                pb::Sample {
                    value: 1.0,
                    timestamp: T - 1000
                },
                pb::Sample {
                    value: 2.0,
                    timestamp: T
                }
            ]
        );
        let body = encode_read_response(
            &decoded,
            vec![pb::QueryResult {
                timeseries: vec![ts.clone()],
            }],
        )
        .unwrap();
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let resp = pb::ReadResponse::decode(raw.as_slice()).unwrap();
        assert_eq!(resp.results.len(), 1);
        assert_eq!(resp.results[0].timeseries, vec![ts]);
        // Exactly one result per query.
        let e = encode_read_response(&decoded, Vec::new()).unwrap_err();
        assert_eq!(e.status, 500);
        assert!(!e.client_fault());
    }

    #[test]
    fn read_response_types() {
        let mut req = pb::ReadRequest {
            queries: Vec::new(),
            accepted_response_types: vec![
                pb::ResponseType::StreamedXorChunks as i32,
                pb::ResponseType::Samples as i32,
            ],
        };
        assert!(decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).is_ok());
        req.accepted_response_types = vec![pb::ResponseType::StreamedXorChunks as i32];
        let e = decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(decode_read(b"junk", DEFAULT_MAX_DECODED_LEN).is_err());
    }

    #[test]
    fn field_numbers_match_prompb() {
        // Hand-checked bytes: WriteRequest{timeseries{labels{name="a",value="b"},
        // samples{value=1.0,timestamp=2}}}.
        let req = pb::WriteRequest {
            timeseries: vec![series(&[("a", "b")], &[(2, 1.0)])],
            metadata: Vec::new(),
        };
        assert_eq!(
            req.encode_to_vec(),
            vec![
                0x0a, 0x15, // timeseries = 1, 21 bytes
                0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01,
                b'b', // labels = 1 {name = 1, value = 2}
                0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10,
                0x02, // samples = 2 {value = 1 double, timestamp = 2}
            ]
        );
        let m = pb::LabelMatcher {
            r#type: 2,
            name: "n".to_owned(),
            value: "v".to_owned(),
        };
        assert_eq!(
            m.encode_to_vec(),
            vec![0x08, 0x02, 0x12, 0x01, b'n', 0x1a, 0x01, b'v']
        );
        let q = pb::Query {
            start_timestamp_ms: 1,
            end_timestamp_ms: 2,
            matchers: Vec::new(),
            hints: Some(pb::ReadHints::default()),
        };
        assert_eq!(q.encode_to_vec(), vec![0x08, 0x01, 0x10, 0x02, 0x22, 0x00]);
    }
}
