//! HTTP ingest (`/api/put`, Influx `/write` and `/api/v2/write`, Prometheus
//! remote write): each connection posts its payloads one at a time on one
//! keep-alive connection; a point counts as acknowledged when its request
//! got a 2xx. A 429 or 503 (a server throttling writes) is sent again
//! after a backoff, as Prometheus does. Any other status is counted by
//! code, with the first bodies kept. A status that means the endpoint
//! does not exist (404, 405, 501) ends the run at once with the status and
//! body, since every further request would get the same.

use std::time::{Duration, Instant};

use hyper::Method;

use super::connection::{ConnCtx, ConnResult, MAX_ERROR_SAMPLES};
use super::payload::Source;
use crate::error::BenchError;
use crate::http::HttpClient;

/// Largest response body read from an ingest request.
const MAX_RESPONSE: usize = 1 << 20;

/// Whether an HTTP status means "this server does not serve that endpoint".
pub fn endpoint_missing(status: u16) -> bool {
    matches!(status, 404 | 405 | 501)
}

/// Whether an HTTP status asks the client to send the request again later
/// (a server throttling writes): retried as Prometheus' remote write
/// retries, with its default backoff (30 ms doubling to 5 s), each attempt
/// counted by status; the points count once, when acknowledged.
pub fn asks_to_retry(status: u16) -> bool {
    matches!(status, 429 | 503)
}

const MIN_BACKOFF: Duration = Duration::from_millis(30);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Attempts after the first before a throttled request counts as refused
/// (about a minute and a half of backoff).
const MAX_RETRIES: u32 = 24;

/// Runs one connection's share of the load.
pub async fn run_connection(
    ctx: ConnCtx,
    mut client: HttpClient,
    mut source: Source,
) -> Result<ConnResult, BenchError> {
    let id = ctx.id;
    let Some(target) = ctx.opts.http.clone() else {
        return Err(BenchError::Config(
            "no HTTP target for an HTTP protocol".into(),
        ));
    };
    let headers: Vec<(&str, &str)> = target
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut result = ConnResult {
        id,
        hosts: ctx.hosts,
        ..ConnResult::default()
    };
    let mut generator_wait = Duration::ZERO;
    let mut done_at = Instant::now();
    while ctx.pacer.admit(result.points + result.points_refused).await {
        let Some(payload) = source.next(&mut generator_wait).await else {
            break;
        };
        if let Some(l) = &ctx.lockstep {
            l.wait(id, payload.first_ts_ms).await;
        }
        let len = payload.body.len() as u64;
        let mut backoff = MIN_BACKOFF;
        let mut attempts = 0;
        let response = loop {
            let response = client
                .send(
                    Method::POST,
                    &target.path,
                    &headers,
                    payload.body.clone(),
                    MAX_RESPONSE,
                    ctx.opts.reply_timeout,
                )
                .await
                .map_err(|e| BenchError::Protocol(format!("connection {id}: {e}")))?;
            result.requests += 1;
            result.bytes += len;
            *result.statuses.entry(response.status).or_default() += 1;
            attempts += 1;
            if !asks_to_retry(response.status) || attempts > MAX_RETRIES {
                break response;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        };
        done_at = Instant::now();
        if response.is_success() {
            result.points += payload.points;
        } else {
            if endpoint_missing(response.status) {
                return Err(BenchError::Http {
                    method: "POST",
                    path: target.path.clone(),
                    status: response.status,
                    hint: " (the server does not serve this endpoint)",
                    body: response.snippet(),
                });
            }
            result.points_refused += payload.points;
            result.errors += 1;
            if result.first_errors.len() < MAX_ERROR_SAMPLES {
                result.first_errors.push(format!(
                    "HTTP {}: {}",
                    response.status,
                    response.snippet()
                ));
            }
        }
        ctx.progress.inc(payload.points);
    }
    if let Some(l) = &ctx.lockstep {
        l.done(id);
    }
    result.elapsed = done_at.saturating_duration_since(ctx.start);
    result.generator_wait = generator_wait;
    result.reconnects = client.reconnects;
    Ok(result)
}
