//! Output format of `/api/query`: OpenTSDB's JSON, or an Arrow IPC stream
//! (`format=arrow`, or an `Accept` header naming
//! `application/vnd.apache.arrow.stream`) rendered by
//! `hourglass_query::render_arrow` (schema in `docs/http-api.md`). Errors
//! stay OpenTSDB's JSON whatever the format.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::server::http::error::ApiError;
use crate::server::http::{Params, param};

pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Arrow,
}

/// The format a query asks for: `format=` wins over `Accept`.
pub fn format(params: &Params, headers: &HeaderMap) -> Result<Format, ApiError> {
    match param(params, "format") {
        Some(f) if f.eq_ignore_ascii_case("arrow") => return Ok(Format::Arrow),
        Some(f) if f.eq_ignore_ascii_case("json") || f.is_empty() => return Ok(Format::Json),
        Some(f) => {
            return Err(ApiError::bad_request(format!(
                "Unknown output format: {f} (use json or arrow)"
            )));
        }
        None => {}
    }
    let wants_arrow = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            t.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(ARROW_STREAM))
        });
    Ok(if wants_arrow {
        Format::Arrow
    } else {
        Format::Json
    })
}

pub fn arrow_response(body: Vec<u8>) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, ARROW_STREAM)], body).into_response()
}
