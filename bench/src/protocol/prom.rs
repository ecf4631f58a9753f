//! Prometheus remote write: a snappy *block* of a protobuf
//! `prometheus.WriteRequest` (the `prompb` messages of `hourglass-ingest`).
//!
//! A batch's points are grouped by series (labels sorted by name, as the
//! remote-write spec requires; samples in time order). Metric names are
//! written in Prometheus form with hourglass's own reverse mapping (`.` → `:`,
//! so `cpu.usage_user` is sent as `cpu:usage_user` and stored by hourglass as
//! `cpu.usage_user` again, the same series as every other protocol).

use std::collections::HashMap;
use std::sync::Arc;

use hourglass_ingest::prom::opentsdb_metric_to_prom;
use hourglass_ingest::prom::pb::{Label, Sample, TimeSeries, WriteRequest};
use prost::Message as _;

use super::encoder::Encoder;
use super::text::pod_name;
use crate::workload::{Point, Workload};

/// The request headers remote-write senders use (Prometheus 2.x).
pub const HEADERS: [(&str, &str); 3] = [
    ("content-encoding", "snappy"),
    ("content-type", "application/x-protobuf"),
    ("x-prometheus-remote-write-version", "0.1.0"),
];

/// Groups a batch's samples by series and writes one `WriteRequest`.
#[derive(Debug)]
pub struct PromEncoder {
    workload: Arc<Workload>,
    /// Prometheus metric names, per metric.
    names: Vec<String>,
    /// Index into `series` of each (host, metric, pod) of the batch.
    index: HashMap<(u32, u32, u32), usize>,
    series: Vec<TimeSeries>,
}

impl PromEncoder {
    pub fn new(workload: Arc<Workload>) -> Self {
        let names = workload
            .metrics
            .iter()
            .map(|m| opentsdb_metric_to_prom(&m.name).into_owned())
            .collect();
        PromEncoder {
            workload,
            names,
            index: HashMap::new(),
            series: Vec::new(),
        }
    }

    fn labels(&self, p: &Point) -> Vec<Label> {
        let label = |name: &str, value: String| Label {
            name: name.to_string(),
            value,
        };
        let mut labels = vec![label("__name__", self.names[p.metric as usize].clone())];
        for (k, v) in &self.workload.hosts[p.host as usize].tags {
            labels.push(label(k, v.clone()));
        }
        if self.workload.has_pods() {
            let mut pod = Vec::new();
            pod_name(p.host, p.pod, &mut pod);
            labels.push(label("pod", String::from_utf8_lossy(&pod).into_owned()));
        }
        labels.sort_by(|a, b| a.name.cmp(&b.name));
        labels
    }
}

impl Encoder for PromEncoder {
    fn begin_batch(&mut self, _out: &mut Vec<u8>) {
        self.index.clear();
        self.series.clear();
    }

    fn encode(&mut self, p: &Point, _out: &mut Vec<u8>) {
        let key = (p.host, p.metric, p.pod);
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.series.push(TimeSeries {
                    labels: self.labels(p),
                    ..TimeSeries::default()
                });
                self.index.insert(key, self.series.len() - 1);
                self.series.len() - 1
            }
        };
        self.series[i].samples.push(Sample {
            value: p.value.as_f64(),
            timestamp: p.ts_ms,
        });
    }

    fn end_batch(&mut self, out: &mut Vec<u8>) {
        let request = WriteRequest {
            timeseries: std::mem::take(&mut self.series),
            metadata: Vec::new(),
        };
        self.index.clear();
        let raw = request.encode_to_vec();
        out.clear();
        out.resize(snap::raw::max_compress_len(raw.len()), 0);
        match snap::raw::Encoder::new().compress(&raw, out) {
            Ok(n) => out.truncate(n),
            // Only possible for inputs above 2^32 bytes, far beyond any batch.
            Err(_) => out.clear(),
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
    use hourglass_ingest::prom::{DEFAULT_MAX_DECODED_LEN, decode_write, decompress};

    fn workload(kind: Kind) -> Arc<Workload> {
        Arc::new(Workload::new(WorkloadSpec {
            tags_per_host: 3,
            churn: 2,
            ..spec(kind, 6, 10, 5, 2)
        }))
    }

    /// Every request decodes with hourglass's own remote-write decoder, with
    /// no refused series, into exactly the generated points.
    #[test]
    fn round_trip_through_our_decoder() {
        for kind in [Kind::Cpu, Kind::Devops, Kind::HighCardinality] {
            let w = workload(kind);
            let mut enc = PromEncoder::new(Arc::clone(&w));
            let mut got = Vec::new();
            for body in generated_batches(&w, &mut enc, 37) {
                let decoded = decode_write(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default())
                    .expect("decodes");
                assert!(decoded.errors.is_empty(), "{:?}", decoded.errors);
                got.extend(decoded.points().map(|p| parsed_point(&p)));
            }
            let mut want = expected_points(&w);
            got.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            want.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            assert_eq!(got, want, "{kind:?}");
        }
    }

    #[test]
    fn series_grouped_labels_sorted_names_mapped() {
        let w = workload(Kind::Cpu);
        let mut enc = PromEncoder::new(Arc::clone(&w));
        // Two whole steps in one request: 60 series of 2 samples.
        let bodies = generated_batches(&w, &mut enc, 120);
        let raw = decompress(&bodies[0], DEFAULT_MAX_DECODED_LEN).expect("snappy block");
        let req = WriteRequest::decode(raw.as_slice()).expect("protobuf");
        assert_eq!(req.timeseries.len(), 60);
        for ts in &req.timeseries {
            assert_eq!(ts.samples.len(), 2);
            assert!(ts.samples[0].timestamp < ts.samples[1].timestamp);
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted);
        }
        assert_eq!(req.timeseries[0].labels[0].value, "cpu:usage_user");
    }
}
