//! Access control of the HTTP API (`docs/security.md`), with `[auth]
//! enabled = true`: each request presents a token ([`credentials`]) whose
//! scope allows the endpoint ([`needed`]); without one it gets 401 and a
//! `WWW-Authenticate` challenge, with one of too small a scope 403, in the
//! error shape of the endpoint's clients. The caller's scope rides with
//! the request ([`Caller`]) for the checks that depend on the body (a
//! query with `"delete": true` needs `admin`).
//!
//! Open without a token: `/` and InfluxDB's `/ping` (health checks), and
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

/// The scope an endpoint needs; `None`: open.
pub fn needed(method: &Method, path: &str) -> Option<Scope> {
    if method == Method::OPTIONS {
        return None;
    }
    Some(match path {
        "/" | "/ping" => return None,
        "/api/put" | "/api/rollup" | "/write" | "/api/v2/write" | "/api/v1/write"
        | "/api/uid/assign" => Scope::Write,
        "/api/dropcaches" | "/api/uid/rename" => Scope::Admin,
        "/api/query" if method == Method::DELETE => Scope::Admin,
        "/api/annotation" | "/api/annotation/bulk" => match *method {
            Method::GET => Scope::Read,
            Method::DELETE => Scope::Admin,
            _ => Scope::Write,
        },
        _ => Scope::Read,
    })
}

/// The error shape of an endpoint's clients.
fn format_of(path: &str) -> ErrorFormat {
    match path {
        "/write" | "/query" => ErrorFormat::InfluxV1,
        "/api/v2/write" => ErrorFormat::InfluxV2,
        "/api/v1/write" | "/api/v1/read" => ErrorFormat::Text,
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
        return next.run(req).await;
    };
    let path = req.uri().path();
    let Some(need) = needed(req.method(), path) else {
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
    // A token seen before costs a lookup; a new one a hash check, off the
    // reactor.
    let verified = match tokens.verify_cached(&token) {
        Some(v) => Some(v),
        None => tokio::task::spawn_blocking(move || tokens.verify(&token))
            .await
            .ok()
            .flatten(),
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
    req.extensions_mut().insert(Caller(Some(v)));
    next.run(req).await
}

/// Who made a request: the verified token, or `None` with auth off.
#[derive(Debug, Clone, Default)]
pub struct Caller(pub Option<Verified>);

impl Caller {
    /// Err(403) unless the caller may do what `needed` allows (always Ok
    /// with auth off).
    pub fn require(&self, needed: Scope) -> Result<(), ApiError> {
        match &self.0 {
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
            (&get, "/no/such/path", Some(Scope::Read)),
        ] {
            assert_eq!(needed(m, p), want, "{m} {p}");
        }
    }
}
