//! Remote read: the `ReadRequest` ([`decode_read`]), its matchers in OpenTSDB terms
//! ([`map_matcher`]), stored series as Prometheus `TimeSeries` ([`series_to_prom`],
//! [`prometheus_safe_labels`]) and the `SAMPLES` response ([`encode_read_response`]).

use prost::Message;

use super::error::PromError;
use super::metric_names::{opentsdb_metric_to_prom, prom_metric_to_opentsdb};
use super::pb;
use super::snappy::decompress;
use crate::names::{decode_name, encode_name};

/// Decodes a remote-read body (snappy block of a `ReadRequest`) and checks that a `SAMPLES`
/// response is acceptable to the client.
pub fn decode_read(body: &[u8], max_decoded_len: usize) -> Result<pb::ReadRequest, PromError> {
    let raw = decompress(body, max_decoded_len)?;
    let request = pb::ReadRequest::decode(raw.as_slice())
        .map_err(|e| PromError::bad_request(format!("protobuf: {e}")))?;
    let samples = pb::ResponseType::Samples as i32;
    if !request.accepted_response_types.is_empty()
        && !request.accepted_response_types.contains(&samples)
    {
        return Err(PromError::bad_request(
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
pub fn map_matcher(matcher: &pb::LabelMatcher) -> Result<OpenTsdbMatcher, PromError> {
    let op = pb::MatchType::try_from(matcher.r#type)
        .map_err(|_| PromError::bad_request(format!("unknown matcher type {}", matcher.r#type)))?;
    let is_metric = matcher.name == "__name__";
    let value = match op {
        pb::MatchType::Eq | pb::MatchType::Neq if is_metric => {
            prom_metric_to_opentsdb(&matcher.value).into_owned()
        }
        pb::MatchType::Eq | pb::MatchType::Neq => encode_name(&matcher.value).into_owned(),
        pb::MatchType::Re | pb::MatchType::Nre => matcher.value.clone(),
    };
    let target = if is_metric {
        MatchTarget::Metric
    } else {
        MatchTarget::Tag(encode_name(&matcher.name).into_owned())
    };
    Ok(OpenTsdbMatcher { op, target, value })
}
