//! OpenTSDB's expression queries: `POST /api/query/exp` (the JSON of
//! `time`, `filters`, `metrics`, `expressions` and `outputs`) and
//! `GET /api/query/gexp` (Graphite-style functions over `m`-style sub
//! queries), computed by `hourglass_query::expression` over the engine,
//! under the same admission, budget and timeout as `/api/query`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use hourglass_query::expression::{exp, gexp};

use crate::server::Ctx;
use crate::server::http::{ApiError, Params, Run, json_response, now_ms, peer_of, respond};

/// `POST /api/query/exp`.
pub async fn exp_post(
    State(ctx): State<Arc<Ctx>>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    body: Body,
) -> Response {
    let started = Instant::now();
    let result: Result<Vec<u8>, ApiError> = async {
        let read = crate::server::http::body::read(
            &ctx,
            &headers,
            crate::server::http::peer_ip(&ext),
            body,
        )
        .await?;
        let text = String::from_utf8_lossy(&read.bytes[..read.bytes.len().min(4096)]).into_owned();
        let q = exp::parse(&read.bytes, now_ms())?;
        drop(read);
        let engine = Arc::clone(&ctx.engine);
        // Always on the blocking pool: an expression's work grows with its
        // scripts and joins, not with the window it scans.
        crate::server::http::run_budgeted(&ctx, text, peer_of(&ext), Run::Pool, move |budget| {
            Ok(exp::run(&q, &*engine, budget)?.to_json().into_bytes())
        })
        .await
    }
    .await;
    finish(&ctx, "query_exp", started, result)
}

/// `GET /api/query/gexp?start=…&exp=…`: answered as `/api/query` answers.
pub async fn gexp_get(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    uri: Uri,
    ext: axum::http::Extensions,
) -> Response {
    let started = Instant::now();
    let result: Result<Vec<u8>, ApiError> = async {
        let q = gexp::parse(&params, now_ms())?;
        let engine = Arc::clone(&ctx.engine);
        crate::server::http::run_budgeted(
            &ctx,
            uri.to_string(),
            peer_of(&ext),
            Run::Pool,
            move |budget| {
                let results = gexp::run(&q, &*engine, budget)?;
                Ok(hourglass_query::render::render_json(q.ts_query(), &results))
            },
        )
        .await
    }
    .await;
    finish(&ctx, "query_gexp", started, result)
}

fn finish(
    ctx: &Ctx,
    endpoint: &'static str,
    started: Instant,
    result: Result<Vec<u8>, ApiError>,
) -> Response {
    ctx.metrics
        .query_seconds
        .observe(started.elapsed().as_secs_f64());
    respond(
        ctx,
        endpoint,
        result.map(|body| json_response(StatusCode::OK, body)),
    )
}
