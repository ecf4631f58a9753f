//! What the server is doing: `/api/stats`, `/api/stats/query`, hourglass's
//! own metrics at `/metrics`, and `/api/dropcaches`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use axum::Json;

use crate::server::Ctx;
use crate::server::http::{blocking, json_response, now_ms};

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
    let entries: Vec<serde_json::Value> = stats
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
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        ctx.metrics.render(),
    )
        .into_response()
}
