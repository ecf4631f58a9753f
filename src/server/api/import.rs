//! `POST /api/v1/import` (write scope): points in VictoriaMetrics' JSON
//! lines (the default, as its `/api/v1/import` takes them) or, with
//! `format=opentsdb`, OpenTSDB's import text (`tsdb import`); gzip bodies
//! too. Every line is parsed and checked before anything is written; a bad
//! line is reported with its line number (1 = the body's first) and, with
//! `on_error=stop` (the default), nothing from it on is written, with
//! `on_error=skip` it alone is left out. Answered once what was written is
//! durable: `{"lines", "points", "errors": [{"line", "error"}…],
//! "stopped_at"}`, 200 when every line was taken, 400 otherwise (at most
//! [`MAX_REPORTED`] errors listed, `more_errors` counts the rest).
//! `hourglass import` sends a file in bodies of whole lines and adds its
//! own offset to the line numbers.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hourglass_ingest::jsonl::parse_jsonl_line;
use hourglass_ingest::{Point, parse_import_line};
use serde_json::json;

use crate::engine::PointError;
use crate::server::Ctx;
use crate::server::http::{ApiError, Params, PeerAddr, blocking, json_response, param, respond};
use crate::server::write::{PointSink, WriteBatch};
use crate::uid::UidError;

/// Errors listed in one answer.
pub const MAX_REPORTED: usize = 100;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    OpenTsdb,
}

pub async fn import(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let r = run(&ctx, &params, &headers, peer, body).await;
    respond(&ctx, "import", r)
}

/// What a body's lines came to.
struct Outcome {
    lines: usize,
    lsn: u64,
    points: usize,
    /// (line number from 1, why), in line order.
    errors: Vec<(usize, String)>,
    stopped_at: Option<usize>,
}

async fn run(
    ctx: &Arc<Ctx>,
    params: &Params,
    headers: &HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Result<Response, ApiError> {
    let format = match param(params, "format").unwrap_or("jsonl") {
        "jsonl" | "json" | "" => Format::Jsonl,
        "opentsdb" => Format::OpenTsdb,
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown format {other:?}: jsonl (VictoriaMetrics' JSON lines) or opentsdb (tsdb import text)"
            )));
        }
    };
    let stop = match param(params, "on_error").unwrap_or("stop") {
        "stop" => true,
        "skip" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "on_error={other}: stop (the default) or skip"
            )));
        }
    };
    let read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
    let writer = Arc::clone(ctx);
    let outcome = blocking(move || write_lines(&writer, &read.bytes, format, stop)).await?;
    if outcome.lsn > 0 {
        ctx.engine.wait_durable(outcome.lsn).await?;
    }
    let more = outcome.errors.len().saturating_sub(MAX_REPORTED);
    let errors: Vec<serde_json::Value> = outcome
        .errors
        .iter()
        .take(MAX_REPORTED)
        .map(|(line, e)| json!({"line": line, "error": e}))
        .collect();
    let status = if outcome.errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    let mut answer = json!({
        "lines": outcome.lines,
        "points": outcome.points,
        "errors": errors,
        "stopped_at": outcome.stopped_at,
    });
    if more > 0 {
        answer["more_errors"] = more.into();
    }
    Ok(json_response(status, answer.to_string()))
}

/// Parses every line, then writes the points of the lines taken
/// (blocking).
fn write_lines(ctx: &Ctx, body: &[u8], format: Format, stop: bool) -> Result<Outcome, ApiError> {
    let mut batch = WriteBatch::default();
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut stopped_at = None;
    let mut lines = 0usize;
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let number = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines += 1;
        match parse(raw, format, &ctx.limits) {
            Ok(points) => {
                for p in points {
                    batch.named(p, number as u32, None);
                }
            }
            Err(e) => {
                errors.push((number, e));
                if stop {
                    stopped_at = Some(number);
                    break;
                }
            }
        }
    }
    if !errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(errors.len() as u64);
    }
    let written = batch.write(&ctx.engine, &[])?;
    for refused in &written.errors {
        let msg = match &refused.error {
            PointError::Uid(UidError::NoSuchName { .. }) => "Unknown metric".to_string(),
            other => other.to_string(),
        };
        errors.push((refused.origin as usize, msg));
    }
    errors.sort_by_key(|e| e.0);
    Ok(Outcome {
        lines,
        lsn: written.lsn,
        points: written.accepted,
        errors,
        stopped_at,
    })
}

fn parse<'a>(
    raw: &'a [u8],
    format: Format,
    limits: &hourglass_ingest::Limits,
) -> Result<Vec<Point<'a>>, String> {
    match format {
        Format::Jsonl => parse_jsonl_line(raw, limits).map(|s| s.points),
        Format::OpenTsdb => {
            let text = std::str::from_utf8(raw).map_err(|e| format!("not UTF-8: {e}"))?;
            parse_import_line(text.trim(), limits)
                .map(|p| vec![p])
                .map_err(|e| e.to_string())
        }
    }
}
