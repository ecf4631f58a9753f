//! Retention: how long each metric's points are kept (`[retention]` in the
//! config). Queries never return points older than their metric's horizon;
//! the store drops windows past the longest TTL and rewrites windows that a
//! shorter per-metric TTL has expired (see `storage::embedded::compaction::policy`).

use std::collections::HashMap;

use crate::config::{ConfigError, RetentionConfig, parse_ttl};
use crate::storage::retention::RetentionView;

/// TTLs in seconds; `None` keeps data forever.
#[derive(Debug, Clone, Default)]
pub struct Retention {
    default: Option<u64>,
    exact: HashMap<String, Option<u64>>,
    /// `(prefix, ttl)`, longest prefix first.
    prefixes: Vec<(String, Option<u64>)>,
}

impl Retention {
    pub fn from_config(cfg: &RetentionConfig) -> Result<Self, ConfigError> {
        let invalid = |k: &str, e: String| ConfigError::Invalid(format!("retention {k}: {e}"));
        let default = parse_ttl(&cfg.ttl).map_err(|e| invalid("ttl", e))?;
        let mut exact = HashMap::new();
        let mut prefixes = Vec::new();
        for (name, ttl) in &cfg.metrics {
            let t = parse_ttl(ttl).map_err(|e| invalid(name, e))?;
            match name.strip_suffix('*') {
                Some(p) => prefixes.push((p.to_string(), t)),
                None => {
                    exact.insert(name.clone(), t);
                }
            }
        }
        prefixes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        Ok(Self {
            default,
            exact,
            prefixes,
        })
    }

    /// True when every metric has the default TTL.
    pub fn uniform(&self) -> bool {
        self.exact.is_empty() && self.prefixes.is_empty()
    }

    /// The TTL of a metric, in seconds (`None` = forever).
    pub fn ttl(&self, metric: &str) -> Option<u64> {
        if let Some(t) = self.exact.get(metric) {
            return *t;
        }
        self.prefixes
            .iter()
            .find(|(p, _)| metric.starts_with(p.as_str()))
            .map_or(self.default, |(_, t)| *t)
    }

    /// The oldest timestamp (ms) of `metric` still kept at `now_ms`.
    pub fn horizon_ms(&self, metric: &str, now_ms: i64) -> i64 {
        self.ttl(metric).map_or(i64::MIN, |t| {
            now_ms.saturating_sub(i64::try_from(t).unwrap_or(i64::MAX).saturating_mul(1000))
        })
    }

    /// What the compaction policy needs.
    pub fn view(&self) -> RetentionView {
        let all = std::iter::once(self.default)
            .chain(self.exact.values().copied())
            .chain(self.prefixes.iter().map(|(_, t)| *t));
        let mut ttls = Vec::new();
        let mut forever = false;
        for t in all {
            match t {
                Some(t) => ttls.push(t),
                None => forever = true,
            }
        }
        ttls.sort_unstable();
        ttls.dedup();
        RetentionView { ttls, forever }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_and_prefixes() {
        let mut cfg = RetentionConfig {
            ttl: "30d".into(),
            ..RetentionConfig::default()
        };
        cfg.metrics.insert("sys.cpu.user".into(), "7d".into());
        cfg.metrics.insert("sys.*".into(), "90d".into());
        cfg.metrics.insert("sys.mem.*".into(), "0".into());
        let r = Retention::from_config(&cfg).unwrap();
        assert_eq!(r.ttl("sys.cpu.user"), Some(7 * 86_400));
        assert_eq!(r.ttl("sys.cpu.idle"), Some(90 * 86_400));
        assert_eq!(r.ttl("sys.mem.free"), None);
        assert_eq!(r.ttl("app.requests"), Some(30 * 86_400));
        let v = r.view();
        assert!(v.forever);
        assert_eq!(v.ttls, vec![7 * 86_400, 30 * 86_400, 90 * 86_400]);
        assert_eq!(r.horizon_ms("sys.mem.free", 5), i64::MIN);
        assert_eq!(
            r.horizon_ms("sys.cpu.user", 1_000_000_000),
            1_000_000_000 - 7 * 86_400_000
        );
        assert!(!r.uniform());
        assert!(Retention::default().uniform());
        assert_eq!(Retention::default().ttl("x"), None);
    }
}
