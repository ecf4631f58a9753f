//! [`ApiRequest`]: an OpenTSDB API request as most endpoints read it — the
//! query string, the body of any method but GET and HEAD (read within the
//! server's bounds), who sent it, and the text `/api/stats/query` shows for
//! it. OpenTSDB takes most requests either way: the query string of a GET,
//! or a JSON body.

use std::sync::Arc;

use axum::extract::{FromRequest, Query, Request};
use axum::http::Method;

use super::body::{self, ReadBody};
use super::error::ApiError;
use super::helpers::{Params, PeerAddr};
use crate::server::Ctx;

/// How much of a body `/api/stats/query` shows.
const SHOWN_BODY: usize = 4096;

#[derive(Debug)]
pub struct ApiRequest {
    pub method: Method,
    pub params: Params,
    /// `None` for GET and HEAD.
    pub body: Option<ReadBody>,
    /// The request as `/api/stats/query` lists it: the URI, or the start of
    /// the body.
    pub text: String,
    /// The client's address, as text.
    pub peer: String,
}

impl ApiRequest {
    /// The request's JSON body, or `None` when it carries none (a GET, or
    /// a body of white space): then the query string is the request.
    pub fn json(&self) -> Option<&[u8]> {
        self.body
            .as_ref()
            .map(|b| &b.bytes[..])
            .filter(|b| !b.iter().all(u8::is_ascii_whitespace))
    }

    /// Reads the request from its query string (GET, HEAD) or its body
    /// (any other method, even an empty body).
    pub fn parse<T>(
        &self,
        from_params: impl FnOnce(&[(String, String)]) -> T,
        from_body: impl FnOnce(&[u8]) -> T,
    ) -> T {
        match &self.body {
            Some(b) => from_body(&b.bytes),
            None => from_params(&self.params),
        }
    }
}

impl FromRequest<Arc<Ctx>> for ApiRequest {
    type Rejection = ApiError;

    async fn from_request(req: Request, ctx: &Arc<Ctx>) -> Result<Self, ApiError> {
        let (parts, body) = req.into_parts();
        let Query(params) = Query::<Params>::try_from_uri(&parts.uri).map_err(|e| {
            ApiError::bad_request("Unable to parse the query string").with_details(e.body_text())
        })?;
        let peer = PeerAddr::of(&parts.extensions);
        let body = if matches!(parts.method, Method::GET | Method::HEAD) {
            None
        } else {
            Some(body::read(ctx, &parts.headers, peer.ip(), body).await?)
        };
        let text = match &body {
            Some(b) => {
                String::from_utf8_lossy(&b.bytes[..b.bytes.len().min(SHOWN_BODY)]).into_owned()
            }
            None => parts.uri.to_string(),
        };
        Ok(Self {
            method: parts.method,
            params,
            body,
            text,
            peer: peer.0.to_string(),
        })
    }
}
