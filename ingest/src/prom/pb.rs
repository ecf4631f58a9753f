//! The protobuf messages of `prompb` (package `prometheus`), hand-derived with their official
//! field numbers (`prompb/remote.proto`, `prompb/types.proto`).

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
