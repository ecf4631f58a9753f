//! The `cpu` workload, the TSBS `cpu-only` shape and our headline workload:
//! per host the ten `cpu.usage_*` metrics, tags `hostname, region,
//! datacenter, rack, os, arch, service` derived from the host number only,
//! and each value a bounded random walk in [0, 100] with two decimals whose
//! step is uniform in [−1.00, +1.00] (integer hundredths in [−100, 100]),
//! clamped at the bounds.

use super::devops::{ARCHES, OSES, REGIONS};
use super::host::HostDef;
use super::metric::{MetricDef, ValueKind};
use super::rng::mix64;

/// The ten metrics, in the order they are generated (and in which Influx
/// fields are written).
pub const METRICS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// The tag keys of every host, in order.
pub const TAG_KEYS: [&str; 7] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "service",
];

/// A percentage walking by at most ±1.00 per interval (values in hundredths).
pub const WALK: ValueKind = ValueKind::FloatGauge {
    max: 10_000,
    step: 100,
};

/// The first `count` (at most 10) metrics, named `<prefix>cpu.<field>`.
pub fn metric_defs(count: u32, prefix: &str) -> Vec<MetricDef> {
    METRICS
        .iter()
        .take(count as usize)
        .map(|field| MetricDef {
            name: format!("{prefix}cpu.{field}"),
            kind: WALK,
        })
        .collect()
}

/// Host `h`'s first `keys` tags (of [`TAG_KEYS`]); values depend only on `h`.
pub fn host_def(h: u32, keys: usize) -> HostDef {
    let pick = |salt: u64, n: usize| (mix64(u64::from(h) ^ (salt << 40)) % n as u64) as usize;
    let region = REGIONS[pick(2, REGIONS.len())];
    let tags = TAG_KEYS
        .iter()
        .take(keys)
        .map(|key| {
            let value = match *key {
                "hostname" => format!("host_{h}"),
                "region" => region.to_string(),
                "datacenter" => format!("{region}{}", ['a', 'b', 'c'][pick(3, 3)]),
                "rack" => pick(1, 100).to_string(),
                "os" => OSES[pick(4, OSES.len())].to_string(),
                "arch" => ARCHES[pick(5, ARCHES.len())].to_string(),
                _ => pick(7, 20).to_string(),
            };
            ((*key).to_string(), value)
        })
        .collect();
    HostDef { tags }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let m = metric_defs(10, "");
        assert_eq!(m.len(), 10);
        assert_eq!(m[0].name, "cpu.usage_user");
        assert_eq!(m[9].name, "cpu.usage_guest_nice");
        assert!(m.iter().all(|d| d.kind == WALK));
        let h = host_def(3, TAG_KEYS.len());
        let keys: Vec<&str> = h.tags.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, TAG_KEYS);
        assert_eq!(h.tags[0].1, "host_3");
        assert_eq!(h.tags, host_def(3, TAG_KEYS.len()).tags);
        let dc = &h.tags[2].1;
        assert!(dc.starts_with(&h.tags[1].1), "{dc}");
        let rack: u32 = h.tags[3].1.parse().expect("numeric rack");
        assert!(rack < 100);
    }
}
