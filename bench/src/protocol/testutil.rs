//! Test helpers: run an encoder over a whole workload and compare what our
//! own parsers (`hourglass-ingest`) read back with what was generated.

use std::sync::Arc;

use super::encoder::Encoder;
use super::text::pod_name;
use crate::workload::{Generator, Workload};

/// A point in comparable form: metric, timestamp (ms), value, sorted tags.
pub type Canon = (String, i64, f64, Vec<(String, String)>);

/// Encodes the whole workload (all hosts, one generator) in batches of `batch` points.
pub fn generated_batches(w: &Arc<Workload>, enc: &mut dyn Encoder, batch: usize) -> Vec<Vec<u8>> {
    let mut generator = Generator::new(Arc::clone(w), (0..w.spec.hosts).collect());
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        enc.begin_batch(&mut buf);
        let n = generator.next_batch(batch, |p| enc.encode(p, &mut buf));
        if n == 0 {
            return out;
        }
        enc.end_batch(&mut buf);
        out.push(buf);
    }
}

/// Every generated point, in generation order.
pub fn expected_points(w: &Arc<Workload>) -> Vec<Canon> {
    let mut generator = Generator::new(Arc::clone(w), (0..w.spec.hosts).collect());
    let mut out = Vec::new();
    while generator.next_batch(1000, |p| {
        let mut tags = w.hosts[p.host as usize].tags.clone();
        if w.has_pods() {
            let mut pod = Vec::new();
            pod_name(p.host, p.pod, &mut pod);
            tags.push(("pod".into(), String::from_utf8_lossy(&pod).into_owned()));
        }
        tags.sort();
        out.push((
            w.metrics[p.metric as usize].name.clone(),
            p.ts_ms,
            p.value.as_f64(),
            tags,
        ));
    }) > 0
    {}
    out
}

/// A point parsed by `hourglass-ingest` in comparable form.
pub fn parsed_point(p: &hourglass_ingest::Point<'_>) -> Canon {
    let mut tags: Vec<(String, String)> = p
        .tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tags.sort();
    (
        p.metric.to_string(),
        p.timestamp.as_millis() as i64,
        p.value.as_f64(),
        tags,
    )
}
