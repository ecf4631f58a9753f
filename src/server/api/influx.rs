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

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hourglass_ingest::Point;
use hourglass_ingest::influx::{self, InfluxBatch, Precision, PrecisionError};

use crate::engine::SeriesRef;
use crate::server::Ctx;
use crate::server::http::error::{ApiError, ErrorFormat, influx_error_header};
use crate::server::http::{Params, PeerAddr, blocking, param, respond};
use crate::server::series_cache::CacheKey;
use crate::server::write::{PointSink, Protocol, WriteBatch};

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
pub async fn write_v1(State(ctx): State<Arc<Ctx>>, req: Request) -> Response {
    answer(&ctx, Api::V1, req).await
}

/// `POST /api/v2/write` (InfluxDB 2.x).
pub async fn write_v2(State(ctx): State<Arc<Ctx>>, req: Request) -> Response {
    answer(&ctx, Api::V2, req).await
}

async fn answer(ctx: &Arc<Ctx>, api: Api, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let peer = PeerAddr::of(&parts.extensions);
    let r = match Query::<Params>::try_from_uri(&parts.uri) {
        Ok(Query(params)) => write(ctx, api, &params, &parts.headers, peer, body).await,
        Err(e) => Err(ApiError::bad_request(e.body_text())),
    };
    let endpoint = match api {
        Api::V1 => "influx_write",
        Api::V2 => "influx_v2_write",
    };
    respond(ctx, endpoint, r.map_err(|e| e.in_format(api.format())))
}

/// What to answer an InfluxDB client, and whether to write the batch's points.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InfluxResponse {
    /// 204, or 400.
    status: StatusCode,
    /// JSON body (`Content-Type: application/json`); `None` for 204. InfluxDB also sends the
    /// error text in an `X-Influxdb-Error` header.
    body: Option<String>,
    /// The error text alone, for that header.
    error: Option<String>,
    /// Whether the accepted points are to be written (1.x writes them even when other lines
    /// failed; 2.x writes nothing if any line failed).
    write_points: bool,
}

impl InfluxResponse {
    fn no_content() -> Self {
        Self {
            status: StatusCode::NO_CONTENT,
            body: None,
            error: None,
            write_points: true,
        }
    }

    /// 1.x shape: `{"error": ...}`, plus `"line"` (the first refused line, 1-based) when a line
    /// was refused — an addition to 1.x, taken from the 2.x `LineProtocolError` schema.
    fn error_v1(message: String, line: Option<usize>) -> Self {
        let mut body = serde_json::json!({ "error": message });
        if let Some(n) = line {
            body["line"] = n.into();
        }
        Self {
            status: StatusCode::BAD_REQUEST,
            body: Some(body.to_string()),
            error: Some(message),
            write_points: true,
        }
    }

    /// 2.x `LineProtocolError` shape: `{"code": "invalid", "message": ..., "line": N}` (`line`:
    /// the first refused line, 1-based, when a line was refused).
    fn error_v2(message: &str, line: Option<usize>) -> Self {
        let mut body = serde_json::json!({ "code": "invalid", "message": message });
        if let Some(n) = line {
            body["line"] = n.into();
        }
        Self {
            status: StatusCode::BAD_REQUEST,
            body: Some(body.to_string()),
            error: Some(message.to_owned()),
            write_points: false,
        }
    }

    /// An unknown `precision`: 400. (1.x itself silently reads an unknown precision as
    /// nanoseconds; refusing it is a deliberate deviation — a typo would otherwise store every
    /// point in 1970 or refuse it.)
    fn bad_precision(api: Api, e: &PrecisionError) -> Self {
        match api {
            Api::V1 => Self::error_v1(
                format!(
                    "invalid precision {:?}; valid precision units are n, ns, u, us, ms, s, m and h",
                    e.0
                ),
                None,
            ),
            Api::V2 => Self::error_v2(
                "invalid precision; valid precision units are ns, us, ms, and s",
                None,
            ),
        }
    }

    /// The answer to a parsed body.
    ///
    /// 1.x `POST /write`: 204 when every line parsed; when some failed, 400
    /// `{"error":"partial write: <errors> dropped=0"}` and the good lines are written; when all
    /// failed, 400 `{"error":"<errors>"}`.
    ///
    /// 2.x `POST /api/v2/write`: 204 when every line parsed; otherwise 400
    /// `{"code":"invalid","message":"<errors>"}` and nothing is written; an empty body is 400
    /// `{"code":"invalid","message":"writing requires points"}`.
    fn for_batch(api: Api, batch: &InfluxBatch<'_>) -> Self {
        if api == Api::V2 && batch.empty_body {
            return Self::error_v2("writing requires points", None);
        }
        let Some(text) = batch.error_text() else {
            return Self::no_content();
        };
        let line = batch.first_error_line();
        match api {
            Api::V1 if batch.accepted_lines == 0 => Self::error_v1(text, line),
            Api::V1 => Self::error_v1(format!("partial write: {text} dropped=0"), line),
            Api::V2 => Self::error_v2(&text, line),
        }
    }
}

fn influx_response(r: InfluxResponse) -> Response {
    let status = r.status;
    let mut resp = match r.body {
        Some(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => status.into_response(),
    };
    if let Some(v) = r.error.as_deref().and_then(influx_error_header) {
        resp.headers_mut().insert("X-Influxdb-Error", v);
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
    peer: PeerAddr,
    body: Body,
) -> Result<Response, ApiError> {
    let p = param(params, "precision").unwrap_or("");
    let precision = match api {
        Api::V1 => Precision::from_v1(p),
        Api::V2 => Precision::from_v2(p),
    };
    let precision = match precision {
        Ok(p) => p,
        Err(e) => return Ok(influx_response(InfluxResponse::bad_precision(api, &e))),
    };
    let read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
    let now_ms = ctx.engine.clock().now_ms();
    // Parsing a large body and writing new series are blocking work.
    let writer = Arc::clone(ctx);
    let (answer, written) = blocking(move || {
        let ctx = &writer;
        let mut parsed = parse(ctx, &read.bytes, precision, now_ms);
        let lines = &parsed.lines;
        if lines.string_fields > 0 {
            ctx.metrics
                .influx_string_fields
                .inc_by(lines.string_fields as u64);
        }
        if lines.errors.count() > 0 {
            ctx.metrics
                .points_rejected
                .with_label_values(&["invalid"])
                .inc_by(lines.errors.count() as u64);
        }
        let answer = InfluxResponse::for_batch(api, lines);
        if !answer.write_points || parsed.points.is_empty() {
            return Ok((answer, None));
        }
        let written = parsed.points.write(&ctx.engine, &parsed.refs)?;
        // Cache the series of the lines that took the long way: a line
        // whose every field came back resolved (in field order).
        let mut resolved: std::collections::HashMap<u32, Vec<SeriesRef>> =
            std::collections::HashMap::new();
        for (line, series) in &written.series {
            resolved.entry(*line).or_default().push(series.clone());
        }
        for (line, fields, key) in parsed.new_series {
            if let Some(refs) = resolved.remove(&line).filter(|r| r.len() == fields) {
                ctx.http_series.insert(key, refs.into());
            }
        }
        // A cached series whose head slot was given up was registered
        // again: cache the new one in its line's entry, or every later
        // write registers it again.
        let mut scratch = Vec::new();
        let mut fields = Vec::new();
        for (r, series) in &written.refreshed {
            let Some(&(entry, pos)) = parsed.ref_fields.get(*r as usize) else {
                continue;
            };
            fields.clear();
            let Some(f) = parsed
                .cached_lines
                .get(entry)
                .and_then(|line| influx::fast_line(line, precision, now_ms, &mut fields))
            else {
                continue;
            };
            let key =
                ctx.http_series
                    .line_key(f.series, fields.iter().map(|(k, _)| *k), &mut scratch);
            if let Some(refs) = ctx.http_series.get(key)
                && pos < refs.len()
            {
                let mut refs = refs.to_vec();
                refs[pos] = series.clone();
                ctx.http_series.insert(key, refs.into());
            }
        }
        let refused = (!written.errors.is_empty()).then(|| {
            // Points the engine refused (unknown metric with auto-create
            // off, a time past what a row key holds): the client's fault.
            let named: Vec<String> = written
                .errors
                .iter()
                .take(hourglass_ingest::refusals::MAX_KEPT)
                .map(|r| {
                    format!(
                        "unable to write '{}': {}",
                        r.metric.as_deref().unwrap_or(""),
                        r.error
                    )
                })
                .collect();
            let mut text = parsed
                .lines
                .error_text()
                .map_or_else(String::new, |t| t + "\n");
            text.push_str(&named.join("\n"));
            if written.errors.len() > named.len() {
                text.push_str(&format!(
                    "\n… and {} more",
                    written.errors.len() - named.len()
                ));
            }
            match api {
                Api::V1 => format!("partial write: {text} dropped={}", written.errors.len()),
                Api::V2 => text,
            }
        });
        Ok((answer, Some((written.lsn, refused))))
    })
    .await?;
    if let Some((lsn, refused)) = written {
        ctx.engine.wait_durable(lsn).await?;
        if let Some(msg) = refused {
            return Err(ApiError::bad_request(msg));
        }
    }
    Ok(influx_response(answer))
}

/// A `/write` body as the engine takes it.
struct Parsed<'a> {
    /// Accepted and refused lines (for the answer; points are in `points`).
    lines: InfluxBatch<'a>,
    /// Every point, its line its origin.
    points: WriteBatch<'a>,
    /// Series of the points of cached lines.
    refs: Vec<SeriesRef>,
    /// For each of `refs`: its line in `cached_lines` and its field's place
    /// in the line (to cache a series the engine registered again).
    ref_fields: Vec<(usize, usize)>,
    cached_lines: Vec<&'a [u8]>,
    /// Lines parsed in full: the line, its number of fields, and its cache
    /// key, to cache once every field is resolved.
    new_series: Vec<(u32, usize, CacheKey)>,
}

/// Splits a body into points: lines whose every field's series is cached
/// become points of known series (no tag parsing); the others are parsed
/// in full.
fn parse<'a>(ctx: &Ctx, body: &'a [u8], precision: Precision, now_ms: i64) -> Parsed<'a> {
    let mut out = Parsed {
        lines: InfluxBatch {
            empty_body: body.is_empty(),
            ..InfluxBatch::default()
        },
        points: WriteBatch::new(Protocol::Influx),
        refs: Vec::new(),
        ref_fields: Vec::new(),
        cached_lines: Vec::new(),
        new_series: Vec::new(),
    };
    let mut fields = Vec::new();
    let mut scratch = Vec::new();
    for (line_no, entry) in influx::body_entries(body) {
        let origin = line_no as u32;
        fields.clear();
        let mut line_key = None;
        if let Some(f) = influx::fast_line(entry, precision, now_ms, &mut fields) {
            let key =
                ctx.http_series
                    .line_key(f.series, fields.iter().map(|(k, _)| *k), &mut scratch);
            if let Some(refs) = ctx.http_series.get(key)
                && refs.len() == fields.len()
            {
                out.cached_lines.push(entry);
                let line = out.cached_lines.len() - 1;
                for (pos, ((_, value), r)) in fields.iter().zip(refs.iter()).enumerate() {
                    out.refs.push(r.clone());
                    out.ref_fields.push((line, pos));
                    let series = (out.refs.len() - 1) as u32;
                    out.points.known(series, f.timestamp.0, *value, origin);
                }
                out.lines.accepted_lines += 1;
                continue;
            }
            line_key = Some(key);
        }
        match influx::parse_line(entry, precision, now_ms, &ctx.limits) {
            Ok(Some(line)) => {
                out.lines.string_fields += line.string_fields;
                out.lines.accepted_lines += 1;
                // The parser's points are the split's fields, in order.
                if let Some(key) = line_key
                    && fields.len() == line.fields.len()
                {
                    out.new_series.push((origin, fields.len(), key));
                }
                for (metric, value) in line.fields {
                    let point = Point {
                        metric: Cow::Owned(metric),
                        timestamp: line.timestamp,
                        value,
                        tags: line.tags.clone(),
                    };
                    out.points.named(point, origin, None);
                }
            }
            Ok(None) => {}
            Err(reason) => out.lines.refuse(line_no, entry, reason),
        }
    }
    out
}

/// `GET|HEAD /ping`: InfluxDB's liveness check (204 with its version).
pub async fn ping() -> Response {
    with_version(StatusCode::NO_CONTENT.into_response())
}

/// `POST|GET /query`: only `CREATE DATABASE`, which Telegraf's `influxdb`
/// output sends before writing, is answered (with success: there is one
/// namespace). Anything else is refused: hourglass is queried through
/// `/api/query` or Prometheus remote read, not InfluxQL.
pub async fn query(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let r = query_inner(&ctx, &params, &headers, peer, body).await;
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
    peer: PeerAddr,
    body: Body,
) -> Result<Response, ApiError> {
    let read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use hourglass_ingest::Limits;
    use hourglass_ingest::influx::parse_body;
    use proptest::prelude::*;

    use super::*;

    const NOW: i64 = 1_700_000_000_123;

    fn batch(body: &[u8]) -> InfluxBatch<'_> {
        parse_body(body, Precision::Nanoseconds, NOW, &Limits::default())
    }

    #[test]
    fn accepted_bodies_are_204() {
        let body = b"cpu,cpu=cpu0,host=a usage_idle=99.5,usage_user=0.5 1700000000000000000\n\
                     cpu,cpu=cpu0,host=a usage_idle=99.500000,usage_user=0.500000 1700000010000000000\n";
        let parsed = batch(body);
        assert_eq!(
            InfluxResponse::for_batch(Api::V1, &parsed),
            InfluxResponse::no_content()
        );
        assert_eq!(
            InfluxResponse::for_batch(Api::V2, &parsed).status,
            StatusCode::NO_CONTENT
        );
    }

    #[test]
    fn refused_lines_with_their_numbers() {
        let body = b"# header\n\
                     cpu,h=a v=1 1700000000000000000\n\
                     \n\
                     cpu,h=a v=oops 1700000000000000000\r\n\
                     cpu v=1 1700000000000000000\n\
                     cpu,h=b v=2 1700000000000000000";
        let parsed = batch(body);
        let joined = "unable to parse 'cpu,h=a v=oops 1700000000000000000': invalid boolean\nunable to parse 'cpu v=1 1700000000000000000': Need at least one tag (metric=cpu.v, tags={})";
        let v1 = InfluxResponse::for_batch(Api::V1, &parsed);
        assert_eq!(v1.status, StatusCode::BAD_REQUEST);
        assert!(v1.write_points);
        assert_eq!(
            v1.body,
            Some(
                serde_json::json!({ "error": format!("partial write: {joined} dropped=0"), "line": 4 })
                    .to_string()
            )
        );
        let v2 = InfluxResponse::for_batch(Api::V2, &parsed);
        assert_eq!(v2.status, StatusCode::BAD_REQUEST);
        assert!(!v2.write_points);
        assert_eq!(
            v2.body,
            Some(
                serde_json::json!({ "code": "invalid", "message": joined, "line": 4 }).to_string()
            )
        );
        assert_eq!(v2.error.as_deref(), Some(joined));
        // Every line failed: 1.x reports without "partial write".
        assert_eq!(
            InfluxResponse::for_batch(Api::V1, &batch(b"cpu\n"))
                .body
                .as_deref(),
            Some(r#"{"error":"unable to parse 'cpu': missing fields","line":1}"#)
        );
        // Empty bodies.
        let empty = batch(b"");
        assert_eq!(
            InfluxResponse::for_batch(Api::V1, &empty).status,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            InfluxResponse::for_batch(Api::V2, &empty).body.as_deref(),
            Some(r#"{"code":"invalid","message":"writing requires points"}"#)
        );
        assert_eq!(
            InfluxResponse::for_batch(Api::V2, &batch(b"\n\n# c\n")).status,
            StatusCode::NO_CONTENT
        );
    }

    #[test]
    fn bad_precisions() {
        for bad in ["n", "u", "m", "h", "sec", "NS"] {
            let e = Precision::from_v2(bad).unwrap_err();
            let r = InfluxResponse::bad_precision(Api::V2, &e);
            assert_eq!(r.status, StatusCode::BAD_REQUEST);
            assert_eq!(
                r.body.as_deref(),
                Some(
                    r#"{"code":"invalid","message":"invalid precision; valid precision units are ns, us, ms, and s"}"#
                )
            );
        }
        let e = Precision::from_v1("sec").unwrap_err();
        assert_eq!(
            InfluxResponse::bad_precision(Api::V1, &e).body.as_deref(),
            Some(
                r#"{"error":"invalid precision \"sec\"; valid precision units are n, ns, u, us, ms, s, m and h"}"#
            )
        );
    }

    proptest! {
        /// Any body gets an answer: 1.x 204 or 400; 2.x 204 exactly when no line was refused
        /// and the body was not empty.
        #[test]
        fn every_body_gets_an_answer(body in prop::collection::vec(any::<u8>(), 0..400)) {
            let parsed = batch(&body);
            let v1 = InfluxResponse::for_batch(Api::V1, &parsed);
            prop_assert!(v1.status == StatusCode::NO_CONTENT || v1.status == StatusCode::BAD_REQUEST);
            let v2 = InfluxResponse::for_batch(Api::V2, &parsed);
            prop_assert_eq!(
                v2.status == StatusCode::NO_CONTENT,
                parsed.errors.is_empty() && !parsed.empty_body
            );
        }
    }
}
