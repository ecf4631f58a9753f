//! HTTP errors: every error of every crate is mapped to a status code here,
//! and rendered in OpenTSDB's JSON error shape
//! `{"error":{"code":400,"message":"…","details":"…"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::engine::wal::WalError;
use crate::engine::{AnnotationError, EngineError, IndexError};
use crate::uid::UidError;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub details: Option<String>,
    /// Seconds for a `Retry-After` header (503s the client should retry).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: None,
            retry_after: None,
        }
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (
            self.status,
            [(
                axum::http::header::CONTENT_TYPE,
                "application/json; charset=UTF-8",
            )],
            self.body().to_string(),
        )
            .into_response();
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
            Q::Cancelled | Q::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        let retry = matches!(e, Q::Overloaded(_));
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

impl From<WalError> for ApiError {
    fn from(e: WalError) -> Self {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
    }
}

impl From<UidError> for ApiError {
    fn from(e: UidError) -> Self {
        match e {
            UidError::NoSuchName { .. } | UidError::Exists { .. } => {
                ApiError::bad_request(e.to_string())
            }
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
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
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
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Wal(w) => w.into(),
            EngineError::Overloaded { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()).with_retry_after(1)
            }
            EngineError::Storage(crate::storage::StorageError::Poisoned) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}
