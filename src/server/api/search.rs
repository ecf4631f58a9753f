//! `/api/search/*`: `lookup` (GET `m=`, POST JSON) answered from the series
//! index (`engine::index`); the plugin-backed search types answer
//! OpenTSDB's "Searching is not enabled".

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{ApiRequest, Run, json_response, respond, run_budgeted};

/// `GET` (`m=`) or `POST` (JSON) `/api/search/lookup`.
pub async fn lookup(State(ctx): State<Arc<Ctx>>, req: Result<ApiRequest, ApiError>) -> Response {
    respond(&ctx, "search_lookup", run_lookup(&ctx, req).await)
}

async fn run_lookup(
    ctx: &Arc<Ctx>,
    req: Result<ApiRequest, ApiError>,
) -> Result<Response, ApiError> {
    let req = req?;
    let q = req.parse(
        hourglass_query::lookup::parse_lookup_query_string,
        hourglass_query::lookup::parse_lookup_json,
    )?;
    let started = Instant::now();
    let engine = Arc::clone(&ctx.engine);
    let body = run_budgeted(ctx, req.text, req.peer, Run::Pool, move |budget| {
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
