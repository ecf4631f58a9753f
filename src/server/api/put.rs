//! `POST /api/put`: OpenTSDB's JSON writes, acknowledged once durable in
//! the write-ahead log; `summary`, `details`, `sync` and `sync_timeout`.
//! Elements of a series already written skip tag decoding, validation and
//! series lookup (the HTTP writes' shared series cache). The body is
//! decoded and written on a blocking thread.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hourglass_ingest::{JsonPoint, decode_put_body};

use crate::engine::PointError;
use crate::server::Ctx;
use crate::server::http::{
    ApiError, Params, PeerAddr, blocking, has_flag, json_response, param, respond,
};
use crate::server::write::{PointSink, Protocol, WriteBatch};
use crate::uid::UidError;

pub async fn put(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let r = write_body(&ctx, &params, &headers, peer, body, write_json_points).await;
    respond(&ctx, "put", r)
}

/// What writing a body's elements did: the log position to await, the
/// points written, and the refused elements (index, reason).
pub(super) struct Wrote {
    pub lsn: u64,
    pub accepted: usize,
    pub errors: Vec<(usize, String)>,
}

/// Writes the elements of a body (blocking).
pub(super) type WriteElements = fn(&Ctx, &[JsonPoint<'_>]) -> Result<Wrote, ApiError>;

/// What writing a body did: the log position to await, the points written,
/// and the refused elements (index, reason, and the element as OpenTSDB
/// echoes it when `details` is asked for).
struct Outcome {
    lsn: u64,
    accepted: usize,
    errors: Vec<(usize, String, Option<serde_json::Value>)>,
}

/// A write of OpenTSDB's JSON body (`/api/put`, `/api/rollup`): the body
/// decoded and its elements written by `write` on a blocking thread, then
/// OpenTSDB's answer once they are durable.
pub(super) async fn write_body(
    ctx: &Arc<Ctx>,
    params: &Params,
    headers: &HeaderMap,
    peer: PeerAddr,
    body: Body,
    write: WriteElements,
) -> Result<Response, ApiError> {
    let read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
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
    let writer = Arc::clone(ctx);
    let outcome = blocking(move || {
        let items = decode_put_body(&read.bytes).map_err(|e| {
            let err = ApiError::bad_request(e.message());
            match e.details() {
                Some(d) => err.with_details(d),
                None => err,
            }
        })?;
        let Wrote {
            lsn,
            accepted,
            mut errors,
        } = write(&writer, &items)?;
        errors.sort_by_key(|e| e.0);
        Ok(Outcome {
            lsn,
            accepted,
            errors: errors
                .into_iter()
                .map(|(i, msg)| (i, msg, details.then(|| items[i].echo())))
                .collect(),
        })
    })
    .await?;
    let mut timeouts = 0usize;
    if outcome.lsn > 0 {
        let wait = ctx.engine.wait_durable(outcome.lsn);
        if sync_timeout_ms > 0 {
            match tokio::time::timeout(std::time::Duration::from_millis(sync_timeout_ms), wait)
                .await
            {
                Ok(r) => r?,
                Err(_) => timeouts = outcome.accepted,
            }
        } else {
            wait.await?;
        }
    }
    let failed = outcome.errors.len();
    let success = outcome.accepted - timeouts;
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
        let errs: Vec<serde_json::Value> = outcome
            .errors
            .into_iter()
            .map(|(_, msg, echo)| serde_json::json!({"datapoint": echo, "error": msg}))
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

/// Writes the elements (blocking): those of a series in the shared cache
/// as known series, the others by name; caches what the engine resolved.
/// Returns what was written and the refused elements (index, reason).
fn write_json_points(ctx: &Ctx, items: &[JsonPoint<'_>]) -> Result<Wrote, ApiError> {
    let mut batch = WriteBatch::new(Protocol::Put);
    let mut refs = Vec::new();
    // The element of each known series (to cache a series registered again).
    let mut ref_items: Vec<usize> = Vec::new();
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut key = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let origin = i as u32;
        let mut cache_key = None;
        if let Some((metric, tags)) = item.series_text() {
            let digest = ctx.http_series.put_key(metric, tags, &mut key);
            if let Some(series) = ctx.http_series.get(digest)
                && let [series] = &series[..]
            {
                if let Some((ts, value)) = item.time_value() {
                    refs.push(series.clone());
                    ref_items.push(i);
                    batch.known((refs.len() - 1) as u32, ts.0, value, origin);
                    continue;
                }
            } else {
                cache_key = Some(digest);
            }
        }
        match item.to_point(&ctx.limits) {
            Ok(p) => batch.named(p, origin, cache_key),
            Err(msg) => errors.push((i, msg)),
        }
    }
    if !errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(errors.len() as u64);
    }
    let mut written = batch.write(&ctx.engine, &refs)?;
    // A cached series whose head slot was given up was registered again:
    // cache the new one, or every later write registers it again.
    for (r, series) in &written.refreshed {
        if let Some((metric, tags)) = ref_items
            .get(*r as usize)
            .and_then(|i| items.get(*i))
            .and_then(JsonPoint::series_text)
        {
            let digest = ctx.http_series.put_key(metric, tags, &mut key);
            ctx.http_series.insert(digest, Arc::from([series.clone()]));
        }
    }
    for (k, series) in std::mem::take(&mut written.new_series) {
        ctx.http_series.insert(k, Arc::from([series]));
    }
    for refused in &written.errors {
        let msg = match &refused.error {
            PointError::Uid(UidError::NoSuchName { .. }) => "Unknown metric".to_string(),
            other => other.to_string(),
        };
        errors.push((refused.origin as usize, msg));
    }
    Ok(Wrote {
        lsn: written.lsn,
        accepted: written.accepted,
        errors,
    })
}
