//! [`RollupUsage`]: a sub query's `rollupUsage` option (OpenTSDB 2.4), which
//! says whether the source may answer from rollup tiers.

/// Whether a sub query may read rollup tiers, and what to do where a tier
/// has no value. hourglass computes its tiers from every stored point, so
/// a tier covers exactly the hours it claims to cover and the fallback
/// modes differ only in name (`docs/rollups.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RollupUsage {
    /// Raw points only.
    Raw,
    /// The best tier, no fallback (OpenTSDB's default).
    #[default]
    NoFallback,
    /// The best tier, else a finer one.
    Fallback,
    /// The best tier, else raw points.
    FallbackRaw,
}

impl RollupUsage {
    /// The option as OpenTSDB reads it: case-insensitive, unknown values
    /// mean the default.
    pub fn parse(s: &str) -> RollupUsage {
        match s.to_ascii_uppercase().as_str() {
            "ROLLUP_RAW" => RollupUsage::Raw,
            "ROLLUP_FALLBACK" => RollupUsage::Fallback,
            "ROLLUP_FALLBACK_RAW" => RollupUsage::FallbackRaw,
            _ => RollupUsage::NoFallback,
        }
    }

    /// True if the source may answer from rollup tiers.
    pub fn uses_tiers(self) -> bool {
        self != RollupUsage::Raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_opentsdb() {
        assert_eq!(RollupUsage::parse("ROLLUP_RAW"), RollupUsage::Raw);
        assert_eq!(RollupUsage::parse("rollup_raw"), RollupUsage::Raw);
        assert_eq!(RollupUsage::parse("ROLLUP_FALLBACK"), RollupUsage::Fallback);
        assert_eq!(
            RollupUsage::parse("Rollup_Fallback_Raw"),
            RollupUsage::FallbackRaw
        );
        assert_eq!(
            RollupUsage::parse("ROLLUP_NOFALLBACK"),
            RollupUsage::NoFallback
        );
        assert_eq!(RollupUsage::parse("bogus"), RollupUsage::NoFallback);
        assert!(!RollupUsage::Raw.uses_tiers());
        assert!(RollupUsage::default().uses_tiers());
    }
}
