//! Access control of the HTTP API (`docs/security.md`), with `[auth]
//! enabled = true`: each request presents a token ([`credentials`]) whose
//! scope allows the endpoint ([`needed`]); without one it gets 401 and a
//! `WWW-Authenticate` challenge, with one of too small a scope 403, in the
//! error shape of the endpoint's clients. The caller's scope rides with
//! the request ([`Caller`]) for the checks that depend on the body (a
//! query with `"delete": true` needs `admin`).
//!
//! Open without a token: `/` and the web UI's files under `/ui/` (the
//! page holds no data; it sends the user's token with its API calls),
//! InfluxDB's `/ping` (health checks), and
//! CORS preflights (answered before this layer).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorFormat};
use crate::auth::{Scope, Verified, credentials};
use crate::server::Ctx;

/// The scope an endpoint needs; `None`: open. A path not listed needs
/// `admin`, so that a new endpoint is never open by omission.
pub fn needed(method: &Method, path: &str) -> Option<Scope> {
    if method == Method::OPTIONS {
        return None;
    }
    let read_method = method == Method::GET || method == Method::HEAD;
    Some(match path {
        "/" | "/ping" => return None,
        // The web UI's files hold no data; the page asks for a token.
        p if read_method && p.starts_with("/ui/") => return None,
        "/api/put" | "/api/rollup" | "/write" | "/api/v2/write" | "/api/v1/write"
        | "/api/v1/import" | "/api/uid/assign" => Scope::Write,
        "/api/dropcaches" | "/api/uid/rename" => Scope::Admin,
        "/api/query" if method == Method::DELETE => Scope::Admin,
        "/api/annotation" | "/api/annotation/bulk" if read_method => Scope::Read,
        "/api/annotation" | "/api/annotation/bulk" if method == Method::DELETE => Scope::Admin,
        "/api/annotation" | "/api/annotation/bulk" => Scope::Write,
        // InfluxDB 1's `/query`: reads, and the `CREATE DATABASE` Telegraf
        // POSTs before writing (a no-op here).
        "/query" if read_method => Scope::Read,
        "/query" => Scope::Write,
        "/api/query"
        | "/api/query/last"
        | "/api/query/exp"
        | "/api/query/gexp"
        | "/api/suggest"
        | "/api/search/lookup"
        | "/api/uid/uidmeta"
        | "/api/uid/tsmeta"
        | "/api/annotations"
        | "/api/version"
        | "/api/aggregators"
        | "/api/config"
        | "/api/config/filters"
        | "/api/serializers"
        | "/api/stats"
        | "/api/stats/query"
        | "/api/stats/cardinality"
        | "/metrics"
        | "/api/v1/read"
        | "/api/v1/export"
        | "/api/v1/series"
        | "/api/v1/labels"
        | "/api/v1/status/buildinfo"
        | "/api/v1/metadata"
        | "/api/v1/query_exemplars"
        | "/api/v1/query"
        | "/api/v1/query_range"
        | "/api/__unsupported_version" => Scope::Read,
        p if p.starts_with("/api/search/")
            || p.starts_with("/api/uid/")
            || (read_method && p.starts_with("/api/v1/label/")) =>
        {
            Scope::Read
        }
        _ => Scope::Admin,
    })
}

/// The error shape of an endpoint's clients.
fn format_of(path: &str) -> ErrorFormat {
    match path {
        "/write" | "/query" => ErrorFormat::InfluxV1,
        "/api/v2/write" => ErrorFormat::InfluxV2,
        "/api/v1/write" | "/api/v1/read" => ErrorFormat::Text,
        "/api/v1/series"
        | "/api/v1/labels"
        | "/api/v1/status/buildinfo"
        | "/api/v1/metadata"
        | "/api/v1/query_exemplars"
        | "/api/v1/query"
        | "/api/v1/query_range" => ErrorFormat::Prometheus,
        p if p.starts_with("/api/v1/label/") => ErrorFormat::Prometheus,
        _ => ErrorFormat::OpenTsdb,
    }
}

fn unauthorized(message: &str, format: ErrorFormat) -> Response {
    let mut resp = ApiError::new(StatusCode::UNAUTHORIZED, message)
        .with_details(
            "Send a token: `Authorization: Bearer <token>`, or Basic auth with the token \
             as the password (`hourglass token create` makes one)",
        )
        .in_format(format)
        .into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"hourglass\""),
    );
    resp
}

/// A token of `scope` that does not allow `needed`.
pub fn forbidden(scope: Scope, needed: Scope) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "Forbidden").with_details(format!(
        "this token's scope ({scope}) does not allow what needs {needed}"
    ))
}

pub async fn layer(State(ctx): State<Arc<Ctx>>, mut req: Request, next: Next) -> Response {
    let Some(tokens) = ctx.tokens.clone() else {
        req.extensions_mut().insert(Caller::open());
        return next.run(req).await;
    };
    let path = req.uri().path();
    let Some(need) = needed(req.method(), path) else {
        req.extensions_mut().insert(Caller::open());
        return next.run(req).await;
    };
    let format = format_of(path);
    let presented = credentials::presented(
        req.headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
        req.uri().query(),
    );
    let Some(token) = presented else {
        ctx.metrics.auth_refused.with_label_values(&["none"]).inc();
        return unauthorized("Authentication required", format);
    };
    // The token in a query string (InfluxDB's `p`, and its `u`) goes no
    // further: `/api/stats/query` shows what queries asked.
    strip_credentials(&mut req);
    let verified = match tokens.verify_async(&token).await {
        Ok(v) => v,
        Err(crate::auth::Busy) => {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many token checks at once; please try again later",
            )
            .with_retry_after(1)
            .in_format(format)
            .into_response();
        }
    };
    let Some(v) = verified else {
        ctx.metrics
            .auth_refused
            .with_label_values(&["invalid"])
            .inc();
        return unauthorized("Invalid token", format);
    };
    if !v.scope.allows(need) {
        ctx.metrics.auth_refused.with_label_values(&["scope"]).inc();
        return forbidden(v.scope, need).in_format(format).into_response();
    }
    req.extensions_mut().insert(Caller {
        checked: true,
        token: Some(v),
    });
    next.run(req).await
}

/// The request's query string without `p` and `u`.
fn strip_credentials(req: &mut Request) {
    let Some(query) = req.uri().query() else {
        return;
    };
    if !form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "p" || k == "u") {
        return;
    }
    let kept: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k != "p" && k != "u"),
        )
        .finish();
    let path_and_query = if kept.is_empty() {
        req.uri().path().to_string()
    } else {
        format!("{}?{kept}", req.uri().path())
    };
    let mut parts = req.uri().clone().into_parts();
    if let Ok(pq) = path_and_query.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = axum::http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
}

/// Who made a request, as the access layer found it: its token (with
/// access control on), or open (off, or an open endpoint). A request the
/// layer did not see (`checked` false) is refused by [`Caller::require`].
#[derive(Debug, Clone, Default)]
pub struct Caller {
    checked: bool,
    pub token: Option<Verified>,
}

impl Caller {
    fn open() -> Caller {
        Caller {
            checked: true,
            token: None,
        }
    }

    /// Err(403) unless the caller may do what `needed` allows (Ok with
    /// access control off).
    pub fn require(&self, needed: Scope) -> Result<(), ApiError> {
        match &self.token {
            _ if !self.checked => Err(ApiError::new(StatusCode::FORBIDDEN, "Forbidden")
                .with_details("internal error: the request bypassed access control")),
            Some(v) if !v.scope.allows(needed) => Err(forbidden(v.scope, needed)),
            _ => Ok(()),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_needs_its_scope() {
        let get = Method::GET;
        for (m, p, want) in [
            (&get, "/", None),
            (&get, "/ping", None),
            (&Method::OPTIONS, "/api/query", None),
            (&get, "/api/query", Some(Scope::Read)),
            (&Method::POST, "/api/query", Some(Scope::Read)),
            (&Method::DELETE, "/api/query", Some(Scope::Admin)),
            (&Method::POST, "/api/put", Some(Scope::Write)),
            (&Method::POST, "/api/rollup", Some(Scope::Write)),
            (&Method::POST, "/write", Some(Scope::Write)),
            (&Method::POST, "/api/v2/write", Some(Scope::Write)),
            (&Method::POST, "/api/v1/write", Some(Scope::Write)),
            (&Method::POST, "/api/v1/read", Some(Scope::Read)),
            (&Method::POST, "/api/uid/assign", Some(Scope::Write)),
            (&Method::POST, "/api/uid/rename", Some(Scope::Admin)),
            (&Method::POST, "/api/dropcaches", Some(Scope::Admin)),
            (&get, "/api/annotation", Some(Scope::Read)),
            (&Method::POST, "/api/annotation", Some(Scope::Write)),
            (&Method::DELETE, "/api/annotation/bulk", Some(Scope::Admin)),
            (&get, "/metrics", Some(Scope::Read)),
            (&get, "/api/version", Some(Scope::Read)),
            (&Method::HEAD, "/api/annotation", Some(Scope::Read)),
            (&get, "/query", Some(Scope::Read)),
            (&Method::POST, "/query", Some(Scope::Write)),
            (&get, "/api/search/tagk", Some(Scope::Read)),
            (&get, "/no/such/path", Some(Scope::Admin)),
        ] {
            assert_eq!(needed(m, p), want, "{m} {p}");
        }
    }
}
