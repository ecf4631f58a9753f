//! The `devops` workload: a catalog of 77 devops metrics in ten groups (cpu,
//! mem, disk, diskio, kernel, net, system, nginx, postgresql, redis) mixing
//! float gauges, integer gauges and counters, named `bench.<group>.<field>`,
//! with a configurable number of host tags.

use super::host::HostDef;
use super::metric::{MetricDef, ValueKind};
use super::rng::mix64;

/// Extra per-host tag keys, in the order `--tags-per-host` adds them.
pub const EXTRA_TAGS: [&str; 9] = [
    "rack",
    "region",
    "datacenter",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

pub(super) const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];
pub(super) const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
pub(super) const ARCHES: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];

const GIB: i64 = 1 << 30;

/// One catalog group: the measurement name and its fields.
type Group = (&'static str, &'static [(&'static str, ValueKind)]);

/// Devops percentages walk by at most ±2.00 per interval.
const P: ValueKind = ValueKind::FloatGauge {
    max: 10_000,
    step: 200,
};
const fn counter(max_step: i64) -> ValueKind {
    ValueKind::Counter { max_step }
}
const fn gauge(min: i64, max: i64, step: i64) -> ValueKind {
    ValueKind::Gauge { min, max, step }
}
const fn fgauge(max: i64, step: i64) -> ValueKind {
    ValueKind::FloatGauge { max, step }
}

/// The metric catalog. Names are interleaved group by group (first field of
/// every group, then the second field of every group, ...).
const CATALOG: &[Group] = &[
    (
        "cpu",
        &[
            ("usage_user", P),
            ("usage_system", P),
            ("usage_idle", P),
            ("usage_nice", P),
            ("usage_iowait", P),
            ("usage_irq", P),
            ("usage_softirq", P),
            ("usage_steal", P),
            ("usage_guest", P),
            ("usage_guest_nice", P),
        ],
    ),
    (
        "mem",
        &[
            ("used", gauge(GIB, 60 * GIB, 64 << 20)),
            ("available", gauge(GIB, 60 * GIB, 64 << 20)),
            ("used_percent", P),
            ("free", gauge(0, 32 * GIB, 32 << 20)),
            ("cached", gauge(0, 16 * GIB, 16 << 20)),
            ("buffered", gauge(0, 4 * GIB, 4 << 20)),
            ("total", gauge(8 * GIB, 64 * GIB, 0)),
        ],
    ),
    (
        "disk",
        &[
            ("used_percent", P),
            ("used", gauge(0, 900 * GIB, 256 << 20)),
            ("free", gauge(0, 900 * GIB, 256 << 20)),
            ("inodes_used", gauge(0, 50_000_000, 10_000)),
            ("inodes_free", gauge(0, 50_000_000, 10_000)),
            ("total", gauge(100 * GIB, 1000 * GIB, 0)),
            ("inodes_total", gauge(50_000_000, 100_000_000, 0)),
        ],
    ),
    (
        "diskio",
        &[
            ("reads", counter(2_000)),
            ("writes", counter(5_000)),
            ("read_bytes", counter(64 << 20)),
            ("write_bytes", counter(128 << 20)),
            ("read_time", counter(1_000)),
            ("write_time", counter(3_000)),
            ("io_time", counter(4_000)),
        ],
    ),
    (
        "kernel",
        &[
            ("context_switches", counter(500_000)),
            ("interrupts", counter(200_000)),
            ("processes_forked", counter(100)),
            ("disk_pages_in", counter(10_000)),
            ("disk_pages_out", counter(20_000)),
            ("boot_time", gauge(1_500_000_000, 1_600_000_000, 0)),
        ],
    ),
    (
        "net",
        &[
            ("bytes_recv", counter(100 << 20)),
            ("bytes_sent", counter(100 << 20)),
            ("packets_recv", counter(100_000)),
            ("packets_sent", counter(100_000)),
            ("err_in", counter(2)),
            ("err_out", counter(2)),
            ("drop_in", counter(5)),
            ("drop_out", counter(5)),
        ],
    ),
    (
        "system",
        &[
            ("load1", fgauge(3_200, 50)),
            ("load5", fgauge(3_200, 20)),
            ("load15", fgauge(3_200, 10)),
            ("n_users", gauge(0, 50, 1)),
            ("n_cpus", gauge(1, 64, 0)),
            ("uptime", counter(10)),
        ],
    ),
    (
        "nginx",
        &[
            ("active", gauge(0, 10_000, 50)),
            ("requests", counter(50_000)),
            ("accepts", counter(5_000)),
            ("handled", counter(5_000)),
            ("reading", gauge(0, 1_000, 10)),
            ("writing", gauge(0, 1_000, 10)),
            ("waiting", gauge(0, 1_000, 10)),
        ],
    ),
    (
        "postgresql",
        &[
            ("numbackends", gauge(0, 500, 5)),
            ("xact_commit", counter(10_000)),
            ("xact_rollback", counter(100)),
            ("blks_read", counter(50_000)),
            ("blks_hit", counter(500_000)),
            ("tup_returned", counter(1_000_000)),
            ("tup_fetched", counter(500_000)),
            ("tup_inserted", counter(50_000)),
            ("tup_updated", counter(20_000)),
            ("tup_deleted", counter(5_000)),
        ],
    ),
    (
        "redis",
        &[
            ("used_memory", gauge(0, 16 * GIB, 8 << 20)),
            ("connected_clients", gauge(0, 10_000, 20)),
            ("instantaneous_ops_per_sec", gauge(0, 100_000, 500)),
            ("keyspace_hits", counter(100_000)),
            ("keyspace_misses", counter(10_000)),
            ("evicted_keys", counter(100)),
            ("used_cpu_sys", fgauge(100_000, 200)),
            ("used_cpu_user", fgauge(100_000, 200)),
            ("mem_fragmentation_ratio", fgauge(300, 5)),
        ],
    ),
];

/// Catalog entries in interleaved order, as (group, field, kind).
fn catalog_order() -> Vec<(&'static str, &'static str, ValueKind)> {
    let rounds = CATALOG.iter().map(|(_, f)| f.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for round in 0..rounds {
        for (group, fields) in CATALOG {
            if let Some((field, kind)) = fields.get(round) {
                out.push((*group, *field, *kind));
            }
        }
    }
    out
}

/// Builds the metric list: `count` names from the catalog; once the catalog is
/// exhausted the names repeat with a `_<n>` suffix (`bench.cpu.usage_user_1`).
pub fn metric_defs(count: u32, prefix: &str) -> Vec<MetricDef> {
    let catalog = catalog_order();
    (0..count as usize)
        .map(|m| {
            let (group, field, kind) = catalog[m % catalog.len()];
            let lap = m / catalog.len();
            let name = if lap == 0 {
                format!("{prefix}bench.{group}.{field}")
            } else {
                format!("{prefix}bench.{group}.{field}_{lap}")
            };
            MetricDef { name, kind }
        })
        .collect()
}

/// Builds host `h`'s tags: `host=host_<h>` plus the first `extra` of
/// [`EXTRA_TAGS`]. Tag values depend only on `h`, never on the seed.
pub fn host_def(h: u32, extra: usize) -> HostDef {
    let pick = |salt: u64, n: usize| (mix64(u64::from(h) ^ (salt << 40)) % n as u64) as usize;
    let region = REGIONS[pick(2, REGIONS.len())];
    let mut tags = vec![("host".to_string(), format!("host_{h}"))];
    for key in EXTRA_TAGS.iter().take(extra) {
        let value = match *key {
            "rack" => format!("rack_{}", pick(1, 100)),
            "region" => region.to_string(),
            "datacenter" => format!("{region}{}", ['a', 'b', 'c'][pick(3, 3)]),
            "os" => OSES[pick(4, OSES.len())].to_string(),
            "arch" => ARCHES[pick(5, ARCHES.len())].to_string(),
            "team" => TEAMS[pick(6, TEAMS.len())].to_string(),
            "service" => pick(7, 20).to_string(),
            "service_version" => pick(8, 2).to_string(),
            _ => ENVIRONMENTS[pick(9, ENVIRONMENTS.len())].to_string(),
        };
        tags.push(((*key).to_string(), value));
    }
    HostDef { tags }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_unique_and_mixed_types() {
        let defs = metric_defs(200, "");
        let mut names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 200);
        assert_eq!(defs[0].name, "bench.cpu.usage_user");
        assert_eq!(defs[1].name, "bench.mem.used");
        assert_eq!(defs[77].name, "bench.cpu.usage_user_1");
        let first10 = &defs[..10];
        assert!(first10.iter().any(|d| d.kind.is_float()));
        assert!(first10.iter().any(|d| !d.kind.is_float()));
        assert_eq!(metric_defs(1, "soak.")[0].name, "soak.bench.cpu.usage_user");
    }

    #[test]
    fn host_tags_are_deterministic() {
        let a = host_def(17, EXTRA_TAGS.len());
        let b = host_def(17, EXTRA_TAGS.len());
        assert_eq!(a.tags, b.tags);
        assert_eq!(a.tags[0], ("host".to_string(), "host_17".to_string()));
        assert_eq!(a.tags.len(), 1 + EXTRA_TAGS.len());
        assert_eq!(host_def(17, 2).tags[..], a.tags[..3]);
    }
}
