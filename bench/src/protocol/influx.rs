//! InfluxDB line protocol: `measurement,tag=v,… field=v,field=v,… timestamp`.
//!
//! A metric name `a.b.c` is measurement `a.b` and field `c` (split at the last
//! `.`), the inverse of hourglass's `<measurement>.<field>` mapping, so every
//! protocol writes the same OpenTSDB series. One line carries every metric of
//! one host, timestamp and measurement (the TSBS shape: ten fields per `cpu`
//! line); points of a host arrive together from the generator, so the encoder
//! only has to notice when the line key changes. Tags are written sorted by
//! key, as InfluxDB recommends. Integers get the `i` suffix; the two-decimal
//! floats are written with their two decimals.

use std::sync::Arc;

use super::encoder::Encoder;
use super::gzip::gzip_in_place;
use super::text::{TsCache, pod_name, write_value};
use crate::workload::{Point, Value, Workload};

/// Timestamp precision of the lines (`precision=` on HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Nanoseconds (the protocol's default).
    #[default]
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl Precision {
    /// The `precision=` query parameter value.
    pub fn param(self) -> &'static str {
        match self {
            Precision::Ns => "ns",
            Precision::Us => "us",
            Precision::Ms => "ms",
            Precision::S => "s",
        }
    }

    /// A millisecond timestamp in this precision.
    pub fn convert_ms(self, ms: i64) -> i64 {
        match self {
            Precision::Ns => ms.saturating_mul(1_000_000),
            Precision::Us => ms.saturating_mul(1_000),
            Precision::Ms => ms,
            Precision::S => ms.div_euclid(1000),
        }
    }
}

/// Splits a metric name into (measurement, field) at its last `.`; a name
/// without a dot becomes measurement `<name>` with field `value`.
pub fn split_metric(name: &str) -> (&str, &str) {
    name.rsplit_once('.').unwrap_or((name, "value"))
}

/// Pre-rendered line fragments of a workload.
#[derive(Debug)]
pub struct InfluxTemplates {
    /// Measurement index of each metric.
    measurement_of: Vec<usize>,
    /// Measurement names (escaped).
    measurements: Vec<Vec<u8>>,
    /// `<field>=` per metric (escaped).
    field_eq: Vec<Vec<u8>>,
    /// Per host: sorted `,k=v` tags with keys before `pod`, and after it.
    host_tags: Vec<(Vec<u8>, Vec<u8>)>,
    pods: bool,
}

/// Escapes `,`, `=` and space with a backslash, as tag keys, tag values and
/// field keys need; measurements, where `=` is not special, use
/// [`escape_measurement`].
fn escape_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, ',' | '=' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn escape_measurement(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, ',' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl InfluxTemplates {
    pub fn new(workload: &Workload) -> Self {
        let mut measurements: Vec<Vec<u8>> = Vec::new();
        let mut measurement_of = Vec::new();
        let mut field_eq = Vec::new();
        for m in &workload.metrics {
            let (measurement, field) = split_metric(&m.name);
            let rendered = escape_measurement(measurement).into_bytes();
            let idx = match measurements.iter().position(|x| *x == rendered) {
                Some(i) => i,
                None => {
                    measurements.push(rendered);
                    measurements.len() - 1
                }
            };
            measurement_of.push(idx);
            field_eq.push(format!("{}=", escape_name(field)).into_bytes());
        }
        let host_tags = workload
            .hosts
            .iter()
            .map(|h| {
                let mut tags = h.tags.clone();
                tags.sort();
                let (mut before, mut after) = (Vec::new(), Vec::new());
                for (k, v) in &tags {
                    let part = if k.as_str() < "pod" {
                        &mut before
                    } else {
                        &mut after
                    };
                    part.extend_from_slice(
                        format!(",{}={}", escape_name(k), escape_name(v)).as_bytes(),
                    );
                }
                (before, after)
            })
            .collect();
        InfluxTemplates {
            measurement_of,
            measurements,
            field_eq,
            host_tags,
            pods: workload.has_pods(),
        }
    }
}

/// The key of the line being written: points with the same key share a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineKey {
    host: u32,
    pod: u32,
    measurement: usize,
    ts_ms: i64,
}

/// Encodes points as line protocol.
#[derive(Debug)]
pub struct InfluxEncoder {
    templates: Arc<InfluxTemplates>,
    precision: Precision,
    gzip: bool,
    open: Option<LineKey>,
    ts: TsCache,
}

impl InfluxEncoder {
    pub fn new(templates: Arc<InfluxTemplates>, precision: Precision, gzip: bool) -> Self {
        InfluxEncoder {
            templates,
            precision,
            gzip,
            open: None,
            ts: TsCache::default(),
        }
    }

    fn close_line(&mut self, out: &mut Vec<u8>) {
        if let Some(key) = self.open.take() {
            out.push(b' ');
            let precision = self.precision;
            out.extend_from_slice(self.ts.get(key.ts_ms, |ms| precision.convert_ms(ms)));
            out.push(b'\n');
        }
    }
}

impl Encoder for InfluxEncoder {
    fn begin_batch(&mut self, _out: &mut Vec<u8>) {
        self.open = None;
    }

    fn encode(&mut self, p: &Point, out: &mut Vec<u8>) {
        let templates = Arc::clone(&self.templates);
        let t = &*templates;
        let key = LineKey {
            host: p.host,
            pod: p.pod,
            measurement: t.measurement_of[p.metric as usize],
            ts_ms: p.ts_ms,
        };
        if self.open == Some(key) {
            out.push(b',');
        } else {
            self.close_line(out);
            out.extend_from_slice(&t.measurements[key.measurement]);
            let (before, after) = &t.host_tags[p.host as usize];
            out.extend_from_slice(before);
            if t.pods {
                out.extend_from_slice(b",pod=");
                pod_name(p.host, p.pod, out);
            }
            out.extend_from_slice(after);
            out.push(b' ');
            self.open = Some(key);
        }
        out.extend_from_slice(&t.field_eq[p.metric as usize]);
        write_value(out, p.value);
        if matches!(p.value, Value::Int(_)) {
            out.push(b'i');
        }
    }

    fn end_batch(&mut self, out: &mut Vec<u8>) {
        self.close_line(out);
        if self.gzip {
            gzip_in_place(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testutil::{expected_points, generated_batches, parsed_point};
    use crate::workload::tests::spec;
    use crate::workload::{Kind, WorkloadSpec};
    use hourglass_ingest::Limits;
    use hourglass_ingest::influx::{Precision as P, parse_body};

    fn workload(kind: Kind) -> Arc<Workload> {
        Arc::new(Workload::new(WorkloadSpec {
            tags_per_host: 5,
            churn: 2,
            ..spec(kind, 5, 10, 4, 11)
        }))
    }

    fn theirs(p: Precision) -> P {
        match p {
            Precision::Ns => P::Nanoseconds,
            Precision::Us => P::Microseconds,
            Precision::Ms => P::Milliseconds,
            Precision::S => P::Seconds,
        }
    }

    /// Every body parses with hourglass's own line-protocol parser, without
    /// a refused line, into exactly the generated points.
    #[test]
    fn round_trip_through_our_parser() {
        for kind in [Kind::Cpu, Kind::Devops, Kind::HighCardinality] {
            for precision in [Precision::Ns, Precision::Us, Precision::Ms, Precision::S] {
                // Odd batch sizes split a host's fields over two lines.
                for batch in [7, 1000] {
                    let w = workload(kind);
                    let mut enc =
                        InfluxEncoder::new(Arc::new(InfluxTemplates::new(&w)), precision, false);
                    let mut got = Vec::new();
                    for body in generated_batches(&w, &mut enc, batch) {
                        let parsed = parse_body(&body, theirs(precision), 0, &Limits::default());
                        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
                        got.extend(parsed.points().map(|p| parsed_point(&p)));
                    }
                    assert_eq!(got, expected_points(&w), "{kind:?} {precision:?} {batch}");
                }
            }
        }
    }

    #[test]
    fn cpu_line_shape() {
        let w = workload(Kind::Cpu);
        let mut enc = InfluxEncoder::new(Arc::new(InfluxTemplates::new(&w)), Precision::Ns, false);
        let bodies = generated_batches(&w, &mut enc, 1000);
        let text = String::from_utf8(bodies.concat()).expect("ascii");
        let first = text.lines().next().expect("a line");
        assert!(
            first.starts_with("cpu,arch="),
            "tags sorted by key: {first}"
        );
        let (_, rest) = first.split_once(' ').expect("fields");
        let (fields, ts) = rest.split_once(' ').expect("timestamp");
        assert_eq!(ts, "1700000000000000000");
        assert_eq!(fields.split(',').count(), 10);
        assert!(fields.starts_with("usage_user="));
        // One line per host and timestamp.
        assert_eq!(text.lines().count(), 5 * 4);
    }

    #[test]
    fn integers_get_the_i_suffix() {
        let w = workload(Kind::Devops);
        let mut enc = InfluxEncoder::new(Arc::new(InfluxTemplates::new(&w)), Precision::S, false);
        let text =
            String::from_utf8(generated_batches(&w, &mut enc, 1000).concat()).expect("ascii");
        assert!(text.contains("i,") || text.contains("i "), "{text}");
        assert_eq!(split_metric("bench.mem.used"), ("bench.mem", "used"));
        assert_eq!(split_metric("plain"), ("plain", "value"));
    }
}
