//! The HTTP API: OpenTSDB's `/api/put`, `/api/query`, `/api/suggest`,
//! `/api/version`, `/api/aggregators`, `/api/config/filters`,
//! `/api/dropcaches`, `/api/stats`; the InfluxDB write API (`/write`,
//! `/api/v2/write`, `/ping`, `/query`: `influx.rs`); Prometheus remote write
//! and read (`/api/v1/write`, `/api/v1/read`: `prom.rs`); and hourglass's
//! own metrics at `/metrics`.
//!
//! Paths are normalised before routing as OpenTSDB does: a trailing slash is
//! ignored, `/api/v1/...` is the same as `/api/...`, higher API versions get
//! 501, and the endpoint name is case-insensitive. The three foreign paths
//! under `/api/` are kept as they are before that rule applies:
//! `/api/v1/write` and `/api/v1/read` are Prometheus's (OpenTSDB has no
//! `/api/write` or `/api/read`), `/api/v2/write` is InfluxDB 2.x's.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hourglass_ingest::decode_put_body;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::util::MapRequest;

use super::Ctx;
use super::cors::OriginCheck;
use super::error::ApiError;
use crate::engine::PointError;
use crate::uid::{UidError, UidKind};

type Incoming = hyper::Request<hyper::body::Incoming>;
pub type AppService = MapRequest<Router, fn(Incoming) -> Incoming>;

pub(super) type Params = Vec<(String, String)>;

pub fn service(ctx: Arc<Ctx>) -> AppService {
    let limit = ctx.config.server.max_body_bytes;
    let router = Router::new()
        .route("/api/put", post(put))
        .route("/api/query", get(query_get).post(query_post))
        .route("/api/suggest", get(suggest_get).post(suggest_post))
        .route("/api/version", get(version))
        .route("/api/aggregators", get(aggregators))
        .route("/api/config/filters", get(filters).post(filters))
        .route("/api/dropcaches", post(dropcaches).delete(dropcaches))
        .route("/api/stats", get(stats).post(stats))
        .route("/api/stats/query", get(stats_query))
        .route(
            "/api/query/last",
            get(super::api_last::last_get).post(super::api_last::last_post),
        )
        .route(
            "/api/annotation",
            get(super::api_annotation::annotation)
                .post(super::api_annotation::annotation)
                .put(super::api_annotation::annotation)
                .delete(super::api_annotation::annotation),
        )
        .route(
            "/api/annotation/bulk",
            post(super::api_annotation::bulk)
                .put(super::api_annotation::bulk)
                .delete(super::api_annotation::bulk),
        )
        .route("/api/annotations", get(super::api_annotation::globals))
        .route(
            "/api/config",
            get(super::api_config::config).post(super::api_config::config),
        )
        .route("/api/serializers", get(super::api_config::serializers))
        .route("/api/uid/assign", post(super::api_uid::assign_post))
        .route("/api/uid/uidmeta", get(super::api_uid::uidmeta_get))
        .route("/api/uid/tsmeta", get(super::api_uid::tsmeta_get))
        .route("/api/uid/rename", post(super::api_uid::rename_post))
        .route("/api/uid/{x}", axum::routing::any(super::api_uid::other))
        .route(
            "/api/search/lookup",
            get(super::api_search::lookup_get).post(super::api_search::lookup_post),
        )
        .route(
            "/api/search/{kind}",
            get(super::api_search::other).post(super::api_search::other),
        )
        .route(
            "/api/__unsupported_version",
            axum::routing::any(unsupported_version),
        )
        .route("/write", post(super::influx::write_v1))
        .route("/api/v2/write", post(super::influx::write_v2))
        .route("/ping", get(super::influx::ping))
        .route(
            "/query",
            get(super::influx::query).post(super::influx::query),
        )
        .route("/api/v1/write", post(super::prom::remote_write))
        .route("/api/v1/read", post(super::prom::remote_read))
        .route("/metrics", get(metrics))
        .route("/", get(home))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            super::cors::layer,
        ))
        .with_state(ctx);
    MapRequest::new(
        router,
        normalize::<hyper::body::Incoming> as fn(Incoming) -> Incoming,
    )
}

/// The client's address, as an extension of every request; also an
/// extractor (a request without it, which only tests build, is from
/// `0.0.0.0:0`).
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub std::net::SocketAddr);

impl PeerAddr {
    pub fn ip(self) -> std::net::IpAddr {
        self.0.ip()
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PeerAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<PeerAddr>()
            .copied()
            .unwrap_or(PeerAddr(std::net::SocketAddr::from(([0, 0, 0, 0], 0)))))
    }
}

/// Serves one HTTP/1.1 connection until it closes or the server stops.
/// Headers must arrive within `header_timeout_secs` (bodies have their own
/// deadline, see `body.rs`).
pub async fn serve(
    stream: TcpStream,
    app: AppService,
    mut stop: watch::Receiver<bool>,
    header_timeout_secs: u64,
    peer: std::net::SocketAddr,
) {
    let svc = MapRequest::new(app, move |mut req: Incoming| {
        req.extensions_mut().insert(PeerAddr(peer));
        req
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_secs(header_timeout_secs.max(1)))
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Paths under `/api/` that belong to other systems' APIs and so escape
/// OpenTSDB's version rule (`/api/v1/x` = `/api/x`, `/api/v2/...` = 501).
const FOREIGN_API_PATHS: [&str; 3] = ["/api/v1/write", "/api/v1/read", "/api/v2/write"];

/// Rewrites the request path to its canonical route.
fn normalize<B>(mut req: hyper::Request<B>) -> hyper::Request<B> {
    let uri = req.uri();
    let path = uri.path();
    let mut p = path.trim_end_matches('/').to_string();
    if p.is_empty() {
        p.push('/');
    }
    let lower = p.to_ascii_lowercase();
    if FOREIGN_API_PATHS.contains(&lower.as_str()) {
        p = lower;
    } else if lower == "/api" || lower.starts_with("/api/") {
        let mut segs: Vec<&str> = lower.split('/').skip(2).collect();
        if let Some(v) = segs.first().and_then(|s| s.strip_prefix('v'))
            && !v.is_empty()
            && v.bytes().all(|b| b.is_ascii_digit())
        {
            if v.parse::<u32>().map_or(true, |n| n > 1) {
                segs = vec!["__unsupported_version"];
            } else {
                segs.remove(0);
            }
        }
        p = format!("/api/{}", segs.join("/"));
    }
    if p != path {
        let pq = match uri.query() {
            Some(q) => format!("{p}?{q}"),
            None => p,
        };
        if let Ok(new) = pq.parse::<axum::http::uri::PathAndQuery>() {
            let mut parts = uri.clone().into_parts();
            parts.path_and_query = Some(new);
            if let Ok(u) = Uri::from_parts(parts) {
                *req.uri_mut() = u;
            }
        }
    }
    req
}

pub(super) fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        body.into(),
    )
        .into_response()
}

/// Turns a handler result into the response and counts it by endpoint and
/// status.
pub(super) fn respond(ctx: &Ctx, endpoint: &str, r: Result<Response, ApiError>) -> Response {
    let resp = r.unwrap_or_else(IntoResponse::into_response);
    ctx.metrics
        .http_requests
        .with_label_values(&[endpoint, resp.status().as_str()])
        .inc();
    resp
}

fn has_flag(params: &Params, name: &str) -> bool {
    params
        .iter()
        .any(|(k, v)| k == name && !v.eq_ignore_ascii_case("false"))
}

pub(super) fn param<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn put(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let r = put_inner(&ctx, &params, &headers, peer, body).await;
    respond(&ctx, "put", r)
}

async fn put_inner(
    ctx: &Arc<Ctx>,
    params: &Params,
    headers: &HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Result<Response, ApiError> {
    let read = super::body::read(ctx, headers, peer.ip(), body).await?;
    let body = &read.bytes;
    let details = has_flag(params, "details");
    let summary = details || has_flag(params, "summary");
    // Every put waits until its points are durable in the write-ahead log
    // (which is what `sync` asks for); `sync_timeout` bounds that wait.
    let sync_timeout_ms = match param(params, "sync_timeout") {
        Some(v) if has_flag(params, "sync") => v
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("Unable to parse sync_timeout: {v}")))?,
        _ => 0,
    };
    let items = decode_put_body(body).map_err(|e| {
        let err = ApiError::bad_request(e.message());
        match e.details() {
            Some(d) => err.with_details(d),
            None => err,
        }
    })?;
    let (receipt, mut errors) = write_json_points(ctx, &items)?;
    let mut timeouts = 0usize;
    if receipt.lsn > 0 {
        let wait = ctx.engine.wait_durable(receipt.lsn);
        if sync_timeout_ms > 0 {
            match tokio::time::timeout(std::time::Duration::from_millis(sync_timeout_ms), wait)
                .await
            {
                Ok(r) => r?,
                Err(_) => timeouts = receipt.accepted,
            }
        } else {
            wait.await?;
        }
    }
    errors.sort_by_key(|e| e.0);
    let failed = errors.len();
    let success = receipt.accepted - timeouts;
    if timeouts > 0 && !summary {
        return Err(ApiError::bad_request(format!(
            "The put call has timedout with {success} successful writes, {failed} failed writes and {timeouts} timed out writes."
        )));
    }
    if !summary {
        if failed > 0 {
            return Err(ApiError::bad_request("One or more data points had errors")
                .with_details("Please see the TSD logs or append \"details\" to the put request"));
        }
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let mut out = serde_json::Map::new();
    if details {
        let errs: Vec<serde_json::Value> = errors
            .iter()
            .map(|(i, msg)| serde_json::json!({"datapoint": items[*i].echo(), "error": msg}))
            .collect();
        out.insert("errors".into(), serde_json::Value::Array(errs));
    }
    out.insert("failed".into(), failed.into());
    out.insert("success".into(), success.into());
    if sync_timeout_ms > 0 {
        out.insert("timeouts".into(), timeouts.into());
    }
    let status = if failed > 0 || timeouts > 0 {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(json_response(
        status,
        serde_json::Value::Object(out).to_string(),
    ))
}

/// Writes the elements of an `/api/put` body: an element whose metric and
/// tags text was accepted before skips tag decoding, validation and series
/// lookup (the shared series cache); the others take the full path and
/// fill the cache. Returns the receipt and the per-element errors.
fn write_json_points(
    ctx: &Ctx,
    items: &[hourglass_ingest::JsonPoint<'_>],
) -> Result<(crate::engine::WriteReceipt, Vec<(usize, String)>), ApiError> {
    use super::series_cache::SharedSeriesCache;
    use crate::engine::{Entry, SeriesRef};
    let mut entries = Vec::with_capacity(items.len());
    let mut refs: Vec<SeriesRef> = Vec::new();
    // The element of each known series (to cache a series registered again).
    let mut ref_items: Vec<usize> = Vec::new();
    // Entry → element, and the cache keys of elements that took the long way.
    let mut index = Vec::with_capacity(items.len());
    let mut new_series: Vec<(usize, Box<[u8]>)> = Vec::new();
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut key = Vec::new();
    tokio::task::block_in_place(|| {
        for (i, item) in items.iter().enumerate() {
            let mut line_key = None;
            if let Some((metric, tags)) = item.series_text() {
                SharedSeriesCache::put_key(metric, tags, &mut key);
                if let Some(series) = ctx.http_series.get(&key)
                    && let [series] = &series[..]
                {
                    if let Some((ts, value)) = item.time_value() {
                        refs.push(series.clone());
                        ref_items.push(i);
                        entries.push(Entry::Known {
                            series: (refs.len() - 1) as u32,
                            timestamp: ts.0,
                            value,
                        });
                        index.push(i);
                        continue;
                    }
                } else {
                    line_key = Some(key.clone().into_boxed_slice());
                }
            }
            match item.to_point(&ctx.limits) {
                Ok(p) => {
                    if let Some(k) = line_key {
                        new_series.push((entries.len(), k));
                    }
                    entries.push(Entry::Point(p));
                    index.push(i);
                }
                Err(msg) => errors.push((i, msg)),
            }
        }
    });
    if !errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(errors.len() as u64);
    }
    let receipt = tokio::task::block_in_place(|| ctx.engine.write_entries(&refs, &entries))?;
    // A cached series whose head slot was given up was registered again:
    // cache the new one, or every later write registers it again.
    for (r, series) in &receipt.refreshed {
        if let Some((metric, tags)) = ref_items
            .get(*r as usize)
            .and_then(|i| items.get(*i))
            .and_then(|item| item.series_text())
        {
            SharedSeriesCache::put_key(metric, tags, &mut key);
            ctx.http_series
                .insert(key.clone().into_boxed_slice(), Arc::from([series.clone()]));
        }
    }
    if !new_series.is_empty() {
        let by_entry: std::collections::HashMap<usize, &SeriesRef> =
            receipt.series.iter().map(|(i, s)| (*i, s)).collect();
        for (entry, k) in new_series {
            if let Some(s) = by_entry.get(&entry) {
                ctx.http_series.insert(k, Arc::from([(*s).clone()]));
            }
        }
    }
    for (j, e) in &receipt.errors {
        let msg = match e {
            PointError::Uid(UidError::NoSuchName { .. }) => "Unknown metric".to_string(),
            other => other.to_string(),
        };
        errors.push((index[*j], msg));
    }
    Ok((receipt, errors))
}

async fn run_query(
    ctx: Arc<Ctx>,
    q: Result<hourglass_query::TsQuery, hourglass_query::error::QueryError>,
    origin: OriginCheck,
    peer: String,
    text: String,
    format: Result<super::api_arrow::Format, ApiError>,
) -> Response {
    let started = Instant::now();
    let arrow = matches!(format, Ok(super::api_arrow::Format::Arrow));
    let result: Result<Vec<u8>, ApiError> = async {
        let q = q?;
        format?;
        if q.delete {
            origin.refuse()?;
            if !ctx.config.query.allow_delete {
                return Err(ApiError::bad_request("Bad request")
                    .with_details("Deleting data is not enabled (query.allow_delete = false)"));
            }
        }
        // Admission, budget and timeout as for every query; if this future
        // is dropped (the client went away), the ticket's drop cancels the
        // budget and the blocking task stops at its next check.
        let engine = Arc::clone(&ctx.engine);
        super::api::run_budgeted(&ctx, text, peer, move |budget| {
            let results = hourglass_query::exec::execute_with_budget(&q, &*engine, budget)?;
            if q.delete {
                // The matched series lose their points in [start, end];
                // the answer still shows them, as OpenTSDB's does.
                let layout = *engine.layout();
                let keys: Vec<Vec<u8>> = results
                    .iter()
                    .flat_map(|r| r.tsuids.iter())
                    .filter_map(|hex| crate::codec::hex::decode(hex))
                    .filter_map(|t| layout.series_key_from_tsuid(&t))
                    .collect();
                engine.delete_points(&keys, q.start_ms, q.end_ms)?;
            }
            if arrow {
                return Ok(hourglass_query::render_arrow(&q, &results)?);
            }
            Ok(hourglass_query::render::render_json(&q, &results))
        })
        .await
    }
    .await;
    ctx.metrics
        .query_seconds
        .observe(started.elapsed().as_secs_f64());
    respond(
        &ctx,
        "query",
        result.map(|body| {
            if arrow {
                super::api_arrow::arrow_response(body)
            } else {
                json_response(StatusCode::OK, body)
            }
        }),
    )
}

pub(super) fn peer_of(ext: &axum::http::Extensions) -> String {
    ext.get::<PeerAddr>()
        .map_or_else(String::new, |p| p.0.to_string())
}

async fn query_get(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    uri: Uri,
    ext: axum::http::Extensions,
) -> Response {
    let format = super::api_arrow::format(&params, &headers);
    let q = hourglass_query::parse_query_string(&params, now_ms());
    let origin = ext
        .get::<OriginCheck>()
        .copied()
        .unwrap_or(OriginCheck::Allowed);
    run_query(ctx, q, origin, peer_of(&ext), uri.to_string(), format).await
}

async fn query_post(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    body: Body,
) -> Response {
    let format = super::api_arrow::format(&params, &headers);
    let read = match super::body::read(&ctx, &headers, super::api::peer_ip(&ext), body).await {
        Ok(b) => b,
        Err(e) => return respond(&ctx, "query", Err(e)),
    };
    let q = hourglass_query::parse_json_query(&read.bytes, &params, now_ms());
    let origin = ext
        .get::<OriginCheck>()
        .copied()
        .unwrap_or(OriginCheck::Allowed);
    let text = String::from_utf8_lossy(&read.bytes[..read.bytes.len().min(4096)]).into_owned();
    drop(read);
    run_query(ctx, q, origin, peer_of(&ext), text, format).await
}

fn suggest_run(
    ctx: &Arc<Ctx>,
    kind: Option<&str>,
    missing_msg: &str,
    q: &str,
    max: Option<&str>,
) -> Result<Response, ApiError> {
    let kind = kind
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ApiError::bad_request(missing_msg))?;
    let kind_enum = UidKind::parse(kind)
        .ok_or_else(|| ApiError::bad_request(format!("Invalid 'type' parameter:{kind}")))?;
    let max = match max {
        None | Some("") => 25,
        Some(m) => match m.trim().parse::<i64>() {
            Ok(n) if n < 1 => 25,
            Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
            Err(_) => return Err(ApiError::bad_request("Unable to parse 'max' as a number")),
        },
    };
    let names = tokio::task::block_in_place(|| ctx.engine.uids().suggest(kind_enum, q, max))?;
    Ok(json_response(
        StatusCode::OK,
        serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()),
    ))
}

async fn suggest_get(State(ctx): State<Arc<Ctx>>, Query(params): Query<Params>) -> Response {
    let r = suggest_run(
        &ctx,
        param(&params, "type"),
        "Missing parameter <code>type</code>",
        param(&params, "q").unwrap_or(""),
        param(&params, "max"),
    );
    respond(&ctx, "suggest", r)
}

async fn suggest_post(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let read = match super::body::read(&ctx, &headers, peer.ip(), body).await {
        Ok(b) => b,
        Err(e) => return respond(&ctx, "suggest", Err(e)),
    };
    let body = &read.bytes;
    let parsed: Result<serde_json::Value, _> = if body.is_empty() {
        Ok(serde_json::Value::Null)
    } else {
        serde_json::from_slice(body)
    };
    let r = match parsed {
        Err(e) => {
            Err(ApiError::bad_request("Unable to parse the given JSON").with_details(e.to_string()))
        }
        Ok(v) => {
            let s = |k: &str| -> Option<String> {
                v.get(k).and_then(|x| match x {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
            };
            // Fall back to the query string, as a GET would.
            let kind = s("type").or_else(|| param(&params, "type").map(str::to_string));
            let q = s("q")
                .or_else(|| param(&params, "q").map(str::to_string))
                .unwrap_or_default();
            let max = s("max").or_else(|| param(&params, "max").map(str::to_string));
            suggest_run(
                &ctx,
                kind.as_deref(),
                "Missing 'type' parameter",
                &q,
                max.as_deref(),
            )
        }
    };
    respond(&ctx, "suggest", r)
}

async fn version() -> Response {
    let v = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "short_revision": option_env!("HOURGLASS_GIT_REVISION").unwrap_or(""),
        "full_revision": option_env!("HOURGLASS_GIT_REVISION").unwrap_or(""),
        "timestamp": "",
        "repo_status": "",
        "user": "",
        "host": "",
        "repo": "hourglass",
        "branch": "",
        "compatibility": "OpenTSDB 2.4",
    });
    json_response(StatusCode::OK, v.to_string())
}

async fn aggregators() -> Response {
    json_response(
        StatusCode::OK,
        serde_json::to_string(hourglass_query::aggregate::AGGREGATOR_NAMES).unwrap_or_default(),
    )
}

async fn filters() -> Response {
    json_response(
        StatusCode::OK,
        hourglass_query::filter::filter_types().to_string(),
    )
}

async fn dropcaches(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.engine.drop_caches();
    ctx.http_series.clear();
    Json(serde_json::json!({"status": "200", "message": "Caches dropped"})).into_response()
}

async fn stats(State(ctx): State<Arc<Ctx>>) -> Response {
    let now = now_ms() / 1000;
    let entries: Vec<serde_json::Value> = tokio::task::block_in_place(|| ctx.engine.stats())
        .into_iter()
        .map(|(name, value, tags)| {
            let mut t = serde_json::Map::new();
            for (k, v) in tags {
                t.insert(k.to_string(), v.into());
            }
            t.insert("host".into(), ctx.hostname.clone().into());
            serde_json::json!({"metric": format!("tsd.{name}"), "timestamp": now, "value": value.to_string(), "tags": t})
        })
        .collect();
    json_response(
        StatusCode::OK,
        serde_json::Value::Array(entries).to_string(),
    )
}

/// `/api/stats/query`: running queries and up to 256 recent ones
/// (OpenTSDB's shape, with the fields hourglass has).
async fn stats_query(State(ctx): State<Arc<Ctx>>) -> Response {
    let ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    };
    let render = |r: &super::limits::QueryRecord| {
        let elapsed = r.elapsed.map_or(0, |d| d.as_millis() as u64);
        let mut o = serde_json::json!({
            "queryId": r.id,
            "query": r.query,
            "remote": r.remote,
            "queryStartTimestamp": ms(r.started),
            "elapsedMs": elapsed,
            "stats": {"points": r.points},
        });
        if let Some(status) = r.status {
            o["httpResponse"] = serde_json::json!({"code": status});
            o["queryCompletedTimestamp"] = serde_json::json!(ms(r.started) + elapsed);
        }
        if let Some(e) = &r.error {
            o["exception"] = serde_json::Value::String(e.clone());
        }
        o
    };
    let (running, done) = ctx.queries.snapshot();
    let body = serde_json::json!({
        "running": running.iter().map(render).collect::<Vec<_>>(),
        "completed": done.iter().rev().map(render).collect::<Vec<_>>(),
        "queued": ctx.queries.queued(),
        "memoryBytes": ctx.queries.pool.used(),
    });
    json_response(StatusCode::OK, body.to_string())
}

async fn metrics(State(ctx): State<Arc<Ctx>>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        ctx.metrics.render(),
    )
        .into_response()
}

async fn home() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=UTF-8")],
        format!("hourglass {} — OpenTSDB-compatible time-series database. API under /api/, metrics at /metrics.\n", env!("CARGO_PKG_VERSION")),
    )
        .into_response()
}

async fn unsupported_version() -> Response {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "Requested API version is greater than the max implemented",
    )
    .with_details("The maximum API version is 1")
    .into_response()
}

async fn not_found() -> Response {
    ApiError::new(StatusCode::NOT_FOUND, "Endpoint not found").into_response()
}

async fn method_not_allowed(method: Method) -> Response {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed")
        .with_details(format!(
            "The HTTP method [{method}] is not permitted for this endpoint"
        ))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(p: &str) -> String {
        let req = axum::extract::Request::builder()
            .uri(p)
            .body(Body::empty())
            .unwrap();
        normalize(req).uri().to_string()
    }

    #[test]
    fn path_normalisation() {
        assert_eq!(path_of("/api/put/"), "/api/put");
        assert_eq!(path_of("/api/v1/put?details"), "/api/put?details");
        assert_eq!(path_of("/API/V1/PUT"), "/api/put");
        assert_eq!(path_of("/api/v2/query"), "/api/__unsupported_version");
        assert_eq!(path_of("/api/config/filters/"), "/api/config/filters");
        assert_eq!(path_of("/"), "/");
        assert_eq!(path_of("/metrics"), "/metrics");
        // Prometheus and InfluxDB 2.x paths are not OpenTSDB's.
        assert_eq!(path_of("/api/v1/write"), "/api/v1/write");
        assert_eq!(path_of("/api/v1/read/"), "/api/v1/read");
        assert_eq!(
            path_of("/api/v2/write?bucket=b&precision=s"),
            "/api/v2/write?bucket=b&precision=s"
        );
        assert_eq!(path_of("/API/V1/WRITE"), "/api/v1/write");
        assert_eq!(path_of("/api/v1/query"), "/api/query");
        assert_eq!(path_of("/api/v2/query"), "/api/__unsupported_version");
    }
}
