//! Server configuration: the TOML file (`config/hourglass.toml` documents
//! every option), defaults, command-line overrides and validation.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::codec::KeyLayout;
use crate::codec::rollup_cell::RowSpan;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub schema: SchemaConfig,
    pub uid: UidConfig,
    pub wal: WalConfig,
    pub head: HeadConfig,
    pub query: QueryConfig,
    pub retention: RetentionConfig,
    pub rollup: RollupConfig,
    pub auth: AuthConfig,
}

/// `[auth]`: access tokens (`docs/security.md`).
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Every HTTP request and line-protocol connection presents a token of
    /// the scope it needs (`hourglass token create`).
    pub enabled: bool,
    /// The token file; empty: `<data dir>/auth/tokens.json`.
    pub tokens_file: PathBuf,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueryConfig {
    pub max_points: usize,
    /// Values one query may hold in memory at once (buckets, output).
    pub max_values: usize,
    /// Time limit of one query (OpenTSDB `tsd.query.timeout`); 0 = none.
    pub timeout_secs: u64,
    /// Queries running at once; more wait in a queue.
    pub max_concurrent: usize,
    /// Queries waiting for a slot; beyond this, or after
    /// `queue_timeout_ms`, a query gets 503 with `Retry-After`.
    pub max_queued: usize,
    pub queue_timeout_ms: u64,
    /// Memory all running queries may hold for the points and series they
    /// read and the values they keep.
    pub max_memory_bytes: usize,
    /// Allow `/api/query` with `"delete": true` (OpenTSDB
    /// `tsd.http.query.allow_delete`).
    pub allow_delete: bool,
}

impl Default for QueryConfig {
    fn default() -> Self {
        Self {
            max_points: 10_000_000,
            max_values: 10_000_000,
            timeout_secs: 120,
            max_concurrent: 8,
            max_queued: 64,
            queue_timeout_ms: 10_000,
            max_memory_bytes: 1 << 30,
            allow_delete: false,
        }
    }
}

/// How long data is kept: a default and per-metric overrides (exact names,
/// or prefixes ending in `*`; the longest matching prefix wins). Durations
/// are `<n><unit>` with unit `s`, `m`, `h`, `d`, `w` or `y`; `"0"` keeps
/// data forever.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    pub ttl: String,
    pub metrics: std::collections::BTreeMap<String, String>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            ttl: "0".into(),
            metrics: Default::default(),
        }
    }
}

/// `[rollup]`: the rollup tiers hourglass computes from the hours it
/// flushes (`docs/rollups.md`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RollupConfig {
    pub enabled: bool,
    /// Finest first: `1h`, then intervals that are multiples of the one
    /// before (whole hours dividing a day, or whole days).
    pub tiers: Vec<RollupTierConfig>,
    /// OpenTSDB's `aggregationIds`: the id each aggregator's cells of
    /// rollups written from outside carry (`sum`, `count`, `min`, `max` are
    /// the ones queries read; the same as OpenTSDB's `tsd.rollups.config`
    /// when they share tables).
    pub aggregation_ids: std::collections::BTreeMap<String, u8>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RollupTierConfig {
    pub interval: String,
    /// How long the tier's values are kept (`0` = forever), as
    /// `retention.ttl`.
    #[serde(default = "forever")]
    pub ttl: String,
    /// OpenTSDB's `rowSpan` of this interval's rollups written from outside
    /// (`/api/rollup`): `<n>h`, `<n>d`, `1n` or `1y`; by default `1d` under a
    /// day, `1y` for `1d`, 32 intervals beyond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_span: Option<String>,
    /// On Bigtable, OpenTSDB's table of this interval's rollups written
    /// from outside, after `storage.bigtable.table_prefix`; by default
    /// `tsdb-rollup-<interval>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
}

/// One checked tier of [`RollupConfig::tiers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierSpec {
    /// Seconds.
    pub interval: u32,
    /// Seconds; `None` = forever.
    pub ttl: Option<u64>,
    /// The row span of its rollups written from outside.
    pub row_span: RowSpan,
    /// Its OpenTSDB rollup table on Bigtable (without the prefix).
    pub table: String,
}

fn forever() -> String {
    "0".into()
}

/// Most tiers a configuration may ask for.
pub const MAX_ROLLUP_TIERS: usize = 8;

impl RollupConfig {
    /// The tiers as (interval, TTL) in seconds (`None` = forever), finest
    /// first, checked: the first is `1h`, each next a multiple of the one
    /// before that divides a day or is whole days. None when rollups are
    /// off.
    pub fn tiers(&self) -> Result<Vec<TierSpec>, ConfigError> {
        const HOUR: u32 = 3600;
        const DAY: u32 = 86_400;
        if !self.enabled {
            return Ok(Vec::new());
        }
        let bad = |m: String| ConfigError::Invalid(format!("rollup.tiers: {m}"));
        let mut ids = std::collections::HashSet::new();
        for (name, id) in &self.aggregation_ids {
            if *id > 127 || !ids.insert(*id) || name.is_empty() || name.to_lowercase() != *name {
                return Err(ConfigError::Invalid(format!(
                    "rollup.aggregation_ids: {name:?} = {id}: names are lower-case and ids \
                     distinct, 0 to 127"
                )));
            }
        }
        if self.tiers.len() > MAX_ROLLUP_TIERS {
            return Err(bad(format!(
                "at most {MAX_ROLLUP_TIERS} tiers, got {}",
                self.tiers.len()
            )));
        }
        let mut out: Vec<TierSpec> = Vec::new();
        for t in &self.tiers {
            let interval = parse_ttl(&t.interval)
                .map_err(|e| bad(format!("interval: {e}")))?
                .ok_or_else(|| bad("interval \"0\" is not an interval".into()))?;
            let ttl = parse_ttl(&t.ttl).map_err(|e| bad(format!("ttl of {}: {e}", t.interval)))?;
            let interval = u32::try_from(interval)
                .ok()
                .filter(|i| *i <= 366 * DAY)
                .ok_or_else(|| bad(format!("interval {} is longer than a year", t.interval)))?;
            match out.last().map(|t| t.interval) {
                None if interval != HOUR => {
                    return Err(bad(format!(
                        "the first tier must be \"1h\" (the others are built from it), got {:?}",
                        t.interval
                    )));
                }
                Some(prev) if interval <= prev || !interval.is_multiple_of(prev) => {
                    return Err(bad(format!(
                        "interval {} is not a multiple of the tier before it ({prev}s)",
                        t.interval
                    )));
                }
                _ => {}
            }
            if (interval < DAY && !DAY.is_multiple_of(interval))
                || (interval > DAY && !interval.is_multiple_of(DAY))
            {
                return Err(bad(format!(
                    "interval {} must divide a day or be whole days",
                    t.interval
                )));
            }
            let row_span = match &t.row_span {
                Some(text) => RowSpan::parse(text, interval)
                    .map_err(|e| bad(format!("row_span of {}: {e}", t.interval)))?,
                None => RowSpan::default_for(interval),
            };
            let table = t
                .table
                .clone()
                .unwrap_or_else(|| format!("tsdb-rollup-{}", t.interval.trim()));
            if table.is_empty()
                || out.iter().any(|o| o.table == table)
                || ["tsdb", "tsdb-uid", "tsdb-meta", "tsdb-tree"].contains(&table.as_str())
            {
                return Err(bad(format!(
                    "table of {}: {table:?} is empty, another tier's or one of OpenTSDB's own",
                    t.interval
                )));
            }
            if matches!(row_span, RowSpan::Month | RowSpan::Year) && interval > DAY {
                return Err(bad(format!(
                    "row_span of {}: a calendar span would not keep its intervals on the \
                     epoch-aligned buckets queries use; give a span of whole days (`{}d` …)",
                    t.interval,
                    interval / DAY * 32
                )));
            }
            out.push(TierSpec {
                interval,
                ttl,
                row_span,
                table,
            });
        }
        Ok(out)
    }
}

impl Default for RollupConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            tiers: vec![
                RollupTierConfig {
                    interval: "1h".into(),
                    ttl: "0".into(),
                    row_span: None,
                    table: None,
                },
                RollupTierConfig {
                    interval: "1d".into(),
                    ttl: "0".into(),
                    row_span: None,
                    table: None,
                },
            ],
            aggregation_ids: [("sum", 0), ("count", 1), ("min", 2), ("max", 3)]
                .into_iter()
                .map(|(n, id)| (n.to_string(), id))
                .collect(),
        }
    }
}

/// Parses a retention duration into seconds; `0` means forever (`None`).
pub fn parse_ttl(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(None);
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits]
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected <number><unit>, e.g. 90d"))?;
    let unit = match &t[digits..] {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "y" => 365 * 86_400,
        other => {
            return Err(format!(
                "invalid duration {text:?}: unknown unit {other:?} (use s, m, h, d, w or y)"
            ));
        }
    };
    match n.checked_mul(unit) {
        Some(0) => Ok(None),
        Some(secs) => Ok(Some(secs)),
        None => Err(format!("invalid duration {text:?}: too large")),
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: String,
    pub port: u16,
    pub max_connections: usize,
    /// Connections one client address may hold at once.
    pub max_connections_per_address: usize,
    pub max_line_bytes: usize,
    /// Longest InfluxDB line on the line-protocol port (Telegraf writes a
    /// metric's every field on one line, often past `max_line_bytes`).
    pub max_influx_line_bytes: usize,
    pub max_body_bytes: usize,
    /// Bytes of request bodies and line-protocol input being decoded and
    /// written at once, across all connections.
    pub max_inflight_bytes: usize,
    /// The part of `max_inflight_bytes` one client address may hold; 0 =
    /// half of it (at least `max_body_bytes`).
    pub max_inflight_bytes_per_address: usize,
    pub telnet_error_queue: usize,
    /// Bytes the line-protocol connections' series caches take, all
    /// connections together (digest of the raw series text → resolved
    /// series, and the series keys those keep alive); also the bound of
    /// the HTTP write endpoints' shared cache.
    pub telnet_series_cache_bytes: usize,
    /// Batches a line-protocol connection may have in the WAL, not yet
    /// durable, while it reads on.
    pub telnet_batches_in_flight: usize,
    pub first_byte_timeout_secs: u64,
    /// A line-protocol connection holding an incomplete line this long is
    /// closed.
    pub line_timeout_secs: u64,
    /// Time allowed for an HTTP request's headers.
    pub http_header_timeout_secs: u64,
    /// Time allowed for an HTTP request body, plus one second for every
    /// `http_min_body_rate` bytes received: a body must keep arriving at
    /// that rate.
    pub http_body_timeout_secs: u64,
    pub http_min_body_rate: u64,
    pub idle_timeout_secs: u64,
    /// Origins whose browser requests may use the API (OpenTSDB
    /// `tsd.http.request.cors_domains`); `["*"]` allows any.
    pub cors_domains: Vec<String>,
    /// `Access-Control-Allow-Headers` (`tsd.http.request.cors_headers`).
    pub cors_headers: String,
    /// TLS on the same port (`docs/security.md`).
    pub tls: TlsConfig,
}

/// `[server.tls]`: TLS for HTTP and the line protocols on the server's port.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain (the server's first); empty: no TLS.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// Refuse connections that do not start a TLS handshake.
    pub required: bool,
}

impl ServerConfig {
    /// The in-flight bytes one client address may hold.
    pub fn inflight_per_address(&self) -> usize {
        match self.max_inflight_bytes_per_address {
            0 => (self.max_inflight_bytes / 2).max(self.max_body_bytes),
            n => n,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1".into(),
            port: 4242,
            max_connections: 4096,
            max_connections_per_address: 1024,
            max_line_bytes: 1024,
            max_influx_line_bytes: 64 << 10,
            max_body_bytes: 64 << 20,
            max_inflight_bytes: 256 << 20,
            max_inflight_bytes_per_address: 0,
            telnet_error_queue: 64,
            telnet_series_cache_bytes: 64 << 20,
            telnet_batches_in_flight: 8,
            first_byte_timeout_secs: 30,
            line_timeout_secs: 60,
            http_header_timeout_secs: 30,
            http_body_timeout_secs: 30,
            http_min_body_rate: 16 << 10,
            idle_timeout_secs: 0,
            cors_domains: Vec::new(),
            cors_headers: "Authorization, Content-Type, Accept, Origin, User-Agent, DNT, Cache-Control, X-Mx-ReqToken, Keep-Alive, X-Requested-With, If-Modified-Since".into(),
            tls: TlsConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    pub backend: Backend,
    pub memtable_bytes: usize,
    pub max_meta_files: usize,
    pub window_hours: u64,
    pub merged_window_hours: u64,
    pub block_cache_bytes: u64,
    pub bloom_bits_per_key: usize,
    pub compaction_interval_secs: u64,
    pub repair: bool,
    pub bigtable: BigtableConfig,
}

/// Which store holds the data (`[storage] backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// This process, `data_dir` on local disk.
    #[default]
    Embedded,
    /// Cloud Bigtable (or its emulator), shared by several nodes; needs a
    /// build with the `bigtable` feature.
    Bigtable,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Bigtable => "bigtable",
        }
    }
}

/// `[storage.bigtable]`: where the tables are and how to reach them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BigtableConfig {
    pub project: String,
    pub instance: String,
    pub table_prefix: String,
    pub app_profile: String,
    pub credentials_file: String,
    pub endpoint: String,
    pub create_tables: bool,
    pub timeout_ms: u64,
    pub max_mutations_per_request: usize,
    pub max_decoding_message_bytes: usize,
}

impl Default for BigtableConfig {
    fn default() -> Self {
        Self {
            project: String::new(),
            instance: String::new(),
            table_prefix: String::new(),
            app_profile: String::new(),
            credentials_file: String::new(),
            endpoint: String::new(),
            create_tables: true,
            timeout_ms: 30_000,
            max_mutations_per_request: 50_000,
            max_decoding_message_bytes: 256 << 20,
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./data"),
            backend: Backend::Embedded,
            memtable_bytes: 8 << 20,
            max_meta_files: 16,
            window_hours: 2,
            merged_window_hours: 24,
            block_cache_bytes: 64 << 20,
            bloom_bits_per_key: 10,
            compaction_interval_secs: 10,
            repair: false,
            bigtable: BigtableConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchemaConfig {
    pub salt_width: usize,
    pub salt_buckets: u32,
    pub metric_width: usize,
    pub tagk_width: usize,
    pub tagv_width: usize,
    pub max_tags: usize,
    /// Longest metric name, tag key or tag value, in bytes, on every
    /// protocol.
    pub max_name_bytes: usize,
}

impl Default for SchemaConfig {
    fn default() -> Self {
        let l = KeyLayout::default();
        Self {
            salt_width: l.salt_width,
            salt_buckets: l.salt_buckets,
            metric_width: l.metric_width,
            tagk_width: l.tagk_width,
            tagv_width: l.tagv_width,
            max_tags: 8,
            max_name_bytes: hourglass_ingest::DEFAULT_MAX_NAME_LEN,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct UidConfig {
    pub auto_create_metrics: bool,
    pub auto_create_tagks: bool,
    pub auto_create_tagvs: bool,
    /// Names cached per kind (metric, tag key, tag value), in each
    /// direction.
    pub cache_entries: usize,
}

impl Default for UidConfig {
    fn default() -> Self {
        Self {
            auto_create_metrics: true,
            auto_create_tagks: true,
            auto_create_tagvs: true,
            cache_entries: 1_000_000,
        }
    }
}

/// When a write is acknowledged relative to the WAL reaching stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// Acknowledge after the WAL frame is fsynced (group commit). Survives
    /// power loss.
    Always,
    /// Acknowledge after the frame is written to the OS; fsync every
    /// `fsync_interval_ms`. Survives a crash of the server, loses at most the
    /// interval on power loss.
    Interval,
    /// Never fsync the WAL (tests and throwaway data).
    Never,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalConfig {
    pub fsync: FsyncPolicy,
    pub fsync_interval_ms: u64,
    pub checkpoint_bytes: u64,
    pub max_pending_bytes: usize,
}

impl Default for WalConfig {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::Always,
            fsync_interval_ms: 1000,
            checkpoint_bytes: 128 << 20,
            max_pending_bytes: 16 << 20,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeadConfig {
    pub flush_interval_secs: u64,
    pub flush_grace_secs: u64,
    /// Memory the head may use for points before the oldest hours are
    /// flushed early; writers are slowed down at twice this.
    pub max_bytes: usize,
    /// Series kept in the series registry. Past it the flusher brings the
    /// registry back to three quarters of it: idle series (no points in the
    /// head) are forgotten first, then the longest silent series have their
    /// open hours written out and are forgotten; any of them is looked up
    /// again when it returns. Writes naming new series are refused while
    /// the registry holds a quarter more than this.
    pub max_series: usize,
    /// A series whose newest point is this many seconds older than the
    /// newest point the head holds (or than now, if that is earlier) has
    /// stopped: its open hours are written out and it leaves memory (a
    /// Kubernetes pod's series after the pod is gone). A point that comes
    /// later is a late point. 0 = never.
    pub idle_flush_secs: u64,
}

impl Default for HeadConfig {
    fn default() -> Self {
        Self {
            flush_interval_secs: 30,
            flush_grace_secs: 600,
            max_bytes: 256 << 20,
            max_series: 1_000_000,
            idle_flush_secs: 300,
        }
    }
}

impl Config {
    /// Loads a config file (or the defaults when `path` is `None`).
    /// Reads and validates a config file (`None`: the defaults).
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let cfg = Self::read(path)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads a config file without validating it (command-line overrides
    /// come first).
    pub fn read(path: Option<&Path>) -> Result<Self, ConfigError> {
        Ok(match path {
            None => Config::default(),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: p.to_path_buf(),
                    source: Box::new(e),
                })?
            }
        })
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.schema;
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if s.salt_width > 8 {
            return bad(format!(
                "schema.salt_width must be 0..=8, got {}",
                s.salt_width
            ));
        }
        if s.salt_buckets == 0 || s.salt_buckets > i32::MAX as u32 {
            return bad(format!(
                "schema.salt_buckets must be at least 1, got {}",
                s.salt_buckets
            ));
        }
        if s.salt_width > 0
            && s.salt_width < 4
            && u64::from(s.salt_buckets) > 1u64 << (8 * s.salt_width)
        {
            return bad(format!(
                "schema.salt_buckets {} does not fit in salt_width {}",
                s.salt_buckets, s.salt_width
            ));
        }
        for (name, w) in [
            ("metric_width", s.metric_width),
            ("tagk_width", s.tagk_width),
            ("tagv_width", s.tagv_width),
        ] {
            if !(1..=8).contains(&w) {
                return bad(format!("schema.{name} must be 1..=8, got {w}"));
            }
        }
        if s.max_tags == 0 {
            return bad("schema.max_tags must be at least 1".into());
        }
        if !(1..=65_536).contains(&s.max_name_bytes) {
            return bad(format!(
                "schema.max_name_bytes must be 1..=65536, got {}",
                s.max_name_bytes
            ));
        }
        if self.storage.backend == Backend::Bigtable {
            if !cfg!(feature = "bigtable") {
                return bad("storage.backend \"bigtable\" is not available in this build: build with `cargo build --release --features bigtable`".into());
            }
            let bt = &self.storage.bigtable;
            if bt.project.is_empty() || bt.instance.is_empty() {
                return bad("storage.bigtable.project and storage.bigtable.instance must be set for the bigtable backend".into());
            }
            if bt.max_mutations_per_request == 0 || bt.max_mutations_per_request > 100_000 {
                return bad(format!(
                    "storage.bigtable.max_mutations_per_request must be 1..=100000 (Bigtable's limit), got {}",
                    bt.max_mutations_per_request
                ));
            }
            if bt.timeout_ms == 0 {
                return bad("storage.bigtable.timeout_ms must be at least 1".into());
            }
        }
        let sv = &self.server;
        if sv.max_connections_per_address == 0
            || sv.max_connections_per_address > sv.max_connections
        {
            return bad(format!(
                "server.max_connections_per_address must be 1..=max_connections ({}), got {}",
                sv.max_connections, sv.max_connections_per_address
            ));
        }
        if sv.cors_domains.len() > 1 && sv.cors_domains.iter().any(|d| d == "*") {
            return bad("server.cors_domains: \"*\" cannot be mixed with named origins".into());
        }
        if sv.max_inflight_bytes < sv.max_body_bytes {
            return bad("server.max_inflight_bytes must be at least server.max_body_bytes".into());
        }
        if sv.max_inflight_bytes_per_address != 0
            && !(sv.max_body_bytes..=sv.max_inflight_bytes)
                .contains(&sv.max_inflight_bytes_per_address)
        {
            return bad(format!(
                "server.max_inflight_bytes_per_address must be 0 (half of max_inflight_bytes) or between max_body_bytes ({}) and max_inflight_bytes ({}), got {}",
                sv.max_body_bytes, sv.max_inflight_bytes, sv.max_inflight_bytes_per_address
            ));
        }
        if self.query.max_concurrent == 0 {
            return bad("query.max_concurrent must be at least 1".into());
        }
        if self.server.max_line_bytes < 64 {
            return bad("server.max_line_bytes must be at least 64".into());
        }
        if self.server.max_influx_line_bytes < 64 {
            return bad("server.max_influx_line_bytes must be at least 64".into());
        }
        if self.head.flush_interval_secs == 0 {
            return bad("head.flush_interval_secs must be at least 1".into());
        }
        let st = &self.storage;
        if st.window_hours == 0
            || st.merged_window_hours == 0
            || !st.merged_window_hours.is_multiple_of(st.window_hours)
            || !24u64.is_multiple_of(st.window_hours.min(24))
        {
            return bad(format!(
                "storage.window_hours ({}) must divide 24 and storage.merged_window_hours ({})",
                st.window_hours, st.merged_window_hours
            ));
        }
        if st.compaction_interval_secs == 0 {
            return bad("storage.compaction_interval_secs must be at least 1".into());
        }
        parse_ttl(&self.retention.ttl)
            .map_err(|e| ConfigError::Invalid(format!("retention.ttl: {e}")))?;
        self.rollup.tiers()?;
        for (metric, ttl) in &self.retention.metrics {
            parse_ttl(ttl)
                .map_err(|e| ConfigError::Invalid(format!("retention.metrics.{metric:?}: {e}")))?;
        }
        Ok(())
    }

    pub fn layout(&self) -> KeyLayout {
        let s = &self.schema;
        KeyLayout {
            salt_width: s.salt_width,
            salt_buckets: s.salt_buckets,
            metric_width: s.metric_width,
            tagk_width: s.tagk_width,
            tagv_width: s.tagv_width,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_config_file_parses_to_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/hourglass.toml");
        let cfg = Config::load(Some(&path)).unwrap();
        let def = Config::default();
        assert_eq!(format!("{cfg:?}"), format!("{def:?}"));
    }

    #[test]
    fn rejects_bad_values_and_unknown_keys() {
        assert!(toml::from_str::<Config>("[schema]\nsalt_widht = 2").is_err());
        let mut c = Config::default();
        c.schema.salt_buckets = 0;
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.schema.salt_buckets = 300;
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.schema.metric_width = 9;
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.retention.ttl = "5x".into();
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.storage.window_hours = 5;
        assert!(c.validate().is_err());
    }

    #[test]
    fn rollup_tables_follow_opentsdb_names_and_spans() {
        let tiers = RollupConfig::default().tiers().unwrap();
        assert_eq!(
            (tiers[0].row_span, tiers[0].table.as_str()),
            (RowSpan::Secs(86_400), "tsdb-rollup-1h")
        );
        assert_eq!(
            (tiers[1].row_span, tiers[1].table.as_str()),
            (RowSpan::Year, "tsdb-rollup-1d")
        );
        let c: Config = toml::from_str(
            "[rollup]\ntiers = [{ interval = \"1h\", row_span = \"6h\", table = \"r1h\" }, \
             { interval = \"1d\", row_span = \"1n\" }]",
        )
        .unwrap();
        let tiers = c.rollup.tiers().unwrap();
        assert_eq!(
            (tiers[0].row_span, tiers[0].table.as_str()),
            (RowSpan::Secs(21_600), "r1h")
        );
        assert_eq!(tiers[1].row_span, RowSpan::Month);
        for bad in [
            "{ interval = \"1h\", row_span = \"1y\" }",
            "{ interval = \"1h\", row_span = \"90m\" }",
            "{ interval = \"1h\", table = \"\" }",
        ] {
            let c: Config = toml::from_str(&format!("[rollup]\ntiers = [{bad}]")).unwrap();
            let e = c.rollup.tiers().unwrap_err().to_string();
            assert!(e.contains("of 1h"), "{bad}: {e}");
        }
    }

    #[test]
    fn ttl_durations() {
        assert_eq!(parse_ttl("0"), Ok(None));
        assert_eq!(parse_ttl("90d"), Ok(Some(90 * 86_400)));
        assert_eq!(parse_ttl("12h"), Ok(Some(43_200)));
        assert_eq!(parse_ttl("1y"), Ok(Some(365 * 86_400)));
        assert!(parse_ttl("d").is_err());
        assert!(parse_ttl("3 days").is_err());
        assert!(parse_ttl("99999999999999999999y").is_err());
    }
}
