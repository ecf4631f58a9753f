//! What the HTTP endpoints share: the client's address, the JSON response,
//! per-endpoint accounting, query parameters, reading a body within the
//! server's bounds, running blocking work off the reactor, and running a
//! read under the query budget and admission gate (so every read endpoint
//! is bounded like `/api/query`), whether a client takes gzip.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hourglass_query::QueryBudget;

use super::error::ApiError;
use crate::server::Ctx;
use crate::server::limits::{QueryTicket, Refused};

pub type Params = Vec<(String, String)>;

pub fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        body.into(),
    )
        .into_response()
}

/// Turns a handler result into the response and counts it by endpoint and
/// status.
pub fn respond(ctx: &Ctx, endpoint: &str, r: Result<Response, ApiError>) -> Response {
    let resp = r.unwrap_or_else(IntoResponse::into_response);
    ctx.metrics
        .http_requests
        .with_label_values(&[endpoint, resp.status().as_str()])
        .inc();
    resp
}

pub fn param<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Present and not `false` (OpenTSDB's flag parameters).
pub fn has_flag(params: &Params, name: &str) -> bool {
    params
        .iter()
        .any(|(k, v)| k == name && !v.eq_ignore_ascii_case("false"))
}

/// How a query's blocking work runs (see [`run_budgeted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// On the blocking pool: the request's future stays free, so a client
    /// that goes away cancels the work at its next budget check.
    Pool,
    /// On the worker thread that serves the request, its other tasks
    /// handed to another worker meanwhile (`block_in_place`): no trip
    /// through the blocking pool and back (8–55 µs, a third of the smallest
    /// query; `BENCHMARKS.md`). Not cancelled by a client going away (its
    /// future is not polled meanwhile), so only for work a small window
    /// bounds, and only under a query timeout; shutdown still cancels it.
    Inline,
}

/// Runs blocking read work `f` as a query: admitted by the query gate
/// (bounded concurrency and queue, listed in `/api/stats/query`), under a
/// budget with the configured point, value, memory and time limits, off the
/// reactor as `run` says. `text` is what `/api/stats/query` shows.
pub async fn run_budgeted<T, F>(
    ctx: &Arc<Ctx>,
    text: String,
    peer: String,
    run: Run,
    f: F,
) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&QueryBudget) -> Result<T, ApiError> + Send + 'static,
{
    let (out, held) = run_budgeted_held(ctx, text, peer, run, f).await?;
    held.finish();
    Ok(out)
}

/// A query's slot and budget, kept past its work by an answer sent as it
/// is made: the query stays listed as running and its memory stays
/// charged to the pool until [`Held::finish`] (or the drop: a client that
/// went away).
#[derive(Debug)]
pub struct Held {
    ticket: QueryTicket,
    budget: QueryBudget,
}

impl Held {
    /// Records the query as answered (200, with the points it read) and
    /// frees its slot and memory.
    pub fn finish(mut self) {
        self.ticket.finish(200, None, self.budget.points_taken());
    }
}

/// [`run_budgeted`], with the query's slot and budget handed back with a
/// successful result instead of released: for an answer that is rendered
/// while it is sent.
pub async fn run_budgeted_held<T, F>(
    ctx: &Arc<Ctx>,
    text: String,
    peer: String,
    run: Run,
    f: F,
) -> Result<(T, Held), ApiError>
where
    T: Send + 'static,
    F: FnOnce(&QueryBudget) -> Result<T, ApiError> + Send + 'static,
{
    let mut ticket = ctx.queries.admit(text, peer).await.map_err(|why| {
        let msg = match why {
            Refused::QueueFull => "Too many queries are waiting; please try again later",
            Refused::Waited => "Timed out waiting for a query slot; please try again later",
        };
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, msg).with_retry_after(1)
    })?;
    let cfg = &ctx.config.query;
    let limits = hourglass_query::QueryLimits {
        max_points: cfg.max_points as u64,
        max_values: cfg.max_values as u64,
        timeout: (cfg.timeout_secs > 0).then(|| std::time::Duration::from_secs(cfg.timeout_secs)),
    };
    let budget = QueryBudget::new(limits)
        .with_cancel_flag(Arc::clone(&ticket.cancel))
        .with_pool(Arc::clone(&ctx.queries.pool));
    let work = move || {
        let out = f(&budget);
        (out, budget)
    };
    // Inline work must be bounded in time: without a query timeout it goes
    // to the pool, where a client going away still cancels it.
    let (out, budget) = match run {
        // A panic in the work is a 500, as on the pool, not the end of
        // the connection's task.
        Run::Inline if limits.timeout.is_some() => tokio::task::block_in_place(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        })
        .map_err(|_| "panicked".to_string()),
        Run::Inline | Run::Pool => tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| e.to_string()),
    }
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("query task failed: {e}"),
        )
    })?;
    match out {
        Ok(out) => Ok((out, Held { ticket, budget })),
        Err(e) => {
            ticket.finish(
                e.status.as_u16(),
                Some(e.message.clone()),
                budget.points_taken(),
            );
            Err(e)
        }
    }
}

/// The client's IP address (unspecified if unknown, as in unit tests).
pub fn peer_ip(ext: &axum::http::Extensions) -> std::net::IpAddr {
    PeerAddr::of(ext).ip()
}

/// The client's address as text (`/api/stats/query`).
pub fn peer_of(ext: &axum::http::Extensions) -> String {
    PeerAddr::of(ext).0.to_string()
}

/// The client's address, as an extension of every request; also an
/// extractor (a request without it, which only tests build, is from
/// `0.0.0.0:0`).
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub std::net::SocketAddr);

impl PeerAddr {
    /// The address a request's extensions carry.
    pub fn of(ext: &axum::http::Extensions) -> Self {
        ext.get::<PeerAddr>()
            .copied()
            .unwrap_or(PeerAddr(std::net::SocketAddr::from(([0, 0, 0, 0], 0))))
    }

    pub fn ip(self) -> std::net::IpAddr {
        self.0.ip()
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PeerAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(PeerAddr::of(&parts.extensions))
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Runs blocking work (storage I/O, a large parse or write) on a blocking
/// thread, never on the reactor.
pub async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("request task failed: {e}"),
        )
    })?
}

/// Whether the client takes a gzip-compressed answer (`Accept-Encoding`;
/// `gzip;q=0` refuses it).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            // `gzip;q=0` refuses it.
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn gzip_is_taken_unless_refused() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            m
        };
        assert!(accepts_gzip(&h("gzip, deflate, br")));
        assert!(accepts_gzip(&h("br;q=1.0, GZIP;q=0.5")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("gzip; q=0.0")));
        assert!(!accepts_gzip(&h("br")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
