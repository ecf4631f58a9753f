//! `/api/annotation` (GET, POST merge, PUT replace, DELETE),
//! `/api/annotation/bulk` (POST, PUT, DELETE by TSUIDs/global and a time
//! range) and `/api/annotations` (GET global notes in a range). Parsing
//! and the merge rule are the query crate's (`annotation`); storage is the
//! engine's (`engine::annotations`, OpenTSDB's data-row cells).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use hourglass_query::Annotation;
use hourglass_query::annotation::{
    AnnotationUpdate, SyncOutcome, merge, parse_annotation_json, parse_annotation_query_string,
    parse_bulk_annotations, parse_bulk_delete_json, parse_bulk_delete_query_string,
    render_annotations, render_bulk_delete, replace,
};

use crate::engine::{AnnotationError, Engine};
use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{
    ApiRequest, Params, Run, blocking, json_response, now_ms, peer_of, respond, run_budgeted,
};

/// POST merges, PUT replaces; `None` = nothing changed (304).
fn sync_one(
    engine: &Engine,
    update: &AnnotationUpdate,
    put: bool,
) -> Result<Option<Annotation>, ApiError> {
    let note = &update.annotation;
    Ok(
        engine.update_annotation(&note.tsuid, note.start_time, |stored| {
            let outcome = if put {
                replace(update, stored)
            } else {
                merge(update, stored)
            }
            .map_err(AnnotationError::from)?;
            Ok(match outcome {
                SyncOutcome::Store(n) => (Some(n.clone()), Some(n)),
                SyncOutcome::NotModified => (None, None),
            })
        })?,
    )
}

async fn single(ctx: &Arc<Ctx>, req: ApiRequest) -> Result<Response, ApiError> {
    let update = match req.json() {
        None => parse_annotation_query_string(&req.params, now_ms())?,
        Some(bytes) => parse_annotation_json(bytes)?,
    };
    let engine = Arc::clone(&ctx.engine);
    let method = req.method;
    blocking(move || {
        let engine = &engine;
        let note = &update.annotation;
        match method {
            Method::GET => match engine.get_annotation(&note.tsuid, note.start_time)? {
                Some(n) => Ok(json_response(StatusCode::OK, n.to_response_json())),
                None => Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "Unable to locate annotation in storage",
                )),
            },
            Method::DELETE => {
                engine.delete_annotation(&note.tsuid, note.start_time)?;
                Ok(StatusCode::NO_CONTENT.into_response())
            }
            Method::POST | Method::PUT => match sync_one(engine, &update, method == Method::PUT)? {
                Some(n) => Ok(json_response(StatusCode::OK, n.to_response_json())),
                None => Ok(StatusCode::NOT_MODIFIED.into_response()),
            },
            _ => Err(method_not_allowed(&method)),
        }
    })
    .await
}

fn method_not_allowed(method: &Method) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").with_details(format!(
        "The HTTP method [{method}] is not permitted for this endpoint"
    ))
}

pub async fn annotation(
    State(ctx): State<Arc<Ctx>>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    let r = match req {
        Ok(req) => single(&ctx, req).await,
        Err(e) => Err(e),
    };
    respond(&ctx, "annotation", r)
}

async fn bulk_inner(ctx: &Arc<Ctx>, req: ApiRequest) -> Result<Response, ApiError> {
    let bytes = req.body.as_ref().map_or(&[][..], |b| &b.bytes[..]);
    match req.method {
        Method::POST | Method::PUT => {
            let updates = parse_bulk_annotations(bytes)?;
            let put = req.method == Method::PUT;
            let engine = Arc::clone(&ctx.engine);
            let stored = blocking(move || {
                let keys: Vec<(&str, i64)> = updates
                    .iter()
                    .map(|u| (u.annotation.tsuid.as_str(), u.annotation.start_time))
                    .collect();
                Ok(engine.update_annotations(&keys, |i, stored| {
                    let u = &updates[i];
                    let outcome = if put {
                        replace(u, stored)
                    } else {
                        merge(u, stored)
                    }
                    .map_err(|e| {
                        AnnotationError::from(hourglass_query::QueryError::BadRequest {
                            message: e.message().to_string(),
                            details: Some(format!(
                                "Annotation error: {}",
                                u.annotation.to_response_json()
                            )),
                        })
                    })?;
                    Ok(match outcome {
                        SyncOutcome::Store(n) => (Some(n.clone()), n),
                        SyncOutcome::NotModified => (None, u.annotation.clone()),
                    })
                })?)
            })
            .await?;
            Ok(json_response(StatusCode::OK, render_annotations(&stored)))
        }
        Method::DELETE => {
            let delete = match req.json() {
                None => parse_bulk_delete_query_string(&req.params, now_ms())?,
                Some(bytes) => parse_bulk_delete_json(bytes, now_ms())?,
            };
            let layout = *ctx.engine.layout();
            let mut tsuids = Vec::with_capacity(delete.tsuids.len());
            for t in &delete.tsuids {
                let b = crate::codec::hex::decode(t)
                    .filter(|b| layout.series_key_from_tsuid(b).is_some())
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid TSUID: {t}")))?;
                tsuids.push(b);
            }
            let engine = Arc::clone(&ctx.engine);
            let body = run_budgeted(ctx, req.text, req.peer, Run::Pool, move |budget| {
                let mut notes = Vec::new();
                if !tsuids.is_empty() {
                    notes.extend(engine.notes_in(
                        Some(&tsuids),
                        delete.start_ms,
                        delete.end_ms,
                        budget,
                    )?);
                }
                if delete.global {
                    notes.extend(engine.notes_in(None, delete.start_ms, delete.end_ms, budget)?);
                }
                let n = engine.delete_notes(notes)?;
                Ok(render_bulk_delete(&delete, n))
            })
            .await?;
            Ok(json_response(StatusCode::OK, body))
        }
        _ => Err(method_not_allowed(&req.method)),
    }
}

pub async fn bulk(State(ctx): State<Arc<Ctx>>, req: Result<ApiRequest, ApiError>) -> Response {
    let r = match req {
        Ok(req) => bulk_inner(&ctx, req).await,
        Err(e) => Err(e),
    };
    respond(&ctx, "annotation_bulk", r)
}

/// `/api/annotations?start_time=…[&end_time=…]`: global notes with
/// `startTime >= start` and `endTime <= end` (0 always passes).
pub async fn globals(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    uri: axum::http::Uri,
    ext: axum::http::Extensions,
) -> Response {
    let r = async {
        let now = now_ms();
        let get = |k: &str| crate::server::http::param(&params, k).filter(|v| !v.is_empty());
        let start = get("start_time")
            .ok_or_else(|| ApiError::bad_request("Missing start time"))
            .and_then(|s| Ok(hourglass_query::parse_time(s, now)?))?;
        let end = match get("end_time") {
            Some(e) => hourglass_query::parse_time(e, now)?,
            None => now,
        };
        let engine = Arc::clone(&ctx.engine);
        let body = run_budgeted(
            &ctx,
            uri.to_string(),
            peer_of(&ext),
            Run::Pool,
            move |budget| {
                let notes: Vec<Annotation> = engine
                    .notes_in(None, start, end, budget)?
                    .into_iter()
                    .map(|(_, _, n)| n)
                    .filter(|n| n.end_time == 0 || note_ms(n.end_time) <= end)
                    .collect();
                Ok(render_annotations(&notes))
            },
        )
        .await?;
        Ok(json_response(StatusCode::OK, body))
    }
    .await;
    respond(&ctx, "annotations", r)
}

fn note_ms(t: i64) -> i64 {
    if t > i64::from(u32::MAX) || t < 0 {
        t
    } else {
        t.saturating_mul(1000)
    }
}
