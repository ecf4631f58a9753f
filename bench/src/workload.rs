//! Deterministic point generation for the TSBS-style "devops" workload.
//!
//! A workload is `hosts × metrics` series. Every host carries a `host=host_<h>`
//! tag plus up to [`EXTRA_TAGS`]`.len()` extra tags (rack, region, ...) derived
//! only from the host number, so the same host always has the same tags. Metric
//! names come from a fixed catalog of devops measurements (`bench.cpu.usage_user`,
//! `bench.mem.used`, ...), interleaved across groups so that even a handful of
//! metrics mixes float and integer series.
//!
//! Values follow a pseudo-random walk per series. Each series has its own RNG
//! seeded from `(seed, host, metric)`, so a series produces exactly the same
//! values no matter how hosts are partitioned across connections.
//!
//! Points come out in time order: every series of a [`Generator`]'s hosts at
//! `t`, then every series at `t + interval`, and so on. The generator knows
//! nothing about wire formats; it hands [`Point`]s to a callback, and a
//! `protocol` encoder turns them into bytes.

use std::sync::Arc;

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

const REGIONS: [&str; 9] = [
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
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];

const GIB: i64 = 1 << 30;

/// How a series' values evolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Float percentage in `[0, 100]` with two decimals; walks by at most ±2.
    Percent,
    /// Float in `[0, max / 100]` with two decimals; walks by at most `step / 100`.
    FloatGauge { max: i64, step: i64 },
    /// Integer in `[min, max]`; walks by at most `step` (0 = constant).
    Gauge { min: i64, max: i64, step: i64 },
    /// Monotonic integer counter; grows by `0..=max_step` per interval.
    Counter { max_step: i64 },
}

impl ValueKind {
    /// True if the series emits floats rather than integers.
    pub fn is_float(self) -> bool {
        matches!(self, ValueKind::Percent | ValueKind::FloatGauge { .. })
    }
}

/// One catalog group: the measurement name and its fields.
type Group = (&'static str, &'static [(&'static str, ValueKind)]);

const P: ValueKind = ValueKind::Percent;
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

/// A metric of the workload.
#[derive(Debug, Clone)]
pub struct MetricDef {
    /// Full metric name, e.g. `bench.cpu.usage_user`.
    pub name: String,
    /// How its values evolve.
    pub kind: ValueKind,
}

/// A host of the workload and its tags (`host` first, then the extra tags).
#[derive(Debug, Clone)]
pub struct HostDef {
    pub tags: Vec<(String, String)>,
}

/// Builds the metric list: `count` names from the catalog; once the catalog is
/// exhausted the names repeat with a `_<n>` suffix (`bench.cpu.usage_user_1`).
pub fn metric_defs(count: u32) -> Vec<MetricDef> {
    let catalog = catalog_order();
    (0..count as usize)
        .map(|m| {
            let (group, field, kind) = catalog[m % catalog.len()];
            let lap = m / catalog.len();
            let name = if lap == 0 {
                format!("bench.{group}.{field}")
            } else {
                format!("bench.{group}.{field}_{lap}")
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

/// The SplitMix64 finalizer: a strong 64-bit mixing function.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 pseudo-random generator (Steele, Lea & Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform integer in `[lo, hi]` (requires `lo <= hi`).
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = hi.abs_diff(lo) as u128 + 1;
        let off = (u128::from(self.next_u64()) * span) >> 64;
        lo.wrapping_add(off as i64)
    }
}

/// A generated value: integers and floats are kept apart so encoders can
/// write them in the form the server will store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

/// One data point, referring to its host and metric by index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub host: u32,
    pub metric: u32,
    /// Timestamp in milliseconds since the epoch.
    pub ts_ms: i64,
    pub value: Value,
}

/// Unit of the timestamps written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TsUnit {
    Seconds,
    Milliseconds,
}

impl TsUnit {
    /// Seconds if every timestamp `start_ms + k * interval_ms` is a whole second.
    pub fn for_range(start_ms: i64, interval_ms: i64) -> Self {
        if interval_ms % 1000 == 0 && start_ms % 1000 == 0 {
            TsUnit::Seconds
        } else {
            TsUnit::Milliseconds
        }
    }
}

/// Shape and time range of a workload.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    pub hosts: u32,
    pub metrics: u32,
    pub tags_per_host: u32,
    /// First timestamp, milliseconds since the epoch.
    pub start_ms: i64,
    pub interval_ms: i64,
    /// Number of timestamps per series.
    pub steps: u64,
    pub seed: u64,
}

/// A fully resolved workload: spec plus metric and host definitions.
#[derive(Debug)]
pub struct Workload {
    pub spec: WorkloadSpec,
    pub metrics: Vec<MetricDef>,
    pub hosts: Vec<HostDef>,
}

impl Workload {
    pub fn new(spec: WorkloadSpec) -> Self {
        let metrics = metric_defs(spec.metrics);
        let hosts = (0..spec.hosts)
            .map(|h| host_def(h, spec.tags_per_host as usize))
            .collect();
        Workload {
            spec,
            metrics,
            hosts,
        }
    }

    /// Total number of points: hosts × metrics × steps.
    pub fn total_points(&self) -> u64 {
        u64::from(self.spec.hosts) * u64::from(self.spec.metrics) * self.spec.steps
    }

    /// Seconds when the interval is a whole number of seconds, else milliseconds.
    pub fn ts_unit(&self) -> TsUnit {
        TsUnit::for_range(self.spec.start_ms, self.spec.interval_ms)
    }
}

/// Splits hosts `0..hosts` round-robin into `parts` disjoint, non-empty sets
/// (host `h` goes to part `h % parts`). `parts` is clamped to `1..=hosts`.
pub fn partition_hosts(hosts: u32, parts: u32) -> Vec<Vec<u32>> {
    let parts = parts.clamp(1, hosts.max(1));
    let mut out = vec![Vec::new(); parts as usize];
    for h in 0..hosts {
        out[(h % parts) as usize].push(h);
    }
    out
}

/// Per-series random-walk state.
#[derive(Debug, Clone)]
struct SeriesState {
    rng: SplitMix64,
    /// Current value; hundredths for float kinds.
    value: i64,
}

impl SeriesState {
    fn new(seed: u64, host: u32, metric: u32, kind: ValueKind) -> Self {
        let key = (u64::from(host) << 32) | u64::from(metric);
        let mut rng = SplitMix64::new(mix64(seed ^ mix64(key)));
        let value = match kind {
            ValueKind::Percent => rng.range(0, 10_000),
            ValueKind::FloatGauge { max, .. } => rng.range(0, max),
            ValueKind::Gauge { min, max, .. } => rng.range(min, max),
            ValueKind::Counter { max_step } => rng.range(0, max_step.saturating_mul(1000)),
        };
        SeriesState { rng, value }
    }

    /// Returns the current value and advances the walk by one step.
    fn next(&mut self, kind: ValueKind) -> Value {
        let current = self.value;
        self.value = match kind {
            ValueKind::Percent => (current + self.rng.range(-200, 200)).clamp(0, 10_000),
            ValueKind::FloatGauge { max, step } => {
                (current + self.rng.range(-step, step)).clamp(0, max)
            }
            ValueKind::Gauge { min, max, step } => {
                (current + self.rng.range(-step, step)).clamp(min, max)
            }
            ValueKind::Counter { max_step } => current.saturating_add(self.rng.range(0, max_step)),
        };
        if kind.is_float() {
            Value::Float(current as f64 / 100.0)
        } else {
            Value::Int(current)
        }
    }
}

/// Generates the points of one set of hosts in time order.
#[derive(Debug)]
pub struct Generator {
    workload: Arc<Workload>,
    hosts: Vec<u32>,
    states: Vec<SeriesState>,
    kinds: Vec<ValueKind>,
    step: u64,
    /// Index of the next series within the current step.
    pos: usize,
}

impl Generator {
    /// A generator over `hosts` (indices into the workload's hosts, in the
    /// order their series should be emitted at each timestamp).
    pub fn new(workload: Arc<Workload>, hosts: Vec<u32>) -> Self {
        let kinds: Vec<ValueKind> = workload.metrics.iter().map(|m| m.kind).collect();
        let seed = workload.spec.seed;
        let mut states = Vec::with_capacity(hosts.len() * kinds.len());
        for &h in &hosts {
            for (m, kind) in kinds.iter().enumerate() {
                states.push(SeriesState::new(seed, h, m as u32, *kind));
            }
        }
        Generator {
            workload,
            hosts,
            states,
            kinds,
            step: 0,
            pos: 0,
        }
    }

    /// Number of hosts this generator covers.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Produces up to `max` points, passing each to `emit`; returns how many
    /// were produced (0 once the workload is exhausted).
    pub fn next_batch(&mut self, max: usize, mut emit: impl FnMut(&Point)) -> usize {
        let spec = &self.workload.spec;
        let metrics = self.kinds.len();
        let per_step = self.states.len();
        let mut produced = 0;
        while produced < max && self.step < spec.steps && per_step > 0 {
            let ts_ms = spec.start_ms + self.step as i64 * spec.interval_ms;
            while produced < max && self.pos < per_step {
                let metric = self.pos % metrics;
                let host = self.hosts[self.pos / metrics];
                let value = self.states[self.pos].next(self.kinds[metric]);
                emit(&Point {
                    host,
                    metric: metric as u32,
                    ts_ms,
                    value,
                });
                self.pos += 1;
                produced += 1;
            }
            if self.pos == per_step {
                self.pos = 0;
                self.step += 1;
            }
        }
        produced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(hosts: u32, metrics: u32, steps: u64, seed: u64) -> WorkloadSpec {
        WorkloadSpec {
            hosts,
            metrics,
            tags_per_host: 2,
            start_ms: 1_700_000_000_000,
            interval_ms: 10_000,
            steps,
            seed,
        }
    }

    fn all_points(w: &Arc<Workload>, hosts: Vec<u32>, batch: usize) -> Vec<Point> {
        let mut g = Generator::new(Arc::clone(w), hosts);
        let mut out = Vec::new();
        while g.next_batch(batch, |p| out.push(*p)) > 0 {}
        out
    }

    #[test]
    fn exact_point_count_and_time_order() {
        let w = Arc::new(Workload::new(spec(7, 13, 11, 1)));
        assert_eq!(w.total_points(), 7 * 13 * 11);
        let pts = all_points(&w, (0..7).collect(), 17);
        assert_eq!(pts.len() as u64, w.total_points());
        assert!(pts.windows(2).all(|p| p[0].ts_ms <= p[1].ts_ms));
        let last = w.spec.start_ms + 10 * w.spec.interval_ms;
        assert_eq!(pts.last().map(|p| p.ts_ms), Some(last));
        // Each (host, metric, ts) appears exactly once.
        let mut keys: Vec<_> = pts.iter().map(|p| (p.host, p.metric, p.ts_ms)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), pts.len());
    }

    #[test]
    fn batch_size_does_not_change_output() {
        let w = Arc::new(Workload::new(spec(5, 9, 6, 3)));
        let a = all_points(&w, (0..5).collect(), 1);
        let b = all_points(&w, (0..5).collect(), 1000);
        assert_eq!(a, b);
    }

    #[test]
    fn same_seed_same_values_other_seed_differs() {
        let w1 = Arc::new(Workload::new(spec(4, 10, 20, 42)));
        let w2 = Arc::new(Workload::new(spec(4, 10, 20, 42)));
        let w3 = Arc::new(Workload::new(spec(4, 10, 20, 43)));
        let a = all_points(&w1, (0..4).collect(), 64);
        assert_eq!(a, all_points(&w2, (0..4).collect(), 64));
        assert_ne!(a, all_points(&w3, (0..4).collect(), 64));
    }

    #[test]
    fn series_values_independent_of_partitioning() {
        let w = Arc::new(Workload::new(spec(10, 6, 8, 9)));
        let mut whole = all_points(&w, (0..10).collect(), 100);
        let mut parts: Vec<Point> = partition_hosts(10, 3)
            .into_iter()
            .flat_map(|hosts| all_points(&w, hosts, 100))
            .collect();
        let key = |p: &Point| (p.host, p.metric, p.ts_ms);
        whole.sort_by_key(key);
        parts.sort_by_key(key);
        assert_eq!(whole, parts);
    }

    #[test]
    fn partitioning_covers_every_host_once() {
        for hosts in [1u32, 2, 7, 100, 101] {
            for parts in [1u32, 2, 3, 4, 16, 200] {
                let p = partition_hosts(hosts, parts);
                assert_eq!(p.len() as u32, parts.min(hosts));
                assert!(p.iter().all(|set| !set.is_empty()));
                let mut all: Vec<u32> = p.concat();
                all.sort_unstable();
                assert_eq!(all, (0..hosts).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn values_stay_in_range_and_counters_grow() {
        let w = Arc::new(Workload::new(spec(3, 80, 200, 5)));
        let pts = all_points(&w, (0..3).collect(), 1000);
        let mut last: std::collections::HashMap<(u32, u32), i64> = Default::default();
        for p in pts {
            let kind = w.metrics[p.metric as usize].kind;
            match (kind, p.value) {
                (ValueKind::Percent, Value::Float(v)) => assert!((0.0..=100.0).contains(&v)),
                (ValueKind::FloatGauge { max, .. }, Value::Float(v)) => {
                    assert!(v >= 0.0 && v <= max as f64 / 100.0)
                }
                (ValueKind::Gauge { min, max, .. }, Value::Int(v)) => {
                    assert!((min..=max).contains(&v))
                }
                (ValueKind::Counter { .. }, Value::Int(v)) => {
                    if let Some(prev) = last.insert((p.host, p.metric), v) {
                        assert!(v >= prev);
                    }
                }
                other => panic!("value type does not match kind: {other:?}"),
            }
        }
    }

    #[test]
    fn metric_names_unique_and_mixed_types() {
        let defs = metric_defs(200);
        let mut names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 200);
        assert_eq!(defs[0].name, "bench.cpu.usage_user");
        assert_eq!(defs[1].name, "bench.mem.used");
        let first10 = &defs[..10];
        assert!(first10.iter().any(|d| d.kind.is_float()));
        assert!(first10.iter().any(|d| !d.kind.is_float()));
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

    #[test]
    fn rng_range_bounds() {
        let mut r = SplitMix64::new(1);
        for _ in 0..10_000 {
            let v = r.range(-3, 3);
            assert!((-3..=3).contains(&v));
        }
        assert_eq!(r.range(5, 5), 5);
    }
}
