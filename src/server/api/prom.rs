//! Prometheus remote write (`POST /api/v1/write`) and remote read
//! (`POST /api/v1/read`).
//!
//! Remote write: a snappy block of a protobuf `WriteRequest`
//! ([`hourglass_ingest::prom::decode_write_with`] maps names and values).
//! A series the head knows by the digest of its label bytes as sent (the
//! same series in the same bytes, as a Prometheus server sends it every
//! time) keeps only its samples: its names are neither decoded nor looked
//! up again ([`Engine::series_of_texts`], `Entry::SentAs`). The
//! body is bounded like every other (`server.max_body_bytes`, compressed and
//! decoded; the decoded size is reserved in the in-flight budget before it is
//! decoded), and acknowledged like `/api/put`: 204 once durable. Status codes
//! follow what Prometheus does with them:
//! * 204 — stored (staleness markers and other NaN/±Inf samples too, bit for
//!   bit; exemplars, native histograms and metadata are skipped and counted
//!   in `hourglass_prom_write_skipped_total`; a metadata-only request is a
//!   204);
//! * 400 / 413 / 415 — the request can never succeed (undecodable, too large,
//!   unknown encoding, a series hourglass cannot store): Prometheus drops it,
//!   which is right, since resending would fail again. The storable rest of
//!   the request is written first;
//! * 5xx — retryable: 503 with `Retry-After` when the server is overloaded
//!   or holds as many series as it may (refused before decoding), 5xx when
//!   storage fails. Prometheus resends with back-off.
//!
//! Remote read: `ReadRequest` → `ReadResponse` with the `SAMPLES` response
//! type, snappy-compressed. Each query is run through the query engine's
//! [`SeriesSource`] (the same fetch `/api/query` uses: `=` matchers on labels
//! are pushed down as `literal_or` filters) and then every matcher is applied
//! with Prometheus's semantics (`!=`, `=~`, `!~` on decoded names, regular
//! expressions fully anchored, an empty value matching an absent label). A
//! query is admitted, budgeted and cancelled like an `/api/query` one
//! (`query.max_points`, `query.max_values`, `query.timeout_secs`, the shared
//! memory pool); over budget it is refused with the same 413 text, which
//! Prometheus shows as the PromQL error. A query without a `__name__="…"`
//! matcher looks at every metric name, at most `select::MAX_METRICS`
//! (the selection is `select.rs`'s).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hourglass_ingest::prom::{self, pb};

use super::select::{Names, Selection};
use crate::engine::{Engine, EngineError, PointError, SeriesRef};
use crate::server::Ctx;
use crate::server::http::error::{ApiError, ErrorFormat};
use crate::server::http::{Run, blocking, respond};
use crate::server::series_cache::prom_labels_key;
use crate::server::write::{PointSink, Protocol, WriteBatch};
use crate::uid::UidError;

/// `POST /api/v1/write`.
pub async fn remote_write(
    State(ctx): State<Arc<Ctx>>,
    headers: HeaderMap,
    peer: crate::server::http::PeerAddr,
    body: Body,
) -> Response {
    let r = write(&ctx, &headers, peer.ip(), body).await;
    respond(
        &ctx,
        "prom_write",
        r.map_err(|e| e.in_format(ErrorFormat::Text)),
    )
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
}

/// Refuses encodings and message types other than snappy-compressed
/// remote-write 1.0 / remote-read protobuf (415: Prometheus does not resend).
fn check_encoding(headers: &HeaderMap) -> Result<(), ApiError> {
    let enc = header_str(headers, header::CONTENT_ENCODING).to_ascii_lowercase();
    if !(enc.is_empty() || enc == "snappy") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "Unsupported Content-Encoding: {enc} (remote write and read bodies are snappy)"
            ),
        ));
    }
    let ty = header_str(headers, header::CONTENT_TYPE);
    if ty.contains("io.prometheus.write.v2.Request") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "remote write 2.0 is not supported; send prometheus.WriteRequest (remote write 1.0)",
        ));
    }
    Ok(())
}

async fn write(
    ctx: &Arc<Ctx>,
    headers: &HeaderMap,
    peer: std::net::IpAddr,
    body: Body,
) -> Result<Response, ApiError> {
    check_encoding(headers)?;
    let mut read = crate::server::http::body::read_raw(ctx, headers, peer, body).await?;
    // At the head's series bound a batch naming new series (a churned pod)
    // would be refused after decoding; decoding the retries of many such
    // batches would take the CPU the flusher needs to make room.
    if let Some((series, limit)) = ctx.engine.series_at_limit() {
        return Err(EngineError::TooManySeries { series, limit }.into());
    }
    let limit = ctx.config.server.max_body_bytes;
    // Reserve the decoded body and its points before decoding (the decoder
    // itself refuses a declared size above the limit).
    let declared = prom::declared_len(&read.bytes)?;
    if declared <= limit
        && !ctx.inflight.try_grow(
            &mut read._guard,
            read.bytes.len() + declared.saturating_mul(2),
        )
    {
        return Err(crate::server::http::body::overloaded());
    }
    // Decoding and writing new series are blocking work.
    let writer = Arc::clone(ctx);
    let (lsn, problems, retry) = blocking(move || {
        let ctx = &writer;
        // Series the head knows by their label records as sent skip
        // decoding and mapping their names.
        let mut known = Vec::new();
        let decoded = prom::decode_write_with(&read.bytes, limit, &ctx.limits, |records| {
            let mut scratch = Vec::new();
            let keys: Vec<u128> = records
                .iter()
                .map(|r| prom_labels_key(&ctx.text_digest, r, &mut scratch))
                .collect();
            let found = ctx.engine.series_of_texts(&keys);
            keys.into_iter()
                .zip(found)
                .map(|(key, series)| match series {
                    Some(series) => {
                        known.push(series);
                        prom::SeenLabels::Known((known.len() - 1) as u32)
                    }
                    None => prom::SeenLabels::New(key),
                })
                .collect()
        })?;
        // The compressed bytes go; the charge (grown above for the decoded
        // samples) stays until the samples are written.
        let crate::server::http::body::ReadBody { bytes, _guard } = read;
        drop(bytes);
        let skipped = &ctx.metrics.prom_skipped;
        for (reason, n) in [
            ("exemplar", decoded.exemplars),
            ("histogram", decoded.histograms),
            ("metadata", decoded.metadata),
        ] {
            if n > 0 {
                skipped.with_label_values(&[reason]).inc_by(n as u64);
            }
        }
        let refused_samples = decoded.refused_samples;
        if refused_samples > 0 {
            ctx.metrics
                .points_rejected
                .with_label_values(&["invalid"])
                .inc_by(refused_samples as u64);
        }
        let mut problems: Vec<String> = decoded.error_text().into_iter().collect();
        if decoded.point_count() == 0 {
            return Ok((0, problems, None));
        }
        let receipt = write_series(&ctx.engine, &decoded, &known)?;
        let mut retry = None;
        for (series, e) in &receipt.errors {
            // A storage failure while assigning a UID is worth resending;
            // an unknown name or a full UID space is not.
            if let PointError::Uid(
                UidError::Storage(_) | UidError::Damaged(_) | UidError::Conflict { .. },
            ) = e
            {
                retry = Some(e.to_string());
            }
            if problems.len() < 100 {
                problems.push(match decoded.series.get(*series) {
                    Some(s) => format!("sample of '{}': {e}", s.metric()),
                    None => {
                        let known = decoded.known.get(*series - decoded.series.len());
                        format!("sample of series {}: {e}", known.map_or(0, |k| k.index))
                    }
                });
            }
        }
        Ok((receipt.lsn, problems, retry))
    })
    .await?;
    ctx.engine.wait_durable(lsn).await?;
    if let Some(e) = retry {
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e));
    }
    if !problems.is_empty() {
        return Err(ApiError::bad_request(problems.join("\n")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What [`write_series`] did: the WAL position to await and the refused
/// samples, by series: an index into the request's named series, or past
/// them into its known ones.
struct SeriesReceipt {
    lsn: u64,
    errors: Vec<(usize, PointError)>,
}

/// Writes remote-write series in two steps, so that a request's transient
/// memory stays near its decoded size (a point with its own tag list per
/// sample costs ~20 times a sample): every sample of a known series and the
/// first sample of every named series, then every other sample by the
/// series the first resolved to. The samples of a series whose first one
/// was refused, or whose series the write does not name, all take the long
/// way (a refusal may be the sample's own, like a time out of range). A
/// named series is written with its labels' key, by which the head finds it
/// for the next request. Blocking.
fn write_series(
    engine: &Engine,
    decoded: &prom::RemoteWrite,
    known: &[SeriesRef],
) -> Result<SeriesReceipt, crate::engine::EngineError> {
    let series = &decoded.series;
    let known_samples: usize = decoded.known.iter().map(|s| s.samples.len()).sum();
    let mut firsts = WriteBatch::with_capacity(Protocol::Prometheus, known_samples + series.len());
    for (k, s) in decoded.known.iter().enumerate() {
        let origin = (series.len() + k) as u32;
        for &(timestamp, value) in &s.samples {
            firsts.known(s.handle, timestamp.0, value, origin);
        }
    }
    for (owner, s) in series.iter().enumerate() {
        if let Some(p) = s.points().next() {
            firsts.named_as(p, owner as u32, s.labels_key);
        }
    }
    let first = firsts.write(engine, known)?;
    drop(firsts);
    let mut errors: Vec<(usize, PointError)> = first
        .errors
        .into_iter()
        .map(|r| (r.origin as usize, r.error))
        .collect();
    let mut refs = Vec::with_capacity(first.series.len());
    let rest_samples: usize = series
        .iter()
        .map(|s| s.samples.len().saturating_sub(1))
        .sum();
    let mut rest = WriteBatch::with_capacity(Protocol::Prometheus, rest_samples);
    // The write names a series once per run of its points (two parts of
    // one series in a request); parts it does not name send their other
    // samples by name, never drop them.
    let mut by_ref = vec![false; series.len()];
    for (owner, sref) in first.series {
        let owner = owner as usize;
        let Some(s) = series.get(owner) else {
            continue;
        };
        by_ref[owner] = true;
        refs.push(sref);
        let index = (refs.len() - 1) as u32;
        for &(timestamp, value) in &s.samples[1..] {
            rest.known(index, timestamp.0, value, owner as u32);
        }
    }
    for (owner, s) in series.iter().enumerate() {
        if !by_ref[owner] {
            for p in s.points().skip(1) {
                rest.named(p, owner as u32, None);
            }
        }
    }
    let second = rest.write(engine, &refs)?;
    errors.extend(
        second
            .errors
            .into_iter()
            .map(|r| (r.origin as usize, r.error)),
    );
    Ok(SeriesReceipt {
        lsn: first.lsn.max(second.lsn),
        errors,
    })
}

/// `POST /api/v1/read`.
pub async fn remote_read(
    State(ctx): State<Arc<Ctx>>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    body: Body,
) -> Response {
    let started = std::time::Instant::now();
    let r = read(&ctx, &headers, &ext, body).await;
    ctx.metrics
        .query_seconds
        .observe(started.elapsed().as_secs_f64());
    respond(
        &ctx,
        "prom_read",
        r.map_err(|e| e.in_format(ErrorFormat::Text)),
    )
}

fn summary(req: &pb::ReadRequest) -> String {
    let ops = ["=", "!=", "=~", "!~"];
    let mut out = String::from("remote read:");
    for q in &req.queries {
        let ms: Vec<String> = q
            .matchers
            .iter()
            .map(|m| {
                let op = usize::try_from(m.r#type)
                    .ok()
                    .and_then(|i| ops.get(i))
                    .unwrap_or(&"?");
                format!("{}{op}{:?}", m.name, m.value)
            })
            .collect();
        out.push_str(&format!(
            " {{{}}}[{}, {}]",
            ms.join(","),
            q.start_timestamp_ms,
            q.end_timestamp_ms
        ));
        if out.len() > 4096 {
            break;
        }
    }
    out
}

async fn read(
    ctx: &Arc<Ctx>,
    headers: &HeaderMap,
    ext: &axum::http::Extensions,
    body: Body,
) -> Result<Response, ApiError> {
    check_encoding(headers)?;
    let raw =
        crate::server::http::body::read_raw(ctx, headers, crate::server::http::peer_ip(ext), body)
            .await?;
    let peer = crate::server::http::peer_of(ext);
    let req = prom::decode_read(&raw.bytes, ctx.config.server.max_body_bytes)?;
    drop(raw);
    let engine = Arc::clone(&ctx.engine);
    let text = summary(&req);
    let body = crate::server::http::run_budgeted(ctx, text, peer, Run::Pool, move |budget| {
        let mut results = Vec::with_capacity(req.queries.len());
        for q in &req.queries {
            results.push(run_query(&engine, q, budget)?);
        }
        Ok(prom::encode_read_response(&req, results)?)
    })
    .await?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/x-protobuf"),
            (header::CONTENT_ENCODING, "snappy"),
        ],
        body,
    )
        .into_response())
}

/// One remote-read query: its series with the samples in
/// `[start_timestamp_ms, end_timestamp_ms]`.
fn run_query(
    engine: &Engine,
    q: &pb::Query,
    budget: &hourglass_query::QueryBudget,
) -> Result<pb::QueryResult, ApiError> {
    let matchers = q
        .matchers
        .iter()
        .map(prom::map_matcher)
        .collect::<Result<Vec<_>, _>>()?;
    let selection = Selection::new(matchers, Names::Prometheus)?;
    let (start, end) = (q.start_timestamp_ms.max(0), q.end_timestamp_ms);
    if end < start {
        return Ok(pb::QueryResult::default());
    }
    let mut out = Vec::new();
    for metric in selection.metrics(engine)? {
        for s in selection.fetch(engine, &metric, (start, end), true, budget)? {
            let named: Vec<_> = s.named_tags().collect();
            let tags: Vec<(&str, &str)> = named.iter().map(|(k, v)| (&**k, &**v)).collect();
            let samples = s.points.iter().map(|&(t, v)| (t, v.as_f64()));
            let mut ts = prom::series_to_prom(&metric, &tags, samples);
            prom::prometheus_safe_labels(&mut ts);
            out.push(ts);
        }
    }
    out.sort_by(|a, b| {
        a.labels
            .iter()
            .map(|l| (&l.name, &l.value))
            .cmp(b.labels.iter().map(|l| (&l.name, &l.value)))
    });
    Ok(pb::QueryResult { timeseries: out })
}
