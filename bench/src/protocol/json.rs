//! OpenTSDB HTTP `/api/put` bodies: a JSON array of
//! `{"metric":…,"timestamp":…,"value":…,"tags":{…}}` objects, optionally
//! gzip-compressed (sent with `Content-Encoding: gzip`).
//!
//! As for telnet, the metric and tag parts are rendered once per metric and
//! per host, so names are escaped for JSON once, when the templates are
//! built.

use std::sync::Arc;

use super::encoder::Encoder;
use super::gzip::gzip_in_place;
use super::text::{TsCache, pod_name, write_value};
use crate::workload::{Point, Workload};

/// Pre-rendered JSON fragments of a workload.
#[derive(Debug)]
pub struct JsonTemplates {
    /// `{"metric":"<name>","timestamp":` per metric.
    metric_prefix: Vec<Vec<u8>>,
    /// `,"tags":{"k":"v",…` per host (object left open for the pod tag).
    host_tags: Vec<Vec<u8>>,
    ms: bool,
    pods: bool,
}

/// `s` as a JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

impl JsonTemplates {
    pub fn new(workload: &Workload) -> Self {
        let metric_prefix = workload
            .metrics
            .iter()
            .map(|m| format!("{{\"metric\":{},\"timestamp\":", quoted(&m.name)).into_bytes())
            .collect();
        let host_tags = workload
            .hosts
            .iter()
            .map(|h| {
                let tags: Vec<String> = h
                    .tags
                    .iter()
                    .map(|(k, v)| format!("{}:{}", quoted(k), quoted(v)))
                    .collect();
                format!(",\"tags\":{{{}", tags.join(",")).into_bytes()
            })
            .collect();
        JsonTemplates {
            metric_prefix,
            host_tags,
            ms: workload.ts_unit() == crate::workload::TsUnit::Milliseconds,
            pods: workload.has_pods(),
        }
    }
}

/// Encodes points as one JSON array per batch.
#[derive(Debug)]
pub struct JsonEncoder {
    templates: Arc<JsonTemplates>,
    gzip: bool,
    first: bool,
    ts: TsCache,
}

impl JsonEncoder {
    pub fn new(templates: Arc<JsonTemplates>, gzip: bool) -> Self {
        JsonEncoder {
            templates,
            gzip,
            first: true,
            ts: TsCache::default(),
        }
    }
}

impl Encoder for JsonEncoder {
    fn begin_batch(&mut self, out: &mut Vec<u8>) {
        out.push(b'[');
        self.first = true;
    }

    fn encode(&mut self, p: &Point, out: &mut Vec<u8>) {
        let t = &*self.templates;
        if !self.first {
            out.push(b',');
        }
        self.first = false;
        out.extend_from_slice(&t.metric_prefix[p.metric as usize]);
        let ms = t.ms;
        out.extend_from_slice(
            self.ts
                .get(p.ts_ms, |v| if ms { v } else { v.div_euclid(1000) }),
        );
        out.extend_from_slice(b",\"value\":");
        write_value(out, p.value);
        out.extend_from_slice(&t.host_tags[p.host as usize]);
        if t.pods {
            out.extend_from_slice(b",\"pod\":\"");
            pod_name(p.host, p.pod, out);
            out.push(b'"');
        }
        out.extend_from_slice(b"}}");
    }

    fn end_batch(&mut self, out: &mut Vec<u8>) {
        out.push(b']');
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
    use hourglass_ingest::{Limits, decode_put_body};
    use std::io::Read as _;

    fn workload(kind: Kind, interval_ms: i64) -> Arc<Workload> {
        Arc::new(Workload::new(WorkloadSpec {
            tags_per_host: 4,
            interval_ms,
            churn: 2,
            ..spec(kind, 5, 10, 4, 3)
        }))
    }

    fn decode(bodies: &[Vec<u8>]) -> Vec<crate::protocol::testutil::Canon> {
        let mut got = Vec::new();
        for body in bodies {
            let points = decode_put_body(body).expect("valid /api/put body");
            for jp in points {
                let p = jp.to_point(&Limits::default()).expect("valid point");
                got.push(parsed_point(&p));
            }
        }
        got
    }

    #[test]
    fn round_trip_through_our_decoder() {
        for kind in [Kind::Cpu, Kind::Devops, Kind::HighCardinality] {
            for interval in [10_000, 500] {
                let w = workload(kind, interval);
                let mut enc = JsonEncoder::new(Arc::new(JsonTemplates::new(&w)), false);
                let bodies = generated_batches(&w, &mut enc, 13);
                assert_eq!(decode(&bodies), expected_points(&w), "{kind:?} {interval}");
            }
        }
    }

    #[test]
    fn gzip_bodies_decode_too() {
        let w = workload(Kind::Cpu, 10_000);
        let mut enc = JsonEncoder::new(Arc::new(JsonTemplates::new(&w)), true);
        let bodies: Vec<Vec<u8>> = generated_batches(&w, &mut enc, 50)
            .into_iter()
            .map(|gz| {
                assert_eq!(&gz[..2], &[0x1f, 0x8b]);
                let mut plain = Vec::new();
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut plain)
                    .expect("gunzip");
                plain
            })
            .collect();
        assert_eq!(decode(&bodies), expected_points(&w));
    }

    #[test]
    fn body_shape() {
        let w = workload(Kind::Cpu, 10_000);
        let mut enc = JsonEncoder::new(Arc::new(JsonTemplates::new(&w)), false);
        let bodies = generated_batches(&w, &mut enc, 2);
        let v: serde_json::Value = serde_json::from_slice(&bodies[0]).expect("json");
        assert_eq!(v.as_array().map(Vec::len), Some(2));
        assert_eq!(v[0]["metric"], "cpu.usage_user");
        assert_eq!(v[0]["timestamp"], 1_700_000_000);
        assert_eq!(v[0]["tags"]["hostname"], "host_0");
        assert!(v[0]["value"].is_f64());
    }
}
