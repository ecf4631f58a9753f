//! HTTP errors: every error of every crate is mapped to a status code here,
//! and rendered in OpenTSDB's JSON error shape
//! `{"error":{"code":400,"message":"…","details":"…"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::engine::EngineError;
use crate::engine::wal::WalError;
use crate::uid::UidError;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub details: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: None,
        }
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
        (
            self.status,
            [(
                axum::http::header::CONTENT_TYPE,
                "application/json; charset=UTF-8",
            )],
            self.body().to_string(),
        )
            .into_response()
    }
}

impl From<hourglass_query::error::QueryError> for ApiError {
    fn from(e: hourglass_query::error::QueryError) -> Self {
        use hourglass_query::error::QueryError as Q;
        let status = match &e {
            Q::Source(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Q::Limit(_) | Q::Timeout(_) => StatusCode::PAYLOAD_TOO_LARGE,
            // The client is gone or the server is stopping: nobody reads it.
            Q::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        let mut err = ApiError::new(status, e.message());
        if let Some(d) = e.details() {
            err = err.with_details(d);
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
            UidError::NoSuchName { .. } => ApiError::bad_request(e.to_string()),
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Wal(w) => w.into(),
            EngineError::Overloaded { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            EngineError::Storage(crate::storage::StorageError::Poisoned) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}
