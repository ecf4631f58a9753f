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
//!   once, so memory is the decoded body plus about 24 bytes per stored sample and each stored
//!   series' names (one `String`; labels and samples are read borrowing from the body). The
//!   decoded body's buffer is kept by the thread for its next body, up to
//!   [`REUSED_BUFFER_MAX`] each and [`REUSED_BUFFERS_TOTAL`] across threads.
//! * Known series: [`decode_write_with`] asks its caller about each series' label records as
//!   sent before decoding them; a series the caller resolved before keeps only its samples
//!   ([`RemoteWrite::known`]), so that the steady state (the same series, in the same bytes, in
//!   every request) neither decodes nor maps a name.
//! * Mapping: `__name__` → metric with `:` → `.` (Prometheus classic names never contain `.`, so
//!   this reverses exactly; a literal `.` — possible in Prometheus 3 UTF-8 names — is written
//!   `%2E`), then the [`crate::names`] `%XX` rule for anything else OpenTSDB forbids. Other labels
//!   → tags, keys and values mapped with [`crate::names::encode_name`]. A label with an empty
//!   value is absent (Prometheus semantics).
//! * Values: doubles as OpenTSDB classifies them ([`crate::Value::from_double`]: a float
//!   when exact in `f32`, else a double). NaN, ±Inf and Prometheus' staleness markers (NaN
//!   with bits `0x7ff0000000000002`, [`is_stale_marker`]) are stored too, bit for bit, so
//!   that PromQL ends a stopped series where Prometheus does; OpenTSDB's readers never see
//!   a staleness marker.
//! * Timestamps: milliseconds, checked with [`crate::timestamp::timestamp_from_millis`].
//! * Exemplars and native histograms are ignored and counted; metadata-only requests (no
//!   series) are fine and yield no points.
//! * Errors: a body that does not decode fails as a whole ([`PromError`], 400 or 413: the
//!   client's fault, Prometheus drops the batch instead of retrying). A series that cannot be
//!   stored (no `__name__`, no other label, too many labels, a duplicate label name) or a sample
//!   whose timestamp is refused is reported in [`RemoteWrite::errors`] (the first
//!   [`crate::refusals::MAX_KEPT`]; the others are counted, so that many tiny bad series cost
//!   no more than their count); the rest is written and [`RemoteWrite::status`] answers 400 so
//!   that Prometheus logs it and does not resend.
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

mod error;
mod metric_names;
pub mod pb;
mod read;
mod snappy;
mod wire;
mod write;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests;

pub use error::PromError;
pub use metric_names::{opentsdb_metric_to_prom, prom_metric_to_opentsdb};
pub use read::{
    MatchTarget, OpenTsdbMatcher, decode_read, encode_read_response, map_matcher,
    prometheus_safe_labels, series_to_prom,
};
pub use snappy::{
    DEFAULT_MAX_DECODED_LEN, REUSED_BUFFER_MAX, REUSED_BUFFERS_TOTAL, declared_len, decompress,
    kept_buffer_bytes,
};
pub use write::{
    KnownSeries, LOOKUP_CHUNK, PromSeries, RemoteWrite, STALE_NAN_BITS, SeenLabels, SeriesError,
    decode_write, decode_write_with, is_stale_marker,
};
