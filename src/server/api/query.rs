//! `/api/query`: the `m=` form (GET) and the JSON body (POST), answered as
//! OpenTSDB's JSON or Arrow IPC ([`super::arrow`]); deletes (the `m=` form
//! sent with DELETE, or `"delete": true` in a POST) when
//! `query.allow_delete` is on.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;

use std::time::Instant;

use crate::auth::Scope;
use crate::server::Ctx;
use crate::server::http::cors::OriginCheck;
use crate::server::http::helpers::Held;
use crate::server::http::stream::streamed;
use crate::server::http::{ApiError, Caller, Params, Run, json_response, now_ms, peer_of, respond};

/// Queries that scan at most this window run inline (`Run::Inline`): a
/// day, and the hour each end may be widened by.
const INLINE_SCAN_MS: i64 = 26 * 3_600_000;

/// Where a query runs: inline when it scans at most a day (a dashboard's
/// usual window; a downsample interval widens it), else on the blocking
/// pool.
fn run_of(q: &hourglass_query::TsQuery) -> Run {
    let scanned = q
        .queries
        .iter()
        .map(|sub| {
            let (s, e) =
                hourglass_query::exec::scan_window(q.start_ms, q.end_ms, sub.downsample.as_ref());
            e.saturating_sub(s)
        })
        .max()
        .unwrap_or(0);
    if scanned <= INLINE_SCAN_MS {
        Run::Inline
    } else {
        Run::Pool
    }
}

/// A query's answer as the client asked for it.
enum Answer {
    /// Arrow IPC, whole.
    Arrow(Vec<u8>),
    /// OpenTSDB's JSON, whole (a small answer).
    Json(Vec<u8>),
    /// OpenTSDB's JSON, rendered as it is sent.
    JsonChunks(hourglass_query::render::JsonChunks),
}

/// Answers with more points or results than this are rendered as they are
/// sent (a few MB of JSON); smaller ones whole, in the query's own task.
const STREAM_FROM_POINTS: usize = 100_000;
const STREAM_FROM_RESULTS: usize = 10_000;

async fn run_query(
    ctx: Arc<Ctx>,
    q: Result<hourglass_query::TsQuery, hourglass_query::error::QueryError>,
    origin: OriginCheck,
    caller: Caller,
    peer: String,
    text: String,
    format: Result<super::arrow::Format, ApiError>,
) -> Response {
    let started = Instant::now();
    let arrow = matches!(format, Ok(super::arrow::Format::Arrow));
    let result: Result<(Answer, Held), ApiError> = async {
        let q = q?;
        format?;
        if q.delete {
            caller.require(Scope::Admin)?;
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
        // Deletes run on the blocking pool.
        let run = if q.delete { Run::Pool } else { run_of(&q) };
        crate::server::http::run_budgeted_held(&ctx, text, peer, run, move |budget| {
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
                return Ok(Answer::Arrow(hourglass_query::render_arrow(&q, &results)?));
            }
            let points: usize = results.iter().map(|r| r.dps.len()).sum();
            if points <= STREAM_FROM_POINTS && results.len() <= STREAM_FROM_RESULTS {
                return Ok(Answer::Json(hourglass_query::render::render_json(
                    &q, &results,
                )));
            }
            Ok(Answer::JsonChunks(
                hourglass_query::render::JsonChunks::new(q, results),
            ))
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
        result.map(|(answer, held)| match answer {
            Answer::Arrow(body) => {
                held.finish();
                super::arrow::arrow_response(body)
            }
            Answer::Json(body) => {
                held.finish();
                json_response(StatusCode::OK, body)
            }
            // Rendered as it is sent, off the reactor: a wide answer is
            // never held whole (the results are freed as they are written).
            // The query keeps its slot and its memory in the pool until the
            // last byte is sent, so that slow readers of wide answers are
            // bounded like running queries; a reader that goes away is
            // recorded as such (the slot's drop).
            Answer::JsonChunks(chunks) => json_response(
                StatusCode::OK,
                streamed(move |out| {
                    for chunk in chunks {
                        out.send(bytes::Bytes::from(chunk))?;
                    }
                    held.finish();
                    Ok(())
                }),
            ),
        }),
    )
}

pub async fn query_get(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    uri: Uri,
    ext: axum::http::Extensions,
) -> Response {
    query_string(ctx, params, headers, uri, ext, false).await
}

/// `DELETE /api/query?…`: OpenTSDB's delete, the `m=` form with the
/// delete flag set (refused with 400 unless `query.allow_delete` is on).
pub async fn query_delete(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    uri: Uri,
    ext: axum::http::Extensions,
) -> Response {
    query_string(ctx, params, headers, uri, ext, true).await
}

/// A query in the query string (GET, or DELETE with `delete` set).
async fn query_string(
    ctx: Arc<Ctx>,
    params: Params,
    headers: HeaderMap,
    uri: Uri,
    ext: axum::http::Extensions,
    delete: bool,
) -> Response {
    let format = super::arrow::format(&params, &headers);
    let q = hourglass_query::parse_query_string(&params, now_ms()).map(|mut q| {
        q.delete |= delete;
        q
    });
    let origin = ext
        .get::<OriginCheck>()
        .copied()
        .unwrap_or(OriginCheck::Allowed);
    let caller = ext.get::<Caller>().cloned().unwrap_or_default();
    run_query(
        ctx,
        q,
        origin,
        caller,
        peer_of(&ext),
        uri.to_string(),
        format,
    )
    .await
}

pub async fn query_post(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    body: Body,
) -> Response {
    let format = super::arrow::format(&params, &headers);
    let read = match crate::server::http::body::read(
        &ctx,
        &headers,
        crate::server::http::peer_ip(&ext),
        body,
    )
    .await
    {
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
    let caller = ext.get::<Caller>().cloned().unwrap_or_default();
    run_query(ctx, q, origin, caller, peer_of(&ext), text, format).await
}
