//! Reading HTTP request bodies within bounds: the body's size
//! (`server.max_body_bytes`, after gzip/deflate decoding too), the server's
//! in-flight ingest memory (`server.max_inflight_bytes`, of which one client
//! address may hold `max_inflight_bytes_per_address`: 503 with `Retry-After`
//! when full), and time.
//!
//! Memory is charged for the bytes that have arrived, never for a declared
//! `Content-Length`: a client that announces 64 MiB and sends nothing holds
//! nothing. Time follows Apache's `mod_reqtimeout` (`MinRate`): a body has
//! `server.http_body_timeout_secs`, plus one second for every
//! `server.http_min_body_rate` bytes received, so a client trickling or
//! stalling its body is cut off within about the base timeout, whatever
//! length it declared.

use std::io::Read;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;

use super::error::ApiError;
use crate::server::Ctx;
use crate::server::limits::InflightGuard;

/// A body read into memory, with the in-flight memory it holds.
#[derive(Debug)]
pub struct ReadBody {
    pub bytes: Bytes,
    pub _guard: InflightGuard,
}

/// The answer when the server holds too much ingest memory (503, retry).
pub fn overloaded() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Please throttle writes: the server is busy decoding other requests",
    )
    .with_retry_after(1)
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Request body larger than {limit} bytes"),
    )
}

/// The most a body's buffer is sized up front from its declared length;
/// beyond it the buffer grows with what arrives.
const PRESIZE_MAX: usize = 1 << 20;

/// Reads and decodes (gzip/deflate) a request body from `peer`.
pub async fn read(
    ctx: &Ctx,
    headers: &HeaderMap,
    peer: IpAddr,
    body: Body,
) -> Result<ReadBody, ApiError> {
    let ReadBody {
        bytes,
        _guard: mut guard,
    } = read_raw(ctx, headers, peer, body).await?;
    let encoding = content_encoding(headers);
    let limit = ctx.config.server.max_body_bytes;
    let bytes = if matches!(encoding.as_str(), "" | "identity") {
        bytes
    } else {
        // Inflating is CPU work of up to the body limit: off the reactor.
        tokio::task::spawn_blocking(move || decode(&encoding, bytes, limit))
            .await
            .map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("decompressing the request body failed: {e}"),
                )
            })??
    };
    // Decoded points cost about as much again as their text.
    if !ctx
        .inflight
        .try_grow(&mut guard, bytes.len().saturating_mul(2))
    {
        return Err(overloaded());
    }
    Ok(ReadBody {
        bytes,
        _guard: guard,
    })
}

/// Reads a request body as sent, without undoing its `Content-Encoding`
/// (Prometheus's snappy is the decoder's job), within the same bounds.
pub async fn read_raw(
    ctx: &Ctx,
    headers: &HeaderMap,
    peer: IpAddr,
    body: Body,
) -> Result<ReadBody, ApiError> {
    let cfg = &ctx.config.server;
    let limit = cfg.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    // Charged as bytes arrive: a declared length costs nothing by itself.
    let mut guard = ctx.inflight.guard(peer);
    let started = Instant::now();
    let rate = cfg.http_min_body_rate.max(1) as f64;
    let allowance = |received: usize| {
        started
            + Duration::from_secs(cfg.http_body_timeout_secs)
            + Duration::from_secs_f64(received as f64 / rate)
    };
    let mut buf: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0).min(limit).min(PRESIZE_MAX));
    let mut body = body;
    loop {
        let deadline = allowance(buf.len());
        let frame = tokio::time::timeout_at(deadline.into(), body.frame()).await;
        let frame = match frame {
            Err(_) => {
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "Timed out reading the request body",
                )
                .with_details(format!(
                    "received {} bytes in {} ms; a body must arrive within {} s plus one second per {} bytes received",
                    buf.len(),
                    started.elapsed().as_millis(),
                    cfg.http_body_timeout_secs,
                    cfg.http_min_body_rate
                )));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::bad_request("Unable to read the request body")
                    .with_details(e.to_string()));
            }
            Ok(Some(Ok(f))) => f,
        };
        if let Some(data) = frame.data_ref() {
            if buf.len() + data.len() > limit {
                return Err(too_large(limit));
            }
            // Charged before it is kept, for what the buffer will hold.
            if !ctx
                .inflight
                .try_grow(&mut guard, buf.capacity().max(buf.len() + data.len()))
            {
                return Err(overloaded());
            }
            buf.extend_from_slice(data);
        }
    }
    Ok(ReadBody {
        bytes: Bytes::from(buf),
        _guard: guard,
    })
}

/// A request's `Content-Encoding`, lower-case (empty if none).
fn content_encoding(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Inflates a body of `encoding` (gzip or deflate), bounded by the body
/// limit. Blocking: CPU work.
pub fn decode(encoding: &str, body: Bytes, limit: usize) -> Result<Bytes, ApiError> {
    let mut out = Vec::new();
    let res = match encoding {
        "" | "identity" => return Ok(body),
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(&body[..])
            .take(limit as u64 + 1)
            .read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(&body[..])
            .take(limit as u64 + 1)
            .read_to_end(&mut out),
        other => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Unsupported Content-Encoding: {other}"),
            ));
        }
    };
    res.map_err(|e| {
        ApiError::bad_request("Unable to decompress the request body").with_details(e.to_string())
    })?;
    if out.len() > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body larger than {limit} bytes after decompression"),
        ));
    }
    Ok(Bytes::from(out))
}
