//! OpenTSDB telnet-style line protocol: `put <metric> <ts> <value> <k=v>...\n`.
//!
//! Everything about a line except the timestamp and value is fixed per metric
//! (`put <metric> `) or per host (` host=... rack=...\n`), so both parts are
//! rendered once up front and each point costs two copies plus the number
//! formatting. The timestamp text is cached because consecutive points share it.

use std::sync::Arc;

use super::{Encoder, write_f64, write_i64};
use crate::workload::{Point, TsUnit, Value, Workload};

/// Pre-rendered line fragments of a workload, shared by all connections.
#[derive(Debug)]
pub struct TelnetTemplates {
    /// `put <metric> ` per metric.
    metric_prefix: Vec<Vec<u8>>,
    /// ` k=v k=v\n` per host.
    host_suffix: Vec<Vec<u8>>,
    unit: TsUnit,
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
                s.push('\n');
                s.into_bytes()
            })
            .collect();
        TelnetTemplates {
            metric_prefix,
            host_suffix,
            unit: workload.ts_unit(),
        }
    }
}

/// Encodes points as telnet `put` lines.
#[derive(Debug)]
pub struct TelnetEncoder {
    templates: Arc<TelnetTemplates>,
    cached_ts_ms: Option<i64>,
    /// `<ts> ` for `cached_ts_ms`.
    ts_text: Vec<u8>,
}

impl TelnetEncoder {
    pub fn new(templates: Arc<TelnetTemplates>) -> Self {
        TelnetEncoder {
            templates,
            cached_ts_ms: None,
            ts_text: Vec::with_capacity(16),
        }
    }
}

impl Encoder for TelnetEncoder {
    fn encode(&mut self, p: &Point, out: &mut Vec<u8>) {
        if self.cached_ts_ms != Some(p.ts_ms) {
            self.ts_text.clear();
            let ts = match self.templates.unit {
                TsUnit::Seconds => p.ts_ms.div_euclid(1000),
                TsUnit::Milliseconds => p.ts_ms,
            };
            write_i64(&mut self.ts_text, ts);
            self.ts_text.push(b' ');
            self.cached_ts_ms = Some(p.ts_ms);
        }
        out.extend_from_slice(&self.templates.metric_prefix[p.metric as usize]);
        out.extend_from_slice(&self.ts_text);
        match p.value {
            Value::Int(v) => write_i64(out, v),
            Value::Float(v) => write_f64(out, v),
        }
        out.extend_from_slice(&self.templates.host_suffix[p.host as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Generator, WorkloadSpec};

    fn workload(interval_ms: i64, seed: u64) -> Arc<Workload> {
        Arc::new(Workload::new(WorkloadSpec {
            hosts: 6,
            metrics: 12,
            tags_per_host: 3,
            start_ms: 1_700_000_000_000,
            interval_ms,
            steps: 5,
            seed,
        }))
    }

    fn lines(w: &Arc<Workload>) -> Vec<String> {
        let mut enc = TelnetEncoder::new(Arc::new(TelnetTemplates::new(w)));
        let mut generator = Generator::new(Arc::clone(w), (0..w.spec.hosts).collect());
        let mut buf = Vec::new();
        while generator.next_batch(7, |p| enc.encode(p, &mut buf)) > 0 {}
        String::from_utf8(buf)
            .expect("ascii")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Parses a put line the way an OpenTSDB server would.
    fn parse(line: &str) -> (String, i64, f64, bool, Vec<(String, String)>) {
        let mut it = line.split(' ');
        assert_eq!(it.next(), Some("put"), "{line}");
        let metric = it.next().expect("metric").to_string();
        let ts = it.next().expect("ts").parse::<i64>().expect("ts int");
        let raw = it.next().expect("value");
        let is_float = raw.contains('.');
        let value = raw.parse::<f64>().expect("value number");
        let tags = it
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("k=v");
                (k.to_string(), v.to_string())
            })
            .collect();
        (metric, ts, value, is_float, tags)
    }

    fn valid_ident(s: &str) -> bool {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    }

    #[test]
    fn lines_parse() {
        let w = workload(10_000, 1);
        let lines = lines(&w);
        assert_eq!(lines.len() as u64, w.total_points());
        let (mut ints, mut floats) = (0, 0);
        for line in &lines {
            let (metric, ts, _value, is_float, tags) = parse(line);
            assert!(valid_ident(&metric), "{line}");
            assert!(metric.starts_with("bench."));
            assert!((1_700_000_000..=1_700_000_040).contains(&ts), "{line}");
            assert_eq!(ts % 10, 0);
            assert_eq!(tags.len(), 4);
            assert_eq!(tags[0].0, "host");
            assert!(tags[0].1.starts_with("host_"));
            assert!(tags.iter().all(|(k, v)| valid_ident(k) && valid_ident(v)));
            if is_float {
                floats += 1;
            } else {
                ints += 1;
            }
        }
        assert!(ints > 0 && floats > 0);
        assert_eq!(
            lines[0].split(' ').take(3).collect::<Vec<_>>(),
            ["put", "bench.cpu.usage_user", "1700000000"]
        );
    }

    #[test]
    fn deterministic() {
        assert_eq!(lines(&workload(10_000, 7)), lines(&workload(10_000, 7)));
        assert_ne!(lines(&workload(10_000, 7)), lines(&workload(10_000, 8)));
    }

    #[test]
    fn millisecond_timestamps_for_subsecond_interval() {
        let w = workload(250, 1);
        let lines = lines(&w);
        let (_, ts, ..) = parse(&lines[lines.len() - 1]);
        assert_eq!(ts, 1_700_000_000_000 + 4 * 250);
    }
}
