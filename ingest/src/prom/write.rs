//! Remote write: a `WriteRequest` body decoded series by series into storable OpenTSDB points
//! ([`decode_write`]).

use std::borrow::Cow;

use prost::Message;

use super::error::PromError;
use super::metric_names::prom_metric_to_opentsdb;
use super::pb;
use super::snappy::decompress;
use super::wire::{FieldReader, expect_bytes};
use crate::limits::Limits;
use crate::names::encode_name;
use crate::point::{Point, Timestamp, Value};
use crate::timestamp::timestamp_from_millis;
use crate::validate::check_series;

/// The NaN bit pattern Prometheus writes as a staleness marker.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether a sample is Prometheus' staleness marker: stored bit for bit, it
/// ends a series for PromQL and is never a value for OpenTSDB's readers.
#[inline]
pub fn is_stale_marker(value: f64) -> bool {
    value.to_bits() == STALE_NAN_BITS
}

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

/// Decodes a remote-write body (snappy block of a `WriteRequest`) into storable series.
/// `max_decoded_len` bounds the uncompressed size ([`super::DEFAULT_MAX_DECODED_LEN`] is
/// Prometheus's).
pub fn decode_write(
    body: &[u8],
    max_decoded_len: usize,
    limits: &Limits,
) -> Result<RemoteWrite, PromError> {
    let raw = decompress(body, max_decoded_len)?;
    let mut out = RemoteWrite::default();
    let mut fields = FieldReader::new(&raw);
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
                    .map_err(|e| PromError::bad_request(format!("protobuf: metadata: {e}")))?;
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
    let mut fields = FieldReader::new(bytes);
    while let Some((number, field)) = fields.next()? {
        match number {
            1 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                labels.push(
                    pb::Label::decode(b)
                        .map_err(|e| PromError::bad_request(format!("protobuf: label: {e}")))?,
                );
            }
            2 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                samples.push(
                    pb::Sample::decode(b)
                        .map_err(|e| PromError::bad_request(format!("protobuf: sample: {e}")))?,
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
        // NaN (the staleness marker among them) keeps its bits as a double;
        // ±Inf is an exact f32 like any other.
        match timestamp_from_millis(s.timestamp) {
            Ok(ts) => stored.push((ts, Value::from_double(s.value))),
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
