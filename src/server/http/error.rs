//! HTTP errors: every error of every crate is mapped to a status code here,
//! and rendered in the shape the endpoint's clients expect ([`ErrorFormat`]):
//! OpenTSDB's `{"error":{"code":400,"message":"…","details":"…"}}` by
//! default, InfluxDB's JSON (with the text also in `X-Influxdb-Error`) on the
//! InfluxDB write endpoints, and plain text on the Prometheus remote
//! write/read endpoints (Prometheus logs the body). The status never depends
//! on the format: 4xx means "do not resend this", 503 means "retry later".

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::engine::wal::WalError;
use crate::engine::{AnnotationError, EngineError, IndexError};
use crate::storage::StorageError;
use crate::uid::UidError;

/// How an error body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorFormat {
    /// OpenTSDB's JSON error object.
    #[default]
    OpenTsdb,
    /// InfluxDB 1.x: `{"error":"…"}`.
    InfluxV1,
    /// InfluxDB 2.x: `{"code":"invalid","message":"…"}`.
    InfluxV2,
    /// Plain text (Prometheus remote write and read).
    Text,
    /// The Prometheus HTTP API's `{"status":"error","errorType","error"}`.
    Prometheus,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub details: Option<String>,
    /// Seconds for a `Retry-After` header (503s the client should retry).
    pub retry_after: Option<u32>,
    pub format: ErrorFormat,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: None,
            retry_after: None,
            format: ErrorFormat::OpenTsdb,
        }
    }

    /// The same error, written for another kind of client.
    pub fn in_format(mut self, format: ErrorFormat) -> Self {
        self.format = format;
        self
    }

    pub fn with_retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        let d = details.into();
        self.details = (!d.is_empty()).then_some(d);
        self
    }

    pub fn body(&self) -> serde_json::Value {
        let mut e = serde_json::json!({"code": self.status.as_u16(), "message": self.message});
        if let Some(d) = &self.details {
            e["details"] = serde_json::Value::String(d.clone());
        }
        serde_json::json!({ "error": e })
    }
}

/// InfluxDB 2.x's `code` for a status.
/// Prometheus' `errorType` of a status.
fn prometheus_error_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_data",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        StatusCode::GATEWAY_TIMEOUT => "timeout",
        s if s.is_server_error() => "internal",
        _ => "execution",
    }
}

fn influx_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not found",
        405 => "method not allowed",
        408 | 503 => "unavailable",
        413 => "request too large",
        415 => "unsupported media type",
        429 => "too many requests",
        _ => "internal error",
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        use axum::http::header::CONTENT_TYPE;
        let text = || match &self.details {
            Some(d) => format!("{}: {d}", self.message),
            None => self.message.clone(),
        };
        let mut resp = match self.format {
            ErrorFormat::OpenTsdb => (
                self.status,
                [(CONTENT_TYPE, "application/json; charset=UTF-8")],
                self.body().to_string(),
            )
                .into_response(),
            ErrorFormat::InfluxV1 | ErrorFormat::InfluxV2 => {
                let msg = text();
                let body = if self.format == ErrorFormat::InfluxV1 {
                    serde_json::json!({ "error": msg })
                } else {
                    serde_json::json!({ "code": influx_code(self.status), "message": msg })
                };
                let mut r = (
                    self.status,
                    [(CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
                    .into_response();
                if let Some(v) = influx_error_header(&msg) {
                    r.headers_mut().insert("X-Influxdb-Error", v);
                }
                r
            }
            ErrorFormat::Prometheus => (
                self.status,
                [(CONTENT_TYPE, "application/json")],
                serde_json::json!({
                    "status": "error",
                    "errorType": prometheus_error_type(self.status),
                    "error": text(),
                })
                .to_string(),
            )
                .into_response(),
            ErrorFormat::Text => (
                self.status,
                [(CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("{}\n", text()),
            )
                .into_response(),
        };
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        resp
    }
}

impl From<hourglass_query::error::QueryError> for ApiError {
    fn from(e: hourglass_query::error::QueryError) -> Self {
        use hourglass_query::error::QueryError as Q;
        let status = match &e {
            Q::Source(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Q::Limit(_) | Q::Timeout(_) => StatusCode::PAYLOAD_TOO_LARGE,
            // The client is gone or the server is stopping: nobody reads it.
            Q::Cancelled | Q::Overloaded(_) | Q::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        let retry = matches!(e, Q::Overloaded(_) | Q::Unavailable(_));
        let mut err = ApiError::new(status, e.message());
        if let Some(d) = e.details() {
            err = err.with_details(d);
        }
        if retry {
            err = err.with_retry_after(1);
        }
        err
    }
}

impl From<hourglass_ingest::prom::PromError> for ApiError {
    fn from(e: hourglass_ingest::prom::PromError) -> Self {
        // 400 undecodable, 413 too large, 500 a server-side failure.
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, e.message).in_format(ErrorFormat::Text)
    }
}

impl From<WalError> for ApiError {
    fn from(e: WalError) -> Self {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
    }
}

/// The status of a storage failure: 503 when the engine or a remote store
/// may take the same request later (`Retry-After` when it is transient),
/// else 500.
pub(crate) fn storage_error(e: &StorageError) -> ApiError {
    match e {
        StorageError::Poisoned => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        StorageError::Unsupported(_) => ApiError::new(StatusCode::NOT_IMPLEMENTED, e.to_string()),
        e if e.is_retryable() => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()).with_retry_after(1)
        }
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

impl From<UidError> for ApiError {
    fn from(e: UidError) -> Self {
        match e {
            UidError::NoSuchName { .. } | UidError::Exists { .. } => {
                ApiError::bad_request(e.to_string())
            }
            UidError::Storage(s) => storage_error(&s),
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

impl From<AnnotationError> for ApiError {
    fn from(e: AnnotationError) -> Self {
        match e {
            AnnotationError::BadTsuid(_) | AnnotationError::NoStart => {
                ApiError::bad_request(e.to_string())
            }
            AnnotationError::Query(q) => q.into(),
            AnnotationError::Storage(s) => storage_error(&s),
        }
    }
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::Unresolved { kind, name } => {
                ApiError::new(StatusCode::NOT_FOUND, "Unable to resolve one or more UIDs")
                    .with_details(format!("No such name for '{}': '{name}'", kind.as_str()))
            }
            IndexError::Budget(q) => q.into(),
            IndexError::Uid(u) => u.into(),
            IndexError::Storage(s) => storage_error(&s),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Wal(w) => w.into(),
            EngineError::Overloaded { .. } | EngineError::TooManySeries { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()).with_retry_after(1)
            }
            EngineError::Storage(s) => storage_error(&s),
            EngineError::Uid(u) => u.into(),
            EngineError::NoSuchSnapshot(_) => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
            EngineError::BadSnapshotPath(_) => ApiError::bad_request(e.to_string()),
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}

/// Longest `X-Influxdb-Error` value in bytes: the body has the whole text,
/// and clients refuse long header lines (Python's `http.client` at 64 KiB).
pub const MAX_INFLUX_ERROR_HEADER: usize = 4096;

/// The `X-Influxdb-Error` value for an error text: visible ASCII on one
/// line (what a header value may hold: a control character becomes a
/// blank, any other character outside ASCII `?`), cut to
/// [`MAX_INFLUX_ERROR_HEADER`] bytes ending with `...` when longer.
pub fn influx_error_header(msg: &str) -> Option<axum::http::HeaderValue> {
    const CUT: &str = "...";
    let mut one_line = String::with_capacity(msg.len().min(MAX_INFLUX_ERROR_HEADER));
    for c in msg.chars() {
        if one_line.len() == MAX_INFLUX_ERROR_HEADER {
            one_line.truncate(MAX_INFLUX_ERROR_HEADER - CUT.len());
            one_line.push_str(CUT);
            break;
        }
        one_line.push(match c {
            c if c.is_control() => ' ',
            c if c.is_ascii() => c,
            _ => '?',
        });
    }
    axum::http::HeaderValue::from_str(&one_line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_influx_error_header_is_one_line_and_bounded() {
        let value = |msg: &str| {
            influx_error_header(msg)
                .and_then(|v| v.to_str().ok().map(str::to_owned))
                .unwrap_or_else(|| panic!("no value for {msg:?}"))
        };
        assert_eq!(value("a\nb\tc"), "a b c");
        // Outside ASCII (a line cut with `…`, a UTF-8 name): still a header.
        assert_eq!(value("unable to parse 'é…'"), "unable to parse '??'");
        let exact = "x".repeat(MAX_INFLUX_ERROR_HEADER);
        assert_eq!(value(&exact), exact);
        let long = "é".repeat(2 * MAX_INFLUX_ERROR_HEADER);
        assert_eq!(
            value(&long),
            format!("{}...", "?".repeat(MAX_INFLUX_ERROR_HEADER - 3))
        );
    }
}
