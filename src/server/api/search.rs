//! `/api/search/*`: `lookup` (GET `m=`, POST JSON) answered from the series
//! index (`engine::index`); the plugin-backed search types answer
//! OpenTSDB's "Searching is not enabled".

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{Params, json_response, peer_of, read_body, respond, run_budgeted};

async fn run_lookup(
    ctx: &Arc<Ctx>,
    q: Result<hourglass_query::lookup::LookupQuery, hourglass_query::QueryError>,
    text: String,
    peer: String,
) -> Result<Response, ApiError> {
    let q = q?;
    let started = Instant::now();
    let engine = Arc::clone(&ctx.engine);
    let body = run_budgeted(ctx, text, peer, move |budget| {
        let found = engine.lookup_series(&q, budget)?;
        let ms = started.elapsed().as_millis() as u64;
        Ok(hourglass_query::lookup::render_lookup(
            &q,
            &found,
            found.len(),
            ms,
        ))
    })
    .await?;
    Ok(json_response(StatusCode::OK, body))
}

pub async fn lookup_get(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    uri: axum::http::Uri,
    ext: axum::http::Extensions,
) -> Response {
    let q = hourglass_query::lookup::parse_lookup_query_string(&params);
    let r = run_lookup(&ctx, q, uri.to_string(), peer_of(&ext)).await;
    respond(&ctx, "search_lookup", r)
}

pub async fn lookup_post(
    State(ctx): State<Arc<Ctx>>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    body: Body,
) -> Response {
    let r = async {
        let read = read_body(&ctx, &headers, &ext, body).await?;
        let bytes = &read.bytes[..];
        let q = hourglass_query::lookup::parse_lookup_json(bytes);
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
        run_lookup(&ctx, q, text, peer_of(&ext)).await
    }
    .await;
    respond(&ctx, "search_lookup", r)
}

/// Every other `/api/search/<type>`.
pub async fn other(State(ctx): State<Arc<Ctx>>, Path(kind): Path<String>) -> Response {
    let r = match kind.as_str() {
        "tsmeta" | "tsmeta_summary" | "tsuids" | "uidmeta" | "annotation" => {
            Err(ApiError::bad_request("Searching is not enabled"))
        }
        _ => Err(ApiError::bad_request("Invalid search query type supplied")),
    };
    respond(&ctx, "search", r)
}
