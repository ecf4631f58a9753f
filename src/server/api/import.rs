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

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use hourglass_ingest::jsonl::{LineFormat, SeriesNames, split_jsonl_line};
use hourglass_ingest::{Point, Value, fast_import, parse_import_line};
use serde_json::json;

use crate::engine::{PointError, SeriesRef};
use crate::hashing::DigestMap;
use crate::server::Ctx;
use crate::server::http::{ApiError, Params, PeerAddr, blocking, json_response, param, respond};
use crate::server::series_cache::CacheKey;
use crate::server::write::{PointSink, Protocol, WriteBatch};
use crate::uid::UidError;

/// Errors listed in one answer: as many as every write format lists.
pub const MAX_REPORTED: usize = hourglass_ingest::refusals::MAX_KEPT;

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
    let format = LineFormat::from_param(param(params, "format")).map_err(ApiError::bad_request)?;
    let stop = match param(params, "on_error").unwrap_or("stop") {
        "stop" => true,
        "skip" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "on_error={other}: stop (the default) or skip"
            )));
        }
    };
    let mut read = crate::server::http::body::read(ctx, headers, peer.ip(), body).await?;
    // A point held for writing costs about 70 bytes: five times its JSON
    // line text (~16 bytes a point), one and a half times an import line.
    let held = read.bytes.len().saturating_mul(match format {
        LineFormat::Jsonl => 5,
        LineFormat::OpenTsdb => 3,
    });
    if !ctx.inflight.try_grow(&mut read._guard, held) {
        return Err(crate::server::http::body::overloaded());
    }
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

/// A point waiting for its series: timestamp, value, line.
type Waiting = (u64, Value, u32);

/// A series resolved by its first point: key, the first point's line, and
/// the points after it.
type Pending = (CacheKey, u32, Vec<Waiting>);

/// What writing a body's points did: the log position to wait for, the
/// points written, and the refused ones (line, why).
type Wrote = (u64, usize, Vec<(usize, String)>);

/// Points grouped by series while a body is read: a series the shared
/// cache knows is written by reference; an unknown one is resolved by
/// writing its first point by name (checked as a `put` is), and its other
/// points follow by reference once that write has resolved it. Each series'
/// names are read and checked once a body, not once a point.
#[derive(Default)]
struct Resolver<'a> {
    /// First points of the series to resolve (phase 1).
    first: WriteBatch<'a>,
    /// Points of known series (phase 2), by index into `refs`.
    known: Vec<(u32, u64, Value, u32)>,
    refs: Vec<SeriesRef>,
    /// The cache key of each of `refs`.
    ref_keys: Vec<CacheKey>,
    /// Series key → index into `refs` (cached series) or, negated minus one,
    /// into `pending` (series resolved in phase 1).
    seen: DigestMap<i64>,
    /// Keys of the series phase 1 resolves, the line of their first
    /// point, and their points after the first.
    pending: Vec<Pending>,
}

impl<'a> Resolver<'a> {
    /// Takes one point of the series `key`; `named` builds the point with
    /// its names when the series is new to this body (its error is the
    /// line's).
    fn take(
        &mut self,
        ctx: &Ctx,
        key: CacheKey,
        timestamp: u64,
        value: Value,
        line: u32,
        named: impl FnOnce() -> Result<Point<'a>, String>,
    ) -> Result<(), String> {
        if let Some(&at) = self.seen.get(&key) {
            if at >= 0 {
                self.known.push((at as u32, timestamp, value, line));
            } else {
                self.pending[(-at - 1) as usize]
                    .2
                    .push((timestamp, value, line));
            }
            return Ok(());
        }
        if let Some(series) = ctx.http_series.get(key)
            && let [series] = &series[..]
        {
            self.refs.push(series.clone());
            self.ref_keys.push(key);
            let at = (self.refs.len() - 1) as u32;
            self.seen.insert(key, i64::from(at));
            self.known.push((at, timestamp, value, line));
            return Ok(());
        }
        let point = named()?;
        self.first.named(point, line, Some(key));
        self.pending.push((key, line, Vec::new()));
        self.seen.insert(key, -(self.pending.len() as i64));
        Ok(())
    }

    /// Writes phase 1, caches what it resolved, then writes phase 2.
    /// Returns the log position to wait for, the points written and the
    /// refused ones (line, why).
    fn write(mut self, ctx: &Ctx) -> Result<Wrote, ApiError> {
        let mut errors = Vec::new();
        let reason = |e: &PointError| match e {
            PointError::Uid(UidError::NoSuchName { .. }) => "Unknown metric".to_string(),
            other => other.to_string(),
        };
        let first = self.first.write(&ctx.engine, &[])?;
        let mut refused_first: HashMap<u32, String> = HashMap::new();
        for refused in &first.errors {
            let why = reason(&refused.error);
            errors.push((refused.origin as usize, why.clone()));
            refused_first.insert(refused.origin, why);
        }
        let mut resolved: DigestMap<SeriesRef> = DigestMap::default();
        for (key, series) in first.new_series {
            ctx.http_series.insert(key, Arc::from([series.clone()]));
            resolved.insert(key, series);
        }
        let mut batch = WriteBatch::new(Protocol::Import);
        for (at, ts, value, line) in self.known {
            batch.known(at, ts, value, line);
        }
        for (key, first_line, rest) in self.pending {
            match resolved.remove(&key) {
                Some(series) => {
                    self.refs.push(series);
                    self.ref_keys.push(key);
                    let at = (self.refs.len() - 1) as u32;
                    for (ts, value, line) in rest {
                        batch.known(at, ts, value, line);
                    }
                }
                // Its first point was refused: so are the others, for the
                // same reason (the series could not be resolved).
                None => {
                    let why = refused_first
                        .get(&first_line)
                        .cloned()
                        .unwrap_or_else(|| "the series could not be resolved".to_string());
                    for (_, _, line) in rest {
                        errors.push((line as usize, why.clone()));
                    }
                }
            }
        }
        let second = batch.write(&ctx.engine, &self.refs)?;
        for refused in &second.errors {
            errors.push((refused.origin as usize, reason(&refused.error)));
        }
        // A cached series whose slot was given up was registered again.
        for (r, series) in &second.refreshed {
            if let Some(key) = self.ref_keys.get(*r as usize) {
                ctx.http_series.insert(*key, Arc::from([series.clone()]));
            }
        }
        // One error a line (a line's points share their series and its fate).
        errors.sort_by_key(|e| e.0);
        errors.dedup_by_key(|e| e.0);
        Ok((
            first.lsn.max(second.lsn),
            first.accepted + second.accepted,
            errors,
        ))
    }
}

/// Parses every line, then writes the points of the lines taken
/// (blocking).
fn write_lines(
    ctx: &Ctx,
    body: &[u8],
    format: LineFormat,
    stop: bool,
) -> Result<Outcome, ApiError> {
    let mut resolver = Resolver::default();
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut stopped_at = None;
    let mut lines = 0usize;
    let mut scratch = Vec::with_capacity(256);
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let number = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines += 1;
        let taken = match format {
            LineFormat::Jsonl => take_json(ctx, &mut resolver, raw, number as u32, &mut scratch),
            LineFormat::OpenTsdb => take_text(ctx, &mut resolver, raw, number as u32, &mut scratch),
        };
        if let Err(e) = taken {
            errors.push((number, e));
            if stop {
                stopped_at = Some(number);
                break;
            }
        }
    }
    if !errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(errors.len() as u64);
    }
    let (lsn, points, refused) = resolver.write(ctx)?;
    errors.extend(refused);
    errors.sort_by_key(|e| e.0);
    errors.dedup_by_key(|e| e.0);
    Ok(Outcome {
        lines,
        lsn,
        points,
        errors,
        stopped_at,
    })
}

/// A JSON line: its series by the `metric` object's text.
fn take_json<'a>(
    ctx: &Ctx,
    resolver: &mut Resolver<'a>,
    raw: &'a [u8],
    line: u32,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let split = split_jsonl_line(raw)?;
    let points = split.points()?;
    let key = ctx.http_series.import_json_key(split.series, scratch);
    for (timestamp, value) in points {
        // Called once a body per series: its names are read and checked then.
        resolver.take(ctx, key, timestamp.0, value, line, || {
            let (metric, tags): SeriesNames<'a> = split.names(&ctx.limits)?;
            Ok(Point {
                metric,
                timestamp,
                value,
                tags,
            })
        })?;
    }
    Ok(())
}

/// A line of import text: its series by its metric and tag words as sent.
fn take_text<'a>(
    ctx: &Ctx,
    resolver: &mut Resolver<'a>,
    raw: &'a [u8],
    line: u32,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let text = || std::str::from_utf8(raw).map_err(|e| format!("not UTF-8: {e}"));
    let Some(fast) = fast_import(raw) else {
        // The full parser gives the exact error (or takes a line the
        // quick split does not).
        let point = parse_import_line(text()?.trim(), &ctx.limits).map_err(|e| e.to_string())?;
        resolver.first.named(point, line, None);
        return Ok(());
    };
    let key = ctx
        .http_series
        .import_text_key(fast.metric, fast.tags, scratch);
    resolver.take(ctx, key, fast.timestamp.0, fast.value, line, || {
        parse_import_line(text()?.trim(), &ctx.limits).map_err(|e| e.to_string())
    })
}
