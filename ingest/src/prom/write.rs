//! Remote write: a `WriteRequest` body decoded series by series into storable OpenTSDB points
//! ([`decode_write`]).

use std::borrow::Cow;
use std::ops::Range;

use prost::Message;

use super::error::PromError;
use super::metric_names::prom_metric_to_opentsdb;
use super::pb;
use super::snappy::with_decompressed;
use super::wire::{Field, FieldReader, expect_bytes, wrong_wire_type};
use crate::limits::Limits;
use crate::names::encode_name;
use crate::point::{Point, Timestamp, Value};
use crate::refusals::Refusals;
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
    /// The OpenTSDB metric, then each tag's key and value, back to back: one allocation for
    /// all of the series' names instead of one per name, on every series of every request.
    text: String,
    /// Where the metric ends in `text`.
    metric_end: usize,
    /// Where each tag's key and value end in `text`, in label order.
    tag_ends: Vec<(usize, usize)>,
    /// Checked timestamp and classified value per stored sample.
    pub samples: Vec<(Timestamp, Value)>,
    /// The caller's key for the series' labels as sent ([`SeenLabels::New`]; 0 from
    /// [`decode_write`]), to remember the series by once it is resolved.
    pub labels_key: u128,
}

impl PromSeries {
    /// The OpenTSDB metric name.
    pub fn metric(&self) -> &str {
        self.text.get(..self.metric_end).unwrap_or_default()
    }

    /// The OpenTSDB tags, in label order.
    pub fn tags(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let mut start = self.metric_end;
        self.tag_ends.iter().map(move |&(key_end, value_end)| {
            let key = self.text.get(start..key_end).unwrap_or_default();
            let value = self.text.get(key_end..value_end).unwrap_or_default();
            start = value_end;
            (key, value)
        })
    }

    /// The series' points.
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.samples.iter().map(move |&(timestamp, value)| Point {
            metric: Cow::Borrowed(self.metric()),
            timestamp,
            value,
            tags: self
                .tags()
                .map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v)))
                .collect(),
        })
    }
}

/// What a caller of [`decode_write_with`] knows of a series by its label records, the
/// bytes exactly as sent: the steady state of a Prometheus server is the same series, in
/// the same bytes, in every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeenLabels {
    /// A series the caller resolved before, by its handle: the labels are neither decoded
    /// nor mapped again (the same bytes were accepted before, so they would be again).
    Known(u32),
    /// Labels the caller has not seen; its key for them, kept in [`PromSeries::labels_key`].
    New(u128),
}

/// A series whose labels the caller knew ([`SeenLabels::Known`]), with its storable samples.
#[derive(Clone, Debug, PartialEq)]
pub struct KnownSeries {
    /// The caller's handle for the series.
    pub handle: u32,
    /// Index of the series in the request.
    pub index: usize,
    /// Checked timestamp and classified value per stored sample.
    pub samples: Vec<(Timestamp, Value)>,
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
    /// Series with at least one storable sample, named in full.
    pub series: Vec<PromSeries>,
    /// Series with at least one storable sample that the caller knew by their labels.
    pub known: Vec<KnownSeries>,
    /// Series refused, or with samples refused: the first
    /// [`MAX_KEPT`](crate::refusals::MAX_KEPT) kept, every one counted.
    pub errors: Refusals<SeriesError>,
    /// Every sample refused.
    pub refused_samples: usize,
    /// Exemplars ignored.
    pub exemplars: usize,
    /// Native histogram samples ignored.
    pub histograms: usize,
    /// Metadata entries ignored.
    pub metadata: usize,
}

impl RemoteWrite {
    /// Every storable point of the series named in full (`series`; the points of `known`
    /// series are for their caller to name).
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.series.iter().flat_map(PromSeries::points)
    }

    /// Number of storable points, of named and known series.
    pub fn point_count(&self) -> usize {
        let named: usize = self.series.iter().map(|s| s.samples.len()).sum();
        named + self.known.iter().map(|s| s.samples.len()).sum::<usize>()
    }

    /// The status to answer once the points are written: 204, or 400 when some series or
    /// samples were refused (resending would not help, so Prometheus must not retry).
    pub fn status(&self) -> u16 {
        if self.errors.count() == 0 { 204 } else { 400 }
    }

    /// The refusals, one line each (`series <i>: <message>`), then how many more were
    /// refused, for a 400 body; `None` if none.
    pub fn error_text(&self) -> Option<String> {
        self.errors
            .text(|e| format!("series {}: {}", e.index, e.message), "series")
    }

    /// Counts a refusal and its samples, and keeps it while fewer than
    /// [`MAX_KEPT`](crate::refusals::MAX_KEPT) are kept: a request of many tiny bad series
    /// must not cost many times its size.
    fn refuse(&mut self, error: SeriesError) {
        self.refused_samples += error.samples;
        self.errors.push(error);
    }
}

/// Series whose label records are handed to the caller at once ([`decode_write_with`]):
/// the lookups' memory stays bounded however many series a request holds.
pub const LOOKUP_CHUNK: usize = 4096;

/// Decodes a remote-write body (snappy block of a `WriteRequest`) into storable series.
/// `max_decoded_len` bounds the uncompressed size ([`super::DEFAULT_MAX_DECODED_LEN`] is
/// Prometheus's).
pub fn decode_write(
    body: &[u8],
    max_decoded_len: usize,
    limits: &Limits,
) -> Result<RemoteWrite, PromError> {
    decode_write_with(body, max_decoded_len, limits, |records| {
        vec![SeenLabels::New(0); records.len()]
    })
}

/// [`decode_write`], first telling `seen` the label records of the series (the bytes of
/// each series' `labels` fields as sent, back to back), in request order, up to
/// [`LOOKUP_CHUNK`] series at a time; it answers for each series whether the caller knows
/// it. A known series is put in [`RemoteWrite::known`] with its samples checked, its labels
/// neither decoded nor mapped.
pub fn decode_write_with(
    body: &[u8],
    max_decoded_len: usize,
    limits: &Limits,
    mut seen: impl FnMut(&[&[u8]]) -> Vec<SeenLabels>,
) -> Result<RemoteWrite, PromError> {
    with_decompressed(body, max_decoded_len, |raw| {
        decode_request(raw, limits, &mut seen)
    })
}

/// [`decode_write_with`] on the decompressed `WriteRequest`.
fn decode_request(
    raw: &[u8],
    limits: &Limits,
    seen: &mut impl FnMut(&[&[u8]]) -> Vec<SeenLabels>,
) -> Result<RemoteWrite, PromError> {
    let mut out = RemoteWrite::default();
    let mut fields = FieldReader::new(raw);
    let mut scratch = Scratch::default();
    let mut chunk: Vec<&[u8]> = Vec::new();
    let mut copies = Vec::new();
    let mut index = 0;
    let mut more = true;
    while more {
        chunk.clear();
        while chunk.len() < LOOKUP_CHUNK {
            let Some((number, field)) = fields.next()? else {
                more = false;
                break;
            };
            match number {
                1 => chunk.push(expect_bytes("WriteRequest", number, field)?),
                3 => {
                    let bytes = expect_bytes("WriteRequest", number, field)?;
                    pb::MetricMetadata::decode(bytes)
                        .map_err(|e| PromError::bad_request(format!("protobuf: metadata: {e}")))?;
                    out.metadata += 1;
                }
                _ => {}
            }
        }
        if chunk.is_empty() {
            continue;
        }
        copies.clear();
        let spans = chunk
            .iter()
            .map(|series| label_records(series, &mut copies))
            .collect::<Result<Vec<Records>, PromError>>()?;
        let records: Vec<&[u8]> = spans
            .into_iter()
            .zip(&chunk)
            .map(|(span, series)| match span {
                Records::Body(r) => series.get(r).unwrap_or_default(),
                Records::Copied(r) => copies.get(r).unwrap_or_default(),
            })
            .collect();
        let answers = seen(&records);
        drop(records);
        if out.known.capacity() == 0 {
            reserve_known(&mut out.known, &chunk, &answers, fields.rest().len());
        }
        for (i, series) in chunk.iter().enumerate() {
            let seen = answers.get(i).copied().unwrap_or(SeenLabels::New(0));
            decode_series(index, series, limits, seen, &mut scratch, &mut out)?;
            index += 1;
        }
    }
    Ok(out)
}

/// Reserves the known series' list once, at the first chunk with a known series, for as many
/// known series per byte in the rest of the body as in that chunk: grown by doubling, the list
/// was a tenth of a remote-write ingest's page faults (issue 18). Scaled by the chunk's known
/// series and their bytes, so that a body of new or empty series reserves nothing for them.
fn reserve_known(
    known: &mut Vec<KnownSeries>,
    chunk: &[&[u8]],
    answers: &[SeenLabels],
    rest_bytes: usize,
) {
    let found = answers
        .iter()
        .filter(|a| matches!(a, SeenLabels::Known(_)))
        .count();
    if found == 0 {
        return;
    }
    let chunk_bytes = chunk.iter().map(|s| s.len()).sum::<usize>().max(1);
    known.reserve_exact(found + rest_bytes.saturating_mul(found) / chunk_bytes);
}

/// A series' labels and samples as read, borrowed from the decoded body, and its mapped
/// names: kept across the series of a request so that decoding one allocates nothing but
/// what it stores.
#[derive(Default)]
struct Scratch<'a> {
    /// Each label field's payload.
    label_fields: Vec<&'a [u8]>,
    labels: Vec<(&'a str, &'a str)>,
    samples: Vec<(i64, f64)>,
    names: Vec<&'a str>,
    tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// Where a series' label records are: in its bytes (as Prometheus sends them, one after
/// another) or, when other fields came between them, copied back to back.
enum Records {
    Body(Range<usize>),
    Copied(Range<usize>),
}

/// A series' label records (the first pass over its fields); copies are appended to
/// `copies`.
fn label_records(series: &[u8], copies: &mut Vec<u8>) -> Result<Records, PromError> {
    let mut span: Option<Range<usize>> = None;
    let mut fields = FieldReader::new(series);
    loop {
        let start = series.len() - fields.rest().len();
        let Some((number, field)) = fields.next()? else {
            return Ok(Records::Body(span.unwrap_or(0..0)));
        };
        if number != 1 {
            continue;
        }
        expect_bytes("TimeSeries", number, field)?;
        let end = series.len() - fields.rest().len();
        match &mut span {
            None => span = Some(start..end),
            Some(r) if r.end == start => r.end = end,
            Some(_) => break,
        }
    }
    let first = copies.len();
    let mut fields = FieldReader::new(series);
    loop {
        let start = series.len() - fields.rest().len();
        let Some((number, _)) = fields.next()? else {
            break;
        };
        if number == 1 {
            let end = series.len() - fields.rest().len();
            copies.extend_from_slice(series.get(start..end).unwrap_or_default());
        }
    }
    Ok(Records::Copied(first..copies.len()))
}

fn decode_series<'a>(
    index: usize,
    bytes: &'a [u8],
    limits: &Limits,
    seen: SeenLabels,
    scratch: &mut Scratch<'a>,
    out: &mut RemoteWrite,
) -> Result<(), PromError> {
    scratch.label_fields.clear();
    scratch.labels.clear();
    scratch.samples.clear();
    let mut fields = FieldReader::new(bytes);
    while let Some((number, field)) = fields.next()? {
        match number {
            1 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                scratch.label_fields.push(b);
            }
            2 => {
                let b = expect_bytes("TimeSeries", number, field)?;
                scratch.samples.push(decode_sample(b)?);
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
    let labels_key = match seen {
        SeenLabels::Known(handle) => {
            let samples = checked_samples(index, &scratch.samples, out);
            if !samples.is_empty() {
                out.known.push(KnownSeries {
                    handle,
                    index,
                    samples,
                });
            }
            return Ok(());
        }
        SeenLabels::New(key) => key,
    };
    for field in &scratch.label_fields {
        scratch.labels.push(decode_label(field)?);
    }
    let (text, metric_end, tag_ends) = match map_labels(scratch, limits) {
        Ok(mapped) => mapped,
        Err(message) => {
            out.refuse(SeriesError {
                index,
                message,
                samples: scratch.samples.len(),
            });
            return Ok(());
        }
    };
    let samples = checked_samples(index, &scratch.samples, out);
    if !samples.is_empty() {
        out.series.push(PromSeries {
            text,
            metric_end,
            tag_ends,
            samples,
            labels_key,
        });
    }
    Ok(())
}

/// The samples whose timestamps are storable; the others are reported to `out`
/// (once for the series, with their count).
fn checked_samples(
    index: usize,
    samples: &[(i64, f64)],
    out: &mut RemoteWrite,
) -> Vec<(Timestamp, Value)> {
    let mut stored = Vec::with_capacity(samples.len());
    let mut refused: Option<SeriesError> = None;
    for &(timestamp, value) in samples {
        // NaN (the staleness marker among them) keeps its bits as a double;
        // ±Inf is an exact f32 like any other.
        match timestamp_from_millis(timestamp) {
            Ok(ts) => stored.push((ts, Value::from_double(value))),
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
    if let Some(refused) = refused {
        out.refuse(refused);
    }
    stored
}

/// `Label{name=1, value=2}`, as prost reads it (the last of a repeated field wins, unknown
/// fields are skipped), borrowing both strings.
pub(super) fn decode_label(bytes: &[u8]) -> Result<(&str, &str), PromError> {
    let (mut name, mut value) = ("", "");
    let mut fields = FieldReader::new(bytes);
    while let Some((number, field)) = fields.next()? {
        let slot = match number {
            1 => &mut name,
            2 => &mut value,
            _ => continue,
        };
        let text = expect_bytes("Label", number, field)?;
        *slot = std::str::from_utf8(text).map_err(|_| {
            PromError::bad_request(format!(
                "protobuf: label {}: not UTF-8",
                if number == 1 { "name" } else { "value" }
            ))
        })?;
    }
    Ok((name, value))
}

/// `Sample{value=1 double, timestamp=2 int64}`, as prost reads it: `(timestamp, value)`.
pub(super) fn decode_sample(bytes: &[u8]) -> Result<(i64, f64), PromError> {
    // As every Prometheus sends it: the value's field, then the timestamp's, once each.
    if let [0x09, b0, b1, b2, b3, b4, b5, b6, b7, 0x10, timestamp @ ..] = bytes
        && let Some(raw) = FieldReader::new(timestamp).only_varint()
    {
        let value = f64::from_bits(u64::from_le_bytes([*b0, *b1, *b2, *b3, *b4, *b5, *b6, *b7]));
        return Ok((raw as i64, value));
    }
    let (mut timestamp, mut value) = (0, 0.0);
    let mut fields = FieldReader::new(bytes);
    while let Some((number, field)) = fields.next()? {
        match (number, field) {
            (1, Field::Fixed64(bits)) => value = f64::from_bits(bits),
            // int64 is the varint's 64 bits, two's complement.
            (2, Field::Varint(raw)) => timestamp = raw as i64,
            (1 | 2, _) => return Err(wrong_wire_type("Sample", number)),
            _ => {}
        }
    }
    Ok((timestamp, value))
}

/// The series' metric and tags mapped onto OpenTSDB names and checked, as
/// [`PromSeries`]' `text`, `metric_end` and `tag_ends`.
type Mapped = (String, usize, Vec<(usize, usize)>);

fn map_labels(scratch: &mut Scratch<'_>, limits: &Limits) -> Result<Mapped, String> {
    // Prometheus sends labels sorted by name: then a duplicate is next to its twin.
    let labels = &scratch.labels;
    let duplicate = if labels.windows(2).all(|w| w[0].0 <= w[1].0) {
        labels.windows(2).find(|w| w[0].0 == w[1].0).map(|w| w[0].0)
    } else {
        scratch.names.clear();
        scratch.names.extend(labels.iter().map(|l| l.0));
        scratch.names.sort_unstable();
        scratch
            .names
            .windows(2)
            .find(|w| w[0] == w[1])
            .map(|w| w[0])
    };
    if let Some(name) = duplicate {
        return Err(format!("duplicate label name {name:?}"));
    }
    let mut metric = None;
    scratch.tags.clear();
    for &(name, value) in labels {
        if value.is_empty() {
            continue;
        }
        if name == "__name__" {
            metric = Some(prom_metric_to_opentsdb(value));
        } else {
            scratch.tags.push((encode_name(name), encode_name(value)));
        }
    }
    let metric = metric.ok_or_else(|| "missing metric name (no __name__ label)".to_owned())?;
    check_series(&metric, &scratch.tags, limits).map_err(|e| e.to_string())?;
    let len = metric.len()
        + scratch
            .tags
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let mut text = String::with_capacity(len);
    text.push_str(&metric);
    let metric_end = text.len();
    let mut tag_ends = Vec::with_capacity(scratch.tags.len());
    for (key, value) in &scratch.tags {
        text.push_str(key);
        let key_end = text.len();
        text.push_str(value);
        tag_ends.push((key_end, text.len()));
    }
    Ok((text, metric_end, tag_ends))
}
