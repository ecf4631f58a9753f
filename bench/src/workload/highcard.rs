//! The `high-cardinality` workload: many hosts (100,000 by default, so with
//! ten metrics 1 M series are live at any time) with short-lived series.
//!
//! Every host carries `hostname, region, datacenter, service` and a `pod`
//! tag (`pod-<host>-<epoch>`, written by the encoders) that rotates every
//! `churn` intervals, so each series lives `churn` points and is then
//! replaced by a new one. Rotations are staggered by host (host `h` rotates
//! at steps where `(step + h) % churn == 0`), so a steady `1/churn` of the
//! hosts starts new series at every interval instead of all of them at once.
//! Values are the cpu workload's random walks; a series' walk continues
//! across pods.

use super::cpu;
use super::host::HostDef;
use super::metric::MetricDef;

/// Metric fields, named `<prefix>container.<field>`.
pub const METRICS: [&str; 10] = [
    "cpu_usage",
    "cpu_throttled",
    "mem_usage",
    "mem_cache",
    "net_rx_util",
    "net_tx_util",
    "fs_usage",
    "fs_inodes",
    "io_wait",
    "gpu_usage",
];

/// Host tags besides `pod` (a prefix of the cpu workload's tags, plus
/// `service`), leaving room under OpenTSDB's default limit of 8 tags.
const HOST_TAGS: usize = 3;

/// The first `count` (at most 10) metrics.
pub fn metric_defs(count: u32, prefix: &str) -> Vec<MetricDef> {
    METRICS
        .iter()
        .take(count as usize)
        .map(|field| MetricDef {
            name: format!("{prefix}container.{field}"),
            kind: cpu::WALK,
        })
        .collect()
}

/// Host `h`'s fixed tags: `hostname, region, datacenter, service` (the pod
/// tag is added per point, see [`pod_epoch`]).
pub fn host_def(h: u32) -> HostDef {
    let mut def = cpu::host_def(h, cpu::TAG_KEYS.len());
    let service = def.tags.pop();
    def.tags.truncate(HOST_TAGS);
    def.tags.extend(service);
    def
}

/// Which pod of host `host` is live at step `step`, with pods rotating every
/// `churn` steps (0 = never). Staggered so that a host's first pod may be
/// shorter than `churn`.
pub fn pod_epoch(host: u32, step: u64, churn: u32) -> u32 {
    if churn == 0 {
        return 0;
    }
    let churn = u64::from(churn);
    ((step + u64::from(host) % churn) / churn) as u32
}

/// Distinct pods of one host over `steps` steps.
pub fn pods_per_host(host: u32, steps: u64, churn: u32) -> u64 {
    if steps == 0 {
        return 0;
    }
    u64::from(pod_epoch(host, steps - 1, churn)) - u64::from(pod_epoch(host, 0, churn)) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_tags() {
        let keys: Vec<String> = host_def(9).tags.into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["hostname", "region", "datacenter", "service"]);
    }

    #[test]
    fn pods_rotate_every_churn_steps_staggered() {
        let churn = 4;
        for host in 0..8u32 {
            let epochs: Vec<u32> = (0..12).map(|s| pod_epoch(host, s, churn)).collect();
            // Each pod after the first lives exactly `churn` steps.
            let mut runs = Vec::new();
            let mut len = 1;
            for w in epochs.windows(2) {
                if w[0] == w[1] {
                    len += 1;
                } else {
                    assert_eq!(w[1], w[0] + 1);
                    runs.push(len);
                    len = 1;
                }
            }
            assert!(
                runs.iter().skip(1).all(|&r| r == churn as usize),
                "{runs:?}"
            );
            assert_eq!(
                pods_per_host(host, 12, churn),
                u64::from(epochs[11] - epochs[0] + 1)
            );
        }
        // Staggered: at any step, a quarter of the hosts start a new pod.
        let starting = (0..100u32)
            .filter(|&h| pod_epoch(h, 5, churn) != pod_epoch(h, 4, churn))
            .count();
        assert_eq!(starting, 25);
        assert_eq!(pod_epoch(7, 1000, 0), 0);
    }
}
