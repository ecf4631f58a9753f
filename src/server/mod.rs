//! The network front: one TCP listener serving every protocol, as OpenTSDB
//! does. The first bytes of a connection decide: an HTTP method token and its
//! space (`GET `, `POST `, …; [`hourglass_ingest::port::sniff_connection`])
//! is HTTP (axum on hyper) for the life of the connection, anything else is
//! the line protocol, where each line is an OpenTSDB command or an InfluxDB
//! line (`telnet.rs`). OpenTSDB's own rule (first byte `A`–`Z` is HTTP) would
//! send an InfluxDB line such as `CPU,host=a v=1` to the HTTP decoder.
//! Connections are capped by a semaphore taken before the connection is
//! served.
//! `influx` and `prom` serve the InfluxDB and Prometheus HTTP endpoints.
//!
//! * `http` — routing and the core endpoints; `api` — helpers for the
//!   endpoints in their own files: `api_search` (`/api/search/*`),
//!   `api_last` (`/api/query/last`), `api_uid` (`/api/uid/*`),
//!   `api_config` (`/api/config`, `/api/serializers`), `api_arrow` (the
//!   Arrow output format of `/api/query`), `api_annotation`
//!   (`/api/annotation[/bulk]`, `/api/annotations`).
//! * `series_cache` — a line-protocol connection's raw series text →
//!   resolved series, under a budget shared by all connections.

pub mod api;
pub mod api_annotation;
pub mod api_arrow;
pub mod api_config;
pub mod api_last;
pub mod api_search;
pub mod api_uid;
pub mod body;
pub mod cors;
pub mod error;
pub mod http;
pub mod influx;
pub mod limits;
pub mod line;
pub mod prom;
pub mod series_cache;
pub mod write;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::Limits;
use hourglass_ingest::port::{ConnectionKind, SNIFF_LEN, sniff_connection};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

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
    /// Series text cached by line-protocol connections, all together.
    pub series_cache_budget: Arc<series_cache::CacheBudget>,
    /// Series text of the HTTP write endpoints.
    pub http_series: series_cache::SharedSeriesCache,
}

impl Ctx {
    pub fn new(engine: Arc<Engine>, config: Config) -> Arc<Self> {
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
            ),
            addresses: limits::AddressLimits::new(config.server.max_connections_per_address),
            queries,
            config,
            limits,
            metrics,
            hostname: hostname(),
        })
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

/// Accepts connections until `shutdown` resolves, then stops accepting,
/// tells open connections to finish, and waits up to `drain` for them.
pub async fn run(
    listener: TcpListener,
    ctx: Arc<Ctx>,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) {
    let max = ctx.config.server.max_connections.max(1);
    let permits = Arc::new(Semaphore::new(max));
    let (stop_tx, stop_rx) = watch::channel(false);
    let app = http::service(Arc::clone(&ctx));
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(5);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            res = listener.accept() => {
                let (stream, peer) = match res {
                    Ok(x) => { backoff = Duration::from_millis(5); x }
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                        continue;
                    }
                };
                let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                    ctx.metrics.connections.with_label_values(&["rejected"]).inc();
                    drop(stream);
                    continue;
                };
                // One address may not take every slot.
                let Some(slot) = ctx.addresses.admit(peer.ip()) else {
                    ctx.metrics.connections.with_label_values(&["rejected_address"]).inc();
                    drop(stream);
                    continue;
                };
                let ctx = Arc::clone(&ctx);
                let app = app.clone();
                let stop = stop_rx.clone();
                tokio::spawn(async move {
                    ctx.metrics.connections_open.inc();
                    serve_connection(&ctx, stream, peer, app, stop).await;
                    ctx.metrics.connections_open.dec();
                    drop(slot);
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    // Running queries stop at their next check; connections finish.
    ctx.queries.cancel_all();
    let _ = stop_tx.send(true);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(drain, permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open at shutdown");
    }
}

async fn serve_connection(
    ctx: &Arc<Ctx>,
    stream: TcpStream,
    peer: SocketAddr,
    app: http::AppService,
    stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; SNIFF_LEN];
    let mut stop_peek = stop.clone();
    let first_byte = Duration::from_secs(ctx.config.server.first_byte_timeout_secs.max(1));
    let n = tokio::select! {
        r = stream.peek(&mut first) => match r { Ok(n) => n, Err(_) => return },
        _ = stop_peek.changed() => return,
        () = tokio::time::sleep(first_byte) => return,
    };
    if n == 0 {
        return; // a probe that connected and closed (Telegraf, the Go client)
    }
    let mut kind = sniff_connection(&first[..n]);
    // The bytes so far are a prefix of a method token ("PO"): wait for more.
    // Peeking cannot see the end of the stream behind pending bytes, so the
    // wait is bounded; after it the connection is the line protocol.
    let sniff_deadline = tokio::time::Instant::now() + first_byte;
    while kind == ConnectionKind::NeedMoreBytes {
        if tokio::time::Instant::now() >= sniff_deadline || *stop.borrow() {
            kind = ConnectionKind::LineProtocol;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        let n = match stream.peek(&mut first).await {
            Ok(n) => n,
            Err(_) => return,
        };
        kind = sniff_connection(&first[..n]);
    }
    if kind == ConnectionKind::Http {
        ctx.metrics.connections.with_label_values(&["http"]).inc();
        http::serve(
            stream,
            app,
            stop,
            ctx.config.server.http_header_timeout_secs,
            peer,
        )
        .await;
    } else {
        ctx.metrics.connections.with_label_values(&["telnet"]).inc();
        line::serve(Arc::clone(ctx), stream, peer, stop).await;
    }
}
