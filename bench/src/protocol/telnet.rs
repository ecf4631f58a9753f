//! OpenTSDB telnet-style line protocol: `put <metric> <ts> <value> <k=v>...\n`.
//!
//! Everything about a line except the timestamp and value is fixed per metric
//! (`put <metric> `) or per host (` hostname=... rack=...`), so both parts are
//! rendered once up front and each point costs two copies plus the number
//! formatting. The timestamp text is cached because consecutive points share it.

use std::sync::Arc;

use super::encoder::Encoder;
use super::text::{TsCache, pod_name, write_value};
use crate::workload::{Point, TsUnit, Workload};

/// Pre-rendered line fragments of a workload, shared by all connections.
#[derive(Debug)]
pub struct TelnetTemplates {
    /// `put <metric> ` per metric.
    metric_prefix: Vec<Vec<u8>>,
    /// ` k=v k=v` per host.
    host_suffix: Vec<Vec<u8>>,
    unit: TsUnit,
    pods: bool,
}

impl TelnetTemplates {
    pub fn new(workload: &Workload) -> Self {
        let metric_prefix = workload
            .metrics
            .iter()
            .map(|m| format!("put {} ", m.name).into_bytes())
            .collect();
        let host_suffix = workload
            .hosts
            .iter()
            .map(|h| {
                let mut s = String::new();
                for (k, v) in &h.tags {
                    s.push(' ');
                    s.push_str(k);
                    s.push('=');
                    s.push_str(v);
                }
                s.into_bytes()
            })
            .collect();
        TelnetTemplates {
            metric_prefix,
            host_suffix,
            unit: workload.ts_unit(),
            pods: workload.has_pods(),
        }
    }

    /// Converts a millisecond timestamp to the unit written on the wire.
    pub fn wire_ts(&self, ts_ms: i64) -> i64 {
        match self.unit {
            TsUnit::Seconds => ts_ms.div_euclid(1000),
            TsUnit::Milliseconds => ts_ms,
        }
    }
}

/// Encodes points as telnet `put` lines.
#[derive(Debug)]
pub struct TelnetEncoder {
    templates: Arc<TelnetTemplates>,
    ts: TsCache,
}

impl TelnetEncoder {
    pub fn new(templates: Arc<TelnetTemplates>) -> Self {
        TelnetEncoder {
            templates,
            ts: TsCache::default(),
        }
    }
}

impl Encoder for TelnetEncoder {
    fn encode(&mut self, p: &Point, out: &mut Vec<u8>) {
        let t = &*self.templates;
        out.extend_from_slice(&t.metric_prefix[p.metric as usize]);
        out.extend_from_slice(self.ts.get(p.ts_ms, |ms| t.wire_ts(ms)));
        out.push(b' ');
        write_value(out, p.value);
        out.extend_from_slice(&t.host_suffix[p.host as usize]);
        if t.pods {
            out.extend_from_slice(b" pod=");
            pod_name(p.host, p.pod, out);
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testutil::{expected_points, generated_batches, parsed_point};
    use crate::workload::tests::spec;
    use crate::workload::{Kind, WorkloadSpec};
    use hourglass_ingest::{Command, Limits};

    fn workload(kind: Kind, interval_ms: i64, seed: u64) -> Arc<Workload> {
        Arc::new(Workload::new(WorkloadSpec {
            tags_per_host: 3,
            interval_ms,
            churn: 2,
            ..spec(kind, 6, 10, 5, seed)
        }))
    }

    fn text(w: &Arc<Workload>) -> String {
        let mut enc = TelnetEncoder::new(Arc::new(TelnetTemplates::new(w)));
        let body = generated_batches(w, &mut enc, 7).concat();
        String::from_utf8(body).expect("ascii")
    }

    /// Every line parses with hourglass's own telnet parser into exactly the
    /// generated point.
    #[test]
    fn round_trip_through_our_parser() {
        for kind in [Kind::Cpu, Kind::Devops, Kind::HighCardinality] {
            for interval in [10_000, 250] {
                let w = workload(kind, interval, 1);
                let text = text(&w);
                let mut got = Vec::new();
                for line in text.lines() {
                    match hourglass_ingest::parse_line(line.as_bytes(), &Limits::default()) {
                        Command::Put(Ok(p)) => got.push(parsed_point(&p)),
                        other => panic!("{line}: {other:?}"),
                    }
                }
                assert_eq!(got, expected_points(&w), "{kind:?}");
            }
        }
    }

    #[test]
    fn cpu_line_shape() {
        let w = workload(Kind::Cpu, 10_000, 1);
        let text = text(&w);
        let first = text.lines().next().expect("a line");
        let words: Vec<&str> = first.split(' ').collect();
        assert_eq!(&words[..3], ["put", "cpu.usage_user", "1700000000"]);
        let (int, frac) = words[3].split_once('.').expect("two decimals");
        assert!(int.parse::<u32>().is_ok());
        assert_eq!(frac.len(), 2);
        assert!(words[4].starts_with("hostname=host_0"));
        assert_eq!(words.len(), 4 + 7);
    }

    #[test]
    fn deterministic() {
        let a = text(&workload(Kind::Cpu, 10_000, 7));
        assert_eq!(a, text(&workload(Kind::Cpu, 10_000, 7)));
        assert_ne!(a, text(&workload(Kind::Cpu, 10_000, 8)));
    }
}
