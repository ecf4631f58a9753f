//! What the server is doing: `/api/stats`, `/api/stats/query`,
//! `/api/stats/cardinality`, hourglass's own metrics at `/metrics`, and
//! `/api/dropcaches`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use axum::Json;

use crate::engine::cardinality::{Cardinality, CardinalityQuery, Counted};
use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{
    ApiRequest, Params, Run, blocking, json_response, now_ms, param, respond, run_budgeted,
};

pub async fn dropcaches(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.engine.drop_caches();
    ctx.forget_series();
    Json(serde_json::json!({"status": "200", "message": "Caches dropped"})).into_response()
}

pub async fn stats(State(ctx): State<Arc<Ctx>>) -> Response {
    let now = now_ms() / 1000;
    let engine = Arc::clone(&ctx.engine);
    let stats = match blocking(move || Ok(engine.stats())).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let uptime = ctx.started.elapsed().as_secs() as i64;
    let entries: Vec<serde_json::Value> = std::iter::once(("uptime".to_string(), uptime, vec![]))
        .chain(stats)
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
pub async fn stats_query(State(ctx): State<Arc<Ctx>>) -> Response {
    let ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    };
    let render = |r: &crate::server::limits::QueryRecord| {
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

pub async fn metrics(State(ctx): State<Arc<Ctx>>) -> Response {
    // The head lock is off the reactor; a scrape shows the registry as it
    // is, not as the last flush round left it.
    ctx.metrics
        .prom_write_buffer_bytes
        .set(hourglass_ingest::prom::kept_buffer_bytes() as i64);
    let engine = Arc::clone(&ctx.engine);
    if let Err(e) = blocking(move || {
        engine.refresh_gauges();
        Ok(())
    })
    .await
    {
        return e.into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        ctx.metrics.render(),
    )
        .into_response()
}

/// Listed values per tag key unless `top=` says otherwise, and its bound.
const DEFAULT_TOP: usize = 10;
const MAX_TOP: usize = 1000;
/// Listed metrics unless `limit=` says otherwise, and its bound.
const DEFAULT_LIMIT: usize = 1000;
const MAX_LIMIT: usize = 100_000;

/// `GET /api/stats/cardinality[?metric=&top=&limit=]`: series counts from
/// the series index (`engine::cardinality`), under the query limits.
pub async fn cardinality(
    State(ctx): State<Arc<Ctx>>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    respond(&ctx, "stats_cardinality", run_cardinality(&ctx, req).await)
}

fn count_param(params: &Params, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    match param(params, name) {
        None => Ok(default),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(ApiError::bad_request(format!("Invalid {name}: {text}"))
                .with_details(format!("{name} is a whole number from 0 to {max}"))),
        },
    }
}

async fn run_cardinality(
    ctx: &Arc<Ctx>,
    req: Result<ApiRequest, ApiError>,
) -> Result<Response, ApiError> {
    let req = req?;
    let q = CardinalityQuery {
        metric: param(&req.params, "metric")
            .filter(|m| !m.is_empty())
            .map(str::to_string),
        top: count_param(&req.params, "top", DEFAULT_TOP, MAX_TOP)?,
        limit: count_param(&req.params, "limit", DEFAULT_LIMIT, MAX_LIMIT)?,
    };
    let engine = Arc::clone(&ctx.engine);
    let metric = q.metric.clone();
    let found = run_budgeted(ctx, req.text, req.peer, Run::Pool, move |budget| {
        Ok(engine.cardinality(&q, budget)?)
    })
    .await?;
    Ok(json_response(
        StatusCode::OK,
        render_cardinality(metric.as_deref(), &found).to_string(),
    ))
}

fn render_cardinality(metric: Option<&str>, c: &Cardinality) -> serde_json::Value {
    let counted = |list: &[Counted]| {
        list.iter()
            .map(|c| serde_json::json!({"name": c.name, "series": c.series}))
            .collect::<Vec<_>>()
    };
    serde_json::json!({
        "metric": metric,
        "totalSeries": c.total_series,
        "metricCount": c.metric_count,
        "metrics": counted(&c.metrics),
        "truncated": c.truncated,
        "tagKeys": c.tag_keys.iter().map(|k| serde_json::json!({
            "name": k.name,
            "series": k.series,
            "values": k.values,
            "topValues": counted(&k.top_values),
        })).collect::<Vec<_>>(),
    })
}
