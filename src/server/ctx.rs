//! What every handler of the network front shares: the engine, the
//! configuration, the server-wide bounds and caches, and the server's
//! identity (host name, version banner).

use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::Limits;

use super::{limits, series_cache};
use crate::auth::TokenStore;
use crate::config::Config;
use crate::engine::Engine;
use crate::metrics::Metrics;

/// Everything a connection handler needs.
#[derive(Debug)]
pub struct Ctx {
    pub engine: Arc<Engine>,
    pub config: Config,
    pub limits: Limits,
    pub metrics: Metrics,
    pub hostname: String,
    /// Ingest memory in flight across connections.
    pub inflight: limits::Inflight,
    /// Connections per client address.
    pub addresses: limits::AddressLimits,
    /// Query admission, shared query memory, running and recent queries.
    pub queries: Arc<limits::QueryGate>,
    /// Series cached by line-protocol connections, all together.
    pub series_cache_budget: Arc<series_cache::CacheBudget>,
    /// The digest that keys every series cache of the network front
    /// (seeded per process).
    pub text_digest: crate::hashing::TextDigest,
    /// Series text of the HTTP write endpoints.
    pub http_series: series_cache::SharedSeriesCache,
    /// The tokens requests must present (`None`: auth off).
    pub tokens: Option<Arc<TokenStore>>,
    /// TLS on the port (`None`: plain text only).
    pub tls: Option<Arc<super::tls::Tls>>,
    /// Moves when names may map to other series (a UID rename, dropped
    /// caches): line-protocol connections then drop their series caches.
    pub names_epoch: std::sync::atomic::AtomicU64,
    /// When the server started (`tsd.uptime` of `/api/stats`).
    pub started: std::time::Instant,
}

impl Ctx {
    /// `tokens`: the token store when `[auth] enabled`; `tls`: when
    /// `[server.tls]` names a certificate.
    pub fn new(
        engine: Arc<Engine>,
        config: Config,
        tokens: Option<Arc<TokenStore>>,
        tls: Option<Arc<super::tls::Tls>>,
    ) -> Arc<Self> {
        let limits = Limits {
            max_tags: config.schema.max_tags,
            max_name_len: config.schema.max_name_bytes,
            max_line_len: config.server.max_line_bytes,
        };
        let metrics = engine.metrics().clone();
        let q = &config.query;
        let queries = Arc::new(limits::QueryGate::new(
            q.max_concurrent,
            q.max_queued,
            Duration::from_millis(q.queue_timeout_ms),
            q.max_memory_bytes,
        ));
        let text_digest = crate::hashing::TextDigest::random();
        Arc::new(Self {
            engine,
            inflight: limits::Inflight::new(
                config.server.max_inflight_bytes,
                config.server.inflight_per_address(),
            ),
            series_cache_budget: Arc::new(series_cache::CacheBudget::new(
                config.server.telnet_series_cache_bytes,
            )),
            http_series: series_cache::SharedSeriesCache::new(
                config.server.telnet_series_cache_bytes,
                text_digest,
            ),
            text_digest,
            addresses: limits::AddressLimits::new(config.server.max_connections_per_address),
            queries,
            tokens,
            tls,
            names_epoch: std::sync::atomic::AtomicU64::new(0),
            started: std::time::Instant::now(),
            config,
            limits,
            metrics,
            hostname: hostname(),
        })
    }

    /// Every series cache of the network front forgets what it holds: the
    /// shared HTTP one now, each line-protocol connection's at its next
    /// read.
    pub fn forget_series(&self) {
        self.http_series.clear();
        self.names_epoch
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Version banner for telnet `version` (two lines, like OpenTSDB's).
pub fn version_lines() -> String {
    format!(
        "hourglass {} (OpenTSDB 2.4 compatible) built at revision {}\nBuilt by the hourglass project\n",
        env!("CARGO_PKG_VERSION"),
        option_env!("HOURGLASS_GIT_REVISION").unwrap_or("unknown")
    )
}
