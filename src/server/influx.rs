//! The InfluxDB HTTP write API: 1.x `POST /write?db=&precision=` and 2.x
//! `POST /api/v2/write?org=&bucket=&precision=`, plus the two calls InfluxDB
//! clients make around writing (`GET|HEAD /ping`, and `POST /query` for
//! Telegraf's `CREATE DATABASE`).
//!
//! * Bodies are line protocol ([`hourglass_ingest::influx`]), optionally gzip,
//!   read within the same bounds as `/api/put` (`body.rs`), and written with
//!   the same acknowledgement: 204 once the points are durable in the log.
//! * `db`, `rp`, `org` and `bucket` are **ignored**: hourglass has one
//!   namespace, as OpenTSDB does, so every database and bucket writes to it.
//!   (Telegraf always sends `db=telegraf`; a tag for it would only add a
//!   constant to every series.)
//! * Refused lines follow InfluxDB: 1.x writes the good lines and answers 400
//!   `{"error":"partial write: unable to parse '…': … dropped=0","line":N}`;
//!   2.x writes nothing when a line is refused and answers 400
//!   `{"code":"invalid","message":"unable to parse '…': …","line":N}`, `N`
//!   being the first refused line. A point refused at write time (unknown
//!   metric with `uid.auto_create_metrics = false`) is a 400 naming it.
//! * Overload (503 with `Retry-After`) and storage failures (5xx) make
//!   Telegraf retry; every 4xx makes it drop the batch, as InfluxDB's do.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hourglass_ingest::Point;
use hourglass_ingest::influx::{self, InfluxResponse, Precision};

use super::Ctx;
use super::error::{ApiError, ErrorFormat};
use super::http::{Params, param, respond, write_and_wait};

/// The version string InfluxDB clients read from `X-Influxdb-Version`.
const INFLUX_VERSION: &str = "1.8.10";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    V1,
    V2,
}

impl Api {
    fn format(self) -> ErrorFormat {
        match self {
            Api::V1 => ErrorFormat::InfluxV1,
            Api::V2 => ErrorFormat::InfluxV2,
        }
    }
}

/// `POST /write` (InfluxDB 1.x).
pub(super) async fn write_v1(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r = write(&ctx, Api::V1, &params, &headers, body).await;
    respond(
        &ctx,
        "influx_write",
        r.map_err(|e| e.in_format(Api::V1.format())),
    )
}

/// `POST /api/v2/write` (InfluxDB 2.x).
pub(super) async fn write_v2(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r = write(&ctx, Api::V2, &params, &headers, body).await;
    respond(
        &ctx,
        "influx_v2_write",
        r.map_err(|e| e.in_format(Api::V2.format())),
    )
}

fn influx_response(r: InfluxResponse) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = match r.body {
        Some(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => status.into_response(),
    };
    if let Some(e) = r.error {
        let one_line: String = e
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&one_line) {
            resp.headers_mut().insert("X-Influxdb-Error", v);
        }
    }
    with_version(resp)
}

fn with_version(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        "X-Influxdb-Version",
        HeaderValue::from_static(INFLUX_VERSION),
    );
    resp
}

async fn write(
    ctx: &Arc<Ctx>,
    api: Api,
    params: &Params,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let p = param(params, "precision").unwrap_or("");
    let precision = match api {
        Api::V1 => Precision::from_v1(p),
        Api::V2 => Precision::from_v2(p),
    };
    let precision = match precision {
        Ok(p) => p,
        Err(e) => {
            return Ok(influx_response(match api {
                Api::V1 => e.v1_response(),
                Api::V2 => e.v2_response(),
            }));
        }
    };
    let read = super::body::read(ctx, headers, body).await?;
    let now_ms = ctx.engine.clock().now_ms();
    // Parsing a large body is CPU work: keep it off the reactor's threads.
    let batch = tokio::task::block_in_place(|| {
        influx::parse_body(&read.bytes, precision, now_ms, &ctx.limits)
    });
    if batch.string_fields > 0 {
        ctx.metrics
            .influx_string_fields
            .inc_by(batch.string_fields as u64);
    }
    if !batch.errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(batch.errors.len() as u64);
    }
    let answer = match api {
        Api::V1 => batch.v1_response(),
        Api::V2 => batch.v2_response(),
    };
    if answer.write_points && batch.point_count() > 0 {
        let points: Vec<Point<'_>> = batch.points().collect();
        let receipt = write_and_wait(ctx, &points).await?;
        if !receipt.errors.is_empty() {
            // Points the engine refused (unknown metric with auto-create
            // off, a time past what a row key holds): the client's fault.
            let refused: Vec<String> = receipt
                .errors
                .iter()
                .take(100)
                .map(|(i, e)| {
                    let metric = points.get(*i).map_or("", |p| p.metric.as_ref());
                    format!("unable to write '{metric}': {e}")
                })
                .collect();
            let mut text = batch.error_text().map_or_else(String::new, |t| t + "\n");
            text.push_str(&refused.join("\n"));
            if receipt.errors.len() > refused.len() {
                text.push_str(&format!(
                    "\n… and {} more",
                    receipt.errors.len() - refused.len()
                ));
            }
            let msg = match api {
                Api::V1 => format!("partial write: {text} dropped={}", receipt.errors.len()),
                Api::V2 => text,
            };
            return Err(ApiError::bad_request(msg));
        }
    }
    Ok(influx_response(answer))
}

/// `GET|HEAD /ping`: InfluxDB's liveness check (204 with its version).
pub(super) async fn ping() -> Response {
    with_version(StatusCode::NO_CONTENT.into_response())
}

/// `POST|GET /query`: only `CREATE DATABASE`, which Telegraf's `influxdb`
/// output sends before writing, is answered (with success: there is one
/// namespace). Anything else is refused: hourglass is queried through
/// `/api/query` or Prometheus remote read, not InfluxQL.
pub(super) async fn query(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r = query_inner(&ctx, &params, &headers, body).await;
    respond(
        &ctx,
        "influx_query",
        r.map_err(|e| e.in_format(ErrorFormat::InfluxV1)),
    )
}

async fn query_inner(
    ctx: &Arc<Ctx>,
    params: &Params,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let read = super::body::read(ctx, headers, body).await?;
    // `q` in the query string or in a form body.
    let form: Params = std::str::from_utf8(&read.bytes)
        .ok()
        .and_then(|b| format!("/?{b}").parse::<axum::http::Uri>().ok())
        .and_then(|u| Query::<Params>::try_from_uri(&u).ok())
        .map(|q| q.0)
        .unwrap_or_default();
    let q = param(params, "q")
        .or_else(|| param(&form, "q"))
        .unwrap_or("");
    let words: Vec<String> = q
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    if words == ["CREATE", "DATABASE"] {
        let body = serde_json::json!({"results": [{"statement_id": 0}]}).to_string();
        let resp = (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        return Ok(with_version(resp));
    }
    Err(ApiError::bad_request(
        "hourglass accepts InfluxDB writes only (and CREATE DATABASE, which it ignores); \
         query it with /api/query or through Prometheus remote read",
    ))
}
