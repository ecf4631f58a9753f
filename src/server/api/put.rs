//! `POST /api/put`: OpenTSDB's JSON writes, acknowledged once durable in
//! the write-ahead log; `summary`, `details`, `sync` and `sync_timeout`.
//! Elements of a series already written skip tag decoding, validation and
//! series lookup (the HTTP writes' shared series cache).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use hourglass_ingest::decode_put_body;

use crate::engine::PointError;
use crate::server::Ctx;
use crate::server::http::{ApiError, Params, PeerAddr, has_flag, json_response, param, respond};
use crate::uid::UidError;

pub async fn put(
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
    let read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
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
    use crate::engine::{Entry, SeriesRef};
    use crate::server::series_cache::SharedSeriesCache;
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
