//! The retention horizons a store applies: every finite TTL in force (the
//! global one and the per-metric ones) and whether some metric keeps its
//! data forever. The engine's retention settings (`engine::retention`)
//! produce it; the backends drop what is past it.

/// Retention horizons in force, in seconds (0 never appears: "forever" is
/// expressed by `forever`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionView {
    /// Distinct finite TTLs of the global setting and the per-metric
    /// overrides.
    pub ttls: Vec<u64>,
    /// Some metric (or the global default) keeps data forever.
    pub forever: bool,
}

impl RetentionView {
    pub fn max_ttl(&self) -> Option<u64> {
        if self.forever {
            return None;
        }
        self.ttls.iter().copied().max()
    }
}
