//! `/api/query/last` (GET `timeseries=`/`tsuids=`, `resolve`, `back_scan`;
//! POST JSON): the newest point of each series, by point reads of hour rows
//! (`engine::last`); metric sub queries find their series in the series
//! index. Runs under the query gate and budget like `/api/query`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use hourglass_query::last::{LastPoint, LastQuery, LastSubQuery, render_last};

use crate::engine::{Engine, IndexError, LastError};
use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{ApiRequest, Run, json_response, respond, run_budgeted};

/// Unknown names read as in `/api/query` (400 `No such name …`).
fn index_err(e: IndexError) -> ApiError {
    match e {
        IndexError::Unresolved { kind, name } => {
            ApiError::bad_request(format!("No such name for '{}': '{name}'", kind.as_str()))
        }
        other => other.into(),
    }
}

fn last_err(e: LastError) -> ApiError {
    match e {
        LastError::Index(i) => index_err(i),
        LastError::Budget(q) => q.into(),
        LastError::Uid(u) => u.into(),
        LastError::Storage(s) => crate::server::http::error::storage_error(&s),
        other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    }
}

fn answer(
    engine: &Engine,
    q: &LastQuery,
    budget: &hourglass_query::QueryBudget,
) -> Result<Vec<u8>, ApiError> {
    let back_scan = u32::try_from(q.back_scan_hours.max(0)).unwrap_or(u32::MAX);
    let layout = *engine.layout();
    // TSUIDs in request order; all are validated before any is read.
    let mut tsuids: Vec<Vec<u8>> = Vec::new();
    for sub in &q.queries {
        match sub {
            LastSubQuery::Metric { metric, tags } => {
                tsuids.extend(
                    engine
                        .series_with_tags(metric, tags, budget)
                        .map_err(index_err)?,
                );
            }
            LastSubQuery::Tsuids(list) => {
                for hex in list {
                    let t = crate::codec::hex::decode(hex.trim())
                        .filter(|t| layout.series_key_from_tsuid(t).is_some())
                        .ok_or_else(|| ApiError::bad_request(format!("Invalid TSUID: {hex}")))?;
                    tsuids.push(t);
                }
            }
        }
    }
    let mut out = Vec::new();
    for tsuid in tsuids {
        let Some(key) = layout.series_key_from_tsuid(&tsuid) else {
            continue;
        };
        let Some((timestamp_ms, value)) = engine
            .last_point(&key, back_scan, budget)
            .map_err(last_err)?
        else {
            continue;
        };
        budget.hold(1)?;
        let names = if q.resolve_names {
            let m = engine.describe_tsuid(&tsuid)?;
            Some((m.metric, m.tags))
        } else {
            None
        };
        out.push(LastPoint {
            tsuid,
            timestamp_ms,
            value,
            names,
        });
    }
    Ok(render_last(&out))
}

/// `GET` (`timeseries=`, `tsuids=`) or `POST` (JSON) `/api/query/last`.
pub async fn last(State(ctx): State<Arc<Ctx>>, req: Result<ApiRequest, ApiError>) -> Response {
    respond(&ctx, "query_last", run_last(&ctx, req).await)
}

async fn run_last(ctx: &Arc<Ctx>, req: Result<ApiRequest, ApiError>) -> Result<Response, ApiError> {
    let req = req?;
    let q = req.parse(
        hourglass_query::last::parse_last_query_string,
        hourglass_query::last::parse_last_json,
    )?;
    let engine = Arc::clone(&ctx.engine);
    let body = run_budgeted(ctx, req.text, req.peer, Run::Inline, move |budget| {
        answer(&engine, &q, budget)
    })
    .await?;
    Ok(json_response(StatusCode::OK, body))
}
