//! `GET /api/v1/export` (read scope): every stored point of the series
//! that `match[]` selects, streamed as VictoriaMetrics serves its export —
//! JSON lines, one series a line, milliseconds — or, with
//! `format=opentsdb`, OpenTSDB's import text (`tsdb import`). `start` and
//! `end` take what `/api/query` takes (default: everything up to now);
//! `Accept-Encoding: gzip` compresses the stream. Names are written as
//! stored and values in the text that reads back into the same bits, so
//! `/api/v1/import` of an export stores exactly what was exported.
//!
//! The selection is checked before anything is sent (a bad selector is a
//! 400). Then each metric is read one time window at a time (a day where
//! there are points, growing over empty stretches, halved while a window
//! holds more than `query.max_points`), and each window's series are sent
//! as they are read: memory is bounded by one window of one metric, and a
//! slow client holds the reading back. The export holds
//! one query slot while it runs; an error after the first bytes ends the
//! stream short (the client sees a truncated transfer, never a complete
//! one).

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use hourglass_ingest::Value;
use hourglass_ingest::jsonl::{LineFormat, write_import_lines, write_jsonl_line};
use hourglass_query::{Num, QueryBudget, QueryLimits};

use super::select::{FetchError, Names, Selection};
use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::stream::{BodyWriter, streamed};
use crate::server::http::{Params, PeerAddr, accepts_gzip, now_ms, param};

/// The window read at once where there are points.
const WINDOW_MS: i64 = 86_400_000;
/// The widest window an empty stretch grows to (a selection over decades
/// with data in a few months reads a few hundred windows, not thousands).
const MAX_EMPTY_WINDOW_MS: i64 = 4096 * WINDOW_MS;
/// The narrowest: a window this small over the point limit is an error.
const MIN_WINDOW_MS: i64 = 60_000;
/// `match[]` selectors one export may have.
const MAX_SELECTORS: usize = 64;
/// Bytes gathered before a chunk is sent.
const CHUNK: usize = 256 << 10;

pub async fn export(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
) -> Response {
    match start(&ctx, &params, &headers, peer).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn start(
    ctx: &Arc<Ctx>,
    params: &Params,
    headers: &HeaderMap,
    peer: PeerAddr,
) -> Result<Response, ApiError> {
    let format = LineFormat::from_param(param(params, "format")).map_err(ApiError::bad_request)?;
    let now = now_ms();
    let time = |name: &str, default: i64| -> Result<i64, ApiError> {
        match param(params, name) {
            None | Some("") => Ok(default),
            Some(t) => hourglass_query::parse_time(t, now).map_err(ApiError::from),
        }
    };
    let (start_ms, end_ms) = (time("start", 0)?, time("end", now)?);
    if end_ms < start_ms {
        return Err(ApiError::bad_request(format!(
            "end ({end_ms} ms) is before start ({start_ms} ms)"
        )));
    }
    let selectors: Vec<&str> = params
        .iter()
        .filter(|(k, _)| k == "match[]" || k == "match")
        .map(|(_, v)| v.as_str())
        .collect();
    if selectors.len() > MAX_SELECTORS {
        return Err(ApiError::bad_request(format!(
            "{} match[] selectors: at most {MAX_SELECTORS}",
            selectors.len()
        )));
    }
    if selectors.is_empty() {
        return Err(ApiError::bad_request(
            "missing match[]: a series selector such as match[]=sys.cpu.user{host=\"web-1\"} or match[]={__name__=~\".+\"} for everything",
        ));
    }
    let mut selections = Vec::with_capacity(selectors.len());
    for text in &selectors {
        let matchers = hourglass_ingest::selector::parse_selector(text)
            .map_err(|e| ApiError::bad_request(format!("match[]={text}: {e}")))?;
        selections.push(Selection::new(matchers, Names::Stored)?);
    }
    let engine = Arc::clone(&ctx.engine);
    let metrics = crate::server::http::blocking(move || {
        let mut per = Vec::with_capacity(selections.len());
        for s in selections {
            let names = s.metrics(&engine)?;
            per.push((s, names));
        }
        Ok(per)
    })
    .await?;
    let mut ticket = ctx
        .queries
        .admit(
            format!("export {}", selectors.join(" ")),
            peer.0.to_string(),
        )
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many queries are running; please try again later",
            )
            .with_retry_after(1)
        })?;
    let cfg = &ctx.config.query;
    let limits = QueryLimits {
        max_points: cfg.max_points as u64,
        max_values: cfg.max_values as u64,
        timeout: (cfg.timeout_secs > 0).then(|| std::time::Duration::from_secs(cfg.timeout_secs)),
    };
    let gzip = accepts_gzip(headers);
    let engine = Arc::clone(&ctx.engine);
    let body = streamed(move |out| {
        let cancel = Arc::clone(&ticket.cancel);
        let mut sink = Sink::new(out, gzip);
        // Series earlier selectors wrote (a series two selectors select is
        // written once), and those the current one wrote.
        let mut earlier: HashSet<Vec<u8>> = HashSet::new();
        let mut current: HashSet<Vec<u8>> = HashSet::new();
        let several = metrics.len() > 1;
        let result = (|| {
            for (selection, names) in &metrics {
                earlier.extend(current.drain());
                for metric in names {
                    let mut window = WINDOW_MS;
                    let mut from = start_ms;
                    while from <= end_ms {
                        let to = from.saturating_add(window - 1).min(end_ms);
                        let budget = QueryBudget::new(limits).with_cancel_flag(Arc::clone(&cancel));
                        match selection.fetch(&engine, metric, (from, to), false, &budget) {
                            Ok(series) => {
                                // Over empty stretches the window grows; where
                                // there are points it stays at most a day (and
                                // as narrow as the point limit made it).
                                window = if series.is_empty() {
                                    window.saturating_mul(4).min(MAX_EMPTY_WINDOW_MS)
                                } else {
                                    window.min(WINDOW_MS)
                                };
                                let written = Written {
                                    earlier: &earlier,
                                    current: &mut current,
                                    several,
                                };
                                write_series(&mut sink, metric, series, format, written)?;
                                from = to.saturating_add(1);
                            }
                            Err(FetchError::TooManyPoints(_)) if window > MIN_WINDOW_MS => {
                                window /= 2;
                            }
                            Err(e) => {
                                return Err(std::io::Error::other(ApiError::from(e).message));
                            }
                        }
                    }
                }
            }
            sink.finish()
        })();
        ticket.finish(
            if result.is_ok() { 200 } else { 500 },
            result.as_ref().err().map(ToString::to_string),
            0,
        );
        result
    });
    let content_type = match format {
        LineFormat::Jsonl => "application/stream+json",
        LineFormat::OpenTsdb => "text/plain; charset=UTF-8",
    };
    let mut resp = (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response();
    if gzip {
        resp.headers_mut().insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static("gzip"),
        );
    }
    Ok(resp)
}

/// The series already written, by TSUID, when there are several
/// selectors.
struct Written<'a> {
    earlier: &'a HashSet<Vec<u8>>,
    current: &'a mut HashSet<Vec<u8>>,
    several: bool,
}

/// Writes a window's series, but none an earlier selector wrote.
fn write_series(
    sink: &mut Sink<'_>,
    metric: &str,
    series: Vec<hourglass_query::exec::Series>,
    format: LineFormat,
    written: Written<'_>,
) -> std::io::Result<()> {
    // Tags by name and series by their tags: the same data exports to the
    // same bytes on any server, whatever order its UIDs were assigned in.
    type Named = Vec<(Arc<str>, Arc<str>)>;
    let mut series: Vec<(Named, &hourglass_query::exec::Series)> = series
        .iter()
        .map(|s| {
            let mut tags: Named = s.named_tags().collect();
            tags.sort_unstable();
            (tags, s)
        })
        .collect();
    series.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut points: Vec<(i64, Value)> = Vec::new();
    for (named, s) in series {
        let tags: Vec<(&str, &str)> = named.iter().map(|(k, v)| (&**k, &**v)).collect();
        if written.several {
            if written.earlier.contains(&s.tsuid) {
                continue;
            }
            written.current.insert(s.tsuid.clone());
        }
        points.clear();
        points.extend(s.points.iter().map(|&(t, v)| {
            (
                t,
                match v {
                    Num::Int(i) => Value::Int(i),
                    Num::Float(f) => Value::from_double(f),
                },
            )
        }));
        match format {
            LineFormat::Jsonl => write_jsonl_line(&mut sink.buf, metric, &tags, &points),
            LineFormat::OpenTsdb => write_import_lines(&mut sink.buf, metric, &tags, &points),
        }
        sink.maybe_send()?;
    }
    Ok(())
}

/// Gathers lines into chunks, compressed or not, and sends them.
struct Sink<'a> {
    out: &'a mut BodyWriter,
    buf: Vec<u8>,
    gzip: Option<GzEncoder<Vec<u8>>>,
}

impl<'a> Sink<'a> {
    fn new(out: &'a mut BodyWriter, gzip: bool) -> Self {
        Sink {
            out,
            buf: Vec::with_capacity(CHUNK + (CHUNK >> 2)),
            gzip: gzip.then(|| GzEncoder::new(Vec::new(), Compression::fast())),
        }
    }

    fn maybe_send(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> std::io::Result<()> {
        let chunk = match &mut self.gzip {
            None => std::mem::take(&mut self.buf),
            Some(gz) => {
                gz.write_all(&self.buf)?;
                self.buf.clear();
                std::mem::take(gz.get_mut())
            }
        };
        self.out.send(Bytes::from(chunk))
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.send()?;
        if let Some(gz) = self.gzip.take() {
            let rest = gz.finish()?;
            self.out.send(Bytes::from(rest))?;
        }
        Ok(())
    }
}
