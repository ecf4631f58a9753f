//! A workload's metrics: each one's name and how its values evolve.

/// How a series' values evolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Float in `[0, max / 100]` with two decimals; walks by a uniform step
    /// in `[-step, step]` hundredths, clamped.
    FloatGauge { max: i64, step: i64 },
    /// Integer in `[min, max]`; walks by at most `step` (0 = constant).
    Gauge { min: i64, max: i64, step: i64 },
    /// Monotonic integer counter; grows by `0..=max_step` per interval.
    Counter { max_step: i64 },
}

impl ValueKind {
    /// True if the series emits floats rather than integers.
    pub fn is_float(self) -> bool {
        matches!(self, ValueKind::FloatGauge { .. })
    }
}

/// A metric of the workload.
#[derive(Debug, Clone)]
pub struct MetricDef {
    /// Full metric name, e.g. `cpu.usage_user`.
    pub name: String,
    /// How its values evolve.
    pub kind: ValueKind,
}
