//! The error of a Prometheus request that cannot be served as a whole ([`PromError`]).

/// A request that cannot be served as a whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PromError {
    /// The HTTP status to answer: 400 (undecodable), 413 (too large) or 500 (server side).
    pub status: u16,
    /// Plain-text explanation (the response body).
    pub message: String,
}

impl PromError {
    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: 400,
            message: message.into(),
        }
    }

    /// `true` for 4xx: the client's fault; Prometheus drops the batch instead of retrying.
    pub fn client_fault(&self) -> bool {
        self.status < 500
    }
}
