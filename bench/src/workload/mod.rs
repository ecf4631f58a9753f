//! Deterministic point generation: the workloads (`cpu`, `devops`,
//! `high-cardinality`), the value walks and the [`Generator`] that emits
//! points in time order.
//!
//! A workload is `hosts × metrics` series (times the pods of a host for the
//! high-cardinality workload). Host tags depend only on the host number;
//! values follow a pseudo-random walk per series whose RNG is seeded from
//! `(seed, host, metric)`, so a series produces exactly the same values no
//! matter how hosts are partitioned across connections, and any series can
//! be regenerated on its own ([`Workload::series`]) to compute the expected
//! answer of a query.
//!
//! Points come out in time order: every series of a [`Generator`]'s hosts at
//! `t`, then every series at `t + interval`, and so on. The generator knows
//! nothing about wire formats; it hands [`Point`]s to a callback, and a
//! `protocol` encoder turns them into bytes.
//!
//! Each workload ([`cpu`], [`devops`], [`highcard`]) defines its metrics
//! ([`metric`]) and hosts ([`host`]); every random choice comes from
//! [`rng`].

pub mod cpu;
pub mod devops;
pub mod highcard;
pub mod host;
pub mod metric;
pub mod rng;

use std::sync::Arc;

pub use devops::EXTRA_TAGS;

use self::host::HostDef;
use self::metric::{MetricDef, ValueKind};
use self::rng::{SplitMix64, mix64};

/// Which workload to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// TSBS `cpu-only`: 10 `cpu.usage_*` metrics per host, 7 tags.
    Cpu,
    /// A catalog of 77 devops metrics (floats, gauges, counters).
    Devops,
    /// 1 M+ series with churn: a `pod` tag that rotates every `--churn` intervals.
    HighCardinality,
}

impl Kind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Devops => "devops",
            Kind::HighCardinality => "high-cardinality",
        }
    }

    /// Default number of hosts.
    pub fn default_hosts(self) -> u32 {
        match self {
            Kind::Cpu | Kind::Devops => 100,
            Kind::HighCardinality => 100_000,
        }
    }

    /// Most metrics per host the workload defines (`None`: unbounded).
    pub fn max_metrics(self) -> Option<u32> {
        match self {
            Kind::Cpu => Some(cpu::METRICS.len() as u32),
            Kind::HighCardinality => Some(highcard::METRICS.len() as u32),
            Kind::Devops => None,
        }
    }
}

/// A generated value: integers and floats are kept apart so encoders can
/// write them in the form the server will store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    /// A float with at most two decimals, kept as its integer hundredths so
    /// that encoders print it exactly and checks compare it exactly.
    Hundredths(i64),
}

impl Value {
    /// The value as a double (hundredths divided by 100, correctly rounded).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Int(v) => v as f64,
            Value::Hundredths(h) => h as f64 / 100.0,
        }
    }
}

/// One data point, referring to its host and metric by index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub host: u32,
    pub metric: u32,
    /// The host's pod (high-cardinality workload; 0 otherwise).
    pub pod: u32,
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
    pub kind: Kind,
    pub hosts: u32,
    pub metrics: u32,
    /// `devops` only: tags besides `host`.
    pub tags_per_host: u32,
    /// First timestamp, milliseconds since the epoch.
    pub start_ms: i64,
    pub interval_ms: i64,
    /// Number of timestamps per series.
    pub steps: u64,
    pub seed: u64,
    /// `high-cardinality` only: a host's pod rotates every `churn` steps.
    pub churn: u32,
    /// Prepended to every metric name (the soak writes `soak.cpu.*`).
    pub prefix: String,
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
        let (metrics, hosts) = match spec.kind {
            Kind::Cpu => (
                cpu::metric_defs(spec.metrics, &spec.prefix),
                (0..spec.hosts)
                    .map(|h| cpu::host_def(h, cpu::TAG_KEYS.len()))
                    .collect(),
            ),
            Kind::Devops => (
                devops::metric_defs(spec.metrics, &spec.prefix),
                (0..spec.hosts)
                    .map(|h| devops::host_def(h, spec.tags_per_host as usize))
                    .collect(),
            ),
            Kind::HighCardinality => (
                highcard::metric_defs(spec.metrics, &spec.prefix),
                (0..spec.hosts).map(highcard::host_def).collect(),
            ),
        };
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

    /// Points of one step (every series once).
    pub fn points_per_step(&self) -> u64 {
        u64::from(self.spec.hosts) * u64::from(self.spec.metrics)
    }

    /// Distinct series over the whole run (pods included).
    pub fn distinct_series(&self) -> u64 {
        let m = u64::from(self.spec.metrics);
        if self.spec.kind != Kind::HighCardinality || self.spec.churn == 0 {
            return u64::from(self.spec.hosts) * m;
        }
        (0..self.spec.hosts)
            .map(|h| highcard::pods_per_host(h, self.spec.steps, self.spec.churn) * m)
            .sum()
    }

    /// Seconds when the interval is a whole number of seconds, else milliseconds.
    pub fn ts_unit(&self) -> TsUnit {
        TsUnit::for_range(self.spec.start_ms, self.spec.interval_ms)
    }

    /// Timestamp of step `step`.
    pub fn ts_of(&self, step: u64) -> i64 {
        self.spec.start_ms + step as i64 * self.spec.interval_ms
    }

    /// The pod of `host` at `step` (0 unless the workload churns).
    pub fn pod_of(&self, host: u32, step: u64) -> u32 {
        match self.spec.kind {
            Kind::HighCardinality => highcard::pod_epoch(host, step, self.spec.churn),
            _ => 0,
        }
    }

    /// Whether points carry a `pod` tag.
    pub fn has_pods(&self) -> bool {
        self.spec.kind == Kind::HighCardinality
    }

    /// Every `(timestamp, value)` of one series (all pods), regenerated on
    /// its own: exactly what a [`Generator`] emits for it.
    pub fn series(&self, host: u32, metric: u32) -> impl Iterator<Item = (i64, Value)> + '_ {
        let kind = self.metrics[metric as usize].kind;
        let mut state = SeriesState::new(self.spec.seed, host, metric, kind);
        (0..self.spec.steps).map(move |step| (self.ts_of(step), state.next(kind)))
    }

    /// How many of the first `limit` points (in global generation order:
    /// step by step, hosts ascending, metrics ascending) belong to `hosts`.
    pub fn share_of_first(&self, hosts: &[u32], limit: u64) -> u64 {
        let per_step = self.points_per_step();
        let m = u64::from(self.spec.metrics);
        if per_step == 0 {
            return 0;
        }
        let limit = limit.min(self.total_points());
        let (full_steps, rest) = (limit / per_step, limit % per_step);
        let mut share = full_steps * hosts.len() as u64 * m;
        // In the partial last step hosts come in ascending order.
        let (whole_hosts, partial) = (rest / m, rest % m);
        for &h in hosts {
            let h = u64::from(h);
            if h < whole_hosts {
                share += m;
            } else if h == whole_hosts {
                share += partial;
            }
        }
        share
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
            ValueKind::FloatGauge { max, step } => {
                (current + self.rng.range(-step, step)).clamp(0, max)
            }
            ValueKind::Gauge { min, max, step } => {
                (current + self.rng.range(-step, step)).clamp(min, max)
            }
            ValueKind::Counter { max_step } => current.saturating_add(self.rng.range(0, max_step)),
        };
        if kind.is_float() {
            Value::Hundredths(current)
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
    /// Points still to emit.
    remaining: u64,
}

impl Generator {
    /// A generator over `hosts` (indices into the workload's hosts, in the
    /// order their series should be emitted at each timestamp).
    pub fn new(workload: Arc<Workload>, hosts: Vec<u32>) -> Self {
        Self::with_limit(workload, hosts, u64::MAX)
    }

    /// Like [`Generator::new`], stopping after `limit` points.
    pub fn with_limit(workload: Arc<Workload>, hosts: Vec<u32>, limit: u64) -> Self {
        let kinds: Vec<ValueKind> = workload.metrics.iter().map(|m| m.kind).collect();
        let seed = workload.spec.seed;
        let mut states = Vec::with_capacity(hosts.len() * kinds.len());
        for &h in &hosts {
            for (m, kind) in kinds.iter().enumerate() {
                states.push(SeriesState::new(seed, h, m as u32, *kind));
            }
        }
        let total = hosts.len() as u64 * kinds.len() as u64 * workload.spec.steps;
        Generator {
            workload,
            hosts,
            states,
            kinds,
            step: 0,
            pos: 0,
            remaining: limit.min(total),
        }
    }

    /// Produces up to `max` points, passing each to `emit`; returns how many
    /// were produced (0 once the workload is exhausted).
    pub fn next_batch(&mut self, max: usize, mut emit: impl FnMut(&Point)) -> usize {
        let workload = Arc::clone(&self.workload);
        let metrics = self.kinds.len();
        let per_step = self.states.len();
        let max = max.min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let mut produced = 0;
        while produced < max && self.step < workload.spec.steps && per_step > 0 {
            let ts_ms = workload.ts_of(self.step);
            while produced < max && self.pos < per_step {
                let metric = self.pos % metrics;
                let host = self.hosts[self.pos / metrics];
                let value = self.states[self.pos].next(self.kinds[metric]);
                emit(&Point {
                    host,
                    metric: metric as u32,
                    pod: workload.pod_of(host, self.step),
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
        self.remaining -= produced as u64;
        produced
    }
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A workload spec for tests: two host tags, pods rotating every three
    /// steps, every 10 s from unix second 1_700_000_000.
    pub(crate) fn spec(
        kind: Kind,
        hosts: u32,
        metrics: u32,
        steps: u64,
        seed: u64,
    ) -> WorkloadSpec {
        WorkloadSpec {
            kind,
            hosts,
            metrics,
            tags_per_host: 2,
            start_ms: 1_700_000_000_000,
            interval_ms: 10_000,
            steps,
            seed,
            churn: 3,
            prefix: String::new(),
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
        for kind in [Kind::Cpu, Kind::Devops, Kind::HighCardinality] {
            let metrics = if kind == Kind::Devops { 13 } else { 10 };
            let w = Arc::new(Workload::new(spec(kind, 7, metrics, 11, 1)));
            assert_eq!(w.total_points(), 7 * u64::from(metrics) * 11);
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
    }

    /// The cpu workload's exact shape: two-decimal values in [0, 100] whose
    /// steps are at most ±1.00, clamped.
    #[test]
    fn cpu_walk_shape() {
        let w = Arc::new(Workload::new(spec(Kind::Cpu, 5, 10, 500, 42)));
        let pts = all_points(&w, (0..5).collect(), 1000);
        let mut last: std::collections::HashMap<(u32, u32), i64> = Default::default();
        let (mut at_bounds, mut moves) = (0, 0);
        for p in &pts {
            let Value::Hundredths(h) = p.value else {
                panic!("cpu values are two-decimal floats: {p:?}");
            };
            assert!((0..=10_000).contains(&h), "{h}");
            if let Some(prev) = last.insert((p.host, p.metric), h) {
                assert!((prev - h).abs() <= 100, "{prev} -> {h}");
                moves += usize::from(prev != h);
            }
            at_bounds += usize::from(h == 0 || h == 10_000);
            assert_eq!(p.pod, 0);
        }
        assert!(moves > pts.len() / 2);
        assert!(at_bounds < pts.len() / 10);
    }

    #[test]
    fn batch_size_does_not_change_output() {
        let w = Arc::new(Workload::new(spec(Kind::Devops, 5, 9, 6, 3)));
        let a = all_points(&w, (0..5).collect(), 1);
        let b = all_points(&w, (0..5).collect(), 1000);
        assert_eq!(a, b);
    }

    #[test]
    fn same_seed_same_values_other_seed_differs() {
        let w1 = Arc::new(Workload::new(spec(Kind::Cpu, 4, 10, 20, 42)));
        let w2 = Arc::new(Workload::new(spec(Kind::Cpu, 4, 10, 20, 42)));
        let w3 = Arc::new(Workload::new(spec(Kind::Cpu, 4, 10, 20, 43)));
        let a = all_points(&w1, (0..4).collect(), 64);
        assert_eq!(a, all_points(&w2, (0..4).collect(), 64));
        assert_ne!(a, all_points(&w3, (0..4).collect(), 64));
    }

    /// A fixed seed gives fixed values: a change of the generator changes
    /// every recorded benchmark, so it must be deliberate.
    #[test]
    fn cpu_values_are_pinned() {
        let w = Workload::new(spec(Kind::Cpu, 1, 10, 3, 1));
        let first: Vec<f64> = w.series(0, 0).map(|(_, v)| v.as_f64()).collect();
        let again: Vec<f64> = w.series(0, 0).map(|(_, v)| v.as_f64()).collect();
        assert_eq!(first, again);
        assert_eq!(first, [74.98, 74.72, 74.6]);
    }

    #[test]
    fn series_values_independent_of_partitioning() {
        let w = Arc::new(Workload::new(spec(Kind::Devops, 10, 6, 8, 9)));
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
    fn one_series_regenerates_exactly() {
        let w = Arc::new(Workload::new(spec(Kind::HighCardinality, 6, 4, 9, 5)));
        let pts = all_points(&w, (0..6).collect(), 7);
        for host in 0..6 {
            for metric in 0..4 {
                let from_gen: Vec<(i64, Value)> = pts
                    .iter()
                    .filter(|p| p.host == host && p.metric == metric)
                    .map(|p| (p.ts_ms, p.value))
                    .collect();
                let alone: Vec<(i64, Value)> = w.series(host, metric).collect();
                assert_eq!(from_gen, alone);
            }
        }
    }

    #[test]
    fn limit_shares_add_up_and_match_global_prefix() {
        let w = Arc::new(Workload::new(spec(Kind::Cpu, 7, 3, 5, 1)));
        let global = all_points(&w, (0..7).collect(), 1000);
        for limit in [0u64, 1, 2, 20, 21, 22, 50, 104, 105, 1000] {
            let parts = partition_hosts(7, 3);
            let mut got = Vec::new();
            let mut total = 0;
            for hosts in parts {
                let share = w.share_of_first(&hosts, limit);
                total += share;
                let mut g = Generator::with_limit(Arc::clone(&w), hosts, share);
                while g.next_batch(4, |p| got.push(*p)) > 0 {}
            }
            let want = limit.min(w.total_points());
            assert_eq!(total, want, "limit {limit}");
            let key = |p: &Point| (p.ts_ms, p.host, p.metric);
            got.sort_by_key(key);
            let mut expected: Vec<Point> = global[..want as usize].to_vec();
            expected.sort_by_key(key);
            assert_eq!(got, expected, "limit {limit}");
        }
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
    fn devops_values_stay_in_range_and_counters_grow() {
        let w = Arc::new(Workload::new(spec(Kind::Devops, 3, 80, 200, 5)));
        let pts = all_points(&w, (0..3).collect(), 1000);
        let mut last: std::collections::HashMap<(u32, u32), i64> = Default::default();
        for p in pts {
            let kind = w.metrics[p.metric as usize].kind;
            match (kind, p.value) {
                (ValueKind::FloatGauge { max, .. }, Value::Hundredths(v)) => {
                    assert!((0..=max).contains(&v))
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
    fn high_cardinality_pods_and_series_count() {
        let w = Arc::new(Workload::new(spec(Kind::HighCardinality, 10, 2, 7, 1)));
        let pts = all_points(&w, (0..10).collect(), 100);
        let mut series: Vec<(u32, u32, u32)> =
            pts.iter().map(|p| (p.host, p.metric, p.pod)).collect();
        series.sort_unstable();
        series.dedup();
        assert_eq!(series.len() as u64, w.distinct_series());
        assert!(w.distinct_series() > w.points_per_step());
        assert!(
            pts.iter()
                .all(|p| p.pod == w.pod_of(p.host, ((p.ts_ms - w.spec.start_ms) / 10_000) as u64))
        );
    }
}
